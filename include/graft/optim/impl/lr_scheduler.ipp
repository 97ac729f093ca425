#pragma once
// Definitions for graft/optim/lr_scheduler.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/optim/lr_scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numbers>
#include <set>
#include <string>
#include <vector>

#include "graft/core/error.hpp"

namespace graft::optim::lr_scheduler {
namespace detail {

/// Reads the entries of a SchedulerStateDict, checking each, and remembers which it read so
/// that finish() can reject the rest. Nothing is changed until every check has passed.
class state_reader {
public:
    state_reader(const SchedulerStateDict& sd, std::string op) : sd_(sd), op_(std::move(op)) {}

    [[nodiscard]] double number(std::string_view key) {
        auto it = sd_.values.find(key);
        graft::detail::check(it != sd_.values.end(), op_, ": the state_dict lacks the value '", key, "'");
        values_.emplace(key);
        return it->second;
    }
    /// A whole number >= min (and within +-2^53, where doubles hold integers exactly).
    [[nodiscard]] std::int64_t integer(std::string_view key, std::int64_t min = -kMaxExact) {
        return as_integer(key, number(key), min);
    }
    [[nodiscard]] bool flag(std::string_view key) {
        const double v = number(key);
        graft::detail::check(v == 0 || v == 1, op_, ": '", key, "' is a flag and must be 0 or 1, got ", v);
        return v != 0;
    }
    /// A list, of `size` elements when given.
    [[nodiscard]] std::vector<double> list(std::string_view key, std::optional<std::size_t> size = std::nullopt) {
        auto it = sd_.lists.find(key);
        graft::detail::check(it != sd_.lists.end(), op_, ": the state_dict lacks the list '", key, "'");
        lists_.emplace(key);
        if (size)
            graft::detail::check(it->second.size() == *size, op_, ": '", key, "' has ", it->second.size(),
                                 " elements, expected ", *size, " (one per parameter group)");
        return it->second;
    }
    [[nodiscard]] std::vector<std::int64_t> integer_list(std::string_view key,
                                                         std::optional<std::size_t> size = std::nullopt) {
        std::vector<std::int64_t> r;
        for (double v : list(key, size)) r.push_back(as_integer(key, v, -kMaxExact));
        return r;
    }
    /// One of `allowed`.
    [[nodiscard]] std::string word(std::string_view key, std::initializer_list<std::string_view> allowed) {
        auto it = sd_.strings.find(key);
        graft::detail::check(it != sd_.strings.end(), op_, ": the state_dict lacks the string '", key, "'");
        strings_.emplace(key);
        bool ok = false;
        for (std::string_view a : allowed) ok = ok || it->second == a;
        graft::detail::check(ok, op_, ": '", key, "' has the unknown value '", it->second, "'");
        return it->second;
    }
    /// Every entry must have been read; nested scheduler states only where allowed (SequentialLR).
    void finish(bool nested = false) const {
        for (const auto& [key, v] : sd_.values)
            graft::detail::check(values_.count(key) != 0, op_, ": unknown value '", key, "'");
        for (const auto& [key, v] : sd_.lists)
            graft::detail::check(lists_.count(key) != 0, op_, ": unknown list '", key, "'");
        for (const auto& [key, v] : sd_.strings)
            graft::detail::check(strings_.count(key) != 0, op_, ": unknown string '", key, "'");
        if (!nested)
            graft::detail::check(sd_.schedulers.empty(), op_, ": unexpected nested scheduler states (",
                                 sd_.schedulers.size(), "); only SequentialLR has them");
    }
    [[nodiscard]] const std::string& op() const noexcept { return op_; }

private:
    static constexpr std::int64_t kMaxExact = std::int64_t{1} << 53;

    [[nodiscard]] std::int64_t as_integer(std::string_view key, double v, std::int64_t min) const {
        graft::detail::check(v == std::floor(v) && v >= static_cast<double>(min) &&
                                 std::fabs(v) <= static_cast<double>(kMaxExact),
                             op_, ": '", key, "' must be an integer >= ", min, ", got ", v);
        return static_cast<std::int64_t>(v);
    }

