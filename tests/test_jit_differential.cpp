// Differential tests: programs run through eager graft, jit::script (STATIC and DYNAMIC),
// capture::aot and nn::script must give eager's results (and eager's errors) across changing
// signatures, grad modes and sizes.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <graft/graft.hpp>

using namespace graft;

namespace {

bool bitwise_equal(const Tensor& a, const Tensor& b) {
    if (a.defined() != b.defined()) return false;
    if (!a.defined()) return true;
    if (a.sizes() != b.sizes() || a.type() != b.type()) return false;
    const Tensor ca = a.contiguous(), cb = b.contiguous();
    return std::memcmp(ca.raw_data(), cb.raw_data(), static_cast<std::size_t>(a.numel()) * a.element_size()) == 0;
}

jit::options strategy(jit::fusion_behavior b) {
    jit::options o;
    o.fusion = {{b, 4}};
    o.num_profiled_runs = 1;
    return o;
}

}  // namespace

TEST_CASE("differential seed: a while_loop reading a weight, with grad three times then under no_grad",
          "[jit][differential]") {
    Tensor w = randn({3}, dtype::float64).requires_grad_();
    const auto f = [&w](Tensor x) {
        return while_loop([](const Tensor& i, const Tensor&) { return i < 3.0; },
                          [&w](const Tensor& i, const Tensor& v) { return std::vector<Tensor>{i + 1.0, v * w + 1.0}; },
                          zeros({}, dtype::float64), x)[1];
    };
    for (jit::fusion_behavior b : {jit::fusion_behavior::static_, jit::fusion_behavior::dynamic_}) {
        auto fn = jit::script(f, strategy(b));
        for (int k = 0; k < 3; ++k) {
            const Tensor x = randn({3}, dtype::float64).requires_grad_();
            const Tensor y = fn(x), ye = f(x);
            CHECK(bitwise_equal(y, ye));
            CHECK(bitwise_equal(autograd::grad({y.sum()}, {x, w})[0], autograd::grad({ye.sum()}, {x, w})[0]));
        }
        autograd::no_grad ng;
        const Tensor x = randn({3}, dtype::float64);
        CHECK(bitwise_equal(fn(x), f(x)));
    }
}

TEST_CASE("differential seed: an output that is a bool mask beside a loss", "[jit][differential]") {
    const auto f = [](Tensor x, Tensor w) {
        const Tensor m = x * w;
        return std::vector<Tensor>{where(m > 0.0, m * 2.0, m * 0.5).sum(), m > 0.0};
    };
    for (jit::fusion_behavior b : {jit::fusion_behavior::static_, jit::fusion_behavior::dynamic_}) {
        auto fn = jit::script(f, strategy(b));
        const Tensor w = randn({4}, dtype::float64).requires_grad_();
        for (int k = 0; k < 5; ++k) {
            const Tensor x = randn({4}, dtype::float64);
            const auto y = fn(x, w), ye = f(x, w);
            REQUIRE(y.size() == 2);
            CHECK(bitwise_equal(y[0], ye[0]));
            CHECK(bitwise_equal(y[1], ye[1]));
            CHECK(bitwise_equal(autograd::grad({y[0]}, {w})[0], autograd::grad({ye[0]}, {w})[0]));
        }
    }
}

TEST_CASE("closed-over tensors that require grad are graph inputs: live values, gradients reach them",
          "[jit][differential]") {
    Tensor w = randn({4, 3}, dtype::float64).requires_grad_();
    Tensor b = randn({3}, dtype::float64).requires_grad_();
    const Tensor scale = full({}, 0.5, dtype::float64);  // no grad: stays a graph constant
    const auto f = [&](Tensor x) { return (tanh(matmul(x, w) + b) * scale).sum(); };
    for (jit::fusion_behavior bh : {jit::fusion_behavior::static_, jit::fusion_behavior::dynamic_}) {
        auto fn = jit::script(f, strategy(bh));
        for (std::int64_t n : {5, 5, 5, 8, 5}) {
            INFO("n " << n);
            const Tensor x = randn({n, 4}, dtype::float64);
            const Tensor ye = f(x);
            const auto ge = autograd::grad({ye}, {w, b});
            const Tensor y = fn(x);
            CHECK(bitwise_equal(y, ye));
            const auto g = autograd::grad({y}, {w, b});  // used in the graph: no "not used" error
            CHECK(bitwise_equal(g[0], ge[0]));
            CHECK(bitwise_equal(g[1], ge[1]));
            // backward() accumulates into the closed-over leaves, as eager does.
            w.set_grad(Tensor());
            fn(x).backward();
            CHECK(bitwise_equal(w.grad(), ge[0]));
            w.set_grad(Tensor());
            // An optimizer's in-place step is seen by the next call (no frozen copy).
            autograd::no_grad ng;
            w.sub_(g[0] * 0.1);
        }
    }
    // Under no_grad (inference) the same graph input serves, with the current values.
    autograd::no_grad ng;
    auto fn = jit::script(f, strategy(jit::fusion_behavior::static_));
    const Tensor x = randn({5, 4}, dtype::float64);
    CHECK(bitwise_equal(fn(x), f(x)));
    b.add_(1.0);
    CHECK(bitwise_equal(fn(x), f(x)));
}

