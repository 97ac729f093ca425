#pragma once
// Triangular parts, masked fills, outer products, index reductions, statistics and index
// ops, differentiable: tril, triu, masked_fill, outer, argmax, argmin, max / min over a dim,
// logsumexp, var, std, var_mean, std_mean, gather, scatter_add, index_select (torch's ops
// of these names). Names, defaults and errors follow PyTorch. Graph capture records each as
// one node (outer as the unsqueezes and mul it is made of; max / min as argmax / argmin,
// gather and squeeze; var_mean as var and mean, one autograd node eagerly), so every graph layer runs and
// differentiates them.
#include <cstdint>
#include <optional>
#include <tuple>

#include "graft/autograd/functions.hpp"
#include "graft/autograd/tensor_methods.hpp"
#include "graft/ops/index_reduce.hpp"
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

// ---------------------------------------------------------------- index reductions

/// The position of the largest element along `dim`, or in the flattened tensor when dim is
/// nullopt (torch.argmax), as int64: NaN counts as the largest and the first of equal elements
/// wins, as in PyTorch. keepdim keeps the reduced dimension(s) as 1. Not differentiable.
[[nodiscard]] GRAFT_INLINE Tensor argmax(const Tensor& t, std::optional<std::int64_t> dim = std::nullopt,
                                         bool keepdim = false);
/// The position of the smallest element (torch.argmin; NaN counts as the smallest).
[[nodiscard]] GRAFT_INLINE Tensor argmin(const Tensor& t, std::optional<std::int64_t> dim = std::nullopt,
                                         bool keepdim = false);

/// (values, indices) of the maxima along `dim` (torch.max(t, dim, keepdim)): indices as
/// argmax gives them (NaN wins, first of ties), values gathered there. The values are
/// differentiable (MaxBackward0: the gradient goes to the index position only).
/// `auto [values, indices] = max(t, 1);`
[[nodiscard]] GRAFT_INLINE std::tuple<Tensor, Tensor> max(const Tensor& t, std::int64_t dim, bool keepdim = false);
/// (values, indices) of the minima along `dim` (torch.min(t, dim, keepdim); MinBackward0).
[[nodiscard]] GRAFT_INLINE std::tuple<Tensor, Tensor> min(const Tensor& t, std::int64_t dim, bool keepdim = false);

/// The largest / smallest element of `t` as a 0-dim tensor (torch.max(t) / torch.min(t)): the
/// value of amax(t) / amin(t) over every dimension (NaN wins). The gradient is shared evenly
/// among the elements equal to the result, and when the result is NaN among the NaN elements
/// (PyTorch's MaxBackward1 / MinBackward1; amax's gradient is NaN everywhere then). Graph
/// capture records amax / amin with the attribute nan_shares. An empty tensor is an error.
[[nodiscard]] GRAFT_INLINE Tensor max(const Tensor& t);
[[nodiscard]] GRAFT_INLINE Tensor min(const Tensor& t);

/// log(sum(exp(t))) over `dims` (all when empty), with the maximum shifted out so that large
/// and very negative inputs neither overflow nor underflow (torch.logsumexp). Integer inputs
/// give float32. Differentiable (LogsumexpBackward0: g * exp(t - result), softmax times g).
[[nodiscard]] GRAFT_INLINE Tensor logsumexp(const Tensor& t, const int_list& dims, bool keepdim = false);

/// The variance over `dims` (all when empty) with PyTorch's `correction` (degrees of freedom
/// N - correction; 1 is Bessel's correction, 0 the population variance). N - correction <= 0
/// divides by 0: inf, or NaN when every deviation is 0 (PyTorch also warns; graft does not).
/// Floating-point tensors only. Differentiable (VarBackward0).
[[nodiscard]] GRAFT_INLINE Tensor var(const Tensor& t, const int_list& dims = {}, double correction = 1.0,
                                      bool keepdim = false);
/// sqrt(var) (torch.std; StdBackward0, with a zero gradient where the result is 0, as PyTorch).
[[nodiscard]] GRAFT_INLINE Tensor std(const Tensor& t, const int_list& dims = {}, double correction = 1.0,
                                      bool keepdim = false);
/// (var, mean) and (std, mean) over the same dims (torch.var_mean, torch.std_mean): one
/// autograd node with two outputs, VarMeanBackward0 / StdMeanBackward0, as PyTorch's (hooks
/// and next_functions see one node); its gradient is the sum of var's (std's) and mean's.
[[nodiscard]] GRAFT_INLINE std::tuple<Tensor, Tensor> var_mean(const Tensor& t, const int_list& dims = {},
                                                               double correction = 1.0, bool keepdim = false);
[[nodiscard]] GRAFT_INLINE std::tuple<Tensor, Tensor> std_mean(const Tensor& t, const int_list& dims = {},
                                                               double correction = 1.0, bool keepdim = false);

// ---------------------------------------------------------------- index ops

/// out[i][j] = t[index[i][j]][j] for dim 0, and so on (torch.gather): an int64 index of t's
/// rank whose sizes outside `dim` are no larger than t's; out has the index's sizes. Indices
/// outside [0, t.size(dim)) are a graft::error naming the index and the size.
/// Differentiable in t (GatherBackward0: the gradient scatter-added into zeros of t's shape).
[[nodiscard]] GRAFT_INLINE Tensor gather(const Tensor& t, std::int64_t dim, const Tensor& index);

/// A copy of t with src[i][j] added at out[index[i][j]][j] for dim 0, and so on
/// (torch.scatter_add); repeated indices add up. index has t's rank and sizes no larger than
/// src's (and than t's outside `dim`); src has t's dtype. Differentiable in t (the gradient
/// itself) and in src (the gradient gathered at index; ScatterAddBackward0).
[[nodiscard]] GRAFT_INLINE Tensor scatter_add(const Tensor& t, std::int64_t dim, const Tensor& index,
                                              const Tensor& src);

/// The slices of t at a 1-D int64 index along `dim` (torch.index_select): t's sizes with
/// `dim` replaced by the number of indices; indices may repeat. Differentiable
/// (IndexSelectBackward0: the gradient's slices added back at their positions).
[[nodiscard]] GRAFT_INLINE Tensor index_select(const Tensor& t, std::int64_t dim, const Tensor& index);

namespace autograd::detail {
/// gather's gradient, differentiable (its own gradient gathers again).
[[nodiscard]] GRAFT_INLINE Tensor gather_backward(const Tensor& g, const int_list& sizes, std::int64_t dim,
                                                  const Tensor& index);
/// index_select's gradient, differentiable (its own gradient selects again).
[[nodiscard]] GRAFT_INLINE Tensor index_select_backward(const Tensor& g, const int_list& sizes, std::int64_t dim,
                                                        const Tensor& index);
}  // namespace autograd::detail

}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/autograd/impl/index_reduce.ipp"
#endif
