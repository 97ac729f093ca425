#pragma once
// The front end: a generic lambda applied to placeholders (`arg<I>`) builds an
// expression value whose type is the expression tree; `trace<N>(f)` flattens it
// into a graph type (shared subexpressions merged) plus the runtime numbers.
//
//   auto e = graft::expr::trace<2>([](auto x, auto w) { return tanh(x * w + 1.0) * sigmoid(x); });
//
// Operands: expressions, plain numbers (runtime literals: `#k`, value in
// e.literals) and compile-time constants `expr::c<1.0>` / `expr::constant<1.0>{}`
// (part of the type: the passes can fold and simplify them).
//
// Full reductions `sum(e)` / `mean(e)` (to a 0-dim value, over the evaluation domain:
// the broadcast shape of all arguments) may only be outputs: the function's result or
// an element of outputs_of. Using one as an operand stops at a static_assert.
#include <concepts>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "graft/expr/graph.hpp"
#include "graft/expr/passes.hpp"
#include "graft/expr/program.hpp"
#include "graft/ops/table.hpp"

namespace graft::expr {

// ---------------------------------------------------------------- expression values

/// Placeholder for the I-th argument of a traced function.
template <std::size_t I>
struct arg {
    static constexpr std::size_t index = I;
};

/// A runtime number inside an expression (becomes literal<K> when traced).
struct number {
    double value = 0.0;
};

/// An existing instruction of a graph being built (used by differentiation).
struct ref {
    std::size_t id = 0;
};

/// Op applied to sub-expressions.
template <class Op, class... Ch>
struct node;
template <class Op, class A>
struct node<Op, A> {
    A a;
};
template <class Op, class A, class B>
struct node<Op, A, B> {
    A a;
    B b;
};
template <class Op, class A, class B, class C>
struct node<Op, A, B, C> {
    A a;
    B b;
    C c;
};

/// A full reduction (sum_op or mean_op) of an expression: only an output, never an operand.
template <class Op, class E>
struct reduced {
    E a;
};

/// A compile-time constant usable inside traced functions: `x * expr::c<2.0>`.
template <double V>
inline constexpr constant<V> c{};

namespace detail {
template <class T>
struct is_expression : std::false_type {};
template <std::size_t I>
struct is_expression<arg<I>> : std::true_type {};
template <>
struct is_expression<number> : std::true_type {};
template <>
struct is_expression<ref> : std::true_type {};
template <double V>
struct is_expression<constant<V>> : std::true_type {};
template <>
struct is_expression<numel> : std::true_type {};
template <class Op, class... Ch>
struct is_expression<node<Op, Ch...>> : std::true_type {};

template <class T>
struct is_reduced : std::false_type {};
template <class Op, class E>
struct is_reduced<reduced<Op, E>> : std::true_type {};

/// Is T an op node that yields a bool (a comparison or logical_and)?
template <class T>
struct is_bool_node : std::false_type {};
template <class Op, class... Ch>
struct is_bool_node<node<Op, Ch...>>
    : std::bool_constant<Op::kind == ops::op_kind::compare || Op::kind == ops::op_kind::logical> {};
}  // namespace detail

/// An expression value (placeholder, number, constant or op node).
template <class T>
concept expression = detail::is_expression<std::remove_cvref_t<T>>::value;

/// A full reduction sum(e) / mean(e): a valid output, not an operand.
template <class T>
concept reduced_expression = detail::is_reduced<std::remove_cvref_t<T>>::value;

/// What an operator accepts next to an expression: an expression or a number.
template <class T>
concept operand = expression<T> || (std::is_arithmetic_v<std::remove_cvref_t<T>> &&
                                    !std::is_same_v<std::remove_cvref_t<T>, bool>);

namespace detail {
template <class T>
constexpr auto to_expr(const T& x) {
    if constexpr (expression<T> || reduced_expression<T>) return x;
    else return number{static_cast<double>(x)};
}
// The expression type of an operand; no member for anything else, so that the operators'
// return types fail softly (SFINAE) for the std types that reach them through ADL
// (iterators of std::vector<instr_data>, ...): clang substitutes the return type before it
// checks the requires-clause.
template <class T>
struct to_expr_type {};
template <class T>
    requires(expression<T> || reduced_expression<T>)
struct to_expr_type<T> {
    using type = std::remove_cvref_t<T>;
};
template <class T>
    requires std::is_arithmetic_v<T>
struct to_expr_type<T> {
    using type = number;
};
template <class T>
using expr_t = typename to_expr_type<std::remove_cvref_t<T>>::type;

template <class A, class B>
concept binary_operands = (expression<A> || expression<B>) && operand<A> && operand<B>;
template <class A, class B>
concept reduced_operands = reduced_expression<A> || reduced_expression<B>;
template <class A, class B>
concept bad_binary_operands =
    !reduced_operands<A, B> && ((expression<A> && !operand<B>) || (expression<B> && !operand<A>));

template <class T>
inline constexpr bool always_false = false;
}  // namespace detail

#define GRAFT_EXPR_REDUCTION_OPERAND_MSG                                                                       \
    "graft::expr: a reduction (sum or mean) may only be an output of a traced function (its result or an " \
    "element of outputs_of), not an operand of another op"

#define GRAFT_EXPR_BAD_OPERAND_MSG                                                                              \
    "graft::expr: unsupported operand type in a traced expression: operands must be expressions (the lambda's " \
    "arguments and what is computed from them), numbers or graft::expr::constant<V>"

// unary functions
#define GRAFT_EXPR_UNARY(fn)                                                   \
    template <expression E>                                                    \
    [[nodiscard]] constexpr node<ops::def::fn##_op, E> fn(const E& e) {        \
        return {e};                                                            \
    }                                                                          \
    template <reduced_expression R>                                            \
    void fn(const R&) {                                                        \
        static_assert(detail::always_false<R>, GRAFT_EXPR_REDUCTION_OPERAND_MSG); \
    }
