// graft::optim (issue 16): SGD, Adam and AdamW trajectories step by step against PyTorch's
// update formulas written out below as scalar loops in double (every option that changes the
// math), float64 tight and float32 with a tolerance; the fused kernels on every SIMD target
// against the scalar fallback; param groups, zero_grad, step(closure), state_dict round trips,
// the schedulers against their closed forms, clip_grad_norm_ against hand-computed norms, and
// the errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include <graft/graft.hpp>
#include <graft/kernels/reference.hpp>

using namespace graft;
namespace lrs = graft::optim::lr_scheduler;

namespace {

void check_error(const std::function<void()>& f, const std::string& part) {
    try {
        f();
    } catch (const graft::error& e) {
        INFO("message: " << e.what());
        CHECK(std::string(e.what()).find(part) != std::string::npos);
        return;
    }
    FAIL("expected graft::error containing: " << part);
}

// The loss of every trajectory: f(x) = sum(0.5 * a * x^2 + b * x), so df/dx = a * x + b.
constexpr std::size_t kN = 37;  // not a multiple of any vector width: the tails are exercised

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
    Tensor r = zeros({static_cast<std::int64_t>(v.size())}, dtype::float64);
    double* d = r.data_ptr<double>();
    for (std::size_t i = 0; i < v.size(); ++i) d[i] = v[i];
    return r.to(t);
}

Tensor param_of(const std::vector<double>& v, dtype t) { return vec(v, t).detach().requires_grad_(); }

// Computes the loss with graft's ops and runs backward, so the gradient comes from autograd.
Tensor loss_backward(const Tensor& x, const problem& pr) {
    const Tensor a = vec(pr.a, x.type()), b = vec(pr.b, x.type());
    Tensor loss = (a * x * x * 0.5 + b * x).sum();
    loss.backward();
    return loss;
}

double tol_of(dtype t) { return t == dtype::float64 ? 1e-12 : 2e-5; }

void require_close(const Tensor& x, const std::vector<double>& want, double tol) {
    const std::vector<double> got = x.to_vector<double>();
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
        REQUIRE(std::fabs(got[i] - want[i]) <= tol * (1.0 + std::fabs(want[i])));
    }
}

// ---- PyTorch's algorithms (torch.optim docs), written out in double.

struct sgd_cfg {
    double lr = 0.1, momentum = 0, dampening = 0, weight_decay = 0;
    bool nesterov = false, maximize = false;
};

// Steps x (in place) by one SGD step; `buf` empty on the first step with momentum.
void sgd_step_ref(const sgd_cfg& c, const problem& pr, std::vector<double>& x, std::vector<double>& buf) {
    const bool first = buf.empty();
    if (first) buf.assign(x.size(), 0.0);
    for (std::size_t i = 0; i < x.size(); ++i) {
        double g = pr.a[i] * x[i] + pr.b[i];
        if (c.maximize) g = -g;
        if (c.weight_decay != 0) g = g + c.weight_decay * x[i];
        if (c.momentum != 0) {
            buf[i] = first ? g : c.momentum * buf[i] + (1 - c.dampening) * g;
            g = c.nesterov ? g + c.momentum * buf[i] : buf[i];
        }
        x[i] = x[i] - c.lr * g;
    }
}

struct adam_cfg {
    double lr = 0.05, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
    bool amsgrad = false, maximize = false, decoupled = false;  // decoupled: AdamW
};

struct adam_state {
    std::vector<double> m, v, vmax;
    int t = 0;
};

