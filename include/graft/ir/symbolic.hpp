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
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graft/ir/graph.hpp"
#include "graft/ir/kinds.hpp"
#include "graft/ir/parse.hpp"
#include "graft/ir/print.hpp"

namespace graft::ir {

/// A size symbol: read from dimension `dim` of graph input `input`, or, for `context`
/// symbols, of input `input` of the forward whose backward the graph is (a backward whose
/// inputs carry none of the sizes it needs: the gradient of x.narrow(...).sum()).
struct size_symbol {
    std::size_t input = 0;
    std::size_t dim = 0;
    bool context = false;
};

namespace detail {
/// The forward's input sizes while a backward graph with context symbols runs (set by the
/// autograd node that runs it, for this thread).
inline thread_local const std::vector<int_list>* tl_size_context = nullptr;
}  // namespace detail

/// Makes `sizes` the context of the symbolic backward graphs run on this thread while alive.
class size_context_scope {
public:
    explicit size_context_scope(const std::vector<int_list>& sizes) noexcept : saved_(detail::tl_size_context) {
        detail::tl_size_context = &sizes;
    }
    ~size_context_scope() { detail::tl_size_context = saved_; }
    size_context_scope(const size_context_scope&) = delete;
    size_context_scope& operator=(const size_context_scope&) = delete;

private:
    const std::vector<int_list>* saved_;
};

/// One step of a postfix size program (graft::SymInt arithmetic): push a number or a symbol's
/// value, or pop two values and push their sum, difference, product, truncated quotient or
/// remainder (a zero divisor makes size_expr::eval a graft::error, as SymInt's arithmetic).
struct size_term {
    enum class op : std::uint8_t { constant, symbol, add, sub, mul, div, mod };
    op kind = op::constant;
    double value = 0;        // constant
    std::size_t symbol = 0;  // symbol
};

/// A size as a function of the symbols: coeff * the product of `symbols` (symbols may repeat),
/// or, when `program` is not empty, that program (sizes user code computed with SymInts).
struct size_expr {
    double coeff = 1;
    std::vector<std::size_t> symbols;
    std::vector<size_term> program;

    [[nodiscard]] double eval(std::span<const std::int64_t> values) const;
    /// eval, or nullopt where the program divides by zero.
    [[nodiscard]] std::optional<double> try_eval(std::span<const std::int64_t> values) const;
    /// Infix text: `4 * s0`, `(s0 - 1) / 2`.
    [[nodiscard]] std::string str() const;
};

/// A size expression user code computed with SymInts while a function was traced: a postfix
/// program whose `symbol` terms are leaves (sizes the code read with sym_size), with each
/// leaf's value in each trace (`leaves[k][t]`: leaf k in trace t).
struct size_hint {
    std::vector<size_term> program;
    std::vector<std::vector<std::int64_t>> leaves;
};

/// The hints of several traces of one program (each with one value per leaf), merged: the
/// traces must have computed the same programs in the same order, otherwise the result is empty.
[[nodiscard]] std::vector<size_hint> merge_size_hints(const std::vector<const std::vector<size_hint>*>& traces);

/// One attribute element that is a function of sizes.
struct size_patch {
    const Node* node = nullptr;
    std::string attr;
    std::ptrdiff_t index = -1;  // element of an int-list attribute; -1: the attribute is a number
    size_expr expr;
};

/// A SymInt expression of the symbols that had one value in every trace although it reads a
/// symbol (`s0 / 100` traced at 8, 9 and 10): the graph holds that value, so it serves only
/// sizes where the expression still gives it.
struct size_guard {
    size_expr expr;
    std::int64_t value = 0;
};

/// A graph's size symbols and the attributes computed from them.
struct symbolic_sizes {
    std::vector<size_symbol> symbols;
    std::vector<size_patch> patches;
    std::vector<size_guard> guards;
    /// Every input dimension that differed between the traces, and its symbol.
    std::vector<std::pair<std::size_t, std::size_t>> dims;
    std::vector<std::size_t> dim_symbols;
    /// Each symbol's value in the graph's own trace: the graph's numbers are the patches'
    /// values there (the text form prints and checks them).
    std::vector<std::int64_t> traced;

