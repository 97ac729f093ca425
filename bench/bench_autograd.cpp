// Autograd overhead: per-op eager cost on 1-element tensors with and without
// requires_grad, per-node backward cost on a chain of 100 ops, and an MLP layer
// (matmul + bias + tanh) forward+backward at batch 64, width 256.
#include <benchmark/benchmark.h>

#include <graft/graft.hpp>

namespace {

using namespace graft;

constexpr int chain = 100;

// Forward of a chain of `chain` multiplications on a 1-element tensor.
void bm_eager_chain(benchmark::State& st, bool requires_grad) {
    Tensor x = ones({1});
    if (requires_grad) x.requires_grad_();
    for (auto _ : st) {
        Tensor y = x;
        for (int i = 0; i < chain; ++i) y = y * 1.0001;
        benchmark::DoNotOptimize(y.impl_ptr().get());
    }
    st.counters["ns_per_op"] = benchmark::Counter(static_cast<double>(st.iterations()) * chain,
                                                  benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// Backward of the same chain (forward excluded from the timing).
void bm_backward_chain(benchmark::State& st) {
    Tensor x = ones({1}).requires_grad_();
    for (auto _ : st) {
        st.PauseTiming();
        Tensor y = x;
        for (int i = 0; i < chain; ++i) y = y * 1.0001;
        Tensor s = y.sum();
        st.ResumeTiming();
        s.backward();
    }
    // chain multiplications + SumBackward0 + AccumulateGrad
    st.counters["ns_per_node"] = benchmark::Counter(static_cast<double>(st.iterations()) * (chain + 2),
                                                    benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void bm_mlp_layer(benchmark::State& st) {
    manual_seed(0);
    Tensor x = randn({64, 256});
    Tensor w = (randn({256, 256}) * 0.05).detach().requires_grad_();
    Tensor b = zeros({256}).requires_grad_();
    for (auto _ : st) {
        Tensor loss = tanh(matmul(x, w) + b).sum();
        loss.backward();
        w.set_grad(Tensor{});
        b.set_grad(Tensor{});
    }
    // forward 2*64*256*256 + backward (grad w.r.t. w) 2*64*256*256 flops
    st.counters["GFLOPs"] = benchmark::Counter(static_cast<double>(st.iterations()) * 4.0 * 64 * 256 * 256 / 1e9,
                                               benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK_CAPTURE(bm_eager_chain, no_grad_1elem, false);
BENCHMARK_CAPTURE(bm_eager_chain, requires_grad_1elem, true);
BENCHMARK(bm_backward_chain);
BENCHMARK(bm_mlp_layer)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
