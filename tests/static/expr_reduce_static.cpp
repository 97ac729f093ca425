// Full reductions (sum, mean) at the root of traced graphs: graph types, printing,
// passes and derivative graphs. Only static_asserts.
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

// sum(tanh(x*w)): the reduction is an apply of ex::sum_op at the root.
constexpr auto loss = [](auto x, auto w) { return sum(tanh(x * w)); };
using loss_g = ex::traced_graph_t<2, decltype(loss)>;
static_assert(std::is_same_v<loss_g, graph<instrs<input<0>, input<1>, apply<d::mul_op, 0, 1>, apply<d::tanh_op, 2>,
                                                  apply<ex::sum_op, 3>>,
                                           outputs<4>, 0>>);
static_assert(ex::name_v<loss_g> == "sum(tanh(mul(%0, %1)))");
static_assert(ex::listing_v<loss_g> == "v2 = mul(%0, %1)\nv3 = tanh(v2)\nv4 = sum(v3)\nreturn v4");

// Several outputs mixing elementwise values and reductions share subexpressions
// (a compile-time constant, so that h is one value).
constexpr auto mixed = [](auto x, auto w) {
    const auto h = x * w + ex::c<0.5>;
    return ex::outputs_of(h, mean(h), sum(exp(h)));
};
using mixed_g = ex::traced_graph_t<2, decltype(mixed)>;
static_assert(ex::name_v<mixed_g> ==
              "(add(mul(%0, %1), 0.5), mean(add(mul(%0, %1), 0.5)), sum(exp(add(mul(%0, %1), 0.5))))");
static_assert(std::is_same_v<mixed_g::results, outputs<4, 5, 7>>);

// cse merges identical reductions and the shared operand; dce keeps what roots read.
using dup_g = graph<instrs<input<0>, apply<d::exp_op, 0>, apply<ex::sum_op, 1>, apply<d::exp_op, 0>,
                           apply<ex::sum_op, 3>, apply<d::tanh_op, 0>>,
                    outputs<2, 4>, 0>;
static_assert(std::is_same_v<ex::apply_pass_t<ex::pipeline<ex::cse, ex::dce>, dup_g>,
                             graph<instrs<input<0>, apply<d::exp_op, 0>, apply<ex::sum_op, 1>>, outputs<2, 2>, 0>>);
// The default pipeline simplifies below a reduction and leaves the reduction alone.
using simp_g = graph<instrs<input<0>, constant<1.0>, apply<d::mul_op, 0, 1>, apply<ex::mean_op, 2>>, outputs<3>, 0>;
static_assert(std::is_same_v<ex::apply_pass_t<ex::default_pipeline, simp_g>,
                             graph<instrs<input<0>, apply<ex::mean_op, 0>>, outputs<1>, 0>>);
// A sum of a constant is not folded (its value depends on the evaluation domain).
using const_g = graph<instrs<input<0>, constant<2.0>, apply<ex::sum_op, 1>>, outputs<2>, 0>;
static_assert(std::is_same_v<ex::apply_pass_t<ex::default_pipeline, const_g>, const_g>);

// Derivatives: d sum(e)/dx = de/dx with the 0-dim output gradient (input<N>) broadcast;
// mean divides it by `numel`, the evaluation domain's element count.
template <class G, std::size_t... W>
using grad_t = typename decltype(ex::grad<W...>(ex::traced<G>{}))::graph_type;
using sum_x_g = graph<instrs<input<0>, apply<ex::sum_op, 0>>, outputs<1>, 0>;
static_assert(std::is_same_v<grad_t<sum_x_g, 0>, graph<instrs<input<0>, input<1>>, outputs<1>, 0>>);
static_assert(ex::name_v<grad_t<loss_g, 0, 1>> ==
              "(mul(mul(%2, sub(1, mul(tanh(mul(%0, %1)), tanh(mul(%0, %1))))), %1), "
              "mul(mul(%2, sub(1, mul(tanh(mul(%0, %1)), tanh(mul(%0, %1))))), %0))");
using mean_g = graph<instrs<input<0>, input<1>, apply<d::mul_op, 0, 1>, apply<ex::mean_op, 2>>, outputs<3>, 0>;
static_assert(std::is_same_v<grad_t<mean_g, 0>, graph<instrs<input<0>, input<1>, input<2>, ex::numel,
                                                             apply<d::div_op, 2, 3>, apply<d::mul_op, 4, 1>>,
                                                      outputs<5>, 0>>);
static_assert(ex::name_v<grad_t<mean_g, 0>> == "mul(div(%2, numel), %1)");

// joint: the forward computes the reduction and saves tanh's output for the backward.
using joint_t = decltype(ex::joint(ex::traced<loss_g>{}, ex::save_policy::save_all));
static_assert(joint_t::num_saved == 1);
static_assert(ex::name_v<typename decltype(joint_t::forward)::graph_type> ==
              "(sum(tanh(mul(%0, %1))), tanh(mul(%0, %1)))");
static_assert(ex::name_v<typename decltype(joint_t::backward)::graph_type> ==
              "(mul(mul(%2, sub(1, mul(%3, %3))), %1), mul(mul(%2, sub(1, mul(%3, %3))), %0))");

// value_and_grad: one graph, the reduction and the gradients.
using vg_t = typename decltype(ex::value_and_grad<0>(ex::traced<mean_g>{}))::graph_type;
static_assert(ex::name_v<vg_t> == "(mean(mul(%0, %1)), mul(div(%2, numel), %1))");

// Reductions are outputs, not operands or expressions.
static_assert(ex::reduced_expression<ex::reduced<ex::sum_op, ex::arg<0>>>);
static_assert(!ex::expression<ex::reduced<ex::sum_op, ex::arg<0>>>);
static_assert(!ex::operand<ex::reduced<ex::mean_op, ex::arg<0>>>);
static_assert(ex::reduction_op<ex::sum_op> && ex::reduction_op<ex::mean_op> && !ex::reduction_op<d::add_op>);
static_assert(ex::graph_op<ex::sum_op> && ex::graph_op<ex::mean_op>);

}  // namespace
