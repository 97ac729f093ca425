#pragma once
// graft::nn::functional: the stateless layers and losses of torch.nn.functional (activations,
// linear, losses). Every function is composed of graft's differentiable ops (matmul, where,
// clamp, gather, log_softmax, ...), so autograd, graph capture and the executor see ordinary
// ops and gradients of any order follow. Names, arguments and defaults follow PyTorch; the
// differences are listed in docs/nn.md.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "graft/autograd/conv.hpp"
#include "graft/autograd/functions.hpp"
#include "graft/autograd/index_reduce.hpp"
#include "graft/autograd/join_split.hpp"
#include "graft/autograd/tensor_methods.hpp"
#include "graft/core/factories.hpp"
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

/// How a loss reduces its elementwise values (PyTorch's reduction="none" | "mean" | "sum" |
/// "batchmean"; an enum, so a misspelling does not compile). `batchmean` (the sum divided by
/// the input's first size) is kl_div's only: every other loss refuses it with a graft::error,
/// as PyTorch raises "batchmean is not a valid value for reduction".
enum class reduction { none, mean, sum, batchmean };

/// (input - target)^2, reduced. input and target must have the same shape (PyTorch
/// broadcasts with a warning; graft refuses) and a floating dtype.
[[nodiscard]] GRAFT_INLINE Tensor mse_loss(const Tensor& input, const Tensor& target, reduction how = reduction::mean);
/// |input - target|, reduced (same shape rules as mse_loss).
[[nodiscard]] GRAFT_INLINE Tensor l1_loss(const Tensor& input, const Tensor& target, reduction how = reduction::mean);
/// 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target); beta = 0 is
/// l1_loss, beta < 0 is an error.
[[nodiscard]] GRAFT_INLINE Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                                                 reduction how = reduction::mean, double beta = 1.0);

/// Huber loss (torch.nn.functional.huber_loss): 0.5 d^2 where |d| < delta, else
/// delta (|d| - 0.5 delta) (d = input - target), reduced; same shape rules as mse_loss.
/// delta <= 0 (or NaN) is an error, as PyTorch's. Gradient delta sign(d) on the linear part,
/// d on the quadratic one, NaN at a NaN d (as PyTorch's).
[[nodiscard]] GRAFT_INLINE Tensor huber_loss(const Tensor& input, const Tensor& target,
                                             reduction how = reduction::mean, double delta = 1.0);

/// Kullback-Leibler divergence (torch.nn.functional.kl_div) of log-probabilities `input`
/// against probabilities `target`: xlogy(t, t) - t * input (0 where t = 0, as PyTorch's xlogy),
/// or with log_target exp(t) (t - input) for log-probability targets; input and target have
/// the same shape (PyTorch broadcasts; graft refuses, as for the other losses). Reductions
/// none / mean (over all elements, as PyTorch's) / sum / batchmean (the sum divided by
/// input.size(0); the sum for a 0-dim input), PyTorch's recommended one. PyTorch 1.13's
/// composite gradients: target t = 0 gets a NaN gradient in t (xlogy's t / t), as in PyTorch.
[[nodiscard]] GRAFT_INLINE Tensor kl_div(const Tensor& input, const Tensor& target, reduction how = reduction::mean,
                                         bool log_target = false);

/// Binary cross entropy of probabilities x in [0, 1] (a sigmoid's output) and targets t:
/// -weight * (t * max(log(x), -100) + (1 - t) * max(log(1 - x), -100)), reduced. input and
/// target have the same shape and dtype; an input element outside [0, 1] (or NaN) is an error
/// on every call. Gradients as PyTorch's: input g * (x - t) / max(x (1 - x), 1e-12), target
/// -g * logit(x); `weight` (broadcast to the input) must not require grad, as in PyTorch.
/// binary_cross_entropy_with_logits is the stabler choice on logits.
[[nodiscard]] GRAFT_INLINE Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                                                       const Tensor& weight = {}, reduction how = reduction::mean);

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

// ---------------------------------------------------------------- distances and normalization

/// The cosine of the angle between x1 and x2 along `dim` (torch.nn.functional.cosine_similarity),
/// after broadcasting them (broadcast_tensors) and promoting to their common floating dtype:
/// sum((x1 / n1) * (x2 / n2), dim) with n = sqrt(max(sum(x^2, dim), eps^2)), PyTorch 1.13's
/// formula: its clamp of the squared norm runs outside autograd, so the gradient is that of
/// sqrt(sum(x^2)) evaluated at the clamped value (a zero vector gets x2 / (|x2| eps), not NaN).
/// eps < 0 is an error (PyTorch accepts it).
[[nodiscard]] GRAFT_INLINE Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, std::int64_t dim = 1,
                                                    double eps = 1e-8);

