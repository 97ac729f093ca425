#pragma once
// Symbolic sizes for graphs traced at concrete sizes. Tracing (capture::aot, autograd's
// derivatives) records sizes as numbers: the backward of a mean over a batch of 8 divides by
// 8 and expands to [8, 1]. Traces of the same program at other sizes tell which of those
// numbers are functions of the inputs' sizes: infer_symbolic_sizes compares them and returns
// size symbols (each read from one input dimension; dimensions that were equal in every trace
// share a symbol, as PyTorch's duck sizing does) and patches (an element of an int-list
// attribute, or a number constant's value, equal to coeff * product of symbols). A graph with
// its patches runs at any sizes of the symbolic dimensions: the attributes are evaluated from
// the call's input sizes (graft::jit's DYNAMIC differentiable plans).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "graft/ir/graph.hpp"
#include "graft/ir/kinds.hpp"

namespace graft::ir {

/// A size symbol: read from dimension `dim` of graph input `input`.
struct size_symbol {
    std::size_t input = 0;
    std::size_t dim = 0;
};

/// coeff * the product of the symbols' values (symbols may repeat).
struct size_expr {
    double coeff = 1;
    std::vector<std::size_t> symbols;

    [[nodiscard]] double eval(std::span<const std::int64_t> values) const;
};

/// One attribute element that is a function of sizes.
struct size_patch {
    const Node* node = nullptr;
    std::string attr;
    std::ptrdiff_t index = -1;  // element of an int-list attribute; -1: the attribute is a number
    size_expr expr;
};

/// A graph's size symbols and the attributes computed from them.
struct symbolic_sizes {
    std::vector<size_symbol> symbols;
    std::vector<size_patch> patches;
    /// Every input dimension that differed between the traces, and its symbol.
    std::vector<std::pair<std::size_t, std::size_t>> dims;
    std::vector<std::size_t> dim_symbols;

    /// The symbols' values for a call's inputs (graft::error when an input is not a tensor of
    /// the needed rank).
    [[nodiscard]] std::vector<std::int64_t> bind(std::span<const ivalue> inputs) const;
    /// Does node n have patches?
    [[nodiscard]] bool patches_node(const Node* n) const;
    /// n's attributes with its patches evaluated for `values`.
    [[nodiscard]] attribute_map attributes(const Node* n, std::span<const std::int64_t> values) const;
    /// Marks the symbolic dimensions of g's input types unknown (`Float(*, 3)`), so that the
    /// interpreter's input check admits any size there.
    void relax_input_types(Graph& g) const;
    /// Text for debug output: `s0 = %x0.size(0); %17 expand.sizes[0] = s0; %18 value = 1 * s0`.
    [[nodiscard]] std::string describe(const Graph& g) const;
};

/// Compares `g` with `others`, traces of the same straight-line program at other sizes:
/// their structure (kinds, inputs, attribute names) must be the same and every attribute that
/// differs must be explained by one expression (a constant times a product of at most two
/// symbols) in every trace. Returns nullopt and sets `why` otherwise (a tensor constant that
/// differs, a size not explained by the inputs' sizes, control flow).
[[nodiscard]] std::optional<symbolic_sizes> infer_symbolic_sizes(const Graph& g, const std::vector<const Graph*>& others,
                                                                 std::string& why);

}  // namespace graft::ir

#if GRAFT_HAS_CODE
#include "graft/ir/impl/symbolic.ipp"
#endif