    const SchedulerStateDict& sd_;
    std::string op_;
    std::set<std::string, std::less<>> values_, lists_, strings_;
};

/// Python's a // b for b > 0 (rounds toward minus infinity).
[[nodiscard]] inline std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    const std::int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

/// Python's max(a, b): a unless b compares greater.
[[nodiscard]] inline double py_max(double a, double b) { return b > a ? b : a; }

/// Every group's options, to restore them when a constructor fails half-way.
[[nodiscard]] inline std::vector<options_map> save_options(const Optimizer& optimizer) {
    std::vector<options_map> r;
    for (const auto& g : optimizer.param_groups()) r.push_back(g.options);
    return r;
}
inline void restore_options(Optimizer& optimizer, std::vector<options_map>& saved) noexcept {
    auto& groups = optimizer.param_groups();
    for (std::size_t i = 0; i < groups.size() && i < saved.size(); ++i) groups[i].options.swap(saved[i]);
}

}  // namespace detail

GRAFT_INLINE std::vector<double> group_values::expand(std::size_t groups, const char* scheduler,
                                                      const char* argument) const {
    if (!is_list) return std::vector<double>(groups, values.front());
    graft::detail::check(values.size() == groups, scheduler, ": expected ", groups, " values for ", argument,
                         " (one per parameter group), got ", values.size());
    return values;
}

// ---- LRScheduler

GRAFT_INLINE LRScheduler::LRScheduler(Optimizer& optimizer, const char* name) : optimizer_(&optimizer), name_(name) {}

GRAFT_INLINE void LRScheduler::start(std::int64_t last_epoch) {
    using graft::detail::check;
    check(last_epoch >= -1, name_, ": last_epoch must be -1 (a new schedule) or a completed epoch, got ", last_epoch);
    auto& groups = optimizer_->param_groups();
    if (last_epoch != -1)
        for (std::size_t i = 0; i < groups.size(); ++i)
            check(groups[i].options.count("initial_lr") != 0, name_,
                  ": param 'initial_lr' is not specified in param_groups[", i, "] when resuming an optimizer");
    std::vector<options_map> saved = detail::save_options(*optimizer_);
    try {
        if (last_epoch == -1)
            for (auto& g : groups) g.options.emplace("initial_lr", g["lr"]);  // PyTorch's setdefault
        base_lrs_.clear();
        for (const auto& g : groups) base_lrs_.push_back(g["initial_lr"]);
        last_epoch_ = last_epoch;
        initial_step();
    } catch (...) {
        detail::restore_options(*optimizer_, saved);
        throw;
    }
}

GRAFT_INLINE void LRScheduler::initial_step() {
    step_count_ = 0;
    step();
}

GRAFT_INLINE std::size_t LRScheduler::checked_groups(const char* what) const {
    const std::size_t n = optimizer_->param_groups().size();
    graft::detail::check(n == base_lrs_.size(), name_, ": ", what, ": the optimizer has ", n,
                         " parameter groups but the scheduler was made for ", base_lrs_.size());
    return n;
}

GRAFT_INLINE void LRScheduler::advance(std::optional<std::int64_t> epoch) {
    const std::size_t n = checked_groups("step");
    const std::int64_t saved_epoch = last_epoch_, saved_count = step_count_;
    ++step_count_;
    last_epoch_ = epoch ? *epoch : last_epoch_ + 1;
    std::vector<double> lrs;
    try {
        std::optional<std::vector<double>> closed;
        if (epoch) closed = closed_form_lr();
        lrs = closed ? std::move(*closed) : get_lr();
        graft::detail::check(lrs.size() == n, name_, ": internal error: ", lrs.size(), " lrs for ", n, " groups");
    } catch (...) {
        last_epoch_ = saved_epoch;
        step_count_ = saved_count;
        throw;
    }
    apply_lr(lrs);  // writes existing options only: does not throw
    last_lr_ = std::move(lrs);
}

GRAFT_INLINE void LRScheduler::step() { advance(std::nullopt); }

GRAFT_INLINE void LRScheduler::apply_lr(const std::vector<double>& lrs) {
    auto& groups = optimizer_->param_groups();
    for (std::size_t i = 0; i < groups.size(); ++i) groups[i]["lr"] = lrs[i];
}

GRAFT_INLINE SchedulerStateDict LRScheduler::state_dict() const {
    SchedulerStateDict sd;
    sd.values["last_epoch"] = static_cast<double>(last_epoch_);
    sd.values["_step_count"] = static_cast<double>(step_count_);
    sd.lists["base_lrs"] = base_lrs_;
    sd.lists["_last_lr"] = last_lr_;
    save_extra(sd);
    return sd;
}

GRAFT_INLINE void LRScheduler::load_state_dict(const SchedulerStateDict& sd) {
    detail::state_reader r(sd, graft::detail::concat(name_, ": load_state_dict"));
    const std::size_t n = checked_groups("load_state_dict");
    const std::int64_t last_epoch = r.integer("last_epoch", -1);
    const std::int64_t step_count = r.integer("_step_count", 0);
    std::vector<double> base_lrs = r.list("base_lrs", n);
    std::vector<double> last_lr = r.list("_last_lr", n);
    const std::function<void()> commit = load_extra(r);
    r.finish();
    last_epoch_ = last_epoch;
    step_count_ = step_count;
    base_lrs_ = std::move(base_lrs);
    last_lr_ = std::move(last_lr);
    if (commit) commit();
}

// ---- StepLR

GRAFT_INLINE StepLR::StepLR(Optimizer& optimizer, std::int64_t step_size, double gamma, std::int64_t last_epoch)
    : LRScheduler(optimizer, "StepLR"), step_size_(step_size), gamma_(gamma) {
    graft::detail::check(step_size > 0, "StepLR: step_size must be positive, got ", step_size);
    start(last_epoch);
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

GRAFT_INLINE std::optional<std::vector<double>> StepLR::closed_form_lr() const {
    std::vector<double> r;
    const auto k = static_cast<double>(detail::floor_div(last_epoch_, step_size_));
    for (double base : base_lrs_) r.push_back(base * std::pow(gamma_, k));
    return r;
}

GRAFT_INLINE void StepLR::save_extra(SchedulerStateDict& sd) const {
    sd.values["step_size"] = static_cast<double>(step_size_);
    sd.values["gamma"] = gamma_;
}

GRAFT_INLINE std::function<void()> StepLR::load_extra(detail::state_reader& r) {
    const std::int64_t step_size = r.integer("step_size", 1);
    const double gamma = r.number("gamma");
    return [this, step_size, gamma] {
        step_size_ = step_size;
        gamma_ = gamma;
    };
}

// ---- MultiStepLR

GRAFT_INLINE MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<std::int64_t> milestones, double gamma,
                                      std::int64_t last_epoch)
    : LRScheduler(optimizer, "MultiStepLR"), gamma_(gamma) {
    for (std::int64_t m : milestones) ++milestones_[m];
    start(last_epoch);
}

GRAFT_INLINE std::vector<double> MultiStepLR::get_lr() const {
    auto it = milestones_.find(last_epoch_);
    std::vector<double> r;
    for (const auto& g : optimizer_->param_groups()) {
        const double lr = g["lr"];
        r.push_back(it == milestones_.end() ? lr : lr * std::pow(gamma_, static_cast<double>(it->second)));
    }
    return r;
}

GRAFT_INLINE std::optional<std::vector<double>> MultiStepLR::closed_form_lr() const {
    // bisect_right over the sorted milestones (with repeats): how many are <= last_epoch.
    std::int64_t k = 0;
    for (const auto& [m, count] : milestones_)
        if (m <= last_epoch_) k += count;
    std::vector<double> r;
    for (double base : base_lrs_) r.push_back(base * std::pow(gamma_, static_cast<double>(k)));
    return r;
}

GRAFT_INLINE void MultiStepLR::save_extra(SchedulerStateDict& sd) const {
    std::vector<double> m;
    for (const auto& [epoch, count] : milestones_)
        for (std::int64_t i = 0; i < count; ++i) m.push_back(static_cast<double>(epoch));
    sd.lists["milestones"] = std::move(m);
    sd.values["gamma"] = gamma_;
}

GRAFT_INLINE std::function<void()> MultiStepLR::load_extra(detail::state_reader& r) {
    std::map<std::int64_t, std::int64_t> milestones;
    for (std::int64_t m : r.integer_list("milestones")) ++milestones[m];
    const double gamma = r.number("gamma");
    return [this, milestones = std::move(milestones), gamma]() mutable {
        milestones_ = std::move(milestones);
        gamma_ = gamma;
    };
}

// ---- ExponentialLR

GRAFT_INLINE ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma, std::int64_t last_epoch)
    : LRScheduler(optimizer, "ExponentialLR"), gamma_(gamma) {
    start(last_epoch);
}

