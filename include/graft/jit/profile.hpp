#pragma once
// The profiling record: what the profiling runs saw flow through each value
// of a graph. Types seen in several runs are merged as PyTorch merges profiled
// tensor types: a part that differs between runs becomes unknown, a dimension
// seen with two sizes becomes symbolic (the rank stays known).
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "graft/ir/graph.hpp"
#include "graft/ir/kinds.hpp"
#include "graft/ir/type.hpp"

namespace graft::jit {

/// What was seen of one value over all profiling runs.
struct value_profile {
    std::size_t runs = 0;      // times a value arrived here
    ir::Type type;             // merged type (tensor parts unknown where runs disagreed)
    bool mixed_kinds = false;  // a tensor in one run, a number in another
    /// Contiguity, merged: unknown when runs disagreed.
    std::optional<bool> contiguous;
    /// The distinct shapes seen (at most `max_shapes`; `shapes_overflow` past that).
    std::set<std::vector<std::int64_t>> shapes;
    bool shapes_overflow = false;
    static constexpr std::size_t max_shapes = 16;
};

namespace detail {

[[nodiscard]] GRAFT_INLINE ir::Type number_type(const ir::ivalue& v);

/// a merged with b: parts that differ become unknown.
[[nodiscard]] GRAFT_INLINE ir::TensorType merge(const ir::TensorType& a, const ir::TensorType& b);

}  // namespace detail

/// Per-value observations of the profiling runs, keyed by the graph's values.
class profiling_record {
public:
    /// Records that `v` carried `x` in this run.
    void observe(const ir::Value* v, const ir::ivalue& x);
    void finish_run() { ++runs_; }

    /// The profile of `v`, or null when no run reached it (an untaken If branch).
    [[nodiscard]] const value_profile* find(const ir::Value* v) const {
        auto it = values_.find(v);
        return it == values_.end() ? nullptr : &it->second;
    }
    /// Completed profiling runs.
    [[nodiscard]] std::size_t runs() const noexcept { return runs_; }
    /// Did any value seen hold a tensor that requires grad (in some run)?
    [[nodiscard]] bool any_requires_grad() const;
    [[nodiscard]] const std::map<const ir::Value*, value_profile>& values() const noexcept { return values_; }

private:
    std::map<const ir::Value*, value_profile> values_;
    std::size_t runs_ = 0;
};

}  // namespace graft::jit

#if GRAFT_HAS_GRAPH_CODE
#include "graft/jit/impl/profile.ipp"
#endif
