#pragma once
// graft::optim::lr_scheduler (torch.optim.lr_scheduler): StepLR, MultiStepLR, ExponentialLR,
// LinearLR, LambdaLR, CosineAnnealingLR, OneCycleLR and SequentialLR, which set each parameter
// group's "lr" at every step() as PyTorch's do (same recursive formulas, so manual changes of a
// group's lr carry on as in PyTorch), and ReduceLROnPlateau, which lowers it when a metric stops
// improving. Each has state_dict / load_state_dict. Manual: docs/optim.md.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graft/optim/optimizer.hpp"

namespace graft::optim::lr_scheduler {

/// A scheduler's state as plain data (PyTorch's scheduler.state_dict()): its attributes under
/// PyTorch's names: numbers in `values` ("last_epoch", "_step_count", "gamma", ...), lists of
/// numbers in `lists` ("base_lrs", "_last_lr", "milestones", ...), words in `strings` ("mode",
/// "anneal_strategy", ...) and, for SequentialLR, the wrapped schedulers' states (PyTorch's
/// "_schedulers"). Integers are stored as doubles (exact up to 2^53).
struct SchedulerStateDict {
    std::map<std::string, double, std::less<>> values;
    std::map<std::string, std::vector<double>, std::less<>> lists;
    std::map<std::string, std::string, std::less<>> strings;
    std::vector<SchedulerStateDict> schedulers;
};

/// One number for every parameter group, or a list with one per group: PyTorch's float-or-list
/// arguments (OneCycleLR's max_lr, base_momentum and max_momentum; ReduceLROnPlateau's min_lr).
/// Implicit on purpose, so that `0.1` and `{0.1, 0.2}` both read as in Python.
struct group_values {
    std::vector<double> values;
    bool is_list = false;

    group_values(double v) : values{v} {}  // NOLINT(google-explicit-constructor)
    group_values(std::vector<double> v) : values(std::move(v)), is_list(true) {}  // NOLINT
    group_values(std::initializer_list<double> v) : values(v), is_list(true) {}  // NOLINT

    /// The values for `groups` groups; a list of another length is a graft::error naming the
    /// scheduler and the argument (PyTorch's "expected 2 values for max_lr, got 3").
    [[nodiscard]] GRAFT_INLINE std::vector<double> expand(std::size_t groups, const char* scheduler,
                                                          const char* argument) const;
};

namespace detail {
class state_reader;  // lr_scheduler.ipp: reads and checks a SchedulerStateDict
}

class SequentialLR;

/// The base of the schedulers (torch.optim.lr_scheduler.LRScheduler). It keeps a reference to
/// the optimizer, which must outlive it (and not be moved). Construction stores each group's
/// "initial_lr" when it has none (when last_epoch == -1; PyTorch's setdefault, so a second
/// scheduler on the same optimizer keeps the first one's) and takes the first step, as PyTorch
/// does. A constructor that fails leaves the optimizer's groups unchanged.
class LRScheduler {
public:
    virtual ~LRScheduler() = default;
    LRScheduler(const LRScheduler&) = delete;
    LRScheduler& operator=(const LRScheduler&) = delete;

    /// Advances one epoch and sets every group's lr. If computing the lrs fails (OneCycleLR
    /// past its total_steps, a LambdaLR function that throws), nothing changes.
    GRAFT_INLINE virtual void step();
    /// The learning rates set by the last step(), one per group.
    [[nodiscard]] const std::vector<double>& get_last_lr() const noexcept { return last_lr_; }
    /// The initial learning rates (each group's "initial_lr").
    [[nodiscard]] const std::vector<double>& base_lrs() const noexcept { return base_lrs_; }
    [[nodiscard]] std::int64_t last_epoch() const noexcept { return last_epoch_; }
    /// The optimizer whose groups this scheduler sets.
    [[nodiscard]] Optimizer& optimizer() const noexcept { return *optimizer_; }
    /// The scheduler's name as in PyTorch ("StepLR"); used in error messages.
    [[nodiscard]] const char* name() const noexcept { return name_; }

