#pragma once
// graft::optim::SGD (torch.optim.SGD): stochastic gradient descent with optional momentum,
// dampening, Nesterov momentum, L2 weight decay and maximize. Each step is one fused pass per
// parameter (graft/kernels/optim-inl.hpp). Manual: docs/optim.md.
#include <vector>

#include "graft/optim/optimizer.hpp"

namespace graft::optim {

/// PyTorch's SGD. Per parameter with a gradient g (PyTorch's update, written out):
///   g = maximize ? -g : g;  g += weight_decay * p;
///   momentum != 0: buf = (first step) ? g : momentum * buf + (1 - dampening) * g;
///                  g = nesterov ? g + momentum * buf : buf;
///   p -= lr * g.
/// Options (group keys): "lr", "momentum", "dampening", "weight_decay", "nesterov",
/// "maximize". State: "momentum_buffer" (only when momentum != 0).
/// Errors (PyTorch's checks): negative lr, momentum or weight_decay; nesterov without a
/// positive momentum or with nonzero dampening.
class SGD : public Optimizer {
public:
    GRAFT_INLINE explicit SGD(std::vector<Tensor> params, double lr = 1e-3, double momentum = 0, double dampening = 0,
                              double weight_decay = 0, bool nesterov = false, bool maximize = false);
    /// Several parameter groups; options missing from a group take these defaults.
    GRAFT_INLINE explicit SGD(std::vector<ParamGroup> groups, double lr = 1e-3, double momentum = 0,
                              double dampening = 0, double weight_decay = 0, bool nesterov = false,
                              bool maximize = false);

protected:
    GRAFT_INLINE void check_options(const options_map& o) const override;
    [[nodiscard]] GRAFT_INLINE std::vector<std::string> state_keys() const override;
    [[nodiscard]] bool uses_step() const override { return false; }
    GRAFT_INLINE void update(const options_map& o, Tensor& param, const Tensor& grad, ParamState& state) override;
};

}  // namespace graft::optim

#if GRAFT_HAS_CODE
#include "graft/optim/impl/sgd.ipp"
#endif
