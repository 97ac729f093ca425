#pragma once
// Definitions for graft/optim/rmsprop.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/optim/rmsprop.hpp"

#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "graft/core/error.hpp"
#include "graft/core/factories.hpp"

namespace graft::optim {
namespace detail {

struct rmsprop_args {
    double lr, alpha, eps, weight_decay, momentum;
    bool centered, maximize;
};

// One pass over the elements, in PyTorch's order of operations (its scalars in T, as its CPU
// kernels take them). grad_avg / buf are null when not centered / without momentum.
template <class T>
void rmsprop_update(const rmsprop_args& a, T* p, const T* grad, T* square_avg, T* grad_avg, T* buf, std::size_t n) {
    const T alpha = static_cast<T>(a.alpha), one_minus_alpha = static_cast<T>(1 - a.alpha);
    const T wd = static_cast<T>(a.weight_decay), eps = static_cast<T>(a.eps);
    const T momentum = static_cast<T>(a.momentum), neg_lr = static_cast<T>(-a.lr);
    for (std::size_t i = 0; i < n; ++i) {
        T g = a.maximize ? -grad[i] : grad[i];
        if (a.weight_decay != 0) g = g + wd * p[i];
        square_avg[i] = square_avg[i] * alpha + one_minus_alpha * g * g;
        T avg;
        if (a.centered) {
            grad_avg[i] = grad_avg[i] * alpha + one_minus_alpha * g;
            avg = std::sqrt(square_avg[i] - grad_avg[i] * grad_avg[i]);
        } else {
            avg = std::sqrt(square_avg[i]);
        }
        avg = avg + eps;
        if (a.momentum > 0) {
            buf[i] = buf[i] * momentum + g / avg;
            p[i] = p[i] + neg_lr * buf[i];
        } else {
            p[i] = p[i] + neg_lr * (g / avg);
        }
    }
}

}  // namespace detail

GRAFT_INLINE RMSprop::RMSprop(std::vector<Tensor> params, double lr, double alpha, double eps, double weight_decay,
                              double momentum, bool centered, bool maximize)
    : RMSprop(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, lr, alpha, eps, weight_decay, momentum,
              centered, maximize) {}

GRAFT_INLINE RMSprop::RMSprop(std::vector<ParamGroup> groups, double lr, double alpha, double eps,
                              double weight_decay, double momentum, bool centered, bool maximize)
    : Optimizer("RMSprop", {{"lr", lr},
                            {"alpha", alpha},
                            {"eps", eps},
                            {"weight_decay", weight_decay},
                            {"momentum", momentum},
                            {"centered", centered ? 1.0 : 0.0},
                            {"maximize", maximize ? 1.0 : 0.0}}) {
    check_options(defaults());
    init_groups(std::move(groups));
}

GRAFT_INLINE void RMSprop::check_options(const options_map& o) const {
    using graft::detail::check;
    using detail::option;
    // x >= 0 rejects NaN too, as PyTorch's `not 0.0 <= x` does.
    check(option(o, "lr") >= 0, "RMSprop: Invalid learning rate: ", option(o, "lr"));
    check(option(o, "eps") >= 0, "RMSprop: Invalid epsilon value: ", option(o, "eps"));
    check(option(o, "momentum") >= 0, "RMSprop: Invalid momentum value: ", option(o, "momentum"));
    check(option(o, "weight_decay") >= 0, "RMSprop: Invalid weight_decay value: ", option(o, "weight_decay"));
    check(option(o, "alpha") >= 0, "RMSprop: Invalid alpha value: ", option(o, "alpha"));
    detail::check_flag_option("RMSprop", o, "centered");
    detail::check_flag_option("RMSprop", o, "maximize");
}

GRAFT_INLINE std::vector<std::string> RMSprop::state_keys() const {
    return {"square_avg", "momentum_buffer", "grad_avg"};
}

GRAFT_INLINE void RMSprop::update(const options_map& o, Tensor& param, const Tensor& grad, ParamState& state) {
    using detail::option;
    const detail::rmsprop_args a{option(o, "lr"),           option(o, "alpha"),    option(o, "eps"),
                                 option(o, "weight_decay"), option(o, "momentum"), option(o, "centered") != 0,
                                 option(o, "maximize") != 0};
    // Zero-initialized on first use (PyTorch creates them with the state; a buffer that a
    // later change of momentum or centered needs is created then, where PyTorch fails).
    auto buffer = [&](const char* key) -> Tensor& {
        Tensor& t = state.buffers[key];
        if (!t.defined()) t = zeros(param.sizes(), param.type());
        return t;
    };
    Tensor& square_avg = buffer("square_avg");
    Tensor grad_avg, buf;
    if (a.centered) grad_avg = buffer("grad_avg");
    if (a.momentum > 0) buf = buffer("momentum_buffer");
    state.step += 1;
    const auto n = static_cast<std::size_t>(param.numel());
    if (param.type() == dtype::float32)
        detail::rmsprop_update(a, param.data_ptr<float>(), grad.data_ptr<float>(), square_avg.data_ptr<float>(),
                               grad_avg.defined() ? grad_avg.data_ptr<float>() : nullptr,
                               buf.defined() ? buf.data_ptr<float>() : nullptr, n);
    else
        detail::rmsprop_update(a, param.data_ptr<double>(), grad.data_ptr<double>(), square_avg.data_ptr<double>(),
                               grad_avg.defined() ? grad_avg.data_ptr<double>() : nullptr,
                               buf.defined() ? buf.data_ptr<double>() : nullptr, n);
}

}  // namespace graft::optim
