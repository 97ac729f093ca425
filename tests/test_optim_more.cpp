// graft::optim RMSprop, Adagrad, Adadelta and LBFGS: trajectories step by step against PyTorch's
// update formulas written out below as scalar loops in double (every option that changes the
// math), float64 tight and float32 with a tolerance, and against PyTorch 1.13's own trajectories
// (tests/fixtures/optim.txt); LBFGS on Rosenbrock's function, with and without the strong-Wolfe
// line search, converging and matching PyTorch's first iterates; state_dict round trips; errors
// that leave the optimizer usable.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <graft/graft.hpp>

#include "optim_test_common.hpp"

using namespace graft;
using ot::check_error;

namespace {

// The loss of every trajectory: f(x) = sum(0.5 * a * x^2 + b * x), so df/dx = a * x + b.
constexpr std::size_t kN = 37;  // odd: no vector-width assumptions

struct problem {
    std::vector<double> x0, a, b;
};

problem make_problem(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    problem p;
    for (std::size_t i = 0; i < kN; ++i) {
        p.x0.push_back(u(rng));
        p.a.push_back(0.5 + 0.5 * (u(rng) + 1.0));
        p.b.push_back(0.3 * u(rng));
    }
    return p;
}

Tensor vec(const std::vector<double>& v, dtype t) {
    return from_vector(v, {static_cast<std::int64_t>(v.size())}).to(t);
}

Tensor param_of(const std::vector<double>& v, dtype t) { return vec(v, t).detach().requires_grad_(); }

Tensor loss_backward(const Tensor& x, const problem& pr) {
    const Tensor a = vec(pr.a, x.type()), b = vec(pr.b, x.type());
    Tensor loss = (a * x * x * 0.5 + b * x).sum();
    loss.backward();
    return loss;
}

double tol_of(dtype t) { return t == dtype::float64 ? 1e-12 : 2e-5; }

double grad_of(const problem& pr, const std::vector<double>& x, std::size_t i, bool maximize, double wd) {
    double g = pr.a[i] * x[i] + pr.b[i];
    if (maximize) g = -g;
    return g + wd * x[i];
}

// ---- The algorithms of PyTorch's documentation, in double.

struct rmsprop_cfg {
    double lr = 0.01, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0;
    bool centered = false, maximize = false;
};
struct rmsprop_ref {
    std::vector<double> v, m, buf;
    void step(const rmsprop_cfg& c, const problem& pr, std::vector<double>& x) {
        if (v.empty()) v.assign(x.size(), 0.0), m.assign(x.size(), 0.0), buf.assign(x.size(), 0.0);
        for (std::size_t i = 0; i < x.size(); ++i) {
            const double g = grad_of(pr, x, i, c.maximize, c.weight_decay);
            v[i] = c.alpha * v[i] + (1 - c.alpha) * g * g;
            double denom = 0;
            if (c.centered) {
                m[i] = c.alpha * m[i] + (1 - c.alpha) * g;
                denom = std::sqrt(v[i] - m[i] * m[i]) + c.eps;
            } else {
                denom = std::sqrt(v[i]) + c.eps;
            }
            if (c.momentum > 0) {
                buf[i] = c.momentum * buf[i] + g / denom;
                x[i] -= c.lr * buf[i];
            } else {
                x[i] -= c.lr * g / denom;
            }
        }
    }
};

struct adagrad_cfg {
    double lr = 0.1, lr_decay = 0, weight_decay = 0, initial_accumulator_value = 0, eps = 1e-10;
    bool maximize = false;
};
struct adagrad_ref {
    std::vector<double> sum;
    int t = 0;
    void step(const adagrad_cfg& c, const problem& pr, std::vector<double>& x) {
        if (sum.empty()) sum.assign(x.size(), c.initial_accumulator_value);
        t += 1;
        const double clr = c.lr / (1 + (t - 1) * c.lr_decay);
        for (std::size_t i = 0; i < x.size(); ++i) {
            const double g = grad_of(pr, x, i, c.maximize, c.weight_decay);
            sum[i] += g * g;
            x[i] -= clr * g / (std::sqrt(sum[i]) + c.eps);
        }
    }
};

struct adadelta_cfg {
    double lr = 1.0, rho = 0.9, eps = 1e-6, weight_decay = 0;
    bool maximize = false;
};
struct adadelta_ref {
    std::vector<double> v, u;
    void step(const adadelta_cfg& c, const problem& pr, std::vector<double>& x) {
        if (v.empty()) v.assign(x.size(), 0.0), u.assign(x.size(), 0.0);
        for (std::size_t i = 0; i < x.size(); ++i) {
            const double g = grad_of(pr, x, i, c.maximize, c.weight_decay);
            v[i] = c.rho * v[i] + (1 - c.rho) * g * g;
            const double delta = std::sqrt(u[i] + c.eps) / std::sqrt(v[i] + c.eps) * g;
            u[i] = c.rho * u[i] + (1 - c.rho) * delta * delta;
            x[i] -= c.lr * delta;
        }
    }
};

// Runs `opt` and the reference side by side for `steps` steps.
template <class Ref, class Cfg>
void run_trajectory(optim::Optimizer& opt, Tensor& x, const problem& pr, const Cfg& c, dtype t, int steps = 5) {
    std::vector<double> xr = pr.x0;
    Ref ref;
    for (int s = 0; s < steps; ++s) {
        opt.zero_grad();
        loss_backward(x, pr);
        opt.step();
        ref.step(c, pr, xr);
        INFO("step " << s);
        ot::require_close(x.to_vector<double>(), xr, tol_of(t));
    }
}

// ---- The fixture's optimizer problem (gen_optim.py: X0, A, B over 5 elements, 6 steps).
const problem& fixture_problem() {
    static const problem p{{0.8, -0.6, 0.3, -1.1, 0.05}, {1.0, 0.5, 2.0, 1.5, 0.75}, {0.1, -0.2, 0.3, 0.0, -0.05}};
    return p;
}

void check_against_torch(const std::string& name,
                         const std::function<std::unique_ptr<optim::Optimizer>(Tensor)>& make) {
    INFO("fixture opt/" << name);
    const problem& pr = fixture_problem();
    Tensor x = param_of(pr.x0, dtype::float64);
    auto opt = make(x);
    std::vector<double> got;
    for (int s = 0; s < 6; ++s) {
        opt->zero_grad();
        loss_backward(x, pr);
        opt->step();
        for (double v : x.to_vector<double>()) got.push_back(v);
    }
    ot::require_close(got, ot::record("opt/" + name + "/x"), 1e-13);
}

// ---- Rosenbrock's function (1 - a)^2 + 100 (b - a^2)^2, minimum 0 at (1, 1).
Tensor rosenbrock(const Tensor& a, const Tensor& b) {
    return (1.0 - a) * (1.0 - a) + (b - a * a) * (b - a * a) * 100.0;
}

}  // namespace