TEST_CASE("capture::aot refuses a closed-over tensor that requires grad (its gradient would be lost)",
          "[capture][differential]") {
    const Tensor w = randn({3}, dtype::float64).requires_grad_();
    const Tensor x = randn({3}, dtype::float64);
    CHECK_THROWS_WITH(capture::aot([&](Tensor a) { return (a * w).sum(); }, {x}),
                      Catch::Contains("requires grad but is not one of its inputs"));
    // Passed as an input it works; read detached it is a constant, as the caller asked.
    const auto a = capture::aot([](Tensor a, Tensor v) { return (a * v).sum(); }, {x, w});
    CHECK(bitwise_equal(a(x, w)[0], (x * w).sum()));
    const auto c = capture::aot([&](Tensor a) { return (a * w.detach()).sum(); }, {x});
    CHECK(bitwise_equal(c(x)[0], (x * w).sum()));
}

namespace {

/// Runs `step` (a training step's loss from x [B, ...], int64 targets y [B] and the weights) eagerly
/// and under a DYNAMIC jit::script over batch sizes 8, 16, 32, 5, 64, 128, with the same seed
/// before each call: losses and the weights' gradients must agree, with at most 2 compilations
/// and no guard failure after the first specialization. Twice: the weights closed over (graph
/// inputs the capture lifts) and passed as inputs (as nn::functional_call passes parameters),
/// where a batch size equal to a weight's size must not tie the two.
template <class Step>
void check_dynamic_training(const Step& step, const std::vector<Tensor>& weights, const int_list& sample) {
    for (const bool as_inputs : {false, true}) {
        INFO((as_inputs ? "weights passed as inputs" : "weights closed over"));
        auto closed = jit::script([&](Tensor x, Tensor y) { return step(x, y, weights); },
                                  strategy(jit::fusion_behavior::dynamic_));
        auto passed = jit::script(
            [&](const std::vector<Tensor>& in) { return step(in[0], in[1], std::vector<Tensor>(in.begin() + 2, in.end())); },
            strategy(jit::fusion_behavior::dynamic_));
        generator g(3);
        std::uint64_t seed = 40;
        std::size_t compilations = 0, captures = 0;
        std::uint64_t hits = 0;
        for (std::int64_t b : {8, 16, 32, 5, 64, 128, 0, 8, 16, 32, 5, 64, 128}) {
            const jit::debug_state st = as_inputs ? passed.debug_state() : closed.debug_state();
            if (b == 0) {
                // Second round: one specialization serves every batch size (no capture, no
                // compilation, every call a hit of the first capture's plan).
                compilations = st.compilations;
                captures = st.captures;
                hits = st.levels.at(0).plan ? st.levels[0].plan->hits : 0;
                continue;
            }
            INFO("batch " << b);
            int_list sizes{b};
            for (std::int64_t d : sample) sizes.push_back(d);
            const Tensor x = randn(sizes, dtype::float32, g);
            const Tensor y = randint(0, 10, {b}, dtype::int64, g);
            manual_seed(++seed);
            const Tensor le = step(x, y, weights);
            const auto ge = autograd::grad({le}, std::vector<autograd::grad_input>(weights.begin(), weights.end()));
            manual_seed(seed);
            std::vector<Tensor> in{x, y};
            in.insert(in.end(), weights.begin(), weights.end());
            const Tensor lj = as_inputs ? passed(in) : closed(x, y);
            const auto gj = autograd::grad({lj}, std::vector<autograd::grad_input>(weights.begin(), weights.end()));
            CHECK(std::abs(lj.item<double>() - le.item<double>()) <= 2e-5 * (1.0 + std::abs(le.item<double>())));
            for (std::size_t i = 0; i < ge.size(); ++i) {
                INFO("gradient " << i);
                CHECK(allclose(gj[i], ge[i], 1e-4, 1e-5));
            }
        }
        const jit::debug_state d = as_inputs ? passed.debug_state() : closed.debug_state();
        INFO((as_inputs ? passed.debug_string() : closed.debug_string()));
        CHECK(d.compilations == compilations);
        CHECK(d.captures == captures);
        REQUIRE(d.levels.at(0).plan);
        CHECK(d.levels[0].plan->hits == hits + 6);
        CHECK(d.compilations <= 2);
        CHECK(d.total_guard_failures() == 0);
        // At most one capture besides the first call's (a batch of 8 may equal a model size
        // there): the others would each profile and never run an optimized plan.
        CHECK(d.captures <= 2);
        CHECK(d.other_unoptimized_runs == 0);
    }
}

}  // namespace

