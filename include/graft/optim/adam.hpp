#pragma once
// graft::optim::Adam and AdamW (torch.optim.Adam, torch.optim.AdamW): Adam with bias
// correction, optional AMSGrad and maximize; Adam's weight decay is L2 (added to the
// gradient), AdamW's is decoupled (the parameter is scaled by 1 - lr * weight_decay). Each
// step is one fused pass per parameter (graft/kernels/optim-inl.hpp). Manual: docs/optim.md.
#include <utility>
#include <vector>

#include "graft/optim/optimizer.hpp"

namespace graft::optim {

/// PyTorch's Adam. Per parameter with a gradient g, at step t (PyTorch's update, written out):
///   g = maximize ? -g : g;  g += weight_decay * p   (AdamW instead: p *= 1 - lr * weight_decay)
///   m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
///   amsgrad: vmax = max(vmax, v), used for v below
///   p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps).
/// Options (group keys): "lr", "beta1", "beta2" (PyTorch's betas pair), "eps",
/// "weight_decay", "amsgrad", "maximize". State: "step", "exp_avg", "exp_avg_sq" and, with
/// amsgrad, "max_exp_avg_sq".
/// Errors (PyTorch's checks): negative lr, eps or weight_decay; a beta outside [0, 1).
class Adam : public Optimizer {
public:
    GRAFT_INLINE explicit Adam(std::vector<Tensor> params, double lr = 1e-3,
                               std::pair<double, double> betas = {0.9, 0.999}, double eps = 1e-8,
                               double weight_decay = 0, bool amsgrad = false, bool maximize = false);
    /// Several parameter groups; options missing from a group take these defaults.
    GRAFT_INLINE explicit Adam(std::vector<ParamGroup> groups, double lr = 1e-3,
                               std::pair<double, double> betas = {0.9, 0.999}, double eps = 1e-8,
                               double weight_decay = 0, bool amsgrad = false, bool maximize = false);

protected:
    /// For AdamW: the same optimizer with decoupled weight decay.
    GRAFT_INLINE Adam(const char* name, bool decoupled, double lr, std::pair<double, double> betas, double eps,
                      double weight_decay, bool amsgrad, bool maximize);

    GRAFT_INLINE void check_options(const options_map& o) const override;
    [[nodiscard]] GRAFT_INLINE std::vector<std::string> state_keys() const override;
    [[nodiscard]] bool uses_step() const override { return true; }
    GRAFT_INLINE void update(const options_map& o, Tensor& param, const Tensor& grad, ParamState& state) override;

private:
    bool decoupled_ = false;
};

/// PyTorch's AdamW: Adam with decoupled weight decay (default 1e-2): before the moments,
/// p *= 1 - lr * weight_decay, and the gradient is not changed. Same options, state and
/// errors as Adam.
class AdamW : public Adam {
public:
    GRAFT_INLINE explicit AdamW(std::vector<Tensor> params, double lr = 1e-3,
                                std::pair<double, double> betas = {0.9, 0.999}, double eps = 1e-8,
                                double weight_decay = 1e-2, bool amsgrad = false, bool maximize = false);
    GRAFT_INLINE explicit AdamW(std::vector<ParamGroup> groups, double lr = 1e-3,
                                std::pair<double, double> betas = {0.9, 0.999}, double eps = 1e-8,
                                double weight_decay = 1e-2, bool amsgrad = false, bool maximize = false);
};

}  // namespace graft::optim

#if GRAFT_HAS_CODE
#include "graft/optim/impl/adam.ipp"
#endif
