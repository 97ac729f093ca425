#pragma once
// Passes as types. A pass is a type with a member alias template
// `template <class G> using apply = <graph type>`; `pipeline<P...>` is itself a
// pass that applies P... left to right (a Boost.Hana fold over the type list).
// The built-in passes run as constexpr functions over `program` (see
// program.hpp); `program_pass<Fn>` turns any such function into a pass.
//
// Exactness: every built-in pass keeps the graph's results bit for bit (IEEE
// round-to-nearest, float32 and float64), including the sign of zero and NaN.
//   cse             merges structurally identical instructions (same op, same
//                   operand ids, same input/literal index, constants with the
//                   same bits: 0.0 and -0.0 differ). Runtime literals are never
//                   merged with each other. Keeps the first occurrence.
//   fold_constants  replaces an op whose operands are all compile-time constants
//                   by its value computed with the op table's `scalar<double>`,
//                   only for correctly rounded ops (neg abs sqrt relu sign add
//                   sub mul div maximum minimum) and only when every operand is
//                   finite and exactly representable as float32 and the result is
//                   finite (no x/0, no sqrt of a negative), so the folded constant
//                   equals the unfolded result in float32 too (rounding twice
//                   through double is harmless for these ops). Transcendental
//                   ops (exp, tanh, ...) are never folded: the SIMD kernels do
//                   not round them like the compiler.
//   simplify        x*1 -> x, 1*x -> x, x/1 -> x, neg(neg(x)) -> x,
//                   x-(+0.0) -> x, x+(-0.0) -> x, (-0.0)+x -> x,
//                   where(c, x, x) -> x, maximum(x, x) -> x, minimum(x, x) -> x.
//                   Not x+0.0 (-0.0+0.0 is +0.0), not x*0, x-x, exp(log(x)) or
//                   pow(x, 1) (inexact or NaN/inf-changing). The arithmetic rules
//                   are not applied to comparison results (bool * 1 is a float).
//   dce             drops instructions no output reads (inputs are always kept:
//                   they are the graph's signature).
// Reductions (sum, mean) are outputs like any other: cse merges identical ones, dce
// keeps them and what they read; fold and simplify leave them alone.
// Every pass keeps the literal array unchanged.
#include <boost/hana/basic_tuple.hpp>
#include <boost/hana/fold_left.hpp>
#include <boost/hana/type.hpp>

#include <concepts>
#include <cstddef>
#include <limits>
#include <type_traits>
#include <vector>

#include "graft/expr/graph.hpp"
#include "graft/expr/program.hpp"