    /// Does a symbol read the forward's input sizes (size_context_scope)?
    [[nodiscard]] bool uses_context() const noexcept {
        for (const size_symbol& s : symbols)
            if (s.context) return true;
        return false;
    }
    /// The symbols' values for a call's inputs (graft::error when an input is not a tensor of
    /// the needed rank, or a context symbol has no size_context_scope).
    [[nodiscard]] std::vector<std::int64_t> bind(std::span<const ivalue> inputs) const;
    /// Do the guards hold for these inputs' sizes (symbols that read a graph input only;
    /// false where a guard divides by zero)?
    [[nodiscard]] bool guards_hold(std::span<const Tensor> inputs) const;
    /// Does node n have patches?
    [[nodiscard]] bool patches_node(const Node* n) const;
    /// n's attributes with its patches evaluated for `values`.
    [[nodiscard]] attribute_map attributes(const Node* n, std::span<const std::int64_t> values) const;
    /// Marks the symbolic dimensions of g's input types unknown (`Float(*, 3)`), so that the
    /// interpreter's input check admits any size there.
    void relax_input_types(Graph& g) const;
    /// The patches computed by SymInt programs, as size hints for traces of a graph derived
    /// from this one (its autodiff) whose symbols had values `values[t]` in trace t.
    [[nodiscard]] std::vector<size_hint> as_hints(const std::vector<std::vector<std::int64_t>>& values) const;
    /// Text for debug output: `s0 = %x0.size(0); %17 expand.sizes[0] = s0; %18 value = 1 * s0`.
    [[nodiscard]] std::string describe(const Graph& g) const;
};

/// A graph with symbolic sizes, as read from text.
struct symbolic_graph {
    std::unique_ptr<Graph> graph;
    symbolic_sizes sizes;
};

/// The text form of a graph with symbolic sizes: the graph's text, then a `sizes:` section
/// that names each symbol's source and traced value, and each computed attribute:
///
///   sizes:
///     s0 = %x0.size(0) = 8
///     s1 = forward(0).size(1) = 6      (a context symbol)
///     %3.length = (s0 + 1) / 2
///     %5.sizes[0] = s0 * 3
///
/// Attributes are named by their node's first output. graft::error when a patched node has
/// no outputs or the table does not fit the graph.
[[nodiscard]] std::string to_string(const Graph& g, const symbolic_sizes& sizes);

/// Reads to_string(g, sizes)'s text (a text without a `sizes:` section gives an empty table).
/// Every computed attribute must hold its expression's value at the traced symbol values and
/// every symbol must name an input dimension of that size: graft::error naming the line
/// otherwise.
[[nodiscard]] symbolic_graph parse_symbolic(std::string_view text);

/// Compares `g` with `others`, traces of the same straight-line program at other sizes:
/// their structure (kinds, inputs, attribute names) must be the same and every attribute that
/// differs must be explained by one expression in every trace: first the `hints` (SymInt
/// expressions whose leaves are themselves explained as below), then a constant times a product
/// of at most two symbols, then a * s + b with whole a and b (three traces or more). Returns nullopt and sets `why` otherwise (a tensor constant that
/// differs, a size not explained by the inputs' sizes, control flow). `context`: for backward
/// graphs, the forward graph of each trace (g's first): its inputs' sizes may be symbols too.
[[nodiscard]] std::optional<symbolic_sizes> infer_symbolic_sizes(const Graph& g, const std::vector<const Graph*>& others,
                                                                 std::string& why,
                                                                 const std::vector<size_hint>& hints = {},
                                                                 const std::vector<const Graph*>& context = {});

}  // namespace graft::ir

#if GRAFT_HAS_GRAPH_CODE
#include "graft/ir/impl/symbolic.ipp"
#endif