GRAFT_EXPR_UNARY(neg)
GRAFT_EXPR_UNARY(abs)
GRAFT_EXPR_UNARY(exp)
GRAFT_EXPR_UNARY(log)
GRAFT_EXPR_UNARY(sqrt)
GRAFT_EXPR_UNARY(rsqrt)
GRAFT_EXPR_UNARY(tanh)
GRAFT_EXPR_UNARY(sigmoid)
GRAFT_EXPR_UNARY(relu)
GRAFT_EXPR_UNARY(sin)
GRAFT_EXPR_UNARY(cos)
GRAFT_EXPR_UNARY(log1p)
GRAFT_EXPR_UNARY(expm1)
GRAFT_EXPR_UNARY(sign)
#undef GRAFT_EXPR_UNARY

template <expression E>
[[nodiscard]] constexpr node<ops::def::neg_op, E> operator-(const E& e) {
    return {e};
}
template <reduced_expression R>
void operator-(const R&) {
    static_assert(detail::always_false<R>, GRAFT_EXPR_REDUCTION_OPERAND_MSG);
}

/// zeros_like(e): the compile-time constant 0 (broadcast like any scalar).
template <expression E>
[[nodiscard]] constexpr constant<0.0> zeros_like(const E&) {
    return {};
}

// binary functions and operators
#define GRAFT_EXPR_BINARY(fn, Op)                                                                   \
    template <class A, class B>                                                                     \
        requires detail::binary_operands<A, B>                                                      \
    [[nodiscard]] constexpr node<Op, detail::expr_t<A>, detail::expr_t<B>> fn(const A& a, const B& b) { \
        return {detail::to_expr(a), detail::to_expr(b)};                                            \
    }                                                                                               \
    template <class A, class B>                                                                     \
        requires detail::bad_binary_operands<A, B>                                                  \
    void fn(const A&, const B&) {                                                                   \
        static_assert(detail::always_false<A>, GRAFT_EXPR_BAD_OPERAND_MSG);                         \
    }                                                                                               \
    template <class A, class B>                                                                     \
        requires detail::reduced_operands<A, B>                                                     \
    void fn(const A&, const B&) {                                                                   \
        static_assert(detail::always_false<A>, GRAFT_EXPR_REDUCTION_OPERAND_MSG);                   \
    }
