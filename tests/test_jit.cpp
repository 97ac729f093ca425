// The profiling executor (graft::jit): profiling runs, specialization, fusion,
// guards, fallbacks and the fusion strategy, checked against the unoptimized
// interpreter (bitwise) and eager autograd / finite differences.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <graft/graft.hpp>

using namespace graft;

namespace {

Tensor chain(Tensor x, Tensor w, Tensor b) { return tanh(x * w + b) * sigmoid(x); }

/// Same dtype, sizes and bits.
bool bitwise_equal(const Tensor& a, const Tensor& b) {
    if (a.type() != b.type() || a.sizes() != b.sizes()) return false;
    const Tensor ca = a.contiguous(), cb = b.contiguous();
    const auto bytes = static_cast<std::size_t>(a.numel()) * a.element_size();
    return std::memcmp(ca.raw_data(), cb.raw_data(), bytes) == 0;
}

jit::options opts(jit::strategy s = jit::default_fusion_strategy::value(), std::size_t profiled = 1) {
    jit::options o;
    o.fusion = std::move(s);
    o.num_profiled_runs = profiled;
    o.release_profiling_after_optimization = false;
    return o;
}

std::vector<Tensor> inputs3(std::int64_t n, dtype t = dtype::float32, bool grad = false) {
    std::vector<Tensor> r{randn({n}, t), randn({n}, t), randn({n}, t)};
    if (grad)
        for (auto& x : r) x.requires_grad_();
    return r;
}

}  // namespace

TEST_CASE("jit: the fusion strategy's behaviour per remaining depth (getCurrentBehavior)", "[jit]") {
    const jit::strategy s = jit::fusion_strategy<jit::static_<2>, jit::dynamic_<10>>{};
    CHECK(jit::bailout_depth(s) == 12);
    // Depth 12 and 11: the first two specializations are static; 10..1 dynamic.
    CHECK(jit::current_behavior(s, 12) == jit::fusion_behavior::static_);
    CHECK(jit::current_behavior(s, 11) == jit::fusion_behavior::static_);
    CHECK(jit::current_behavior(s, 10) == jit::fusion_behavior::dynamic_);
    CHECK(jit::current_behavior(s, 1) == jit::fusion_behavior::dynamic_);
    const jit::strategy p = jit::parse_strategy("dynamic:3,STATIC:1");
    REQUIRE(p.size() == 2);
    CHECK(p[0] == std::pair{jit::fusion_behavior::dynamic_, std::size_t{3}});
    CHECK(p[1] == std::pair{jit::fusion_behavior::static_, std::size_t{1}});
    CHECK(jit::current_behavior(p, 4) == jit::fusion_behavior::dynamic_);
    CHECK(jit::current_behavior(p, 1) == jit::fusion_behavior::static_);
    CHECK_THROWS_WITH(jit::parse_strategy("STATIC=2"), Catch::Contains("cannot parse fusion strategy"));
    CHECK_THROWS_WITH(jit::parse_strategy("FAST:2"), Catch::Contains("cannot parse fusion strategy"));
    CHECK_THROWS_AS(jit::set_fusion_strategy({}), graft::error);
    const jit::strategy old = jit::set_fusion_strategy({{jit::fusion_behavior::dynamic_, 4}});
    CHECK(jit::default_options().fusion == jit::strategy{{jit::fusion_behavior::dynamic_, 4}});
    jit::set_fusion_strategy(old);
}

TEST_CASE("jit: exactly one profiling run by default, then one fused plan", "[jit]") {
    auto fn = jit::script(chain, opts());
    const auto in = inputs3(3000);
    Tensor y1 = fn(in[0], in[1], in[2]);
    jit::debug_state d = fn.debug_state();
    REQUIRE(d.levels.size() == 1);
    CHECK(d.levels[0].profiled_runs == 1);
    CHECK_FALSE(d.levels[0].plan);
    CHECK(bitwise_equal(y1, chain(in[0], in[1], in[2])));

    const auto in2 = inputs3(3000);
    Tensor y2 = fn(in2[0], in2[1], in2[2]);
    d = fn.debug_state();
    REQUIRE(d.levels[0].plan);
    const jit::plan_state& p = *d.levels[0].plan;
    CHECK(d.levels[0].profiled_runs == 1);
    CHECK(p.kind == jit::plan_kind::fused);
    CHECK(p.behavior == jit::fusion_behavior::static_);
    CHECK(p.fusion_groups == 1);
    CHECK(p.hits == 1);
    CHECK(p.guard_failures == 0);
    CHECK(d.compilations == 1);
    // The fused tile loop runs the eager kernels in the same order: the same bits.
    CHECK(bitwise_equal(y2, chain(in2[0], in2[1], in2[2])));
    CHECK(p.guards[0].find("Float(3000, strides=[1], requires_grad=0)") != std::string::npos);
    CHECK(p.graph.find("FusionGroup_0 (5 ops") != std::string::npos);
}

TEST_CASE("jit: num_profiled_runs is honoured", "[jit]") {
    auto fn = jit::script(chain, opts(jit::default_fusion_strategy::value(), 3));
    for (int i = 0; i < 3; ++i) {
        const auto in = inputs3(64);
        CHECK(bitwise_equal(fn(in[0], in[1], in[2]), chain(in[0], in[1], in[2])));
        CHECK_FALSE(fn.debug_state().levels[0].plan);
        CHECK(fn.debug_state().levels[0].profiled_runs == static_cast<std::size_t>(i + 1));
    }
    const auto in = inputs3(64);
    CHECK(bitwise_equal(fn(in[0], in[1], in[2]), chain(in[0], in[1], in[2])));
    REQUIRE(fn.debug_state().levels[0].plan);
    CHECK(fn.debug_state().levels[0].plan->hits == 1);
}

TEST_CASE("jit: profiled runs with two sizes merge into a symbolic size", "[jit]") {
    auto fn = jit::script(chain, opts(jit::default_fusion_strategy::value(), 2));
    for (std::int64_t n : {100, 200, 300, 7}) {
        const auto in = inputs3(n);
        CHECK(bitwise_equal(fn(in[0], in[1], in[2]), chain(in[0], in[1], in[2])));
    }
    const jit::debug_state d = fn.debug_state();
    REQUIRE(d.levels[0].plan);
    // The size is symbolic, so sizes 300 and 7 pass the guard: no fallback was needed.
    CHECK(d.levels[0].plan->guards[0] == "Float(*, contiguous=1, requires_grad=0)");
    CHECK(d.levels[0].plan->seen_shapes[0] == "[100], [200]");
    CHECK(d.levels[0].plan->hits == 2);
    CHECK(d.levels[0].plan->guard_failures == 0);
}

TEST_CASE("jit: the profiling record is released after the configured delay", "[jit]") {
    jit::options o = opts();
    o.release_profiling_after_optimization = true;
    o.release_profiling_delay_ms = 20;
    auto fn = jit::script(chain, o);
    const auto in = inputs3(16);
    (void)fn(in[0], in[1], in[2]);
    (void)fn(in[0], in[1], in[2]);
    CHECK_FALSE(fn.debug_state().levels[0].profiling_released);
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    (void)fn(in[0], in[1], in[2]);  // the first optimized call after the delay releases it
    CHECK(fn.debug_state().levels[0].profiling_released);
}

TEST_CASE("jit: shape changes bail out to fallbacks, STATIC then DYNAMIC, depth spent means no compiling",
          "[jit]") {
    jit::options o = opts(jit::fusion_strategy<jit::static_<2>, jit::dynamic_<1>>{});
    o.automatic_dynamic = false;  // the strategy's steps exactly as written (TorchScript)
    auto fn = jit::script(chain, o);
    const auto call = [&](std::int64_t n) {
        const auto in = inputs3(n);
        const Tensor y = fn(in[0], in[1], in[2]);
        CHECK(bitwise_equal(y, chain(in[0], in[1], in[2])));
    };
    call(100);  // profile
    call(100);  // STATIC specialization for 100
    call(200);  // guard fails: the fallback function profiles 200 (a correct result all the same)
    jit::debug_state d = fn.debug_state();
    REQUIRE(d.levels.size() == 2);
    CHECK(d.levels[0].plan->guard_failures == 1);
    CHECK(d.levels[1].remaining_depth == 2);
    CHECK(d.levels[1].profiled_runs == 1);
    call(200);  // the fallback specializes: STATIC again (second of two)
    call(100);  // still served by the first specialization
    d = fn.debug_state();
    REQUIRE(d.levels[1].plan);
    CHECK(d.levels[0].plan->behavior == jit::fusion_behavior::static_);
    CHECK(d.levels[1].plan->behavior == jit::fusion_behavior::static_);
    CHECK(d.levels[0].plan->hits == 2);
    CHECK(d.levels[1].plan->hits == 1);
    call(300);  // fails both static guards: profiled by the third executor
    call(300);  // which specializes DYNAMIC: any size of rank 1
    call(1234);
    d = fn.debug_state();
    REQUIRE(d.levels.size() == 4);
    REQUIRE(d.levels[2].plan);
    CHECK(d.levels[2].plan->behavior == jit::fusion_behavior::dynamic_);
    CHECK(d.levels[2].plan->hits == 2);
    CHECK(d.levels[2].plan->guards[0].find("Float(*,") != std::string::npos);
    CHECK(d.compilations == 3);
    // A float64 input fails every guard; the depth is spent: unoptimized from now on. (An input
    // of another rank, or with a size of 0 or 1 where the capture had more, gets a capture of
    // its own: the graph was only checked to be f at other sizes of the same rank.)
    for (int i = 0; i < 3; ++i) {
        const std::vector<Tensor> in{randn({40}, dtype::float64), randn({40}, dtype::float64),
                                     randn({40}, dtype::float64)};
        CHECK(bitwise_equal(fn(in)[0], chain(in[0], in[1], in[2])));
    }
    d = fn.debug_state();
    CHECK(d.compilations == 3);
    REQUIRE(d.levels.size() == 4);
    CHECK(d.levels[3].remaining_depth == 0);
    CHECK(d.levels[3].unoptimized_runs == 3);
    CHECK_FALSE(d.levels[3].plan);
}

TEST_CASE("jit: automatic dynamic: a STATIC plan that bails out on sizes alone is followed by a DYNAMIC one",
          "[jit]") {
    auto fn = jit::script(chain, opts(jit::fusion_strategy<jit::static_<2>, jit::dynamic_<2>>{}));
    const auto call = [&](std::int64_t n, dtype t = dtype::float32) {
        const auto in = inputs3(n, t);
        const Tensor y = fn(in[0], in[1], in[2]);
        CHECK(bitwise_equal(y, chain(in[0], in[1], in[2])));
    };
    call(100);  // profile
    call(100);  // STATIC for 100
    call(200);  // guard fails on sizes: the fallback profiles 200
    call(300);  // the fallback compiles: DYNAMIC at once (the strategy would give a second STATIC plan)
    call(7);
    call(100);  // still the STATIC plan
    jit::debug_state d = fn.debug_state();
    REQUIRE(d.levels.size() == 3);
    REQUIRE(d.levels[1].plan);
    CHECK(d.levels[0].plan->behavior == jit::fusion_behavior::static_);
    CHECK_FALSE(d.levels[0].plan->automatic_dynamic);
    CHECK(d.levels[1].plan->behavior == jit::fusion_behavior::dynamic_);
    CHECK(d.levels[1].plan->automatic_dynamic);
    CHECK(d.levels[1].plan->hits == 2);  // 300, 7
    CHECK(d.levels[0].plan->hits == 2);
    CHECK(d.compilations == 2);
    std::ostringstream os;
    os << d;
    CHECK(os.str().find("automatic dynamic") != std::string::npos);
    // A dtype change is not a size change: the next fallback follows the strategy.
    call(100, dtype::float64);
    call(100, dtype::float64);
    d = fn.debug_state();
    REQUIRE(d.levels.size() == 4);
    REQUIRE(d.levels[2].plan);
    CHECK(d.levels[2].plan->behavior == jit::fusion_behavior::dynamic_);  // remaining depth 2: the strategy's DYNAMIC
    CHECK_FALSE(d.levels[2].plan->automatic_dynamic);
}

TEST_CASE("jit: automatic dynamic does not promote a fallback whose inputs changed dtype", "[jit]") {
    auto fn = jit::script(chain, opts(jit::fusion_strategy<jit::static_<2>, jit::dynamic_<1>>{}));
    const auto call = [&](std::int64_t n, dtype t) {
        const auto in = inputs3(n, t);
        CHECK(bitwise_equal(fn(in[0], in[1], in[2]), chain(in[0], in[1], in[2])));
    };
    call(100, dtype::float32);
    call(100, dtype::float32);  // STATIC float32 [100]
    call(100, dtype::float64);  // fallback profiles float64
    call(100, dtype::float64);  // compiles: STATIC (not a size change)
    const jit::debug_state d = fn.debug_state();
    REQUIRE(d.levels.size() >= 2);
    REQUIRE(d.levels[1].plan);
    CHECK(d.levels[1].plan->behavior == jit::fusion_behavior::static_);
    CHECK_FALSE(d.levels[1].plan->automatic_dynamic);
    CHECK(d.levels[1].plan->guards[0].find("Double(100") != std::string::npos);
}

TEST_CASE("jit: dtype changes fall back and give the eager result", "[jit]") {
    auto fn = jit::script(chain, opts());
    for (int i = 0; i < 2; ++i) {
        const auto in = inputs3(50);
        CHECK(bitwise_equal(fn(in[0], in[1], in[2]), chain(in[0], in[1], in[2])));
    }
    for (int i = 0; i < 3; ++i) {
        const auto in = inputs3(50, dtype::float64);
        const Tensor y = fn(in[0], in[1], in[2]);
        CHECK(y.type() == dtype::float64);
        CHECK(bitwise_equal(y, chain(in[0], in[1], in[2])));
    }
    // The top plan, the fallback's plan, and the next fallback (not called yet).
    const jit::debug_state d = fn.debug_state();
    REQUIRE(d.levels.size() == 3);
    REQUIRE(d.levels[1].plan);
    CHECK(d.levels[0].plan->guard_failures == 3);
    CHECK(d.levels[2].profiled_runs == 0);
    CHECK(d.levels[1].plan->guards[0].find("Double(50") != std::string::npos);
    CHECK(d.levels[1].plan->kind == jit::plan_kind::fused);
}

