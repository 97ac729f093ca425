// bench/bench_nn.cpp: graft::nn::functional::conv2d forward throughput against graft's plain
// matmul of the same im2col'd shapes, so that the cost of unfold (im2col), the reshapes and
// the bias add shows up as a ratio (issue 16).
//
// Families (names are "<family>/<shape>"), float32, forward only, no autograd recording:
//   conv2d/<shape>        F::conv2d(x, w, b, 1, 1): unfold + one batched matmul + bias
//   matmul/<shape>        graft::matmul(w [O, C kh kw], cols [N, C kh kw, oh ow]) with the
//                         patch matrix prepared outside the timed loop: the same FLOPs
//   matmul_flat/<shape>   graft::matmul(w [O, C kh kw], [C kh kw, N oh ow]): the same FLOPs as
//                         one 2-D product (the layout a batch-folded im2col would give)
//   unfold/<shape>        F::unfold alone (im2col), for the breakdown
// Shapes: small1 (batch 64, 1 -> 16 channels, 8x8, 3x3, pad 1), small2 (batch 64,
// 16 -> 32, 4x4, 3x3, pad 1), big (batch 32, 64 -> 64, 32x32, 3x3, pad 1).
// Counter "flops": 2 N O oh ow C kh kw per call (FLOP/s, SI), with the thread's CPU time.
#include <graft/graft.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

namespace {

namespace F = graft::nn::functional;
using graft::Tensor;

struct shape {
    std::int64_t n, c, o, h, w;
};

constexpr shape shapes[] = {{64, 1, 16, 8, 8}, {64, 16, 32, 4, 4}, {32, 64, 64, 32, 32}};

double flops(const shape& s) { return 2.0 * double(s.n * s.o * s.h * s.w) * double(s.c * 9); }

void conv(benchmark::State& state, shape s) {
    graft::autograd::no_grad guard;
    graft::generator g(1);
    const Tensor x = graft::randn({s.n, s.c, s.h, s.w}, graft::dtype::float32, g);
    const Tensor w = graft::randn({s.o, s.c, 3, 3}, graft::dtype::float32, g);
    const Tensor b = graft::randn({s.o}, graft::dtype::float32, g);
    for (auto _ : state) benchmark::DoNotOptimize(F::conv2d(x, w, b, 1, 1));
    state.counters["flops"] = benchmark::Counter(flops(s), benchmark::Counter::kIsIterationInvariantRate);
}

void mm(benchmark::State& state, shape s) {
    graft::autograd::no_grad guard;
    graft::generator g(1);
    const Tensor cols = graft::randn({s.n, s.c * 9, s.h * s.w}, graft::dtype::float32, g);
    const Tensor w = graft::randn({s.o, s.c * 9}, graft::dtype::float32, g);
    for (auto _ : state) benchmark::DoNotOptimize(graft::matmul(w, cols));
    state.counters["flops"] = benchmark::Counter(flops(s), benchmark::Counter::kIsIterationInvariantRate);
}

void mm_flat(benchmark::State& state, shape s) {
    graft::autograd::no_grad guard;
    graft::generator g(1);
    const Tensor cols = graft::randn({s.c * 9, s.n * s.h * s.w}, graft::dtype::float32, g);
    const Tensor w = graft::randn({s.o, s.c * 9}, graft::dtype::float32, g);
    for (auto _ : state) benchmark::DoNotOptimize(graft::matmul(w, cols));
    state.counters["flops"] = benchmark::Counter(flops(s), benchmark::Counter::kIsIterationInvariantRate);
}

void unfold(benchmark::State& state, shape s) {
    graft::autograd::no_grad guard;
    graft::generator g(1);
    const Tensor x = graft::randn({s.n, s.c, s.h, s.w}, graft::dtype::float32, g);
    for (auto _ : state) benchmark::DoNotOptimize(F::unfold(x, 3, 1, 1, 1));
    state.counters["bytes"] =
        benchmark::Counter(double(s.n * s.c * 9 * s.h * s.w) * 4.0, benchmark::Counter::kIsIterationInvariantRate);
}

const char* names[] = {"small1", "small2", "big"};

[[maybe_unused]] const bool registered = [] {
    for (int i = 0; i < 3; ++i) {
        benchmark::RegisterBenchmark((std::string("conv2d/") + names[i]).c_str(), conv, shapes[i]);
        benchmark::RegisterBenchmark((std::string("matmul/") + names[i]).c_str(), mm, shapes[i]);
        benchmark::RegisterBenchmark((std::string("matmul_flat/") + names[i]).c_str(), mm_flat, shapes[i]);
        benchmark::RegisterBenchmark((std::string("unfold/") + names[i]).c_str(), unfold, shapes[i]);
    }
    return true;
}();

}  // namespace

BENCHMARK_MAIN();