GRAFT_INLINE std::vector<double> ExponentialLR::get_lr() const {
    std::vector<double> r;
    for (const auto& g : optimizer_->param_groups()) r.push_back(last_epoch_ == 0 ? g["lr"] : g["lr"] * gamma_);
    return r;
}

GRAFT_INLINE std::optional<std::vector<double>> ExponentialLR::closed_form_lr() const {
    std::vector<double> r;
    for (double base : base_lrs_) r.push_back(base * std::pow(gamma_, static_cast<double>(last_epoch_)));
    return r;
}

GRAFT_INLINE void ExponentialLR::save_extra(SchedulerStateDict& sd) const { sd.values["gamma"] = gamma_; }

GRAFT_INLINE std::function<void()> ExponentialLR::load_extra(detail::state_reader& r) {
    const double gamma = r.number("gamma");
    return [this, gamma] { gamma_ = gamma; };
}

// ---- LinearLR

GRAFT_INLINE LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor,
                                std::int64_t total_iters, std::int64_t last_epoch)
    : LRScheduler(optimizer, "LinearLR"), start_factor_(start_factor), end_factor_(end_factor),
      total_iters_(total_iters) {
    using graft::detail::check;
    check(start_factor > 0 && start_factor <= 1,
          "LinearLR: Starting multiplicative factor expected to be greater than 0 and less or equal to 1, got ",
          start_factor);
    check(end_factor >= 0 && end_factor <= 1,
          "LinearLR: Ending multiplicative factor expected to be between 0 and 1, got ", end_factor);
    check(total_iters >= 1, "LinearLR: total_iters must be positive, got ", total_iters);
    start(last_epoch);
}