TEST_CASE("optim::RMSprop trajectories match PyTorch's update for every option", "[optim]") {
    const problem pr = make_problem(11);
    for (dtype t : {dtype::float64, dtype::float32})
        for (bool centered : {false, true})
            for (double momentum : {0.0, 0.9})
                for (double wd : {0.0, 0.1})
                    for (bool maximize : {false, true}) {
                        rmsprop_cfg c;
                        c.centered = centered, c.momentum = momentum, c.weight_decay = wd, c.maximize = maximize;
                        c.alpha = centered ? 0.9 : 0.99;
                        INFO("dtype " << t << " centered " << centered << " momentum " << momentum << " weight_decay "
                                      << wd << " maximize " << maximize);
                        Tensor x = param_of(pr.x0, t);
                        optim::RMSprop opt({x}, c.lr, c.alpha, c.eps, wd, momentum, centered, maximize);
                        run_trajectory<rmsprop_ref>(opt, x, pr, c, t);
                        const optim::OptimizerStateDict sd = opt.state_dict();
                        const auto& st = sd.state.at(0);
                        CHECK(st.at("step").item<double>() == 5);
                        CHECK(st.count("square_avg") == 1);
                        CHECK(st.count("momentum_buffer") == (momentum > 0 ? 1u : 0u));
                        CHECK(st.count("grad_avg") == (centered ? 1u : 0u));
                    }
    // lr, alpha and eps change the formula's constants: one more configuration.
    rmsprop_cfg c;
    c.lr = 0.003, c.alpha = 0.5, c.eps = 1e-3;
    Tensor x = param_of(pr.x0, dtype::float64);
    optim::RMSprop opt({x}, c.lr, c.alpha, c.eps);
    run_trajectory<rmsprop_ref>(opt, x, pr, c, dtype::float64, 8);
}