/// input / max(||input||_p, eps), the p-norm taken along `dim` (torch.nn.functional.normalize).
/// p > 0 (finite) or infinity; the norm's gradient is PyTorch's, 0 for a zero vector (and for
/// zero elements when p < 1, NaN there when a NaN reaches the norm), and 0 wherever the norm is
/// below eps (clamp_min). p <= 0 (which
/// PyTorch computes as a count or a negative power) and eps < 0 are errors.
[[nodiscard]] GRAFT_INLINE Tensor normalize(const Tensor& input, double p = 2.0, std::int64_t dim = 1,
                                            double eps = 1e-12);

/// Pads `input` (torch.nn.functional.pad): pad = {left, right} of the last dimension, then
/// {left, right} of the one before, ... (at most 2 * input.dim() values, an even count);
/// a negative amount crops. mode "constant" fills with `value` (any dtype; a copy even when
/// nothing is padded); "reflect" (mirrored without the edge; each amount below the size),
/// "replicate" (the edge repeated) and "circular" (wrapped around) pad the last 1, 2 or 3
/// dimensions of an input with 1 or 2 more (circular: exactly 2 more), as PyTorch, and take no
/// value (a non-zero one is an error).
[[nodiscard]] GRAFT_INLINE Tensor pad(const Tensor& input, const int_list& pad, std::string_view mode = "constant",
                                      double value = 0.0);

// ---------------------------------------------------------------- convolution and pooling

/// A (height, width) size argument that also accepts one int for both, as PyTorch's int or
/// tuple arguments do: `2`, `{2, 1}`.
struct int_pair {
    std::int64_t h = 0, w = 0;
    int_pair(int both) : h(both), w(both) {}           // NOLINT(google-explicit-constructor): PyTorch's int form
    int_pair(std::int64_t both) : h(both), w(both) {}  // NOLINT(google-explicit-constructor)
    int_pair(std::int64_t height, std::int64_t width) : h(height), w(width) {}
};

/// An int_pair or nothing (PyTorch's stride=None of the pooling functions): `{}`,
/// `std::nullopt`, `2` or `{2, 1}`.
struct optional_int_pair {
    std::optional<int_pair> value;
    optional_int_pair() = default;
    optional_int_pair(std::nullopt_t) {}                                                            // NOLINT
    optional_int_pair(int both) : value(int_pair{both}) {}                                          // NOLINT
    optional_int_pair(std::int64_t both) : value(int_pair{both}) {}                                 // NOLINT
    optional_int_pair(std::int64_t height, std::int64_t width) : value(int_pair{height, width}) {}  // NOLINT
    optional_int_pair(int_pair p) : value(p) {}                                                     // NOLINT
};

/// conv2d's padding: an int_pair, or PyTorch's strings "valid" (no padding) and "same" (the
/// output has the input's size; stride 1 only; an odd total pads one more at the bottom / right).
struct conv_padding {
    int_pair size{0};
    std::string_view mode;                           // "" (explicit sizes), "valid" or "same"
    conv_padding(int both) : size(both) {}           // NOLINT
    conv_padding(std::int64_t both) : size(both) {}  // NOLINT
    conv_padding(std::int64_t height, std::int64_t width) : size(height, width) {}  // NOLINT
    conv_padding(int_pair p) : size(p) {}                                           // NOLINT
    conv_padding(const char* m) : mode(m ? m : "(null)") {}                                        // NOLINT
};

/// The sliding kernel_size blocks of a [N, C, H, W] (or unbatched [C, H, W]) input as the
/// columns of [N, C * kh * kw, L] ([C * kh * kw, L]) (torch.nn.functional.unfold, im2col):
/// zero padding on both sides, rows ordered by channel, kernel row, kernel column.
[[nodiscard]] GRAFT_INLINE Tensor unfold(const Tensor& input, int_pair kernel_size, int_pair dilation = 1,
                                         int_pair padding = 0, int_pair stride = 1);
