// Differential tests: programs run through eager graft, jit::script (STATIC and DYNAMIC),
// capture::aot and nn::script must give eager's results (and eager's errors) across changing
// signatures, grad modes and sizes.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
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
