#pragma once
// cat: tensors joined along one dimension (torch.cat), the raw forward. stack, split,
// chunk and unbind are built on it and on views (graft/autograd/join_split.hpp).
#include <cstdint>
#include <span>

#include "graft/core/factories.hpp"
#include "graft/core/tensor.hpp"

namespace graft::ops {

/// The tensors joined along `dim` into a new tensor of their promoted dtype. As in PyTorch:
/// the list must not be empty, 0-dim tensors are refused, every other tensor has the same
/// rank and the same sizes except along `dim`, and 1-D tensors of size 0 are skipped
/// (PyTorch's legacy rule, so `cat({x, empty})` works). No autograd (graft::cat records it).
[[nodiscard]] GRAFT_INLINE Tensor cat(std::span<const Tensor> tensors, std::int64_t dim = 0);

}  // namespace graft::ops

#if GRAFT_HAS_CODE
#include "graft/ops/impl/cat.ipp"
#endif
