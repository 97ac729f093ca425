#pragma once
// Definitions for graft/nn/layers.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/nn/layers.hpp"

#include <cmath>
#include <string>
#include <utility>

#include "graft/nn/init.hpp"

namespace graft::nn {

namespace detail {
inline std::string pair_text(functional::int_pair p) { return graft::detail::concat("(", p.h, ", ", p.w, ")"); }
inline std::int64_t checked_positive(const char* layer, const char* what, std::int64_t n) {
    graft::detail::check(n > 0, layer, ": ", what, " must be positive, got ", n);
    return n;
}
inline dtype checked_float(const char* layer, dtype type) {
    graft::detail::check(is_floating_point(type), layer, ": expected a floating-point dtype, got ", type);
    return type;
}
inline std::string padding_mode_of(const char* layer, const functional::conv_padding& p, functional::int_pair stride) {
    const std::string mode(p.mode);
    graft::detail::check(mode.empty() || mode == "valid" || mode == "same", layer,
                         ": Invalid padding string '", mode, "', should be one of {'valid', 'same'}");
    graft::detail::check(mode != "same" || (stride.h == 1 && stride.w == 1), layer,
                         ": padding='same' is not supported for strided convolutions");
    return mode;
}
}  // namespace detail

GRAFT_INLINE Conv2d::Conv2d(std::int64_t in, std::int64_t out, functional::int_pair k, functional::int_pair s,
                            functional::conv_padding p, functional::int_pair d, std::int64_t g, bool with_bias,
                            dtype type, generator& gen)
    : Module("Conv2d"),
      in_channels(detail::checked_positive("Conv2d", "in_channels", in)),
      out_channels(detail::checked_positive("Conv2d", "out_channels", out)),
      kernel_size(k),
      stride(s),
      dilation(d),
      padding(p.mode.empty() ? p.size : functional::int_pair{0}),
      padding_mode(detail::padding_mode_of("Conv2d", p, s)),
      groups(detail::checked_positive("Conv2d", "groups", g)),
      weight(register_parameter(
          "weight", (graft::detail::check(in % g == 0, "Conv2d: in_channels must be divisible by groups"),
                     graft::detail::check(out % g == 0, "Conv2d: out_channels must be divisible by groups"),
                     graft::detail::check(k.h > 0 && k.w > 0, "Conv2d: kernel_size must be positive, got ",
                                          detail::pair_text(k)),
                     empty({out, in / g, k.h, k.w}, detail::checked_float("Conv2d", type))))),
      bias(register_parameter("bias", with_bias ? empty({out}, type) : Tensor{})) {
    reset_parameters(gen);
}

GRAFT_INLINE void Conv2d::reset_parameters(generator& gen) {
    init::kaiming_uniform_(weight, std::sqrt(5.0), "fan_in", "leaky_relu", gen);
    if (bias.defined()) {
        const double fan_in = static_cast<double>(in_channels / groups * kernel_size.h * kernel_size.w);
        const double bound = 1.0 / std::sqrt(fan_in);
        init::uniform_(bias, -bound, bound, gen);
    }
}

GRAFT_INLINE Tensor Conv2d::forward(const Tensor& input) {
    const functional::conv_padding p = padding_mode.empty() ? functional::conv_padding(padding)
                                                            : functional::conv_padding(padding_mode.c_str());
    return functional::conv2d(input, weight, bias, stride, p, dilation, groups);
}

GRAFT_INLINE std::string Conv2d::extra_repr() const {
    std::string s = graft::detail::concat(in_channels, ", ", out_channels, ", kernel_size=", detail::pair_text(kernel_size),
                                          ", stride=", detail::pair_text(stride));
    if (!padding_mode.empty()) s += ", padding=" + padding_mode;
    else if (padding.h != 0 || padding.w != 0) s += ", padding=" + detail::pair_text(padding);
    if (dilation.h != 1 || dilation.w != 1) s += ", dilation=" + detail::pair_text(dilation);
    if (groups != 1) s += graft::detail::concat(", groups=", groups);
    if (!bias.defined()) s += ", bias=False";
    return s;
}

GRAFT_INLINE Conv1d::Conv1d(std::int64_t in, std::int64_t out, std::int64_t k, std::int64_t s,
                            functional::conv_padding p, std::int64_t d, std::int64_t g, bool with_bias, dtype type,
                            generator& gen)
    : Module("Conv1d"),
      in_channels(detail::checked_positive("Conv1d", "in_channels", in)),
      out_channels(detail::checked_positive("Conv1d", "out_channels", out)),
      kernel_size(detail::checked_positive("Conv1d", "kernel_size", k)),
      stride(detail::checked_positive("Conv1d", "stride", s)),
      dilation(detail::checked_positive("Conv1d", "dilation", d)),
      padding(p.mode.empty() ? p.size.w : 0),
      padding_mode(detail::padding_mode_of("Conv1d", p, functional::int_pair{1, s})),
      groups(detail::checked_positive("Conv1d", "groups", g)),
      weight(register_parameter(
          "weight", (graft::detail::check(in % g == 0, "Conv1d: in_channels must be divisible by groups"),
                     graft::detail::check(out % g == 0, "Conv1d: out_channels must be divisible by groups"),
                     graft::detail::check(!p.mode.empty() || (p.size.h == p.size.w && p.size.w >= 0),
                                          "Conv1d: padding must be one non-negative int, got (", p.size.h, ", ",
                                          p.size.w, ")"),
                     empty({out, in / g, k}, detail::checked_float("Conv1d", type))))),
      bias(register_parameter("bias", with_bias ? empty({out}, type) : Tensor{})) {
    reset_parameters(gen);
}

GRAFT_INLINE void Conv1d::reset_parameters(generator& gen) {
    init::kaiming_uniform_(weight, std::sqrt(5.0), "fan_in", "leaky_relu", gen);
    if (bias.defined()) {
        const double bound = 1.0 / std::sqrt(static_cast<double>(init::calculate_fan_in_and_fan_out(weight).first));
        init::uniform_(bias, -bound, bound, gen);
    }
}

GRAFT_INLINE Tensor Conv1d::forward(const Tensor& input) {
    const functional::conv_padding p = padding_mode.empty() ? functional::conv_padding(padding)
                                                            : functional::conv_padding(padding_mode.c_str());
    return functional::conv1d(input, weight, bias, stride, p, dilation, groups);
}

GRAFT_INLINE std::string Conv1d::extra_repr() const {
    std::string s = graft::detail::concat(in_channels, ", ", out_channels, ", kernel_size=(", kernel_size,
                                          ",), stride=(", stride, ",)");
    if (!padding_mode.empty()) s += ", padding=" + padding_mode;
    else if (padding != 0) s += graft::detail::concat(", padding=(", padding, ",)");
    if (dilation != 1) s += graft::detail::concat(", dilation=(", dilation, ",)");
    if (groups != 1) s += graft::detail::concat(", groups=", groups);
    if (!bias.defined()) s += ", bias=False";
    return s;
}

GRAFT_INLINE ConvTranspose2d::ConvTranspose2d(std::int64_t in, std::int64_t out, functional::int_pair k,
                                              functional::int_pair s, functional::int_pair p, functional::int_pair op,
                                              std::int64_t g, bool with_bias, functional::int_pair d, dtype type,
                                              generator& gen)
    : Module("ConvTranspose2d"),
      in_channels(detail::checked_positive("ConvTranspose2d", "in_channels", in)),
      out_channels(detail::checked_positive("ConvTranspose2d", "out_channels", out)),
      kernel_size(k),
      stride(s),
      padding(p),
      output_padding(op),
      dilation(d),
      groups(detail::checked_positive("ConvTranspose2d", "groups", g)),
      weight(register_parameter(
          "weight",
          (graft::detail::check(in % g == 0, "ConvTranspose2d: in_channels must be divisible by groups"),
           graft::detail::check(out % g == 0, "ConvTranspose2d: out_channels must be divisible by groups"),
           graft::detail::check(k.h > 0 && k.w > 0, "ConvTranspose2d: kernel_size must be positive, got ",
                                detail::pair_text(k)),
           graft::detail::check(s.h > 0 && s.w > 0 && d.h > 0 && d.w > 0,
                                "ConvTranspose2d: stride and dilation must be positive, got stride ",
                                detail::pair_text(s), " and dilation ", detail::pair_text(d)),
           graft::detail::check(p.h >= 0 && p.w >= 0 && op.h >= 0 && op.w >= 0,
                                "ConvTranspose2d: padding and output_padding must be non-negative, got padding ",
                                detail::pair_text(p), " and output_padding ", detail::pair_text(op)),
           graft::detail::check((op.h < s.h || op.h < d.h) && (op.w < s.w || op.w < d.w),
                                "ConvTranspose2d: output padding must be smaller than either stride or dilation, got "
                                "output_padding ",
                                detail::pair_text(op), ", stride ", detail::pair_text(s), " and dilation ",
                                detail::pair_text(d)),
           empty({in, out / g, k.h, k.w}, detail::checked_float("ConvTranspose2d", type))))),
      bias(register_parameter("bias", with_bias ? empty({out}, type) : Tensor{})) {
    reset_parameters(gen);
}

GRAFT_INLINE void ConvTranspose2d::reset_parameters(generator& gen) {
    // fan_in from the weight [in, out / groups, kh, kw]: out / groups * kh * kw, as PyTorch's.
    init::kaiming_uniform_(weight, std::sqrt(5.0), "fan_in", "leaky_relu", gen);
    if (bias.defined()) {
        const double bound = 1.0 / std::sqrt(static_cast<double>(init::calculate_fan_in_and_fan_out(weight).first));
        init::uniform_(bias, -bound, bound, gen);
    }
}

GRAFT_INLINE Tensor ConvTranspose2d::forward(const Tensor& input) {
    return functional::conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation);
}

