// Graph capture and the IR interpreter: the cost of capturing a 100-op function
// (capture::trace and capture::aot), and the interpreter's overhead per node
// against eager graft on the same ops (1-element tensors, so overhead dominates).
#include <benchmark/benchmark.h>

#include <graft/graft.hpp>

namespace {

using namespace graft;

constexpr int chain = 100;  // 50 steps of 3 ops: 150 recorded ops

Tensor chain_fn(Tensor x) {
    Tensor y = x;
    for (int i = 0; i < chain / 2; ++i) y = tanh(y * 1.0001) + 0.5;  // 3 ops per step: mul, tanh, add
    return y;
}
constexpr int ops_in_chain = 3 * (chain / 2);

void bm_trace(benchmark::State& st) {
    const Tensor x = ones({1});
    for (auto _ : st) {
        auto cap = capture::trace(chain_fn, x);
        benchmark::DoNotOptimize(cap.graph().num_nodes());
    }
    st.counters["us_per_capture"] =
        benchmark::Counter(static_cast<double>(st.iterations()) / 1e6, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    st.counters["ops"] = ops_in_chain;
}

void bm_aot(benchmark::State& st) {
    const Tensor x = ones({1}).requires_grad_();
    for (auto _ : st) {
        auto a = capture::aot([](Tensor t) { return chain_fn(t).sum(); }, {x});
        benchmark::DoNotOptimize(a.backward->num_nodes());
    }
    st.counters["us_per_capture"] =
        benchmark::Counter(static_cast<double>(st.iterations()) / 1e6, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void bm_eager(benchmark::State& st) {
    const Tensor x = ones({1});
    for (auto _ : st) benchmark::DoNotOptimize(chain_fn(x).impl_ptr().get());
    st.counters["ns_per_op"] = benchmark::Counter(static_cast<double>(st.iterations()) * ops_in_chain,
                                                  benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void bm_interpret(benchmark::State& st) {
    const Tensor x = ones({1});
    auto cap = capture::trace(chain_fn, x);
    if (st.range(0) != 0) ir::default_pipeline::run(cap.graph());  // pools the 100 number constants into 2
    double op_nodes = 0;  // nodes that compute (constants only hand out their value)
    for (const ir::Node* n : cap.graph().block()->nodes()) op_nodes += n->is<ir::kinds::constant>() ? 0 : 1;
    const std::vector<Tensor> in{x};
    for (auto _ : st) benchmark::DoNotOptimize(ir::interpret(cap.graph(), in)[0].impl_ptr().get());
    st.counters["ns_per_op_node"] = benchmark::Counter(static_cast<double>(st.iterations()) * op_nodes,
                                                       benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    st.counters["nodes"] = static_cast<double>(cap.graph().num_nodes());
}

}  // namespace

BENCHMARK(bm_trace)->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_aot)->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_eager)->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_interpret)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
