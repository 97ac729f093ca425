#pragma once
// Advanced indexing with int64 index tensors, differentiable: index (t[i0, i1, ...]),
// index_put / index_put_ (t[i0, ...] = v, optionally accumulating) and Tensor::operator[]
// with an index tensor. The raw forwards are in graft/ops/advanced_index.hpp.
#include <vector>

#include "graft/autograd/engine.hpp"
#include "graft/ops/advanced_index.hpp"

namespace graft {

/// t[i0, ..., ik-1] with int64 index tensors on t's first k dimensions (PyTorch's advanced
/// indexing, aten::index): the indices broadcast together to B and the result has sizes
/// B + t.sizes()[k:]; negative indices count from the end; an index outside [-n, n) is a
/// graft::error naming it, the dimension and the size. Bool masks are not implemented
/// (graft::error). Differentiable (IndexBackward0: the gradient added back at the read
/// positions, repeated positions summed).
[[nodiscard]] GRAFT_INLINE Tensor index(const Tensor& t, const std::vector<Tensor>& indices);

/// A copy of t with `values` (broadcast to the indexing result's shape, t's dtype) written at
/// the positions index(t, indices) reads (torch.index_put). With accumulate they are added
/// and repeated positions add up; without it, a repeated position gets one of its values
/// (unspecified in PyTorch; graft writes in order, so the last). Differentiable
/// (IndexPutBackward0): t gets the gradient with the written positions zeroed (the gradient
/// itself with accumulate), values gets index(gradient, indices) summed to its shape.
[[nodiscard]] GRAFT_INLINE Tensor index_put(const Tensor& t, const std::vector<Tensor>& indices, const Tensor& values,
                                            bool accumulate = false);

namespace autograd::detail {
/// index's gradient: zeros of `sizes` with g added at the indices; differentiable (its own
/// gradient indexes again).
[[nodiscard]] GRAFT_INLINE Tensor index_backward(const Tensor& g, const int_list& sizes,
                                                 const std::vector<Tensor>& indices);
}  // namespace autograd::detail

}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/autograd/impl/advanced_index.ipp"
#endif
