// graft::optim::lr_scheduler: every scheduler's lr sequence against PyTorch 1.13's
// (tests/fixtures/optim.txt, within 1e-12) and against its closed form; OneCycleLR's momentum
// and Adam's beta1; ReduceLROnPlateau's patience, cooldown, thresholds and eps; SequentialLR's
// milestones; state_dict round trips in the middle of a schedule that continue identically;
// and the errors, which leave the optimizer and the scheduler unchanged.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include <graft/graft.hpp>

#include "optim_test_common.hpp"

using namespace graft;
namespace lrs = graft::optim::lr_scheduler;
using ot::check_error;

namespace {

Tensor leaf() { return zeros({1}, dtype::float64).requires_grad_(); }

// The fixture's optimizers (gen_optim.py): two groups with lr 0.1 and 0.05, or one (Adagrad).
std::vector<optim::ParamGroup> two_groups() { return {{{leaf()}}, {{leaf()}, {{"lr", 0.05}}}}; }
std::unique_ptr<optim::SGD> make_sgd(double momentum = 0) {
    return std::make_unique<optim::SGD>(two_groups(), 0.1, momentum);
}

constexpr double kTol = 1e-12;

// get_last_lr (and the group's momentum key) after construction and after each of `steps`
// steps, against the fixture's sched/<name>/lr<g> (and mom<g>).
void check_schedule(const std::string& name, optim::Optimizer& opt, lrs::LRScheduler& sched, int steps,
                    const char* momentum_key = nullptr) {
    INFO("fixture sched/" << name);
    const std::size_t groups = opt.param_groups().size();
    std::vector<std::vector<double>> lr(groups), mom(groups);
    for (int k = 0; k <= steps; ++k) {
        if (k > 0) {
            opt.step();
            sched.step();
        }
        for (std::size_t g = 0; g < groups; ++g) {
            lr[g].push_back(sched.get_last_lr()[g]);
            CHECK(opt.param_groups()[g]["lr"] == sched.get_last_lr()[g]);
            if (momentum_key) mom[g].push_back(opt.param_groups()[g][momentum_key]);
        }
    }
    for (std::size_t g = 0; g < groups; ++g) {
        ot::require_close(lr[g], ot::record("sched/" + name + "/lr" + std::to_string(g)), kTol);
        if (momentum_key) ot::require_close(mom[g], ot::record("sched/" + name + "/mom" + std::to_string(g)), kTol);
    }
}

const std::vector<double>& plateau_metrics() {
    static const std::vector<double> m{1.0, 0.9, 0.95, 0.9, 0.9, 0.91, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6,
                                       0.6, 0.6, 0.6, std::numeric_limits<double>::quiet_NaN(), 0.6, 0.6};
    return m;
}

void check_plateau(const std::string& name, optim::Optimizer& opt, lrs::ReduceLROnPlateau& sched) {
    INFO("fixture sched/" << name);
    std::vector<std::vector<double>> lr(2);
    for (std::size_t g = 0; g < 2; ++g) lr[g].push_back(opt.param_groups()[g]["lr"]);
    for (double m : plateau_metrics()) {
        opt.step();
        sched.step(m);
        for (std::size_t g = 0; g < 2; ++g) {
            lr[g].push_back(opt.param_groups()[g]["lr"]);
            CHECK(sched.get_last_lr()[g] == opt.param_groups()[g]["lr"]);
        }
    }
    for (std::size_t g = 0; g < 2; ++g)
        ot::require_close(lr[g], ot::record("sched/" + name + "/lr" + std::to_string(g)), kTol);
}

// Runs two copies of a schedule: `a` for `before` steps, then a fresh `b` loads a's optimizer
// and scheduler state; both go on for `after` steps with bitwise equal lrs (and momentum).
template <class Make>
void check_round_trip(Make make, int before, int after) {
    auto [opt_a, sched_a] = make(false);
    for (int k = 0; k < before; ++k) {
        opt_a->step();
        sched_a->step();
    }
    const optim::OptimizerStateDict osd = opt_a->state_dict();
    const lrs::SchedulerStateDict ssd = sched_a->state_dict();
    auto [opt_b, sched_b] = make(true);  // other hyperparameters: replaced by the loaded ones
    opt_b->load_state_dict(osd);
    sched_b->load_state_dict(ssd);
    CHECK(sched_b->last_epoch() == sched_a->last_epoch());
    CHECK(sched_b->get_last_lr() == sched_a->get_last_lr());
    for (int k = 0; k < after; ++k) {
        opt_a->step();
        sched_a->step();
        opt_b->step();
        sched_b->step();
        INFO("step " << k << " after the round trip");
        CHECK(sched_b->get_last_lr() == sched_a->get_last_lr());
        for (std::size_t g = 0; g < opt_a->param_groups().size(); ++g)
            CHECK(opt_b->param_groups()[g].options == opt_a->param_groups()[g].options);
    }
}

}  // namespace

