#pragma once
// graft::nn::init: in-place initializations of parameters (torch.nn.init), with PyTorch's
// names, defaults and formulas. Each runs under no_grad (so it may write into a leaf that
// requires grad), draws from an optional graft::generator (the default generator otherwise:
// graft::manual_seed makes runs reproducible), and returns the tensor it filled. Values are
// drawn in float64 and rounded to the tensor's dtype, so a seed gives the same numbers for
// float32 and float64 tensors. Manual: docs/nn.md.
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "graft/core/factories.hpp"
#include "graft/core/tensor.hpp"

namespace graft::nn::init {

/// The recommended gain for a nonlinearity (torch.nn.init.calculate_gain): 1 for "linear",
/// "conv1d".."conv3d", "conv_transpose1d".."3d" and "sigmoid"; 5/3 for "tanh"; sqrt(2) for
/// "relu"; sqrt(2 / (1 + slope^2)) for "leaky_relu" (slope = param, default 0.01); 3/4 for
/// "selu". Another name is a graft::error.
[[nodiscard]] GRAFT_INLINE double calculate_gain(std::string_view nonlinearity, std::optional<double> param = {});

/// (fan_in, fan_out) of a weight of at least 2 dimensions: size(1) and size(0) times the
/// product of the remaining sizes (the receptive field), as PyTorch's
/// _calculate_fan_in_and_fan_out.
[[nodiscard]] GRAFT_INLINE std::pair<std::int64_t, std::int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);

/// Fills with samples of U(a, b); a > b is an error.
GRAFT_INLINE Tensor uniform_(const Tensor& tensor, double a = 0.0, double b = 1.0,
                             generator& gen = default_generator());
/// Fills with samples of N(mean, std^2); std < 0 is an error.
GRAFT_INLINE Tensor normal_(const Tensor& tensor, double mean = 0.0, double std = 1.0,
                            generator& gen = default_generator());
/// Fills with `value`.
GRAFT_INLINE Tensor constant_(const Tensor& tensor, double value);
GRAFT_INLINE Tensor zeros_(const Tensor& tensor);
GRAFT_INLINE Tensor ones_(const Tensor& tensor);

/// U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio).
GRAFT_INLINE Tensor xavier_uniform_(const Tensor& tensor, double gain = 1.0, generator& gen = default_generator());
/// N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).
GRAFT_INLINE Tensor xavier_normal_(const Tensor& tensor, double gain = 1.0, generator& gen = default_generator());

/// U(-bound, bound) with bound = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity, a),
/// fan = fan_in or fan_out by `mode` ("fan_in" | "fan_out") (He et al.). An empty tensor is
/// left as it is (PyTorch warns).
GRAFT_INLINE Tensor kaiming_uniform_(const Tensor& tensor, double a = 0.0, std::string_view mode = "fan_in",
                                     std::string_view nonlinearity = "leaky_relu",
                                     generator& gen = default_generator());
/// N(0, std^2) with std = gain / sqrt(fan), gain and fan as kaiming_uniform_.
GRAFT_INLINE Tensor kaiming_normal_(const Tensor& tensor, double a = 0.0, std::string_view mode = "fan_in",
                                    std::string_view nonlinearity = "leaky_relu",
                                    generator& gen = default_generator());

}  // namespace graft::nn::init

#if GRAFT_HAS_CODE
#include "graft/nn/impl/init.ipp"
#endif