// One Adam / AdamW step in the documented form: m_hat = m / (1 - beta1^t), v_hat = v / (1 - beta2^t),
// x -= lr * m_hat / (sqrt(v_hat) + eps).
void adam_step_ref(const adam_cfg& c, const problem& pr, std::vector<double>& x, adam_state& s) {
    if (s.m.empty()) s.m.assign(x.size(), 0.0), s.v.assign(x.size(), 0.0), s.vmax.assign(x.size(), 0.0);
    s.t += 1;
    for (std::size_t i = 0; i < x.size(); ++i) {
        double g = pr.a[i] * x[i] + pr.b[i];
        if (c.maximize) g = -g;
        if (c.weight_decay != 0) {
            if (c.decoupled)
                x[i] = x[i] * (1 - c.lr * c.weight_decay);
            else
                g = g + c.weight_decay * x[i];
        }
        s.m[i] = c.beta1 * s.m[i] + (1 - c.beta1) * g;
        s.v[i] = c.beta2 * s.v[i] + (1 - c.beta2) * g * g;
        double v = s.v[i];
        if (c.amsgrad) v = s.vmax[i] = std::max(s.vmax[i], s.v[i]);
        const double m_hat = s.m[i] / (1 - std::pow(c.beta1, s.t));
        const double v_hat = v / (1 - std::pow(c.beta2, s.t));
        x[i] = x[i] - c.lr * m_hat / (std::sqrt(v_hat) + c.eps);
    }
}

}  // namespace

TEST_CASE("optim::SGD trajectories match PyTorch's update for every option", "[optim]") {
    const problem pr = make_problem(1);
    for (dtype t : {dtype::float64, dtype::float32})
        for (double momentum : {0.0, 0.9})
            for (int variant = 0; variant < (momentum == 0 ? 1 : 3); ++variant)
                for (double wd : {0.0, 0.1})
                    for (bool maximize : {false, true}) {
                        sgd_cfg c;
                        c.momentum = momentum;
                        c.dampening = variant == 1 ? 0.3 : 0.0;
                        c.nesterov = variant == 2;
                        c.weight_decay = wd;
                        c.maximize = maximize;
                        INFO("dtype " << t << " momentum " << momentum << " dampening " << c.dampening << " nesterov "
                                      << c.nesterov << " weight_decay " << wd << " maximize " << maximize);
                        Tensor x = param_of(pr.x0, t);
                        optim::SGD opt({x}, c.lr, c.momentum, c.dampening, c.weight_decay, c.nesterov, c.maximize);
                        std::vector<double> xr = pr.x0, buf;
                        for (int s = 0; s < 5; ++s) {
                            opt.zero_grad();
                            loss_backward(x, pr);
                            opt.step();
                            sgd_step_ref(c, pr, xr, buf);
                            INFO("step " << s);
                            require_close(x, xr, tol_of(t));
                        }
                        CHECK(x.is_leaf());
                        CHECK(x.requires_grad());
                        CHECK(x.grad_fn() == nullptr);
                    }
}

TEST_CASE("optim::Adam and AdamW trajectories match PyTorch's update for every option", "[optim]") {
    const problem pr = make_problem(2);
    for (dtype t : {dtype::float64, dtype::float32})
        for (bool decoupled : {false, true})
            for (bool amsgrad : {false, true})
                for (double wd : {0.0, 0.1})
                    for (bool maximize : {false, true})
                        for (double beta1 : {0.9, 0.3}) {  // 1 - beta1 = 0.7 takes lerp's other formula
                            adam_cfg c;
                            c.decoupled = decoupled;
                            c.amsgrad = amsgrad;
                            c.weight_decay = wd;
                            c.maximize = maximize;
                            c.beta1 = beta1;
                            c.beta2 = beta1 == 0.9 ? 0.999 : 0.8;
                            INFO("dtype " << t << (decoupled ? " AdamW" : " Adam") << " amsgrad " << amsgrad
                                          << " weight_decay " << wd << " maximize " << maximize << " beta1 " << beta1);
                            Tensor x = param_of(pr.x0, t);
                            std::unique_ptr<optim::Optimizer> opt;
                            if (decoupled)
                                opt = std::make_unique<optim::AdamW>(std::vector<Tensor>{x}, c.lr,
                                                                     std::pair{c.beta1, c.beta2}, c.eps, wd, amsgrad,
                                                                     maximize);
                            else
                                opt = std::make_unique<optim::Adam>(std::vector<Tensor>{x}, c.lr,
                                                                    std::pair{c.beta1, c.beta2}, c.eps, wd, amsgrad,
                                                                    maximize);
                            std::vector<double> xr = pr.x0;
                            adam_state s;
                            for (int k = 0; k < 5; ++k) {
                                opt->zero_grad();
                                loss_backward(x, pr);
                                opt->step();
                                adam_step_ref(c, pr, xr, s);
                                INFO("step " << k);
                                require_close(x, xr, tol_of(t));
                            }
                        }
}