GRAFT_INLINE std::string ConvTranspose2d::extra_repr() const {
    std::string s = graft::detail::concat(in_channels, ", ", out_channels, ", kernel_size=", detail::pair_text(kernel_size),
                                          ", stride=", detail::pair_text(stride));
    if (padding.h != 0 || padding.w != 0) s += ", padding=" + detail::pair_text(padding);
    if (dilation.h != 1 || dilation.w != 1) s += ", dilation=" + detail::pair_text(dilation);
    if (output_padding.h != 0 || output_padding.w != 0) s += ", output_padding=" + detail::pair_text(output_padding);
    if (groups != 1) s += graft::detail::concat(", groups=", groups);
    if (!bias.defined()) s += ", bias=False";
    return s;
}

GRAFT_INLINE std::string MaxPool2d::extra_repr() const {
    return graft::detail::concat("kernel_size=", detail::pair_text(kernel_size), ", stride=", detail::pair_text(stride),
                                 ", padding=", detail::pair_text(padding), ", dilation=", detail::pair_text(dilation),
                                 ", ceil_mode=", ceil_mode ? "True" : "False");
}

GRAFT_INLINE std::string AvgPool2d::extra_repr() const {
    return graft::detail::concat("kernel_size=", detail::pair_text(kernel_size), ", stride=", detail::pair_text(stride),
                                 ", padding=", detail::pair_text(padding));
}