    /// PyTorch's state_dict(): "last_epoch", "_step_count", "base_lrs", "_last_lr" and the
    /// scheduler's own attributes (its hyperparameters: "step_size", "gamma", ...). LambdaLR's
    /// functions are not saved (PyTorch saves only callable objects' attributes).
    [[nodiscard]] GRAFT_INLINE virtual SchedulerStateDict state_dict() const;
    /// Restores a state_dict of a scheduler of the same kind on an optimizer with as many
    /// groups; as PyTorch's, the hyperparameters are restored too. A missing or unknown key, a
    /// value out of range or a list of the wrong length is a graft::error and changes nothing.
    /// The groups' lrs are not touched: they are in the optimizer's state_dict.
    GRAFT_INLINE virtual void load_state_dict(const SchedulerStateDict& state_dict);

protected:
    /// Stores the optimizer only: derived constructors check their arguments, then call start().
    GRAFT_INLINE LRScheduler(Optimizer& optimizer, const char* name);
    /// Checks last_epoch, sets or checks the groups' "initial_lr", reads base_lrs and takes the
    /// first step; on failure the groups' options are restored.
    GRAFT_INLINE void start(std::int64_t last_epoch);
    /// PyTorch's _initial_step: the step count restarts and one step is taken.
    GRAFT_INLINE void initial_step();
    /// The groups' new learning rates for last_epoch() (PyTorch's get_lr).
    [[nodiscard]] virtual std::vector<double> get_lr() const = 0;
    /// PyTorch's _get_closed_form_lr, used when SequentialLR restarts this scheduler at a
    /// milestone (PyTorch's step(0)); schedulers without one use get_lr there, as in PyTorch.
    [[nodiscard]] virtual std::optional<std::vector<double>> closed_form_lr() const { return std::nullopt; }
    /// Writes the step's lrs into the groups (OneCycleLR writes the momentum too).
    GRAFT_INLINE virtual void apply_lr(const std::vector<double>& lrs);
    /// The scheduler's own entries of its state_dict, and their loading: load_extra checks them
    /// (throwing graft::error) and returns what commits them once every check has passed.
    virtual void save_extra(SchedulerStateDict& /*sd*/) const {}
    [[nodiscard]] virtual std::function<void()> load_extra(detail::state_reader& /*reader*/) { return {}; }
    /// The number of groups, checked against the scheduler's (a group added later is an error).
    GRAFT_INLINE std::size_t checked_groups(const char* what) const;

