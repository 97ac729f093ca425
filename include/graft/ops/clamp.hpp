#pragma once
// clamp: every element limited to [min, max] (torch.clamp with number bounds), the raw forward.
#include <optional>

#include "graft/core/factories.hpp"
#include "graft/core/scalar.hpp"
#include "graft/core/tensor.hpp"
#include "graft/ops/elementwise.hpp"

namespace graft {

namespace detail {
/// The dtype clamp computes in (checks that a bound is given and the result is not bool).
[[nodiscard]] GRAFT_INLINE dtype clamp_type(const char* op, const Tensor& t, const std::optional<scalar>& min,
                                            const std::optional<scalar>& max);
}  // namespace detail

namespace ops {

/// minimum(maximum(t, min), max) with the bounds that are given (at least one), in the
/// dtype PyTorch's promotion gives t and the bounds (an int64 tensor with a float bound
/// becomes float32; bool results are refused, as PyTorch has no bool clamp). NaN in t or
/// in a bound gives NaN; min > max gives max everywhere, as in PyTorch. No autograd
/// (graft::clamp records it).
[[nodiscard]] GRAFT_INLINE Tensor clamp(const Tensor& t, const std::optional<scalar>& min,
                                        const std::optional<scalar>& max);

}  // namespace ops
}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/ops/impl/clamp.ipp"
#endif