TEST_CASE("optim: defaults follow PyTorch (AdamW's weight_decay 1e-2, SGD's lr 1e-3)", "[optim]") {
    Tensor x = param_of({1.0}, dtype::float64);
    optim::AdamW w({x});
    CHECK(w.defaults().at("weight_decay") == 1e-2);
    CHECK(w.defaults().at("lr") == 1e-3);
    CHECK(w.defaults().at("beta1") == 0.9);
    CHECK(w.defaults().at("beta2") == 0.999);
    CHECK(w.defaults().at("eps") == 1e-8);
    CHECK(w.name() == "AdamW");
    optim::Adam a({param_of({1.0}, dtype::float64)});
    CHECK(a.defaults().at("weight_decay") == 0);
    optim::SGD s({param_of({1.0}, dtype::float64)});
    CHECK(s.defaults().at("lr") == 1e-3);
    CHECK(s.param_groups()[0]["momentum"] == 0);
}

TEST_CASE("optim kernels: every SIMD target agrees with the scalar fallback", "[optim][kernels]") {
    namespace gk = graft::kernels;
    const gk::target saved = gk::current_target();
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    auto run = [&]<class T>(T) {
        const double eps = std::numeric_limits<T>::epsilon();
        for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{17}, std::size_t{100}})
        for (std::size_t off : {std::size_t{0}, std::size_t{1}}) {  // off 1: no array is vector-aligned
            std::vector<T> p(n + off), g(n + off), b(n + off), m(n + off), v(n + off), vm(n + off);
            for (std::size_t i = 0; i < n + off; ++i) {
                p[i] = static_cast<T>(u(rng));
                g[i] = static_cast<T>(u(rng));
                b[i] = static_cast<T>(u(rng));
                m[i] = static_cast<T>(0.1 * u(rng));
                v[i] = static_cast<T>(0.1 * (u(rng) + 1));
                vm[i] = static_cast<T>(0.1 * (u(rng) + 1));
            }
            for (int variant = 0; variant < 4; ++variant) {
                gk::sgd_args sa;
                sa.lr = 0.1;
                sa.momentum = variant == 0 ? 0.0 : 0.9;
                sa.dampening = variant == 2 ? 0.2 : 0.0;
                sa.nesterov = variant == 3;
                sa.weight_decay = 0.01;
                sa.maximize = variant == 1;
                sa.first = variant == 2;
                gk::adam_args aa;
                aa.lr = 0.01;
                aa.beta1 = variant == 1 ? 0.4 : 0.9;
                aa.beta2 = 0.99;
                aa.eps = 1e-8;
                aa.weight_decay = variant >= 2 ? 0.1 : 0.0;
                aa.decoupled = variant == 3;
                aa.amsgrad = variant % 2 == 1;
                aa.maximize = variant == 2;
                aa.step_size = 0.01 / (1 - std::pow(aa.beta1, 3));
                aa.bias_correction2_sqrt = std::sqrt(1 - std::pow(aa.beta2, 3));
                std::vector<T> pr = p, br = b, pa = p, mr = m, vr = v, vmr = vm;
                gk::reference::optim_sgd(sa, pr.data() + off, g.data() + off, br.data() + off, n);
                gk::reference::optim_adam(aa, pa.data() + off, g.data() + off, mr.data() + off, vr.data() + off,
                                          vmr.data() + off, n);
                for (gk::target t : gk::available_targets()) {
                    gk::set_target(t);
                    INFO("target " << gk::target_name(t) << " n " << n << " offset " << off << " variant " << variant);
                    std::vector<T> p1 = p, b1 = b, p2 = p, m2 = m, v2 = v, vm2 = vm;
                    gk::sgd_step(sa, p1.data() + off, g.data() + off, b1.data() + off, n);
                    gk::adam_step(aa, p2.data() + off, g.data() + off, m2.data() + off, v2.data() + off,
                                  vm2.data() + off, n);
                    auto near = [&](const std::vector<T>& got, const std::vector<T>& want) {
                        for (std::size_t i = 0; i < n + off; ++i) {
                            INFO("element " << i << " got " << got[i] << " want " << want[i]);
                            REQUIRE(std::fabs(static_cast<double>(got[i]) - static_cast<double>(want[i])) <=
                                    8 * eps * (1 + std::fabs(static_cast<double>(want[i]))));
                        }
                    };
                    near(p1, pr);
                    if (sa.momentum != 0) near(b1, br);
                    near(p2, pa);
                    near(m2, mr);
                    near(v2, vr);
                    if (aa.amsgrad) near(vm2, vmr);
                }
            }
        }
    };
    run(0.0f);
    run(0.0);
    gk::set_target(saved);
}