GRAFT_INLINE std::vector<double> LinearLR::get_lr() const {
    std::vector<double> r;
    const double s = start_factor_, e = end_factor_;
    for (const auto& g : optimizer_->param_groups()) {
        const double lr = g["lr"];
        if (last_epoch_ == 0)
            r.push_back(lr * s);
        else if (last_epoch_ > total_iters_)
            r.push_back(lr);
        else  // the ratio of this epoch's factor to the last one's
            r.push_back(lr * (1. + (e - s) / (static_cast<double>(total_iters_) * s +
                                              static_cast<double>(last_epoch_ - 1) * (e - s))));
    }
    return r;
}

GRAFT_INLINE std::optional<std::vector<double>> LinearLR::closed_form_lr() const {
    std::vector<double> r;
    const auto k = static_cast<double>(std::min(total_iters_, last_epoch_));
    for (double base : base_lrs_)
        r.push_back(base * (start_factor_ + (end_factor_ - start_factor_) * k / static_cast<double>(total_iters_)));
    return r;
}

GRAFT_INLINE void LinearLR::save_extra(SchedulerStateDict& sd) const {
    sd.values["start_factor"] = start_factor_;
    sd.values["end_factor"] = end_factor_;
    sd.values["total_iters"] = static_cast<double>(total_iters_);
}

GRAFT_INLINE std::function<void()> LinearLR::load_extra(detail::state_reader& r) {
    const double s = r.number("start_factor"), e = r.number("end_factor");
    const std::int64_t total = r.integer("total_iters", 1);
    graft::detail::check(s > 0 && s <= 1 && e >= 0 && e <= 1, r.op(), ": start_factor ", s, " or end_factor ", e,
                         " out of range");
    return [this, s, e, total] {
        start_factor_ = s;
        end_factor_ = e;
        total_iters_ = total;
    };
}

// ---- LambdaLR

GRAFT_INLINE LambdaLR::LambdaLR(Optimizer& optimizer, lambda lr_lambda, std::int64_t last_epoch)
    : LRScheduler(optimizer, "LambdaLR") {
    graft::detail::check(static_cast<bool>(lr_lambda), "LambdaLR: lr_lambda is an empty function");
    lr_lambdas_.assign(optimizer.param_groups().size(), lr_lambda);
    start(last_epoch);
}

GRAFT_INLINE LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<lambda> lr_lambdas, std::int64_t last_epoch)
    : LRScheduler(optimizer, "LambdaLR"), lr_lambdas_(std::move(lr_lambdas)) {
    using graft::detail::check;
    check(lr_lambdas_.size() == optimizer.param_groups().size(), "LambdaLR: Expected ",
          optimizer.param_groups().size(), " lr_lambdas, but got ", lr_lambdas_.size());
    for (std::size_t i = 0; i < lr_lambdas_.size(); ++i)
        check(static_cast<bool>(lr_lambdas_[i]), "LambdaLR: lr_lambdas[", i, "] is an empty function");
    start(last_epoch);
}

GRAFT_INLINE std::vector<double> LambdaLR::get_lr() const {
    std::vector<double> r;
    for (std::size_t i = 0; i < base_lrs_.size(); ++i) r.push_back(base_lrs_[i] * lr_lambdas_[i](last_epoch_));
    return r;
}

// ---- CosineAnnealingLR

