#pragma once
// graft::optim::lr_scheduler (torch.optim.lr_scheduler): StepLR and CosineAnnealingLR, which
// set each parameter group's "lr" at every step() as PyTorch's do (same recursive formulas,
// so manual changes of a group's lr carry on as in PyTorch). Manual: docs/optim.md.
#include <cstdint>
#include <vector>

#include "graft/optim/optimizer.hpp"

namespace graft::optim::lr_scheduler {

/// The base of the schedulers (torch.optim.lr_scheduler.LRScheduler). It keeps a reference
/// to the optimizer, which must outlive it (and not be moved). Construction stores each
/// group's "initial_lr" (when last_epoch == -1) and takes the first step, as PyTorch does.
class LRScheduler {
public:
    virtual ~LRScheduler() = default;
    LRScheduler(const LRScheduler&) = delete;
    LRScheduler& operator=(const LRScheduler&) = delete;

    /// Advances one epoch and sets every group's lr.
    GRAFT_INLINE void step();
    /// The learning rates set by the last step(), one per group.
    [[nodiscard]] const std::vector<double>& get_last_lr() const noexcept { return last_lr_; }
    /// The initial learning rates (each group's "initial_lr").
    [[nodiscard]] const std::vector<double>& base_lrs() const noexcept { return base_lrs_; }
    [[nodiscard]] std::int64_t last_epoch() const noexcept { return last_epoch_; }

protected:
    /// Checks last_epoch and the groups' "initial_lr" (not the first step: derived classes
    /// call initial_step() once their own members are set).
    GRAFT_INLINE LRScheduler(Optimizer& optimizer, std::int64_t last_epoch, const char* name);
    GRAFT_INLINE void initial_step();
    /// The groups' new learning rates for last_epoch() (PyTorch's get_lr).
    [[nodiscard]] virtual std::vector<double> get_lr() const = 0;

    Optimizer* optimizer_;
    std::vector<double> base_lrs_;
    std::vector<double> last_lr_;
    std::int64_t last_epoch_;
    std::int64_t step_count_ = 0;
};

/// Multiplies each group's lr by gamma every step_size epochs: lr = base_lr *
/// gamma^(epoch / step_size) when nothing else changes the lr. step_size must be positive.
class StepLR : public LRScheduler {
public:
    GRAFT_INLINE StepLR(Optimizer& optimizer, std::int64_t step_size, double gamma = 0.1,
                        std::int64_t last_epoch = -1);

protected:
    [[nodiscard]] GRAFT_INLINE std::vector<double> get_lr() const override;

private:
    std::int64_t step_size_;
    double gamma_;
};

/// Cosine annealing from base_lr to eta_min over T_max epochs (then back up, periodically):
/// lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2 when nothing else
/// changes the lr, computed with PyTorch's recursive form. T_max must be positive.
class CosineAnnealingLR : public LRScheduler {
public:
    GRAFT_INLINE CosineAnnealingLR(Optimizer& optimizer, std::int64_t T_max, double eta_min = 0,
                                   std::int64_t last_epoch = -1);

protected:
    [[nodiscard]] GRAFT_INLINE std::vector<double> get_lr() const override;

private:
    std::int64_t T_max_;
    double eta_min_;
};

}  // namespace graft::optim::lr_scheduler

#if GRAFT_HAS_CODE
#include "graft/optim/impl/lr_scheduler.ipp"
#endif
