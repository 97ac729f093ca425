#pragma once
// graft::nn layers over the convolution, pooling, resizing, normalization, embedding and dropout
// functions (torch.nn.Conv1d, Conv2d, ConvTranspose2d, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d,
// AdaptiveMaxPool2d, Upsample, LayerNorm, BatchNorm1d/2d/3d, InstanceNorm1d/2d, GroupNorm,
// Embedding, Dropout, Dropout2d), with
// PyTorch's arguments, defaults and initializations. Each forward calls graft::nn::functional,
// so autograd, capture and the executor see ordinary ops. Construct them with std::make_shared.
#include <cstdint>
#include <optional>
#include <string>

#include "graft/core/factories.hpp"
#include "graft/nn/functional.hpp"
#include "graft/nn/module.hpp"

namespace graft::nn {

/// 2-D convolution (torch.nn.Conv2d): weight [out_channels, in_channels / groups, kh, kw], bias
/// [out_channels]; initialized as PyTorch's reset_parameters (kaiming_uniform_ with a = sqrt(5),
/// bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in_channels / groups * kh * kw).
/// `padding` is sizes or "valid" / "same" (stride 1 only, as PyTorch).
class Conv2d : public Module {
public:
    GRAFT_INLINE Conv2d(std::int64_t in_channels, std::int64_t out_channels, functional::int_pair kernel_size,
                        functional::int_pair stride = 1, functional::conv_padding padding = 0,
                        functional::int_pair dilation = 1, std::int64_t groups = 1, bool bias = true,
                        dtype type = dtype::float32, generator& gen = default_generator());
    /// Draws new initial values (PyTorch's reset_parameters).
    GRAFT_INLINE void reset_parameters(generator& gen = default_generator());
    GRAFT_INLINE Tensor forward(const Tensor& input) override;
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;

    const std::int64_t in_channels, out_channels;
    const functional::int_pair kernel_size, stride, dilation;
    const functional::int_pair padding;  // when padding_mode is empty
    const std::string padding_mode;      // "", "valid" or "same"
    const std::int64_t groups;
    Tensor& weight;
    Tensor& bias;  // undefined without bias
};

/// 1-D convolution (torch.nn.Conv1d): weight [out_channels, in_channels / groups, kernel_size],
/// bias [out_channels]; initialized as Conv2d (fan_in = in_channels / groups * kernel_size).
/// `padding` is one int or "valid" / "same" (stride 1 only). Input [N, C, L] or [C, L].
class Conv1d : public Module {
public:
    GRAFT_INLINE Conv1d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size,
                        std::int64_t stride = 1, functional::conv_padding padding = 0, std::int64_t dilation = 1,
                        std::int64_t groups = 1, bool bias = true, dtype type = dtype::float32,
                        generator& gen = default_generator());
    /// Draws new initial values (PyTorch's reset_parameters).
    GRAFT_INLINE void reset_parameters(generator& gen = default_generator());
    GRAFT_INLINE Tensor forward(const Tensor& input) override;
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;

    const std::int64_t in_channels, out_channels, kernel_size, stride, dilation;
    const std::int64_t padding;      // when padding_mode is empty
    const std::string padding_mode;  // "", "valid" or "same"
    const std::int64_t groups;
    Tensor& weight;
    Tensor& bias;  // undefined without bias
};

/// 2-D transposed convolution (torch.nn.ConvTranspose2d): weight [in_channels,
/// out_channels / groups, kh, kw], bias [out_channels]. Initialized as PyTorch's
/// reset_parameters, whose fan_in is read off the weight as for any layer: weight.size(1) *
/// kh * kw = out_channels / groups * kh * kw (kaiming_uniform_ with a = sqrt(5), bias
/// ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in))). forward's output_size argument is not offered (give
/// output_padding instead).
class ConvTranspose2d : public Module {
public:
    GRAFT_INLINE ConvTranspose2d(std::int64_t in_channels, std::int64_t out_channels, functional::int_pair kernel_size,
                                 functional::int_pair stride = 1, functional::int_pair padding = 0,
                                 functional::int_pair output_padding = 0, std::int64_t groups = 1, bool bias = true,
                                 functional::int_pair dilation = 1, dtype type = dtype::float32,
                                 generator& gen = default_generator());
    /// Draws new initial values (PyTorch's reset_parameters).
    GRAFT_INLINE void reset_parameters(generator& gen = default_generator());
    GRAFT_INLINE Tensor forward(const Tensor& input) override;
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;