GRAFT_INLINE CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, std::int64_t T_max, double eta_min,
                                                  std::int64_t last_epoch)
    : LRScheduler(optimizer, "CosineAnnealingLR"), T_max_(T_max), eta_min_(eta_min) {
    graft::detail::check(T_max > 0, "CosineAnnealingLR: T_max must be positive, got ", T_max);
    start(last_epoch);
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

GRAFT_INLINE std::optional<std::vector<double>> CosineAnnealingLR::closed_form_lr() const {
    constexpr double pi = std::numbers::pi;
    std::vector<double> r;
    for (double base : base_lrs_)
        r.push_back(eta_min_ + (base - eta_min_) *
                                   (1 + std::cos(pi * static_cast<double>(last_epoch_) / static_cast<double>(T_max_))) /
                                   2);
    return r;
}

GRAFT_INLINE void CosineAnnealingLR::save_extra(SchedulerStateDict& sd) const {
    sd.values["T_max"] = static_cast<double>(T_max_);
    sd.values["eta_min"] = eta_min_;
}

GRAFT_INLINE std::function<void()> CosineAnnealingLR::load_extra(detail::state_reader& r) {
    const std::int64_t T_max = r.integer("T_max", 1);
    const double eta_min = r.number("eta_min");
    return [this, T_max, eta_min] {
        T_max_ = T_max;
        eta_min_ = eta_min;
    };
}

// ---- OneCycleLR

GRAFT_INLINE std::vector<OneCycleLR::phase> OneCycleLR::make_phases(std::vector<double> end_steps) {
    if (end_steps.size() == 3)
        return {{end_steps[0], "initial_lr", "max_lr", "max_momentum", "base_momentum"},
                {end_steps[1], "max_lr", "initial_lr", "base_momentum", "max_momentum"},
                {end_steps[2], "initial_lr", "min_lr", "max_momentum", "max_momentum"}};
    return {{end_steps[0], "initial_lr", "max_lr", "max_momentum", "base_momentum"},
            {end_steps[1], "max_lr", "min_lr", "base_momentum", "max_momentum"}};
}

GRAFT_INLINE OneCycleLR::OneCycleLR(Optimizer& optimizer, group_values max_lr, std::optional<std::int64_t> total_steps,
                                    std::optional<std::int64_t> epochs, std::optional<std::int64_t> steps_per_epoch,
                                    double pct_start, std::string_view anneal_strategy, bool cycle_momentum,
                                    group_values base_momentum, group_values max_momentum, double div_factor,
                                    double final_div_factor, bool three_phase, std::int64_t last_epoch)
    : LRScheduler(optimizer, "OneCycleLR"), cycle_momentum_(cycle_momentum) {
    using graft::detail::check;
    if (total_steps) {
        check(*total_steps > 0, "OneCycleLR: Expected positive integer total_steps, but got ", *total_steps);
        total_steps_ = *total_steps;
    } else {
        check(epochs && steps_per_epoch,
              "OneCycleLR: You must define either total_steps OR (epochs AND steps_per_epoch)");
        check(*epochs > 0, "OneCycleLR: Expected positive integer epochs, but got ", *epochs);
        check(*steps_per_epoch > 0, "OneCycleLR: Expected positive integer steps_per_epoch, but got ",
              *steps_per_epoch);
        check(*epochs <= std::numeric_limits<std::int64_t>::max() / *steps_per_epoch,
              "OneCycleLR: epochs * steps_per_epoch overflows");
        total_steps_ = *epochs * *steps_per_epoch;
    }
    check(pct_start >= 0 && pct_start <= 1, "OneCycleLR: Expected float between 0 and 1 pct_start, but got ",
          pct_start);
    check(anneal_strategy == "cos" || anneal_strategy == "linear",
          "OneCycleLR: anneal_strategy must by one of 'cos' or 'linear', instead got ", anneal_strategy);
    linear_ = anneal_strategy == "linear";
    const auto T = static_cast<double>(total_steps_);
    phases_ = three_phase ? make_phases({pct_start * T - 1, 2 * pct_start * T - 2, T - 1})
                          : make_phases({pct_start * T - 1, T - 1});
    auto& groups = optimizer.param_groups();
    const std::vector<double> max_lrs = max_lr.expand(groups.size(), "OneCycleLR", "max_lr");
    std::vector<double> max_ms, base_ms;
    if (cycle_momentum) {
        const options_map& d = optimizer.defaults();
        check(d.count("momentum") != 0 || d.count("beta1") != 0,
              "OneCycleLR: optimizer must support momentum with `cycle_momentum` option enabled (", optimizer.name(),
              " has neither 'momentum' nor betas)");
        use_beta1_ = d.count("beta1") != 0;
        max_ms = max_momentum.expand(groups.size(), "OneCycleLR", "max_momentum");
        base_ms = base_momentum.expand(groups.size(), "OneCycleLR", "base_momentum");
    }
    if (last_epoch != -1) {
        std::vector<const char*> keys{"max_lr", "min_lr"};
        if (cycle_momentum) keys.insert(keys.end(), {"max_momentum", "base_momentum"});
        for (std::size_t i = 0; i < groups.size(); ++i)
            for (const char* key : keys)
                check(groups[i].options.count(key) != 0, "OneCycleLR: param '", key,
                      "' is not specified in param_groups[", i, "] when resuming an optimizer");
    }
    std::vector<options_map> saved = detail::save_options(optimizer);
    try {
        if (last_epoch == -1)
            for (std::size_t i = 0; i < groups.size(); ++i) {
                auto& o = groups[i].options;
                o["initial_lr"] = max_lrs[i] / div_factor;
                o["max_lr"] = max_lrs[i];
                o["min_lr"] = o["initial_lr"] / final_div_factor;
                if (cycle_momentum) {
                    groups[i][use_beta1_ ? "beta1" : "momentum"] = max_ms[i];
                    o["max_momentum"] = max_ms[i];
                    o["base_momentum"] = base_ms[i];
                }
            }
        start(last_epoch);
    } catch (...) {
        detail::restore_options(optimizer, saved);
        throw;
    }
}

GRAFT_INLINE std::pair<double, double> OneCycleLR::at(const ParamGroup& group) const {
    const auto step = static_cast<double>(last_epoch_);
    double start_step = 0;
    for (std::size_t i = 0; i < phases_.size(); ++i) {
        const phase& ph = phases_[i];
        if (step <= ph.end_step || i + 1 == phases_.size()) {
            graft::detail::check(ph.end_step != start_step, "OneCycleLR: step ", last_epoch_, " falls in phase ", i,
                                 " of the schedule, which has zero length (it ends at step ", ph.end_step,
                                 " where it starts); choose another pct_start (PyTorch divides by zero here)");
            const double pct = (step - start_step) / (ph.end_step - start_step);
            auto anneal = [&](double from, double to) {
                if (linear_) return (to - from) * pct + from;
                const double cos_out = std::cos(std::numbers::pi * pct) + 1;
                return to + (from - to) / 2.0 * cos_out;
            };
            const double lr = anneal(group[ph.start_lr], group[ph.end_lr]);
            const double momentum = cycle_momentum_ ? anneal(group[ph.start_momentum], group[ph.end_momentum]) : 0.0;
            return {lr, momentum};
        }
        start_step = ph.end_step;
    }
    return {0.0, 0.0};  // not reached: the last phase always matches
}

GRAFT_INLINE std::vector<double> OneCycleLR::get_lr() const {
    graft::detail::check(last_epoch_ <= total_steps_, "OneCycleLR: Tried to step ", last_epoch_ + 1,
                         " times. The specified number of total steps is ", total_steps_);
    std::vector<double> r;
    for (const auto& g : optimizer_->param_groups()) r.push_back(at(g).first);
    return r;
}

GRAFT_INLINE void OneCycleLR::apply_lr(const std::vector<double>& lrs) {
    LRScheduler::apply_lr(lrs);
    if (!cycle_momentum_) return;
    for (auto& g : optimizer_->param_groups()) g[use_beta1_ ? "beta1" : "momentum"] = at(g).second;
}

GRAFT_INLINE void OneCycleLR::save_extra(SchedulerStateDict& sd) const {
    sd.values["total_steps"] = static_cast<double>(total_steps_);
    std::vector<double> ends;
    for (const auto& ph : phases_) ends.push_back(ph.end_step);
    sd.lists["_schedule_phases"] = std::move(ends);
    sd.strings["anneal_strategy"] = linear_ ? "linear" : "cos";
    sd.values["cycle_momentum"] = cycle_momentum_ ? 1.0 : 0.0;
    sd.values["use_beta1"] = use_beta1_ ? 1.0 : 0.0;
}

GRAFT_INLINE std::function<void()> OneCycleLR::load_extra(detail::state_reader& r) {
    using graft::detail::check;
    const std::int64_t total = r.integer("total_steps", 1);
    std::vector<double> ends = r.list("_schedule_phases");
    check(ends.size() == 2 || ends.size() == 3, r.op(),
          ": '_schedule_phases' must hold the end steps of 2 or 3 phases, got ", ends.size());
    for (double e : ends) check(std::isfinite(e), r.op(), ": '_schedule_phases' holds ", e);
    const bool linear = r.word("anneal_strategy", {"cos", "linear"}) == "linear";
    const bool cycle = r.flag("cycle_momentum"), beta1 = r.flag("use_beta1");
    if (cycle)
        check(optimizer_->defaults().count(beta1 ? "beta1" : "momentum") != 0, r.op(), ": the state cycles '",
              beta1 ? "beta1" : "momentum", "' but ", optimizer_->name(), " has no such option");
    return [this, total, phases = make_phases(std::move(ends)), linear, cycle, beta1]() mutable {
        total_steps_ = total;
        phases_ = std::move(phases);
        linear_ = linear;
        cycle_momentum_ = cycle;
        use_beta1_ = beta1;
    };
}

// ---- SequentialLR

GRAFT_INLINE SequentialLR::SequentialLR(Optimizer& optimizer,
                                        std::vector<std::reference_wrapper<LRScheduler>> schedulers,
                                        std::vector<std::int64_t> milestones, std::int64_t last_epoch)
    : LRScheduler(optimizer, "SequentialLR"), milestones_(std::move(milestones)) {
    using graft::detail::check;
    check(!schedulers.empty(), "SequentialLR: expects at least one scheduler");
    for (std::size_t i = 0; i < schedulers.size(); ++i) {
        LRScheduler& s = schedulers[i].get();
        check(&s.optimizer() == &optimizer,
              "SequentialLR: Sequential Schedulers expects all schedulers to belong to the same optimizer, but got "
              "schedulers at index ",
              i, " to be different than the optimizer passed in.");
        check(dynamic_cast<SequentialLR*>(&s) == nullptr, "SequentialLR: the scheduler at index ", i,
              " is a SequentialLR; they cannot be nested");
        (void)s.checked_groups("SequentialLR");
        schedulers_.push_back(&s);
    }
    check(milestones_.size() + 1 == schedulers_.size(),
          "SequentialLR: Sequential Schedulers expects number of schedulers provided to be one more than the number "
          "of milestone points, but got number of schedulers ",
          schedulers_.size(), " and the number of milestones to be equal to ", milestones_.size());
    check(std::is_sorted(milestones_.begin(), milestones_.end()), "SequentialLR: the milestones must be sorted");
    check(last_epoch >= -1, "SequentialLR: last_epoch must be -1 (a new schedule) or a completed epoch, got ",
          last_epoch);
    auto& groups = optimizer.param_groups();
    for (std::size_t i = 0; i < groups.size(); ++i)
        check(groups[i].options.count("initial_lr") != 0,
              "SequentialLR: param 'initial_lr' is not specified in param_groups[", i, "]");
    // Reset the lrs, move every scheduler one epoch back and restart the first (PyTorch's
    // construction); undone if that first step fails.
    std::vector<options_map> saved = detail::save_options(optimizer);
    struct sub_state {
        std::int64_t last_epoch, step_count;
        std::vector<double> last_lr;
    };
    std::vector<sub_state> subs;
    for (const LRScheduler* s : schedulers_) subs.push_back({s->last_epoch_, s->step_count_, s->last_lr_});
    try {
        for (auto& g : groups) g["lr"] = g["initial_lr"];
        for (LRScheduler* s : schedulers_) s->last_epoch_ -= 1;
        schedulers_[0]->initial_step();
    } catch (...) {
        detail::restore_options(optimizer, saved);
        for (std::size_t i = 0; i < schedulers_.size(); ++i) {
            schedulers_[i]->last_epoch_ = subs[i].last_epoch;
            schedulers_[i]->step_count_ = subs[i].step_count;
            schedulers_[i]->last_lr_ = subs[i].last_lr;
        }
        throw;
    }
    for (const auto& g : groups) base_lrs_.push_back(g["initial_lr"]);
    last_lr_ = schedulers_[0]->get_last_lr();
    last_epoch_ = last_epoch + 1;
}

GRAFT_INLINE void SequentialLR::step() {
    const std::int64_t epoch = last_epoch_ + 1;
    const auto idx =
        static_cast<std::size_t>(std::upper_bound(milestones_.begin(), milestones_.end(), epoch) - milestones_.begin());
    LRScheduler* s = schedulers_[idx];
    if (idx > 0 && milestones_[idx - 1] == epoch)
        s->advance(0);  // PyTorch's step(0): the scheduler starts over
    else
        s->step();
    last_epoch_ = epoch;
    last_lr_ = s->get_last_lr();
}

GRAFT_INLINE SchedulerStateDict SequentialLR::state_dict() const {
    SchedulerStateDict sd;
    sd.values["last_epoch"] = static_cast<double>(last_epoch_);
    sd.lists["_milestones"] = std::vector<double>(milestones_.begin(), milestones_.end());
    sd.lists["_last_lr"] = last_lr_;
    for (const LRScheduler* s : schedulers_) sd.schedulers.push_back(s->state_dict());
    return sd;
}

GRAFT_INLINE void SequentialLR::load_state_dict(const SchedulerStateDict& sd) {
    using graft::detail::check;
    detail::state_reader r(sd, "SequentialLR: load_state_dict");
    const std::size_t n = checked_groups("load_state_dict");
    const std::int64_t last_epoch = r.integer("last_epoch", 0);
    std::vector<std::int64_t> milestones = r.integer_list("_milestones", schedulers_.size() - 1);
    check(std::is_sorted(milestones.begin(), milestones.end()), r.op(), ": '_milestones' must be sorted");
    std::vector<double> last_lr = r.list("_last_lr", n);
    r.finish(/*nested=*/true);
    check(sd.schedulers.size() == schedulers_.size(), r.op(), ": the state holds ", sd.schedulers.size(),
          " scheduler states for ", schedulers_.size(), " schedulers");
    // Each scheduler checks its own state; if one fails, those already loaded are put back.
    std::vector<SchedulerStateDict> before;
    for (const LRScheduler* s : schedulers_) before.push_back(s->state_dict());
    std::size_t loaded = 0;
    try {
        for (; loaded < schedulers_.size(); ++loaded) schedulers_[loaded]->load_state_dict(sd.schedulers[loaded]);
    } catch (...) {
        for (std::size_t i = 0; i < loaded; ++i) schedulers_[i]->load_state_dict(before[i]);
        throw;
    }
    last_epoch_ = last_epoch;
    milestones_ = std::move(milestones);
    last_lr_ = std::move(last_lr);
}

// ---- ReduceLROnPlateau

GRAFT_INLINE ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, std::string_view mode, double factor,
                                                  std::int64_t patience, double threshold,
                                                  std::string_view threshold_mode, std::int64_t cooldown,
                                                  group_values min_lr, double eps)
    : optimizer_(&optimizer), factor_(factor), patience_(patience), cooldown_(cooldown), threshold_(threshold),
      eps_(eps) {
    using graft::detail::check;
    check(factor < 1.0, "ReduceLROnPlateau: Factor should be < 1.0, got ", factor);
    min_lrs_ = min_lr.expand(optimizer.param_groups().size(), "ReduceLROnPlateau", "min_lr");
    check(mode == "min" || mode == "max", "ReduceLROnPlateau: mode ", mode, " is unknown! (expected 'min' or 'max')");
    check(threshold_mode == "rel" || threshold_mode == "abs", "ReduceLROnPlateau: threshold mode ", threshold_mode,
          " is unknown! (expected 'rel' or 'abs')");
    maximize_ = mode == "max";
    abs_threshold_ = threshold_mode == "abs";
    best_ = maximize_ ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    for (const auto& g : optimizer.param_groups()) last_lr_.push_back(g["lr"]);
}