TEST_CASE("lr_scheduler: every scheduler matches PyTorch 1.13's lr sequence", "[optim][lr_scheduler]") {
    {
        auto opt = make_sgd();
        lrs::StepLR s(*opt, 3, 0.5);
        check_schedule("step", *opt, s, 15);
    }
    {
        auto opt = make_sgd();
        lrs::CosineAnnealingLR s(*opt, 7, 0.01);
        check_schedule("cosine", *opt, s, 25);
    }
    {
        auto opt = make_sgd();
        lrs::MultiStepLR s(*opt, {7, 3, 12, 7}, 0.5);
        check_schedule("multistep", *opt, s, 16);
    }
    {
        auto opt = make_sgd();
        lrs::ExponentialLR s(*opt, 0.9);
        check_schedule("exponential", *opt, s, 12);
    }
    {
        auto opt = make_sgd();
        lrs::LinearLR s(*opt);
        check_schedule("linear_default", *opt, s, 8);
    }
    {
        auto opt = make_sgd();
        lrs::LinearLR s(*opt, 0.8, 0.2, 6);
        check_schedule("linear_down", *opt, s, 10);
    }
    {
        auto opt = make_sgd();
        lrs::LambdaLR s(*opt, [](std::int64_t e) { return std::pow(0.95, static_cast<double>(e)); });
        check_schedule("lambda_one", *opt, s, 10);
    }
    {
        auto opt = make_sgd();
        lrs::LambdaLR s(*opt, std::vector<lrs::LambdaLR::lambda>{
                                  [](std::int64_t e) { return std::pow(0.95, static_cast<double>(e)); },
                                  [](std::int64_t e) { return 1.0 / static_cast<double>(1 + e); }});
        check_schedule("lambda_groups", *opt, s, 10);
    }
    {
        auto opt = make_sgd(0.9);
        lrs::OneCycleLR s(*opt, {0.1, 0.2}, 20);
        check_schedule("onecycle_sgd", *opt, s, 19, "momentum");
    }
    {
        optim::Adam opt(two_groups(), 0.1);
        lrs::OneCycleLR s(opt, 0.05, std::nullopt, 3, 5, 0.25, "linear", true, 0.8, 0.9, 10.0, 100.0, true);
        check_schedule("onecycle_adam", opt, s, 15, "beta1");
        CHECK(opt.param_groups()[0]["beta2"] == 0.999);  // only beta1 cycles
    }
    {
        optim::Adagrad opt({leaf()}, 0.1);
        lrs::OneCycleLR s(opt, 0.3, 12, std::nullopt, std::nullopt, 0.4, "cos", false);
        check_schedule("onecycle_nomomentum", opt, s, 12);
    }
    {
        auto opt = make_sgd();
        lrs::LinearLR warm(*opt, 0.1, 1.0, 3);
        lrs::CosineAnnealingLR cosine(*opt, 10, 0.001);
        lrs::SequentialLR s(*opt, {warm, cosine}, {3});
        check_schedule("sequential_warm_cos", *opt, s, 15);
    }
    {
        auto opt = make_sgd();
        lrs::ExponentialLR e(*opt, 0.9);
        lrs::StepLR st(*opt, 2, 0.5);
        lrs::MultiStepLR m(*opt, {2, 4}, 0.3);
        lrs::SequentialLR s(*opt, {e, st, m}, {4, 8});
        check_schedule("sequential_three", *opt, s, 14);
    }
    {
        auto opt = make_sgd();
        lrs::ExponentialLR e(*opt, 0.8);
        lrs::LambdaLR l(*opt, [](std::int64_t k) { return 1.0 / static_cast<double>(k + 1); });
        lrs::SequentialLR s(*opt, {e, l}, {3});
        check_schedule("sequential_lambda", *opt, s, 8);
    }
}

