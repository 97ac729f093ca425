#pragma once
// Definitions for graft/optim/adagrad.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/optim/adagrad.hpp"

#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "graft/core/error.hpp"
#include "graft/core/factories.hpp"

namespace graft::optim {
namespace detail {

struct adagrad_args {
    double clr, weight_decay, eps;
    bool maximize;
};

// One pass over the elements, in PyTorch's order of operations (its scalars in T).
template <class T>
void adagrad_update(const adagrad_args& a, T* p, const T* grad, T* sum, std::size_t n) {
    const T wd = static_cast<T>(a.weight_decay), eps = static_cast<T>(a.eps), neg_clr = static_cast<T>(-a.clr);
    for (std::size_t i = 0; i < n; ++i) {
        T g = a.maximize ? -grad[i] : grad[i];
        if (a.weight_decay != 0) g = g + wd * p[i];
        sum[i] = sum[i] + g * g;
        const T denom = std::sqrt(sum[i]) + eps;
        p[i] = p[i] + neg_clr * (g / denom);
    }
}

}  // namespace detail

GRAFT_INLINE Adagrad::Adagrad(std::vector<Tensor> params, double lr, double lr_decay, double weight_decay,
                              double initial_accumulator_value, double eps, bool maximize)
    : Adagrad(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, lr, lr_decay, weight_decay,
              initial_accumulator_value, eps, maximize) {}

GRAFT_INLINE Adagrad::Adagrad(std::vector<ParamGroup> groups, double lr, double lr_decay, double weight_decay,
                              double initial_accumulator_value, double eps, bool maximize)
    : Optimizer("Adagrad", {{"lr", lr},
                            {"lr_decay", lr_decay},
                            {"weight_decay", weight_decay},
                            {"initial_accumulator_value", initial_accumulator_value},
                            {"eps", eps},
                            {"maximize", maximize ? 1.0 : 0.0}}) {
    check_options(defaults());
    init_groups(std::move(groups));
}

GRAFT_INLINE void Adagrad::check_options(const options_map& o) const {
    using graft::detail::check;
    using detail::option;
    check(option(o, "lr") >= 0, "Adagrad: Invalid learning rate: ", option(o, "lr"));
    check(option(o, "lr_decay") >= 0, "Adagrad: Invalid lr_decay value: ", option(o, "lr_decay"));
    check(option(o, "weight_decay") >= 0, "Adagrad: Invalid weight_decay value: ", option(o, "weight_decay"));
    check(option(o, "initial_accumulator_value") >= 0, "Adagrad: Invalid initial_accumulator_value value: ",
          option(o, "initial_accumulator_value"));
    check(option(o, "eps") >= 0, "Adagrad: Invalid epsilon value: ", option(o, "eps"));
    detail::check_flag_option("Adagrad", o, "maximize");
}

GRAFT_INLINE std::vector<std::string> Adagrad::state_keys() const { return {"sum"}; }

GRAFT_INLINE void Adagrad::init_state(const options_map& o, const Tensor& param, ParamState& state) {
    state.has_step = true;
    state.step = 0;
    state.buffers["sum"] = full(param.sizes(), detail::option(o, "initial_accumulator_value"), param.type());
}

GRAFT_INLINE void Adagrad::update(const options_map& o, Tensor& param, const Tensor& grad, ParamState& state) {
    using detail::option;
    // The state made by init_state; a parameter whose state a load_state_dict left out gets it
    // now (PyTorch fails on it).
    Tensor& sum = state.buffers["sum"];
    if (!sum.defined()) sum = full(param.sizes(), option(o, "initial_accumulator_value"), param.type());
    state.step += 1;
    const double lr = option(o, "lr"), lr_decay = option(o, "lr_decay");
    detail::adagrad_args a{lr / (1 + static_cast<double>(state.step - 1) * lr_decay), option(o, "weight_decay"),
                           option(o, "eps"), option(o, "maximize") != 0};
    const auto n = static_cast<std::size_t>(param.numel());
    if (param.type() == dtype::float32)
        detail::adagrad_update(a, param.data_ptr<float>(), grad.data_ptr<float>(), sum.data_ptr<float>(), n);
    else
        detail::adagrad_update(a, param.data_ptr<double>(), grad.data_ptr<double>(), sum.data_ptr<double>(), n);
}

}  // namespace graft::optim