TEST_CASE("jit: requires_grad changes give a differentiable plan whose gradients match eager", "[jit]") {
    auto fn = jit::script(chain, opts());
    for (int i = 0; i < 2; ++i) {
        const auto in = inputs3(40, dtype::float64);
        CHECK_FALSE(fn(in[0], in[1], in[2]).requires_grad());
    }
    for (int i = 0; i < 3; ++i) {
        const auto in = inputs3(40, dtype::float64, true);
        Tensor y = fn(in[0], in[1], in[2]);
        REQUIRE(y.requires_grad());
        const Tensor g = randn({40}, dtype::float64);
        const auto got = autograd::grad({y}, {in[0], in[1], in[2]}, {g});
        Tensor ye = chain(in[0], in[1], in[2]);
        CHECK(bitwise_equal(y.detach(), ye.detach()));
        const auto want = autograd::grad({ye}, {in[0], in[1], in[2]}, {g});
        for (std::size_t k = 0; k < 3; ++k) CHECK(allclose(got[k], want[k], 1e-12, 1e-12));
        if (i == 2) {
            REQUIRE(y.grad_fn());
            CHECK(std::string(y.grad_fn()->name()) == "DifferentiableGraphBackward");
            // Finite differences of the executor itself (central, float64) for dL/dx with L = sum(g*y).
            for (std::int64_t j : {0, 17, 39}) {
                const double h = 1e-6;
                std::vector<Tensor> p{in[0].detach().clone(), in[1].detach(), in[2].detach()};
                std::vector<Tensor> m{in[0].detach().clone(), in[1].detach(), in[2].detach()};
                p[0].select(0, j).add_(h);
                m[0].select(0, j).sub_(h);
                const double fd = ((chain(p[0], p[1], p[2]) - chain(m[0], m[1], m[2])) * g).sum().item<double>() / (2 * h);
                CHECK(got[0].select(0, j).item<double>() == Approx(fd).epsilon(1e-6));
            }
        }
    }
    const jit::debug_state d = fn.debug_state();
    REQUIRE(d.levels.size() == 3);
    REQUIRE(d.levels[1].plan);
    CHECK(d.levels[1].plan->kind == jit::plan_kind::differentiable);
    CHECK(d.levels[1].plan->fusion_groups >= 2);  // forward and backward fused
    CHECK(d.levels[1].plan->hits == 2);
}

TEST_CASE("jit: recompute_elementwise_in_backward gives eager's gradients from fewer saved values", "[jit]") {
    // Both partitions run the same arithmetic: forward bitwise eager's, gradients within
    // rounding of eager's; recomputation saves only the chain's inputs.
    std::size_t saved[2] = {0, 0};
    for (const bool recompute : {false, true}) {
        jit::options o = opts();
        o.recompute_elementwise_in_backward = recompute;
        auto fn = jit::script(chain, o);
        for (int i = 0; i < 3; ++i) {
            const auto in = inputs3(33, dtype::float64, true);
            Tensor y = fn(in[0], in[1], in[2]);
            const Tensor g = randn({33}, dtype::float64);
            const auto got = autograd::grad({y}, {in[0], in[1], in[2]}, {g}, /*retain_graph=*/true);
            Tensor ye = chain(in[0], in[1], in[2]);
            CHECK(bitwise_equal(y.detach(), ye.detach()));
            const auto want = autograd::grad({ye}, {in[0], in[1], in[2]}, {g});
            for (std::size_t k = 0; k < 3; ++k) CHECK(allclose(got[k], want[k], 1e-12, 1e-12));
            if (i == 2) {
                REQUIRE(y.grad_fn());
                auto* node = dynamic_cast<autograd::function_node*>(y.grad_fn().get());
                REQUIRE(node);
                for (const auto& v : node->saved_variables()) saved[recompute] += v.defined() ? 1 : 0;
            }
        }
    }
    // tanh(x*w+b)*sigmoid(x): save_all keeps the two activations (and what their
    // derivatives read); recomputation keeps only x, w and b.
    CHECK(saved[1] <= 3);
    CHECK(saved[1] < saved[0]);
}

TEST_CASE("jit: a differentiable plan on strided or one-element inputs matches eager (no direct loop)", "[jit]") {
    // The plans' one-loop path takes contiguous inputs at the group's shape and one-element
    // inputs; transposed leaves go through the general path of the same plans.
    auto fn = jit::script(chain, opts());
    for (int i = 0; i < 4; ++i) {
        std::vector<Tensor> in{randn({3, 8}, dtype::float64).t().detach(), randn({3, 8}, dtype::float64).t().detach(),
                               randn({1, 1}, dtype::float64)};
        for (auto& t : in) t.requires_grad_();
        REQUIRE_FALSE(in[0].is_contiguous());
        Tensor y = fn(in[0], in[1], in[2]);
        const Tensor g = randn({8, 3}, dtype::float64);
        const auto got = autograd::grad({y}, {in[0], in[1], in[2]}, {g});
        Tensor ye = chain(in[0], in[1], in[2]);
        CHECK(bitwise_equal(y.detach(), ye.detach()));
        const auto want = autograd::grad({ye}, {in[0], in[1], in[2]}, {g});
        for (std::size_t k = 0; k < 3; ++k) {
            REQUIRE(got[k].sizes() == in[k].sizes());
            CHECK(allclose(got[k], want[k], 1e-12, 1e-12));
        }
    }
    const jit::debug_state d = fn.debug_state();
    REQUIRE(d.levels[0].plan);
    CHECK(d.levels[0].plan->kind == jit::plan_kind::differentiable);
    CHECK(d.levels[0].plan->hits == 3);
}

TEST_CASE("jit: a double backward through a differentiable plan is refused with a clear error", "[jit]") {
    auto fn = jit::script(chain, opts());
    const auto in = inputs3(10, dtype::float64, true);
    (void)fn(in[0], in[1], in[2]);
    Tensor y = fn(in[0], in[1], in[2]).sum();
    REQUIRE(fn.debug_state().levels[0].plan->kind == jit::plan_kind::differentiable);
    CHECK_THROWS_WITH(autograd::grad({y}, {in[0]}, {}, /*retain_graph=*/true, /*create_graph=*/true),
                      Catch::Contains("DifferentiableGraphBackward: double backward"));
    // The graph is intact: a first-order backward still works and matches eager.
    const auto g = autograd::grad({y}, {in[0]});
    const auto want = autograd::grad({chain(in[0], in[1], in[2]).sum()}, {in[0]});
    CHECK(allclose(g[0], want[0], 1e-12, 1e-12));
}

TEST_CASE("jit: fused plans equal the unoptimized interpreter bitwise (tails, numbers, 0-dim broadcast)", "[jit]") {
    const auto f = [](Tensor x, Tensor w, Tensor s) {
        return exp(-abs(x)) * 0.5 + relu(w) / (s + 2.0) - sqrt(abs(x * w)) + maximum(x, w) * cos(s);
    };
    for (std::int64_t n : {std::int64_t{1}, std::int64_t{7}, std::int64_t{1023}, std::int64_t{1025},
                           std::int64_t{70001}}) {
        for (dtype t : {dtype::float32, dtype::float64}) {
            auto fn = jit::script(f, opts());
            for (int i = 0; i < 3; ++i) {
                const std::vector<Tensor> in{randn({n}, t), randn({n}, t), randn({}, t)};
                const Tensor y = fn(in)[0];
                const Tensor ref = ir::interpret(*fn.graph(), in)[0];
                CHECK(bitwise_equal(y, ref));
                CHECK(bitwise_equal(y, f(in[0], in[1], in[2])));
            }
            const jit::debug_state d = fn.debug_state();
            REQUIRE(d.levels[0].plan);
            CHECK(d.levels[0].plan->fusion_groups == 1);
        }
    }
}

TEST_CASE("jit: the per-call path of one-group plans: eager's bits, fresh outputs, guards on every layout",
          "[jit]") {
    // chain(x, w, b) with b 0-dim: one fusion group over the inputs, run straight from the
    // tensors after the guards (sizes in whole vectors take one sweep; others have tails).
    const auto f = [](Tensor x, Tensor w, Tensor b) { return tanh(x * w + b) * sigmoid(x); };
    for (std::int64_t n : {std::int64_t{8}, std::int64_t{16}, std::int64_t{48}, std::int64_t{64},
                           std::int64_t{100}, std::int64_t{1025}}) {
        for (dtype t : {dtype::float32, dtype::float64}) {
            auto fn = jit::script(f, opts());
            const Tensor x = randn({n}, t), w = randn({n}, t), b = randn({}, t);
            const Tensor first = fn(x, w, b);  // profiling run
            const Tensor a = fn(x, w, b), c = fn(x, w, b);
            CHECK(bitwise_equal(a, f(x, w, b)));
            CHECK(bitwise_equal(c, f(x, w, b)));
            CHECK(a.raw_data() != c.raw_data());  // every call gives a tensor of its own
            CHECK(a.is_contiguous());
            // Another layout of x (every other element of a larger tensor): the guards refuse
            // the plan, the fallback gives eager's result; then the plan serves again.
            const Tensor strided = randn({n, 2}, t).select(1, 0);
            CHECK(bitwise_equal(fn(strided, w, b), f(strided, w, b)));
            const Tensor x2 = randn({n}, t);
            CHECK(bitwise_equal(fn(x2, w, b), f(x2, w, b)));
            // b given at full size instead of 0-dim: a broadcast input becomes a contiguous one.
            const Tensor bn = randn({n}, t);
            CHECK(bitwise_equal(fn(x, w, bn), f(x, w, bn)));
            const jit::debug_state d = fn.debug_state();
            REQUIRE(d.levels[0].plan);
            CHECK(d.levels[0].plan->fusion_groups == 1);
            CHECK(d.levels[0].plan->hits == 3);  // a, c and x2
            CHECK(d.levels[0].plan->guard_failures == 1);  // strided (bn's rank differs: a capture of its own)
        }
    }
    // Two outputs, one of them returned twice.
    auto two = jit::script([](Tensor x, Tensor w) {
        Tensor y = exp(x) * w;
        return std::vector<Tensor>{y, y, sin(x) - w};
    }, opts());
    const Tensor x = randn({33}), w = randn({33});
    for (int i = 0; i < 3; ++i) {
        const std::vector<Tensor> r = two(x, w);
        REQUIRE(r.size() == 3);
        CHECK(bitwise_equal(r[0], exp(x) * w));
        CHECK(bitwise_equal(r[1], exp(x) * w));
        CHECK(bitwise_equal(r[2], sin(x) - w));
    }
    // A script called while another captures is refused clearly; both stay usable.
    auto inner = jit::script([](Tensor x) { return tanh(x) * 2.0; }, opts());
    auto outer = jit::script([&](Tensor x, Tensor y) { return inner(x) + y; }, opts());
    const Tensor p = randn({40}), q = randn({40});
    CHECK_THROWS_AS(outer(p, q), graft::error);
    for (int i = 0; i < 3; ++i) CHECK(bitwise_equal(inner(p), tanh(p) * 2.0));
}

TEST_CASE("jit: a script's hot path (the executor's exact guards alone) serves only calls its capture serves",
          "[jit]") {
    // A capture whose graph takes f's own inputs and gives fresh outputs skips the script's own
    // checks when the executor's STATIC guards admit a call. Every other kind of call, interleaved
    // with those, must still reach its own plan: other sizes, dtypes, aliased inputs, inputs that
    // require grad (a differentiable plan: gradients as eager's).
    const auto f = [](Tensor x, Tensor w) { return tanh(x * w) + w; };
    auto fn = jit::script(f, opts());
    const Tensor x16 = randn({16}), w16 = randn({16}), x32 = randn({32}), w32 = randn({32});
    const Tensor x16d = randn({16}, dtype::float64), w16d = randn({16}, dtype::float64);
    std::uint64_t hits_before = 0;
    for (int round = 0; round < 4; ++round) {
        CHECK(bitwise_equal(fn(x16, w16), f(x16, w16)));
        CHECK(bitwise_equal(fn(x32, w32), f(x32, w32)));
        CHECK(bitwise_equal(fn(x16d, w16d), f(x16d, w16d)));
        CHECK(bitwise_equal(fn(x16, x16), f(x16, x16)));  // f writes nothing: aliasing changes nothing
        Tensor xg = x16.clone().requires_grad_();
        const Tensor y = fn(xg, w16);
        REQUIRE(y.requires_grad());
        CHECK(bitwise_equal(y.detach(), f(x16, w16)));
        y.sum().backward();
        const Tensor t = tanh(x16 * w16);
        CHECK(allclose(xg.grad(), (t * t * -1.0 + 1.0) * w16, 1e-5, 1e-6));  // (1 - tanh^2(xw)) w
        if (round == 1) hits_before = fn.debug_state().levels[0].plan ? fn.debug_state().levels[0].plan->hits : 0;
    }
    const jit::debug_state d = fn.debug_state();
    REQUIRE(d.levels[0].plan);
    CHECK(d.levels[0].plan->hits > hits_before);  // the optimized plan kept serving
}

TEST_CASE("jit: a run longer than a group may hold splits into several groups, same bits", "[jit]") {
    // 300 fusable nodes; a group holds at most max_group_nodes (its registers are bounded).
    const auto f = [](Tensor x, Tensor w, Tensor b) {
        Tensor y = x;
        for (int i = 0; i < 100; ++i) y = where(gt(y, b), y * w, y + b);
        return y;
    };
    auto fn = jit::script(f, opts());
    for (int i = 0; i < 3; ++i) {
        const Tensor x = randn({129}), w = rand({129}) * 0.5 + 0.6, b = randn({129}) * 0.1;
        CHECK(bitwise_equal(fn(x, w, b), f(x, w, b)));
    }
    REQUIRE(fn.debug_state().levels[0].plan);
    CHECK(fn.debug_state().levels[0].plan->fusion_groups >= 300 / jit::detail::max_group_nodes);
}

TEST_CASE("jit: a value one node reads is computed right before it in its group, same bits", "[jit]") {
    // Traced in the order a (mul), b (add), d (sub), e (mul); a and d each have one reader, b
    // has two: the group runs b, a, d, e, so that a sweeps together with d; no element changes.
    const auto f = [](Tensor x, Tensor y) {
        const Tensor a = x * y;
        const Tensor b = x + 1.0;
        const Tensor d = b - a;
        return d * b;
    };
    for (std::int64_t n : {std::int64_t{16}, std::int64_t{1000}, std::int64_t{70001}}) {
        auto fn = jit::script(f, opts());
        for (int i = 0; i < 3; ++i) {
            const Tensor x = randn({n}), y = randn({n});
            CHECK(bitwise_equal(fn(x, y), f(x, y)));
        }
        const std::string text = fn.debug_string();
        INFO(text);
        const auto group = text.find("FusionGroup_0 (4 ops");
        REQUIRE(group != std::string::npos);
        const std::string ops = text.substr(text.find(':', group));
        const auto add = ops.find("= add;"), mul = ops.find("= mul;"), sub = ops.find("= sub;");
        REQUIRE(add != std::string::npos);
        REQUIRE(mul != std::string::npos);
        REQUIRE(sub != std::string::npos);
        CHECK(add < mul);
        CHECK(mul < sub);
        CHECK(sub < ops.find("= mul;", mul + 1));
    }
}

