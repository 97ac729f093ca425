#pragma once
// Sliding-window patches, differentiable: im2col and col2im (aten's names; what
// torch.nn.functional.unfold and fold call). Each is linear and the other's adjoint, so each
// one's gradient is the other (Im2ColBackward0, Col2ImBackward0) and gradients of any order
// follow. Graph capture records each as one node (IR kinds im2col, col2im).
#include "graft/autograd/functions.hpp"
#include "graft/ops/conv.hpp"

namespace graft {

/// The patches of a [N, C, H, W] float input as the columns of [N, C * kh * kw, L]
/// (torch.nn.functional.unfold on a 4-D input; see graft::ops::im2col). Every size argument
/// has two entries (height, width); padding is zeros on both sides.
[[nodiscard]] GRAFT_INLINE Tensor im2col(const Tensor& input, const int_list& kernel_size, const int_list& dilation,
                                         const int_list& padding, const int_list& stride);

/// Patches [N, C * kh * kw, L] summed back into [N, C, output_size...] (torch.nn.functional.fold
/// on a 3-D input); the adjoint of im2col.
[[nodiscard]] GRAFT_INLINE Tensor col2im(const Tensor& cols, const int_list& output_size, const int_list& kernel_size,
                                         const int_list& dilation, const int_list& padding, const int_list& stride);

}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/autograd/impl/conv.ipp"
#endif
