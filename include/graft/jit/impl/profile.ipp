#pragma once
// Definitions for graft/jit/profile.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/jit/profile.hpp"

namespace graft::jit {
namespace detail {

GRAFT_INLINE ir::Type number_type(const ir::ivalue& v) {
    if (std::holds_alternative<double>(v)) return ir::Type::float_type();
    if (std::holds_alternative<std::int64_t>(v)) return ir::Type::int_type();
    return ir::Type::bool_type();
}

GRAFT_INLINE ir::TensorType merge(const ir::TensorType& a, const ir::TensorType& b) {
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

GRAFT_INLINE void profiling_record::observe(const ir::Value* v, const ir::ivalue& x) {
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

GRAFT_INLINE bool profiling_record::any_requires_grad() const {
    for (const auto& [v, p] : values_)
        if (p.type.is_tensor() && p.type.tensor.requires_grad.value_or(true)) return true;
    return false;
}

}  // namespace graft::jit