TEST_CASE("jit: comparisons and where fuse (relu's backward), bitwise as eager", "[jit]") {
    // Differentiable: relu's backward is where(y <= 0, 0, g); it joins the backward's group.
    const auto f = [](Tensor x, Tensor w) { return relu(x * w + 0.25) * x; };
    for (dtype t : {dtype::float32, dtype::float64}) {
        auto fn = jit::script(f, opts());
        for (int i = 0; i < 3; ++i) {
            const Tensor x = randn({300}, t).requires_grad_(), w = randn({300}, t).requires_grad_();
            const Tensor g = randn({300}, t);
            const Tensor y = fn(x, w);
            const auto grads = autograd::grad({y}, {x, w}, {g});
            const Tensor xe = x.detach().requires_grad_(), we = w.detach().requires_grad_();
            const Tensor ye = f(xe, we);
            const auto want = autograd::grad({ye}, {xe, we}, {g});
            CHECK(bitwise_equal(y, ye));
            CHECK(bitwise_equal(grads[0], want[0]));
            CHECK(bitwise_equal(grads[1], want[1]));
        }
        const std::string text = fn.debug_string();
        INFO(text);
        CHECK(text.find("= le;") != std::string::npos);  // the comparison inside a fusion group
        CHECK(text.find("= where;") != std::string::npos);
    }
    // A comparison also returned: fused as a condition, its bool tensor made after the group.
    const auto h = [](Tensor x, Tensor y) {
        const Tensor c = gt(x, y);
        return std::vector<Tensor>{where(c, x * 2.0, y) - x, c};
    };
    auto fh = jit::script(h, opts());
    for (int i = 0; i < 3; ++i) {
        const Tensor x = randn({7, 33}), y = randn({7, 33});
        const auto got = fh(x, y);
        const auto want = h(x, y);
        CHECK(bitwise_equal(got[0], want[0]));
        REQUIRE(got[1].type() == dtype::bool_);
        CHECK(bitwise_equal(got[1], want[1]));
    }
    CHECK(fh.debug_string().find("= where;") != std::string::npos);
}

TEST_CASE("jit: a bias row broadcast over leading dimensions fuses without a full-size copy, same bits", "[jit]") {
    // x [R, C] (or [B, R, C]) with a bias b of C (or [1, C], [R, C] under a batch): the group
    // reads the row in place (period C); results are eager's bits at every tail and period.
    const auto f = [](Tensor x, Tensor b) { return tanh(x * 0.5 + b) * b; };
    struct shape_case {
        int_list x, b;
    };
    for (const shape_case& c : {shape_case{{128, 32}, {32}}, shape_case{{7, 3}, {3}}, shape_case{{5, 300}, {1, 300}},
                                shape_case{{3, 4, 5}, {4, 5}}, shape_case{{33, 129}, {129}}}) {
        for (dtype t : {dtype::float32, dtype::float64}) {
            jit::options o = opts();
            o.num_threads = 2;
            o.parallel_grain = 64;  // split the larger cases across threads too
            auto fn = jit::script(f, o);
            for (int i = 0; i < 3; ++i) {
                const Tensor x = randn(c.x, t), b = randn(c.b, t);
                CHECK(bitwise_equal(fn(x, b), f(x, b)));
            }
            const jit::debug_state d = fn.debug_state();
            REQUIRE(d.levels[0].plan);
            CHECK(d.levels[0].plan->fusion_groups == 1);
        }
    }
}

TEST_CASE("jit: a sum over leading dimensions ends a fusion group (bias gradients), bitwise as eager", "[jit]") {
    // The sum is computed as the group produces its operand, in the eager column reduction's
    // order (first row, then blocks of 256 rows): the same bits, at every row count and tail.
    struct sum_case {
        int_list x, b;
        std::vector<std::int64_t> dims;
        bool keepdim;
        bool fuses;  // inner >= 16: the column reduction's condition
    };
    const std::vector<sum_case> cases{
        {{128, 32}, {32}, {0}, false, true},         {{600, 17}, {17}, {0}, true, true},  // 3 blocks
        {{2, 40}, {40}, {-2}, false, true},          {{4, 6, 20}, {20}, {1, 0}, true, true},
        {{5, 3, 7}, {3, 7}, {0}, false, true},       {{3, 4, 5}, {5}, {0, 1}, true, false},
        {{258, 16}, {16}, {0}, false, true},         {{257, 33}, {33}, {0}, false, true}};
    for (const sum_case& c : cases) {
        for (dtype t : {dtype::float32, dtype::float64}) {
            const auto f = [&c](Tensor x, Tensor b) {
                const Tensor y = tanh(x * 0.5 + b) * b;
                return std::vector<Tensor>{sum(y, int_list(c.dims.begin(), c.dims.end()), c.keepdim), y * 2.0};
            };
            auto fn = jit::script(f, opts());
            for (int i = 0; i < 3; ++i) {
                const Tensor x = randn(c.x, t), b = randn(c.b, t);
                const auto got = fn(x, b);
                const auto want = f(x, b);
                INFO("x " << c.x << " dims " << int_list(c.dims.begin(), c.dims.end()) << " keepdim " << c.keepdim);
                CHECK(bitwise_equal(got[0], want[0]));
                CHECK(bitwise_equal(got[1], want[1]));
                // Against a plain loop too: sums over the leading rows.
                const Tensor rows = want[1].detach().reshape({-1, want[0].numel()}) * 0.5;
                for (std::int64_t col : {std::int64_t{0}, want[0].numel() - 1}) {
                    double s = 0;
                    for (std::int64_t r = 0; r < rows.size(0); ++r) s += rows.select(0, r).select(0, col).item<double>();
                    CHECK(got[0].reshape({-1}).select(0, col).item<double>() ==
                          Approx(s).epsilon(t == dtype::float32 ? 1e-4 : 1e-10).margin(1e-5));
                }
            }
            const std::string text = fn.debug_string();
            INFO(text);
            CHECK((text.find("= sum;") != std::string::npos) == c.fuses);
        }
    }
    // A bias gradient (sum of the output gradient over the batch) through a differentiable plan.
    const auto g = [](Tensor x, Tensor w, Tensor b) { return tanh(matmul(x, w) + b) * 3.0; };
    auto fg = jit::script(g, opts());
    for (int i = 0; i < 3; ++i) {
        const Tensor x = randn({64, 8}), w = randn({8, 24}).requires_grad_(), b = randn({24}).requires_grad_();
        const Tensor seed = randn({64, 24});
        const auto got = autograd::grad({fg(x, w, b)}, {w, b}, {seed});
        const Tensor we = w.detach().requires_grad_(), be = b.detach().requires_grad_();
        const auto want = autograd::grad({g(x, we, be)}, {we, be}, {seed});
        CHECK(bitwise_equal(got[0], want[0]));
        CHECK(bitwise_equal(got[1], want[1]));
    }
    const std::string text = fg.debug_string();
    INFO(text);
    CHECK(text.find("= sum;") != std::string::npos);
    // DYNAMIC: one row (no column reduction eagerly either) runs the group node by node.
    auto fd = jit::script([](Tensor x, Tensor b) { return sum(tanh(x + b) * b, {0}, false); },
                          opts(jit::fusion_strategy<jit::dynamic_<2>>{}));
    for (std::int64_t rows : {std::int64_t{5}, std::int64_t{1}, std::int64_t{300}}) {
        const Tensor x = randn({rows, 20}), b = randn({20});
        CHECK(bitwise_equal(fd(x, b), sum(tanh(x + b) * b, {0}, false)));
    }
}

TEST_CASE("jit: a full sum or mean ends a fusion group (a loss), bitwise as eager", "[jit]") {
    // The sum is computed as the group produces its operand, in the eager sum kernel's order
    // (blocks of 4 vectors x 32 steps, block sums combined pairwise): the same bits at every size
    // and tail, on one thread whatever num_threads; mean divides by the count as graft::mean.
    const auto f = [](Tensor x, Tensor y) {
        const Tensor d = x - y;
        return std::vector<Tensor>{mean(d * d), sum(tanh(x) * y), d * 2.0};
    };
    for (dtype t : {dtype::float32, dtype::float64}) {
        for (const int_list& sizes : std::vector<int_list>{{1}, {7}, {1000}, {1025}, {37, 29}, {3, 130, 17}, {70001}}) {
            jit::options o = opts();
            o.num_threads = 2;
            o.parallel_grain = 256;
            auto fn = jit::script(f, o);
            for (int i = 0; i < 3; ++i) {
                const Tensor x = randn(sizes, t), y = randn(sizes, t);
                const auto got = fn(x, y);
                const auto want = f(x, y);
                INFO("sizes " << sizes << " " << t);
                REQUIRE(got.size() == 3);
                CHECK(got[0].dim() == 0);
                CHECK(bitwise_equal(got[0], want[0]));
                CHECK(bitwise_equal(got[1], want[1]));
                CHECK(bitwise_equal(got[2], want[2]));
                // Against a plain loop too (so that the two cannot be wrong the same way).
                const Tensor xs = x.reshape({-1}), ys = y.reshape({-1});
                double sq = 0;
                for (std::int64_t k = 0; k < xs.numel(); ++k) {
                    const double dk = xs.select(0, k).item<double>() - ys.select(0, k).item<double>();
                    sq += dk * dk;
                }
                CHECK(got[0].item<double>() ==
                      Approx(sq / static_cast<double>(xs.numel())).epsilon(t == dtype::float32 ? 1e-4 : 1e-10));
            }
            const std::string text = fn.debug_string();
            INFO(text);
            CHECK(text.find("= mean;") != std::string::npos);
            CHECK(text.find("= sum;") != std::string::npos);
        }
    }
    // Two full sums ending one group, one of a value also returned.
    const auto two = [](Tensor x, Tensor y) {
        const Tensor d = x - y;
        const Tensor sq = d * d, th = tanh(d);
        return std::vector<Tensor>{sum(sq), mean(th), th};
    };
    jit::options o2 = opts();
    o2.num_threads = 2;
    o2.parallel_grain = 256;
    auto f2 = jit::script(two, o2);
    for (std::int64_t n : {std::int64_t{3000}, std::int64_t{3000}, std::int64_t{3000}, std::int64_t{5}}) {
        for (dtype t : {dtype::float32, dtype::float64}) {
            const Tensor x = randn({n}, t), y = randn({n}, t);
            const auto got = f2(x, y);
            const auto want = two(x, y);
            for (std::size_t k = 0; k < 3; ++k) CHECK(bitwise_equal(got[k], want[k]));
        }
    }
    {
        const std::string text = f2.debug_string();
        INFO(text);
        CHECK(text.find("= sum; %") != std::string::npos);  // the sum and the mean in one group
    }
    // The summed value must have the group's shape: v = b * 2 ([C]) summed while the group runs at
    // [R, C] goes node by node, with eager's bits.
    const auto g = [](Tensor x, Tensor b) {
        const Tensor v = b * 2.0;
        return std::vector<Tensor>{sum(v), x + v};
    };
    auto fg = jit::script(g, opts());
    for (int i = 0; i < 3; ++i) {
        const Tensor x = randn({40, 33}), b = randn({33});
        const auto got = fg(x, b);
        const auto want = g(x, b);
        CHECK(bitwise_equal(got[0], want[0]));
        CHECK(bitwise_equal(got[1], want[1]));
    }
    // Empty inputs: sum 0 and mean NaN, as eagerly (the group runs node by node).
    auto fe = jit::script(f, opts(jit::fusion_strategy<jit::dynamic_<2>>{}));
    for (std::int64_t n : {std::int64_t{5}, std::int64_t{0}, std::int64_t{300}}) {
        const Tensor x = randn({n}), y = randn({n});
        const auto got = fe(x, y);
        const auto want = f(x, y);
        INFO("n " << n);
        CHECK(bitwise_equal(got[0], want[0]));
        CHECK(bitwise_equal(got[1], want[1]));
        if (n == 0) {
            CHECK(std::isnan(got[0].item<double>()));
            CHECK(got[1].item<double>() == 0.0);
        }
    }
    // A loss after a matmul: the whole product, then the group with its sum (not chunked).
    const auto h = [](Tensor a, Tensor w, Tensor target) {
        const Tensor d = relu(matmul(a, w)) - target;
        return mean(d * d);
    };
    auto fh = jit::script(h, opts());
    for (int i = 0; i < 3; ++i) {
        const Tensor a = randn({300, 16}), w = randn({16, 40}), target = randn({300, 40});
        CHECK(bitwise_equal(fh(a, w, target), h(a, w, target)));
    }
    CHECK(fh.debug_string().find("= mean;") != std::string::npos);
    // An MSE loss through a differentiable plan: the loss and the gradients, bitwise as eager.
    const auto mse = [](Tensor x, Tensor w, Tensor b, Tensor target) {
        const Tensor d = tanh(x * w + b) - target;
        return mean(d * d);
    };
    auto fm = jit::script(mse, opts());
    for (int i = 0; i < 3; ++i) {
        const Tensor x = randn({2000}), w = randn({2000}).requires_grad_(), b = randn({2000}).requires_grad_(),
                     target = randn({2000});
        const Tensor loss = fm(x, w, b, target);
        const auto grads = autograd::grad({loss}, {w, b});
        const Tensor we = w.detach().requires_grad_(), be = b.detach().requires_grad_();
        const Tensor loss_e = mse(x, we, be, target);
        const auto grads_e = autograd::grad({loss_e}, {we, be});
        CHECK(bitwise_equal(loss.detach(), loss_e.detach()));
        CHECK(bitwise_equal(grads[0], grads_e[0]));
        CHECK(bitwise_equal(grads[1], grads_e[1]));
    }
    CHECK(fm.debug_string().find("= mean;") != std::string::npos);
}

