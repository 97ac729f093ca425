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
#include <array>
#include <cstddef>
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

/// Op `Op` (a definition from graft::ops::def) applied to earlier instructions.
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

}  // namespace graft::expr