/// The blocks of [N, C * kh * kw, L] (or [C * kh * kw, L]) summed into [N, C, output_size]
/// ([C, output_size]) (torch.nn.functional.fold, col2im): overlapping values add up.
[[nodiscard]] GRAFT_INLINE Tensor fold(const Tensor& input, int_pair output_size, int_pair kernel_size,
                                       int_pair dilation = 1, int_pair padding = 0, int_pair stride = 1);

/// 2-D cross-correlation (torch.nn.functional.conv2d): input [N, C, H, W] or [C, H, W], weight
/// [O, C / groups, kh, kw], bias [O] or undefined; the result is [N, O, oh, ow] (or [O, oh, ow]).
/// Computed as unfold + matmul (one batched matmul over the groups), so it is differentiable
/// to any order and capture records ordinary ops.
[[nodiscard]] GRAFT_INLINE Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                                         int_pair stride = 1, conv_padding padding = 0, int_pair dilation = 1,
                                         std::int64_t groups = 1);

/// 1-D cross-correlation (torch.nn.functional.conv1d): input [N, C, L] or [C, L], weight
/// [O, C / groups, k], bias [O] or undefined; the result is [N, O, ol] (or [O, ol]). padding is
/// one int or "valid" / "same" (stride 1 only; an odd total pads one more at the right).
/// Computed as conv2d over a height-1 view, so it is differentiable to any order.
[[nodiscard]] GRAFT_INLINE Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                                         std::int64_t stride = 1, conv_padding padding = 0, std::int64_t dilation = 1,
                                         std::int64_t groups = 1);

/// 2-D transposed convolution (torch.nn.functional.conv_transpose2d), the gradient of conv2d
/// with respect to its input: input [N, C, H, W] or [C, H, W], weight [C, O / groups, kh, kw],
/// bias [O] or undefined. The output size is (H - 1) stride - 2 padding + dilation (k - 1) +
/// output_padding + 1 per dimension; output_padding must be below stride or dilation.
/// Computed as matmul + fold (col2im), then cropped by padding (output_padding rows past the
/// uncropped result get only the bias).
[[nodiscard]] GRAFT_INLINE Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                                                   int_pair stride = 1, int_pair padding = 0,
                                                   int_pair output_padding = 0, std::int64_t groups = 1,
                                                   int_pair dilation = 1);

/// The maximum of each window (torch.nn.functional.max_pool2d): input [N, C, H, W] or
/// [C, H, W]; stride defaults to kernel_size; implicit padding is -inf and must be at most half
/// the kernel; ceil_mode rounds the output size up, keeping only windows that start inside the
/// input or the left padding. NaN propagates; the gradient goes to the first maximal element of
/// each window in scan order (to its last NaN if it has one; a window of -inf: its first input
/// element), as PyTorch's kernel.
[[nodiscard]] GRAFT_INLINE Tensor max_pool2d(const Tensor& input, int_pair kernel_size, optional_int_pair stride = {},
                                             int_pair padding = 0, int_pair dilation = 1, bool ceil_mode = false);

/// The mean of each window (torch.nn.functional.avg_pool2d): zero padding (at most half the
/// kernel); the divisor is divisor_override if given, else the window's size clipped to the
/// padded input (count_include_pad) or the number of input elements it covers.
[[nodiscard]] GRAFT_INLINE Tensor avg_pool2d(const Tensor& input, int_pair kernel_size, optional_int_pair stride = {},
                                             int_pair padding = 0, bool ceil_mode = false,
                                             bool count_include_pad = true,
                                             std::optional<std::int64_t> divisor_override = std::nullopt);

/// An adaptive pooling output size (PyTorch's int, or pair with None for "keep the input's
/// size"): `3`, `{3, 2}`, `{std::nullopt, 2}`.
struct adaptive_size {
    std::optional<std::int64_t> h, w;
    adaptive_size(int both) : h(both), w(both) {}           // NOLINT(google-explicit-constructor)
    adaptive_size(std::int64_t both) : h(both), w(both) {}  // NOLINT(google-explicit-constructor)
    adaptive_size(std::optional<std::int64_t> height, std::optional<std::int64_t> width) : h(height), w(width) {}
};

