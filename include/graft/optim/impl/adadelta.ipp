#pragma once
// Definitions for graft/optim/adadelta.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/optim/adadelta.hpp"

#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "graft/core/error.hpp"
#include "graft/core/factories.hpp"

namespace graft::optim {
namespace detail {

struct adadelta_args {
    double lr, rho, eps, weight_decay;
    bool maximize;
};

// One pass over the elements, in PyTorch's order of operations (its scalars in T).
template <class T>
void adadelta_update(const adadelta_args& a, T* p, const T* grad, T* square_avg, T* acc_delta, std::size_t n) {
    const T rho = static_cast<T>(a.rho), one_minus_rho = static_cast<T>(1 - a.rho);
    const T wd = static_cast<T>(a.weight_decay), eps = static_cast<T>(a.eps), neg_lr = static_cast<T>(-a.lr);
    for (std::size_t i = 0; i < n; ++i) {
        T g = a.maximize ? -grad[i] : grad[i];
        if (a.weight_decay != 0) g = g + wd * p[i];
        square_avg[i] = square_avg[i] * rho + one_minus_rho * g * g;
        const T denom = std::sqrt(square_avg[i] + eps);
        const T delta = std::sqrt(acc_delta[i] + eps) / denom * g;
        acc_delta[i] = acc_delta[i] * rho + one_minus_rho * delta * delta;
        p[i] = p[i] + neg_lr * delta;
    }
}

}  // namespace detail

GRAFT_INLINE Adadelta::Adadelta(std::vector<Tensor> params, double lr, double rho, double eps, double weight_decay,
                                bool maximize)
    : Adadelta(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, lr, rho, eps, weight_decay, maximize) {}

GRAFT_INLINE Adadelta::Adadelta(std::vector<ParamGroup> groups, double lr, double rho, double eps,
                                double weight_decay, bool maximize)
    : Optimizer("Adadelta", {{"lr", lr},
                             {"rho", rho},
                             {"eps", eps},
                             {"weight_decay", weight_decay},
                             {"maximize", maximize ? 1.0 : 0.0}}) {
    check_options(defaults());
    init_groups(std::move(groups));
}

GRAFT_INLINE void Adadelta::check_options(const options_map& o) const {
    using graft::detail::check;
    using detail::option;
    const double rho = option(o, "rho");
    check(option(o, "lr") >= 0, "Adadelta: Invalid learning rate: ", option(o, "lr"));
    check(rho >= 0 && rho <= 1, "Adadelta: Invalid rho value: ", rho);
    check(option(o, "eps") >= 0, "Adadelta: Invalid epsilon value: ", option(o, "eps"));
    check(option(o, "weight_decay") >= 0, "Adadelta: Invalid weight_decay value: ", option(o, "weight_decay"));
    detail::check_flag_option("Adadelta", o, "maximize");
}

GRAFT_INLINE std::vector<std::string> Adadelta::state_keys() const { return {"square_avg", "acc_delta"}; }

GRAFT_INLINE void Adadelta::update(const options_map& o, Tensor& param, const Tensor& grad, ParamState& state) {
    using detail::option;
    auto buffer = [&](const char* key) -> Tensor& {
        Tensor& t = state.buffers[key];
        if (!t.defined()) t = zeros(param.sizes(), param.type());
        return t;
    };
    Tensor& square_avg = buffer("square_avg");
    Tensor& acc_delta = buffer("acc_delta");
    state.step += 1;
    const detail::adadelta_args a{option(o, "lr"), option(o, "rho"), option(o, "eps"), option(o, "weight_decay"),
                                  option(o, "maximize") != 0};
    const auto n = static_cast<std::size_t>(param.numel());
    if (param.type() == dtype::float32)
        detail::adadelta_update(a, param.data_ptr<float>(), grad.data_ptr<float>(), square_avg.data_ptr<float>(),
                                acc_delta.data_ptr<float>(), n);
    else
        detail::adadelta_update(a, param.data_ptr<double>(), grad.data_ptr<double>(), square_avg.data_ptr<double>(),
                                acc_delta.data_ptr<double>(), n);
}

}  // namespace graft::optim