TEST_CASE("DYNAMIC serves training steps at every batch size from one differentiable plan",
          "[jit][differential][dynamic]") {
    namespace F = graft::nn::functional;
    generator g(9);
    SECTION("MLP: linear, layer_norm, GELU, dropout, cross_entropy") {
        const Tensor w1 = (randn({16, 32}, dtype::float32, g) * 0.2).requires_grad_();
        const Tensor b1 = zeros({32}).requires_grad_();
        const Tensor gamma = ones({32}).requires_grad_(), beta = zeros({32}).requires_grad_();
        const Tensor w2 = (randn({32, 10}, dtype::float32, g) * 0.2).requires_grad_();
        const auto step = [](Tensor x, Tensor y, const std::vector<Tensor>& p) {
            Tensor h = F::layer_norm(matmul(x, p[0]) + p[1], {32}, p[2], p[3]);
            h = F::dropout(F::gelu(h), 0.2);
            return F::cross_entropy(matmul(F::relu(h), p[4]), y);
        };
        check_dynamic_training(step, {w1, b1, gamma, beta, w2}, {16});
    }
    SECTION("CNN: conv2d, relu, max_pool2d, linear, cross_entropy") {
        // Batch sizes equal to model sizes: 8 the images' sides and conv2's channels, 16 conv1's
        // channels (which may change with conv2's inputs: a batch tied to them would not serve 32).
        const Tensor k1 = (randn({16, 1, 3, 3}, dtype::float32, g) * 0.3).requires_grad_();
        const Tensor k2 = (randn({8, 16, 3, 3}, dtype::float32, g) * 0.1).requires_grad_();
        const Tensor w = (randn({10, 8 * 2 * 2}, dtype::float32, g) * 0.2).requires_grad_();
        const auto step = [](Tensor x, Tensor y, const std::vector<Tensor>& p) {
            Tensor h = F::max_pool2d(F::relu(F::conv2d(x, p[0], {}, 1, 1)), 2);
            h = F::max_pool2d(F::relu(F::conv2d(h, p[1], {}, 1, 1)), 2);
            return F::cross_entropy(F::linear(h.flatten(1), p[2]), y);
        };
        check_dynamic_training(step, {k1, k2, w}, {1, 8, 8});
    }
    SECTION("attention block: softmax over masked scores, residual, mean") {
        const Tensor wq = (randn({8, 8}, dtype::float32, g) * 0.3).requires_grad_();
        const Tensor wo = (randn({8 * 4, 10}, dtype::float32, g) * 0.3).requires_grad_();
        const Tensor future = triu(ones({4, 4}), 1) > 0.5;  // masked: the positions after each query
        const auto step = [future](Tensor x, Tensor y, const std::vector<Tensor>& p) {
            const Tensor q = matmul(x, p[0]);                                   // [B, 4, 8]
            const Tensor scores = matmul(q, x.transpose(1, 2)) * (1.0 / std::sqrt(8.0));
            const Tensor att = F::softmax(masked_fill(scores, future, -1e9), -1);
            const Tensor h = matmul(att, x) + x;
            return F::cross_entropy(matmul(h.flatten(1), p[1]), y);
        };
        check_dynamic_training(step, {wq, wo}, {4, 8});
    }
    SECTION("multi-head attention: one projection split into q, k, v, viewed to heads, transposed") {
        // The backward reads the saved head views from the projection: as views whose sizes
        // follow the batch, not as an index constant of one batch's size.
        const Tensor wqkv = (randn({8, 24}, dtype::float32, g) * 0.3).requires_grad_();
        const Tensor wo = (randn({8 * 4, 10}, dtype::float32, g) * 0.3).requires_grad_();
        const auto step = [](Tensor x, Tensor y, const std::vector<Tensor>& p) {
            const std::int64_t b = x.size(0);
            const std::vector<Tensor> qkv = matmul(x, p[0]).split(8, 2);  // [B, 4, 8] each
            const auto heads = [&](const Tensor& t) { return t.view({b, 4, 2, 4}).transpose(1, 2); };
            const Tensor att = F::softmax(matmul(heads(qkv[0]), heads(qkv[1]).transpose(-2, -1)) * 0.5, -1);
            const Tensor h = matmul(att, heads(qkv[2])).transpose(1, 2).contiguous().view({b, 4, 8}) + x;
            return F::cross_entropy(matmul(h.flatten(1), p[1]), y);
        };
        check_dynamic_training(step, {wqkv, wo}, {4, 8});
    }
}