GRAFT_EXPR_BINARY(add, ops::def::add_op)
GRAFT_EXPR_BINARY(sub, ops::def::sub_op)
GRAFT_EXPR_BINARY(mul, ops::def::mul_op)
GRAFT_EXPR_BINARY(div, ops::def::div_op)
GRAFT_EXPR_BINARY(pow, ops::def::pow_op)
GRAFT_EXPR_BINARY(maximum, ops::def::maximum_op)
GRAFT_EXPR_BINARY(minimum, ops::def::minimum_op)
GRAFT_EXPR_BINARY(eq, ops::def::eq_op)
GRAFT_EXPR_BINARY(ne, ops::def::ne_op)
GRAFT_EXPR_BINARY(lt, ops::def::lt_op)
GRAFT_EXPR_BINARY(le, ops::def::le_op)
GRAFT_EXPR_BINARY(gt, ops::def::gt_op)
GRAFT_EXPR_BINARY(ge, ops::def::ge_op)
GRAFT_EXPR_BINARY(logical_and, ops::def::logical_and_op)
GRAFT_EXPR_BINARY(operator+, ops::def::add_op)
GRAFT_EXPR_BINARY(operator-, ops::def::sub_op)
GRAFT_EXPR_BINARY(operator*, ops::def::mul_op)
GRAFT_EXPR_BINARY(operator/, ops::def::div_op)
GRAFT_EXPR_BINARY(operator==, ops::def::eq_op)
GRAFT_EXPR_BINARY(operator!=, ops::def::ne_op)
GRAFT_EXPR_BINARY(operator<, ops::def::lt_op)
GRAFT_EXPR_BINARY(operator<=, ops::def::le_op)
GRAFT_EXPR_BINARY(operator>, ops::def::gt_op)
GRAFT_EXPR_BINARY(operator>=, ops::def::ge_op)
#undef GRAFT_EXPR_BINARY

/// where(cond, a, b): a where cond is true, else b.
template <class C, class A, class B>
    requires(expression<C> || expression<A> || expression<B>) && operand<C> && operand<A> && operand<B>
[[nodiscard]] constexpr node<ops::def::where_op, detail::expr_t<C>, detail::expr_t<A>, detail::expr_t<B>> where(
    const C& cond, const A& a, const B& b) {
    return {detail::to_expr(cond), detail::to_expr(a), detail::to_expr(b)};
}
template <class C, class A, class B>
    requires reduced_expression<C> || reduced_expression<A> || reduced_expression<B>
void where(const C&, const A&, const B&) {
    static_assert(detail::always_false<C>, GRAFT_EXPR_REDUCTION_OPERAND_MSG);
}

namespace detail {
template <class Op, class E>
constexpr auto make_reduction(const E& e) {
    static_assert(!reduced_expression<E>, GRAFT_EXPR_REDUCTION_OPERAND_MSG);
    static_assert(!is_bool_node<E>::value,
                  "graft::expr: sum/mean of a comparison or logical (bool) value is not supported in a traced "
                  "function; sum where(c, 1.0, 0.0) instead");
    if constexpr (!reduced_expression<E> && !is_bool_node<E>::value) return reduced<Op, E>{e};
}
}  // namespace detail

/// sum(e): the sum of e over the evaluation domain (the broadcast shape of all arguments),
/// a 0-dim value. Only as an output of the traced function.
template <class E>
    requires expression<E> || reduced_expression<E>
constexpr auto sum(const E& e) {
    return detail::make_reduction<sum_op>(e);
}