TEST_CASE("lr_scheduler::ReduceLROnPlateau matches PyTorch 1.13", "[optim][lr_scheduler]") {
    {
        auto opt = make_sgd();
        lrs::ReduceLROnPlateau s(*opt, "min", 0.5, 2, 1e-4, "rel", 1, {0.01, 0.001});
        check_plateau("plateau_min_rel", *opt, s);
    }
    {
        auto opt = make_sgd();
        lrs::ReduceLROnPlateau s(*opt, "max", 0.3, 1, 0.1, "abs", 0, 0.004, 1e-3);
        check_plateau("plateau_max_abs", *opt, s);
    }
    {
        auto opt = make_sgd();
        lrs::ReduceLROnPlateau s(*opt, "min", 0.7, 0, 0.05, "abs");
        check_plateau("plateau_min_abs", *opt, s);
    }
    {
        auto opt = make_sgd();
        lrs::ReduceLROnPlateau s(*opt, "max", 0.5, 3, 0.2);
        check_plateau("plateau_max_rel", *opt, s);
    }
    // By hand: patience 1, cooldown 2. Epochs (metric): 1 (5, best), 2 (5, bad 1), 3 (5, bad 2 >
    // 1: reduce, cooldown 2), 4 (5, cooldown 1), 5 (5, cooldown 0), 6 (5, bad 1), 7 (5, reduce).
    auto opt = make_sgd();
    lrs::ReduceLROnPlateau s(*opt, "min", 0.1, 1, 1e-4, "rel", 2);
    CHECK(s.get_last_lr() == std::vector<double>{0.1, 0.05});
    const std::vector<double> want{0.1, 0.1, 0.01, 0.01, 0.01, 0.01, 0.001};
    for (std::size_t e = 0; e < want.size(); ++e) {
        s.step(tensor({5.0}, {-1}, dtype::float64));  // a one-element tensor works too
        INFO("epoch " << e + 1);
        CHECK(opt->param_groups()[0]["lr"] == Approx(want[e]).epsilon(1e-15));
        CHECK(s.last_epoch() == static_cast<std::int64_t>(e + 1));
    }
    CHECK(s.best() == 5.0);
    CHECK(s.in_cooldown());
}

