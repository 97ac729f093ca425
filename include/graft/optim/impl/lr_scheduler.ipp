#pragma once
// Definitions for graft/optim/lr_scheduler.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/optim/lr_scheduler.hpp"

#include <cmath>
#include <cstddef>
#include <numbers>
#include <vector>

#include "graft/core/error.hpp"

namespace graft::optim::lr_scheduler {

GRAFT_INLINE LRScheduler::LRScheduler(Optimizer& optimizer, std::int64_t last_epoch, const char* name)
    : optimizer_(&optimizer), last_epoch_(last_epoch) {
    using graft::detail::check;
    check(last_epoch >= -1, name, ": last_epoch must be -1 (a new schedule) or a completed epoch, got ", last_epoch);
    auto& groups = optimizer.param_groups();
    if (last_epoch == -1) {
        for (auto& g : groups) g.options["initial_lr"] = g["lr"];
    } else {
        for (std::size_t i = 0; i < groups.size(); ++i)
            check(groups[i].options.count("initial_lr") != 0, name,
                  ": param 'initial_lr' is not specified in param_groups[", i, "] when resuming an optimizer");
    }
    for (auto& g : groups) base_lrs_.push_back(g["initial_lr"]);
}

GRAFT_INLINE void LRScheduler::initial_step() {
    step_count_ = 0;
    step();
}

GRAFT_INLINE void LRScheduler::step() {
    auto& groups = optimizer_->param_groups();
    graft::detail::check(groups.size() == base_lrs_.size(), "lr_scheduler: step: the optimizer has ", groups.size(),
                         " parameter groups but the scheduler was made for ", base_lrs_.size());
    ++step_count_;
    ++last_epoch_;
    const std::vector<double> lrs = get_lr();
    for (std::size_t i = 0; i < groups.size(); ++i) groups[i]["lr"] = lrs[i];
    last_lr_ = lrs;
}

GRAFT_INLINE StepLR::StepLR(Optimizer& optimizer, std::int64_t step_size, double gamma, std::int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch, "StepLR"), step_size_(step_size), gamma_(gamma) {
    graft::detail::check(step_size > 0, "StepLR: step_size must be positive, got ", step_size);
    initial_step();
}

GRAFT_INLINE std::vector<double> StepLR::get_lr() const {
    // PyTorch's recursive form: the current lr, times gamma at every multiple of step_size.
    std::vector<double> r;
    for (const auto& g : optimizer_->param_groups()) {
        const double lr = g["lr"];
        r.push_back(last_epoch_ == 0 || last_epoch_ % step_size_ != 0 ? lr : lr * gamma_);
    }
    return r;
}

GRAFT_INLINE CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, std::int64_t T_max, double eta_min,
                                                  std::int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch, "CosineAnnealingLR"), T_max_(T_max), eta_min_(eta_min) {
    graft::detail::check(T_max > 0, "CosineAnnealingLR: T_max must be positive, got ", T_max);
    initial_step();
}

GRAFT_INLINE std::vector<double> CosineAnnealingLR::get_lr() const {
    constexpr double pi = std::numbers::pi;
    const auto& groups = optimizer_->param_groups();
    const auto e = static_cast<double>(last_epoch_), T = static_cast<double>(T_max_);
    std::vector<double> r;
    for (std::size_t i = 0; i < groups.size(); ++i) {
        const double lr = groups[i]["lr"], base = base_lrs_[i];
        if (last_epoch_ == 0) {
            r.push_back(lr);
        } else if (step_count_ == 1 && last_epoch_ > 0) {
            // Resuming (constructed with last_epoch): the closed form.
            r.push_back(eta_min_ + (base - eta_min_) * (1 + std::cos(e * pi / T)) / 2);
        } else {
            // Python's (last_epoch - 1 - T_max) % (2 T_max) == 0 (a non-negative remainder).
            std::int64_t k = (last_epoch_ - 1 - T_max_) % (2 * T_max_);
            if (k < 0) k += 2 * T_max_;
            if (k == 0)
                r.push_back(lr + (base - eta_min_) * (1 - std::cos(pi / T)) / 2);
            else
                r.push_back((1 + std::cos(pi * e / T)) / (1 + std::cos(pi * (e - 1) / T)) * (lr - eta_min_) + eta_min_);
        }
    }
    return r;
}

}  // namespace graft::optim::lr_scheduler
