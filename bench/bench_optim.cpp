// Optimizer steps (issue 16): graft::optim's fused Adam and SGD-momentum steps (one Highway
// pass per parameter) against the same update written with graft's eager ops (PyTorch's
// single-tensor algorithm: one op, one temporary at a time) and against a plain scalar loop
// (kernels::reference::optim_adam), over an MLP's parameters: "100K" = 256-256-128-10
// (99,978 parameters, 6 tensors, in cache) and "10M" = 2048-2048-2048-512 (9,443,840
// parameters, 6 tensors, in memory). float32, one thread. Counter GB/s: the minimal traffic
// (Adam reads p, g, m, v and writes p, m, v: 28 bytes per float32 parameter; SGD with
// momentum reads p, g, buf and writes p, buf: 20 bytes); bm_memcpy_adam_traffic moves the same
// 28 bytes per parameter with std::memcpy, the bandwidth reference of the same run.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <graft/graft.hpp>
#include <graft/kernels/reference.hpp>

namespace {

using namespace graft;

std::vector<Tensor> mlp_params(int size) {
    const std::vector<std::int64_t> widths =
        size == 0 ? std::vector<std::int64_t>{256, 256, 128, 10} : std::vector<std::int64_t>{2048, 2048, 2048, 512};
    std::vector<Tensor> ps;
    generator gen(42);
    for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
        for (const int_list& shape : {int_list{widths[l + 1], widths[l]}, int_list{widths[l + 1]}}) {
            Tensor p = (randn(shape, dtype::float32, gen) * 0.05).detach().requires_grad_();
            p.set_grad(randn(shape, dtype::float32, gen) * 0.01);
            ps.push_back(p);
        }
    }
    return ps;
}

std::int64_t count(const std::vector<Tensor>& ps) {
    std::int64_t n = 0;
    for (const auto& p : ps) n += p.numel();
    return n;
}

void set_counters(benchmark::State& st, std::int64_t n, double bytes_per_param) {
    st.counters["params"] = static_cast<double>(n);
    st.counters["GB/s"] = benchmark::Counter(static_cast<double>(st.iterations()) * static_cast<double>(n) *
                                                 bytes_per_param * 1e-9,
                                             benchmark::Counter::kIsRate);
}

// ---- Adam (lr 1e-3, betas 0.9/0.999, eps 1e-8, no weight decay)

void bm_adam_fused(benchmark::State& st) {
    std::vector<Tensor> ps = mlp_params(static_cast<int>(st.range(0)));
    optim::Adam opt(ps, 1e-3);
    for (auto _ : st) opt.step();
    set_counters(st, count(ps), 28);
}

// The same update with eager ops, as PyTorch's single-tensor Adam writes it.
void bm_adam_eager(benchmark::State& st) {
    std::vector<Tensor> ps = mlp_params(static_cast<int>(st.range(0)));
    std::vector<Tensor> ms, vs;
    for (const auto& p : ps) {
        ms.push_back(zeros(p.sizes(), p.type()));
        vs.push_back(zeros(p.sizes(), p.type()));
    }
    const double lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8;
    std::int64_t step = 0;
    for (auto _ : st) {
        autograd::no_grad guard;
        ++step;
        const double step_size = lr / (1 - std::pow(b1, static_cast<double>(step)));
        const double bc2_sqrt = std::sqrt(1 - std::pow(b2, static_cast<double>(step)));
        for (std::size_t i = 0; i < ps.size(); ++i) {
            Tensor p = ps[i].detach();
            const Tensor g = ps[i].grad();
            ms[i].add_((g - ms[i]) * (1 - b1));  // lerp_(g, 1 - beta1)
            vs[i].mul_(b2).add_(g * g * (1 - b2));
            Tensor denom = sqrt(vs[i]) / bc2_sqrt + eps;
            p.sub_(ms[i] * step_size / denom);
        }
    }
    set_counters(st, count(ps), 28);
}

// The scalar fallback: the kernel's operations as a plain loop.
void bm_adam_loop(benchmark::State& st) {
    std::vector<Tensor> ps = mlp_params(static_cast<int>(st.range(0)));
    std::vector<Tensor> ms, vs;
    for (const auto& p : ps) {
        ms.push_back(zeros(p.sizes(), p.type()));
        vs.push_back(zeros(p.sizes(), p.type()));
    }
    kernels::adam_args a;
    a.lr = 1e-3, a.beta1 = 0.9, a.beta2 = 0.999, a.eps = 1e-8;
    std::int64_t step = 0;
    for (auto _ : st) {
        ++step;
        a.step_size = a.lr / (1 - std::pow(a.beta1, static_cast<double>(step)));
        a.bias_correction2_sqrt = std::sqrt(1 - std::pow(a.beta2, static_cast<double>(step)));
        for (std::size_t i = 0; i < ps.size(); ++i)
            kernels::reference::optim_adam(a, ps[i].data_ptr<float>(), ps[i].grad().data_ptr<float>(),
                                           ms[i].data_ptr<float>(), vs[i].data_ptr<float>(),
                                           static_cast<float*>(nullptr), static_cast<std::size_t>(ps[i].numel()));
        benchmark::ClobberMemory();
    }
    set_counters(st, count(ps), 28);
}

// ---- Memory bandwidth in the same run: std::memcpy of 14 bytes per parameter (read 14, write
// 14), the same 28 bytes per parameter as the Adam step, between two preallocated, touched
// buffers.
void bm_memcpy_adam_traffic(benchmark::State& st) {
    const std::int64_t n = count(mlp_params(static_cast<int>(st.range(0))));
    const auto bytes = static_cast<std::size_t>(n) * 14;
    std::vector<char> src(bytes, 1), dst(bytes, 2);
    for (auto _ : st) {
        std::memcpy(dst.data(), src.data(), bytes);
        benchmark::DoNotOptimize(dst.data());
        benchmark::ClobberMemory();
    }
    set_counters(st, n, 28);
}

// ---- SGD with momentum 0.9 (lr 1e-2)

void bm_sgd_fused(benchmark::State& st) {
    std::vector<Tensor> ps = mlp_params(static_cast<int>(st.range(0)));
    optim::SGD opt(ps, 1e-2, 0.9);
    for (auto _ : st) opt.step();
    set_counters(st, count(ps), 20);
}

void bm_sgd_eager(benchmark::State& st) {
    std::vector<Tensor> ps = mlp_params(static_cast<int>(st.range(0)));
    std::vector<Tensor> bufs;
    for (const auto& p : ps) bufs.push_back(p.grad().clone());
    for (auto _ : st) {
        autograd::no_grad guard;
        for (std::size_t i = 0; i < ps.size(); ++i) {
            Tensor p = ps[i].detach();
            bufs[i].mul_(0.9).add_(ps[i].grad());
            p.sub_(bufs[i] * 1e-2);
        }
    }
    set_counters(st, count(ps), 20);
}

}  // namespace

BENCHMARK(bm_adam_fused)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->ArgName("size(0=100K,1=10M)");
BENCHMARK(bm_adam_eager)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->ArgName("size(0=100K,1=10M)");
BENCHMARK(bm_adam_loop)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->ArgName("size(0=100K,1=10M)");
BENCHMARK(bm_memcpy_adam_traffic)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->ArgName("size(0=100K,1=10M)");
BENCHMARK(bm_sgd_fused)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->ArgName("size(0=100K,1=10M)");
BENCHMARK(bm_sgd_eager)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->ArgName("size(0=100K,1=10M)");

BENCHMARK_MAIN();
