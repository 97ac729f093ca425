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
//   direct/<shape>        a plain direct convolution loop (no im2col; the innermost loop over
//                         an output row, which the compiler vectorizes): the candidate
//                         against which im2col + matmul was chosen
//   memcpy/<shape>        std::memcpy of conv2d's minimal traffic (input, weights, bias,
//                         output): the memory-bandwidth bound, counter "bytes" on both
//   cnn_step/digits       one training step of examples/train_cnn_digits.cpp's CNN (batch 32,
//                         forward, cross_entropy, backward, Adam), eager
// Shapes: small1 (batch 64, 1 -> 16 channels, 8x8, 3x3, pad 1), small2 (batch 64,
// 16 -> 32, 4x4, 3x3, pad 1), big (batch 32, 64 -> 64, 32x32, 3x3, pad 1).
// Counter "flops": 2 N O oh ow C kh kw per call (FLOP/s, SI), with the thread's CPU time.
#include <graft/graft.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../examples/digits.hpp"

namespace {

namespace F = graft::nn::functional;
using graft::Tensor;

struct shape {
    std::int64_t n, c, o, h, w;
};

constexpr shape shapes[] = {{64, 1, 16, 8, 8}, {64, 16, 32, 4, 4}, {32, 64, 64, 32, 32}};

double flops(const shape& s) { return 2.0 * double(s.n * s.o * s.h * s.w) * double(s.c * 9); }
/// Bytes conv2d must read and write at least: input, weights, bias, output (float32).
double traffic(const shape& s) {
    return 4.0 * double(s.n * s.c * s.h * s.w + s.o * s.c * 9 + s.o + s.n * s.o * s.h * s.w);
}

void conv(benchmark::State& state, shape s) {
    graft::autograd::no_grad guard;
    graft::generator g(1);
    const Tensor x = graft::randn({s.n, s.c, s.h, s.w}, graft::dtype::float32, g);
    const Tensor w = graft::randn({s.o, s.c, 3, 3}, graft::dtype::float32, g);
    const Tensor b = graft::randn({s.o}, graft::dtype::float32, g);
    for (auto _ : state) benchmark::DoNotOptimize(F::conv2d(x, w, b, 1, 1));
    state.counters["flops"] = benchmark::Counter(flops(s), benchmark::Counter::kIsIterationInvariantRate);
    state.counters["bytes"] = benchmark::Counter(traffic(s), benchmark::Counter::kIsIterationInvariantRate);
}

// 3x3, stride 1, padding 1: out[n][o][y][x] = b[o] + sum_{c, i, j} w[o][c][i][j] in[n][c][y+i-1][x+j-1].
void direct(benchmark::State& state, shape s) {
    graft::generator g(1);
    const Tensor xt = graft::randn({s.n, s.c, s.h, s.w}, graft::dtype::float32, g);
    const Tensor wt = graft::randn({s.o, s.c, 3, 3}, graft::dtype::float32, g);
    const Tensor bt = graft::randn({s.o}, graft::dtype::float32, g);
    const float* in = xt.data_ptr<float>();
    const float* w = wt.data_ptr<float>();
    const float* b = bt.data_ptr<float>();
    std::vector<float> out(static_cast<std::size_t>(s.n * s.o * s.h * s.w));
    for (auto _ : state) {
        for (std::int64_t n = 0; n < s.n; ++n)
            for (std::int64_t o = 0; o < s.o; ++o) {
                float* plane = out.data() + (n * s.o + o) * s.h * s.w;
                for (std::int64_t k = 0; k < s.h * s.w; ++k) plane[k] = b[o];
                for (std::int64_t c = 0; c < s.c; ++c) {
                    const float* src = in + (n * s.c + c) * s.h * s.w;
                    for (std::int64_t i = 0; i < 3; ++i)
                        for (std::int64_t j = 0; j < 3; ++j) {
                            const float wv = w[((o * s.c + c) * 3 + i) * 3 + j];
                            for (std::int64_t y = 0; y < s.h; ++y) {
                                const std::int64_t sy = y + i - 1;
                                if (sy < 0 || sy >= s.h) continue;
                                const std::int64_t x0 = j == 0 ? 1 : 0, x1 = j == 2 ? s.w - 1 : s.w;  // sx in range
                                float* dst = plane + y * s.w;
                                const float* row = src + sy * s.w + (j - 1);
                                for (std::int64_t x = x0; x < x1; ++x) dst[x] += wv * row[x];
                            }
                        }
                }
            }
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    // The loop computes conv2d (a wrong reference would make the comparison meaningless).
    graft::autograd::no_grad guard;
    if (!graft::allclose(graft::from_vector(out, {s.n, s.o, s.h, s.w}), F::conv2d(xt, wt, bt, 1, 1), 1e-4, 1e-4))
        state.SkipWithError("the direct loop disagrees with conv2d");
    state.counters["flops"] = benchmark::Counter(flops(s), benchmark::Counter::kIsIterationInvariantRate);
}

void copy_traffic(benchmark::State& state, shape s) {
    const auto bytes = static_cast<std::size_t>(traffic(s));
    std::vector<char> src(bytes, 1), dst(bytes);
    for (auto _ : state) {
        std::memcpy(dst.data(), src.data(), bytes);
        benchmark::DoNotOptimize(dst.data());
        benchmark::ClobberMemory();
    }
    state.counters["bytes"] = benchmark::Counter(traffic(s), benchmark::Counter::kIsIterationInvariantRate);
}

void cnn_step(benchmark::State& state) {
    graft::manual_seed(3);
    auto model = digits_example::make_model();
    graft::optim::Adam opt(model->parameters(), 3e-3);
    const Tensor x = graft::randn({32, 1, 8, 8});
    std::vector<std::int64_t> labels(32);
    for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int64_t>(i % 10);
    const Tensor y = graft::from_vector(labels, {32});
    for (auto _ : state) {
        opt.zero_grad();
        F::cross_entropy((*model)(x), y).backward();
        opt.step();
    }
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
        benchmark::RegisterBenchmark((std::string("direct/") + names[i]).c_str(), direct, shapes[i]);
        benchmark::RegisterBenchmark((std::string("memcpy/") + names[i]).c_str(), copy_traffic, shapes[i]);
    }
    benchmark::RegisterBenchmark("cnn_step/digits", cnn_step)->Unit(benchmark::kMicrosecond);
    return true;
}();

}  // namespace

BENCHMARK_MAIN();
