#pragma once
// The reference way to run a graph: every node through the eager graft ops,
// so autograd records as usual when inputs require grad. The profiling
// executor falls back to it.
#include <cstdint>
#include <map>
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

}  // namespace graft::ir

#if GRAFT_HAS_GRAPH_CODE
#include "graft/ir/impl/interpreter.ipp"
#endif
