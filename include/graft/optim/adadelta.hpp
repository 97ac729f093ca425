#pragma once
// graft::optim::Adadelta (torch.optim.Adadelta): scales the gradient by the ratio of running
// root mean squares of past updates and of past gradients, with optional L2 weight decay and
// maximize. Manual: docs/optim.md.
#include <vector>

#include "graft/optim/optimizer.hpp"

namespace graft::optim {

/// PyTorch's Adadelta. Per parameter with a gradient g (PyTorch's update, written out):
///   g = maximize ? -g : g;  g += weight_decay * p;
///   v = rho * v + (1 - rho) * g * g;  delta = sqrt(u + eps) / sqrt(v + eps) * g;
///   u = rho * u + (1 - rho) * delta * delta;  p -= lr * delta.
/// Options (group keys): "lr", "rho", "eps", "weight_decay", "maximize". State: "step",
/// "square_avg" (v) and "acc_delta" (u), both starting at zero.
/// Errors (PyTorch's checks): negative lr, eps or weight_decay; rho outside [0, 1].
class Adadelta : public Optimizer {
public:
    GRAFT_INLINE explicit Adadelta(std::vector<Tensor> params, double lr = 1.0, double rho = 0.9,
                                   double eps = 1e-6, double weight_decay = 0, bool maximize = false);
    /// Several parameter groups; options missing from a group take these defaults.
    GRAFT_INLINE explicit Adadelta(std::vector<ParamGroup> groups, double lr = 1.0, double rho = 0.9,
                                   double eps = 1e-6, double weight_decay = 0, bool maximize = false);

protected:
    GRAFT_INLINE void check_options(const options_map& o) const override;
    [[nodiscard]] GRAFT_INLINE std::vector<std::string> state_keys() const override;
    [[nodiscard]] bool uses_step() const override { return true; }
    GRAFT_INLINE void update(const options_map& o, Tensor& param, const Tensor& grad, ParamState& state) override;
};

}  // namespace graft::optim

#if GRAFT_HAS_CODE
#include "graft/optim/impl/adadelta.ipp"
#endif