TEST_CASE("an executor that cannot build a differentiable plan says so once, through graft's log",
          "[jit][differential]") {
    std::vector<std::string> messages;
    const log_handler previous = set_log_handler([&](log_level level, std::string_view m) {
        if (level == log_level::warning) messages.emplace_back(m);
    });
    Tensor w = full({}, 1.5, dtype::float64).requires_grad_();
    const auto looped = [](Tensor v, Tensor k) {
        return while_loop([](const Tensor& c, const Tensor&) { return c.sum() < 10.0; },
                          [](const Tensor& c, const Tensor& s) { return std::vector<Tensor>{c * s, s}; }, v, k)[0];
    };
    const auto straight = [](Tensor v, Tensor k) { return tanh(v * k).sum(); };
    auto fl = jit::script(looped, strategy(jit::fusion_behavior::static_));
    auto fs = jit::script(straight, strategy(jit::fusion_behavior::static_));
    for (int i = 0; i < 4; ++i) {
        const Tensor x = rand({3}, dtype::float64) + 0.5;
        CHECK(bitwise_equal(fl(x, w), looped(x, w)));
        CHECK(bitwise_equal(fs(x, w), straight(x, w)));
    }
    set_log_handler(previous);
    REQUIRE(messages.size() == 1);  // the loop's executor, once; none for the straight-line graph
    CHECK(messages[0].find("no differentiable plan") != std::string::npos);
    CHECK(messages[0].find("prim::Loop") != std::string::npos);
}

// ---------------------------------------------------------------- generated programs
//
// Random straight-line programs (and some with graft::cond) over a batch of rows: elementwise
// ops, matmul with a weight, softmax / log_softmax, row reductions, broadcasting of a bias and a
// scalar. Each runs through eager graft, jit::script (STATIC and DYNAMIC, over changing batch
// sizes and grad modes) and capture::aot; results, gradients and errors must agree.
// GRAFT_DIFFERENTIAL_PROGRAMS=N runs N programs (default 40; docs/jit.md).

