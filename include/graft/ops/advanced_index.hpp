#pragma once
// Advanced indexing with int64 index tensors, the raw forwards: index (t[i0, i1, ...] in
// PyTorch), index_put (t[i0, ...] = v, with accumulate) and the zero-filled index_put that
// index's gradient is. graft/autograd/advanced_index.hpp records the gradients.
// Index tensors apply to t's leading dimensions and broadcast together; negative indices
// count from the end; every index is bounds-checked before anything is written.
#include <span>

#include "graft/core/tensor.hpp"

namespace graft::ops {

/// t indexed by k int64 tensors on its first k dimensions (torch.Tensor.__getitem__ with a
/// tuple of index tensors, aten::index): the index tensors broadcast to a shape B, and the
/// result has sizes B + t.sizes()[k:], out[b, ...] = t[i0[b], ..., ik-1[b], ...].
[[nodiscard]] GRAFT_INLINE Tensor index(const Tensor& t, std::span<const Tensor> indices);

/// A copy of t with values written at the positions index(t, indices) reads (aten::index_put):
/// values broadcast to B + t.sizes()[k:] and has t's dtype. accumulate adds (repeated
/// positions add up); without it a repeated position gets one of its values (which one is
/// unspecified in PyTorch; graft writes in order, so the last).
[[nodiscard]] GRAFT_INLINE Tensor index_put(const Tensor& t, std::span<const Tensor> indices, const Tensor& values,
                                            bool accumulate = false);

/// zeros(sizes, g's dtype) with g added at the positions of `indices`: index's gradient as
/// one op, so graph capture records the sizes as an attribute.
[[nodiscard]] GRAFT_INLINE Tensor index_backward(const Tensor& g, const int_list& sizes,
                                                 std::span<const Tensor> indices);

}  // namespace graft::ops

#if GRAFT_HAS_CODE
#include "graft/ops/impl/advanced_index.ipp"
#endif
