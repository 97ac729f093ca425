// Issue 15's per-call floor by instruction count: the chain tanh(x*w + b) * sigmoid(x) at
// N elements (default 16), one path per run, measured under callgrind between
// CALLGRIND_START_INSTRUMENTATION and CALLGRIND_STOP_INSTRUMENTATION:
//   callgrind_chain jit|expr_into|hand|first_calls|fwdbwd|fwdbwd_eager|loss|loss_then_mean [N] [calls]
//   - jit: jit::script's optimized plan (after three warm-up calls), one thread;
//   - expr_into: ex::evaluate_into of the same chain into a preallocated y (the compile-time
//     fused kernel);
//   - hand: the same-math Highway hand loop of bench/chain_hand.hpp into a preallocated y;
//   - first_calls: a fresh jit::script of the chain called twice (capture and profile, then
//     compile and run) and destroyed, per "call" (issue 15's first-two-calls floor);
//   - fwdbwd: the chain's forward and backward through jit::script's differentiable plan
//     (autograd::grad of x, w and b with a given output gradient), after three warm-up
//     calls; fwdbwd_eager: the same through eager autograd;
//   - loss: mean((tanh(x*w+b) - t)^2) through jit::script, the mean as its group's epilogue;
//     loss_then_mean: the script of the squared differences, then graft::mean.
// bench/callgrind_chain.sh runs them under valgrind and prints instructions per call and
// their ratios. Outside valgrind the markers do nothing and the program only runs the calls.
#include <graft/graft.hpp>

#include "chain_hand.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#endif

using graft::Tensor;
namespace ex = graft::expr;

namespace {

Tensor chain(Tensor x, Tensor w, Tensor b) { return graft::tanh(x * w + b) * graft::sigmoid(x); }

// A loss over the chain's linear part: the jit's group computes the mean as its epilogue
// (`loss`); `loss_then_mean` is the script of the squared differences followed by graft::mean
// (the plan without the epilogue).
Tensor squared_error(Tensor x, Tensor w, Tensor b, Tensor target) {
    const Tensor d = graft::tanh(x * w + b) - target;
    return d * d;
}
Tensor mse_loss(Tensor x, Tensor w, Tensor b, Tensor target) { return graft::mean(squared_error(x, w, b, target)); }

const auto chain_expr = ex::trace<3>([](auto x, auto w, auto b) { return tanh(x * w + b) * sigmoid(x); });

}  // namespace

