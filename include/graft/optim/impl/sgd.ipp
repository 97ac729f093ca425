#pragma once
// Definitions for graft/optim/sgd.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/optim/sgd.hpp"

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "graft/core/error.hpp"
#include "graft/core/factories.hpp"
#include "graft/kernels/dispatch.hpp"

namespace graft::optim {
namespace detail {

inline options_map sgd_defaults(double lr, double momentum, double dampening, double weight_decay, bool nesterov,
                                bool maximize) {
    return {{"lr", lr},
            {"momentum", momentum},
            {"dampening", dampening},
            {"weight_decay", weight_decay},
            {"nesterov", nesterov ? 1.0 : 0.0},
            {"maximize", maximize ? 1.0 : 0.0}};
}

inline void check_flag(const char* op, const options_map& o, const char* key) {
    const double v = o.find(key)->second;
    graft::detail::check(v == 0 || v == 1, op, ": option '", key, "' is a flag and must be 0 or 1, got ", v);
}

}  // namespace detail

GRAFT_INLINE SGD::SGD(std::vector<Tensor> params, double lr, double momentum, double dampening, double weight_decay,
                      bool nesterov, bool maximize)
    : SGD(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, lr, momentum, dampening, weight_decay, nesterov,
          maximize) {}

GRAFT_INLINE SGD::SGD(std::vector<ParamGroup> groups, double lr, double momentum, double dampening,
                      double weight_decay, bool nesterov, bool maximize)
    : Optimizer("SGD", detail::sgd_defaults(lr, momentum, dampening, weight_decay, nesterov, maximize)) {
    check_options(defaults());
    init_groups(std::move(groups));
}

GRAFT_INLINE void SGD::check_options(const options_map& o) const {
    using graft::detail::check;
    const double lr = o.find("lr")->second, momentum = o.find("momentum")->second;
    const double dampening = o.find("dampening")->second, wd = o.find("weight_decay")->second;
    check(lr >= 0, "SGD: Invalid learning rate: ", lr);
    check(momentum >= 0, "SGD: Invalid momentum value: ", momentum);
    check(wd >= 0, "SGD: Invalid weight_decay value: ", wd);
    check(dampening == dampening, "SGD: Invalid dampening value: ", dampening);
    detail::check_flag("SGD", o, "nesterov");
    detail::check_flag("SGD", o, "maximize");
    if (o.find("nesterov")->second != 0)
        check(momentum > 0 && dampening == 0, "SGD: Nesterov momentum requires a momentum and zero dampening");
}

GRAFT_INLINE std::vector<std::string> SGD::state_keys() const { return {"momentum_buffer"}; }

GRAFT_INLINE void SGD::update(const options_map& o, Tensor& param, const Tensor& grad, ParamState& state) {
    kernels::sgd_args a;
    a.lr = o.find("lr")->second;
    a.momentum = o.find("momentum")->second;
    a.dampening = o.find("dampening")->second;
    a.weight_decay = o.find("weight_decay")->second;
    a.nesterov = o.find("nesterov")->second != 0;
    a.maximize = o.find("maximize")->second != 0;
    Tensor buf;
    if (a.momentum != 0) {
        auto it = state.buffers.find("momentum_buffer");
        a.first = it == state.buffers.end();
        if (a.first) {
            buf = empty(param.sizes(), param.type());  // set to the gradient by the kernel
            state.buffers["momentum_buffer"] = buf;
        } else {
            buf = it->second;
        }
    }
    const auto n = static_cast<std::size_t>(param.numel());
    if (param.type() == dtype::float32)
        kernels::sgd_step(a, param.data_ptr<float>(), grad.data_ptr<float>(),
                          buf.defined() ? buf.data_ptr<float>() : nullptr, n);
    else
        kernels::sgd_step(a, param.data_ptr<double>(), grad.data_ptr<double>(),
                          buf.defined() ? buf.data_ptr<double>() : nullptr, n);
}

}  // namespace graft::optim
