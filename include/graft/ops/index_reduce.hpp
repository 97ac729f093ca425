#pragma once
// Index reductions, statistics and index ops, the raw forwards: argmax / argmin,
// logsumexp, var / std, gather, scatter_add, index_select (torch's ops of these names), and
// the zero-filled scatters their gradients use. graft/autograd/index_reduce.hpp records the
// gradients. Index tensors are int64; every index is bounds-checked (graft::error naming the
// op, the index and the size) before it is used.
#include <cstdint>
#include <optional>

#include "graft/core/factories.hpp"
#include "graft/core/tensor.hpp"
#include "graft/ops/elementwise.hpp"
#include "graft/ops/reduce.hpp"

namespace graft::ops {

/// The position of the largest element along `dim` (all elements, flattened, when nullopt),
/// as int64 (torch.argmax): NaN counts as larger than any number and the first of equal
/// elements wins. keepdim keeps the reduced dimension (every dimension without `dim`) as 1.
/// float and int64 tensors; empty reductions are refused.
[[nodiscard]] GRAFT_INLINE Tensor argmax(const Tensor& t, std::optional<std::int64_t> dim = std::nullopt,
                                         bool keepdim = false);
/// The position of the smallest element (torch.argmin; NaN counts as smaller than any number).
[[nodiscard]] GRAFT_INLINE Tensor argmin(const Tensor& t, std::optional<std::int64_t> dim = std::nullopt,
                                         bool keepdim = false);

/// log(sum(exp(t))) over `dims` (all when empty), computed with the maximum shifted out so
/// that it neither overflows nor underflows (torch.logsumexp). Integer inputs give float32.
[[nodiscard]] GRAFT_INLINE Tensor logsumexp(const Tensor& t, const int_list& dims, bool keepdim = false);

/// The variance over `dims` (all when empty): sum((t - mean)^2) / max(0, N - correction)
/// (torch.var), so N - correction <= 0 gives inf, or NaN when the sum is 0 (PyTorch warns
/// there; graft does not). Floating-point tensors only.
[[nodiscard]] GRAFT_INLINE Tensor var(const Tensor& t, const int_list& dims, double correction = 1.0,
                                      bool keepdim = false);
/// sqrt(var(...)) (torch.std).
[[nodiscard]] GRAFT_INLINE Tensor std(const Tensor& t, const int_list& dims, double correction = 1.0,
                                      bool keepdim = false);

/// out[i][j] = t[index[i][j]][j] for dim 0, and so on (torch.gather): index has t's rank and,
/// outside `dim`, sizes no larger than t's; out has index's sizes and t's dtype.
[[nodiscard]] GRAFT_INLINE Tensor gather(const Tensor& t, std::int64_t dim, const Tensor& index);

/// A copy of t with out[index[i][j]][j] += src[i][j] for dim 0, and so on (torch.scatter_add):
/// index has t's rank, sizes no larger than src's, and outside `dim` no larger than t's;
/// src has t's dtype. Repeated indices add up. float and int64 tensors.
[[nodiscard]] GRAFT_INLINE Tensor scatter_add(const Tensor& t, std::int64_t dim, const Tensor& index,
                                              const Tensor& src);

/// The slices of t at the positions of a 1-D (or one-element 0-dim) index along `dim`
/// (torch.index_select): t's sizes with `dim` replaced by the number of indices.
[[nodiscard]] GRAFT_INLINE Tensor index_select(const Tensor& t, std::int64_t dim, const Tensor& index);

/// zeros(sizes, g's dtype) with g scatter-added at `index` along `dim`: gather's gradient as
/// one op (PyTorch's gather_backward), so graph capture records the sizes as attributes.
[[nodiscard]] GRAFT_INLINE Tensor gather_backward(const Tensor& g, const int_list& sizes, std::int64_t dim,
                                                  const Tensor& index);
/// zeros(sizes) with g's slices added at the positions of `index` along `dim`: index_select's
/// gradient as one op (PyTorch's index_select_backward).
[[nodiscard]] GRAFT_INLINE Tensor index_select_backward(const Tensor& g, const int_list& sizes, std::int64_t dim,
                                                        const Tensor& index);

}  // namespace graft::ops

#if GRAFT_HAS_CODE
#include "graft/ops/impl/index_reduce.ipp"
#endif
