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

[[nodiscard]] inline ir::Type number_type(const ir::ivalue& v) {
    if (std::holds_alternative<double>(v)) return ir::Type::float_type();
    if (std::holds_alternative<std::int64_t>(v)) return ir::Type::int_type();
    return ir::Type::bool_type();
}

/// a merged with b: parts that differ become unknown.
[[nodiscard]] inline ir::TensorType merge(const ir::TensorType& a, const ir::TensorType& b) {
    ir::TensorType r;
    if (a.scalar_type == b.scalar_type) r.scalar_type = a.scalar_type;
    if (a.sizes && b.sizes && a.sizes->size() == b.sizes->size()) {
        r.sizes.emplace();
        for (std::size_t i = 0; i < a.sizes->size(); ++i)
            r.sizes->push_back((*a.sizes)[i] == (*b.sizes)[i] ? (*a.sizes)[i] : std::nullopt);
    }
    if (a.strides == b.strides) r.strides = a.strides;
    if (a.requires_grad == b.requires_grad) r.requires_grad = a.requires_grad;
    return r;
}

}  // namespace detail

/// Per-value observations of the profiling runs, keyed by the graph's values.
class profiling_record {
public:
    /// Records that `v` carried `x` in this run.
    void observe(const ir::Value* v, const ir::ivalue& x) {
        value_profile& p = values_[v];
        const Tensor* t = std::get_if<Tensor>(&x);
        const ir::Type seen = t && t->defined() ? ir::Type::tensor_type(ir::TensorType::of(*t)) : detail::number_type(x);
        if (p.runs == 0) {
            p.type = seen;
            if (t && t->defined()) p.contiguous = t->is_contiguous();
        } else if (p.type.kind != seen.kind) {
            p.mixed_kinds = true;
            p.type = ir::Type::tensor_type();
            p.contiguous.reset();
        } else if (seen.is_tensor()) {
            p.type.tensor = detail::merge(p.type.tensor, seen.tensor);
            if (p.contiguous && *p.contiguous != t->is_contiguous()) p.contiguous.reset();
        }
        if (t && t->defined()) {
            if (p.shapes.size() < value_profile::max_shapes)
                p.shapes.insert(std::vector<std::int64_t>(t->sizes().begin(), t->sizes().end()));
            else if (!p.shapes.count(std::vector<std::int64_t>(t->sizes().begin(), t->sizes().end())))
                p.shapes_overflow = true;
        }
        ++p.runs;
    }
    void finish_run() { ++runs_; }

    /// The profile of `v`, or null when no run reached it (an untaken If branch).
    [[nodiscard]] const value_profile* find(const ir::Value* v) const {
        auto it = values_.find(v);
        return it == values_.end() ? nullptr : &it->second;
    }
    /// Completed profiling runs.
    [[nodiscard]] std::size_t runs() const noexcept { return runs_; }
    /// Did any value seen hold a tensor that requires grad (in some run)?
    [[nodiscard]] bool any_requires_grad() const {
        for (const auto& [v, p] : values_)
            if (p.type.is_tensor() && p.type.tensor.requires_grad.value_or(true)) return true;
        return false;
    }
    [[nodiscard]] const std::map<const ir::Value*, value_profile>& values() const noexcept { return values_; }

private:
    std::map<const ir::Value*, value_profile> values_;
    std::size_t runs_ = 0;
};

}  // namespace graft::jit
