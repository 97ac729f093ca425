#pragma once
// graft::optim::Optimizer: the base of graft's optimizers (torch.optim.Optimizer): parameter
// groups with per-group options over the optimizer's defaults, zero_grad, step (with an
// optional closure) and state_dict / load_state_dict. SGD, Adam, AdamW, RMSprop, Adagrad,
// Adadelta and LBFGS derive from it (graft/optim/*.hpp). Manual: docs/optim.md.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "graft/core/tensor.hpp"

namespace graft::optim {

/// Options of a parameter group or an optimizer's defaults, by PyTorch's key ("lr",
/// "momentum", "weight_decay", ...). Booleans (nesterov, maximize, amsgrad) are 0 or 1, and
/// Adam's `betas` pair is the two keys "beta1" and "beta2".
using options_map = std::map<std::string, double, std::less<>>;

namespace detail {
/// Keys the learning-rate schedulers write into parameter groups ("initial_lr"; OneCycleLR's
/// "max_lr", "min_lr", "max_momentum", "base_momentum"), which every optimizer accepts as PyTorch does.
[[nodiscard]] inline bool is_scheduler_option(std::string_view key) noexcept {
    return key == "initial_lr" || key == "max_lr" || key == "min_lr" || key == "max_momentum" ||
           key == "base_momentum";
}
}  // namespace detail

/// One parameter group (an entry of PyTorch's optimizer.param_groups): its parameters and
/// its options. Options left out when the group is added take the optimizer's defaults.
struct ParamGroup {
    std::vector<Tensor> params;
    options_map options;

    ParamGroup() = default;
    ParamGroup(std::vector<Tensor> p, options_map o = {}) : params(std::move(p)), options(std::move(o)) {}

    /// The option `key` (PyTorch's group["lr"]); graft::error if the group has no such option.
    /// Assigning through it changes the option for the following steps (as schedulers do).
    [[nodiscard]] double& operator[](std::string_view key);
    [[nodiscard]] double operator[](std::string_view key) const;
};

/// An optimizer's state as plain data (PyTorch's optimizer.state_dict()): per parameter index
/// (counted over all groups in order) its state tensors by PyTorch's names ("step",
/// "momentum_buffer", "exp_avg", ...), and per group its options and parameter indices.
/// Parameters that have no state yet (never stepped) have no entry, as in PyTorch.
struct OptimizerStateDict {
    struct Group {
        options_map options;
        std::vector<std::int64_t> params;
    };
    std::map<std::int64_t, std::map<std::string, Tensor>> state;
    std::vector<Group> param_groups;
};

/// The base class of graft's optimizers (torch.optim.Optimizer). Not copyable (its state
/// tensors would be shared); movable. step, state_dict and load_state_dict are virtual: LBFGS,
/// whose step re-evaluates a closure and whose state is global, overrides them.
class Optimizer {
public:
    virtual ~Optimizer() = default;
    Optimizer(const Optimizer&) = delete;
    Optimizer& operator=(const Optimizer&) = delete;
    Optimizer(Optimizer&&) = default;
    Optimizer& operator=(Optimizer&&) = default;

    /// The parameter groups; their options may be changed in place (an unknown key cannot be
    /// added: ParamGroup::operator[] throws), their parameter lists must not be (use
    /// add_param_group).
    [[nodiscard]] std::vector<ParamGroup>& param_groups() noexcept { return groups_; }
    [[nodiscard]] const std::vector<ParamGroup>& param_groups() const noexcept { return groups_; }
    /// The defaults given to the constructor (PyTorch's optimizer.defaults).
    [[nodiscard]] const options_map& defaults() const noexcept { return defaults_; }

    /// Adds a group (PyTorch's add_param_group): missing options take the defaults; unknown
    /// options, invalid values, parameters that are not float32/float64 leaves requiring grad,
    /// parameters already in a group, and a second group for an optimizer that takes one
    /// (LBFGS) are errors (the optimizer is left unchanged).
    GRAFT_INLINE void add_param_group(ParamGroup group);

    /// Clears every parameter's gradient: set_to_none (the default, as PyTorch) makes it
    /// undefined; otherwise it is detached and filled with zeros.
    GRAFT_INLINE void zero_grad(bool set_to_none = true);

    /// One optimization step over every parameter that has a gradient (parameters without
    /// one are skipped, as in PyTorch). Runs under no_grad, updates the parameters in place
    /// (bumping their version counters) and records no autograd history.
    GRAFT_INLINE virtual void step();
    /// Calls `closure` (which should zero the gradients, compute the loss and call backward)
    /// with gradients enabled, then steps; returns the closure's loss.
    GRAFT_INLINE virtual Tensor step(const std::function<Tensor()>& closure);

    /// A snapshot of the state (the tensors are copies) and the groups' options.
    [[nodiscard]] GRAFT_INLINE virtual OptimizerStateDict state_dict() const;
    /// Restores a state_dict of an optimizer of the same kind over parameters of the same
    /// shapes: the groups' options are replaced, the state tensors copied (converted to each
    /// parameter's dtype). A different number of groups or of parameters in a group, an
    /// unknown state key, a state tensor of another shape, or an index out of range is a
    /// graft::error, and the optimizer is left unchanged.
    GRAFT_INLINE virtual void load_state_dict(const OptimizerStateDict& state_dict);

    /// The optimizer's name as in PyTorch ("SGD", "Adam", "AdamW"); used in error messages.
    [[nodiscard]] const std::string& name() const noexcept { return name_; }

protected:
    /// One parameter's state: the step count and the state tensors (contiguous, the
    /// parameter's dtype and shape; "step" is kept as step).
    struct ParamState {
        std::int64_t step = 0;
        bool has_step = false;  // whether "step" is part of this optimizer's state
        std::map<std::string, Tensor> buffers;
        [[nodiscard]] bool empty() const noexcept { return !has_step && buffers.empty(); }
    };

    /// `single_group`: the optimizer takes one parameter group only (PyTorch's LBFGS).
    GRAFT_INLINE Optimizer(std::string name, options_map defaults, bool single_group = false);

    /// Validates a group's options (all keys present); throws graft::error.
    virtual void check_options(const options_map& options) const = 0;
    /// The state keys this optimizer stores (besides "step" when uses_step()).
    [[nodiscard]] virtual std::vector<std::string> state_keys() const = 0;
    [[nodiscard]] virtual bool uses_step() const = 0;
    /// Updates one parameter from its gradient (contiguous, same dtype and shape) and its state.
    virtual void update(const options_map& options, Tensor& param, const Tensor& grad, ParamState& state) = 0;
    /// Called by add_param_group for every new parameter, with the group's complete options:
    /// where PyTorch creates the state at construction (Adagrad's "sum"), it is created here.
    /// By default the state is created lazily, by update.
    virtual void init_state(const options_map& /*options*/, const Tensor& /*param*/, ParamState& /*state*/) {}

    /// Adds the constructor's parameters as one group, or checks that some were given.
    GRAFT_INLINE void init_groups(std::vector<ParamGroup> groups);

private:
    std::string name_;
    options_map defaults_;
    std::vector<ParamGroup> groups_;
    std::vector<std::vector<ParamState>> state_;  // parallel to groups_[g].params
    bool single_group_ = false;
};

}  // namespace graft::optim

#if GRAFT_HAS_CODE
#include "graft/optim/impl/optimizer.ipp"
#endif