TEST_CASE("optim::Adagrad trajectories match PyTorch's update for every option", "[optim]") {
    const problem pr = make_problem(12);
    for (dtype t : {dtype::float64, dtype::float32})
        for (double lr_decay : {0.0, 0.1})
            for (double wd : {0.0, 0.1})
                for (double init : {0.0, 0.5})
                    for (bool maximize : {false, true}) {
                        adagrad_cfg c;
                        c.lr_decay = lr_decay, c.weight_decay = wd, c.initial_accumulator_value = init;
                        c.maximize = maximize;
                        INFO("dtype " << t << " lr_decay " << lr_decay << " weight_decay " << wd
                                      << " initial_accumulator_value " << init << " maximize " << maximize);
                        Tensor x = param_of(pr.x0, t);
                        optim::Adagrad opt({x}, c.lr, lr_decay, wd, init, c.eps, maximize);
                        run_trajectory<adagrad_ref>(opt, x, pr, c, t);
                    }
    adagrad_cfg c;
    c.lr = 0.5, c.eps = 1e-3;
    Tensor x = param_of(pr.x0, dtype::float64);
    optim::Adagrad opt({x}, c.lr, 0, 0, 0, c.eps);
    run_trajectory<adagrad_ref>(opt, x, pr, c, dtype::float64, 8);
}

TEST_CASE("optim::Adadelta trajectories match PyTorch's update for every option", "[optim]") {
    const problem pr = make_problem(13);
    for (dtype t : {dtype::float64, dtype::float32})
        for (int variant = 0; variant < 2; ++variant)
            for (double wd : {0.0, 0.1})
                for (bool maximize : {false, true}) {
                    adadelta_cfg c;
                    if (variant == 1) c.lr = 0.5, c.rho = 0.5, c.eps = 1e-3;
                    c.weight_decay = wd, c.maximize = maximize;
                    INFO("dtype " << t << " lr " << c.lr << " rho " << c.rho << " eps " << c.eps << " weight_decay "
                                  << wd << " maximize " << maximize);
                    Tensor x = param_of(pr.x0, t);
                    optim::Adadelta opt({x}, c.lr, c.rho, c.eps, wd, maximize);
                    run_trajectory<adadelta_ref>(opt, x, pr, c, t);
                }
}