TEST_CASE("optim: amsgrad's maximum propagates NaN like torch.maximum", "[optim][kernels]") {
    namespace gk = graft::kernels;
    gk::adam_args a;
    a.lr = 0.1, a.beta1 = 0.9, a.beta2 = 0.99, a.eps = 1e-8, a.amsgrad = true, a.step_size = 1,
    a.bias_correction2_sqrt = 1;
    double p[2] = {1, 1}, g[2] = {std::numeric_limits<double>::quiet_NaN(), 1}, m[2] = {0, 0}, v[2] = {0, 0},
           vm[2] = {std::numeric_limits<double>::quiet_NaN(), 0};
    gk::adam_step(a, p, g, m, v, vm, 2);
    CHECK(std::isnan(vm[0]));
    CHECK(std::isnan(p[0]));
    CHECK(vm[1] == Approx(0.01));
    CHECK(std::isfinite(p[1]));
}

TEST_CASE("optim: param groups override the defaults per group", "[optim]") {
    const problem pr = make_problem(3);
    for (dtype t : {dtype::float64, dtype::float32}) {
        Tensor x = param_of(pr.x0, t), y = param_of(pr.x0, t);
        // Group 0 takes the defaults (lr 0.1, momentum 0.9); group 1 overrides lr and momentum.
        optim::SGD opt(std::vector<optim::ParamGroup>{{{x}}, {{y}, {{"lr", 0.02}, {"momentum", 0.5}}}}, 0.1, 0.9);
        REQUIRE(opt.param_groups().size() == 2);
        CHECK(opt.param_groups()[1]["lr"] == 0.02);
        CHECK(opt.param_groups()[1]["dampening"] == 0);  // from the defaults
        sgd_cfg c0, c1;
        c0.lr = 0.1, c0.momentum = 0.9;
        c1.lr = 0.02, c1.momentum = 0.5;
        std::vector<double> x0 = pr.x0, x1 = pr.x0, b0, b1;
        for (int s = 0; s < 4; ++s) {
            opt.zero_grad();
            loss_backward(x, pr);
            loss_backward(y, pr);
            opt.step();
            sgd_step_ref(c0, pr, x0, b0);
            sgd_step_ref(c1, pr, x1, b1);
            require_close(x, x0, tol_of(t));
            require_close(y, x1, tol_of(t));
        }
        // add_param_group, and changing a group's lr in place.
        Tensor z = param_of(pr.x0, t);
        opt.add_param_group({{z}, {{"lr", 0.05}}});
        REQUIRE(opt.param_groups().size() == 3);
        CHECK(opt.param_groups()[2]["momentum"] == 0.9);
        opt.param_groups()[2]["lr"] = 0.01;
        sgd_cfg c2;
        c2.lr = 0.01, c2.momentum = 0.9;
        std::vector<double> x2 = pr.x0, b2;
        opt.zero_grad();
        loss_backward(z, pr);
        opt.step();
        sgd_step_ref(c2, pr, x2, b2);
        require_close(z, x2, tol_of(t));
        require_close(x, x0, tol_of(t));  // no gradient: skipped
    }
}

