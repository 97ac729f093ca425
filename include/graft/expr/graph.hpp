#pragma once
// Compile-time graphs: a graph is a type. Its instructions are a type list in
// SSA order (each instruction names the ids of earlier instructions it reads),
// its outputs a list of instruction ids. Passes map graph types to graph types;
// the fused evaluator turns a graph type into one SIMD loop.
//
//   graph<instrs<input<0>, input<1>, apply<ops::def::mul_op, 0, 1>,
//                literal<0>, apply<ops::def::add_op, 2, 3>>,
//         outputs<4>, 1>
//
// is `x * w + c` where c is the first runtime literal (a number written in the
// user's function; its value travels beside the type, in a std::array<double, 1>).
// Compile-time constants (`constant<1.0>`) are part of the type, so passes can
// fold and simplify them; runtime literals never compare equal to each other.
//
// Reductions (`apply<sum_op, id>`, `apply<mean_op, id>`) sum their operand over the
// evaluation domain (the broadcast shape of all the graph's arguments) to a 0-dim
// value. They may only be outputs: no instruction reads a reduction.
#include <array>
#include <concepts>
#include <cstddef>
#include <string_view>
#include <type_traits>

#include "graft/ops/table.hpp"

namespace graft::expr {

/// The I-th argument of the graph: a tensor, or a number broadcast to every element.
template <std::size_t I>
struct input {
    static constexpr std::size_t index = I;
};

/// A number known at compile time (part of the type).
template <double V>
struct constant {
    static constexpr double value = V;
};

/// The K-th runtime number of the graph (its value is stored beside the type).
template <std::size_t K>
struct literal {
    static constexpr std::size_t index = K;
};

/// The number of elements of the evaluation domain, as a number (used by mean's derivative).
struct numel {};

/// Op `Op` (a definition from graft::ops::def, or a reduction below) applied to earlier
/// instructions.
template <class Op, std::size_t... Operands>
struct apply {
    using op = Op;
    static constexpr std::size_t arity = sizeof...(Operands);
};

/// The instructions of a graph, in SSA order: instruction i reads only ids < i.
template <class... Instrs>
struct instrs {
    static constexpr std::size_t size = sizeof...(Instrs);
};

/// The instruction ids a graph returns, in order.
template <std::size_t... Ids>
struct outputs {
    static constexpr std::size_t size = sizeof...(Ids);
};

/// A whole graph: instructions, outputs, and how many runtime literals it carries.
template <class Instrs, class Outputs, std::size_t NumLiterals = 0>
struct graph {
    using instructions = Instrs;
    using results = Outputs;
    static constexpr std::size_t num_literals = NumLiterals;
};

/// A traced function: its graph type plus the values of its runtime literals.
/// Every expr API takes and returns traced objects.
template <class G>
struct traced {
    using graph_type = G;
    std::array<double, G::num_literals> literals{};
};

// ---------------------------------------------------------------- reductions

// Full reductions, laid out like the op table's entries (graft/ops/table.hpp), which has
// no reduction kind: the graphs' own definitions. `grad_0(g, x, y)` is the gradient of
// the operand, of the evaluation domain's shape (g, the 0-dim output gradient, broadcasts).

/// sum(x): the sum of x over the evaluation domain.
struct sum_op {
    static constexpr std::string_view name = "sum";
    static constexpr const char* node_name = "SumBackward0";
    static constexpr int arity = 1;
    static constexpr bool differentiable = true;
    static constexpr bool reduction = true;
    static constexpr bool divides_by_numel = false;
    template <class G, class X, class Y>
    [[nodiscard]] static constexpr auto grad_0(const G& g, const X&, const Y&) {
        return g;
    }
};

/// mean(x): sum(x) / numel (NaN over an empty domain, as 0/0).
struct mean_op {
    static constexpr std::string_view name = "mean";
    static constexpr const char* node_name = "MeanBackward0";
    static constexpr int arity = 1;
    static constexpr bool differentiable = true;
    static constexpr bool reduction = true;
    static constexpr bool divides_by_numel = true;
    template <class G, class X, class Y>
    [[nodiscard]] static constexpr auto grad_0(const G& g, const X&, const Y&) {
        return g / numel{};
    }
};

/// Is `Op` a reduction (sum_op, mean_op)?
template <class Op>
concept reduction_op = requires {
    { Op::reduction } -> std::convertible_to<bool>;
} && Op::reduction;

}  // namespace graft::expr