TEST_CASE("jit: a matmul and the group reading its product run chunk by chunk, bitwise as eager", "[jit]") {
    // Rows of the product in chunks of about 64 KiB, each followed by the group (bias, activation,
    // a sum over the rows) while in cache: every element the same bits as matmul then the ops.
    struct mm_case {
        std::int64_t m, k, n;
        bool transposed;  // a is a transposed view (strided rows)
    };
    for (const mm_case& c : {mm_case{128, 32, 32, false}, mm_case{3000, 8, 16, false}, mm_case{2049, 5, 8, true},
                             mm_case{20000, 4, 1, false}, mm_case{2, 3, 40, true}, mm_case{1, 6, 20, false},
                             mm_case{700, 33, 47, true}}) {
        for (dtype t : {dtype::float32, dtype::float64}) {
            const auto f = [](Tensor a, Tensor w, Tensor b, Tensor w2) {
                const Tensor h = tanh(matmul(a, w) + b);
                return std::vector<Tensor>{h, relu(matmul(h, w2) - 0.5)};  // one op after a matmul
            };
            const auto g = [](Tensor a, Tensor w, Tensor b) {
                const Tensor p = matmul(a, w);
                return std::vector<Tensor>{sum(p * b, {0}, false), p};  // the product also returned
            };
            auto ff = jit::script(f, opts());
            auto fg = jit::script(g, opts());
            for (int i = 0; i < 3; ++i) {
                const Tensor a = c.transposed ? randn({c.k, c.m}, t).t() : randn({c.m, c.k}, t);
                const Tensor w = randn({c.k, c.n}, t) * 0.3;
                const Tensor wsq = randn({c.n, c.n}, t) * 0.3;
                const Tensor b = randn({c.n}, t);
                INFO("m " << c.m << " k " << c.k << " n " << c.n << " " << t);
                const auto got = ff(a, w, b, wsq);
                const auto want = f(a, w, b, wsq);
                REQUIRE(got.size() == 2);
                CHECK(bitwise_equal(got[0], want[0]));
                CHECK(bitwise_equal(got[1], want[1]));
                const auto got_g = fg(a, w, b);
                const auto want_g = g(a, w, b);
                CHECK(bitwise_equal(got_g[0], want_g[0]));
                CHECK(bitwise_equal(got_g[1], want_g[1]));
                // Against a plain loop at one element: tanh(sum_k a[0,k] w[k,0] + b[0]).
                double dot = 0;
                for (std::int64_t q = 0; q < c.k; ++q)
                    dot += a.select(0, 0).select(0, q).item<double>() * w.select(0, q).select(0, 0).item<double>();
                CHECK(got[0].select(0, 0).select(0, 0).item<double>() ==
                      Approx(std::tanh(dot + b.select(0, 0).item<double>())).epsilon(1e-4).margin(1e-5));
            }
            const std::string text = ff.debug_string() + fg.debug_string();
            INFO(text);
            CHECK(text.find("= matmul): %") != std::string::npos);  // a group as a matmul's epilogue
        }
    }
    // Two layers with gradients: the backward's g @ w2^T is moved past the independent
    // h1^T @ g (sink_matmuls_to_their_epilogues) so tanh's derivative becomes its epilogue.
    const auto two = [](Tensor x, Tensor w1, Tensor b1, Tensor w2, Tensor b2) {
        return tanh(matmul(tanh(matmul(x, w1) + b1), w2) + b2);
    };
    auto ft = jit::script(two, opts());
    for (int i = 0; i < 3; ++i) {
        std::vector<Tensor> p{randn({5, 24}) * 0.3, randn({24}), randn({24, 20}) * 0.3, randn({20})};
        for (Tensor& q : p) q.requires_grad_();
        const Tensor x = randn({64, 5}), seed = randn({64, 20});
        const auto got = autograd::grad({ft(x, p[0], p[1], p[2], p[3])}, {p[0], p[1], p[2], p[3]}, {seed});
        std::vector<Tensor> pe;
        for (const Tensor& q : p) pe.push_back(q.detach().requires_grad_());
        const auto want = autograd::grad({two(x, pe[0], pe[1], pe[2], pe[3])}, {pe[0], pe[1], pe[2], pe[3]}, {seed});
        for (std::size_t k = 0; k < p.size(); ++k) CHECK(bitwise_equal(got[k], want[k]));
    }
    const std::string bwd = ft.debug_string().substr(ft.debug_string().find("backward:"));
    INFO(bwd);
    CHECK(bwd.find("= matmul): %") != std::string::npos);
    // Inputs that require grad: the recording path, gradients as eager's.
    const auto h = [](Tensor a, Tensor w, Tensor b) { return relu(matmul(a, w) + b); };
    auto fh = jit::script(h, opts());
    for (int i = 0; i < 3; ++i) {
        const Tensor a = randn({40, 6}), w = randn({6, 24}).requires_grad_(), b = randn({24}).requires_grad_();
        const Tensor seed = randn({40, 24});
        const auto got = autograd::grad({fh(a, w, b)}, {w, b}, {seed});
        const Tensor we = w.detach().requires_grad_(), be = b.detach().requires_grad_();
        const auto want = autograd::grad({h(a, we, be)}, {we, be}, {seed});
        CHECK(bitwise_equal(got[0], want[0]));
        CHECK(bitwise_equal(got[1], want[1]));
    }
}

TEST_CASE("jit: fused loops split across threads give the same bits", "[jit][threads]") {
    jit::options o = opts();
    o.num_threads = 3;
    o.parallel_grain = 1000;  // 70001 elements: three parts
    auto fn = jit::script(chain, o);
    for (int i = 0; i < 3; ++i) {
        const auto in = inputs3(70001);
        CHECK(bitwise_equal(fn(in[0], in[1], in[2]), chain(in[0], in[1], in[2])));
    }
    REQUIRE(fn.debug_state().levels[0].plan);
    CHECK(fn.debug_state().levels[0].plan->hits == 2);
}

TEST_CASE("jit: inputs the tile loop cannot take run unfused with the same result", "[jit]") {
    // DYNAMIC: no static sizes; a transposed (strided) input and a broadcast row go the unfused way.
    auto fn = jit::script([](Tensor a, Tensor b) { return tanh(a * b) + a; },
                          opts(jit::fusion_strategy<jit::dynamic_<1>>{}));
    const Tensor a = randn({6, 5}), b = randn({6, 5});
    CHECK(bitwise_equal(fn(a, b), tanh(a * b) + a));
    CHECK(bitwise_equal(fn(a, b), tanh(a * b) + a));
    const Tensor at = randn({5, 6}).t(), bt = randn({5, 6}).t();  // same rank, not contiguous
    CHECK(bitwise_equal(fn(at, bt), tanh(at * bt) + at));
    REQUIRE(fn.debug_state().levels[0].plan);
}

TEST_CASE("jit: bad input gets a graft::error and the executor stays usable", "[jit]") {
    auto fn = jit::script(chain, opts());
    const auto in = inputs3(8);
    CHECK(bitwise_equal(fn(in[0], in[1], in[2]), chain(in[0], in[1], in[2])));
    CHECK(bitwise_equal(fn(in[0], in[1], in[2]), chain(in[0], in[1], in[2])));
    // Incompatible shapes: the eager op's message, via the fallback.
    CHECK_THROWS_WITH(fn(randn({3}), randn({4}), randn({3})), Catch::Contains("must match the size"));
    // Wrong number of inputs.
    CHECK_THROWS_WITH(fn(std::vector<Tensor>{in[0], in[1]}), Catch::Contains("captured with 3 inputs"));
    // A profiling run that throws leaves no trace in the profile.
    auto g = ir::parse(R"(graph(%x : Tensor, %w : Tensor):
  %y : Tensor = mul(%x, %w)
  %z : Tensor = tanh(%y)
  return (%z)
)");
    jit::executor fresh(*g, opts());
    CHECK_THROWS_WITH(fresh(randn({3}), randn({4})), Catch::Contains("must match the size"));
    CHECK(fresh.state().levels[0].profiled_runs == 0);
    for (int i = 0; i < 2; ++i) CHECK(bitwise_equal(fresh(in[0], in[1])[0], tanh(in[0] * in[1])));
    REQUIRE(fresh.state().levels[0].plan);
    CHECK(fresh.state().levels[0].plan->guards[0] == "Float(8, strides=[1], requires_grad=0)");
    // Still right afterwards, and still on the optimized plan.
    const auto in2 = inputs3(8);
    CHECK(bitwise_equal(fn(in2[0], in2[1], in2[2]), chain(in2[0], in2[1], in2[2])));
    CHECK(fn.debug_state().levels[0].plan->hits == 2);
    // Options.
    jit::options bad = opts();
    bad.fusion.clear();
    CHECK_THROWS_WITH(jit::script(chain, bad), Catch::Contains("fusion strategy is empty"));
}

TEST_CASE("jit: a compile-time expression runs through the executor", "[jit]") {
    const auto e = expr::trace<3>([](auto x, auto w, auto b) { return tanh(x * w + b) * sigmoid(x) + 0.5; });
    const auto g = jit::to_ir(e);
    CHECK(g->inputs().size() == 3);
    CHECK(g->outputs().size() == 1);
    jit::executor ex = jit::make_executor(e, opts());
    for (int i = 0; i < 3; ++i) {
        const auto in = inputs3(4000);
        const Tensor y = ex(in)[0];
        CHECK(bitwise_equal(y, chain(in[0], in[1], in[2]) + 0.5));
        // The compile-time fused kernel applies the same lane functions.
        CHECK(allclose(y, expr::evaluate(e, in[0], in[1], in[2]), 1e-6, 1e-6));
    }
    const jit::debug_state d = ex.debug_state();
    REQUIRE(d.levels[0].plan);
    CHECK(d.levels[0].plan->fusion_groups == 1);
    CHECK(d.levels[0].plan->graph.find("FusionGroup_0 (6 ops") != std::string::npos);
}

TEST_CASE("jit: views of inputs between elementwise ops do not split a fusion group", "[jit]") {
    // In node order the reshape and transpose of inputs sit between the muls and adds; the plan
    // makes them first (straight-line pure code), so the elementwise ops form one group.
    auto g = ir::parse(R"(graph(%x : Tensor, %y : Tensor, %z : Tensor):
  %a : Tensor = mul(%x, %x)
  %r : Tensor = reshape[sizes=[64, 32]](%y)
  %b : Tensor = add(%a, %r)
  %t : Tensor = transpose[dim0=0, dim1=1](%z)
  %c : Tensor = mul(%b, %t)
  %d : Tensor = tanh(%c)
  return (%d)
)");
    jit::executor ex(std::move(g), opts());
    manual_seed(9);
    for (int i = 0; i < 3; ++i) {
        const std::vector<Tensor> in{randn({64, 32}), randn({2048}), randn({32, 64})};
        const Tensor want = tanh((in[0] * in[0] + in[1].reshape({64, 32})) * in[2].t());
        CHECK(bitwise_equal(ex(in)[0], want));
    }
    const jit::debug_state d = ex.debug_state();
    REQUIRE(d.levels[0].plan);
    CHECK(d.levels[0].plan->fusion_groups == 1);
    CHECK(d.levels[0].plan->graph.find("FusionGroup_0 (4 ops") != std::string::npos);
}

TEST_CASE("jit: an executor over a hand-written graph with numbers and If", "[jit]") {
    auto g = ir::parse(R"(graph(%x : Tensor, %k : float, %c : bool):
  %y : Tensor = prim::If(%c)
    block0():
      %a : Tensor = mul(%x, %k)
      %b : Tensor = tanh(%a)
      -> (%b)
    block1():
      %d : Tensor = neg(%x)
      -> (%d)
  %z : Tensor = add(%y, %x)
  return (%z)
)");
    jit::executor ex(*g, opts());
    const Tensor x = randn({33});
    for (int i = 0; i < 4; ++i) {
        const bool c = i % 2 == 0;
        auto out = ex.run({x, 1.5, c});
        const Tensor want = c ? tanh(x * 1.5) + x : -x + x;
        CHECK(bitwise_equal(std::get<Tensor>(out[0]), want));
    }
    // The graph's declared number types are checked.
    CHECK_THROWS_WITH(ex.run({x, std::int64_t{2}, true}), Catch::Contains("input 1 (%k) must be float"));
    CHECK_THROWS_WITH(ex.run({x, 2.0}), Catch::Contains("takes 3 inputs, got 2"));
    const jit::debug_state d = ex.state();
    REQUIRE(d.levels[0].plan);
    CHECK(d.levels[0].plan->guards[1] == "float");
}

TEST_CASE("jit: an eager plan (number input with requires_grad) records autograd like eager code", "[jit]") {
    auto g = ir::parse(R"(graph(%x : Tensor, %k : float):
  %y : Tensor = mul(%x, %k)
  %z : Tensor = sin(%y)
  return (%z)
)");
    jit::executor ex(*g, opts());
    for (int i = 0; i < 3; ++i) {
        const Tensor x = randn({5}, dtype::float64).requires_grad_();
        const Tensor z = std::get<Tensor>(ex.run({x, 0.75})[0]);
        REQUIRE(z.requires_grad());
        const auto got = autograd::grad({z.sum()}, {x});
        CHECK(allclose(got[0], cos(x.detach() * 0.75) * 0.75, 1e-14, 1e-14));
    }
    const jit::debug_state d = ex.state();
    REQUIRE(d.levels[0].plan);
    CHECK(d.levels[0].plan->kind == jit::plan_kind::eager);
    CHECK(d.levels[0].plan->reason == "an input is a number");
    CHECK(d.levels[0].plan->hits == 2);
}

TEST_CASE("jit: debug state, Chrome trace, flushing and releasing the profile", "[jit]") {
    jit::options o = opts();
    o.collect_timings = true;
    o.release_profiling_after_optimization = true;
    auto fn = jit::script(chain, o);
    for (int i = 0; i < 4; ++i) {
        const auto in = inputs3(16);
        (void)fn(in[0], in[1], in[2]);
    }
    jit::debug_state d = fn.debug_state();
    CHECK(d.levels[0].profiling_released);
    CHECK(d.levels[0].plan->timed_runs == 3);
    const std::string text = fn.debug_string();
    CHECK(text.find("STATIC fused plan") != std::string::npos);
    CHECK(text.find("3 hit(s)") != std::string::npos);
    const std::string trace = fn.chrome_trace();
    CHECK(trace.find("\"traceEvents\"") != std::string::npos);
    CHECK(trace.find("profiling run") != std::string::npos);
    CHECK(trace.find("compile STATIC fused") != std::string::npos);
    CHECK(trace.find("optimized run") != std::string::npos);
    fn.flush_compilation_cache();
    d = fn.debug_state();
    CHECK_FALSE(d.levels[0].plan);
    CHECK(d.levels[0].profiled_runs == 0);
    const auto in = inputs3(16);
    CHECK(bitwise_equal(fn(in[0], in[1], in[2]), chain(in[0], in[1], in[2])));
    CHECK(fn.debug_state().levels[0].profiled_runs == 1);
}

TEST_CASE("jit: many threads call one executor", "[jit][threads]") {
    auto fn = jit::script(chain, opts(jit::fusion_strategy<jit::static_<2>, jit::dynamic_<2>>{}));
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 60; ++i) {
                const std::int64_t n = (i + t) % 3 == 0 ? 2048 : 100;
                const auto in = inputs3(n);
                if (!bitwise_equal(fn(in[0], in[1], in[2]), chain(in[0], in[1], in[2]))) ++wrong;
            }
        });
    for (auto& th : threads) th.join();
    CHECK(wrong == 0);
    const jit::debug_state d = fn.debug_state();
    CHECK(d.compilations >= 1);
    CHECK(d.compilations <= 4);
    std::uint64_t hits = 0;
    for (const auto& l : d.levels)
        if (l.plan) hits += l.plan->hits;
    CHECK(hits > 0);
}

// ---------------------------------------------------------------- plans built from their guards' types

namespace {

Tensor bias_tanh_sum(Tensor x, Tensor w) { return tanh(x * w + 1.0).sum(); }

/// The value and gradients of f through the executor and through eager autograd agree.
void check_against_eager(jit::script_function<Tensor (*)(Tensor, Tensor)>& fn, std::int64_t rows, std::int64_t cols,
                         bool grad) {
    Tensor x = randn({rows, cols}, dtype::float64), w = randn({cols}, dtype::float64);
    if (grad) {
        x.requires_grad_();
        w.requires_grad_();
    }
    const Tensor y = fn(x, w);
    const Tensor ye = bias_tanh_sum(x, w);
    REQUIRE(y.sizes() == ye.sizes());
    CHECK(allclose(y.detach(), ye.detach(), 1e-12, 1e-12));
    REQUIRE(y.requires_grad() == grad);
    if (!grad) return;
    const auto got = autograd::grad({y}, {x, w});
    const auto want = autograd::grad({ye}, {x, w});
    REQUIRE(got[0].sizes() == x.sizes());
    REQUIRE(got[1].sizes() == w.sizes());
    CHECK(allclose(got[0], want[0], 1e-12, 1e-12));
    CHECK(allclose(got[1], want[1], 1e-12, 1e-12));
}

}  // namespace