GRAFT_INLINE bool ReduceLROnPlateau::is_better(double a, double best) const {
    if (!maximize_) return abs_threshold_ ? a < best - threshold_ : a < best * (1. - threshold_);
    return abs_threshold_ ? a > best + threshold_ : a > best * (threshold_ + 1.);
}

GRAFT_INLINE void ReduceLROnPlateau::step(double metric) {
    auto& groups = optimizer_->param_groups();
    graft::detail::check(groups.size() == min_lrs_.size(), "ReduceLROnPlateau: step: the optimizer has ",
                         groups.size(), " parameter groups but the scheduler was made for ", min_lrs_.size());
    last_epoch_ += 1;
    if (is_better(metric, best_)) {
        best_ = metric;
        num_bad_epochs_ = 0;
    } else {
        num_bad_epochs_ += 1;
    }
    if (in_cooldown()) {
        cooldown_counter_ -= 1;
        num_bad_epochs_ = 0;  // bad epochs in cooldown do not count
    }
    if (num_bad_epochs_ > patience_) {
        for (std::size_t i = 0; i < groups.size(); ++i) {
            const double old_lr = groups[i]["lr"];
            const double new_lr = detail::py_max(old_lr * factor_, min_lrs_[i]);
            if (old_lr - new_lr > eps_) groups[i]["lr"] = new_lr;
        }
        cooldown_counter_ = cooldown_;
        num_bad_epochs_ = 0;
    }
    last_lr_.clear();
    for (const auto& g : groups) last_lr_.push_back(g["lr"]);
}

