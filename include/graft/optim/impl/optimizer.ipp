#pragma once
// Definitions for graft/optim/optimizer.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/optim/optimizer.hpp"

#include <cmath>
#include <cstddef>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "graft/autograd/grad_mode.hpp"
#include "graft/autograd/tensor_methods.hpp"
#include "graft/core/error.hpp"
#include "graft/core/factories.hpp"

namespace graft::optim {
namespace detail {

/// The option `key` of a complete options map (check_options and update see complete maps).
[[nodiscard]] inline double option(const options_map& o, std::string_view key) { return o.find(key)->second; }

/// Checks that the flag option `key` is 0 or 1.
inline void check_flag_option(const std::string& op, const options_map& o, std::string_view key) {
    const double v = option(o, key);
    graft::detail::check(v == 0 || v == 1, op, ": option '", key, "' is a flag and must be 0 or 1, got ", v);
}

}  // namespace detail

GRAFT_INLINE double& ParamGroup::operator[](std::string_view key) {
    auto it = options.find(key);
    graft::detail::check(it != options.end(), "optim: the parameter group has no option '", key, "'");
    return it->second;
}

GRAFT_INLINE double ParamGroup::operator[](std::string_view key) const {
    auto it = options.find(key);
    graft::detail::check(it != options.end(), "optim: the parameter group has no option '", key, "'");
    return it->second;
}

GRAFT_INLINE Optimizer::Optimizer(std::string name, options_map defaults, bool single_group)
    : name_(std::move(name)), defaults_(std::move(defaults)), single_group_(single_group) {}

GRAFT_INLINE void Optimizer::init_groups(std::vector<ParamGroup> groups) {
    graft::detail::check(!groups.empty(), name_, ": optimizer got an empty parameter list");
    std::size_t total = 0;
    for (const auto& g : groups) total += g.params.size();
    graft::detail::check(total > 0, name_, ": optimizer got an empty parameter list");
    for (auto& g : groups) add_param_group(std::move(g));
}

GRAFT_INLINE void Optimizer::add_param_group(ParamGroup group) {
    using graft::detail::check;
    const std::string& op = name_;
    check(!single_group_ || groups_.empty(), op,
          " doesn't support per-parameter options (parameter groups): it takes one group only");
    // Options: known keys only (plus the schedulers' own, such as "initial_lr", as in
    // PyTorch), the rest from the defaults.
    for (const auto& [key, value] : group.options)
        check(defaults_.count(key) != 0 || detail::is_scheduler_option(key), op,
              ": add_param_group: unknown option '", key, "' (this optimizer's options: ",
              [&] {
                  std::string s;
                  for (const auto& [k, v] : defaults_) s += (s.empty() ? "" : ", ") + k;
                  return s;
              }(),
              ")");
    for (const auto& [key, value] : defaults_) group.options.emplace(key, value);
    check_options(group.options);
    // Parameters: float leaves requiring grad, each in one group only.
    for (std::size_t i = 0; i < group.params.size(); ++i) {
        const Tensor& p = group.params[i];
        check(p.defined(), op, ": parameter ", i, " of the group is an undefined tensor");
        check(p.type() == dtype::float32 || p.type() == dtype::float64, op, ": parameter ", i,
              " has dtype ", p.type(), "; only float32 and float64 parameters can be optimized");
        check(p.requires_grad(), op, ": parameter ", i,
              " does not require grad; only tensors that require grad can be optimized");
        check(p.is_leaf(), op, ": can't optimize a non-leaf Tensor (parameter ", i, " of the group)");
        for (std::size_t j = 0; j < i; ++j)
            check(!group.params[j].is_same(p), op, ": the parameter group contains parameter ", i,
                  " more than once");
        for (const auto& other : groups_)
            for (const auto& q : other.params)
                check(!q.is_same(p), op, ": some parameters appear in more than one parameter group");
    }
    std::vector<ParamState> fresh(group.params.size());
    for (std::size_t i = 0; i < group.params.size(); ++i) init_state(group.options, group.params[i], fresh[i]);
    state_.reserve(state_.size() + 1);
    groups_.reserve(groups_.size() + 1);
    state_.push_back(std::move(fresh));
    groups_.push_back(std::move(group));
}

GRAFT_INLINE void Optimizer::zero_grad(bool set_to_none) {
    autograd::no_grad guard;
    for (auto& g : groups_)
        for (auto& p : g.params) {
            Tensor grad = p.grad();
            if (!grad.defined()) continue;
            if (set_to_none) {
                p.set_grad(Tensor{});
            } else {
                if (grad.requires_grad() || grad.grad_fn()) {
                    grad = grad.detach();
                    p.set_grad(grad);
                }
                grad.zero_();
            }
        }
}

GRAFT_INLINE void Optimizer::step() {
    autograd::no_grad guard;
    // Check everything first, so that a bad gradient leaves every parameter unchanged.
    struct item {
        std::size_t group, index;
        Tensor grad;
    };
    std::vector<item> todo;
    for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
        const ParamGroup& group = groups_[gi];
        check_options(group.options);  // options may have been changed through param_groups()
        for (std::size_t i = 0; i < group.params.size(); ++i) {
            const Tensor& p = group.params[i];
            Tensor grad = p.grad();
            if (!grad.defined()) continue;
            graft::detail::check(grad.type() == p.type(), name_, ": step: the gradient of parameter ", i,
                                 " of group ", gi, " has dtype ", grad.type(), " but the parameter has dtype ",
                                 p.type());
            graft::detail::check(grad.sizes() == p.sizes(), name_, ": step: the gradient of parameter ", i,
                                 " of group ", gi, " has shape ", grad.sizes(), " but the parameter has shape ",
                                 p.sizes());
            todo.push_back({gi, i, grad.is_contiguous() ? grad : grad.contiguous()});
        }
    }
    for (auto& [gi, i, grad] : todo) {
        Tensor& p = groups_[gi].params[i];
        ParamState& st = state_[gi][i];
        st.has_step = uses_step();
        if (p.is_contiguous()) {
            update(groups_[gi].options, p, grad, st);
        } else {
            // The kernels need contiguous memory: update a contiguous copy, write it back.
            Tensor c = p.contiguous();
            update(groups_[gi].options, c, grad, st);
            p.copy_(c);
        }
        p.bump_version();
    }
}