namespace {

struct program {
    std::uint64_t seed = 0;
    std::vector<std::array<int, 3>> code;  // op, first operand, second operand (value indices)
    bool branch = false;                   // wrap the tail in graft::cond
    bool second_output = false;
};

constexpr int num_ops = 18;

/// Value `k` of the program from the values before it (all [B, N], or [B, 1] after a row sum).
Tensor apply_op(int op, const Tensor& a, const Tensor& b, const Tensor& w, const Tensor& bias, const Tensor& s) {
    namespace F = graft::nn::functional;
    switch (op) {
        case 0: return a + b;
        case 1: return a - b * s;
        case 2: return a * b;
        case 3: return a / (b * b + 1.0);
        case 4: return tanh(a);
        case 5: return sigmoid(a) * 2.0 - 1.0;
        case 6: return F::relu(a) + bias;
        case 7: return exp(tanh(a));
        case 8: return maximum(a, b);
        case 9: return where(a > b, a, b * 0.5);
        case 10: return matmul(a, w);
        case 11: return F::softmax(a, -1);
        case 12: return F::log_softmax(a, 1) * 0.1;
        case 13: return a - mean(a, {1}, true);
        case 14: return F::gelu(a);
        case 15: return sqrt(abs(a) + 0.25);
        case 16: return a * sum(b, {1}, true) * 0.1;
        default: return sin(a) + cos(b);
    }
}

program make_program(std::uint64_t seed) {
    std::mt19937_64 r(seed);
    program p;
    p.seed = seed;
    const int length = 3 + static_cast<int>(r() % 8);
    for (int k = 0; k < length; ++k) {
        const int values = 2 + k;  // x and the bias-added x, then each op's result
        p.code.push_back({static_cast<int>(r() % num_ops), static_cast<int>(r() % values), static_cast<int>(r() % values)});
    }
    p.branch = r() % 4 == 0;
    p.second_output = r() % 3 == 0;
    return p;
}

std::vector<Tensor> run_program(const program& p, const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& s) {
    std::vector<Tensor> v{x, x + bias};
    const std::size_t split = p.code.size() / 2;
    for (std::size_t k = 0; k < split; ++k)
        v.push_back(apply_op(p.code[k][0], v[static_cast<std::size_t>(p.code[k][1])], v[static_cast<std::size_t>(p.code[k][2])], w, bias, s));
    const auto tail = [&](const Tensor& head, bool flip) {
        std::vector<Tensor> u = v;
        u.back() = flip ? head * -1.0 : head;
        for (std::size_t k = split; k < p.code.size(); ++k)
            u.push_back(apply_op(p.code[k][0], u[static_cast<std::size_t>(p.code[k][1])], u[static_cast<std::size_t>(p.code[k][2])], w, bias, s));
        return u;
    };
    std::vector<Tensor> u;
    if (p.branch) {
        const Tensor pred = v.back().sum() > 0.0;
        const Tensor last = cond(pred, [&](const Tensor& h) { return tail(h, false).back(); },
                                 [&](const Tensor& h) { return tail(h, true).back(); }, v.back());
        u = v;
        u.push_back(last);
    } else {
        u = tail(v.back(), false);
    }
    std::vector<Tensor> out{(u.back() * u.back()).mean() + s};
    if (p.second_output) out.push_back(u[u.size() / 2] * 2.0);
    return out;
}

/// max |a - b| / (1 + |b|), NaN equal to NaN.
double max_rel(const Tensor& a, const Tensor& b) {
    const auto x = a.detach().to(dtype::float64).contiguous().to_vector<double>();
    const auto y = b.detach().to(dtype::float64).contiguous().to_vector<double>();
    double m = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        if (std::isnan(x[i]) && std::isnan(y[i])) continue;
        if (std::isnan(x[i]) != std::isnan(y[i])) return 1e300;
        m = std::max(m, std::abs(x[i] - y[i]) / (1.0 + std::abs(y[i])));
    }
    return m;
}