GRAFT_INLINE void ReduceLROnPlateau::step(const Tensor& metric) {
    graft::detail::check(metric.defined() && metric.numel() == 1,
                         "ReduceLROnPlateau: step: the metric must be a one-element tensor");
    step(metric.item<double>());
}

GRAFT_INLINE SchedulerStateDict ReduceLROnPlateau::state_dict() const {
    SchedulerStateDict sd;
    sd.values["factor"] = factor_;
    sd.lists["min_lrs"] = min_lrs_;
    sd.values["patience"] = static_cast<double>(patience_);
    sd.values["cooldown"] = static_cast<double>(cooldown_);
    sd.values["cooldown_counter"] = static_cast<double>(cooldown_counter_);
    sd.strings["mode"] = maximize_ ? "max" : "min";
    sd.values["threshold"] = threshold_;
    sd.strings["threshold_mode"] = abs_threshold_ ? "abs" : "rel";
    sd.values["best"] = best_;
    sd.values["num_bad_epochs"] = static_cast<double>(num_bad_epochs_);
    constexpr double inf = std::numeric_limits<double>::infinity();
    sd.values["mode_worse"] = maximize_ ? -inf : inf;
    sd.values["eps"] = eps_;
    sd.values["last_epoch"] = static_cast<double>(last_epoch_);
    sd.lists["_last_lr"] = last_lr_;
    return sd;
}

