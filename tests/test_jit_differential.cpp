// Differential tests: programs run through eager graft, jit::script (STATIC and DYNAMIC),
// capture::aot and nn::script must give eager's results (and eager's errors) across changing
// signatures, grad modes and sizes.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
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

/// Runs `step` (a training step's loss from x [B, ...] and int64 targets y [B]) eagerly and under
/// a DYNAMIC jit::script over batch sizes 8, 16, 32, 5, 64, 128, with the same seed before each
/// call: losses and the weights' gradients must agree, with at most 2 compilations and no guard
/// failure after the first specialization.
template <class Step>
void check_dynamic_training(const Step& step, const std::vector<Tensor>& weights, const int_list& sample) {
    auto fn = jit::script(step, strategy(jit::fusion_behavior::dynamic_));
    generator g(3);
    std::uint64_t seed = 40;
    for (std::int64_t b : {8, 16, 32, 5, 64, 128}) {
        INFO("batch " << b);
        int_list sizes{b};
        for (std::int64_t d : sample) sizes.push_back(d);
        const Tensor x = randn(sizes, dtype::float32, g);
        const Tensor y = randint(0, 10, {b}, dtype::int64, g);
        manual_seed(++seed);
        const Tensor le = step(x, y);
        const auto ge = autograd::grad({le}, std::vector<autograd::grad_input>(weights.begin(), weights.end()));
        manual_seed(seed);
        const Tensor lj = fn(x, y);
        const auto gj = autograd::grad({lj}, std::vector<autograd::grad_input>(weights.begin(), weights.end()));
        CHECK(std::abs(lj.item<double>() - le.item<double>()) <= 2e-5 * (1.0 + std::abs(le.item<double>())));
        for (std::size_t i = 0; i < ge.size(); ++i) {
            INFO("gradient " << i);
            CHECK(allclose(gj[i], ge[i], 1e-4, 1e-5));
        }
    }
    const jit::debug_state d = fn.debug_state();
    INFO(fn.debug_string());
    CHECK(d.compilations <= 2);
    CHECK(d.total_guard_failures() == 0);
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
        const auto step = [=](Tensor x, Tensor y) {
            Tensor h = F::layer_norm(matmul(x, w1) + b1, {32}, gamma, beta);
            h = F::dropout(F::gelu(h), 0.2);
            return F::cross_entropy(matmul(F::relu(h), w2), y);
        };
        check_dynamic_training(step, {w1, b1, gamma, beta, w2}, {16});
    }
    SECTION("CNN: conv2d, relu, max_pool2d, linear, cross_entropy") {
        const Tensor k = (randn({4, 1, 3, 3}, dtype::float32, g) * 0.3).requires_grad_();
        const Tensor w = (randn({10, 4 * 4 * 4}, dtype::float32, g) * 0.2).requires_grad_();
        const auto step = [=](Tensor x, Tensor y) {
            const Tensor h = F::max_pool2d(F::relu(F::conv2d(x, k, {}, 1, 1)), 2);
            return F::cross_entropy(F::linear(h.flatten(1), w), y);
        };
        check_dynamic_training(step, {k, w}, {1, 8, 8});
    }
    SECTION("attention block: softmax over masked scores, residual, mean") {
        const Tensor wq = (randn({8, 8}, dtype::float32, g) * 0.3).requires_grad_();
        const Tensor wo = (randn({8 * 4, 10}, dtype::float32, g) * 0.3).requires_grad_();
        const Tensor future = triu(ones({4, 4}), 1) > 0.5;  // masked: the positions after each query
        const auto step = [=](Tensor x, Tensor y) {
            const Tensor q = matmul(x, wq);                                     // [B, 4, 8]
            const Tensor scores = matmul(q, x.transpose(1, 2)) * (1.0 / std::sqrt(8.0));
            const Tensor att = F::softmax(masked_fill(scores, future, -1e9), -1);
            const Tensor h = matmul(att, x) + x;
            return F::cross_entropy(matmul(h.flatten(1), wo), y);
        };
        check_dynamic_training(step, {wq, wo}, {4, 8});
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