TEST_CASE("jit: a differentiable plan is traced for the types its guards check, not the compiling call's",
          "[jit]") {
    using fn_t = Tensor (*)(Tensor, Tensor);
    SECTION("profiled [2, 3], compiled on a [5, 6] call, then [2, 3] again") {
        auto fn = jit::script(static_cast<fn_t>(bias_tanh_sum), opts());
        check_against_eager(fn, 2, 3, true);  // profiled
        check_against_eager(fn, 5, 6, true);  // compiles (for [2, 3]), then falls back
        check_against_eager(fn, 2, 3, true);  // the optimized plan
        check_against_eager(fn, 5, 6, true);
        const jit::debug_state d = fn.debug_state();
        REQUIRE(d.levels[0].plan);
        CHECK(d.levels[0].plan->kind == jit::plan_kind::differentiable);
        CHECK(d.levels[0].plan->hits == 1);
        CHECK(d.levels[0].plan->guards[0] == "Double(2, 3, requires_grad=1)");
    }
    SECTION("profiled with requires-grad inputs, compiled on a call without") {
        auto fn = jit::script(static_cast<fn_t>(bias_tanh_sum), opts());
        check_against_eager(fn, 4, 3, true);
        check_against_eager(fn, 4, 3, false);  // compiles the plan for requires-grad inputs
        check_against_eager(fn, 4, 3, true);   // has a grad_fn and eager's gradients
        check_against_eager(fn, 4, 3, false);
        const jit::debug_state d = fn.debug_state();
        CHECK(d.levels[0].plan->kind == jit::plan_kind::differentiable);
        CHECK(d.levels[0].plan->hits == 1);
    }
    SECTION("one-element inputs profiled, a 128-element call compiles, one element again") {
        auto fn = jit::script(static_cast<fn_t>(bias_tanh_sum), opts());
        check_against_eager(fn, 1, 1, true);
        check_against_eager(fn, 1, 128, true);
        check_against_eager(fn, 1, 1, true);
        check_against_eager(fn, 1, 128, true);
    }
    SECTION("profiled with float64, compiled on a float32 call, then float64 again") {
        auto fn = jit::script(static_cast<fn_t>(bias_tanh_sum), opts());
        const auto call = [&](dtype t) {
            Tensor x = randn({3, 4}, t), w = randn({4}, t);
            x.requires_grad_();
            w.requires_grad_();
            const Tensor y = fn(x, w), ye = bias_tanh_sum(x, w);
            REQUIRE(y.type() == t);
            const double tol = t == dtype::float32 ? 1e-5 : 1e-12;
            CHECK(allclose(y.detach(), ye.detach(), tol, tol));
            const auto g = autograd::grad({y}, {x, w}), ge = autograd::grad({ye}, {x, w});
            CHECK(allclose(g[0], ge[0], tol, tol));
            CHECK(allclose(g[1], ge[1], tol, tol));
        };
        call(dtype::float64);
        call(dtype::float32);  // compiles the plan for float64, runs the fallback
        call(dtype::float64);
        call(dtype::float32);
        CHECK(fn.debug_state().levels[0].plan->guards[0] == "Double(3, 4, requires_grad=1)");
        CHECK(fn.debug_state().levels[0].plan->hits == 1);
    }
    SECTION("two profiled shapes (symbolic sizes): the plan serves the compiling call's shape only") {
        auto fn = jit::script(static_cast<fn_t>(bias_tanh_sum), opts(jit::default_fusion_strategy::value(), 2));
        check_against_eager(fn, 2, 3, true);
        check_against_eager(fn, 3, 3, true);
        check_against_eager(fn, 7, 3, true);  // compiles for [7, 3]
        check_against_eager(fn, 2, 3, true);
        check_against_eager(fn, 7, 3, true);
        CHECK(fn.debug_state().levels[0].plan->guards[0] == "Double(7, 3, requires_grad=1)");
    }
}

TEST_CASE("jit: threads calling one script with changing shapes and requires_grad get eager's results",
          "[jit][threads]") {
    using fn_t = Tensor (*)(Tensor, Tensor);
    auto fn = jit::script(static_cast<fn_t>(bias_tanh_sum), opts());
    std::atomic<int> wrong{0}, errors{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 40; ++i) {
                const int k = (i + t) % 4;
                const std::int64_t rows = k < 2 ? 2 : 5, cols = k < 2 ? 3 : 6;
                const bool grad = k % 2 == 0;
                try {
                    Tensor x = randn({rows, cols}, dtype::float64), w = randn({cols}, dtype::float64);
                    if (grad) {
                        x.requires_grad_();
                        w.requires_grad_();
                    }
                    const Tensor y = fn(x, w), ye = bias_tanh_sum(x, w);
                    bool ok = y.sizes() == ye.sizes() && y.requires_grad() == grad &&
                              allclose(y.detach(), ye.detach(), 1e-12, 1e-12);
                    if (ok && grad) {
                        const auto got = autograd::grad({y}, {x, w});
                        const auto want = autograd::grad({ye}, {x, w});
                        ok = got[0].sizes() == x.sizes() && allclose(got[0], want[0], 1e-12, 1e-12) &&
                             allclose(got[1], want[1], 1e-12, 1e-12);
                    }
                    if (!ok) ++wrong;
                } catch (const graft::error&) {
                    ++errors;
                }
            }
        });
    for (auto& th : threads) th.join();
    CHECK(wrong == 0);
    CHECK(errors == 0);
}

// ---------------------------------------------------------------- inputs that share memory

namespace {

Tensor write_then_read(Tensor a, Tensor b, Tensor c, Tensor d) {
    a.add_(b);
    return a * c + d;
}

}  // namespace

TEST_CASE("jit: a script called with aliased inputs gets eager's result, never the distinct-input plan's",
          "[jit]") {
    auto fn = jit::script(write_then_read, opts());
    const auto distinct = [&] {
        std::vector<Tensor> in{randn({6}, dtype::float64), randn({6}, dtype::float64), randn({6}, dtype::float64),
                               randn({6}, dtype::float64)};
        std::vector<Tensor> ref;
        for (const auto& t : in) ref.push_back(t.clone());
        const Tensor got = fn(in[0], in[1], in[2], in[3]);
        const Tensor want = write_then_read(ref[0], ref[1], ref[2], ref[3]);
        CHECK(allclose(got, want, 0, 0));
        CHECK(allclose(in[0], ref[0], 0, 0));
    };
    distinct();
    distinct();  // the optimized plan for distinct inputs
    for (int i = 0; i < 3; ++i) {
        Tensor x = randn({6}, dtype::float64), xe = x.clone();
        const Tensor got = fn(x, x, x, x);
        const Tensor want = write_then_read(xe, xe, xe, xe);  // x doubled, then 2x * 2x + 2x
        CHECK(allclose(got, want, 0, 0));
        CHECK(allclose(x, xe, 0, 0));
    }
    // Two of the four slots aliased: another pattern, another capture.
    Tensor x = randn({6}, dtype::float64), y = randn({6}, dtype::float64);
    Tensor xe = x.clone(), ye = y.clone();
    CHECK(allclose(fn(x, y, x, y), write_then_read(xe, ye, xe, ye), 0, 0));
    CHECK(allclose(x, xe, 0, 0));
    distinct();  // the first plan still serves distinct inputs
    const jit::debug_state d = fn.debug_state();
    REQUIRE(d.levels[0].plan);
    CHECK(d.levels[0].plan->hits == 2);
}

TEST_CASE("jit: a script first called as f(x, x) handles gradients and later distinct calls", "[jit]") {
    const auto f = [](Tensor a, Tensor b) { return (a * b + tanh(a)).sum(); };
    auto fn = jit::script(f, opts());
    for (int i = 0; i < 3; ++i) {
        Tensor x = randn({5}, dtype::float64);
        x.requires_grad_();
        const Tensor y = fn(x, x);
        const Tensor ye = f(x, x);
        CHECK(allclose(y.detach(), ye.detach(), 1e-12, 1e-12));
        CHECK(allclose(autograd::grad({y}, {x})[0], autograd::grad({ye}, {x})[0], 1e-12, 1e-12));
    }
    Tensor a = randn({5}, dtype::float64), b = randn({5}, dtype::float64);
    a.requires_grad_();
    b.requires_grad_();
    const Tensor y = fn(a, b), ye = f(a, b);
    CHECK(allclose(y.detach(), ye.detach(), 1e-12, 1e-12));
    const auto got = autograd::grad({y}, {a, b}), want = autograd::grad({ye}, {a, b});
    CHECK(allclose(got[0], want[0], 1e-12, 1e-12));
    CHECK(allclose(got[1], want[1], 1e-12, 1e-12));
}

TEST_CASE("jit: overlapping views written through one alias, through a script", "[jit]") {
    const auto f = [](Tensor a, Tensor b) {
        a.mul_(3.0);
        return b * b;
    };
    auto fn = jit::script(f, opts());
    for (int i = 0; i < 3; ++i) {
        Tensor buf = randn({7}, dtype::float64), eager = buf.clone();
        const Tensor got = fn(buf.narrow(0, 0, 5), buf.narrow(0, 2, 5));
        const Tensor want = f(eager.narrow(0, 0, 5), eager.narrow(0, 2, 5));
        CHECK(allclose(got, want, 0, 0));
        CHECK(allclose(buf, eager, 0, 0));
    }
}

TEST_CASE("jit: the process-wide strategy is read at a script's first call and again after a flush", "[jit]") {
    const jit::strategy old = jit::set_fusion_strategy({{jit::fusion_behavior::static_, 1}});
    auto fn = jit::script(chain);
    jit::set_fusion_strategy({{jit::fusion_behavior::dynamic_, 3}});  // after creation, before the first call
    const auto in = inputs3(8);
    (void)fn(in[0], in[1], in[2]);
    CHECK(fn.debug_state().fusion == jit::strategy{{jit::fusion_behavior::dynamic_, 3}});
    CHECK(fn.debug_state().bailout_depth == 3);
    jit::set_fusion_strategy({{jit::fusion_behavior::static_, 5}});
    fn.flush_compilation_cache();
    (void)fn(in[0], in[1], in[2]);
    CHECK(fn.debug_state().bailout_depth == 5);
    // Explicit options are kept.
    auto fixed = jit::script(chain, opts(jit::strategy{{jit::fusion_behavior::static_, 2}}));
    (void)fixed(in[0], in[1], in[2]);
    fixed.flush_compilation_cache();
    (void)fixed(in[0], in[1], in[2]);
    CHECK(fixed.debug_state().bailout_depth == 2);
    jit::set_fusion_strategy(old);
}

// ---------------------------------------------------------------- symbolic sizes (DYNAMIC differentiable plans)

namespace {

Tensor mlp_step(Tensor x, Tensor y, Tensor w1, Tensor b1, Tensor w2, Tensor b2) {
    const Tensor h = tanh(matmul(x, w1) + b1);
    const Tensor p = matmul(h, w2) + b2;
    return ((p - y) * (p - y)).mean();
}

}  // namespace

TEST_CASE("jit: a DYNAMIC differentiable plan serves every batch size through symbolic sizes", "[jit]") {
    std::vector<Tensor> params{randn({3, 5}, dtype::float64), randn({5}, dtype::float64), randn({5, 1}, dtype::float64),
                               randn({1}, dtype::float64)};
    for (auto& p : params) p.requires_grad_();
    const auto train = [&](auto& fn, std::initializer_list<std::int64_t> batches) {
        for (std::int64_t n : batches) {
            const Tensor x = randn({n, 3}, dtype::float64), y = randn({n, 1}, dtype::float64);
            const Tensor loss = fn(x, y, params[0], params[1], params[2], params[3]);
            const Tensor want = mlp_step(x, y, params[0], params[1], params[2], params[3]);
            CHECK(allclose(loss.detach(), want.detach(), 1e-12, 1e-12));
            const auto got_g = autograd::grad({loss}, {params[0], params[1], params[2], params[3]});
            const auto want_g = autograd::grad({want}, {params[0], params[1], params[2], params[3]});
            for (std::size_t k = 0; k < 4; ++k) CHECK(allclose(got_g[k], want_g[k], 1e-12, 1e-12));
        }
    };
    SECTION("default strategy: STATIC for the first size, then (automatic dynamic) one DYNAMIC plan for the rest") {
        auto fn = jit::script(mlp_step, opts());
        train(fn, {8, 16, 32, 5, 64, 128, 7});
        const jit::debug_state d = fn.debug_state();
        CHECK(d.compilations == 2);  // STATIC for 8, DYNAMIC (symbolic) for every other size
        REQUIRE(d.levels.size() >= 2);
        REQUIRE(d.levels[1].plan);
        const jit::plan_state& p = *d.levels[1].plan;
        CHECK(p.automatic_dynamic);
        CHECK(p.kind == jit::plan_kind::differentiable);
        CHECK(p.behavior == jit::fusion_behavior::dynamic_);
        CHECK(p.guards[0] == "Double(s0, 3, requires_grad=0)");
        CHECK(p.guards[2] == "Double(3, 5, requires_grad=1)");  // sizes that never varied stay exact
        CHECK(p.symbolic.find("expand.sizes[0] = s0") != std::string::npos);
        CHECK(p.hits == 5);  // 32 (the compiling call), 5, 64, 128, 7
        CHECK(d.total_guard_failures() > 0);
    }
    SECTION("default strategy without automatic dynamic: two STATIC specializations, then DYNAMIC") {
        jit::options o = opts();
        o.automatic_dynamic = false;
        auto fn = jit::script(mlp_step, o);
        train(fn, {8, 16, 32, 5, 64, 128, 7});
        const jit::debug_state d = fn.debug_state();
        CHECK(d.compilations == 3);  // STATIC for 8, STATIC for 16, DYNAMIC for the rest
        REQUIRE(d.levels.size() >= 3);
        REQUIRE(d.levels[2].plan);
        CHECK(d.levels[2].plan->behavior == jit::fusion_behavior::dynamic_);
        CHECK_FALSE(d.levels[2].plan->automatic_dynamic);
        CHECK(d.levels[2].plan->hits == 4);  // 5, 64, 128, 7
    }
    SECTION("DYNAMIC only: one compilation, on the second size") {
        auto fn = jit::script(mlp_step, opts(jit::strategy{{jit::fusion_behavior::dynamic_, 4}}));
        train(fn, {8, 16, 32, 5, 64});
        const jit::debug_state d = fn.debug_state();
        CHECK(d.compilations == 1);
        CHECK(d.levels[0].plan->hits == 4);  // 16 (the compiling call), 32, 5, 64
        train(fn, {1});  // size 1 is specialized (broadcasting): a capture of its own, eager's result
        CHECK(fn.debug_state().levels[0].plan->guard_failures == 0);
        CHECK(fn.debug_state().compilations == 1);
    }
}

