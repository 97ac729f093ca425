#pragma once
// Definitions for graft/optim/adam.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/optim/adam.hpp"

#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "graft/core/error.hpp"
#include "graft/core/factories.hpp"
#include "graft/kernels/dispatch.hpp"

namespace graft::optim {
namespace detail {

inline options_map adam_defaults(double lr, std::pair<double, double> betas, double eps, double weight_decay,
                                 bool amsgrad, bool maximize) {
    return {{"lr", lr},
            {"beta1", betas.first},
            {"beta2", betas.second},
            {"eps", eps},
            {"weight_decay", weight_decay},
            {"amsgrad", amsgrad ? 1.0 : 0.0},
            {"maximize", maximize ? 1.0 : 0.0}};
}

inline void check_adam_flag(const std::string& op, const options_map& o, const char* key) {
    const double v = o.find(key)->second;
    graft::detail::check(v == 0 || v == 1, op, ": option '", key, "' is a flag and must be 0 or 1, got ", v);
}

}  // namespace detail

GRAFT_INLINE Adam::Adam(std::vector<Tensor> params, double lr, std::pair<double, double> betas, double eps,
                        double weight_decay, bool amsgrad, bool maximize)
    : Adam(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, lr, betas, eps, weight_decay, amsgrad, maximize) {}

GRAFT_INLINE Adam::Adam(std::vector<ParamGroup> groups, double lr, std::pair<double, double> betas, double eps,
                        double weight_decay, bool amsgrad, bool maximize)
    : Adam("Adam", false, lr, betas, eps, weight_decay, amsgrad, maximize) {
    init_groups(std::move(groups));
}

GRAFT_INLINE Adam::Adam(const char* name, bool decoupled, double lr, std::pair<double, double> betas, double eps,
                        double weight_decay, bool amsgrad, bool maximize)
    : Optimizer(name, detail::adam_defaults(lr, betas, eps, weight_decay, amsgrad, maximize)), decoupled_(decoupled) {
    check_options(defaults());
}

GRAFT_INLINE AdamW::AdamW(std::vector<Tensor> params, double lr, std::pair<double, double> betas, double eps,
                          double weight_decay, bool amsgrad, bool maximize)
    : AdamW(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, lr, betas, eps, weight_decay, amsgrad,
            maximize) {}

GRAFT_INLINE AdamW::AdamW(std::vector<ParamGroup> groups, double lr, std::pair<double, double> betas, double eps,
                          double weight_decay, bool amsgrad, bool maximize)
    : Adam("AdamW", true, lr, betas, eps, weight_decay, amsgrad, maximize) {
    init_groups(std::move(groups));
}

GRAFT_INLINE void Adam::check_options(const options_map& o) const {
    using graft::detail::check;
    const std::string& op = name();
    const double lr = o.find("lr")->second, eps = o.find("eps")->second;
    const double b1 = o.find("beta1")->second, b2 = o.find("beta2")->second, wd = o.find("weight_decay")->second;
    check(lr >= 0, op, ": Invalid learning rate: ", lr);
    check(eps >= 0, op, ": Invalid epsilon value: ", eps);
    check(b1 >= 0 && b1 < 1, op, ": Invalid beta parameter at index 0: ", b1);
    check(b2 >= 0 && b2 < 1, op, ": Invalid beta parameter at index 1: ", b2);
    check(wd >= 0, op, ": Invalid weight_decay value: ", wd);
    detail::check_adam_flag(op, o, "amsgrad");
    detail::check_adam_flag(op, o, "maximize");
}

GRAFT_INLINE std::vector<std::string> Adam::state_keys() const { return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}; }

GRAFT_INLINE void Adam::update(const options_map& o, Tensor& param, const Tensor& grad, ParamState& state) {
    kernels::adam_args a;
    a.lr = o.find("lr")->second;
    a.beta1 = o.find("beta1")->second;
    a.beta2 = o.find("beta2")->second;
    a.eps = o.find("eps")->second;
    a.weight_decay = o.find("weight_decay")->second;
    a.amsgrad = o.find("amsgrad")->second != 0;
    a.maximize = o.find("maximize")->second != 0;
    a.decoupled = decoupled_;
    // Lazy state, zero-initialized on first use (as PyTorch's _init_group).
    auto buffer = [&](const char* key) -> Tensor& {
        Tensor& t = state.buffers[key];
        if (!t.defined()) t = zeros(param.sizes(), param.type());
        return t;
    };
    Tensor& m = buffer("exp_avg");
    Tensor& v = buffer("exp_avg_sq");
    Tensor vmax;
    if (a.amsgrad) vmax = buffer("max_exp_avg_sq");
    state.step += 1;
    const auto t = static_cast<double>(state.step);
    a.step_size = a.lr / (1 - std::pow(a.beta1, t));
    a.bias_correction2_sqrt = std::sqrt(1 - std::pow(a.beta2, t));
    const auto n = static_cast<std::size_t>(param.numel());
    if (param.type() == dtype::float32)
        kernels::adam_step(a, param.data_ptr<float>(), grad.data_ptr<float>(), m.data_ptr<float>(),
                           v.data_ptr<float>(), vmax.defined() ? vmax.data_ptr<float>() : nullptr, n);
    else
        kernels::adam_step(a, param.data_ptr<double>(), grad.data_ptr<double>(), m.data_ptr<double>(),
                           v.data_ptr<double>(), vmax.defined() ? vmax.data_ptr<double>() : nullptr, n);
}

}  // namespace graft::optim