namespace detail {
inline std::string optional_text(std::optional<std::int64_t> v) {
    return v ? graft::detail::concat(*v) : std::string("None");
}
/// A float as Python's repr writes it (2.0, 0.5).
inline std::string float_text(double v) {
    std::string s = graft::detail::concat(v);
    if (s.find_first_of(".eni") == std::string::npos) s += ".0";
    return s;
}
inline std::string adaptive_text(functional::adaptive_size s) {
    if (s.h && s.w && *s.h == *s.w) return graft::detail::concat(*s.h);
    return "(" + optional_text(s.h) + ", " + optional_text(s.w) + ")";
}
}  // namespace detail

GRAFT_INLINE std::string AdaptiveAvgPool2d::extra_repr() const {
    return "output_size=" + detail::adaptive_text(output_size);
}

GRAFT_INLINE std::string AdaptiveMaxPool2d::extra_repr() const {
    return "output_size=" + detail::adaptive_text(output_size);
}

GRAFT_INLINE Upsample::Upsample(functional::size_list size_, functional::scale_list scale_factor_, std::string mode_,
                                std::optional<bool> align_corners_, std::optional<bool> recompute_scale_factor_)
    : Module("Upsample"),
      size(std::move(size_)),
      scale_factor(std::move(scale_factor_)),
      mode(std::move(mode_)),
      align_corners(align_corners_),
      recompute_scale_factor(recompute_scale_factor_) {}

