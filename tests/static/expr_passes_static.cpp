// Each pass's result type equals the expected graph type: only static_asserts.
#include <graft/expr/expr.hpp>

#include <limits>
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
template <class P, class G>
using run = ex::apply_pass_t<P, G>;

// ---- cse: structural identity; literals never merge; 0.0 and -0.0 differ; first occurrence kept
using cse_in = graph<instrs<input<0>, input<1>, apply<d::mul_op, 0, 1>, apply<d::mul_op, 0, 1>, input<0>,
                            apply<d::mul_op, 4, 1>, apply<d::add_op, 2, 3>, apply<d::add_op, 5, 6>, literal<0>,
                            literal<1>, constant<0.0>, constant<-0.0>, constant<0.0>, apply<d::add_op, 8, 9>,
                            apply<d::add_op, 10, 11>, apply<d::add_op, 12, 11>>,
                     outputs<7, 13, 14, 15>, 2>;
static_assert(std::is_same_v<run<ex::cse, cse_in>,
                             graph<instrs<input<0>, input<1>, apply<d::mul_op, 0, 1>, apply<d::add_op, 2, 2>,
                                          apply<d::add_op, 2, 3>, literal<0>, literal<1>, constant<0.0>,
                                          constant<-0.0>, apply<d::add_op, 5, 6>, apply<d::add_op, 7, 8>>,
                                   outputs<4, 9, 10, 10>, 2>>);

// ---- fold_constants: exact ops over float32-exact constants only
using fold_in = graph<instrs<input<0>, constant<1.0>, constant<3.0>, apply<d::div_op, 1, 2>,  // 1/3: folded
                             apply<d::mul_op, 3, 2>,                                        // (1/3)*3: not (1/3 inexact)
                             constant<2.0>, apply<d::sqrt_op, 5>,                           // sqrt(2): folded
                             apply<d::exp_op, 5>,                                           // exp: never folded
                             constant<0.1>, apply<d::add_op, 8, 1>,                         // 0.1 not float-exact
                             apply<d::neg_op, 5>, apply<d::maximum_op, 10, 1>,              // chains fold
                             apply<d::mul_op, 0, 11>>,
                      outputs<4, 6, 7, 9, 12>, 0>;
static_assert(std::is_same_v<run<ex::fold_constants, fold_in>,
                             graph<instrs<input<0>, constant<1.0>, constant<3.0>, constant<1.0 / 3.0>,
                                          apply<d::mul_op, 3, 2>, constant<2.0>, constant<1.4142135623730951>,
                                          apply<d::exp_op, 5>, constant<0.1>, apply<d::add_op, 8, 1>,
                                          constant<-2.0>, constant<1.0>, apply<d::mul_op, 0, 11>>,
                                   outputs<4, 6, 7, 9, 12>, 0>>);
// abs and sqrt fold under clang too (no constexpr std::fabs/std::sqrt there); non-finite
// operands and results (x/0, sqrt of a negative, inf - inf, NaN + x) are never folded.
constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double qnan = std::numeric_limits<double>::quiet_NaN();
using fold_edge_in = graph<instrs<input<0>, constant<-2.0>, apply<d::abs_op, 1>,  // abs(-2): folded
                                  constant<0.0>, apply<d::div_op, 1, 3>,          // -2/0: not
                                  apply<d::sqrt_op, 1>,                          // sqrt(-2): not
                                  constant<inf>, apply<d::sub_op, 6, 6>,         // inf - inf: not
                                  constant<qnan>, apply<d::add_op, 8, 1>,        // NaN + -2: not
                                  apply<d::sqrt_op, 2>>,                         // sqrt(abs(-2)): folded
                           outputs<2, 4, 5, 7, 9, 10>, 0>;
static_assert(std::is_same_v<run<ex::fold_constants, fold_edge_in>,
                             graph<instrs<input<0>, constant<-2.0>, constant<2.0>, constant<0.0>,
                                          apply<d::div_op, 1, 3>, apply<d::sqrt_op, 1>, constant<inf>,
                                          apply<d::sub_op, 6, 6>, constant<qnan>, apply<d::add_op, 8, 1>,
                                          constant<1.4142135623730951>>,
                                   outputs<2, 4, 5, 7, 9, 10>, 0>>);

// ---- simplify: only IEEE-exact rewrites
using simp_in = graph<instrs<input<0>, constant<1.0>, apply<d::mul_op, 0, 1>,    // x*1 -> x
                             apply<d::mul_op, 1, 0>,                             // 1*x -> x
                             apply<d::div_op, 0, 1>,                             // x/1 -> x
                             apply<d::neg_op, 0>, apply<d::neg_op, 5>,           // neg(neg(x)) -> x
                             constant<0.0>, apply<d::sub_op, 0, 7>,              // x-0 -> x
                             apply<d::add_op, 0, 7>,                             // x+0: kept (-0+0 = +0)
                             constant<-0.0>, apply<d::add_op, 0, 10>,            // x+(-0) -> x
                             apply<d::add_op, 10, 0>,                            // (-0)+x -> x
                             apply<d::sub_op, 0, 10>,                            // x-(-0): kept
                             apply<d::mul_op, 0, 7>,                             // x*0: kept (NaN, inf, -0)
                             apply<d::exp_op, 0>, apply<d::log_op, 15>,          // log(exp(x)): kept
                             apply<d::gt_op, 0, 7>, apply<d::mul_op, 17, 1>,     // bool*1: kept (it is a float)
                             apply<d::where_op, 17, 0, 0>,                       // where(c, x, x) -> x
                             apply<d::maximum_op, 0, 0>>,                        // maximum(x, x) -> x
                      outputs<2, 3, 4, 6, 8, 9, 11, 12, 13, 14, 16, 18, 19, 20>, 0>;
