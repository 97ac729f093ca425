#pragma once
// The IR's text form, printed by `std::ostream << graph` and read back by
// ir::parse (graft/ir/parse.hpp) into an identical graph:
//
//   graph(%x : Float(2, 3), %flag : bool):
//     %1 : Float(2, 3) = tanh(%x)
//     %2 : float = prim::Constant[value=0.5]()
//     %y : Tensor = prim::If(%flag)
//       block0():
//         %4 : Tensor = mul(%1, %2)
//         -> (%4)
//       block1():
//         -> (%1)
//     return (%y)
//
// Every value carries its type; attributes are sorted by name; floats are
// printed with the shortest text that reads back to the same bits.
#include <iosfwd>
#include <string>

#include "graft/core/print.hpp"
#include "graft/ir/graph.hpp"

namespace graft::ir {
namespace detail {

/// Shortest round-trip text of a double, always recognisable as a float ("1." not "1").
GRAFT_INLINE void print_float(std::ostream& os, double v);

GRAFT_INLINE void print_float32(std::ostream& os, float v);

GRAFT_INLINE void print_string(std::ostream& os, const std::string& s);

GRAFT_INLINE void print_attribute(std::ostream& os, const attribute& a);

GRAFT_INLINE void print_value(std::ostream& os, const Value* v);

GRAFT_INLINE void print_values(std::ostream& os, const std::vector<Value*>& vs, bool typed);

GRAFT_INLINE void print_node(std::ostream& os, const Node& n, int indent);

GRAFT_INLINE void print_block(std::ostream& os, const Block& b, int indent);

/// The stream slot (std::ios_base::iword) holding print_options::max_tensor_elements + 1 while
/// to_string(g, options) prints (0: every element).
GRAFT_INLINE int tensor_elements_slot();

}  // namespace detail

/// How to_string(graph, options) prints. The default is the parseable text form.
struct print_options {
    /// Tensor constants with more elements print their first and last few values around
    /// "..." (for reading: ir::parse refuses the result). Negative: every element.
    std::int64_t max_tensor_elements = -1;
};

/// The text form of `g` (see the top of this header).
GRAFT_INLINE std::ostream& operator<<(std::ostream& os, const Graph& g);

[[nodiscard]] GRAFT_INLINE std::string to_string(const Graph& g);
/// The text form with options, e.g. {.max_tensor_elements = 8} for logs and debug output.
[[nodiscard]] GRAFT_INLINE std::string to_string(const Graph& g, const print_options& options);

/// Graphviz DOT: one box per node (kind and attributes), graph inputs and
/// outputs as ellipses, edges labelled with the value's name and type.
GRAFT_INLINE void to_dot(const Graph& g, std::ostream& os);

}  // namespace graft::ir

#if GRAFT_HAS_GRAPH_CODE
#include "graft/ir/impl/print.ipp"
#endif