TEST_CASE("lr_scheduler: the schedules follow their closed forms", "[optim][lr_scheduler]") {
    {
        auto opt = make_sgd();
        lrs::MultiStepLR s(*opt, {5, 2, 5, 9}, 0.3);
        for (int e = 0; e < 14; ++e) {
            const int k = (e >= 2) + 2 * (e >= 5) + (e >= 9);
            CHECK(s.get_last_lr()[1] == Approx(0.05 * std::pow(0.3, k)).epsilon(1e-14));
            s.step();
        }
    }
    {
        auto opt = make_sgd();
        lrs::ExponentialLR s(*opt, 0.7);
        for (int e = 0; e < 20; ++e) {
            CHECK(s.get_last_lr()[0] == Approx(0.1 * std::pow(0.7, e)).epsilon(1e-13));
            s.step();
        }
    }
    {
        auto opt = make_sgd();
        const double sf = 0.25, ef = 0.75;
        const int T = 6;
        lrs::LinearLR s(*opt, sf, ef, T);
        for (int e = 0; e < 10; ++e) {
            CHECK(s.get_last_lr()[0] == Approx(0.1 * (sf + (ef - sf) * std::min(e, T) / T)).epsilon(1e-14));
            s.step();
        }
    }
    {
        auto opt = make_sgd();
        lrs::LambdaLR s(*opt, [](std::int64_t e) { return 1.0 + static_cast<double>(e % 3); });
        for (int e = 0; e < 7; ++e) {
            CHECK(s.get_last_lr() == std::vector<double>{0.1 * (1 + e % 3), 0.05 * (1 + e % 3)});
            s.step();
        }
    }
    {
        // OneCycleLR's landmarks: max_lr / div_factor at step 0, max_lr at the end of the first
        // phase (step pct_start * T - 1 = 5), max_lr / (div * final_div) at the last step T - 1;
        // the momentum the other way round.
        auto opt = make_sgd(0.9);
        const int T = 20;
        lrs::OneCycleLR s(*opt, 0.4, T, std::nullopt, std::nullopt, 0.3, "cos", true, 0.8, 0.9, 20.0, 50.0);
        CHECK(s.total_steps() == T);
        CHECK(opt->param_groups()[1]["initial_lr"] == 0.4 / 20.0);
        CHECK(opt->param_groups()[1]["max_lr"] == 0.4);
        CHECK(opt->param_groups()[1]["min_lr"] == 0.4 / 20.0 / 50.0);
        for (int k = 0; k < T; ++k) {
            const double lr = s.get_last_lr()[1], m = opt->param_groups()[1]["momentum"];
            INFO("step " << k << " lr " << lr << " momentum " << m);
            if (k == 0) CHECK(lr == Approx(0.02).epsilon(1e-14));
            if (k == 0) CHECK(m == Approx(0.9).epsilon(1e-14));
            if (k == 5) CHECK(lr == Approx(0.4).epsilon(1e-14));
            if (k == 5) CHECK(m == Approx(0.8).epsilon(1e-14));
            if (k == T - 1) CHECK(lr == Approx(0.4 / 1000).epsilon(1e-12));
            if (k == T - 1) CHECK(m == Approx(0.9).epsilon(1e-14));
            // Between landmarks: cosine annealing, e.g. half way up at step 2.5 (not a step),
            // so check the formula at step 2: pct = 2 / 5.
            if (k == 2) CHECK(lr == Approx(0.4 + (0.02 - 0.4) / 2 * (std::cos(std::numbers::pi * 0.4) + 1)));
            s.step();
        }
    }
    {
        // SequentialLR: warm-up, then the cosine restarted at the milestone.
        auto opt = make_sgd();
        lrs::LinearLR warm(*opt, 0.2, 1.0, 4);
        lrs::CosineAnnealingLR cosine(*opt, 8);
        lrs::SequentialLR s(*opt, {warm, cosine}, {4});
        for (int e = 0; e < 14; ++e) {
            const double want = e < 4 ? 0.1 * (0.2 + 0.8 * e / 4.0)
                                      : 0.1 * (1 + std::cos(std::numbers::pi * (e - 4) / 8.0)) / 2;
            INFO("epoch " << e);
            CHECK(s.get_last_lr()[0] == Approx(want).margin(1e-15));
            CHECK(s.last_epoch() == e);
            s.step();
        }
    }
}

TEST_CASE("lr_scheduler: initial_lr is set once (PyTorch's setdefault)", "[optim][lr_scheduler]") {
    auto opt = make_sgd();
    lrs::LinearLR first(*opt, 0.5, 1.0, 2);
    CHECK(opt->param_groups()[0]["lr"] == 0.05);
    lrs::ExponentialLR second(*opt, 0.9);  // keeps the first scheduler's initial_lr
    CHECK(opt->param_groups()[0]["initial_lr"] == 0.1);
    CHECK(second.base_lrs() == std::vector<double>{0.1, 0.05});
}

