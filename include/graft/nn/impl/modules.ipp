#pragma once
// Definitions for graft/nn/modules.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/nn/modules.hpp"

#include <cmath>
#include <string>

#include "graft/core/error.hpp"
#include "graft/nn/init.hpp"

namespace graft::nn {
namespace detail {
inline std::int64_t checked_features(const char* what, std::int64_t n) {
    graft::detail::check(n >= 0, "Linear: ", what, " must be non-negative, got ", n);
    return n;
}
inline dtype checked_linear_dtype(dtype type) {
    graft::detail::check(is_floating_point(type), "Linear: expected a floating-point dtype, got ", type);
    return type;
}
inline std::string format_double(double v) {
    std::string s = graft::detail::concat(v);
    return s;
}
}  // namespace detail

GRAFT_INLINE Linear::Linear(std::int64_t in, std::int64_t out, bool with_bias, dtype type)
    : Linear(in, out, with_bias, type, default_generator()) {}

GRAFT_INLINE Linear::Linear(std::int64_t in, std::int64_t out, bool with_bias, dtype type, generator& gen)
    : Module("Linear"),
      in_features(detail::checked_features("in_features", in)),
      out_features(detail::checked_features("out_features", out)),
      weight(register_parameter("weight", empty({out, in}, detail::checked_linear_dtype(type)))),
      bias(register_parameter("bias", with_bias ? empty({out}, type) : Tensor{})) {
    reset_parameters(gen);
}

GRAFT_INLINE void Linear::reset_parameters(generator& gen) {
    init::kaiming_uniform_(weight, std::sqrt(5.0), "fan_in", "leaky_relu", gen);
    if (bias.defined()) {
        const double bound = in_features > 0 ? 1.0 / std::sqrt(static_cast<double>(in_features)) : 0.0;
        init::uniform_(bias, -bound, bound, gen);
    }
}

GRAFT_INLINE Tensor Linear::forward(const Tensor& input) {
    graft::detail::check(input.defined(), "Linear: got an undefined input");
    graft::detail::check(input.dim() >= 1 && input.size(-1) == in_features, "Linear(in_features=", in_features,
                         ", out_features=", out_features, "): expected an input whose last dimension is ",
                         in_features, ", got sizes ", input.sizes());
    return functional::linear(input, weight, bias);
}

GRAFT_INLINE std::string Linear::extra_repr() const {
    return graft::detail::concat("in_features=", in_features, ", out_features=", out_features,
                                 ", bias=", bias.defined() ? "True" : "False");
}

GRAFT_INLINE std::string Flatten::extra_repr() const {
    return graft::detail::concat("start_dim=", start_dim, ", end_dim=", end_dim);
}

GRAFT_INLINE GELU::GELU(std::string approx) : Module("GELU"), approximate(std::move(approx)) {
    graft::detail::check(approximate == "none" || approximate == "tanh",
                         "GELU: approximate must be \"none\" or \"tanh\", got \"", approximate, "\"");
}

GRAFT_INLINE std::string GELU::extra_repr() const { return "approximate='" + approximate + "'"; }

GRAFT_INLINE std::string Softplus::extra_repr() const {
    return "beta=" + detail::format_double(beta) + ", threshold=" + detail::format_double(threshold);
}

GRAFT_INLINE std::string LeakyReLU::extra_repr() const {
    return "negative_slope=" + detail::format_double(negative_slope);
}

GRAFT_INLINE std::string Softmax::extra_repr() const { return graft::detail::concat("dim=", dim); }
GRAFT_INLINE std::string LogSoftmax::extra_repr() const { return graft::detail::concat("dim=", dim); }

namespace detail {

GRAFT_INLINE void module_sequence::push_back(std::shared_ptr<Module> module) {
    graft::detail::check(module != nullptr, type_name(), "::push_back: the module is null");
    register_module(std::to_string(items_.size()), module);
    items_.push_back(std::move(module));
}

GRAFT_INLINE const std::shared_ptr<Module>& module_sequence::operator[](std::int64_t i) const {
    const auto n = static_cast<std::int64_t>(items_.size());
    graft::detail::check(i >= -n && i < n, type_name(), ": index ", i, " is out of range for ", n, " modules");
    return items_[static_cast<std::size_t>(i < 0 ? i + n : i)];
}

}  // namespace detail

GRAFT_INLINE Sequential::Sequential(std::vector<std::shared_ptr<Module>> modules) : module_sequence("Sequential") {
    for (auto& m : modules) push_back(std::move(m));
}

GRAFT_INLINE Tensor Sequential::forward(const Tensor& input) {
    Tensor x = input;
    for (const auto& m : items_) x = m->forward(x);
    return x;
}

GRAFT_INLINE ModuleList::ModuleList(std::vector<std::shared_ptr<Module>> modules) : module_sequence("ModuleList") {
    extend(modules);
}

GRAFT_INLINE void ModuleList::extend(const std::vector<std::shared_ptr<Module>>& modules) {
    for (const auto& m : modules) push_back(m);
}

}  // namespace graft::nn