    Optimizer* optimizer_;
    const char* name_;
    std::vector<double> base_lrs_;
    std::vector<double> last_lr_;
    std::int64_t last_epoch_ = -1;
    std::int64_t step_count_ = 0;

private:
    friend class SequentialLR;
    /// One step to `epoch` (the next one when empty), with the closed form when given an epoch
    /// and the scheduler has one (PyTorch's step(epoch)).
    GRAFT_INLINE void advance(std::optional<std::int64_t> epoch);
};

/// Multiplies each group's lr by gamma every step_size epochs: lr = base_lr *
/// gamma^(epoch / step_size) when nothing else changes the lr. step_size must be positive.
class StepLR : public LRScheduler {
public:
    GRAFT_INLINE StepLR(Optimizer& optimizer, std::int64_t step_size, double gamma = 0.1,
                        std::int64_t last_epoch = -1);

protected:
    [[nodiscard]] GRAFT_INLINE std::vector<double> get_lr() const override;
    [[nodiscard]] GRAFT_INLINE std::optional<std::vector<double>> closed_form_lr() const override;
    GRAFT_INLINE void save_extra(SchedulerStateDict& sd) const override;
    [[nodiscard]] GRAFT_INLINE std::function<void()> load_extra(detail::state_reader& r) override;

private:
    std::int64_t step_size_;
    double gamma_;
};

/// Multiplies each group's lr by gamma at every milestone epoch (by gamma^k for a milestone
/// given k times): lr = base_lr * gamma^(number of milestones <= epoch) when nothing else
/// changes the lr. The milestones need not be sorted (PyTorch keeps them in a Counter).
class MultiStepLR : public LRScheduler {
public:
    GRAFT_INLINE MultiStepLR(Optimizer& optimizer, std::vector<std::int64_t> milestones, double gamma = 0.1,
                             std::int64_t last_epoch = -1);

protected:
    [[nodiscard]] GRAFT_INLINE std::vector<double> get_lr() const override;
    [[nodiscard]] GRAFT_INLINE std::optional<std::vector<double>> closed_form_lr() const override;
    GRAFT_INLINE void save_extra(SchedulerStateDict& sd) const override;
    [[nodiscard]] GRAFT_INLINE std::function<void()> load_extra(detail::state_reader& r) override;

private:
    std::map<std::int64_t, std::int64_t> milestones_;  // epoch -> how many times it was given
    double gamma_;
};

/// Multiplies each group's lr by gamma every epoch: lr = base_lr * gamma^epoch when nothing
/// else changes the lr.
class ExponentialLR : public LRScheduler {
public:
    GRAFT_INLINE ExponentialLR(Optimizer& optimizer, double gamma, std::int64_t last_epoch = -1);

protected:
    [[nodiscard]] GRAFT_INLINE std::vector<double> get_lr() const override;
    [[nodiscard]] GRAFT_INLINE std::optional<std::vector<double>> closed_form_lr() const override;
    GRAFT_INLINE void save_extra(SchedulerStateDict& sd) const override;
    [[nodiscard]] GRAFT_INLINE std::function<void()> load_extra(detail::state_reader& r) override;

private:
    double gamma_;
};

/// Scales each group's lr by a factor that goes linearly from start_factor to end_factor over
/// total_iters epochs, then stays: lr = base_lr * (start_factor + (end_factor - start_factor) *
/// min(epoch, total_iters) / total_iters) when nothing else changes the lr. Errors: start_factor
/// outside (0, 1] (PyTorch 1.13 accepts 0, then divides by zero), end_factor outside [0, 1],
/// total_iters < 1.
class LinearLR : public LRScheduler {
public:
    GRAFT_INLINE LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0,
                          std::int64_t total_iters = 5, std::int64_t last_epoch = -1);

protected:
    [[nodiscard]] GRAFT_INLINE std::vector<double> get_lr() const override;
    [[nodiscard]] GRAFT_INLINE std::optional<std::vector<double>> closed_form_lr() const override;
    GRAFT_INLINE void save_extra(SchedulerStateDict& sd) const override;
    [[nodiscard]] GRAFT_INLINE std::function<void()> load_extra(detail::state_reader& r) override;

private:
    double start_factor_, end_factor_;
    std::int64_t total_iters_;
};

/// lr = base_lr * lr_lambda(epoch), with one function for all groups or one per group. The
/// functions are not part of the state_dict.
class LambdaLR : public LRScheduler {
public:
    using lambda = std::function<double(std::int64_t)>;
    GRAFT_INLINE LambdaLR(Optimizer& optimizer, lambda lr_lambda, std::int64_t last_epoch = -1);
    /// One function per group: a list of another length is PyTorch's "Expected 2 lr_lambdas, but got 3".
    GRAFT_INLINE LambdaLR(Optimizer& optimizer, std::vector<lambda> lr_lambdas, std::int64_t last_epoch = -1);

protected:
    [[nodiscard]] GRAFT_INLINE std::vector<double> get_lr() const override;

private:
    std::vector<lambda> lr_lambdas_;
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
    [[nodiscard]] GRAFT_INLINE std::optional<std::vector<double>> closed_form_lr() const override;
    GRAFT_INLINE void save_extra(SchedulerStateDict& sd) const override;
    [[nodiscard]] GRAFT_INLINE std::function<void()> load_extra(detail::state_reader& r) override;

private:
    std::int64_t T_max_;
    double eta_min_;
};