TEST_CASE("lr_scheduler: state_dict round trips mid-schedule continue identically", "[optim][lr_scheduler]") {
    using opt_ptr = std::unique_ptr<optim::Optimizer>;
    using sched_ptr = std::unique_ptr<lrs::LRScheduler>;
    check_round_trip(
        [](bool other) {
            opt_ptr o = make_sgd();
            sched_ptr s = std::make_unique<lrs::StepLR>(*o, other ? 5 : 3, other ? 0.9 : 0.5);
            return std::pair{std::move(o), std::move(s)};
        },
        5, 10);
    check_round_trip(
        [](bool other) {
            opt_ptr o = make_sgd();
            sched_ptr s = std::make_unique<lrs::CosineAnnealingLR>(*o, other ? 3 : 7, other ? 0 : 0.01);
            return std::pair{std::move(o), std::move(s)};
        },
        9, 12);
    check_round_trip(
        [](bool other) {
            opt_ptr o = make_sgd();
            sched_ptr s = std::make_unique<lrs::MultiStepLR>(*o, other ? std::vector<std::int64_t>{1}
                                                                       : std::vector<std::int64_t>{3, 7, 7, 12},
                                                             other ? 0.9 : 0.5);
            return std::pair{std::move(o), std::move(s)};
        },
        5, 10);
    check_round_trip(
        [](bool other) {
            opt_ptr o = make_sgd();
            sched_ptr s = std::make_unique<lrs::ExponentialLR>(*o, other ? 0.5 : 0.9);
            return std::pair{std::move(o), std::move(s)};
        },
        4, 6);
    check_round_trip(
        [](bool other) {
            opt_ptr o = make_sgd();
            sched_ptr s = std::make_unique<lrs::LinearLR>(*o, other ? 0.9 : 0.2, other ? 0.5 : 1.0, other ? 2 : 6);
            return std::pair{std::move(o), std::move(s)};
        },
        3, 6);
    check_round_trip(
        [](bool) {
            opt_ptr o = make_sgd();
            sched_ptr s = std::make_unique<lrs::LambdaLR>(*o, [](std::int64_t e) { return 1.0 / (1.0 + 0.1 * e); });
            return std::pair{std::move(o), std::move(s)};
        },
        4, 6);
    check_round_trip(
        [](bool other) {
            opt_ptr o = make_sgd(0.9);
            sched_ptr s = std::make_unique<lrs::OneCycleLR>(*o, other ? 1.0 : 0.2, other ? 50 : 20, std::nullopt,
                                                            std::nullopt, 0.3, other ? "linear" : "cos", true, 0.85,
                                                            0.95, 25., 1e4, !other);
            return std::pair{std::move(o), std::move(s)};
        },
        7, 12);
    check_round_trip(
        [](bool) {
            opt_ptr o = std::make_unique<optim::Adam>(two_groups(), 0.1);
            sched_ptr s = std::make_unique<lrs::OneCycleLR>(*o, 0.3, 15);
            return std::pair{std::move(o), std::move(s)};
        },
        4, 10);

    // SequentialLR: its wrapped schedulers travel in its state_dict.
    struct seq {
        std::unique_ptr<optim::SGD> opt = make_sgd();
        lrs::LinearLR warm;
        lrs::CosineAnnealingLR cosine;
        lrs::SequentialLR s;
        explicit seq(bool other)
            : warm(*opt, other ? 0.5 : 0.1, 1.0, 3),
              cosine(*opt, other ? 4 : 10, 0.001),
              s(*opt, {warm, cosine}, {3}) {}
    };
    for (int before : {2, 3, 7}) {
        INFO("SequentialLR saved after " << before << " steps");
        seq a(false);
        for (int k = 0; k < before; ++k) a.s.step();
        const auto osd = a.opt->state_dict();
        const auto ssd = a.s.state_dict();
        CHECK(ssd.schedulers.size() == 2);
        seq b(true);
        b.opt->load_state_dict(osd);
        b.s.load_state_dict(ssd);
        for (int k = 0; k < 10; ++k) {
            a.s.step();
            b.s.step();
            CHECK(b.s.get_last_lr() == a.s.get_last_lr());
            CHECK(b.s.last_epoch() == a.s.last_epoch());
        }
    }

    // ReduceLROnPlateau, saved in a cooldown with bad epochs counted.
    auto oa = make_sgd();
    lrs::ReduceLROnPlateau a(*oa, "min", 0.5, 1, 1e-4, "rel", 2, {0.01, 0.001});
    for (double m : {1.0, 1.0, 1.0, 1.0}) a.step(m);
    CHECK(a.in_cooldown());
    const auto osd = oa->state_dict();
    const auto ssd = a.state_dict();
    CHECK(ssd.strings.at("mode") == "min");
    CHECK(std::isinf(ssd.values.at("mode_worse")));
    auto ob = make_sgd();
    lrs::ReduceLROnPlateau b(*ob, "max", 0.1, 7, 0.5, "abs");
    ob->load_state_dict(osd);
    b.load_state_dict(ssd);
    for (double m : {1.0, 0.99, 0.8, 0.8, 0.8, 0.9, 0.7, 0.7, 0.7, 0.7}) {
        a.step(m);
        b.step(m);
        CHECK(b.get_last_lr() == a.get_last_lr());
        CHECK(b.num_bad_epochs() == a.num_bad_epochs());
        CHECK(b.cooldown_counter() == a.cooldown_counter());
        CHECK(b.best() == a.best());
    }
}