TEST_CASE("jit: symbolic sizes from two varying dimensions (a mean over both)", "[jit]") {
    const auto f = [](Tensor x, Tensor w) { return (tanh(x * w) * x).mean(); };
    auto fn = jit::script(f, opts(jit::strategy{{jit::fusion_behavior::dynamic_, 3}}));
    for (auto [r, c] : {std::pair<std::int64_t, std::int64_t>{4, 5}, {6, 7}, {8, 9}, {3, 11}, {12, 2}}) {
        Tensor x = randn({r, c}, dtype::float64), w = randn({c}, dtype::float64);
        x.requires_grad_();
        w.requires_grad_();
        const Tensor y = fn(x, w), ye = f(x, w);
        CHECK(allclose(y.detach(), ye.detach(), 1e-12, 1e-12));
        const auto g = autograd::grad({y}, {x, w}), ge = autograd::grad({ye}, {x, w});
        CHECK(allclose(g[0], ge[0], 1e-12, 1e-12));
        CHECK(allclose(g[1], ge[1], 1e-12, 1e-12));
    }
    const jit::debug_state d = fn.debug_state();
    CHECK(d.compilations == 1);
    REQUIRE(d.levels[0].plan);
    CHECK(d.levels[0].plan->guards[0] == "Double(s0, s1, requires_grad=1)");
    CHECK(d.levels[0].plan->symbolic.find("= s0 * s1") != std::string::npos);  // the mean's count
}

// ---------------------------------------------------------------- control flow

TEST_CASE("jit: a script with data-dependent cond takes each call's branch, gradients match eager", "[jit]") {
    const auto f = [](Tensor x, Tensor w) {
        return cond(
            (x * w).sum() > 0.0, [](Tensor a, Tensor b) { return tanh(a * b) * a; },
            [](Tensor a, Tensor b) { return sigmoid(a - b); }, x, w);
    };
    const auto eager = [](const Tensor& x, const Tensor& w) {
        return (x * w).sum().item<double>() > 0 ? tanh(x * w) * x : sigmoid(x - w);
    };
    auto fn = jit::script(f, opts());
    for (int i = 0; i < 6; ++i) {  // alternate branches: profiling, compiling, optimized calls
        const double sign = i % 2 ? -1.0 : 1.0;
        const Tensor x = randn({9}, dtype::float64).abs() * sign, w = randn({9}, dtype::float64).abs();
        CHECK(bitwise_equal(fn(x, w), eager(x, w)));
    }
    CHECK(fn.debug_state().levels[0].plan->kind == jit::plan_kind::fused);
    // With gradients: the graph has control flow, so the plan is eager (autograd records
    // through the branch taken); gradients against eager and finite differences.
    for (double sign : {1.0, -1.0, 1.0, -1.0}) {
        Tensor x = randn({9}, dtype::float64).abs() * sign, w = randn({9}, dtype::float64).abs();
        x.requires_grad_();
        const Tensor y = fn(x, w).sum();
        const Tensor g = autograd::grad({y}, {x})[0];
        CHECK(allclose(g, autograd::grad({eager(x, w).sum()}, {x})[0], 1e-12, 1e-12));
        for (std::int64_t j : {0, 4}) {
            const double h = 1e-6;
            Tensor p = x.detach().clone(), m = x.detach().clone();
            p.select(0, j).add_(h);
            m.select(0, j).sub_(h);
            const double fd = (eager(p, w).sum().item<double>() - eager(m, w).sum().item<double>()) / (2 * h);
            CHECK(g.select(0, j).item<double>() == Approx(fd).epsilon(1e-6));
        }
    }
    const jit::debug_state d = fn.debug_state();
    bool eager_plan_for_grad = false;
    for (const auto& l : d.levels)
        if (l.plan && l.plan->kind == jit::plan_kind::eager)
            eager_plan_for_grad = eager_plan_for_grad || l.plan->reason.find("control flow") != std::string::npos;
    CHECK(eager_plan_for_grad);
}

TEST_CASE("jit: a script with a data-dependent while_loop matches eager, values and gradients", "[jit]") {
    const auto f = [](Tensor x, Tensor w) {
        const Tensor h = while_loop([](Tensor v) { return v.abs().sum() > 1.0; }, [&w](Tensor v) { return tanh(v * w) * 0.9; }, x);
        return (h * h).sum();
    };
    const auto eager = [](Tensor x, const Tensor& w) {
        while (x.abs().sum().item<double>() > 1.0) x = tanh(x * w) * 0.9;
        return (x * x).sum();
    };
    auto fn = jit::script(f, opts());
    for (double scale : {5.0, 0.01, 3.0, 20.0, 0.5}) {
        const Tensor x = full({6}, scale, dtype::float64) + randn({6}, dtype::float64) * 0.1;
        const Tensor w = full({6}, 0.9, dtype::float64);
        CHECK(allclose(fn(x, w), eager(x, w), 0, 0));
    }
    // With gradients (the graph has a loop: the eager plan, autograd through every iteration).
    for (double scale : {5.0, 0.5}) {
        Tensor x = full({6}, scale, dtype::float64) + randn({6}, dtype::float64) * 0.1;
        x.requires_grad_();
        const Tensor w = full({6}, 0.9, dtype::float64);
        const Tensor g = autograd::grad({fn(x, w)}, {x})[0];
        CHECK(allclose(g, autograd::grad({eager(x, w)}, {x})[0], 1e-12, 1e-12));
    }
}

TEST_CASE("jit: a graph with a loop that requires grad runs with differentiable subgraphs", "[jit]") {
    const auto f = [](Tensor x, Tensor w) {
        const Tensor h = tanh(x * w + 1.0) * sigmoid(x) - x * 0.5;  // a straight-line region
        const Tensor l = while_loop([](Tensor v) { return v.abs().sum() > 1.0; }, [](Tensor v) { return v * 0.7; }, h);
        return (tanh(l * w) * l + w * w).sum();  // another one after the loop
    };
    const auto eager = [](const Tensor& x, const Tensor& w) {
        Tensor l = tanh(x * w + 1.0) * sigmoid(x) - x * 0.5;
        while (l.abs().sum().item<double>() > 1.0) l = l * 0.7;
        return (tanh(l * w) * l + w * w).sum();
    };
    auto fn = jit::script(f, opts());
    for (int i = 0; i < 4; ++i) {
        Tensor x = randn({7}, dtype::float64) * 3.0, w = randn({7}, dtype::float64);
        x.requires_grad_();
        w.requires_grad_();
        const Tensor y = fn(x, w), ye = eager(x, w);
        CHECK(allclose(y.detach(), ye.detach(), 1e-12, 1e-12));
        const auto g = autograd::grad({y}, {x, w}), ge = autograd::grad({ye}, {x, w});
        CHECK(allclose(g[0], ge[0], 1e-12, 1e-12));
        CHECK(allclose(g[1], ge[1], 1e-12, 1e-12));
        if (i == 3) {  // finite differences of the executor, dL/dw[2]
            const double h = 1e-6;
            Tensor wp = w.detach().clone(), wm = w.detach().clone();
            wp.select(0, 2).add_(h);
            wm.select(0, 2).sub_(h);
            const double fd = (fn(x.detach(), wp).item<double>() - fn(x.detach(), wm).item<double>()) / (2 * h);
            CHECK(g[1].select(0, 2).item<double>() == Approx(fd).epsilon(1e-5));
        }
    }
    const jit::debug_state d = fn.debug_state();
    REQUIRE(d.levels[0].plan);
    CHECK(d.levels[0].plan->kind == jit::plan_kind::subgraphs);
    CHECK(d.levels[0].plan->graph.find("differentiable subgraph 0") != std::string::npos);
    CHECK(d.levels[0].plan->graph.find("differentiable subgraph 1") != std::string::npos);
    CHECK(d.levels[0].plan->hits >= 2);
    // Below the size threshold, regions stay inline: a plain eager plan.
    jit::options o = opts();
    o.min_differentiable_subgraph = 100;
    auto inline_fn = jit::script(f, o);
    for (int i = 0; i < 3; ++i) {
        Tensor x = randn({7}, dtype::float64), w = randn({7}, dtype::float64);
        x.requires_grad_();
        (void)inline_fn(x, w);
    }
    CHECK(inline_fn.debug_state().levels[0].plan->kind == jit::plan_kind::eager);
}

namespace {

/// Calls the first capture's executor took (profiling, optimized and unoptimized runs).
std::uint64_t calls_served(const jit::debug_state& d) {
    std::uint64_t n = 0;
    for (const auto& l : d.levels) {
        n += l.profiled_runs + l.unoptimized_runs;
        if (l.plan) n += l.plan->hits;
    }
    return n;
}

}  // namespace

TEST_CASE("jit: fusion groups read per-row statistics ([B, T, 1] beside [B, T, C]) bitwise as eager", "[jit]") {
    const auto f = [](Tensor x, Tensor m, Tensor s) { return ((x - m) * s + 1.0) * 0.5; };
    for (dtype t : {dtype::float32, dtype::float64})
        for (const int_list& stat : {int_list{3, 5, 1}, int_list{3, 1, 1}, int_list{1, 5, 1}, int_list{5, 1}}) {
            INFO(t << ", statistic sizes " << stat);
            auto fn = jit::script(f, opts());
            for (int i = 0; i < 3; ++i) {
                const Tensor x = randn({3, 5, 37}, t), m = randn(stat, t), s = randn(stat, t);
                CHECK(bitwise_equal(fn(x, m, s), f(x, m, s)));
            }
            const jit::debug_state d = fn.debug_state();
            REQUIRE(d.levels[0].plan);
            CHECK(d.levels[0].plan->fusion_groups == 1);
        }
}

TEST_CASE("jit: GELU's backward (normal_cdf) fuses, bitwise as eager", "[jit]") {
    namespace F = graft::nn::functional;
    for (dtype t : {dtype::float32, dtype::float64}) {
        INFO(t);
        Tensor x = linspace(-20.0, 20.0, 4099, t);
        const Tensor w = randn({x.numel()}, t);
        const auto f = [](Tensor a, Tensor b) { return (F::gelu(a * b) * b).sum(); };
        auto fn = jit::script(f, opts(jit::strategy{{jit::fusion_behavior::static_, 2}}));
        for (int i = 0; i < 3; ++i) {
            Tensor xa = x.detach().requires_grad_(), xb = x.detach().requires_grad_();
            const Tensor got = autograd::grad({fn(xa, w)}, {xa})[0];
            const Tensor want = autograd::grad({f(xb, w)}, {xb})[0];
            CHECK(bitwise_equal(got, want));
        }
        const jit::debug_state d = fn.debug_state();
        REQUIRE(d.levels[0].plan);
        REQUIRE(d.levels[0].plan->kind == jit::plan_kind::differentiable);
        INFO(d.levels[0].plan->graph);
        // normal_cdf sits inside a fusion group of the backward (a group line lists its members).
        const std::string& text = d.levels[0].plan->graph;
        bool fused = false;
        for (std::size_t at = text.find("FusionGroup"); at != std::string::npos; at = text.find("FusionGroup", at + 1)) {
            const std::string line = text.substr(at, text.find('\n', at) - at);
            fused = fused || line.find("normal_cdf") != std::string::npos;
        }
        CHECK(fused);
    }
}

TEST_CASE("jit: gelu (erf and tanh forms) joins fusion groups, bitwise as eager", "[jit]") {
    namespace F = graft::nn::functional;
    for (const char* approximate : {"none", "tanh"}) {
        const auto f = [approximate](Tensor x, Tensor b) { return F::gelu(x * 2.0 + b, approximate) * 3.0 - b; };
        for (dtype t : {dtype::float32, dtype::float64}) {
            INFO(approximate << ", " << t);
            auto fn = jit::script(f, opts());
            for (int i = 0; i < 3; ++i) {
                // A sweep through both tails and around 0, including specials.
                Tensor x = linspace(-20.0, 20.0, 4099, t);
                x = cat(std::vector<Tensor>{x, tensor({0.0, -0.0, std::numeric_limits<double>::infinity(),
                                                       -std::numeric_limits<double>::infinity(), std::nan("")})
                                                    .to(t)});
                const Tensor b = randn({x.numel()}, t);
                CHECK(bitwise_equal(fn(x, b), f(x, b)));
            }
            const jit::debug_state d = fn.debug_state();
            REQUIRE(d.levels[0].plan);
            CHECK(d.levels[0].plan->kind == jit::plan_kind::fused);
            CHECK(d.levels[0].plan->fusion_groups == 1);
        }
    }
}

TEST_CASE("jit: log1p and expm1 join fusion groups, forward and backward, bitwise as eager", "[jit]") {
    const double inf = std::numeric_limits<double>::infinity();
    const auto f = [](Tensor x, Tensor b) { return log1p(x * b) * 3.0 - expm1(x * 0.5 + b); };
    for (dtype t : {dtype::float32, dtype::float64}) {
        INFO(t);
        {
            // Forward: one fusion group, through log1p's domain edge (-1, NaN below) and expm1's
            // saturation to -1 and overflow, with signed zeros, infinities and NaN.
            auto fn = jit::script(f, opts());
            for (int i = 0; i < 3; ++i) {
                Tensor x = linspace(-3.0, 200.0, 4099, t);
                x = cat(std::vector<Tensor>{x, tensor({0.0, -0.0, -1.0, 1e-30, -1e-30, inf, -inf, std::nan("")}).to(t)});
                const Tensor b = rand({x.numel()}, t) * 1.5;
                CHECK(bitwise_equal(fn(x, b), f(x, b)));
            }
            const jit::debug_state d = fn.debug_state();
            REQUIRE(d.levels[0].plan);
            CHECK(d.levels[0].plan->kind == jit::plan_kind::fused);
            CHECK(d.levels[0].plan->fusion_groups == 1);
        }
        {
            // Backward: Log1PBackward0 (g / (x + 1)) and Expm1Backward0 (g * (result + 1)), and the
            // forward ops, inside fusion groups of the differentiable plan.
            const auto loss = [&f](Tensor x, Tensor b) { return f(x, b).sum(); };
            auto fn = jit::script(loss, opts(jit::strategy{{jit::fusion_behavior::static_, 2}}));
            const Tensor x = linspace(-0.9, 5.0, 4099, t);
            const Tensor b = rand({x.numel()}, t);
            for (int i = 0; i < 3; ++i) {
                Tensor xa = x.detach().requires_grad_(), xb = x.detach().requires_grad_();
                const Tensor got = autograd::grad({fn(xa, b)}, {xa})[0];
                const Tensor want = autograd::grad({loss(xb, b)}, {xb})[0];
                CHECK(bitwise_equal(got, want));
            }
            const jit::debug_state d = fn.debug_state();
            REQUIRE(d.levels[0].plan);
            REQUIRE(d.levels[0].plan->kind == jit::plan_kind::differentiable);
            const std::string& text = d.levels[0].plan->graph;
            INFO(text);
            bool log1p_fused = false, expm1_fused = false;
            for (std::size_t at = text.find("FusionGroup"); at != std::string::npos; at = text.find("FusionGroup", at + 1)) {
                const std::string line = text.substr(at, text.find('\n', at) - at);
                log1p_fused = log1p_fused || line.find("log1p") != std::string::npos;
                expm1_fused = expm1_fused || line.find("expm1") != std::string::npos;
            }
            CHECK(log1p_fused);
            CHECK(expm1_fused);
        }
    }
}

