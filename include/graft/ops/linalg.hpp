#pragma once
// matmul with torch.matmul's rules: 1-D operands are promoted, batch dimensions broadcast.
#include "graft/core/factories.hpp"
#include "graft/core/tensor.hpp"
#include "graft/kernels/dispatch.hpp"

namespace graft {

namespace ops {

/// Matrix product of float32 or float64 tensors: dot (1-D·1-D), matrix-vector,
/// matrix-matrix and batched products with broadcast batch dimensions.
[[nodiscard]] GRAFT_INLINE Tensor matmul(const Tensor& a, const Tensor& b);
[[nodiscard]] GRAFT_INLINE Tensor matmul_impl(const Tensor& a, const Tensor& b);

}  // namespace ops
}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/ops/impl/linalg.ipp"
#endif