/// Runs `call` and the eager program on the same inputs: same error or same values and grads.
template <class Call>
void compare_call(const program& p, Call&& call, const std::vector<Tensor>& in, bool grad, double tol,
                  const char* path) {
    INFO(path << ", grad mode " << grad);
    std::vector<Tensor> want, got;
    std::string want_error, got_error;
    std::vector<Tensor> leaves;
    for (const Tensor& t : in)
        if (t.requires_grad()) leaves.push_back(t);
    std::vector<Tensor> want_grads, got_grads;
    const auto grads_of = [&](const std::vector<Tensor>& out) {
        std::vector<Tensor> g;
        if (!grad || leaves.empty() || !out[0].requires_grad()) return g;
        return autograd::grad({out[0]}, std::vector<autograd::grad_input>(leaves.begin(), leaves.end()), {}, false,
                              false, true);
    };
    {
        std::optional<autograd::no_grad> ng;
        if (!grad) ng.emplace();
        try {
            want = run_program(p, in[0], in[1], in[2], in[3]);
        } catch (const graft::error& e) {
            want_error = e.what();
        }
        try {
            got = call(in);
        } catch (const graft::error& e) {
            got_error = e.what();
        }
    }
    INFO("eager error: " << want_error << "; this path's error: " << got_error);
    REQUIRE(want_error.empty() == got_error.empty());
    if (!want_error.empty()) return;
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
        REQUIRE(got[i].sizes() == want[i].sizes());
        // A captured cond's results require grad when either branch reads a value that does
        // (docs/capture.md): eager's only when the branch taken does.
        if (!p.branch || want[i].requires_grad()) CHECK(got[i].requires_grad() == want[i].requires_grad());
        CHECK(max_rel(got[i], want[i]) <= tol);
    }
    want_grads = grads_of(want);
    got_grads = grads_of(got);
    if (p.branch && want_grads.empty()) {
        for (const Tensor& g : got_grads)  // the untaken branch's leaves: zero gradients
            if (g.defined()) CHECK(g.abs().sum().item<double>() == 0.0);
        return;
    }
    REQUIRE(want_grads.size() == got_grads.size());
    for (std::size_t i = 0; i < want_grads.size(); ++i) {
        INFO("gradient of leaf " << i << " (of " << leaves.size() << ")");
        if (p.branch && !want_grads[i].defined() && got_grads[i].defined()) {
            // A leaf only the branch not taken reads: a captured cond's backward gives it zeros
            // (both branches are in the graph, as torch.cond's), eager cond none (docs/capture.md).
            CHECK(got_grads[i].abs().sum().item<double>() == 0.0);
            continue;
        }
        REQUIRE(got_grads[i].defined() == want_grads[i].defined());
        if (want_grads[i].defined()) CHECK(max_rel(got_grads[i], want_grads[i]) <= tol);
    }
}

}  // namespace

TEST_CASE("generated programs: eager, jit::script (STATIC, DYNAMIC) and capture::aot agree", "[jit][differential]") {
    std::size_t count = 40;
    if (const char* env = std::getenv("GRAFT_DIFFERENTIAL_PROGRAMS")) count = std::strtoull(env, nullptr, 10);
    for (std::uint64_t k = 0; k < count; ++k) {
        const program p = make_program(1000 + k);
        INFO("program seed " << p.seed << " (" << p.code.size() << " ops" << (p.branch ? ", cond" : "") << ")");
        std::mt19937_64 r(p.seed * 7 + 1);
        const dtype t = r() % 2 ? dtype::float32 : dtype::float64;
        const double tol = t == dtype::float32 ? 5e-4 : 1e-9;
        const std::int64_t n = 3 + static_cast<std::int64_t>(r() % 4);
        generator g(p.seed);
        const auto inputs = [&](std::int64_t batch) {
            std::vector<Tensor> in{randn({batch, n}, t, g), randn({n, n}, t, g) * 0.5, randn({n}, t, g), randn({}, t, g)};
            for (std::size_t i = 1; i < in.size(); ++i)
                if (r() % 3 != 0) in[i] = in[i].detach().requires_grad_();
            return in;
        };
        const auto f = [&p](const std::vector<Tensor>& in) { return run_program(p, in[0], in[1], in[2], in[3]); };
        const bool dynamic = r() % 2 == 0;
        jit::options o;
        o.fusion = {{dynamic ? jit::fusion_behavior::dynamic_ : jit::fusion_behavior::static_, 3}};
        o.num_profiled_runs = 1;
        auto fn = jit::script(f, o);
        INFO((dynamic ? "DYNAMIC" : "STATIC") << ", " << name(t));
        for (std::int64_t batch : {4, 4, 7, 4, 9}) {
            const std::vector<Tensor> in = inputs(batch);
            const bool grad = r() % 4 != 0;
            compare_call(p, [&](const std::vector<Tensor>& a) { return fn(a); }, in, grad, tol, "jit::script");
        }
        // capture::aot at one signature (aot refuses no straight-line program of these ops).
        const std::vector<Tensor> ex = inputs(5);
        try {
            const auto a = capture::aot(f, ex);
            compare_call(p, [&](const std::vector<Tensor>& in) { return a(in); }, ex, true, tol, "capture::aot");
        } catch (const graft::error& e) {
            // Only control flow with grad is outside aot's reach here: the loop/cond backward
            // recomputation is supported, so any refusal is a failure to report.
            FAIL("capture::aot refused: " << e.what());
        }
    }
}