int main(int argc, char** argv) {
    const char* path = argc > 1 ? argv[1] : "jit";
    const std::int64_t n = argc > 2 ? std::atoll(argv[2]) : 16;
    const int calls = argc > 3 ? std::atoi(argv[3]) : 1000;
    if (n <= 0 || calls <= 0) {
        std::fprintf(stderr, "usage: callgrind_chain jit|expr_into|hand|first_calls|fwdbwd|fwdbwd_eager|loss|loss_then_mean [N > 0] "
                     "[calls > 0]\n");
        return 2;
    }
    const Tensor x = graft::randn({n}), w = graft::randn({n}), b = graft::randn({n});
    double check = 0;
    if (std::strcmp(path, "jit") == 0) {
        graft::jit::options o;
        o.num_threads = 1;
        auto fn = graft::jit::script(chain, o);
        for (int i = 0; i < 3; ++i) (void)fn(x, w, b);  // profiling run, compile, first optimized run
        CALLGRIND_START_INSTRUMENTATION;
        for (int i = 0; i < calls; ++i) {
            const Tensor y = fn(x, w, b);
            if (i == 0) check = static_cast<double>(y.data_ptr<float>()[0]);
        }
        CALLGRIND_STOP_INSTRUMENTATION;
    } else if (std::strcmp(path, "expr_into") == 0) {
        Tensor y = graft::zeros({n});
        for (int i = 0; i < 3; ++i) ex::evaluate_into(y, chain_expr, x, w, b);
        CALLGRIND_START_INSTRUMENTATION;
        for (int i = 0; i < calls; ++i) ex::evaluate_into(y, chain_expr, x, w, b);
        CALLGRIND_STOP_INSTRUMENTATION;
        check = static_cast<double>(y.data_ptr<float>()[0]);
    } else if (std::strcmp(path, "first_calls") == 0) {
        graft::jit::options o;
        o.num_threads = 1;
        const auto fresh = [&] {
            auto fn = graft::jit::script(chain, o);
            (void)fn(x, w, b);
            const Tensor y = fn(x, w, b);
            return static_cast<double>(y.data_ptr<float>()[0]);
        };
        check = fresh();  // the first script of the process (thread-local caches, lint memo)
        CALLGRIND_START_INSTRUMENTATION;
        for (int i = 0; i < calls; ++i) (void)fresh();
        CALLGRIND_STOP_INSTRUMENTATION;
    } else if (std::strcmp(path, "fwdbwd") == 0 || std::strcmp(path, "fwdbwd_eager") == 0) {
        const Tensor xg = x.detach().requires_grad_(), wg = w.detach().requires_grad_(), bg = b.detach().requires_grad_();
        const Tensor seed = graft::randn({n});
        graft::jit::options o;
        o.num_threads = 1;
        auto fn = graft::jit::script(chain, o);
        const bool use_jit = std::strcmp(path, "fwdbwd") == 0;
        const auto step = [&] {
            const Tensor y = use_jit ? fn(xg, wg, bg) : chain(xg, wg, bg);
            return graft::autograd::grad({y}, {xg, wg, bg}, {seed});
        };
        for (int i = 0; i < 3; ++i) (void)step();
        CALLGRIND_START_INSTRUMENTATION;
        for (int i = 0; i < calls; ++i) {
            const auto g = step();
            if (i == 0) check = static_cast<double>(g[0].data_ptr<float>()[0]);
        }
        CALLGRIND_STOP_INSTRUMENTATION;
    } else if (std::strcmp(path, "hand") == 0) {
        const chain_hand::fwd_fn hand = chain_hand::hand_for_current_target().fwd;
        if (hand == nullptr) {
            std::fprintf(stderr, "callgrind_chain: no hand loop for this target\n");
            return 2;
        }
        Tensor y = graft::zeros({n});
        const auto run = [&] {
            hand(x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(),
                 static_cast<std::size_t>(n));
        };
        for (int i = 0; i < 3; ++i) run();
        CALLGRIND_START_INSTRUMENTATION;
        for (int i = 0; i < calls; ++i) run();
        CALLGRIND_STOP_INSTRUMENTATION;
        check = static_cast<double>(y.data_ptr<float>()[0]);
    } else if (std::strcmp(path, "loss") == 0 || std::strcmp(path, "loss_then_mean") == 0) {
        const bool epilogue = std::strcmp(path, "loss") == 0;
        const Tensor target = graft::randn({n});
        graft::jit::options o;
        o.num_threads = 1;
        auto fn = graft::jit::script(epilogue ? mse_loss : squared_error, o);
        const auto run = [&] { return epilogue ? fn(x, w, b, target) : graft::mean(fn(x, w, b, target)); };
        for (int i = 0; i < 3; ++i) (void)run();
        CALLGRIND_START_INSTRUMENTATION;
        for (int i = 0; i < calls; ++i) {
            const Tensor l = run();
            if (i == 0) check = l.item<double>();
        }
        CALLGRIND_STOP_INSTRUMENTATION;
    } else {
        std::fprintf(stderr, "callgrind_chain: unknown path '%s' (jit, expr_into, hand, first_calls, fwdbwd, "
                     "fwdbwd_eager, loss or loss_then_mean)\n", path);
        return 2;
    }
    std::printf("%s N=%lld calls=%d y[0]=%g\n", path, static_cast<long long>(n), calls, check);
    return 0;
}