TEST_CASE("optim: zero_grad, skipped parameters, step(closure), no autograd history", "[optim]") {
    const problem pr = make_problem(4);
    Tensor x = param_of(pr.x0, dtype::float64), unused = param_of({1.0, 2.0}, dtype::float64);
    optim::Adam opt({x, unused}, 0.1);
    loss_backward(x, pr);
    REQUIRE(x.grad().defined());
    opt.zero_grad(false);
    REQUIRE(x.grad().defined());
    for (double g : x.grad().to_vector<double>()) CHECK(g == 0);
    opt.zero_grad();
    CHECK(!x.grad().defined());

    const std::uint64_t v0 = x._version();
    Tensor loss;
    {
        autograd::no_grad outer;  // the closure still runs with gradients enabled, as in PyTorch
        loss = opt.step([&] {
            opt.zero_grad();
            return loss_backward(x, pr);
        });
    }
    double want_loss = 0;
    for (std::size_t i = 0; i < kN; ++i) want_loss += 0.5 * pr.a[i] * pr.x0[i] * pr.x0[i] + pr.b[i] * pr.x0[i];
    CHECK(loss.item<double>() == Approx(want_loss).epsilon(1e-12));
    CHECK(x._version() > v0);  // updated in place
    CHECK(x.grad_fn() == nullptr);
    CHECK(x.is_leaf());
    adam_cfg c;
    c.lr = 0.1;
    std::vector<double> xr = pr.x0;
    adam_state s;
    adam_step_ref(c, pr, xr, s);
    require_close(x, xr, 1e-12);
    CHECK(unused.to_vector<double>() == std::vector<double>{1.0, 2.0});
    const optim::OptimizerStateDict sd = opt.state_dict();
    CHECK(sd.state.count(0) == 1);
    CHECK(sd.state.count(1) == 0);  // never stepped: no state, as in PyTorch
    CHECK(sd.state.at(0).at("step").item<double>() == 1);
    CHECK(sd.state.at(0).count("max_exp_avg_sq") == 0);

    // The step bumps the version counter: a graph that saved the parameter before the step
    // refuses to backward through it afterwards, as in PyTorch.
    Tensor saved_loss = (x * x).sum();
    opt.zero_grad();
    x.set_grad(ones({static_cast<std::int64_t>(kN)}, dtype::float64));
    opt.step();
    check_error([&] { saved_loss.backward(); }, "modified by an inplace operation");

    // A parameter that is a non-contiguous leaf is updated too.
    Tensor base = zeros({3, 2}, dtype::float64);
    Tensor w = base.t().detach().requires_grad_();  // [2, 3], transposed strides
    REQUIRE(!w.is_contiguous());
    optim::SGD sgd({w}, 0.5);
    w.set_grad(ones({2, 3}, dtype::float64));
    sgd.step();
    for (double e : w.to_vector<double>()) CHECK(e == -0.5);
}

TEST_CASE("optim: state_dict round trip continues identically", "[optim]") {
    const problem pr = make_problem(5);
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
    check_kind([](const Tensor& p) { return optim::SGD({p}, 0.1, 0.9, 0.1, 0.01); });
    check_kind([](const Tensor& p) { return optim::Adam({p}, 0.05, {0.8, 0.99}, 1e-8, 0.01, true); });
    check_kind([](const Tensor& p) { return optim::AdamW({p}, 0.05); });
}

