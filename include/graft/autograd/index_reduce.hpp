#pragma once
// Triangular parts, masked fills and outer products, differentiable: tril, triu,
// masked_fill, outer (torch.tril, triu, masked_fill, outer). Names, defaults and errors follow
// PyTorch. Graph capture records tril, triu and masked_fill as one node each and outer as
// the unsqueezes and mul it is made of, so every graph layer runs and differentiates them.
#include <cstdint>

#include "graft/autograd/functions.hpp"
#include "graft/autograd/tensor_methods.hpp"
#include "graft/ops/masked.hpp"

namespace graft {

/// The lower triangle of the last two dimensions (torch.tril): elements (i, j) with
/// j - i <= diagonal are kept, the rest is 0. At least 2 dimensions (a batch of matrices
/// otherwise). Differentiable (TrilBackward0: the gradient's lower triangle).
[[nodiscard]] GRAFT_INLINE Tensor tril(const Tensor& t, std::int64_t diagonal = 0);
/// The upper triangle (torch.triu): elements with j - i >= diagonal are kept (TriuBackward0).
[[nodiscard]] GRAFT_INLINE Tensor triu(const Tensor& t, std::int64_t diagonal = 0);

/// t with `value` where the bool `mask` is true (torch.masked_fill): t and mask broadcast
/// together, the value takes t's dtype. Differentiable in t (MaskedFillBackward0: the
/// gradient with zeros where the mask is true, summed back to t's shape).
[[nodiscard]] GRAFT_INLINE Tensor masked_fill(const Tensor& t, const Tensor& mask, const scalar& value);

/// The outer product of two 1-D tensors (torch.outer): out[i][j] = a[i] * b[j], dtypes
/// promoted as by mul. a.unsqueeze(1) * b.unsqueeze(0), so its gradient is mul's.
[[nodiscard]] GRAFT_INLINE Tensor outer(const Tensor& a, const Tensor& b);

}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/autograd/impl/index_reduce.ipp"
#endif