/// The mean of each adaptive window (torch.nn.functional.adaptive_avg_pool2d): input
/// [N, C, H, W] or [C, H, W]; output row i averages input rows floor(i H / oh) up to
/// ceil((i + 1) H / oh) (windows may overlap), columns alike. As PyTorch's kernel: each window's
/// own elements summed, divided by its height, then its width (an infinite element reaches
/// only its windows).
[[nodiscard]] GRAFT_INLINE Tensor adaptive_avg_pool2d(const Tensor& input, adaptive_size output_size);
/// The maximum of each adaptive window (torch.nn.functional.adaptive_max_pool2d; windows as
/// adaptive_avg_pool2d's), taken over the columns of each window, then over its rows. The
/// gradient goes to the first maximal element of each window in row-major order, as PyTorch;
/// NaN propagates. return_indices is not offered.
[[nodiscard]] GRAFT_INLINE Tensor adaptive_max_pool2d(const Tensor& input, adaptive_size output_size);

/// interpolate's size: none (`{}`), one size for every spatial dimension, or one per dimension.
struct size_list {
    int_list values;
    size_list() = default;
    size_list(std::nullopt_t) {}                                              // NOLINT
    size_list(int both) : values{both} {}                                     // NOLINT
    size_list(std::int64_t both) : values{both} {}                            // NOLINT
    size_list(std::initializer_list<std::int64_t> v) : values(v) {}           // NOLINT
    size_list(int_list v) : values(std::move(v)) {}                           // NOLINT
};
/// interpolate's scale_factor: none (`{}`), one factor for every spatial dimension, or one per
/// dimension.
struct scale_list {
    std::vector<double> values;
    scale_list() = default;
    scale_list(std::nullopt_t) {}                                     // NOLINT
    scale_list(double both) : values{both} {}                         // NOLINT
    scale_list(std::initializer_list<double> v) : values(v) {}        // NOLINT
};

/// Resizes the spatial dimensions of a [N, C, L] or [N, C, H, W] input
/// (torch.nn.functional.interpolate) to `size`, or to floor(input size * scale_factor) (exactly
/// one of them). Modes: "nearest" (source index floor(dst * scale), PyTorch's legacy nearest),
/// "nearest-exact" (floor((dst + 0.5) * scale)), "linear" (3-D input), "bilinear" (4-D input;
/// align_corners as PyTorch, default false) and "area" (adaptive average pooling); the others
/// ("bicubic", "trilinear", 5-D inputs, antialias) are errors. As PyTorch 1.13, a given
/// scale_factor is also the scale the source indices use, unless recompute_scale_factor is
/// true (then in / out). Linear modes weigh each output's two neighbours per dimension, the
/// width first, as PyTorch's kernel; nearest modes select rows and columns; all are
/// differentiable to any order.
[[nodiscard]] GRAFT_INLINE Tensor interpolate(const Tensor& input, size_list size = {}, scale_list scale_factor = {},
                                              std::string_view mode = "nearest",
                                              std::optional<bool> align_corners = std::nullopt,
                                              std::optional<bool> recompute_scale_factor = std::nullopt);

// ---------------------------------------------------------------- normalization, embedding, dropout

/// (x - mean) / sqrt(var + eps) * weight + bias over the trailing dimensions `normalized_shape`
/// (torch.nn.functional.layer_norm; biased variance). weight and bias have normalized_shape's
/// sizes or are undefined.
[[nodiscard]] GRAFT_INLINE Tensor layer_norm(const Tensor& input, const int_list& normalized_shape,
                                             const Tensor& weight = {}, const Tensor& bias = {}, double eps = 1e-5);

/// Batch normalization (torch.nn.functional.batch_norm) of an input [N, C, *] per channel C:
/// (x - mean) / sqrt(var + eps) * weight + bias. training: mean and var are the batch's
/// (biased var), and defined running_mean / running_var [C] are updated in place (under
/// no_grad) to (1 - momentum) * running + momentum * batch, with the unbiased batch variance,
/// as PyTorch; more than one value per channel is required. Not training: the running
/// statistics (both required) are used and left as they are. weight and bias are [C] or
/// undefined. Under capture the running statistics are graph inputs written back (nn::script
/// and nn::aot pass a module's buffers so).
[[nodiscard]] GRAFT_INLINE Tensor batch_norm(const Tensor& input, const Tensor& running_mean,
                                             const Tensor& running_var, const Tensor& weight = {},
                                             const Tensor& bias = {}, bool training = false, double momentum = 0.1,
                                             double eps = 1e-5);

/// Instance normalization (torch.nn.functional.instance_norm) of an input [N, C, *]: each
/// (sample, channel) slice normalized by its own mean and biased variance (use_input_stats),
/// or by running_mean / running_var [C] (use_input_stats = false). With use_input_stats,
/// defined running statistics are updated with the mean over the batch of the slices' means and
/// unbiased variances (PyTorch's). More than one spatial element is required.
[[nodiscard]] GRAFT_INLINE Tensor instance_norm(const Tensor& input, const Tensor& running_mean = {},
                                                const Tensor& running_var = {}, const Tensor& weight = {},
                                                const Tensor& bias = {}, bool use_input_stats = true,
                                                double momentum = 0.1, double eps = 1e-5);