TEST_CASE("optim: RMSprop, Adagrad and Adadelta match PyTorch 1.13's trajectories", "[optim]") {
    using P = std::unique_ptr<optim::Optimizer>;
    check_against_torch("rmsprop_plain",
                        [](Tensor x) -> P { return std::make_unique<optim::RMSprop>(std::vector{x}); });
    check_against_torch("rmsprop_all", [](Tensor x) -> P {
        return std::make_unique<optim::RMSprop>(std::vector{x}, 0.02, 0.9, 1e-6, 0.1, 0.8, true);
    });
    check_against_torch("rmsprop_max", [](Tensor x) -> P {
        return std::make_unique<optim::RMSprop>(std::vector{x}, 0.01, 0.99, 1e-8, 0, 0.5, false, true);
    });
    check_against_torch("adagrad_plain",
                        [](Tensor x) -> P { return std::make_unique<optim::Adagrad>(std::vector{x}, 0.1); });
    check_against_torch("adagrad_all", [](Tensor x) -> P {
        return std::make_unique<optim::Adagrad>(std::vector{x}, 0.2, 0.05, 0.1, 0.3, 1e-8);
    });
    check_against_torch("adagrad_max", [](Tensor x) -> P {
        return std::make_unique<optim::Adagrad>(std::vector{x}, 0.1, 0, 0, 0, 1e-10, true);
    });
    check_against_torch("adadelta_plain",
                        [](Tensor x) -> P { return std::make_unique<optim::Adadelta>(std::vector{x}); });
    check_against_torch("adadelta_all", [](Tensor x) -> P {
        return std::make_unique<optim::Adadelta>(std::vector{x}, 0.5, 0.8, 1e-4, 0.2, true);
    });
}

TEST_CASE("optim: RMSprop, Adagrad, Adadelta defaults and state follow PyTorch", "[optim]") {
    Tensor p = param_of({1.0, 2.0}, dtype::float64);
    optim::RMSprop r({p});
    CHECK(r.name() == "RMSprop");
    CHECK(r.defaults() == optim::options_map{{"lr", 1e-2},     {"alpha", 0.99},   {"eps", 1e-8},  {"weight_decay", 0},
                                             {"momentum", 0}, {"centered", 0}, {"maximize", 0}});
    optim::Adagrad a({param_of({1.0}, dtype::float64)});
    CHECK(a.defaults() == optim::options_map{{"lr", 1e-2},
                                             {"lr_decay", 0},
                                             {"weight_decay", 0},
                                             {"initial_accumulator_value", 0},
                                             {"eps", 1e-10},
                                             {"maximize", 0}});
    optim::Adadelta d({param_of({1.0}, dtype::float64)});
    CHECK(d.defaults() ==
          optim::options_map{{"lr", 1.0}, {"rho", 0.9}, {"eps", 1e-6}, {"weight_decay", 0}, {"maximize", 0}});

    // Adagrad's state exists from construction (PyTorch creates it in __init__), also for a
    // group added later (PyTorch fails on those).
    Tensor q = param_of({1.0, 2.0, 3.0}, dtype::float32);
    optim::Adagrad ag({q}, 0.1, 0, 0, 0.25);
    Tensor z = param_of({4.0}, dtype::float64);
    ag.add_param_group({{z}, {{"initial_accumulator_value", 0.5}}});
    const optim::OptimizerStateDict sd = ag.state_dict();
    REQUIRE(sd.state.size() == 2);
    CHECK(sd.state.at(0).at("step").item<double>() == 0);
    CHECK(sd.state.at(0).at("sum").to_vector<double>() == std::vector<double>{0.25, 0.25, 0.25});
    CHECK(sd.state.at(0).at("sum").type() == dtype::float32);
    CHECK(sd.state.at(1).at("sum").to_vector<double>() == std::vector<double>{0.5});

    // Adadelta's and RMSprop's state is lazy, as PyTorch's.
    CHECK(d.state_dict().state.empty());
    CHECK(r.state_dict().state.empty());
    p.set_grad(ones({2}, dtype::float64));
    r.step();
    CHECK(r.state_dict().state.at(0).size() == 2);  // step, square_avg
}

