#pragma once
// Whole-tensor comparisons: allclose and equal.
#include "graft/core/tensor.hpp"

namespace graft {

/// True when |a - b| <= atol + rtol * |b| for every element after broadcasting
/// (torch.allclose). NaNs compare equal only when equal_nan; infinities must match exactly.
[[nodiscard]] GRAFT_INLINE bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
                                         bool equal_nan = false);

/// True when both tensors have the same sizes and equal elements (torch.equal); NaN != NaN.
[[nodiscard]] GRAFT_INLINE bool equal(const Tensor& a, const Tensor& b);

}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/ops/impl/compare.ipp"
#endif