/// The 1cycle policy (torch.optim.lr_scheduler.OneCycleLR), stepped once per batch: the lr goes
/// from max_lr / div_factor up to max_lr over the first pct_start of total_steps, then down to
/// max_lr / (div_factor * final_div_factor) (three_phase: back to the initial lr first, then down
/// to the minimum), annealing by cosine or linearly ("cos" / "linear"). With cycle_momentum the
/// momentum moves the other way between max_momentum and base_momentum: the group's "momentum"
/// (SGD, RMSprop) or, for an optimizer with betas (Adam, AdamW), "beta1". It writes the groups'
/// "initial_lr", "max_lr", "min_lr" and, with cycle_momentum, "max_momentum" and "base_momentum",
/// as PyTorch does. total_steps, or epochs * steps_per_epoch, bounds the steps: one more step is
/// PyTorch's error ("Tried to step 12 times. The specified number of total steps is 10").
/// Errors (PyTorch's): neither total_steps nor epochs and steps_per_epoch, a value not
/// positive, pct_start outside [0, 1], another anneal_strategy, a list of the wrong length,
/// cycle_momentum on an optimizer without momentum or betas; and (graft's) a first phase of
/// zero length (pct_start * total_steps == 1), where PyTorch divides by zero.
class OneCycleLR : public LRScheduler {
public:
    GRAFT_INLINE OneCycleLR(Optimizer& optimizer, group_values max_lr,
                            std::optional<std::int64_t> total_steps = std::nullopt,
                            std::optional<std::int64_t> epochs = std::nullopt,
                            std::optional<std::int64_t> steps_per_epoch = std::nullopt, double pct_start = 0.3,
                            std::string_view anneal_strategy = "cos", bool cycle_momentum = true,
                            group_values base_momentum = 0.85, group_values max_momentum = 0.95,
                            double div_factor = 25., double final_div_factor = 1e4, bool three_phase = false,
                            std::int64_t last_epoch = -1);

    [[nodiscard]] std::int64_t total_steps() const noexcept { return total_steps_; }

protected:
    [[nodiscard]] GRAFT_INLINE std::vector<double> get_lr() const override;
    GRAFT_INLINE void apply_lr(const std::vector<double>& lrs) override;
    GRAFT_INLINE void save_extra(SchedulerStateDict& sd) const override;
    [[nodiscard]] GRAFT_INLINE std::function<void()> load_extra(detail::state_reader& r) override;

private:
    /// A phase of the schedule: it ends at end_step and anneals between two group options.
    struct phase {
        double end_step;
        const char* start_lr;
        const char* end_lr;
        const char* start_momentum;
        const char* end_momentum;
    };
    [[nodiscard]] GRAFT_INLINE static std::vector<phase> make_phases(std::vector<double> end_steps);
    /// The lr and momentum of `group` at last_epoch().
    [[nodiscard]] GRAFT_INLINE std::pair<double, double> at(const ParamGroup& group) const;

    std::int64_t total_steps_ = 0;
    std::vector<phase> phases_;
    bool linear_ = false;
    bool cycle_momentum_ = true;
    bool use_beta1_ = false;
};

/// Runs schedulers one after another: schedulers[i] from milestones[i - 1] on (restarted there
/// from epoch 0, with its closed form when it has one, as PyTorch's step(0)). The schedulers are
/// referenced, not owned: they must outlive it, be built on the same optimizer, and not be
/// SequentialLRs themselves. As PyTorch, construction resets every group's lr to its
/// "initial_lr", moves every scheduler one epoch back and restarts the first. Errors (PyTorch's):
/// a scheduler on another optimizer; not exactly one milestone fewer than schedulers; and
/// (graft's) no scheduler, milestones not sorted, a nested SequentialLR.
class SequentialLR : public LRScheduler {
public:
    GRAFT_INLINE SequentialLR(Optimizer& optimizer, std::vector<std::reference_wrapper<LRScheduler>> schedulers,
                              std::vector<std::int64_t> milestones, std::int64_t last_epoch = -1);

