#pragma once
// graft::nn::utils: gradient utilities of torch.nn.utils (clip_grad_norm_). Manual:
// docs/optim.md (they belong to the training loop, next to the optimizers).
#include <vector>

#include "graft/core/tensor.hpp"

namespace graft::nn::utils {

/// Scales the gradients of `parameters` in place so that their total norm is at most
/// max_norm (torch.nn.utils.clip_grad_norm_), and returns the total norm before clipping as
/// a 0-d tensor. The total norm is the norm_type-norm of the per-gradient norm_type-norms
/// (any p > 0, inf for the largest |g|; also -inf and 0 as torch.linalg.vector_norm), each
/// gradient is multiplied by min(max_norm / (total + 1e-6), 1) as PyTorch does. Parameters
/// without a gradient are skipped; with none at all the result is 0. A non-finite total norm
/// is a graft::error when error_if_nonfinite (PyTorch's message), otherwise the gradients are
/// scaled by it anyway (NaN in, NaN out). Sums accumulate in double (PyTorch: in the
/// gradient's dtype). The result is float64 if any gradient is float64, else float32.
GRAFT_INLINE Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                                    bool error_if_nonfinite = false);
/// The same for one parameter.
GRAFT_INLINE Tensor clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0,
                                    bool error_if_nonfinite = false);

}  // namespace graft::nn::utils

#if GRAFT_HAS_CODE
#include "graft/nn/impl/utils.ipp"
#endif