    const std::int64_t in_channels, out_channels;
    const functional::int_pair kernel_size, stride, padding, output_padding, dilation;
    const std::int64_t groups;
    Tensor& weight;
    Tensor& bias;  // undefined without bias
};

/// torch.nn.MaxPool2d: stride defaults to kernel_size.
class MaxPool2d : public Module {
public:
    MaxPool2d(functional::int_pair kernel_size, functional::optional_int_pair stride = {},
              functional::int_pair padding = 0, functional::int_pair dilation = 1, bool ceil_mode = false)
        : Module("MaxPool2d"), kernel_size(kernel_size), stride(stride.value.value_or(kernel_size)), padding(padding),
          dilation(dilation), ceil_mode(ceil_mode) {}
    Tensor forward(const Tensor& input) override {
        return functional::max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode);
    }
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;
    functional::int_pair kernel_size, stride, padding, dilation;
    bool ceil_mode;
};

/// torch.nn.AvgPool2d: stride defaults to kernel_size.
class AvgPool2d : public Module {
public:
    AvgPool2d(functional::int_pair kernel_size, functional::optional_int_pair stride = {},
              functional::int_pair padding = 0, bool ceil_mode = false, bool count_include_pad = true,
              std::optional<std::int64_t> divisor_override = std::nullopt)
        : Module("AvgPool2d"), kernel_size(kernel_size), stride(stride.value.value_or(kernel_size)), padding(padding),
          ceil_mode(ceil_mode), count_include_pad(count_include_pad), divisor_override(divisor_override) {}
    Tensor forward(const Tensor& input) override {
        return functional::avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                      divisor_override);
    }
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;
    functional::int_pair kernel_size, stride, padding;
    bool ceil_mode, count_include_pad;
    std::optional<std::int64_t> divisor_override;
};

/// torch.nn.AdaptiveAvgPool2d: output_size an int, or a pair whose nullopt keeps the input's size.
class AdaptiveAvgPool2d : public Module {
public:
    explicit AdaptiveAvgPool2d(functional::adaptive_size output_size)
        : Module("AdaptiveAvgPool2d"), output_size(output_size) {}
    Tensor forward(const Tensor& input) override { return functional::adaptive_avg_pool2d(input, output_size); }
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;
    functional::adaptive_size output_size;
};

/// torch.nn.AdaptiveMaxPool2d (without return_indices): output_size as AdaptiveAvgPool2d's.
class AdaptiveMaxPool2d : public Module {
public:
    explicit AdaptiveMaxPool2d(functional::adaptive_size output_size)
        : Module("AdaptiveMaxPool2d"), output_size(output_size) {}
    Tensor forward(const Tensor& input) override { return functional::adaptive_max_pool2d(input, output_size); }
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;
    functional::adaptive_size output_size;
};

/// torch.nn.Upsample: functional::interpolate with the module's size or scale_factor, mode
/// ("nearest" by default), align_corners and recompute_scale_factor.
class Upsample : public Module {
public:
    GRAFT_INLINE explicit Upsample(functional::size_list size = {}, functional::scale_list scale_factor = {},
                                   std::string mode = "nearest", std::optional<bool> align_corners = std::nullopt,
                                   std::optional<bool> recompute_scale_factor = std::nullopt);
    Tensor forward(const Tensor& input) override {
        return functional::interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor);
    }
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;
    functional::size_list size;
    functional::scale_list scale_factor;
    std::string mode;
    std::optional<bool> align_corners, recompute_scale_factor;
};

