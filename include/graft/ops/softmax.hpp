#pragma once
// softmax and log_softmax along one dimension, numerically stable.
#include "graft/core/factories.hpp"
#include "graft/core/tensor.hpp"
#include "graft/kernels/dispatch.hpp"

namespace graft {
namespace detail {

GRAFT_INLINE Tensor run_softmax(const char* op, const Tensor& t, std::int64_t dim, bool log);

}  // namespace detail

namespace ops {

/// exp(t) / sum(exp(t)) along `dim`; the row maximum is subtracted first. A
/// row of only -inf gives NaN, as in PyTorch.
[[nodiscard]] GRAFT_INLINE Tensor softmax(const Tensor& t, std::int64_t dim);
/// log(softmax(t, dim)) computed as t - max - log(sum(exp(t - max))), without forming softmax.
[[nodiscard]] GRAFT_INLINE Tensor log_softmax(const Tensor& t, std::int64_t dim);

}  // namespace ops
}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/ops/impl/softmax.ipp"
#endif