/// Group normalization (torch.nn.functional.group_norm) of an input [N, C, *]: the C channels
/// in num_groups groups (C divisible by it), each (sample, group) normalized by its own mean and
/// biased variance, then weight and bias [C] (or undefined) per channel.
[[nodiscard]] GRAFT_INLINE Tensor group_norm(const Tensor& input, std::int64_t num_groups, const Tensor& weight = {},
                                             const Tensor& bias = {}, double eps = 1e-5);

namespace detail {
/// batch_norm's and instance_norm's running-statistics factor when it is a tensor: the
/// modules' momentum = None (a cumulative average, 1 / num_batches_tracked) computed in the
/// graph rather than read out of it, so a captured module keeps counting. `factor` is a 0-dim
/// floating tensor; a double `momentum` is the functions' own form.
[[nodiscard]] GRAFT_INLINE Tensor batch_norm_with_factor(const Tensor& input, const Tensor& running_mean,
                                                         const Tensor& running_var, const Tensor& weight,
                                                         const Tensor& bias, bool training, const Tensor& factor,
                                                         double eps, bool per_instance);
}  // namespace detail

/// The rows of a 2-D weight [num_embeddings, dim] at int64 indices (torch.nn.functional.embedding):
/// the result has the input's sizes plus dim. The padding_idx row (negative counts from the end)
/// gets no gradient. max_norm / scale_grad_by_freq / sparse are not offered.
[[nodiscard]] GRAFT_INLINE Tensor embedding(const Tensor& input, const Tensor& weight,
                                            std::optional<std::int64_t> padding_idx = std::nullopt);

// ---------------------------------------------------------------- attention

/// softmax(query key^T * scale + mask) value (torch.nn.functional.scaled_dot_product_attention,
/// PyTorch 2's math reference): query [..., L, E], key [..., S, E], value [..., S, Ev] (batch
/// dimensions broadcast), result [..., L, Ev]. attn_mask (broadcasting to [..., L, S]): bool,
/// true where a query may attend (false positions get -inf), or floating, added to the scores.
/// is_causal: query i attends to keys j <= i (the top-left causal mask; not with attn_mask).
/// dropout_p: dropout on the attention weights, drawn from `gen` (pass 0 in eval, as PyTorch's
/// caller does). scale: default 1 / sqrt(E). A query whose keys are all masked gets NaN, as
/// PyTorch's math path. The [..., L, S] scores are materialized (no flash kernel); masks are
/// broadcast, not expanded.
[[nodiscard]] GRAFT_INLINE Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key,
                                                               const Tensor& value, const Tensor& attn_mask = {},
                                                               double dropout_p = 0.0, bool is_causal = false,
                                                               std::optional<double> scale = std::nullopt,
                                                               generator& gen = default_generator());

/// Zeroes each element with probability p and scales the others by 1 / (1 - p)
/// (torch.nn.functional.dropout), with a mask drawn from `gen`. training = false or p = 0
/// return the input itself; p = 1 gives zeros; inplace multiplies the input in place (and
/// returns it). p outside [0, 1] is an error.
[[nodiscard]] GRAFT_INLINE Tensor dropout(const Tensor& input, double p = 0.5, bool training = true,
                                          bool inplace = false, generator& gen = default_generator());

/// Zeroes whole channels (torch.nn.functional.dropout2d): a mask [N, C, 1, 1] drawn from `gen`
/// (each channel kept with probability 1 - p), the kept ones scaled by 1 / (1 - p). As PyTorch
/// 1.13, a 3-D input is taken as batched [N, C, L] (channel-wise 1-D dropout; PyTorch warns
/// that this will change), not as an unbatched [C, H, W] one; other ranks (which PyTorch
/// deprecates) are errors. training = false or p = 0 return the input itself.
[[nodiscard]] GRAFT_INLINE Tensor dropout2d(const Tensor& input, double p = 0.5, bool training = true,
                                            bool inplace = false, generator& gen = default_generator());

}  // namespace graft::nn::functional

#if GRAFT_HAS_CODE
#include "graft/nn/impl/functional.ipp"
#endif