namespace graft::expr {

// ---------------------------------------------------------------- the pass functions

namespace detail {

[[nodiscard]] constexpr std::vector<std::size_t> identity_redirect(std::size_t n) {
    std::vector<std::size_t> r(n, 0);
    for (std::size_t i = 0; i < n; ++i) r[i] = i;
    return r;
}

}  // namespace detail

/// Common-subexpression elimination by structural identity.
[[nodiscard]] constexpr program cse_program(const program& p) {
    program tmp = p;
    auto red = detail::identity_redirect(p.nodes.size());
    for (std::size_t i = 0; i < p.nodes.size(); ++i) {
        instr_data d = p.nodes[i];
        for (std::size_t k = 0; k < d.nargs; ++k) d.args[k] = red[d.args[k]];
        tmp.nodes[i] = d;
        for (std::size_t j = 0; j < i; ++j) {
            if (red[j] == j && tmp.nodes[j].same_as(d)) {
                red[i] = j;
                break;
            }
        }
    }
    return compact(tmp, red);
}

/// Dead-code elimination: keeps inputs and everything an output reads.
[[nodiscard]] constexpr program dce_program(const program& p) {
    const std::size_t n = p.nodes.size();
    // char, not bool: clang cannot constant-evaluate libstdc++'s std::vector<bool> (its
    // _M_allocate assigns to words it never constructed; llvm/llvm-project#85553).
    std::vector<char> live(n, false);
    for (std::size_t o : p.outs) live[o] = true;
    for (std::size_t i = n; i-- > 0;) {
        if (p.nodes[i].kind == instr_kind::input) live[i] = true;
        if (!live[i]) continue;
        for (std::size_t k = 0; k < p.nodes[i].nargs; ++k) live[p.nodes[i].args[k]] = true;
    }
    program r;
    r.num_literals = p.num_literals;
    std::vector<std::size_t> new_id(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
        if (!live[i]) continue;
        instr_data d = p.nodes[i];
        for (std::size_t k = 0; k < d.nargs; ++k) d.args[k] = new_id[d.args[k]];
        new_id[i] = r.push(d);
    }
    for (std::size_t o : p.outs) r.outs.push_back(new_id[o]);
    return r;
}

namespace detail {
[[nodiscard]] constexpr bool float_exact(double v) {
    return v != v || static_cast<double>(static_cast<float>(v)) == v;
}
// Finite: folding NaN or inf operands is not a constant expression for clang (NaN
// results) or GCC (inf - inf), and a NaN produced at run time has the hardware's bits.
[[nodiscard]] constexpr bool finite(double v) {
    return v >= -std::numeric_limits<double>::max() && v <= std::numeric_limits<double>::max();
}
[[nodiscard]] constexpr bool foldable(std::string_view name) {
    constexpr std::string_view names[] = {"neg", "abs", "sqrt", "relu", "sign", "add",
                                          "sub", "mul", "div",  "maximum", "minimum"};
    for (auto s : names)
        if (s == name) return true;
    return false;
}
}  // namespace detail

/// Constant folding of correctly rounded ops over float32-exact constants.
[[nodiscard]] constexpr program fold_constants_program(const program& p) {
    program r = p;
    for (std::size_t i = 0; i < r.nodes.size(); ++i) {
        const instr_data d = r.nodes[i];
        if (d.kind != instr_kind::apply || !detail::foldable(r.op_name(i))) continue;
        bool all_const = true;
        for (std::size_t k = 0; k < d.nargs; ++k) {
            const instr_data& a = r.nodes[d.args[k]];
            all_const = all_const && a.kind == instr_kind::constant && detail::float_exact(a.value) &&
                        detail::finite(a.value);
        }
        if (!all_const) continue;
        double v = 0.0;
        bool ok = true;  // also a finite result: not x/0 (inf or NaN) or sqrt(x < 0) (NaN)
        visit_op(d.index, [&](auto op) {
            using Op = decltype(op);
            if constexpr (reduction_op<Op>) {
                // never folded (not in the foldable list: the value depends on the domain)
            } else if constexpr (Op::kind == ops::op_kind::unary) {
                if constexpr (std::is_same_v<Op, ops::def::sqrt_op>) ok = !(r.nodes[d.args[0]].value < 0.0);
                if (ok) v = Op::scalar(r.nodes[d.args[0]].value);
            } else if constexpr (Op::kind == ops::op_kind::binary) {
                if constexpr (std::is_same_v<Op, ops::def::div_op>) ok = r.nodes[d.args[1]].value != 0.0;
                if (ok) v = Op::scalar(r.nodes[d.args[0]].value, r.nodes[d.args[1]].value);
            }
        });
        if (!ok) continue;
        r.nodes[i] = make_constant(v);
    }
    return r;
}

/// Algebraic simplification, exact rules only (see the top of this file).
[[nodiscard]] constexpr program simplify_program(const program& p) {
    program tmp = p;
    auto red = detail::identity_redirect(p.nodes.size());
    constexpr std::size_t mul = op_index_v<ops::def::mul_op>, div = op_index_v<ops::def::div_op>,
                          neg = op_index_v<ops::def::neg_op>, sub = op_index_v<ops::def::sub_op>,
                          add = op_index_v<ops::def::add_op>, where = op_index_v<ops::def::where_op>,
                          maximum = op_index_v<ops::def::maximum_op>, minimum = op_index_v<ops::def::minimum_op>;
    for (std::size_t i = 0; i < p.nodes.size(); ++i) {
        instr_data d = p.nodes[i];
        for (std::size_t k = 0; k < d.nargs; ++k) d.args[k] = red[d.args[k]];
        tmp.nodes[i] = d;
        if (d.kind != instr_kind::apply) continue;
        const std::size_t a = d.args[0], b = d.args[1];
        const std::size_t op = d.index;
        if (op == mul && tmp.is_constant(b, 1.0) && !tmp.is_bool(a)) red[i] = a;
        else if (op == mul && tmp.is_constant(a, 1.0) && !tmp.is_bool(b)) red[i] = b;
        else if (op == div && tmp.is_constant(b, 1.0) && !tmp.is_bool(a)) red[i] = a;
        else if (op == neg && tmp.is_op(a, neg)) red[i] = tmp.nodes[a].args[0];
        else if (op == sub && tmp.is_constant(b, 0.0) && !tmp.is_bool(a)) red[i] = a;
        else if (op == add && tmp.is_constant(b, -0.0) && !tmp.is_bool(a)) red[i] = a;
        else if (op == add && tmp.is_constant(a, -0.0) && !tmp.is_bool(b)) red[i] = b;
        else if (op == where && d.args[1] == d.args[2]) red[i] = d.args[1];
        else if ((op == maximum || op == minimum) && a == b) red[i] = a;
    }
    return compact(tmp, red);
}

// ---------------------------------------------------------------- passes as types

namespace detail {
template <class Fn, class G>
struct pass_builder {
    static constexpr program build() { return Fn{}(encode<G>()); }
};
using probe_graph = graph<instrs<input<0>>, outputs<0>, 0>;
}  // namespace detail

/// P is a pass for graph type G: `typename P::template apply<G>` is a graph type.
template <class P, class G>
concept pass_for = requires { typename P::template apply<G>; } && graph_type<typename P::template apply<G>>;

/// A pass that accepts any graph (checked on a one-instruction graph): a type with
/// `template <class G> using apply = <graph type>`.
template <class P>
concept pass = pass_for<P, detail::probe_graph>;

/// A pass from a constexpr function object `program Fn::operator()(program) const`.
template <class Fn>
struct program_pass {
    template <class G>
    using apply = program_graph_t<detail::pass_builder<Fn, G>>;
};

namespace detail {
struct cse_fn {
    constexpr program operator()(const program& p) const { return cse_program(p); }
};
struct fold_fn {
    constexpr program operator()(const program& p) const { return fold_constants_program(p); }
};
struct simplify_fn {
    constexpr program operator()(const program& p) const { return simplify_program(p); }
};
struct dce_fn {
    constexpr program operator()(const program& p) const { return dce_program(p); }
};
}  // namespace detail

struct cse : program_pass<detail::cse_fn> {};
struct fold_constants : program_pass<detail::fold_fn> {};
struct simplify : program_pass<detail::simplify_fn> {};
struct dce : program_pass<detail::dce_fn> {};

namespace detail {
struct apply_pass_fn {
    template <class G, class P>
    constexpr auto operator()(boost::hana::basic_type<G>, boost::hana::basic_type<P>) const {
        static_assert(pass_for<P, G>, "graft::expr::pipeline<P...>: every P must be a pass type, i.e. have a member "
                                      "`template <class G> using apply = <graph type>` valid for this graph");
        if constexpr (pass_for<P, G>) return boost::hana::type_c<typename P::template apply<G>>;
        else return boost::hana::type_c<G>;
    }
};
}  // namespace detail

/// Applies the passes P... in order; itself a pass.
template <class... P>
struct pipeline {
    template <class G>
    using apply = typename decltype(boost::hana::fold_left(boost::hana::make_basic_tuple(boost::hana::type_c<P>...),
                                                           boost::hana::type_c<G>, detail::apply_pass_fn{}))::type;
};

/// The graph type of pass P applied to graph type G.
template <class P, class G>
using apply_pass_t = typename P::template apply<G>;

/// Applies pass (or pipeline) P to a traced function; the literals are carried over.
template <class P, class G>
[[nodiscard]] auto optimize(const traced<G>& e) {
    static_assert(pass_for<P, G>, "graft::expr::optimize<P>(e): P must be a pass type (a type with a member "
                                  "`template <class G> using apply = <graph type>`), e.g. graft::expr::pipeline<...>");
    using R = typename P::template apply<G>;
    static_assert(graph_type<R> && R::num_literals == G::num_literals,
                  "graft::expr::optimize<P>(e): the pass must return a graph with the same number of literals");
    return traced<R>{e.literals};
}

/// The default optimization pipeline.
using default_pipeline = pipeline<cse, fold_constants, simplify, cse, dce>;

}  // namespace graft::expr