TEST_CASE("optim: RMSprop, Adagrad, Adadelta state_dict round trips continue identically", "[optim]") {
    const problem pr = make_problem(14);
    auto check_kind = [&](auto make) {
        Tensor x = param_of(pr.x0, dtype::float32), y = param_of(pr.x0, dtype::float32);
        auto a = make(x);
        for (int s = 0; s < 3; ++s) {
            a.zero_grad();
            loss_backward(x, pr);
            a.step();
        }
        const optim::OptimizerStateDict sd = a.state_dict();
        y.detach().copy_(x.detach());
        auto b = make(y);
        b.param_groups()[0]["lr"] = 0.5;  // replaced by the loaded options
        b.load_state_dict(sd);
        CHECK(b.param_groups()[0]["lr"] == a.param_groups()[0]["lr"]);
        for (int s = 0; s < 3; ++s) {
            a.zero_grad();
            loss_backward(x, pr);
            a.step();
            b.zero_grad();
            loss_backward(y, pr);
            b.step();
            CHECK(x.to_vector<float>() == y.to_vector<float>());  // bitwise
        }
    };
    check_kind([](const Tensor& p) { return optim::RMSprop({p}, 0.01, 0.9, 1e-8, 0.01, 0.9, true); });
    check_kind([](const Tensor& p) { return optim::Adagrad({p}, 0.1, 0.01, 0.01, 0.1); });
    check_kind([](const Tensor& p) { return optim::Adadelta({p}, 0.5, 0.8, 1e-5, 0.01); });
}

TEST_CASE("optim: RMSprop, Adagrad, Adadelta reject bad options and stay usable", "[optim]") {
    Tensor p = param_of({1.0, 2.0}, dtype::float64);
    check_error([&] { optim::RMSprop({p}, -0.1); }, "RMSprop: Invalid learning rate: -0.1");
    check_error([&] { optim::RMSprop({p}, 0.1, -0.5); }, "Invalid alpha value");
    check_error([&] { optim::RMSprop({p}, 0.1, 0.9, -1e-8); }, "Invalid epsilon value");
    check_error([&] { optim::RMSprop({p}, 0.1, 0.9, 1e-8, -1); }, "Invalid weight_decay value");
    check_error([&] { optim::RMSprop({p}, 0.1, 0.9, 1e-8, 0, -0.9); }, "Invalid momentum value");
    check_error([&] { optim::RMSprop({p}, std::nan("")); }, "Invalid learning rate");
    check_error([&] { optim::Adagrad({p}, -1); }, "Adagrad: Invalid learning rate");
    check_error([&] { optim::Adagrad({p}, 0.1, -0.1); }, "Invalid lr_decay value");
    check_error([&] { optim::Adagrad({p}, 0.1, 0, -0.1); }, "Invalid weight_decay value");
    check_error([&] { optim::Adagrad({p}, 0.1, 0, 0, -0.1); }, "Invalid initial_accumulator_value value");
    check_error([&] { optim::Adagrad({p}, 0.1, 0, 0, 0, -1e-10); }, "Invalid epsilon value");
    check_error([&] { optim::Adadelta({p}, -1); }, "Adadelta: Invalid learning rate");
    check_error([&] { optim::Adadelta({p}, 1, 1.5); }, "Invalid rho value: 1.5");
    check_error([&] { optim::Adadelta({p}, 1, -0.1); }, "Invalid rho value");
    check_error([&] { optim::Adadelta({p}, 1, 0.9, -1e-6); }, "Invalid epsilon value");
    check_error([&] { optim::Adadelta({p}, 1, 0.9, 1e-6, -0.1); }, "Invalid weight_decay value");

    // A bad option set through param_groups() is caught at the step; nothing moves, and the
    // optimizer works once it is fixed.
    optim::RMSprop opt({p}, 0.1);
    check_error([&] { opt.add_param_group({{param_of({1.0}, dtype::float64)}, {{"centered", 2}}}); },
                "'centered' is a flag and must be 0 or 1");
    opt.param_groups()[0]["eps"] = -1;
    p.set_grad(ones({2}, dtype::float64));
    check_error([&] { opt.step(); }, "Invalid epsilon value");
    CHECK(p.to_vector<double>() == std::vector<double>{1.0, 2.0});
    CHECK(opt.state_dict().state.empty());
    opt.param_groups()[0]["eps"] = 1e-8;
    opt.step();
    CHECK(p.to_vector<double>()[0] == Approx(1.0 - 0.1 / (0.1 + 1e-8)).margin(1e-15));
    // load_state_dict rejects another optimizer's state names.
    optim::OptimizerStateDict bad = opt.state_dict();
    bad.state[0]["acc_delta"] = zeros({2}, dtype::float64);
    check_error([&] { opt.load_state_dict(bad); }, "unknown state 'acc_delta'");
}