TEST_CASE("jit: sizes a graph takes from its inputs (a view to x.size(0) rows) are symbolic", "[jit]") {
    const auto f = [](Tensor x) { return tanh(x.view({x.size(0) * x.size(1), -1})) * 2.0; };
    const std::vector<int_list> shapes{{8, 3, 2}, {8, 3, 2}, {4, 3, 4}, {4, 3, 4}, {4, 3, 4}, {6, 2, 2}, {8, 3, 2}, {5, 7, 3}};
    for (const jit::strategy& s : {jit::default_fusion_strategy::value(), jit::strategy{{jit::fusion_behavior::dynamic_, 4}}}) {
        auto fn = jit::script(f, opts(s));
        for (const int_list& sz : shapes) {
            const Tensor x = randn(sz, dtype::float64);
            const Tensor y = fn(x), want = f(x);
            REQUIRE(y.sizes() == want.sizes());  // [12, 4], not the first call's [24, 2]
            CHECK(bitwise_equal(y, want));
        }
        const jit::debug_state d = fn.debug_state();
        // One capture serves every call: the view's rows are s0 * s1 of each call.
        CHECK(calls_served(d) == shapes.size());
        CHECK(d.symbolic.find("s0 * s1") != std::string::npos);
        CHECK(d.compilations <= 2);
        std::ostringstream os;
        os << d;
        CHECK(os.str().find("graph symbolic sizes:") != std::string::npos);
    }
}

TEST_CASE("jit: a size no product of input sizes explains keeps the capture at its own sizes", "[jit]") {
    // Integer division: the traces at 8, 9 and 10 rows narrow to 4, 4 and 5 rows.
    const auto f = [](Tensor x) { return x.narrow(0, 0, x.size(0) / 2) * 3.0; };
    auto fn = jit::script(f, opts());
    for (std::int64_t n : {8, 8, 9, 9, 11, 12, 8, 7}) {
        const Tensor x = randn({n, 3}, dtype::float64);
        const Tensor y = fn(x), want = f(x);
        REQUIRE(y.sizes() == want.sizes());
        CHECK(bitwise_equal(y, want));
    }
    const jit::debug_state d = fn.debug_state();
    CHECK(calls_served(d) == 3);  // 8, 8, 8: the other sizes got captures of their own
    // Halving traced at even sizes only would be a constant 0.5: odd sizes are refused, not rounded.
    const auto h = [](Tensor x) { return x.view({x.size(0) / 2, -1}) + 1.0; };
    auto hn = jit::script(h, opts());
    for (std::int64_t n : {4, 4, 6, 5, 8, 3}) {
        const Tensor x = randn({n, 4}, dtype::float64);
        const Tensor y = hn(x), want = h(x);
        REQUIRE(y.sizes() == want.sizes());
        CHECK(bitwise_equal(y, want));
    }
}

TEST_CASE("jit: sizes no input size explains keep captures at their own sizes, never wrong", "[jit]") {
    // arange(n) is recorded as a tensor constant that changes with the size: no symbol explains it.
    const auto f = [](Tensor x) {
        return (tanh(x) * arange(0, static_cast<double>(x.size(0)), 1, dtype::float64).unsqueeze(1)).sum();
    };
    auto fn = jit::script(f, opts(jit::strategy{{jit::fusion_behavior::dynamic_, 6}}));
    for (std::int64_t n : {4, 6, 8, 6, 9}) {
        Tensor x = randn({n, 3}, dtype::float64);
        x.requires_grad_();
        const Tensor y = fn(x), ye = f(x);
        CHECK(allclose(y.detach(), ye.detach(), 1e-12, 1e-12));
        CHECK(allclose(autograd::grad({y}, {x})[0], autograd::grad({ye}, {x})[0], 1e-12, 1e-12));
    }
    // Each size got a capture of its own: the first serves only its size.
    CHECK(calls_served(fn.debug_state()) == 1);
}

TEST_CASE("jit: narrow's backward takes its sizes from the forward's inputs: one DYNAMIC plan", "[jit]") {
    // The backward's inputs (tanh's output, the gradient) carry 2 rows, not the input's n: the
    // zeros narrow's backward writes into are sized from the forward's input (context symbols).
    const auto f = [](Tensor x) { return tanh(x.narrow(0, 1, 2)).sum(); };
    auto fn = jit::script(f, opts(jit::strategy{{jit::fusion_behavior::dynamic_, 6}}));
    const std::vector<std::int64_t> rows{4, 6, 8, 6, 9, 3};
    for (std::int64_t n : rows) {
        Tensor x = randn({n, 3}, dtype::float64);
        x.requires_grad_();
        const Tensor y = fn(x), ye = f(x);
        CHECK(allclose(y.detach(), ye.detach(), 1e-12, 1e-12));
        CHECK(allclose(autograd::grad({y}, {x})[0], autograd::grad({ye}, {x})[0], 1e-12, 1e-12));
    }
    const jit::debug_state d = fn.debug_state();
    CHECK(calls_served(d) == rows.size());
    std::size_t differentiable = 0;
    for (const auto& l : d.levels)
        if (l.plan && l.plan->kind == jit::plan_kind::differentiable) {
            ++differentiable;
            INFO(l.plan->symbolic);
            CHECK(l.plan->symbolic.find("forward input 0.size(0)") != std::string::npos);
        }
    CHECK(differentiable == 1);  // profiled at 4 and 6, then one plan for every size
}

TEST_CASE("jit: sizes computed with SymInts serve every size from one capture", "[jit]") {
    // The first half rounded up: (n + 1) / 2 is neither a product of sizes nor a * n + b, so with
    // size() each size needs its own capture; with sym_size() the graph computes it per call.
    const auto f = [](Tensor x) { return tanh(x.narrow_symint(0, 0, (x.sym_size(0) + 1) / 2)) * 3.0; };
    const auto g = [](Tensor x) { return tanh(x.narrow(0, 0, (x.size(0) + 1) / 2)) * 3.0; };
    const std::vector<std::int64_t> rows{8, 8, 9, 9, 11, 12, 8, 7, 2};
    auto fn = jit::script(f, opts());
    auto gn = jit::script(g, opts());
    for (std::int64_t n : rows) {
        const Tensor x = randn({n, 3}, dtype::float64);
        const Tensor want = f(x);
        const Tensor y = fn(x), z = gn(x);
        REQUIRE(y.sizes() == want.sizes());
        CHECK(bitwise_equal(y, want));
        CHECK(bitwise_equal(z, want));
    }
    const jit::debug_state d = fn.debug_state();
    INFO(d.symbolic);
    CHECK(calls_served(d) == rows.size());  // one capture
    CHECK(d.symbolic.find("(s0 + 1) / 2") != std::string::npos);
    CHECK(gn.debug_state().captures == 6);  // 8, 9, 11, 12, 7, 2: every size captured on its own
    // Sizes that are a * n + b are found without SymInts (the traces at three sizes fit them).
    const auto h = [](Tensor x) { return x.narrow(0, 1, x.size(0) - 1) * 3.0; };
    auto hn = jit::script(h, opts());
    for (std::int64_t n : rows) {
        const Tensor x = randn({n, 3}, dtype::float64);
        const Tensor y = hn(x), want = h(x);
        REQUIRE(y.sizes() == want.sizes());
        CHECK(bitwise_equal(y, want));
    }
    INFO(hn.debug_state().symbolic);
    CHECK(calls_served(hn.debug_state()) == rows.size());
    CHECK(hn.debug_state().symbolic.find("s0 - 1") != std::string::npos);
}

TEST_CASE("jit: size inference runs no user loop on made-up values (never ends, or grows, on zeros)", "[jit]") {
    // On zeros `v.sum() < 10` holds forever; a capture that ran the loop there would hang.
    const auto doubling = [](Tensor v) {
        return while_loop([](const Tensor& c) { return c.sum() < 10.0; }, [](const Tensor& c) { return c * 2.0; }, v);
    };
    // A body that grows its carried value: on zeros it would grow without bound.
    const auto growing = [](Tensor v) {
        return while_loop([](const Tensor& c) { return c.sum() < 10.0; },
                          [](const Tensor& c) { return cat({c, c + 1.0}); }, v);
    };
    auto fd = jit::script(doubling, opts());
    auto fg = jit::script(growing, opts());
    for (std::int64_t n : {4, 4, 6, 9, 4}) {
        INFO("n " << n);
        const Tensor x = rand({n}, dtype::float64) + 0.25;  // positive: the loops end
        CHECK(bitwise_equal(fd(x), doubling(x)));
        CHECK(bitwise_equal(fg(x), growing(x)));
    }
    CHECK(fd(full({3}, 1.0, dtype::float64)).sum().item<double>() == 12.0);  // eager: 3 -> 6 -> 12
    // With a weight that requires grad: the loop's backward is traced too, still without running it.
    Tensor w = full({}, 1.5, dtype::float64).requires_grad_();
    const auto scaled = [](Tensor v, Tensor s) {
        return while_loop([](const Tensor& c, const Tensor&) { return c.sum() < 10.0; },
                          [](const Tensor& c, const Tensor& k) { return std::vector<Tensor>{c * k, k}; }, v, s)[0]
            .sum();
    };
    auto fs = jit::script(scaled, opts());
    for (std::int64_t n : {4, 4, 7}) {
        const Tensor x = rand({n}, dtype::float64) + 0.25;
        const Tensor y = fs(x, w), ye = scaled(x, w);
        CHECK(bitwise_equal(y, ye));
        CHECK(bitwise_equal(autograd::grad({y}, {w})[0], autograd::grad({ye}, {w})[0]));
    }
    // capture::aot with dynamic_dims traces at other sizes too: it refuses a loop (documented),
    // at once, instead of running it on zeros.
    capture::aot_options o;
    o.dynamic_dims = {{0, 0}};
    const Tensor x0 = rand({5}, dtype::float64) + 0.25;
    CHECK_THROWS_WITH(capture::aot(doubling, {x0}, o), Catch::Contains("control flow"));
}

TEST_CASE("jit: a SymInt size that divides by zero at a call's sizes is an error, as in eager", "[jit]") {
    const auto f = [](Tensor x) { return x.narrow_symint(0, 0, x.sym_size(0) / (x.sym_size(0) - 2)) * 2.0; };
    auto fn = jit::script(f, opts());
    for (std::int64_t n : {8, 8, 9, 12}) {
        const Tensor x = randn({n, 3}, dtype::float64);
        CHECK(bitwise_equal(fn(x), f(x)));
    }
    const Tensor x2 = randn({2, 3}, dtype::float64);
    CHECK_THROWS_WITH(f(x2), Catch::Contains("division by zero"));
    CHECK_THROWS_AS(fn(x2), graft::error);  // never an empty tensor
    const Tensor x8 = randn({8, 3}, dtype::float64);
    CHECK(bitwise_equal(fn(x8), f(x8)));  // still usable
    // A SymInt size that is one number at every probed size (n / 100 + 1 = 1 at 8, 9, 10, 12)
    // but another at 150: the capture must not serve 150 with the traced number.
    const auto h = [](Tensor x) { return x.narrow_symint(0, 0, x.sym_size(0) / 100 + 1) * 2.0; };
    auto hn = jit::script(h, opts());
    for (std::int64_t n : {8, 8, 12, 150, 9, 250}) {
        INFO("n " << n);
        const Tensor x = randn({n, 3}, dtype::float64);
        const Tensor y = hn(x), want = h(x);
        REQUIRE(y.sizes() == want.sizes());
        CHECK(bitwise_equal(y, want));
    }
    capture::aot_options o;
    o.dynamic_dims = {{0, 0}};
    Tensor x0 = randn({8, 3}, dtype::float64).requires_grad_();
    const auto a = capture::aot([&](Tensor x) { return h(x).sum(); }, {x0}, o);
    for (std::int64_t n : {9, 150}) {
        const Tensor x = randn({n, 3}, dtype::float64).requires_grad_();
        const Tensor y = a(x)[0], want = h(x).sum();
        CHECK(bitwise_equal(y, want));
        CHECK(bitwise_equal(autograd::grad({y}, {x})[0], autograd::grad({want}, {x})[0]));
    }
}

TEST_CASE("jit: a DYNAMIC differentiable plan with SymInt sizes matches eager gradients", "[jit]") {
    const auto f = [](Tensor x, Tensor w) {
        const Tensor inner = x.narrow_symint(0, 1, x.sym_size(0) - 2);  // drop the first and last rows
        const Tensor h = tanh(matmul(inner, w));
        return (h * h).mean();
    };
    Tensor w = randn({4, 3}, dtype::float64);
    w.requires_grad_();
    auto fn = jit::script(f, opts());
    const std::vector<std::int64_t> batches{8, 16, 32, 5, 64, 128, 7};
    for (std::int64_t n : batches) {
        Tensor x = randn({n, 4}, dtype::float64);
        x.requires_grad_();
        const Tensor y = fn(x, w), want = f(x, w);
        CHECK(allclose(y.detach(), want.detach(), 1e-12, 1e-12));
        const auto gr = autograd::grad({y}, {x, w}), ge = autograd::grad({want}, {x, w});
        CHECK(allclose(gr[0], ge[0], 1e-12, 1e-12));
        CHECK(allclose(gr[1], ge[1], 1e-12, 1e-12));
    }
    const jit::debug_state d = fn.debug_state();
    CHECK(calls_served(d) == batches.size());
    CHECK(d.compilations == 2);  // STATIC for 8, then DYNAMIC for every other batch size
    REQUIRE(d.levels.size() >= 2);
    REQUIRE(d.levels[1].plan);
    CHECK(d.levels[1].plan->kind == jit::plan_kind::differentiable);
    INFO(d.levels[1].plan->symbolic);
    CHECK(d.levels[1].plan->symbolic.find("s0 - 2") != std::string::npos);
}

