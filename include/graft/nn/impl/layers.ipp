#pragma once
// Definitions for graft/nn/layers.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/nn/layers.hpp"

#include <cmath>

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

GRAFT_INLINE std::string MaxPool2d::extra_repr() const {
    return graft::detail::concat("kernel_size=", detail::pair_text(kernel_size), ", stride=", detail::pair_text(stride),
                                 ", padding=", detail::pair_text(padding), ", dilation=", detail::pair_text(dilation),
                                 ", ceil_mode=", ceil_mode ? "True" : "False");
}

GRAFT_INLINE std::string AvgPool2d::extra_repr() const {
    return graft::detail::concat("kernel_size=", detail::pair_text(kernel_size), ", stride=", detail::pair_text(stride),
                                 ", padding=", detail::pair_text(padding));
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

}  // namespace graft::nn