/// mean(e): sum(e) divided by the number of elements of the evaluation domain.
template <class E>
    requires expression<E> || reduced_expression<E>
constexpr auto mean(const E& e) {
    return detail::make_reduction<mean_op>(e);
}

// Reductions over some dims (or with keepdim) cannot be fused into one 0-dim result.
#define GRAFT_EXPR_PARTIAL_REDUCTION(fn)                                                                    \
    template <class E, class D0, class... Rest>                                                             \
        requires expression<E> || reduced_expression<E>                                                     \
    void fn(const E&, const D0&, const Rest&...) {                                                          \
        static_assert(detail::always_false<E>,                                                              \
                      "graft::expr: only full reductions are fusable: " #fn "(e) reduces every element to a " \
                      "0-dim value; " #fn " over dims (or with keepdim) is not supported in a traced function"); \
    }
GRAFT_EXPR_PARTIAL_REDUCTION(sum)
GRAFT_EXPR_PARTIAL_REDUCTION(mean)
#undef GRAFT_EXPR_PARTIAL_REDUCTION

// Ops that exist for tensors but are not elementwise table ops: a readable error.
#define GRAFT_EXPR_NOT_FUSABLE(fn)                                                                          \
    template <expression E, class... Rest>                                                                  \
    void fn(const E&, const Rest&...) {                                                                     \
        static_assert(detail::always_false<E>,                                                              \
                      "graft::expr: " #fn " is not fusable: a traced function may use only the elementwise " \
                      "ops of the op table (unary, binary, comparisons, where) and sum/mean as outputs");   \
    }
GRAFT_EXPR_NOT_FUSABLE(matmul)
GRAFT_EXPR_NOT_FUSABLE(softmax)
GRAFT_EXPR_NOT_FUSABLE(log_softmax)
GRAFT_EXPR_NOT_FUSABLE(amax)
GRAFT_EXPR_NOT_FUSABLE(amin)
GRAFT_EXPR_NOT_FUSABLE(gelu)
GRAFT_EXPR_NOT_FUSABLE(sum_to_size)
#undef GRAFT_EXPR_NOT_FUSABLE

/// Several outputs of one traced function (they share common subexpressions); each is an
/// expression, a number or a reduction sum(e) / mean(e).
template <class... E>
    requires((operand<E> || reduced_expression<E>) && ...)
[[nodiscard]] constexpr std::tuple<detail::expr_t<E>...> outputs_of(const E&... e) {
    return {detail::to_expr(e)...};
}

// ---------------------------------------------------------------- flattening

namespace detail {

/// Appends expression trees to a program. Numbers become literals (tracing) or
/// constants (differentiation, where they come from the op table's formulas).
struct emitter {
    program& p;
    bool numbers_are_constants = false;

    template <std::size_t I>
    constexpr std::size_t operator()(const arg<I>&) const {
        return I;
    }
    constexpr std::size_t operator()(const ref& r) const { return r.id; }
    constexpr std::size_t operator()(const numel&) const { return p.push(make_numel()); }
    template <class Op, class A>
    constexpr std::size_t operator()(const reduced<Op, A>& e) const {
        const std::size_t a = (*this)(e.a);
        return p.push(make_apply(op_index_v<Op>, a));
    }
    template <double V>
    constexpr std::size_t operator()(const constant<V>&) const {
        return p.push(make_constant(V));
    }
    constexpr std::size_t operator()(const number& n) const {
        if (numbers_are_constants) return p.push(make_constant(n.value));
        return p.push(make_literal(p.num_literals++));
    }
    template <class Op, class A>
    constexpr std::size_t operator()(const node<Op, A>& e) const {
        const std::size_t a = (*this)(e.a);
        return p.push(make_apply(op_index_v<Op>, a));
    }
    template <class Op, class A, class B>
    constexpr std::size_t operator()(const node<Op, A, B>& e) const {
        const std::size_t a = (*this)(e.a);
        const std::size_t b = (*this)(e.b);
        return p.push(make_apply(op_index_v<Op>, a, b));
    }
    template <class Op, class A, class B, class C>
    constexpr std::size_t operator()(const node<Op, A, B, C>& e) const {
        const std::size_t a = (*this)(e.a);
        const std::size_t b = (*this)(e.b);
        const std::size_t c = (*this)(e.c);
        return p.push(make_apply(op_index_v<Op>, a, b, c));
    }
};

/// Runtime numbers of an expression in the order `emitter` numbers them.
struct literal_collector {
    double* out;
    template <class E>
    constexpr void operator()(const E& e) {
        if constexpr (std::is_same_v<E, number>) *out++ = e.value;
        else if constexpr (requires { e.c; }) {
            (*this)(e.a);
            (*this)(e.b);
            (*this)(e.c);
        } else if constexpr (requires { e.b; }) {
            (*this)(e.a);
            (*this)(e.b);
        } else if constexpr (requires { e.a; }) {
            (*this)(e.a);
        }
    }
};

template <class T>
struct is_tuple : std::false_type {};
template <class... T>
struct is_tuple<std::tuple<T...>> : std::true_type {};

template <class R>
constexpr void for_each_output(const R& r, auto&& f) {
    if constexpr (is_tuple<R>::value) std::apply([&](const auto&... e) { (f(e), ...); }, r);
    else f(r);
}

template <class R>
inline constexpr bool valid_result = [] {
    if constexpr (is_tuple<R>::value) {
        return []<class... E>(std::type_identity<std::tuple<E...>>) {
            return sizeof...(E) > 0 && ((expression<E> || reduced_expression<E>) && ...);
        }(std::type_identity<R>{});
    } else {
        return expression<R> || reduced_expression<R>;
    }
}();

template <std::size_t N, class R>
struct trace_builder {
    static constexpr program build() {
        program p;
        for (std::size_t i = 0; i < N; ++i) p.push(make_input(i));
        const R r{};
        emitter em{p, false};
        for_each_output(r, [&](const auto& e) { p.outs.push_back(em(e)); });
        return cse_program(p);
    }
};

template <class F, std::size_t... I>
auto trace_impl(F& f, std::index_sequence<I...>) {
    using R = std::remove_cvref_t<decltype(f(arg<I>{}...))>;
    static_assert(valid_result<R> || std::is_void_v<R>,  // void: an op already reported its error
                  "graft::expr::trace<N>(f): f must return an expression computed from its arguments, or "
                  "graft::expr::outputs_of(e1, e2, ...) / a std::tuple of expressions for several outputs");
    if constexpr (valid_result<R>) {
        using G = program_graph_t<trace_builder<sizeof...(I), R>>;
        traced<G> t;
        const R r = f(arg<I>{}...);
        literal_collector col{t.literals.data()};
        for_each_output(r, [&](const auto& e) { col(e); });
        return t;
    }
}

}  // namespace detail

/// Traces `f`, a function of N arguments, into a graph type plus its runtime literals.
template <std::size_t N, class F>
[[nodiscard]] auto trace(F f) {
    constexpr bool callable = []<std::size_t... I>(std::index_sequence<I...>) {
        return std::invocable<F&, arg<I>...>;
    }(std::make_index_sequence<N>{});
    static_assert(callable, "graft::expr::trace<N>(f): f must be callable with exactly N arguments (a generic "
                            "lambda taking one `auto` parameter per input); check N against f's parameter count");
    if constexpr (callable) return detail::trace_impl(f, std::make_index_sequence<N>{});
}

/// The graph type traced from a stateless function type (e.g. a lambda's decltype).
template <std::size_t N, class F>
using traced_graph_t = typename decltype(trace<N>(std::declval<F>()))::graph_type;

}  // namespace graft::expr

#undef GRAFT_EXPR_BAD_OPERAND_MSG
#undef GRAFT_EXPR_REDUCTION_OPERAND_MSG