TEST_CASE("lr_scheduler: bad arguments are errors and change nothing", "[optim][lr_scheduler]") {
    auto opt = make_sgd(0.9);
    const auto options_before = [&] {
        std::vector<optim::options_map> r;
        for (const auto& g : opt->param_groups()) r.push_back(g.options);
        return r;
    };
    const auto before = options_before();
    check_error([&] { lrs::StepLR(*opt, 0); }, "step_size must be positive");
    check_error([&] { lrs::MultiStepLR(*opt, {1, 2}, 0.5, -2); }, "last_epoch must be -1");
    check_error([&] { lrs::ExponentialLR(*opt, 0.9, 3); }, "param 'initial_lr' is not specified in param_groups[0]");
    check_error([&] { lrs::LinearLR(*opt, 0.0); }, "Starting multiplicative factor expected to be greater than 0");
    check_error([&] { lrs::LinearLR(*opt, 1.5); }, "Starting multiplicative factor");
    check_error([&] { lrs::LinearLR(*opt, 0.5, -0.1); }, "Ending multiplicative factor expected to be between 0 and 1");
    check_error([&] { lrs::LinearLR(*opt, 0.5, 1.0, 0); }, "total_iters must be positive");
    check_error([&] { lrs::LambdaLR(*opt, lrs::LambdaLR::lambda{}); }, "lr_lambda is an empty function");
    check_error([&] { lrs::LambdaLR(*opt, std::vector<lrs::LambdaLR::lambda>{[](std::int64_t) { return 1.0; }}); },
                "Expected 2 lr_lambdas, but got 1");
    // A lambda that throws at the first step: the error propagates, initial_lr is not left behind.
    check_error([&] { lrs::LambdaLR(*opt, [](std::int64_t) -> double { throw graft::error("lambda failed"); }); },
                "lambda failed");
    check_error([&] { lrs::CosineAnnealingLR(*opt, 0); }, "T_max must be positive");
    check_error([&] { lrs::OneCycleLR(*opt, 0.1); },
                "You must define either total_steps OR (epochs AND steps_per_epoch)");
    check_error([&] { lrs::OneCycleLR(*opt, 0.1, std::nullopt, 3); }, "You must define either total_steps");
    check_error([&] { lrs::OneCycleLR(*opt, 0.1, 0); }, "Expected positive integer total_steps, but got 0");
    check_error([&] { lrs::OneCycleLR(*opt, 0.1, std::nullopt, -1, 5); }, "Expected positive integer epochs");
    check_error([&] { lrs::OneCycleLR(*opt, 0.1, std::nullopt, 2, 0); }, "Expected positive integer steps_per_epoch");
    check_error([&] { lrs::OneCycleLR(*opt, 0.1, 10, std::nullopt, std::nullopt, 1.5); },
                "Expected float between 0 and 1 pct_start, but got 1.5");
    check_error([&] { lrs::OneCycleLR(*opt, 0.1, 10, std::nullopt, std::nullopt, 0.3, "exp"); },
                "anneal_strategy must by one of 'cos' or 'linear', instead got exp");
    check_error([&] { lrs::OneCycleLR(*opt, {0.1, 0.2, 0.3}, 10); }, "expected 2 values for max_lr");
    check_error([&] { lrs::OneCycleLR(*opt, 0.1, 10, std::nullopt, std::nullopt, 0.3, "cos", true, {0.8}); },
                "expected 2 values for base_momentum");
    check_error([&] { lrs::OneCycleLR(*opt, 0.1, 10, std::nullopt, std::nullopt, 0.1); },
                "which has zero length");  // pct_start * total_steps == 1: PyTorch divides by zero
    check_error([&] { lrs::OneCycleLR(*opt, 0.1, 10, std::nullopt, std::nullopt, 0.3, "cos", true, 0.85, 0.95, 25., 1e4,
                                      false, 4); },
                "param 'max_lr' is not specified in param_groups[0] when resuming");
    optim::Adagrad ada({leaf()});
    check_error([&] { lrs::OneCycleLR(ada, 0.1, 10); }, "optimizer must support momentum with `cycle_momentum`");
    check_error([&] { lrs::ReduceLROnPlateau(*opt, "min", 1.0); }, "Factor should be < 1.0");
    check_error([&] { lrs::ReduceLROnPlateau(*opt, "low"); }, "mode low is unknown!");
    check_error([&] { lrs::ReduceLROnPlateau(*opt, "min", 0.1, 10, 1e-4, "relative"); },
                "threshold mode relative is unknown!");
    check_error([&] { lrs::ReduceLROnPlateau(*opt, "min", 0.1, 10, 1e-4, "rel", 0, {0.1}); },
                "expected 2 values for min_lr");
    CHECK(options_before() == before);  // no failed constructor left initial_lr, max_lr, ... behind
    CHECK(ada.param_groups()[0].options.count("initial_lr") == 0);

    // SequentialLR.
    lrs::StepLR a(*opt, 2);
    lrs::ExponentialLR b(*opt, 0.9);
    auto other = make_sgd();
    lrs::StepLR c(*other, 2);
    check_error([&] { lrs::SequentialLR(*opt, {a, c}, {2}); },
                "expects all schedulers to belong to the same optimizer, but got schedulers at index 1");
    check_error([&] { lrs::SequentialLR(*opt, {a, b}, {2, 4}); },
                "expects number of schedulers provided to be one more than the number of milestone points");
    check_error([&] { lrs::SequentialLR(*opt, {a, b, a}, {4, 2}); }, "milestones must be sorted");
    check_error([&] { lrs::SequentialLR(*opt, {}, {}); }, "at least one scheduler");
    lrs::SequentialLR inner(*opt, {a, b}, {2});
    check_error([&] { lrs::SequentialLR(*opt, {inner, b}, {2}); }, "cannot be nested");
}