/// torch.nn.LayerNorm over the trailing `normalized_shape`: weight ones and bias zeros of that
/// shape when elementwise_affine (bias only with `bias`).
class LayerNorm : public Module {
public:
    GRAFT_INLINE explicit LayerNorm(int_list normalized_shape, double eps = 1e-5, bool elementwise_affine = true,
                                    bool bias = true, dtype type = dtype::float32);
    /// nn.LayerNorm(16): one normalized dimension given as an integer.
    explicit LayerNorm(std::int64_t normalized_shape, double eps = 1e-5, bool elementwise_affine = true,
                       bool bias = true, dtype type = dtype::float32)
        : LayerNorm(int_list{normalized_shape}, eps, elementwise_affine, bias, type) {}
    Tensor forward(const Tensor& input) override {
        return functional::layer_norm(input, normalized_shape, weight, bias, eps);
    }
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;
    const int_list normalized_shape;
    const double eps;
    Tensor& weight;  // undefined without elementwise_affine
    Tensor& bias;    // undefined without elementwise_affine or bias
};

namespace detail {
/// What BatchNorm1d/2d/3d and InstanceNorm1d/2d/3d share (PyTorch's _NormBase): weight
/// (ones) and bias (zeros) [num_features] when affine; running_mean (zeros), running_var
/// (ones) and num_batches_tracked (int64, 0-dim) buffers when track_running_stats. momentum
/// nullopt is PyTorch's momentum=None: the running statistics are the cumulative average
/// (factor 1 / num_batches_tracked).
class norm_base : public Module {
public:
    GRAFT_INLINE norm_base(std::string type_name, std::int64_t num_features, double eps,
                           std::optional<double> momentum, bool affine, bool track_running_stats, dtype type);
    /// running_mean to zeros, running_var to ones, num_batches_tracked to 0.
    GRAFT_INLINE void reset_running_stats();
    /// reset_running_stats(), weight to ones and bias to zeros.
    GRAFT_INLINE void reset_parameters();
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;

    const std::int64_t num_features;
    const double eps;
    const std::optional<double> momentum;
    const bool affine, track_running_stats;
    Tensor& weight;               // undefined without affine
    Tensor& bias;                 // undefined without affine
    Tensor& running_mean;         // undefined without track_running_stats
    Tensor& running_var;          // undefined without track_running_stats
    Tensor& num_batches_tracked;  // undefined without track_running_stats

protected:
    /// Counts the batch (training with running statistics) and normalizes `input` [N, C, *]
    /// with batch statistics (training, or no running statistics) or the running ones.
    GRAFT_INLINE Tensor normalize(const Tensor& input, bool per_instance);
};
}  // namespace detail

/// torch.nn.BatchNorm1d: input [N, C] or [N, C, L]. In training, normalized with the batch's
/// statistics and the running ones updated; in eval, normalized with the running statistics
/// (the batch's when track_running_stats is false). State: weight, bias, running_mean,
/// running_var, num_batches_tracked, as PyTorch's state_dict.
class BatchNorm1d : public detail::norm_base {
public:
    explicit BatchNorm1d(std::int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                         bool affine = true, bool track_running_stats = true, dtype type = dtype::float32)
        : norm_base("BatchNorm1d", num_features, eps, momentum, affine, track_running_stats, type) {}
    GRAFT_INLINE Tensor forward(const Tensor& input) override;
};

/// torch.nn.BatchNorm2d: input [N, C, H, W]; otherwise as BatchNorm1d.
class BatchNorm2d : public detail::norm_base {
public:
    explicit BatchNorm2d(std::int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                         bool affine = true, bool track_running_stats = true, dtype type = dtype::float32)
        : norm_base("BatchNorm2d", num_features, eps, momentum, affine, track_running_stats, type) {}
    GRAFT_INLINE Tensor forward(const Tensor& input) override;
};

/// torch.nn.BatchNorm3d: input [N, C, D, H, W]; otherwise as BatchNorm1d.
class BatchNorm3d : public detail::norm_base {
public:
    explicit BatchNorm3d(std::int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                         bool affine = true, bool track_running_stats = true, dtype type = dtype::float32)
        : norm_base("BatchNorm3d", num_features, eps, momentum, affine, track_running_stats, type) {}
    GRAFT_INLINE Tensor forward(const Tensor& input) override;
};