GRAFT_INLINE std::string Upsample::extra_repr() const {
    std::string s;
    if (!scale_factor.values.empty()) {
        s = "scale_factor=";
        if (scale_factor.values.size() == 1) {
            s += detail::float_text(scale_factor.values[0]);
        } else {
            s += "(";
            for (std::size_t i = 0; i < scale_factor.values.size(); ++i)
                s += (i ? ", " : "") + detail::float_text(scale_factor.values[i]);
            s += ")";
        }
    } else {
        s = "size=";
        if (size.values.size() == 1) {
            s += graft::detail::concat(size.values[0]);
        } else {
            s += "(";
            for (std::size_t i = 0; i < size.values.size(); ++i) s += graft::detail::concat(i ? ", " : "", size.values[i]);
            s += ")";
        }
    }
    return s + ", mode='" + mode + "'";
}

GRAFT_INLINE LayerNorm::LayerNorm(int_list shape, double eps_, bool affine, bool with_bias, dtype type)
    : Module("LayerNorm"),
      normalized_shape(std::move(shape)),
      eps(eps_),
      weight(register_parameter("weight", affine ? ones(normalized_shape, detail::checked_float("LayerNorm", type))
                                                 : Tensor{})),
      bias(register_parameter("bias", affine && with_bias ? zeros(normalized_shape, type) : Tensor{})) {
    graft::detail::check(!normalized_shape.empty(), "LayerNorm: normalized_shape must not be empty");
    for (std::int64_t s : normalized_shape)
        graft::detail::check(s > 0, "LayerNorm: normalized_shape ", normalized_shape, " must be positive");
}

GRAFT_INLINE std::string LayerNorm::extra_repr() const {
    return graft::detail::concat(normalized_shape, ", eps=", eps, ", elementwise_affine=", weight.defined() ? "True" : "False");
}

GRAFT_INLINE detail::norm_base::norm_base(std::string name, std::int64_t features, double eps_,
                                          std::optional<double> momentum_, bool affine_, bool track, dtype type)
    : Module(std::move(name)),
      num_features(detail::checked_positive(type_name().c_str(), "num_features", features)),
      eps(eps_),
      momentum(momentum_),
      affine(affine_),
      track_running_stats(track),
      weight(register_parameter("weight", affine_ ? ones({features}, detail::checked_float(type_name().c_str(), type))
                                                  : Tensor{})),
      bias(register_parameter("bias", affine_ ? zeros({features}, type) : Tensor{})),
      running_mean(register_buffer("running_mean", track ? zeros({features}, type) : Tensor{})),
      running_var(register_buffer("running_var", track ? ones({features}, type) : Tensor{})),
      num_batches_tracked(register_buffer("num_batches_tracked", track ? zeros({}, dtype::int64) : Tensor{})) {
    (void)detail::checked_float(type_name().c_str(), type);
    graft::detail::check(eps >= 0.0 && !std::isnan(eps), type_name(), ": eps must be non-negative, got ", eps);
    graft::detail::check(!momentum || std::isfinite(*momentum), type_name(), ": momentum must be finite, got ",
                         momentum.value_or(0.0));
}