GRAFT_INLINE Tensor Optimizer::step(const std::function<Tensor()>& closure) {
    graft::detail::check(static_cast<bool>(closure), name_, ": step: the closure is empty");
    Tensor loss;
    {
        autograd::enable_grad guard;
        loss = closure();
    }
    step();
    return loss;
}

GRAFT_INLINE OptimizerStateDict Optimizer::state_dict() const {
    OptimizerStateDict sd;
    std::int64_t index = 0;
    for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
        OptimizerStateDict::Group g;
        g.options = groups_[gi].options;
        for (std::size_t i = 0; i < groups_[gi].params.size(); ++i, ++index) {
            g.params.push_back(index);
            const ParamState& st = state_[gi][i];
            if (st.empty()) continue;
            auto& entry = sd.state[index];
            // "step" as PyTorch keeps it: a 0-d float32 tensor.
            if (st.has_step) entry["step"] = full({}, static_cast<double>(st.step), dtype::float32);
            for (const auto& [key, t] : st.buffers) entry[key] = t.clone();
        }
        sd.param_groups.push_back(std::move(g));
    }
    return sd;
}

GRAFT_INLINE void Optimizer::load_state_dict(const OptimizerStateDict& sd) {
    using graft::detail::check;
    const std::string op = name_ + ": load_state_dict";
    check(sd.param_groups.size() == groups_.size(), op,
          ": loaded state dict has a different number of parameter groups (", sd.param_groups.size(),
          ") than the optimizer (", groups_.size(), ")");
    // Map parameter indices to (group, position), checking the groups' sizes.
    std::vector<std::pair<std::size_t, std::size_t>> where;
    std::map<std::int64_t, std::size_t> index_of;  // saved index -> flat position
    for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
        const auto& saved = sd.param_groups[gi];
        check(saved.params.size() == groups_[gi].params.size(), op, ": loaded state dict contains a parameter group (",
              gi, ") of ", saved.params.size(), " parameters that doesn't match the size of optimizer's group (",
              groups_[gi].params.size(), ")");
        for (std::size_t i = 0; i < saved.params.size(); ++i) {
            check(index_of.emplace(saved.params[i], where.size()).second, op, ": parameter index ", saved.params[i],
                  " appears more than once in the loaded param_groups");
            where.emplace_back(gi, i);
        }
        options_map opts = saved.options;
        for (const auto& [key, value] : opts)
            check(defaults_.count(key) != 0 || detail::is_scheduler_option(key), op, ": unknown option '", key,
                  "' in parameter group ", gi);
        for (const auto& [key, value] : defaults_)
            check(opts.count(key) != 0, op, ": parameter group ", gi, " lacks the option '", key, "'");
        check_options(opts);
    }
    // Build the new state completely before replacing anything.
    std::vector<std::vector<ParamState>> fresh;
    for (const auto& g : groups_) fresh.emplace_back(g.params.size());
    const std::vector<std::string> keys = state_keys();
    for (const auto& [index, entry] : sd.state) {
        auto it = index_of.find(index);
        check(it != index_of.end(), op, ": state for parameter index ", index,
              " which is not in the loaded param_groups");
        const auto [gi, i] = where[it->second];
        const Tensor& p = groups_[gi].params[i];
        ParamState& st = fresh[gi][i];
        for (const auto& [key, t] : entry) {
            check(t.defined(), op, ": state '", key, "' of parameter ", index, " is an undefined tensor");
            if (key == "step") {
                check(uses_step(), op, ": ", name_, " keeps no 'step' state (parameter ", index, ")");
                check(t.numel() == 1, op, ": state 'step' of parameter ", index, " must have one element, got shape ",
                      t.sizes());
                const double s = t.item<double>();
                check(s >= 0 && s < 9.0e15 && s == std::floor(s), op, ": state 'step' of parameter ", index,
                      " must be a non-negative integer, got ", s);
                st.step = static_cast<std::int64_t>(s);
                st.has_step = true;
                continue;
            }
            bool known = false;
            for (const auto& k : keys) known = known || k == key;
            check(known, op, ": unknown state '", key, "' for parameter ", index);
            check(t.sizes() == p.sizes(), op, ": state '", key, "' of parameter ", index, " has shape ", t.sizes(),
                  " but the parameter has shape ", p.sizes());
            check(is_floating_point(t.type()), op, ": state '", key, "' of parameter ", index,
                  " must be floating point, got dtype ", t.type());
            st.buffers[key] = t.to(p.type()).clone().contiguous();
        }
        if (uses_step() && !st.buffers.empty())
            check(st.has_step, op, ": the state of parameter ", index, " has no 'step'");
    }
    for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
        options_map opts = sd.param_groups[gi].options;
        groups_[gi].options = std::move(opts);
    }
    state_ = std::move(fresh);
}

}  // namespace graft::optim