TEST_CASE("optim: load_state_dict rejects mismatches and leaves the optimizer usable", "[optim]") {
    const problem pr = make_problem(6);
    Tensor x = param_of(pr.x0, dtype::float64);
    optim::Adam opt({x}, 0.1);
    loss_backward(x, pr);
    opt.step();
    const optim::OptimizerStateDict good = opt.state_dict();

    auto bad = good;
    bad.param_groups.push_back(bad.param_groups[0]);
    check_error([&] { opt.load_state_dict(bad); }, "different number of parameter groups");
    bad = good;
    bad.param_groups[0].params.push_back(1);
    check_error([&] { opt.load_state_dict(bad); }, "doesn't match the size of optimizer's group");
    bad = good;
    bad.state[0]["exp_avg"] = zeros({3}, dtype::float64);
    check_error([&] { opt.load_state_dict(bad); }, "has shape");
    bad = good;
    bad.state[0]["momentum_buffer"] = zeros({static_cast<std::int64_t>(kN)}, dtype::float64);
    check_error([&] { opt.load_state_dict(bad); }, "unknown state 'momentum_buffer'");
    bad = good;
    bad.state[7] = good.state.at(0);
    check_error([&] { opt.load_state_dict(bad); }, "not in the loaded param_groups");
    bad = good;
    bad.param_groups[0].options["lr"] = -1;
    check_error([&] { opt.load_state_dict(bad); }, "Invalid learning rate");
    bad = good;
    bad.param_groups[0].options["momentum"] = 0.9;
    check_error([&] { opt.load_state_dict(bad); }, "unknown option 'momentum'");

    // Still usable and unchanged: the next step matches the reference's second step.
    opt.zero_grad();
    loss_backward(x, pr);
    opt.step();
    adam_cfg c;
    c.lr = 0.1;
    std::vector<double> xr = pr.x0;
    adam_state s;
    adam_step_ref(c, pr, xr, s);
    adam_step_ref(c, pr, xr, s);
    require_close(x, xr, 1e-12);
}

TEST_CASE("optim: bad parameters and options are errors", "[optim]") {
    Tensor p = param_of({1.0, 2.0}, dtype::float64);
    check_error([&] { optim::SGD(std::vector<Tensor>{}, 0.1); }, "empty parameter list");
    check_error([&] { optim::SGD({p * 2.0}, 0.1); }, "can't optimize a non-leaf Tensor");
    check_error([&] { optim::SGD({ones({2}, dtype::float64)}, 0.1); }, "does not require grad");
    check_error([&] { optim::SGD({Tensor{}}, 0.1); }, "undefined tensor");
    check_error([&] { optim::SGD({p, p}, 0.1); }, "more than once");
    check_error([&] { optim::SGD({p}, -0.1); }, "Invalid learning rate");
    check_error([&] { optim::SGD({p}, 0.1, -0.5); }, "Invalid momentum value");
    check_error([&] { optim::SGD({p}, 0.1, 0, 0, -1); }, "Invalid weight_decay value");
    check_error([&] { optim::SGD({p}, 0.1, 0, 0, 0, true); },
                "Nesterov momentum requires a momentum and zero dampening");
    check_error([&] { optim::SGD({p}, 0.1, 0.9, 0.1, 0, true); }, "Nesterov momentum requires");
    check_error([&] { optim::Adam({p}, -1e-3); }, "Invalid learning rate");
    check_error([&] { optim::Adam({p}, 1e-3, {1.0, 0.999}); }, "Invalid beta parameter at index 0");
    check_error([&] { optim::Adam({p}, 1e-3, {0.9, -0.1}); }, "Invalid beta parameter at index 1");
    check_error([&] { optim::Adam({p}, 1e-3, {0.9, 0.999}, -1e-8); }, "Invalid epsilon value");
    check_error([&] { optim::AdamW({p}, 1e-3, {0.9, 0.999}, 1e-8, -0.1); }, "AdamW: Invalid weight_decay value");

    optim::SGD opt({p}, 0.1);
    Tensor q = param_of({3.0}, dtype::float64);
    check_error([&] { opt.add_param_group({{q}, {{"lrr", 0.1}}}); }, "unknown option 'lrr'");
    check_error([&] { opt.add_param_group({{p}}); }, "more than one parameter group");
    check_error([&] { opt.add_param_group({{q}, {{"nesterov", 2}}}); }, "must be 0 or 1");
    check_error([&] { opt.add_param_group({{tensor({1, 2})}}); }, "only float32 and float64");
    CHECK(opt.param_groups().size() == 1);  // unchanged by the failures
    check_error([&] { (void)opt.param_groups()[0]["betas"]; }, "has no option 'betas'");
    opt.param_groups()[0]["lr"] = -1;
    p.set_grad(ones({2}, dtype::float64));
    check_error([&] { opt.step(); }, "Invalid learning rate");
    opt.param_groups()[0]["lr"] = 0.1;
    opt.step();
    CHECK(p.to_vector<double>() == std::vector<double>{0.9, 1.9});
    check_error([&] { opt.step(std::function<Tensor()>{}); }, "closure is empty");
}