    GRAFT_INLINE void step() override;
    /// "last_epoch", "_milestones", "_last_lr" (PyTorch's SequentialLR has no base_lrs or
    /// _step_count) and each scheduler's state_dict in `schedulers`.
    [[nodiscard]] GRAFT_INLINE SchedulerStateDict state_dict() const override;
    GRAFT_INLINE void load_state_dict(const SchedulerStateDict& state_dict) override;

protected:
    [[nodiscard]] std::vector<double> get_lr() const override { return last_lr_; }

private:
    std::vector<LRScheduler*> schedulers_;
    std::vector<std::int64_t> milestones_;
};

/// Lowers each group's lr by `factor` (not below its min_lr) when the metric given to step() has
/// not improved for more than `patience` epochs, then waits `cooldown` epochs
/// (torch.optim.lr_scheduler.ReduceLROnPlateau). mode "min" or "max"; an improvement is a
/// metric below best * (1 - threshold) ("rel") or best - threshold ("abs") in mode min (above
/// best * (1 + threshold) or best + threshold in mode max); a change smaller than eps is not
/// made. Errors (PyTorch's): factor >= 1, an unknown mode or threshold_mode, a min_lr list of
/// the wrong length. Not an LRScheduler (as in PyTorch 1.13): it cannot be put in a SequentialLR.
class ReduceLROnPlateau {
public:
    GRAFT_INLINE explicit ReduceLROnPlateau(Optimizer& optimizer, std::string_view mode = "min", double factor = 0.1,
                                            std::int64_t patience = 10, double threshold = 1e-4,
                                            std::string_view threshold_mode = "rel", std::int64_t cooldown = 0,
                                            group_values min_lr = 0.0, double eps = 1e-8);
    ReduceLROnPlateau(const ReduceLROnPlateau&) = delete;
    ReduceLROnPlateau& operator=(const ReduceLROnPlateau&) = delete;

    /// One epoch with this value of the metric (NaN never improves).
    GRAFT_INLINE void step(double metric);
    /// The metric as a one-element tensor (PyTorch's float(metrics)).
    GRAFT_INLINE void step(const Tensor& metric);

    /// The groups' lrs after the last step() (their lrs at construction before the first).
    [[nodiscard]] const std::vector<double>& get_last_lr() const noexcept { return last_lr_; }
    [[nodiscard]] std::int64_t last_epoch() const noexcept { return last_epoch_; }
    [[nodiscard]] double best() const noexcept { return best_; }
    [[nodiscard]] std::int64_t num_bad_epochs() const noexcept { return num_bad_epochs_; }
    [[nodiscard]] std::int64_t cooldown_counter() const noexcept { return cooldown_counter_; }
    [[nodiscard]] bool in_cooldown() const noexcept { return cooldown_counter_ > 0; }

    /// PyTorch's attributes: "factor", "min_lrs", "patience", "cooldown", "cooldown_counter",
    /// "mode", "threshold", "threshold_mode", "best", "num_bad_epochs", "mode_worse", "eps",
    /// "last_epoch", "_last_lr".
    [[nodiscard]] GRAFT_INLINE SchedulerStateDict state_dict() const;
    /// Restores a state_dict (hyperparameters included, as PyTorch); errors as LRScheduler's.
    GRAFT_INLINE void load_state_dict(const SchedulerStateDict& state_dict);

private:
    [[nodiscard]] GRAFT_INLINE bool is_better(double a, double best) const;

    Optimizer* optimizer_;
    double factor_;
    std::vector<double> min_lrs_;
    std::int64_t patience_, cooldown_, cooldown_counter_ = 0;
    bool maximize_ = false;     // mode "max"
    bool abs_threshold_ = false;  // threshold_mode "abs"
    double threshold_, eps_;
    double best_;
    std::int64_t num_bad_epochs_ = 0;
    std::int64_t last_epoch_ = 0;
    std::vector<double> last_lr_;
};

}  // namespace graft::optim::lr_scheduler

#if GRAFT_HAS_CODE
#include "graft/optim/impl/lr_scheduler.ipp"
#endif
