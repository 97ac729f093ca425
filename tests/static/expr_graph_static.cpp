// Compile-time facts about traced graphs and their printing: only static_asserts.
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

// The chain of the design: runtime number 1.0 becomes literal #0.
constexpr auto chain = [](auto x, auto w) { return tanh(x * w + 1.0) * sigmoid(x); };
using chain_g = ex::traced_graph_t<2, decltype(chain)>;
static_assert(std::is_same_v<chain_g, graph<instrs<input<0>, input<1>, apply<d::mul_op, 0, 1>, literal<0>,
                                                   apply<d::add_op, 2, 3>, apply<d::tanh_op, 4>,
                                                   apply<d::sigmoid_op, 0>, apply<d::mul_op, 5, 6>>,
                                            outputs<7>, 1>>);
static_assert(ex::name_v<chain_g> == "mul(tanh(add(mul(%0, %1), #0)), sigmoid(%0))");
static_assert(ex::listing_v<chain_g> ==
              "v2 = mul(%0, %1)\nv4 = add(v2, #0)\nv5 = tanh(v4)\nv6 = sigmoid(%0)\nv7 = mul(v5, v6)\nreturn v7");

// Compile-time constants are part of the type; both spellings work.
constexpr auto with_constants = [](auto x) { return x * ex::c<2.0> + ex::constant<-0.5>{}; };
using const_g = ex::traced_graph_t<1, decltype(with_constants)>;
static_assert(std::is_same_v<const_g, graph<instrs<input<0>, constant<2.0>, apply<d::mul_op, 0, 1>, constant<-0.5>,
                                                   apply<d::add_op, 2, 3>>,
                                            outputs<4>, 0>>);
static_assert(ex::name_v<const_g> == "add(mul(%0, 2), -0.5)");

// Structurally identical subexpressions are shared; runtime numbers never are.
constexpr auto shared = [](auto x, auto y) { return (x * y) / (x * y) + (x * 3.0) * (x * 3.0); };
using shared_g = ex::traced_graph_t<2, decltype(shared)>;
static_assert(std::is_same_v<shared_g, graph<instrs<input<0>, input<1>, apply<d::mul_op, 0, 1>,
                                                    apply<d::div_op, 2, 2>, literal<0>, apply<d::mul_op, 0, 4>,
                                                    literal<1>, apply<d::mul_op, 0, 6>, apply<d::mul_op, 5, 7>,
                                                    apply<d::add_op, 3, 8>>,
                                             outputs<9>, 2>>);

// Several outputs: one graph; the shared part appears once.
constexpr auto two = [](auto x, auto y) {
    auto h = exp(x - y);
    return ex::outputs_of(h * h, where(x > y, h, -h));
};
using two_g = ex::traced_graph_t<2, decltype(two)>;
static_assert(std::is_same_v<two_g, graph<instrs<input<0>, input<1>, apply<d::sub_op, 0, 1>, apply<d::exp_op, 2>,
                                                 apply<d::mul_op, 3, 3>, apply<d::gt_op, 0, 1>,
                                                 apply<d::neg_op, 3>, apply<d::where_op, 5, 3, 6>>,
                                          outputs<4, 7>, 0>>);
static_assert(ex::name_v<two_g> == "(mul(exp(sub(%0, %1)), exp(sub(%0, %1))), where(gt(%0, %1), exp(sub(%0, %1)), "
                                   "neg(exp(sub(%0, %1)))))");

// Every op of the table has a spelling in a traced function.
constexpr auto every_op = [](auto x, auto y) {
    return ex::outputs_of(neg(abs(exp(log(sqrt(rsqrt(tanh(sigmoid(relu(sin(cos(sign(x)))))))))))),
                          pow(maximum(x, y), minimum(x, y)) - x / y,
                          where(logical_and(x == y, x != y), x, y), where(x < y, x <= y, x >= y));
};
static_assert(ex::name_v<ex::traced_graph_t<2, decltype(every_op)>> ==
              "(neg(abs(exp(log(sqrt(rsqrt(tanh(sigmoid(relu(sin(cos(sign(%0)))))))))))), "
              "sub(pow(maximum(%0, %1), minimum(%0, %1)), div(%0, %1)), "
              "where(logical_and(eq(%0, %1), ne(%0, %1)), %0, %1), where(lt(%0, %1), le(%0, %1), ge(%0, %1)))");

// Numbers print exactly enough to read.
using nums_g = graph<instrs<constant<0.25>, constant<-0.0>, constant<1e20>, constant<3.0>>, outputs<0, 1, 2, 3>, 0>;
static_assert(ex::name_v<nums_g> == "(0.25, -0, 1e+20, 3)");

// Misuse is rejected by concepts, not by template noise.
static_assert(!ex::expression<double>);
static_assert(ex::operand<double> && ex::operand<ex::arg<0>> && !ex::operand<const char*>);
static_assert(ex::graph_type<chain_g> && !ex::graph_type<int>);
static_assert(ex::graph_op<d::tanh_op> && !ex::graph_op<int>);

}  // namespace