TEST_CASE("optim::lr_scheduler: StepLR and CosineAnnealingLR follow the closed forms", "[optim]") {
    Tensor p = param_of({1.0}, dtype::float64), q = param_of({1.0}, dtype::float64);
    {
        optim::SGD opt(std::vector<optim::ParamGroup>{{{p}}, {{q}, {{"lr", 0.4}}}}, 0.1);
        lrs::StepLR sched(opt, 3, 0.5);
        for (int e = 0; e < 12; ++e) {
            INFO("epoch " << e);
            const double f = std::pow(0.5, e / 3);
            CHECK(sched.get_last_lr()[0] == Approx(0.1 * f).epsilon(1e-14));
            CHECK(sched.get_last_lr()[1] == Approx(0.4 * f).epsilon(1e-14));
            CHECK(opt.param_groups()[0]["lr"] == sched.get_last_lr()[0]);
            CHECK(opt.param_groups()[0]["initial_lr"] == 0.1);
            CHECK(sched.last_epoch() == e);
            opt.step();
            sched.step();
        }
    }
    {
        const double base = 0.2, eta_min = 0.01;
        const int T = 7;
        optim::Adam opt({p}, base);
        lrs::CosineAnnealingLR sched(opt, T, eta_min);
        for (int e = 0; e < 3 * T + 2; ++e) {  // past T_max: the schedule goes back up
            INFO("epoch " << e);
            const double want = eta_min + (base - eta_min) * (1 + std::cos(std::numbers::pi * e / T)) / 2;
            CHECK(sched.get_last_lr()[0] == Approx(want).margin(1e-14));
            CHECK(opt.param_groups()[0]["lr"] == sched.get_last_lr()[0]);
            sched.step();
        }
    }
    {
        // Resuming needs initial_lr, as in PyTorch; bad arguments are errors.
        optim::SGD opt({p}, 0.1);
        check_error([&] { lrs::StepLR(opt, 3, 0.5, 4); }, "initial_lr");
        check_error([&] { lrs::StepLR(opt, 0); }, "step_size must be positive");
        check_error([&] { lrs::CosineAnnealingLR(opt, 0); }, "T_max must be positive");
        opt.param_groups()[0].options["initial_lr"] = 0.1;
        lrs::CosineAnnealingLR resumed(opt, 10, 0.0, 4);  // closed form at epoch 5
        CHECK(resumed.get_last_lr()[0] == Approx(0.1 * (1 + std::cos(std::numbers::pi * 5 / 10)) / 2).margin(1e-15));
    }
}