GRAFT_INLINE void detail::norm_base::reset_running_stats() {
    if (!running_mean.defined()) return;
    const autograd::no_grad guard;
    running_mean.zero_();
    running_var.fill_(1.0);
    num_batches_tracked.zero_();
}

GRAFT_INLINE void detail::norm_base::reset_parameters() {
    reset_running_stats();
    if (!weight.defined()) return;
    const autograd::no_grad guard;
    weight.fill_(1.0);
    bias.zero_();
}

GRAFT_INLINE std::string detail::norm_base::extra_repr() const {
    return graft::detail::concat(num_features, ", eps=", eps, ", momentum=",
                                 momentum ? graft::detail::concat(*momentum) : std::string("None"),
                                 ", affine=", affine ? "True" : "False", ", track_running_stats=",
                                 track_running_stats ? "True" : "False");
}

GRAFT_INLINE Tensor detail::norm_base::normalize(const Tensor& input, bool per_instance) {
    const char* name = type_name().c_str();
    graft::detail::check(input.defined(), name, ": the input is an undefined tensor");
    // InstanceNorm without affine or running statistics does not use num_features: PyTorch
    // only warns on a mismatch there, and so computes.
    if (affine || track_running_stats || !per_instance)
        graft::detail::check(input.size(1) == num_features, name, ": expected input with ", num_features,
                             " channels (input.size(1)), got input of size ", input.sizes());
    const bool tracking = running_mean.defined();
    const bool batch_stats = is_training() || !tracking;
    if (!tracking) return per_instance ? functional::instance_norm(input, {}, {}, weight, bias, true, 0.0, eps)
                                       : functional::batch_norm(input, {}, {}, weight, bias, true, 0.0, eps);
    if (!batch_stats)
        return per_instance ? functional::instance_norm(input, running_mean, running_var, weight, bias, false, 0.0, eps)
                            : functional::batch_norm(input, running_mean, running_var, weight, bias, false, 0.0, eps);
    if (per_instance) {
        // PyTorch's InstanceNorm neither counts batches nor updates with momentum = None.
        return functional::instance_norm(input, running_mean, running_var, weight, bias, true, momentum.value_or(0.0),
                                         eps);
    }
    Tensor out;
    if (momentum) {
        out = functional::batch_norm(input, running_mean, running_var, weight, bias, true, *momentum, eps);
    } else {
        // The cumulative average: this batch weighs 1 / (batches counted, this one included).
        const Tensor factor = 1.0 / (num_batches_tracked + 1).to(input.type());
        out = functional::detail::batch_norm_with_factor(input, running_mean, running_var, weight, bias, true, factor,
                                                         eps, false);
    }
    // Counted once the batch was accepted (PyTorch counts first, also a batch it then refuses).
    const autograd::no_grad guard;
    num_batches_tracked.add_(1);
    return out;
}

namespace detail {
inline void check_norm_rank(const Module& m, const Tensor& input, std::int64_t low, std::int64_t high) {
    graft::detail::check(input.defined(), m.type_name(), ": the input is an undefined tensor");
    graft::detail::check(input.dim() >= low && input.dim() <= high, m.type_name(), ": expected ",
                         low == high ? graft::detail::concat(low, "D") : graft::detail::concat(low, "D or ", high, "D"),
                         " input (got ", input.dim(), "D input)");
}
}  // namespace detail

GRAFT_INLINE Tensor BatchNorm1d::forward(const Tensor& input) {
    detail::check_norm_rank(*this, input, 2, 3);
    return normalize(input, false);
}
GRAFT_INLINE Tensor BatchNorm2d::forward(const Tensor& input) {
    detail::check_norm_rank(*this, input, 4, 4);
    return normalize(input, false);
}
GRAFT_INLINE Tensor BatchNorm3d::forward(const Tensor& input) {
    detail::check_norm_rank(*this, input, 5, 5);
    return normalize(input, false);
}
GRAFT_INLINE Tensor InstanceNorm1d::forward(const Tensor& input) {
    detail::check_norm_rank(*this, input, 2, 3);
    return input.dim() == 2 ? normalize(input.unsqueeze(0), true).squeeze(0) : normalize(input, true);
}
GRAFT_INLINE Tensor InstanceNorm2d::forward(const Tensor& input) {
    detail::check_norm_rank(*this, input, 3, 4);
    return input.dim() == 3 ? normalize(input.unsqueeze(0), true).squeeze(0) : normalize(input, true);
}

