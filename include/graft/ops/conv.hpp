#pragma once
// Sliding-window patches, the raw forwards: im2col (torch.nn.functional.unfold) and col2im
// (torch.nn.functional.fold), the aten ops of those names. Each is the other's gradient
// (graft/autograd/conv.hpp records that), and convolution and pooling in graft::nn::functional
// are built on them. 4-D float32 / float64 inputs; every size argument has two entries
// (height, width).
#include "graft/core/factories.hpp"
#include "graft/core/tensor.hpp"

namespace graft::ops {

/// The kernel_size patches of a [N, C, H, W] input, zero-padded by `padding` on each side,
/// taken every `stride` with `dilation` between kernel taps, as the columns of a
/// [N, C * kh * kw, L] tensor (L = number of windows, row-major over the output grid; rows
/// ordered c, then kernel row, then kernel column).
[[nodiscard]] GRAFT_INLINE Tensor im2col(const Tensor& input, const int_list& kernel_size, const int_list& dilation,
                                         const int_list& padding, const int_list& stride);

/// The adjoint of im2col: a [N, C * kh * kw, L] tensor of patches summed back into a
/// [N, C, output_size[0], output_size[1]] image (overlapping taps add up, taps in the padding
/// are dropped). L must be the number of windows im2col gives for that output size.
[[nodiscard]] GRAFT_INLINE Tensor col2im(const Tensor& cols, const int_list& output_size, const int_list& kernel_size,
                                         const int_list& dilation, const int_list& padding, const int_list& stride);

}  // namespace graft::ops

#if GRAFT_HAS_CODE
#include "graft/ops/impl/conv.ipp"
#endif