TEST_CASE("optim::LBFGS converges on Rosenbrock's function, with and without strong_wolfe", "[optim][lbfgs]") {
    for (bool wolfe : {false, true}) {
        INFO("line search " << (wolfe ? "strong_wolfe" : "none"));
        Tensor x = tensor({-1.5, 2.0}, {-1}, dtype::float64).detach().requires_grad_();
        optim::LBFGS opt({x}, 1, 20, std::nullopt, 1e-12, 1e-14, 100, wolfe ? "strong_wolfe" : "");
        auto closure = [&] {
            opt.zero_grad();
            Tensor loss = rosenbrock(x[0], x[1]);
            loss.backward();
            return loss;
        };
        double loss = 0;
        for (int s = 0; s < 30; ++s) loss = opt.step(closure).item<double>();
        const std::vector<double> v = x.to_vector<double>();
        CHECK(std::fabs(v[0] - 1) < 1e-6);
        CHECK(std::fabs(v[1] - 1) < 1e-6);
        CHECK(loss < 1e-12);
    }
    // float32 parameters (the directions are computed in double).
    Tensor x = tensor({-1.5f, 2.0f}).detach().requires_grad_();
    optim::LBFGS opt({x}, 1, 20, std::nullopt, 1e-7, 1e-9, 100, "strong_wolfe");
    auto closure = [&] {
        opt.zero_grad();
        Tensor loss = rosenbrock(x[0], x[1]);
        loss.backward();
        return loss;
    };
    for (int s = 0; s < 10; ++s) opt.step(closure);
    CHECK(x.type() == dtype::float32);
    CHECK(std::fabs(x.to_vector<double>()[0] - 1) < 1e-3);
    CHECK(std::fabs(x.to_vector<double>()[1] - 1) < 1e-3);
}

TEST_CASE("optim::LBFGS matches PyTorch 1.13's first iterates", "[optim][lbfgs]") {
    struct config {
        const char* name;
        double lr;
        std::int64_t max_iter;
        std::optional<std::int64_t> max_eval;
        std::int64_t history_size;
        const char* line_search;
        bool split;
    };
    for (const config& c : {config{"none", 1, 4, std::nullopt, 100, "", false},
                            config{"wolfe", 1, 4, std::nullopt, 100, "strong_wolfe", false},
                            config{"none_split", 0.8, 5, std::nullopt, 2, "", true},
                            config{"wolfe_split", 1, 6, 9, 3, "strong_wolfe", true}}) {
        INFO("fixture lbfgs/" << c.name);
        std::vector<Tensor> params;
        if (c.split)
            params = {tensor({-1.5}, {-1}, dtype::float64).detach().requires_grad_(),
                      tensor({2.0}, {-1}, dtype::float64).detach().requires_grad_()};
        else
            params = {tensor({-1.5, 2.0}, {-1}, dtype::float64).detach().requires_grad_()};
        optim::LBFGS opt(params, c.lr, c.max_iter, c.max_eval, 1e-7, 1e-9, c.history_size, c.line_search);
        auto closure = [&] {
            opt.zero_grad();
            Tensor loss = c.split ? rosenbrock(params[0][0], params[1][0]) : rosenbrock(params[0][0], params[0][1]);
            loss.backward();
            return loss;
        };
        std::vector<double> xs, losses, evals;
        for (int s = 0; s < 3; ++s) {
            losses.push_back(opt.step(closure).item<double>());
            for (const Tensor& p : params)
                for (double v : p.to_vector<double>()) xs.push_back(v);
            const auto sd = opt.state_dict();
            evals.push_back(sd.state.at(0).at("func_evals").item<double>());
            evals.push_back(sd.state.at(0).at("n_iter").item<double>());
        }
        const std::string base = std::string("lbfgs/") + c.name;
        ot::require_close(xs, ot::record(base + "/x"), 1e-10);
        ot::require_close(losses, ot::record(base + "/loss"), 1e-10);
        CHECK(evals == ot::record(base + "/evals"));
    }
}

