#pragma once
// Definitions for graft/ops/clamp.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/ops/clamp.hpp"

#include <string>

namespace graft {

namespace detail {

GRAFT_INLINE dtype clamp_type(const char* op, const Tensor& t, const std::optional<scalar>& min,
                              const std::optional<scalar>& max) {
    graft::detail::check(t.defined(), op, ": got an undefined tensor");
    graft::detail::check(min.has_value() || max.has_value(), op,
                         ": At least one of 'min' or 'max' must not be None");
    graft::detail::promotion_state s;
    s.add(t);
    if (min) s.add(*min);
    if (max) s.add(*max);
    const dtype type = s.result();
    graft::detail::check(type != dtype::bool_, op, ": not implemented for 'Bool' (the tensor and its bounds are bool)");
    return type;
}

}  // namespace detail

namespace ops {

GRAFT_INLINE Tensor clamp(const Tensor& t, const std::optional<scalar>& min, const std::optional<scalar>& max) {
    const graft::detail::observed_op obs;
    const dtype type = graft::detail::clamp_type("clamp", t, min, max);
    // maximum/minimum propagate NaN from either operand, and minimum after maximum gives
    // max when min > max: PyTorch's clamp, on the SIMD kernels.
    Tensor out = graft::detail::raw::to(t, type);
    // `out` has the promoted dtype already, so the bounds (numbers) do not promote it again.
    if (min) out = graft::ops::maximum(out, *min);
    if (max) out = graft::ops::minimum(out, *max);
    const auto attr = [](const scalar& s) -> graft::detail::op_attr {
        if (s.is_floating_point()) return s.to_double();
        if (s.kind() == dtype::bool_) return s.to_double() != 0.0;
        return s.to_int64();
    };
    if (min && max) return obs.done(out, "clamp", {t}, {{"min", attr(*min)}, {"max", attr(*max)}});
    if (min) return obs.done(out, "clamp", {t}, {{"min", attr(*min)}});
    return obs.done(out, "clamp", {t}, {{"max", attr(*max)}});
}

}  // namespace ops
}  // namespace graft