/// torch.nn.InstanceNorm1d: input [N, C, L] or unbatched [C, L], each (sample, channel)
/// normalized by its own statistics. PyTorch's defaults: no affine, no running statistics;
/// with track_running_stats, eval mode uses the running statistics. num_features must match
/// the input's channels when affine or tracking (PyTorch only warns otherwise; so does graft not check).
class InstanceNorm1d : public detail::norm_base {
public:
    explicit InstanceNorm1d(std::int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                            bool affine = false, bool track_running_stats = false, dtype type = dtype::float32)
        : norm_base("InstanceNorm1d", num_features, eps, momentum, affine, track_running_stats, type) {}
    GRAFT_INLINE Tensor forward(const Tensor& input) override;
};

/// torch.nn.InstanceNorm2d: input [N, C, H, W] or unbatched [C, H, W]; otherwise as InstanceNorm1d.
class InstanceNorm2d : public detail::norm_base {
public:
    explicit InstanceNorm2d(std::int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                            bool affine = false, bool track_running_stats = false, dtype type = dtype::float32)
        : norm_base("InstanceNorm2d", num_features, eps, momentum, affine, track_running_stats, type) {}
    GRAFT_INLINE Tensor forward(const Tensor& input) override;
};

/// torch.nn.GroupNorm: num_channels in num_groups groups (divisible), weight ones and bias
/// zeros [num_channels] when affine; input [N, C, *].
class GroupNorm : public Module {
public:
    GRAFT_INLINE GroupNorm(std::int64_t num_groups, std::int64_t num_channels, double eps = 1e-5, bool affine = true,
                           dtype type = dtype::float32);
    Tensor forward(const Tensor& input) override {
        return functional::group_norm(input, num_groups, weight, bias, eps);
    }
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;
    const std::int64_t num_groups, num_channels;
    const double eps;
    const bool affine;
    Tensor& weight;  // undefined without affine
    Tensor& bias;    // undefined without affine
};

/// torch.nn.Embedding: weight [num_embeddings, embedding_dim] ~ N(0, 1), the padding_idx row
/// zero (and without gradient); a negative padding_idx counts from the end.
class Embedding : public Module {
public:
    GRAFT_INLINE Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim,
                           std::optional<std::int64_t> padding_idx = std::nullopt, dtype type = dtype::float32,
                           generator& gen = default_generator());
    /// Draws new initial values (PyTorch's reset_parameters).
    GRAFT_INLINE void reset_parameters(generator& gen = default_generator());
    Tensor forward(const Tensor& input) override { return functional::embedding(input, weight, padding_idx); }
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;
    const std::int64_t num_embeddings, embedding_dim;
    const std::optional<std::int64_t> padding_idx;  // normalized to [0, num_embeddings)
    Tensor& weight;
};

/// torch.nn.Dropout: functional::dropout(x, p, is_training(), inplace) with graft's default
/// generator (seed it with graft::manual_seed); identity in eval mode.
class Dropout : public Module {
public:
    GRAFT_INLINE explicit Dropout(double p = 0.5, bool inplace = false);
    Tensor forward(const Tensor& input) override { return functional::dropout(input, p, is_training(), inplace); }
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;
    const double p;
    const bool inplace;
};

/// torch.nn.Dropout2d: functional::dropout2d(x, p, is_training(), inplace) with graft's default
/// generator; whole channels of a [N, C, H, W] (or, as PyTorch 1.13, [N, C, L]) input.
class Dropout2d : public Module {
public:
    GRAFT_INLINE explicit Dropout2d(double p = 0.5, bool inplace = false);
    Tensor forward(const Tensor& input) override { return functional::dropout2d(input, p, is_training(), inplace); }
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;
    const double p;
    const bool inplace;
};

}  // namespace graft::nn

#if GRAFT_HAS_CODE
#include "graft/nn/impl/layers.ipp"
#endif