static_assert(std::is_same_v<run<ex::simplify, simp_in>,
                             graph<instrs<input<0>, constant<1.0>, apply<d::neg_op, 0>, constant<0.0>,
                                          apply<d::add_op, 0, 3>, constant<-0.0>, apply<d::sub_op, 0, 5>,
                                          apply<d::mul_op, 0, 3>, apply<d::exp_op, 0>, apply<d::log_op, 8>,
                                          apply<d::gt_op, 0, 3>, apply<d::mul_op, 10, 1>>,
                                   outputs<0, 0, 0, 0, 0, 4, 0, 0, 6, 7, 9, 11, 0, 0>, 0>>);

// ---- dce: multi-output graph, inputs always kept (also unused ones), literals kept
using dce_in = graph<instrs<input<0>, input<1>, input<2>, apply<d::exp_op, 0>, apply<d::log_op, 1>, literal<0>,
                            apply<d::mul_op, 3, 5>, apply<d::sin_op, 4>>,
                     outputs<6, 0>, 1>;
static_assert(std::is_same_v<run<ex::dce, dce_in>,
                             graph<instrs<input<0>, input<1>, input<2>, apply<d::exp_op, 0>, literal<0>,
                                          apply<d::mul_op, 3, 4>>,
                                   outputs<5, 0>, 1>>);

// ---- a pipeline on a traced function
constexpr auto f = [](auto x, auto y) {
    return ex::outputs_of(-(-(x * ex::c<1.0>)) + ex::c<2.0> * ex::c<3.0>, x * (ex::c<4.0> / ex::c<4.0>) + y * 0.5);
};
using f_g = ex::traced_graph_t<2, decltype(f)>;
using P = ex::pipeline<ex::cse, ex::fold_constants, ex::simplify, ex::cse, ex::dce>;
static_assert(std::is_same_v<run<P, f_g>, graph<instrs<input<0>, input<1>, constant<6.0>, apply<d::add_op, 0, 2>,
                                                       literal<0>, apply<d::mul_op, 1, 4>, apply<d::add_op, 0, 5>>,
                                                outputs<3, 6>, 1>>);
static_assert(std::is_same_v<run<ex::default_pipeline, f_g>, run<P, f_g>>);
static_assert(ex::name_v<run<P, f_g>> == "(add(%0, 6), add(%0, mul(%1, #0)))");

// ---- user-written passes: a type-level one and a constexpr-program one
struct swap_outputs {  // swaps the first two outputs
    template <class G>
    struct impl;
    template <class I, std::size_t A, std::size_t B, std::size_t L>
    struct impl<graph<I, outputs<A, B>, L>> {
        using type = graph<I, outputs<B, A>, L>;
    };
    template <class G>
    using apply = typename impl<G>::type;
};
struct sub_to_add_neg_fn {  // rewrites a - b into a + neg(b) (exact in IEEE)
    constexpr ex::program operator()(const ex::program& p) const {
        ex::program r;
        r.num_literals = p.num_literals;
        // (n, 0), not (n): clang cannot constant-evaluate libstdc++ 12's value-initializing
        // vector(n) of a trivial type (it fill_n's into elements it never constructed).
        std::vector<std::size_t> id(p.nodes.size(), 0);
        for (std::size_t i = 0; i < p.nodes.size(); ++i) {
            ex::instr_data n = p.nodes[i];
            for (std::size_t k = 0; k < n.nargs; ++k) n.args[k] = id[n.args[k]];
            if (n.kind == ex::instr_kind::apply && n.index == ex::op_index_v<d::sub_op>) {
                const std::size_t nb = r.push(ex::make_apply(ex::op_index_v<d::neg_op>, n.args[1]));
                n = ex::make_apply(ex::op_index_v<d::add_op>, n.args[0], nb);
            }
            id[i] = r.push(n);
        }
        for (std::size_t o : p.outs) r.outs.push_back(id[o]);
        return r;
    }
};
using sub_to_add_neg = ex::program_pass<sub_to_add_neg_fn>;
constexpr auto g = [](auto x, auto y) { return ex::outputs_of(x - y, y); };
using g_g = ex::traced_graph_t<2, decltype(g)>;
static_assert(ex::pass<sub_to_add_neg> && ex::pass<P> && !ex::pass<int>);
static_assert(ex::pass_for<swap_outputs, g_g> && !ex::pass<swap_outputs>);  // needs two outputs
static_assert(ex::name_v<run<ex::pipeline<sub_to_add_neg, swap_outputs>, g_g>> == "(%1, add(%0, neg(%1)))");

}  // namespace