TEST_CASE("nn::utils::clip_grad_norm_ against hand-computed norms", "[optim]") {
    Tensor a = param_of({0, 0, 0}, dtype::float64), b = param_of({0, 0}, dtype::float64),
           none = param_of({5.0}, dtype::float64);
    auto set = [&] {
        a.set_grad(tensor({3.0, 0.0, -4.0}, {-1}, dtype::float64));
        b.set_grad(tensor({12.0, 0.0}, {-1}, dtype::float64));
    };
    set();
    // 2-norm: sqrt(sqrt(9 + 16)^2 + 12^2) = 13.
    Tensor n = nn::utils::clip_grad_norm_({a, b, none}, 6.5);
    CHECK(n.item<double>() == Approx(13.0).epsilon(1e-15));
    CHECK(n.dim() == 0);
    const double coef = 6.5 / (13.0 + 1e-6);
    CHECK(a.grad().to_vector<double>()[0] == Approx(3.0 * coef).epsilon(1e-15));
    CHECK(b.grad().to_vector<double>()[0] == Approx(12.0 * coef).epsilon(1e-15));
    // max_norm above the norm: clip_coef is clamped to 1 and the gradients do not change.
    set();
    CHECK(nn::utils::clip_grad_norm_({a, b}, 100.0).item<double>() == Approx(13.0));
    CHECK(a.grad().to_vector<double>() == std::vector<double>{3.0, 0.0, -4.0});
    // inf-norm: the largest |g|; 1-norm: the sum of |g|.
    set();
    CHECK(nn::utils::clip_grad_norm_({a, b}, 100.0, std::numeric_limits<double>::infinity()).item<double>() == 12.0);
    set();
    CHECK(nn::utils::clip_grad_norm_({a, b}, 100.0, 1.0).item<double>() == 19.0);
    set();
    CHECK(nn::utils::clip_grad_norm_({a, b}, 100.0, 3.0).item<double>() ==
          Approx(std::cbrt(27.0 + 64.0 + 1728.0)).epsilon(1e-14));
    // float32 gradients give a float32 norm; one tensor works too.
    Tensor c = param_of({0, 0}, dtype::float32);
    c.set_grad(tensor({6.0f, 8.0f}));
    Tensor nc = nn::utils::clip_grad_norm_(c, 5.0);
    CHECK(nc.type() == dtype::float32);
    CHECK(nc.item<double>() == 10.0);
    CHECK(c.grad().to_vector<float>()[0] == Approx(3.0).epsilon(1e-6));
    // Nothing to clip: 0.
    CHECK(nn::utils::clip_grad_norm_({none}, 1.0).item<double>() == 0.0);
    // Non-finite norms: an error on request, otherwise NaN spreads as in PyTorch.
    a.set_grad(tensor({std::numeric_limits<double>::quiet_NaN(), 1.0, 1.0}, {-1}, dtype::float64));
    b.set_grad(tensor({1.0, 1.0}, {-1}, dtype::float64));
    check_error([&] { (void)nn::utils::clip_grad_norm_({a, b}, 1.0, 2.0, true); }, "is non-finite");
    CHECK(b.grad().to_vector<double>() == std::vector<double>{1.0, 1.0});  // untouched by the error
    CHECK(std::isnan(nn::utils::clip_grad_norm_({a, b}, 1.0).item<double>()));
    CHECK(std::isnan(b.grad().to_vector<double>()[0]));
    a.set_grad(tensor({std::numeric_limits<double>::infinity(), 1.0, 1.0}, {-1}, dtype::float64));
    check_error([&] { (void)nn::utils::clip_grad_norm_({a}, 1.0, 2.0, true); }, "is non-finite");
    check_error([&] { (void)nn::utils::clip_grad_norm_({Tensor{}}, 1.0); }, "undefined tensor");
}
