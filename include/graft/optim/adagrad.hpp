#pragma once
// graft::optim::Adagrad (torch.optim.Adagrad): divides the gradient by the root of the sum of
// all past squared gradients, with a learning rate that decays with the step count, optional
// L2 weight decay and maximize. Manual: docs/optim.md.
#include <vector>

#include "graft/optim/optimizer.hpp"

namespace graft::optim {

/// PyTorch's Adagrad. Per parameter with a gradient g, at step t (PyTorch's update, written out):
///   g = maximize ? -g : g;  g += weight_decay * p;
///   clr = lr / (1 + (t - 1) * lr_decay);  sum += g * g;  p -= clr * g / (sqrt(sum) + eps).
/// Options (group keys): "lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps",
/// "maximize". State: "step" and "sum", created when a parameter is added (as PyTorch does at
/// construction): step 0, sum filled with initial_accumulator_value.
/// Errors (PyTorch's checks): negative lr, lr_decay, weight_decay, initial_accumulator_value or eps.
class Adagrad : public Optimizer {
public:
    GRAFT_INLINE explicit Adagrad(std::vector<Tensor> params, double lr = 1e-2, double lr_decay = 0,
                                  double weight_decay = 0, double initial_accumulator_value = 0,
                                  double eps = 1e-10, bool maximize = false);
    /// Several parameter groups; options missing from a group take these defaults.
    GRAFT_INLINE explicit Adagrad(std::vector<ParamGroup> groups, double lr = 1e-2, double lr_decay = 0,
                                  double weight_decay = 0, double initial_accumulator_value = 0,
                                  double eps = 1e-10, bool maximize = false);

protected:
    GRAFT_INLINE void check_options(const options_map& o) const override;
    [[nodiscard]] GRAFT_INLINE std::vector<std::string> state_keys() const override;
    [[nodiscard]] bool uses_step() const override { return true; }
    GRAFT_INLINE void update(const options_map& o, Tensor& param, const Tensor& grad, ParamState& state) override;
    GRAFT_INLINE void init_state(const options_map& o, const Tensor& param, ParamState& state) override;
};

}  // namespace graft::optim

#if GRAFT_HAS_CODE
#include "graft/optim/impl/adagrad.ipp"
#endif
