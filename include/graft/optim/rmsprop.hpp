#pragma once
// graft::optim::RMSprop (torch.optim.RMSprop): divides the gradient by a running root mean
// square of recent gradients (optionally centered: by their running standard deviation), with
// optional momentum, L2 weight decay and maximize. Manual: docs/optim.md.
#include <vector>

#include "graft/optim/optimizer.hpp"

namespace graft::optim {

/// PyTorch's RMSprop. Per parameter with a gradient g (PyTorch's update, written out):
///   g = maximize ? -g : g;  g += weight_decay * p;
///   v = alpha * v + (1 - alpha) * g * g;
///   centered: m = alpha * m + (1 - alpha) * g, avg = sqrt(v - m * m) + eps; else avg = sqrt(v) + eps;
///   momentum > 0: buf = momentum * buf + g / avg, p -= lr * buf;  else p -= lr * g / avg.
/// Options (group keys): "lr", "alpha", "eps", "weight_decay", "momentum", "centered",
/// "maximize". State: "step", "square_avg" (v), "momentum_buffer" (buf, when momentum > 0) and
/// "grad_avg" (m, when centered); each buffer starts at zero.
/// Errors (PyTorch's checks): negative lr, eps, momentum, weight_decay or alpha.
class RMSprop : public Optimizer {
public:
    GRAFT_INLINE explicit RMSprop(std::vector<Tensor> params, double lr = 1e-2, double alpha = 0.99,
                                  double eps = 1e-8, double weight_decay = 0, double momentum = 0,
                                  bool centered = false, bool maximize = false);
    /// Several parameter groups; options missing from a group take these defaults.
    GRAFT_INLINE explicit RMSprop(std::vector<ParamGroup> groups, double lr = 1e-2, double alpha = 0.99,
                                  double eps = 1e-8, double weight_decay = 0, double momentum = 0,
                                  bool centered = false, bool maximize = false);

protected:
    GRAFT_INLINE void check_options(const options_map& o) const override;
    [[nodiscard]] GRAFT_INLINE std::vector<std::string> state_keys() const override;
    [[nodiscard]] bool uses_step() const override { return true; }
    GRAFT_INLINE void update(const options_map& o, Tensor& param, const Tensor& grad, ParamState& state) override;
};

}  // namespace graft::optim

#if GRAFT_HAS_CODE
#include "graft/optim/impl/rmsprop.ipp"
#endif
