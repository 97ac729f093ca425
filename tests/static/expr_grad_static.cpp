// Derivative graph types, read from the op table's generic derivatives: only static_asserts.
#include <graft/expr/expr.hpp>

#include <type_traits>

namespace {
namespace ex = graft::expr;
namespace d = graft::ops::def;
using ex::apply;
using ex::constant;
using ex::graph;
using ex::input;
using ex::instrs;
using ex::literal;
using ex::outputs;

template <class G, std::size_t... W>
using grad_t = typename decltype(ex::grad<W...>(ex::traced<G>{}))::graph_type;
template <class G, class P>
using joint_t = decltype(ex::joint(ex::traced<G>{}, P{}));

// d(x*y): inputs x, y, g (input<2>); mul's derivatives g*b and g*a; the forward product is dead.
using mul_g = graph<instrs<input<0>, input<1>, apply<d::mul_op, 0, 1>>, outputs<2>, 0>;
static_assert(std::is_same_v<grad_t<mul_g, 0, 1>, graph<instrs<input<0>, input<1>, input<2>, apply<d::mul_op, 2, 1>,
                                                              apply<d::mul_op, 2, 0>>,
                                                       outputs<3, 4>, 0>>);
static_assert(std::is_same_v<grad_t<mul_g, 1>,
                             graph<instrs<input<0>, input<1>, input<2>, apply<d::mul_op, 2, 0>>, outputs<3>, 0>>);

// tanh: g * (1 - y*y); the table's number 1.0 is a compile-time constant.
using tanh_g = graph<instrs<input<0>, apply<d::tanh_op, 0>>, outputs<1>, 0>;
static_assert(std::is_same_v<grad_t<tanh_g, 0>,
                             graph<instrs<input<0>, apply<d::tanh_op, 0>, input<1>, constant<1.0>,
                                          apply<d::mul_op, 1, 1>, apply<d::sub_op, 3, 4>, apply<d::mul_op, 2, 5>>,
                                   outputs<6>, 0>>);
static_assert(ex::name_v<grad_t<tanh_g, 0>> == "mul(%1, sub(1, mul(tanh(%0), tanh(%0))))");

// relu: where(y <= 0, zeros_like(g), g) (PyTorch's threshold_backward); zeros_like is the constant 0.
using relu_g = graph<instrs<input<0>, apply<d::relu_op, 0>>, outputs<1>, 0>;
static_assert(ex::name_v<grad_t<relu_g, 0>> == "where(le(relu(%0), 0), 0, %1)");

// abs: g * sign(x); sqrt: g / (y * 2); sin: g * cos(x); cos: -g * sin(x).
static_assert(ex::name_v<grad_t<graph<instrs<input<0>, apply<d::abs_op, 0>>, outputs<1>, 0>, 0>> ==
              "mul(%1, sign(%0))");
static_assert(ex::name_v<grad_t<graph<instrs<input<0>, apply<d::sqrt_op, 0>>, outputs<1>, 0>, 0>> ==
              "div(%1, mul(sqrt(%0), 2))");
static_assert(ex::name_v<grad_t<graph<instrs<input<0>, apply<d::cos_op, 0>>, outputs<1>, 0>, 0>> ==
              "mul(neg(%1), sin(%0))");

// A use in two places accumulates with add; an input that does not reach the output gets the constant 0.
using two_use = graph<instrs<input<0>, input<1>, apply<d::exp_op, 0>, apply<d::mul_op, 2, 0>>, outputs<3>, 0>;
static_assert(ex::name_v<grad_t<two_use, 0, 1>> == "(add(mul(%2, exp(%0)), mul(mul(%2, %0), exp(%0))), 0)");

// Several outputs: one gradient input per output (input<N + j>).
using multi = graph<instrs<input<0>, apply<d::sin_op, 0>, apply<d::cos_op, 0>>, outputs<1, 2>, 0>;
static_assert(ex::name_v<grad_t<multi, 0>> == "add(mul(neg(%2), sin(%0)), mul(%1, cos(%0)))");

// Comparisons are not differentiated through: where's condition gets no gradient.
using sel = graph<instrs<input<0>, input<1>, apply<d::gt_op, 0, 1>, apply<d::where_op, 2, 0, 1>>, outputs<3>, 0>;
static_assert(ex::name_v<grad_t<sel, 0, 1>> == "(where(gt(%0, %1), %2, 0), where(gt(%0, %1), 0, %2))");

// Runtime literals stay literals in the backward graph (same literal array).
constexpr auto lit = [](auto x) { return x * 3.0; };
static_assert(ex::name_v<grad_t<ex::traced_graph_t<1, decltype(lit)>, 0>> == "mul(%1, #0)");

// The derivative graphs are graphs: the passes apply (here nothing to simplify in tanh's).
static_assert(std::is_same_v<ex::apply_pass_t<ex::default_pipeline, grad_t<tanh_g, 0>>, grad_t<tanh_g, 0>>);

// ---- joint: forward graph (outputs, then saved values) and backward graph
// (inputs x, w; output gradient %2; saved values %3...) under each policy.
constexpr auto chain = [](auto x, auto w) { return tanh(x * w + 1.0) * sigmoid(x); };
using chain_g = ex::traced_graph_t<2, decltype(chain)>;

using J_save = joint_t<chain_g, ex::save_policy::save_all_t>;
static_assert(J_save::num_inputs == 2 && J_save::num_outputs == 1 && J_save::num_saved == 2);
static_assert(ex::name_v<decltype(J_save::forward)::graph_type> ==
              "(mul(tanh(add(mul(%0, %1), #0)), sigmoid(%0)), tanh(add(mul(%0, %1), #0)), sigmoid(%0))");
static_assert(ex::name_v<decltype(J_save::backward)::graph_type> ==
              "(add(mul(mul(mul(%2, %3), %4), sub(1, %4)), mul(mul(mul(%2, %4), sub(1, mul(%3, %3))), %1)), "
              "mul(mul(mul(%2, %4), sub(1, mul(%3, %3))), %0))");

using J_rec = joint_t<chain_g, ex::save_policy::recompute_t>;
static_assert(J_rec::num_saved == 0);
static_assert(std::is_same_v<decltype(J_rec::forward)::graph_type, chain_g>);
static_assert(std::is_same_v<decltype(J_rec::backward)::graph_type, grad_t<chain_g, 0, 1>>);

// recompute_cheap saves tanh/sigmoid results, recomputes arithmetic: here the same as save_all.
using J_cheap = joint_t<chain_g, ex::save_policy::recompute_cheap_t>;
static_assert(std::is_same_v<decltype(J_cheap::backward)::graph_type, decltype(J_save::backward)::graph_type>);

// A product of sums: save_all saves both sums, recompute_cheap saves nothing (all cheap).
constexpr auto prod = [](auto x, auto y) { return (x + y) * (x - y); };
using prod_g = ex::traced_graph_t<2, decltype(prod)>;
static_assert(joint_t<prod_g, ex::save_policy::save_all_t>::num_saved == 2);
static_assert(joint_t<prod_g, ex::save_policy::recompute_cheap_t>::num_saved == 0);

}  // namespace
