#pragma once
// Definitions for graft/nn/init.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/nn/init.hpp"

#include <cmath>
#include <string>

#include "graft/autograd/functions.hpp"
#include "graft/autograd/grad_mode.hpp"
#include "graft/autograd/tensor_methods.hpp"
#include "graft/core/error.hpp"

namespace graft::nn::init {
namespace detail {

using graft::detail::check;

inline void check_target(const char* op, const Tensor& t) {
    check(t.defined(), "nn::init::", op, ": got an undefined tensor");
    check(is_floating_point(t.type()), "nn::init::", op, ": expected a floating-point tensor, got dtype ", t.type());
}

/// Copies `values` (float64) into `t` in place, without recording a graph.
inline Tensor fill_from(const Tensor& t, const Tensor& values) {
    const autograd::no_grad guard;
    Tensor out = t;
    out.copy_(values);
    return t;
}

inline std::int64_t fan_for(const char* op, const Tensor& t, std::string_view mode) {
    check(mode == "fan_in" || mode == "fan_out", "nn::init::", op, ": mode ", mode,
          " not supported, please use one of fan_in, fan_out");
    const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
    return mode == "fan_in" ? fan_in : fan_out;
}

}  // namespace detail

GRAFT_INLINE double calculate_gain(std::string_view nonlinearity, std::optional<double> param) {
    if (nonlinearity == "linear" || nonlinearity == "conv1d" || nonlinearity == "conv2d" ||
        nonlinearity == "conv3d" || nonlinearity == "conv_transpose1d" || nonlinearity == "conv_transpose2d" ||
        nonlinearity == "conv_transpose3d" || nonlinearity == "sigmoid")
        return 1.0;
    if (nonlinearity == "tanh") return 5.0 / 3.0;
    if (nonlinearity == "relu") return std::sqrt(2.0);
    if (nonlinearity == "leaky_relu") {
        const double slope = param.value_or(0.01);
        return std::sqrt(2.0 / (1.0 + slope * slope));
    }
    if (nonlinearity == "selu") return 3.0 / 4.0;
    graft::detail::fail(graft::detail::concat("nn::init::calculate_gain: unsupported nonlinearity ", nonlinearity));
}

GRAFT_INLINE std::pair<std::int64_t, std::int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor) {
    graft::detail::check(tensor.defined(), "nn::init::calculate_fan_in_and_fan_out: got an undefined tensor");
    graft::detail::check(tensor.dim() >= 2,
                         "nn::init: fan in and fan out can not be computed for tensor with fewer than 2 dimensions "
                         "(got sizes ",
                         tensor.sizes(), ")");
    std::int64_t receptive = 1;
    for (std::int64_t d = 2; d < tensor.dim(); ++d) receptive *= tensor.size(d);
    return {tensor.size(1) * receptive, tensor.size(0) * receptive};
}

GRAFT_INLINE Tensor uniform_(const Tensor& tensor, double a, double b, generator& gen) {
    detail::check_target("uniform_", tensor);
    graft::detail::check(a <= b, "nn::init::uniform_: expects a [from, to) range, but found from=", a, " > to=", b);
    const autograd::no_grad guard;
    return detail::fill_from(tensor, rand(tensor.sizes(), dtype::float64, gen) * (b - a) + a);
}

GRAFT_INLINE Tensor normal_(const Tensor& tensor, double mean, double std, generator& gen) {
    detail::check_target("normal_", tensor);
    graft::detail::check(std >= 0.0, "nn::init::normal_: expects std >= 0.0, but found std ", std);
    const autograd::no_grad guard;
    return detail::fill_from(tensor, randn(tensor.sizes(), dtype::float64, gen) * std + mean);
}

GRAFT_INLINE Tensor constant_(const Tensor& tensor, double value) {
    detail::check_target("constant_", tensor);
    const autograd::no_grad guard;
    Tensor out = tensor;
    out.fill_(value);
    return tensor;
}

GRAFT_INLINE Tensor zeros_(const Tensor& tensor) { return constant_(tensor, 0.0); }
GRAFT_INLINE Tensor ones_(const Tensor& tensor) { return constant_(tensor, 1.0); }

GRAFT_INLINE Tensor xavier_uniform_(const Tensor& tensor, double gain, generator& gen) {
    detail::check_target("xavier_uniform_", tensor);
    const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
    const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
    const double a = std::sqrt(3.0) * std;
    return uniform_(tensor, -a, a, gen);
}

GRAFT_INLINE Tensor xavier_normal_(const Tensor& tensor, double gain, generator& gen) {
    detail::check_target("xavier_normal_", tensor);
    const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
    return normal_(tensor, 0.0, gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)), gen);
}

GRAFT_INLINE Tensor kaiming_uniform_(const Tensor& tensor, double a, std::string_view mode,
                                     std::string_view nonlinearity, generator& gen) {
    detail::check_target("kaiming_uniform_", tensor);
    if (tensor.numel() == 0) return tensor;
    const double fan = static_cast<double>(detail::fan_for("kaiming_uniform_", tensor, mode));
    const double bound = std::sqrt(3.0) * calculate_gain(nonlinearity, a) / std::sqrt(fan);
    return uniform_(tensor, -bound, bound, gen);
}

GRAFT_INLINE Tensor kaiming_normal_(const Tensor& tensor, double a, std::string_view mode,
                                    std::string_view nonlinearity, generator& gen) {
    detail::check_target("kaiming_normal_", tensor);
    if (tensor.numel() == 0) return tensor;
    const double fan = static_cast<double>(detail::fan_for("kaiming_normal_", tensor, mode));
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / std::sqrt(fan), gen);
}

}  // namespace graft::nn::init
