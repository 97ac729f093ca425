#pragma once
// The reference way to run a graph: every node through the eager graft ops,
// so autograd records as usual when inputs require grad. The profiling
// executor falls back to it.
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "graft/ir/graph.hpp"
#include "graft/ir/symbolic.hpp"

namespace graft::ir {
namespace detail {

[[nodiscard]] GRAFT_INLINE bool truthy(const ivalue& v);

/// The type of a value as graph text prints it (Float(5, 3), an int, ...), for messages.
[[nodiscard]] GRAFT_INLINE std::string describe_value(const ivalue& x);
GRAFT_INLINE void check_input_type(const Value* v, const ivalue& x);

GRAFT_INLINE std::vector<ivalue> run_block(const Block& b, std::map<const Value*, ivalue>& env,
                                           const symbolic_sizes* sizes = nullptr,
                                           std::span<const std::int64_t> values = {});

}  // namespace detail

/// Runs `g` on `inputs` (tensors and numbers, checked against the input types).
[[nodiscard]] GRAFT_INLINE std::vector<ivalue> interpret(const Graph& g, const std::vector<ivalue>& inputs);

/// Runs `g` with attributes that are functions of the inputs' sizes (ir/symbolic.hpp)
/// evaluated for these inputs; `sizes` null: as interpret(g, inputs).
[[nodiscard]] GRAFT_INLINE std::vector<ivalue> interpret(const Graph& g, const std::vector<ivalue>& inputs,
                                                        const symbolic_sizes* sizes);

/// Runs a graph whose inputs and outputs are all tensors.
[[nodiscard]] GRAFT_INLINE std::vector<Tensor> interpret(const Graph& g, const std::vector<Tensor>& inputs);

/// A graph prepared to run many times with interpret()'s results: its values numbered into
/// slots once (interpret() looks each one up in a map), each value released after its last
/// use (interpret() keeps every one to the end, so a long graph holds all its intermediates),
/// each node's attributes resolved once. capture::aot runs its graphs this way. A graph
/// with blocks (If, Loop, Call) runs through interpret(). The graph must outlive this object
/// and not change (it reads the graph's input types to check inputs, as interpret() does);
/// run() may be called from several threads.
class prepared_graph {
public:
    explicit GRAFT_INLINE prepared_graph(std::shared_ptr<const Graph> g,
                                         std::shared_ptr<const symbolic_sizes> sizes = nullptr);

    [[nodiscard]] GRAFT_INLINE std::vector<ivalue> run(std::span<const ivalue> inputs) const;
    /// Inputs and outputs all tensors.
    [[nodiscard]] GRAFT_INLINE std::vector<Tensor> run_tensors(const std::vector<Tensor>& inputs) const;

private:
    struct step {
        const Node* node;
        std::vector<std::uint32_t> inputs, outputs;  // slots
        std::vector<std::uint32_t> release;          // slots whose last use this step is
        bool patched = false;                        // attributes computed from the inputs' sizes
    };
    std::shared_ptr<const Graph> graph_;
    std::shared_ptr<const symbolic_sizes> sizes_;
    bool flat_ = true;  // no node has blocks
    std::size_t num_slots_ = 0;
    std::vector<step> steps_;
    std::vector<std::uint32_t> outputs_;  // the graph's outputs' slots
};

}  // namespace graft::ir

#if GRAFT_HAS_GRAPH_CODE
#include "graft/ir/impl/interpreter.ipp"
#endif
