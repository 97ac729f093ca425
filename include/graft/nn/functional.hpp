#pragma once
// graft::nn::functional: the stateless layers and losses of torch.nn.functional (activations,
// linear, losses). Every function is composed of graft's differentiable ops (matmul, where,
// clamp, gather, log_softmax, ...), so autograd, graph capture and the executor see ordinary
// ops and gradients of any order follow. Names, arguments and defaults follow PyTorch; the
// differences are listed in docs/nn.md.
#include <cstdint>
#include <string_view>

#include "graft/autograd/functions.hpp"
#include "graft/autograd/index_reduce.hpp"
#include "graft/autograd/tensor_methods.hpp"
#include "graft/core/tensor.hpp"

namespace graft::nn::functional {

// ---------------------------------------------------------------- layers and activations

/// x @ weight^T + bias (torch.nn.functional.linear): x is [..., in], weight [out, in], bias
/// [out] or undefined; the result is [..., out].
[[nodiscard]] GRAFT_INLINE Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});

/// max(x, 0); the gradient at x <= 0 is 0 (PyTorch's threshold_backward).
[[nodiscard]] GRAFT_INLINE Tensor relu(const Tensor& x);
/// GELU, exact (`approximate` "none", with erf) or "tanh".
[[nodiscard]] GRAFT_INLINE Tensor gelu(const Tensor& x, std::string_view approximate = "none");
/// x * sigmoid(x) (SiLU / swish).
[[nodiscard]] GRAFT_INLINE Tensor silu(const Tensor& x);
/// log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (as PyTorch).
[[nodiscard]] GRAFT_INLINE Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
/// x where x > 0, else negative_slope * x.
[[nodiscard]] GRAFT_INLINE Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
/// 1 / (1 + exp(-x)).
[[nodiscard]] GRAFT_INLINE Tensor sigmoid(const Tensor& x);
/// tanh(x).
[[nodiscard]] GRAFT_INLINE Tensor tanh(const Tensor& x);
/// softmax along `dim` (required: PyTorch's implicit dim is deprecated).
[[nodiscard]] GRAFT_INLINE Tensor softmax(const Tensor& x, std::int64_t dim);
/// log(softmax(x)) along `dim`, computed stably.
[[nodiscard]] GRAFT_INLINE Tensor log_softmax(const Tensor& x, std::int64_t dim);

// ---------------------------------------------------------------- losses

/// How a loss reduces its elementwise values (PyTorch's reduction="none" | "mean" | "sum";
/// an enum, so a misspelling does not compile).
enum class reduction { none, mean, sum };

/// (input - target)^2, reduced. input and target must have the same shape (PyTorch
/// broadcasts with a warning; graft refuses) and a floating dtype.
[[nodiscard]] GRAFT_INLINE Tensor mse_loss(const Tensor& input, const Tensor& target, reduction how = reduction::mean);
/// |input - target|, reduced (same shape rules as mse_loss).
[[nodiscard]] GRAFT_INLINE Tensor l1_loss(const Tensor& input, const Tensor& target, reduction how = reduction::mean);
/// 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target); beta = 0 is
/// l1_loss, beta < 0 is an error.
[[nodiscard]] GRAFT_INLINE Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                                                 reduction how = reduction::mean, double beta = 1.0);

/// Binary cross entropy on logits x and targets t in [0, 1], in the stable form
/// (1 - t) x + (1 + (pos_weight - 1) t) softplus(-x), times `weight` (broadcast to the input),
/// reduced. pos_weight broadcasts along the last (class) dimension. Differentiable in input,
/// target, weight and pos_weight.
[[nodiscard]] GRAFT_INLINE Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                                                   const Tensor& weight = {},
                                                                   reduction how = reduction::mean,
                                                                   const Tensor& pos_weight = {});

/// Negative log likelihood: -weight[t] * log_probs[n, t, d...] for int64 class indices t.
/// log_probs is [N, C], [N, C, d...] or [C]; target [N], [N, d...] or []. Targets equal to
/// ignore_index contribute 0 (and no weight to the mean); others outside [0, C) are a
/// graft::error naming the value. "mean" divides by the summed weights of the counted targets.
[[nodiscard]] GRAFT_INLINE Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight = {},
                                           std::int64_t ignore_index = -100, reduction how = reduction::mean);

/// Cross entropy of logits (class dim 1, or 0 for a 1-D input) against int64 class indices
/// (nll_loss of log_softmax, shapes as nll_loss) or against class probabilities (a floating
/// target of the input's shape). label_smoothing in [0, 1] mixes the target with the uniform
/// distribution, as PyTorch's formulas do for each target kind (docs/nn.md).
[[nodiscard]] GRAFT_INLINE Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                                                std::int64_t ignore_index = -100, reduction how = reduction::mean,
                                                double label_smoothing = 0.0);

}  // namespace graft::nn::functional

#if GRAFT_HAS_CODE
#include "graft/nn/impl/functional.ipp"
#endif