GRAFT_INLINE void ReduceLROnPlateau::load_state_dict(const SchedulerStateDict& sd) {
    detail::state_reader r(sd, "ReduceLROnPlateau: load_state_dict");
    const std::size_t n = optimizer_->param_groups().size();
    const double factor = r.number("factor");
    graft::detail::check(factor < 1.0, r.op(), ": Factor should be < 1.0, got ", factor);
    std::vector<double> min_lrs = r.list("min_lrs", n);
    const std::int64_t patience = r.integer("patience"), cooldown = r.integer("cooldown");
    const std::int64_t cooldown_counter = r.integer("cooldown_counter");
    const bool maximize = r.word("mode", {"min", "max"}) == "max";
    const double threshold = r.number("threshold");
    const bool abs_threshold = r.word("threshold_mode", {"rel", "abs"}) == "abs";
    const double best = r.number("best");
    const std::int64_t num_bad_epochs = r.integer("num_bad_epochs");
    (void)r.number("mode_worse");  // recomputed from mode, as PyTorch's load_state_dict does
    const double eps = r.number("eps");
    const std::int64_t last_epoch = r.integer("last_epoch");
    std::vector<double> last_lr = r.list("_last_lr", n);
    r.finish();
    factor_ = factor;
    min_lrs_ = std::move(min_lrs);
    patience_ = patience;
    cooldown_ = cooldown;
    cooldown_counter_ = cooldown_counter;
    maximize_ = maximize;
    threshold_ = threshold;
    abs_threshold_ = abs_threshold;
    best_ = best;
    num_bad_epochs_ = num_bad_epochs;
    eps_ = eps;
    last_epoch_ = last_epoch;
    last_lr_ = std::move(last_lr);
}

}  // namespace graft::optim::lr_scheduler