TEST_CASE("optim::LBFGS: defaults, closure, state_dict round trip, errors", "[optim][lbfgs]") {
    Tensor x = tensor({-1.5, 2.0}, {-1}, dtype::float64).detach().requires_grad_();
    optim::LBFGS opt({x});
    CHECK(opt.name() == "LBFGS");
    CHECK(opt.defaults() == optim::options_map{{"lr", 1},
                                               {"max_iter", 20},
                                               {"max_eval", 25},
                                               {"tolerance_grad", 1e-7},
                                               {"tolerance_change", 1e-9},
                                               {"history_size", 100},
                                               {"line_search_fn", 0}});
    CHECK(optim::LBFGS({param_of({1.0}, dtype::float64)}, 1, 7).defaults().at("max_eval") == 8);  // 7 * 5 // 4

    auto closure_for = [](optim::LBFGS& o, const Tensor& p) {
        return [&o, p] {
            o.zero_grad();
            Tensor loss = rosenbrock(p[0], p[1]);
            loss.backward();
            return loss;
        };
    };
    // Without a closure, or with a bad one: errors, nothing moves.
    check_error([&] { opt.step(); }, "LBFGS: step() needs a closure");
    check_error([&] { opt.step(std::function<Tensor()>{}); }, "closure is empty");
    check_error([&] { opt.step([] { return Tensor{}; }); }, "must return the loss as a one-element tensor");
    check_error([&] { opt.step([] { return zeros({2}, dtype::float64); }); }, "a tensor of shape");
    CHECK(x.to_vector<double>() == std::vector<double>{-1.5, 2.0});
    CHECK(opt.state_dict().state.empty());

    // A closure that throws in the middle of a step (here: during the line search, after the
    // parameters have moved): the parameters and the state are put back, the error propagates,
    // and the optimizer continues exactly as one that never saw the failed step.
    Tensor y = x.detach().clone().requires_grad_(), w = x.detach().clone().requires_grad_();
    optim::LBFGS a({y}, 1, 5, std::nullopt, 1e-7, 1e-9, 100, "strong_wolfe");
    optim::LBFGS b({w}, 1, 5, std::nullopt, 1e-7, 1e-9, 100, "strong_wolfe");
    a.step(closure_for(a, y));
    b.step(closure_for(b, w));
    const std::vector<double> before = y.to_vector<double>();
    int calls = 0;
    auto good = closure_for(a, y);
    check_error(
        [&] {
            a.step([&] {
                if (++calls == 4) throw graft::error("closure failed");
                return good();
            });
        },
        "closure failed");
    CHECK(y.to_vector<double>() == before);
    for (int s = 0; s < 3; ++s) {
        a.step(closure_for(a, y));
        b.step(closure_for(b, w));
        CHECK(y.to_vector<double>() == w.to_vector<double>());
    }

    // state_dict round trip mid-run: a fresh LBFGS that loads it continues bitwise alike.
    const optim::OptimizerStateDict sd = a.state_dict();
    const auto& st = sd.state.at(0);
    for (const char* key : {"func_evals", "n_iter", "d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad",
                            "prev_loss"})
        CHECK(st.count(key) == 1);
    CHECK(st.at("old_dirs").sizes() == int_list{st.at("ro").numel(), 2});
    Tensor v = y.detach().clone().requires_grad_();
    optim::LBFGS c({v}, 0.5);  // other options: replaced by the loaded ones
    c.load_state_dict(sd);
    CHECK(c.param_groups()[0]["line_search_fn"] == 1);
    for (int s = 0; s < 3; ++s) {
        a.step(closure_for(a, y));
        c.step(closure_for(c, v));
        CHECK(y.to_vector<double>() == v.to_vector<double>());
    }

    // Bad options and state.
    Tensor p = param_of({1.0, 2.0}, dtype::float64);
    check_error([&] { optim::LBFGS({p}, -1); }, "LBFGS: Invalid learning rate");
    check_error([&] { optim::LBFGS({p}, 1, 0); }, "max_iter must be an integer >= 1");
    check_error([&] { optim::LBFGS({p}, 1, std::numeric_limits<std::int64_t>::max()); }, "max_iter must be an integer");
    check_error([&] { optim::LBFGS({p}, 1, 20, 0); }, "max_eval must be an integer >= 1");
    check_error([&] { optim::LBFGS({p}, 1, 20, std::nullopt, 1e-7, 1e-9, 0); }, "history_size must be an integer >= 1");
    check_error([&] { optim::LBFGS({p}, 1, 20, std::nullopt, std::nan(""), 1e-9); }, "tolerance_grad is NaN");
    check_error([&] { optim::LBFGS({p}, 1, 20, std::nullopt, 1e-7, 1e-9, 100, "armijo"); },
                "only 'strong_wolfe' is supported");
    optim::LBFGS one({p});
    check_error([&] { one.add_param_group({{param_of({3.0}, dtype::float64)}}); },
                "LBFGS doesn't support per-parameter options (parameter groups)");
    CHECK(one.param_groups().size() == 1);
    auto bad = sd;
    bad.state[0].erase("ro");
    check_error([&] { c.load_state_dict(bad); }, "'d' but not 'ro'");
    bad = sd;
    bad.state[0]["d"] = zeros({3}, dtype::float64);
    check_error([&] { c.load_state_dict(bad); }, "state 'd' has shape");
    bad = sd;
    bad.state[0]["momentum_buffer"] = zeros({2}, dtype::float64);
    check_error([&] { c.load_state_dict(bad); }, "unknown state 'momentum_buffer'");
    bad = sd;
    bad.param_groups[0].options["max_iter"] = 0.5;
    check_error([&] { c.load_state_dict(bad); }, "max_iter must be an integer");
    // c is unchanged by the failed loads: it still follows a.
    a.step(closure_for(a, y));
    c.step(closure_for(c, v));
    CHECK(y.to_vector<double>() == v.to_vector<double>());
}

TEST_CASE("optim::LBFGS: a non-contiguous parameter follows the same path as a contiguous one", "[optim][lbfgs]") {
    // Two Rosenbrock problems in the rows of a 2x2 parameter, once transposed (non-contiguous).
    const Tensor start = tensor({-1.5, 2.0, 0.5, -0.3}, {2, 2}, dtype::float64);
    Tensor contiguous = start.detach().clone().requires_grad_();
    Tensor transposed = start.t().contiguous().t().detach().requires_grad_();
    REQUIRE(!transposed.is_contiguous());
    auto run = [](Tensor& w) {
        optim::LBFGS opt({w}, 1, 5, std::nullopt, 1e-7, 1e-9, 100, "strong_wolfe");
        for (int s = 0; s < 3; ++s)
            opt.step([&] {
                opt.zero_grad();
                Tensor loss = rosenbrock(w[0][0], w[0][1]) + rosenbrock(w[1][0], w[1][1]);
                loss.backward();
                return loss;
            });
    };
    run(contiguous);
    run(transposed);
    CHECK(transposed.to_vector<double>() == contiguous.to_vector<double>());
    CHECK(contiguous.to_vector<double>() != start.to_vector<double>());
}