TEST_CASE("lr_scheduler: errors while stepping or loading leave the scheduler unchanged", "[optim][lr_scheduler]") {
    // OneCycleLR past total_steps: PyTorch's error, and the lr, momentum and epoch stay.
    auto opt = make_sgd(0.9);
    lrs::OneCycleLR s(*opt, 0.1, 4);
    for (int k = 0; k < 4; ++k) s.step();  // last_epoch 4 == total_steps is still allowed
    const auto lr = s.get_last_lr();
    const double momentum = opt->param_groups()[0]["momentum"];
    check_error([&] { s.step(); }, "Tried to step 6 times. The specified number of total steps is 4");
    CHECK(s.last_epoch() == 4);
    CHECK(s.get_last_lr() == lr);
    CHECK(opt->param_groups()[0]["lr"] == lr[0]);
    CHECK(opt->param_groups()[0]["momentum"] == momentum);

    // A group added after the scheduler was made.
    auto opt2 = make_sgd();
    lrs::StepLR st(*opt2, 2);
    opt2->add_param_group({{leaf()}});
    check_error([&] { st.step(); }, "the optimizer has 3 parameter groups but the scheduler was made for 2");

    // load_state_dict: missing, unknown and bad entries.
    auto opt3 = make_sgd();
    lrs::StepLR t(*opt3, 3, 0.5);
    t.step();
    const lrs::SchedulerStateDict good = t.state_dict();
    CHECK(good.values.at("step_size") == 3);
    CHECK(good.values.at("_step_count") == 2);
    CHECK(good.lists.at("base_lrs") == std::vector<double>{0.1, 0.05});
    auto bad = good;
    bad.values.erase("gamma");
    check_error([&] { t.load_state_dict(bad); }, "StepLR: load_state_dict: the state_dict lacks the value 'gamma'");
    bad = good;
    bad.values["T_max"] = 3;
    check_error([&] { t.load_state_dict(bad); }, "unknown value 'T_max'");
    bad = good;
    bad.values["step_size"] = 0;
    check_error([&] { t.load_state_dict(bad); }, "'step_size' must be an integer >= 1");
    bad = good;
    bad.values["last_epoch"] = 2.5;
    check_error([&] { t.load_state_dict(bad); }, "'last_epoch' must be an integer");
    bad = good;
    bad.lists["base_lrs"] = {0.1};
    check_error([&] { t.load_state_dict(bad); }, "'base_lrs' has 1 elements, expected 2");
    bad = good;
    bad.schedulers.push_back(good);
    check_error([&] { t.load_state_dict(bad); }, "only SequentialLR has them");
    CHECK(t.state_dict().values == good.values);  // unchanged
    CHECK(t.state_dict().lists == good.lists);

    // SequentialLR: a bad wrapped state puts back the schedulers already loaded.
    auto opt4 = make_sgd();
    lrs::StepLR s1(*opt4, 2);
    lrs::ExponentialLR s2(*opt4, 0.9);
    lrs::SequentialLR seq(*opt4, {s1, s2}, {3});
    for (int k = 0; k < 4; ++k) seq.step();
    auto sd = seq.state_dict();
    const auto s1_before = s1.state_dict();
    sd.schedulers[0].values["last_epoch"] = 1;
    sd.schedulers[1].values.erase("gamma");
    check_error([&] { seq.load_state_dict(sd); },
                "ExponentialLR: load_state_dict: the state_dict lacks the value 'gamma'");
    CHECK(s1.state_dict().values == s1_before.values);

    // ReduceLROnPlateau: a metric that is not one number.
    lrs::ReduceLROnPlateau p(*opt4);
    check_error([&] { p.step(zeros({2}, dtype::float64)); }, "the metric must be a one-element tensor");
    CHECK(p.last_epoch() == 0);
    auto psd = p.state_dict();
    psd.strings["mode"] = "sideways";
    check_error([&] { p.load_state_dict(psd); }, "'mode' has the unknown value 'sideways'");
}
