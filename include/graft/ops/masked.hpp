#pragma once
// Triangular parts and masked fills (torch.tril, torch.triu, torch.masked_fill), the raw
// forwards. graft/autograd/index_reduce.hpp records their gradients.
#include <cstdint>

#include "graft/core/factories.hpp"
#include "graft/core/scalar.hpp"
#include "graft/core/tensor.hpp"
#include "graft/ops/elementwise.hpp"

namespace graft::ops {

/// The lower triangle of the last two dimensions of t (torch.tril): elements (i, j) with
/// j - i <= diagonal are kept, the others are 0. Any dtype; t needs at least 2 dimensions.
/// No autograd (graft::tril records it).
[[nodiscard]] GRAFT_INLINE Tensor tril(const Tensor& t, std::int64_t diagonal = 0);
/// The upper triangle (torch.triu): elements with j - i >= diagonal are kept.
[[nodiscard]] GRAFT_INLINE Tensor triu(const Tensor& t, std::int64_t diagonal = 0);

/// t with `value` (converted to t's dtype) where the bool `mask` is true (torch.masked_fill);
/// t and mask broadcast together. No autograd (graft::masked_fill records it).
[[nodiscard]] GRAFT_INLINE Tensor masked_fill(const Tensor& t, const Tensor& mask, const scalar& value);

}  // namespace graft::ops

#if GRAFT_HAS_CODE
#include "graft/ops/impl/masked.ipp"
#endif