TEST_CASE("ir: graphs with symbolic sizes print, parse back and run at every size", "[jit][ir]") {
    // capture::aot's forward with a SymInt size: the first half of the columns, rounded up.
    const auto f = [](Tensor x) { return tanh(x.narrow_symint(1, 0, (x.sym_size(1) + 1) / 2)) * 2.0; };
    capture::aot_options o;
    o.dynamic_dims = {{0, 1}};
    const auto a = capture::aot(f, {randn({3, 6}, dtype::float64)}, o);
    REQUIRE(a.forward_sizes);
    const std::string text = ir::to_string(*a.forward, *a.forward_sizes);
    INFO(text);
    CHECK(text.find("sizes:\n  s0 = %x0.size(1) = 6\n") != std::string::npos);
    CHECK(text.find(".length = (s0 + 1) / 2\n") != std::string::npos);
    ir::symbolic_graph sg = ir::parse_symbolic(text);
    CHECK(ir::to_string(*sg.graph, sg.sizes) == text);  // the text reads back to itself
    // The interpreter computes the length per call; so does an executor built from the text.
    for (std::int64_t n : {6, 9, 2, 15}) {
        const Tensor x = randn({3, n}, dtype::float64);
        const auto got = ir::interpret(*sg.graph, {x}, &sg.sizes);
        CHECK(bitwise_equal(std::get<Tensor>(got[0]), f(x)));
    }
    jit::executor ex(ir::parse_symbolic(text), opts());
    INFO(ex.debug_state().symbolic);
    REQUIRE(ex.symbolic_sizes() != nullptr);
    // A table is its graph's: an executor refuses another graph object's.
    CHECK_THROWS_WITH(jit::executor(ir::symbolic_graph{ir::parse_symbolic(text).graph, sg.sizes}, opts()),
                      Catch::Contains("not the graph's"));
    for (std::int64_t n : {6, 6, 9, 2, 15, 7, 6}) {
        const Tensor x = randn({3, n}, dtype::float64);
        CHECK(bitwise_equal(std::get<Tensor>(ex.run({x})[0]), f(x)));
    }
    // A text without a sizes section reads as a graph with an empty table.
    CHECK(ir::parse_symbolic(ir::to_string(*a.forward)).sizes.patches.empty());
}

TEST_CASE("ir: a hand-written graph with symbolic sizes, malformed sizes sections are clear errors", "[jit][ir]") {
    const std::string body = "graph(%x : Double(*, 3)):\n"
                             "  %1 : Double(7, 3) = narrow[dim=0, length=7, start=1](%x)\n"
                             "  %2 : Double(7, 3) = tanh(%1)\n"
                             "  return (%2)\n";
    const std::string text = body + "sizes:\n  s0 = %x.size(0) = 8\n  %1.length = s0 - 1\n";
    jit::executor ex(ir::parse_symbolic(text), opts());
    INFO(ex.debug_state().symbolic);
    REQUIRE(ex.symbolic_sizes() != nullptr);
    for (std::int64_t n : {8, 8, 5, 12, 2}) {
        const Tensor x = randn({n, 3}, dtype::float64);
        CHECK(bitwise_equal(std::get<Tensor>(ex.run({x})[0]), tanh(x.narrow(0, 1, n - 1))));
    }
    const auto fails = [&](const std::string& section, const std::string& message) {
        INFO(section);
        CHECK_THROWS_WITH(ir::parse_symbolic(body + "sizes:\n" + section), Catch::Contains(message));
    };
    fails("  s0 = %x.size(0) = 8\n  %1.length = s0 -\n", "sizes line 7: expected a number, a symbol or '('");
    fails("  s0 = %x.size(0) = 8\n  %1.length = s0\n", "is 8.000000 at the traced sizes, but the graph has 7");
    fails("  s0 = %x.size(0) = 8\n  %1.length = s1 - 1\n", "unknown symbol s1");
    fails("  s0 = %x.size(0) = 8\n  %9.length = s0 - 1\n", "'%9' is not the first output of a node");
    fails("  s0 = %x.size(0) = 8\n  %1.width = s0 - 1\n", "the narrow node has no attribute 'width'");
    fails("  s0 = %x.size(1) = 4\n", "input %x has size 3 at dimension 1, not 4");
    fails("  s1 = %x.size(0) = 8\n", "expected symbol s0");
    fails("  s0 = %y.size(0) = 8\n", "'%y' is not an input of the graph");
    fails("  s0 = %x.size(0) = 8\n  %1.length = (s0 - 1\n", "expected ')'");
    CHECK_THROWS_WITH(ir::parse(text), Catch::Contains("read it with ir::parse_symbolic"));
    // Context symbols belong to backward graphs: an executor refuses them.
    const ir::symbolic_graph ctx =
        ir::parse_symbolic(body + "sizes:\n  s0 = forward(0).size(0) = 8\n  %1.length = s0 - 1\n");
    CHECK(ctx.sizes.uses_context());
    CHECK_THROWS_WITH(
        jit::executor(ir::parse_symbolic(body + "sizes:\n  s0 = forward(0).size(0) = 8\n  %1.length = s0 - 1\n"),
                      opts()),
        Catch::Contains("context symbols"));
}

TEST_CASE("jit: a differentiable plan of a graph with symbolic view sizes matches eager gradients", "[jit]") {
    const auto f = [](Tensor x, Tensor w) {
        const Tensor h = tanh(x.reshape({x.size(0) * 2, -1}) * w);
        return (h * h).sum();
    };
    Tensor w = randn({3}, dtype::float64);
    w.requires_grad_();
    auto fn = jit::script(f, opts());
    const std::vector<std::int64_t> batches{8, 16, 32, 5, 64, 128, 7};
    for (std::int64_t n : batches) {
        Tensor x = randn({n, 6}, dtype::float64);
        x.requires_grad_();
        const Tensor y = fn(x, w), want = f(x, w);
        CHECK(allclose(y.detach(), want.detach(), 1e-12, 1e-12));
        const auto g = autograd::grad({y}, {x, w}), ge = autograd::grad({want}, {x, w});
        CHECK(allclose(g[0], ge[0], 1e-12, 1e-12));
        CHECK(allclose(g[1], ge[1], 1e-12, 1e-12));
    }
    const jit::debug_state d = fn.debug_state();
    CHECK(calls_served(d) == batches.size());
    CHECK(d.compilations == 2);  // STATIC for 8, then DYNAMIC (automatic) for every other batch size
    REQUIRE(d.levels.size() >= 2);
    REQUIRE(d.levels[1].plan);
    CHECK(d.levels[1].plan->kind == jit::plan_kind::differentiable);
    INFO(d.levels[1].plan->symbolic);
    CHECK(d.levels[1].plan->guards[0] == "Double(s0, 6, requires_grad=1)");
}

TEST_CASE("jit: a graph that does not depend on sizes keeps one capture: DYNAMIC serves every size", "[jit]") {
    const auto g = [](Tensor x) { return tanh(x) * 2.0 + 1.0; };
    auto gn = jit::script(g, opts(jit::strategy{{jit::fusion_behavior::dynamic_, 4}}));
    for (std::int64_t n : {8, 16, 5, 100}) {
        const Tensor x = randn({n, 3}, dtype::float64);
        CHECK(bitwise_equal(gn(x), g(x)));
    }
    CHECK(gn.debug_state().compilations == 1);
    CHECK(gn.debug_state().levels[0].plan->hits == 3);
}

TEST_CASE("jit: flushed plans and captures are freed once no call can use them", "[jit]") {
    auto fn = jit::script(chain, opts());
    for (int i = 0; i < 50; ++i) {
        const auto in = inputs3(16 + i % 3);
        CHECK(bitwise_equal(fn(in[0], in[1], in[2]), chain(in[0], in[1], in[2])));
        fn.flush_compilation_cache();  // no call running: freed at once
        CHECK(fn.debug_state().retired_plans == 0);
    }
    // The same for a bare executor.
    auto g = ir::parse("graph(%x : Float):\n  %1 : Float = tanh(%x)\n  %2 : Float = mul(%1, %x)\n  return (%2)\n");
    const jit::executor ex(*g, opts());
    for (int i = 0; i < 20; ++i) {
        const Tensor x = randn({8});
        CHECK(bitwise_equal(ex(x)[0], tanh(x) * x));
        CHECK(bitwise_equal(ex(x)[0], tanh(x) * x));
        ex.flush_compilation_cache();
        CHECK(ex.debug_state().retired_plans == 0);
    }
}

TEST_CASE("jit: 8 threads call one script with changing shapes, dtypes, requires-grad and flushes", "[jit]") {
    // Bounded for CI (TSan runs this file); bench/stress_jit.cpp runs it for 10^6 calls.
    const auto f = [](Tensor x, Tensor w, Tensor b) { return (tanh(x * w + b) * sigmoid(x)).sum(); };
    auto fn = jit::script(f, opts());
    std::atomic<int> wrong{0};
    std::atomic<bool> stop{false};
    const auto worker = [&](int id) {
        for (int i = 0; i < 60; ++i) {
            const std::int64_t n = 2 + (id + i) % 5;
            const dtype t = (i / 7) % 2 ? dtype::float64 : dtype::float32;
            Tensor x = randn({n}, t), w = randn({n}, t), b = randn({n}, t);
            const bool grad = (id + i) % 3 == 0;
            if (grad) x.requires_grad_();
            const Tensor y = fn(x, w, b), want = f(x, w, b);
            if (!allclose(y.detach(), want.detach(), 1e-5, 1e-5) || y.requires_grad() != grad) ++wrong;
            if (grad) {
                const auto g = autograd::grad({y}, {x}), ge = autograd::grad({want}, {x});
                if (!allclose(g[0], ge[0], 1e-5, 1e-5)) ++wrong;
            }
        }
    };
    std::thread flusher([&] {
        while (!stop.load()) {
            fn.flush_compilation_cache();
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
    });
    std::vector<std::thread> threads;
    for (int id = 0; id < 8; ++id) threads.emplace_back(worker, id);
    for (auto& t : threads) t.join();
    stop = true;
    flusher.join();
    CHECK(wrong == 0);
    fn.flush_compilation_cache();  // nothing running now: every retired plan goes
    CHECK(fn.debug_state().retired_plans == 0);
}

TEST_CASE("jit: differentiable subgraphs inside a loop body match eager gradients", "[jit]") {
    const auto body = [](const Tensor& v, const Tensor& w) {
        return v * 0.5 + tanh(v * w) * sigmoid(v) * 0.05 - v * 0.1;  // 9 nodes
    };
    const auto f = [&body](Tensor x, Tensor w) {
        const Tensor l =
            while_loop([](Tensor v) { return v.abs().sum() > 1.0; }, [&body, w](Tensor v) { return body(v, w); }, x);
        return (l * l).sum();
    };
    const auto eager = [&body](const Tensor& x, const Tensor& w) {
        Tensor l = x;
        while (l.abs().sum().item<double>() > 1.0) l = body(l, w);
        return (l * l).sum();
    };
    auto fn = jit::script(f, opts());
    for (int i = 0; i < 4; ++i) {
        Tensor x = randn({7}, dtype::float64) * 3.0, w = randn({7}, dtype::float64);
        x.requires_grad_();
        w.requires_grad_();
        const Tensor y = fn(x, w), ye = eager(x, w);
        CHECK(allclose(y.detach(), ye.detach(), 1e-12, 1e-12));
        const auto g = autograd::grad({y}, {x, w}), ge = autograd::grad({ye}, {x, w});
        CHECK(allclose(g[0], ge[0], 1e-12, 1e-12));
        CHECK(allclose(g[1], ge[1], 1e-12, 1e-12));
        if (i == 3) {  // finite differences of the executor, dL/dw[1] (the trip count stays put)
            const double h = 1e-7;
            Tensor wp = w.detach().clone(), wm = w.detach().clone();
            wp.select(0, 1).add_(h);
            wm.select(0, 1).sub_(h);
            const double fd = (fn(x.detach(), wp).item<double>() - fn(x.detach(), wm).item<double>()) / (2 * h);
            CHECK(g[1].select(0, 1).item<double>() == Approx(fd).epsilon(1e-4).margin(1e-9));
        }
    }
    const jit::debug_state d = fn.debug_state();
    REQUIRE(d.levels[0].plan);
    CHECK(d.levels[0].plan->kind == jit::plan_kind::subgraphs);
    // One region in the loop body: the body's 9 nodes and the next condition's 3, run per iteration.
    INFO(d.levels[0].plan->graph);
    CHECK(d.levels[0].plan->graph.find("differentiable subgraph 0 (12 nodes") != std::string::npos);
}

TEST_CASE("jit: a fusion group holding independent chains of different shapes writes each at its own shape",
          "[jit]") {
    // Found by fuzz/fuzz_ir_parser: x*4-4 (shape [1]) and u*4 (shape [3]) fused into one group
    // ran at the group's shape [3] and returned x*4-4 three times.
    auto g = ir::parse("graph(%x : Float(1), %u : Tensor):\n  %four : float = prim::Constant[value=4.]()\n"
                       "  %a : Tensor = mul(%x, %four)\n  %b : Tensor = sub(%a, %four)\n  %q : Tensor = mul(%u, %four)\n"
                       "  return (%b, %q)\n");
    for (const jit::strategy& s : {jit::default_fusion_strategy::value(), jit::strategy{{jit::fusion_behavior::dynamic_, 2}}}) {
        const jit::executor ex(*g, opts(s));
        for (int i = 0; i < 4; ++i) {
            const Tensor x = randn({1}), u = randn({3});
            const auto r = ex(x, u);
            REQUIRE(r[0].sizes() == int_list{1});
            CHECK(bitwise_equal(r[0], x * 4.0 - 4.0));
            CHECK(bitwise_equal(r[1], u * 4.0));
        }
        CHECK(ex.debug_state().levels[0].plan->fusion_groups == 1);
    }
    // The same through jit::script: f returns both chains.
    const auto f = [](Tensor x, Tensor u) { return std::vector<Tensor>{x * 4.0 - 4.0, tanh(u) * 4.0}; };
    auto fn = jit::script(f, opts());
    for (int i = 0; i < 4; ++i) {
        const Tensor x = randn({1}), u = randn({3});
        const auto r = fn(x, u);
        REQUIRE(r[0].sizes() == int_list{1});
        CHECK(bitwise_equal(r[0], x * 4.0 - 4.0));
        CHECK(bitwise_equal(r[1], tanh(u) * 4.0));
    }
}

TEST_CASE("jit: the executor's passes do not trust the graph's declared sizes", "[jit]") {
    // A narrow that is a no-op at the first call's sizes is not one at others (found by the IR
    // fuzzer through a graph text whose declared types did not match its values).
    const auto f = [](Tensor x) { return tanh(x.narrow(1, 0, 3)) * 2.0; };
    auto fn = jit::script(f, opts());
    for (const int_list& sz : {int_list{2, 3}, int_list{2, 3}, int_list{4, 5}, int_list{4, 5}, int_list{6, 7}}) {
        const Tensor x = randn(sz), y = fn(x), want = f(x);
        REQUIRE(y.sizes() == want.sizes());
        CHECK(bitwise_equal(y, want));
    }
    // A graph text whose declared types are wrong computes what its ops compute.
    auto g = ir::parse("graph(%x : Float(2, 3)):\n  %e : Float(2, 3) = transpose[dim0=0, dim1=1](%x)\n"
                       "  %f : Float(2, 2) = narrow[dim=0, length=2, start=0](%e)\n  return (%f)\n");
    const jit::executor ex(*g, opts());
    for (int i = 0; i < 3; ++i) {
        const Tensor x = randn({2, 3});
        const Tensor y = ex(x)[0];
        const Tensor expected = x.transpose(0, 1).narrow(0, 0, 2);
        REQUIRE(y.sizes() == expected.sizes());
        CHECK(bitwise_equal(y.contiguous(), expected.contiguous()));
    }
}