GRAFT_INLINE GroupNorm::GroupNorm(std::int64_t groups, std::int64_t channels, double eps_, bool affine_, dtype type)
    : Module("GroupNorm"),
      num_groups(detail::checked_positive("GroupNorm", "num_groups", groups)),
      num_channels(detail::checked_positive("GroupNorm", "num_channels", channels)),
      eps(eps_),
      affine(affine_),
      weight(register_parameter("weight",
                                affine_ ? ones({channels}, detail::checked_float("GroupNorm", type)) : Tensor{})),
      bias(register_parameter("bias", affine_ ? zeros({channels}, type) : Tensor{})) {
    (void)detail::checked_float("GroupNorm", type);
    graft::detail::check(channels % groups == 0, "GroupNorm: num_channels must be divisible by num_groups");
    graft::detail::check(eps >= 0.0 && !std::isnan(eps), "GroupNorm: eps must be non-negative, got ", eps);
}

GRAFT_INLINE std::string GroupNorm::extra_repr() const {
    return graft::detail::concat(num_groups, ", ", num_channels, ", eps=", eps, ", affine=", affine ? "True" : "False");
}

namespace detail {
inline std::optional<std::int64_t> normalized_padding_idx(std::optional<std::int64_t> idx, std::int64_t num) {
    if (!idx) return idx;
    graft::detail::check(*idx < num && *idx >= -num, "Embedding: Padding_idx must be within num_embeddings (got ",
                         *idx, " for ", num, " embeddings)");
    return *idx < 0 ? *idx + num : *idx;
}
}  // namespace detail

GRAFT_INLINE Embedding::Embedding(std::int64_t num, std::int64_t dim, std::optional<std::int64_t> pad, dtype type,
                                  generator& gen)
    : Module("Embedding"),
      num_embeddings(detail::checked_positive("Embedding", "num_embeddings", num)),
      embedding_dim(detail::checked_positive("Embedding", "embedding_dim", dim)),
      padding_idx(detail::normalized_padding_idx(pad, num)),
      weight(register_parameter("weight", empty({num, dim}, detail::checked_float("Embedding", type)))) {
    reset_parameters(gen);
}

GRAFT_INLINE void Embedding::reset_parameters(generator& gen) {
    init::normal_(weight, 0.0, 1.0, gen);
    if (padding_idx) {
        autograd::no_grad guard;
        weight.select(0, *padding_idx).zero_();
    }
}

GRAFT_INLINE std::string Embedding::extra_repr() const {
    std::string s = graft::detail::concat(num_embeddings, ", ", embedding_dim);
    if (padding_idx) s += graft::detail::concat(", padding_idx=", *padding_idx);
    return s;
}

GRAFT_INLINE Dropout::Dropout(double p_, bool inplace_) : Module("Dropout"), p(p_), inplace(inplace_) {
    graft::detail::check(p >= 0.0 && p <= 1.0, "Dropout: dropout probability has to be between 0 and 1, but got ", p);
}

GRAFT_INLINE std::string Dropout::extra_repr() const {
    return graft::detail::concat("p=", p, ", inplace=", inplace ? "True" : "False");
}

GRAFT_INLINE Dropout2d::Dropout2d(double p_, bool inplace_) : Module("Dropout2d"), p(p_), inplace(inplace_) {
    graft::detail::check(p >= 0.0 && p <= 1.0, "Dropout2d: dropout probability has to be between 0 and 1, but got ",
                         p);
}

GRAFT_INLINE std::string Dropout2d::extra_repr() const {
    return graft::detail::concat("p=", p, ", inplace=", inplace ? "True" : "False");
}

}  // namespace graft::nn
