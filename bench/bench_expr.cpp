// bench/bench_expr.cpp: compile-time graphs (graft::expr) on the chain
// y = tanh(x*w + b) * sigmoid(x), float32, x, w, b tensors of N elements, against eager
// graft, hand-written single-pass loops compiled in this binary (-O3), and memcpy.
//
// Families (names "<family>/<N>"):
//   fwd/fused/N            ex::evaluate(e, x, w, b): one fused pass (allocates y)
//   fwd/fused_into/N       ex::evaluate_into(y, e, x, w, b): same, into a preallocated y
//                          (what the hand loops do: no allocation)
//   fwd/eager/N            graft::tanh(x * w + b) * graft::sigmoid(x): 5 kernels, 4 temporaries
//   fwd/hand_std/N         one plain loop with std::tanh / std::exp per element (scalar libm,
//                          no -march: what a user writes without SIMD)
//   fwd/hand_hwy/N         one hand-written Highway loop with the same lane math as graft
//                          (graft::kernels::N_<target>::u_tanh, u_sigmoid), compiled for the
//                          current SIMD target: the evaluator's ideal
//   fwdbwd/...             y and dx, dw, db for a given upstream gradient g:
//     fused_vg             ex::value_and_grad<0,1,2>(e): forward + backward in ONE fused pass
//     fused_vg_into        the same into preallocated y, dx, dw, db
//     fused_fn_save/_rec   ex::function(e, policy): fused forward (recording a FusedBackward
//                          node), then autograd::grad: fused backward (save_all / recompute)
//     eager                eager graft forward + autograd::grad
//     hand_std, hand_hwy   one loop computing y, dx, dw, db (scalar libm / Highway lanes)
//   copy/memcpy/N          std::memcpy of N floats (in-run bandwidth reference)
//
// "bandwidth" counts the bytes that must move: forward 16 B/elem (read x, w, b; write y),
// forward+backward 32 B/elem (read x, w, b, g; write y, dx, dw, db), memcpy 8 B/elem.
// Rates use CPU time (Google Benchmark's default), steadier on this shared VM.
#include <graft/graft.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

namespace ex = graft::expr;
namespace gk = graft::kernels;
using graft::Tensor;

#include "chain_hand.hpp"

namespace {

using chain_hand::hand_fns;
using chain_hand::hand_for_current_target;

// ------------------------------------------------------------------ plain std:: loops

void hand_std_fwd(const float* x, const float* w, const float* b, float* y, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) y[i] = std::tanh(x[i] * w[i] + b[i]) * (1.0f / (1.0f + std::exp(-x[i])));
}

void hand_std_fwdbwd(const float* x, const float* w, const float* b, const float* g, float* y, float* dx, float* dw,
                     float* db, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        const float t = std::tanh(x[i] * w[i] + b[i]), s = 1.0f / (1.0f + std::exp(-x[i]));
        y[i] = t * s;
        const float dp = g[i] * s * (1 - t * t);
        dx[i] = dp * w[i] + g[i] * t * s * (1 - s);
        dw[i] = dp * x[i];
        db[i] = dp;
    }
}

// ------------------------------------------------------------------ data

constexpr std::int64_t kSizes[] = {std::int64_t{1} << 10, std::int64_t{1} << 16, std::int64_t{1} << 20,
                                   std::int64_t{1} << 24};

void fill_uniform(float* p, std::size_t n, float lo, float hi, std::uint64_t seed) {
    std::uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    for (std::size_t i = 0; i < n; ++i) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        const float u = static_cast<float>(s >> 40) * (1.0f / 16777216.0f);
        p[i] = lo + (hi - lo) * u;
    }
}

Tensor filled(std::int64_t n, float lo, float hi, std::uint64_t seed) {
    Tensor t = graft::empty({n}, graft::dtype::float32);
    fill_uniform(t.data_ptr<float>(), static_cast<std::size_t>(n), lo, hi, seed);
    return t;
}

struct chain_data {
    Tensor x, w, b, g;                   // inputs (x, w, b in [-2, 2), g in [-1, 1))
    Tensor y, dx, dw, db;                // outputs of the hand loops, pre-touched
};

chain_data& data(std::int64_t n) {
    static std::map<std::int64_t, std::unique_ptr<chain_data>> cache;
    auto& slot = cache[n];
    if (!slot) {
        slot = std::make_unique<chain_data>();
        slot->x = filled(n, -2, 2, 1);
        slot->w = filled(n, -2, 2, 2);
        slot->b = filled(n, -2, 2, 3);
        slot->g = filled(n, -1, 1, 4);
        slot->y = graft::zeros({n});
        slot->dx = graft::zeros({n});
        slot->dw = graft::zeros({n});
        slot->db = graft::zeros({n});
    }
    return *slot;
}

const auto chain = ex::trace<3>([](auto x, auto w, auto b) { return tanh(x * w + b) * sigmoid(x); });
const auto chain_vg = ex::value_and_grad<0, 1, 2>(chain);
const auto chain_fn_save = ex::function(chain, ex::save_policy::save_all);
const auto chain_fn_rec = ex::function(chain, ex::save_policy::recompute);

Tensor eager_chain(const Tensor& x, const Tensor& w, const Tensor& b) {
    return graft::tanh(x * w + b) * graft::sigmoid(x);
}

void set_bandwidth(benchmark::State& st, std::int64_t n, double bytes_per_elem) {
    st.counters["bandwidth"] = benchmark::Counter(static_cast<double>(st.iterations()) * static_cast<double>(n) *
                                                      bytes_per_elem,
                                                  benchmark::Counter::kIsRate);
}

// ------------------------------------------------------------------ forward

void bm_fwd_fused(benchmark::State& st) {
    chain_data& d = data(st.range(0));
    for (auto _ : st) {
        Tensor y = ex::evaluate(chain, d.x, d.w, d.b);
        benchmark::DoNotOptimize(y.raw_data());
    }
    set_bandwidth(st, st.range(0), 16);
}

void bm_fwd_fused_into(benchmark::State& st) {
    chain_data& d = data(st.range(0));
    for (auto _ : st) {
        ex::evaluate_into(d.y, chain, d.x, d.w, d.b);
        benchmark::ClobberMemory();
    }
    set_bandwidth(st, st.range(0), 16);
}

void bm_fwd_eager(benchmark::State& st) {
    chain_data& d = data(st.range(0));
    for (auto _ : st) {
        Tensor y = eager_chain(d.x, d.w, d.b);
        benchmark::DoNotOptimize(y.raw_data());
    }
    set_bandwidth(st, st.range(0), 16);
}

void bm_fwd_hand_std(benchmark::State& st) {
    chain_data& d = data(st.range(0));
    const auto n = static_cast<std::size_t>(st.range(0));
    for (auto _ : st) {
        hand_std_fwd(d.x.data_ptr<float>(), d.w.data_ptr<float>(), d.b.data_ptr<float>(), d.y.data_ptr<float>(), n);
        benchmark::ClobberMemory();
    }
    set_bandwidth(st, st.range(0), 16);
}

void bm_fwd_hand_hwy(benchmark::State& st) {
    chain_data& d = data(st.range(0));
    const auto n = static_cast<std::size_t>(st.range(0));
    const hand_fns h = hand_for_current_target();
    for (auto _ : st) {
        h.fwd(d.x.data_ptr<float>(), d.w.data_ptr<float>(), d.b.data_ptr<float>(), d.y.data_ptr<float>(), n);
        benchmark::ClobberMemory();
    }
    set_bandwidth(st, st.range(0), 16);
}

// ------------------------------------------------------------------ forward + backward

void bm_fwdbwd_fused_vg(benchmark::State& st) {
    chain_data& d = data(st.range(0));
    for (auto _ : st) {
        auto r = ex::evaluate_all(chain_vg, d.x, d.w, d.b, d.g);
        benchmark::DoNotOptimize(r[0].raw_data());
    }
    set_bandwidth(st, st.range(0), 32);
}

void bm_fwdbwd_fused_vg_into(benchmark::State& st) {
    chain_data& d = data(st.range(0));
    const std::array<Tensor, 4> out{d.y, d.dx, d.dw, d.db};
    for (auto _ : st) {
        ex::evaluate_into(out, chain_vg, d.x, d.w, d.b, d.g);
        benchmark::ClobberMemory();
    }
    set_bandwidth(st, st.range(0), 32);
}

template <bool Save>
void bm_fwdbwd_fused_fn(benchmark::State& st) {
    chain_data& d = data(st.range(0));
    Tensor x = d.x.detach(), w = d.w.detach(), b = d.b.detach();
    x.requires_grad_();
    w.requires_grad_();
    b.requires_grad_();
    for (auto _ : st) {
        Tensor y = Save ? chain_fn_save(x, w, b) : chain_fn_rec(x, w, b);
        auto gr = graft::autograd::grad({y}, {x, w, b}, {d.g});
        benchmark::DoNotOptimize(gr[0].raw_data());
    }
    set_bandwidth(st, st.range(0), 32);
}

void bm_fwdbwd_eager(benchmark::State& st) {
    chain_data& d = data(st.range(0));
    Tensor x = d.x.detach(), w = d.w.detach(), b = d.b.detach();
    x.requires_grad_();
    w.requires_grad_();
    b.requires_grad_();
    for (auto _ : st) {
        Tensor y = eager_chain(x, w, b);
        auto gr = graft::autograd::grad({y}, {x, w, b}, {d.g});
        benchmark::DoNotOptimize(gr[0].raw_data());
    }
    set_bandwidth(st, st.range(0), 32);
}

void bm_fwdbwd_hand_std(benchmark::State& st) {
    chain_data& d = data(st.range(0));
    const auto n = static_cast<std::size_t>(st.range(0));
    for (auto _ : st) {
        hand_std_fwdbwd(d.x.data_ptr<float>(), d.w.data_ptr<float>(), d.b.data_ptr<float>(), d.g.data_ptr<float>(),
                        d.y.data_ptr<float>(), d.dx.data_ptr<float>(), d.dw.data_ptr<float>(), d.db.data_ptr<float>(),
                        n);
        benchmark::ClobberMemory();
    }
    set_bandwidth(st, st.range(0), 32);
}

void bm_fwdbwd_hand_hwy(benchmark::State& st) {
    chain_data& d = data(st.range(0));
    const auto n = static_cast<std::size_t>(st.range(0));
    const hand_fns h = hand_for_current_target();
    for (auto _ : st) {
        h.fwdbwd(d.x.data_ptr<float>(), d.w.data_ptr<float>(), d.b.data_ptr<float>(), d.g.data_ptr<float>(),
                 d.y.data_ptr<float>(), d.dx.data_ptr<float>(), d.dw.data_ptr<float>(), d.db.data_ptr<float>(), n);
        benchmark::ClobberMemory();
    }
    set_bandwidth(st, st.range(0), 32);
}

void bm_memcpy(benchmark::State& st) {
    chain_data& d = data(st.range(0));
    const auto n = static_cast<std::size_t>(st.range(0));
    for (auto _ : st) {
        std::memcpy(d.y.data_ptr<float>(), d.x.data_ptr<float>(), n * sizeof(float));
        benchmark::ClobberMemory();
    }
    set_bandwidth(st, st.range(0), 8);
}

// ------------------------------------------------------------------ correctness check

// The variants must agree before their speed is compared.
void check_agreement() {
    const std::int64_t n = 4099;
    chain_data& d = data(n);
    const auto un = static_cast<std::size_t>(n);
    const Tensor y_fused = ex::evaluate(chain, d.x, d.w, d.b);
    const Tensor y_eager = eager_chain(d.x, d.w, d.b);
    const hand_fns h = hand_for_current_target();
    h.fwdbwd(d.x.data_ptr<float>(), d.w.data_ptr<float>(), d.b.data_ptr<float>(), d.g.data_ptr<float>(),
             d.y.data_ptr<float>(), d.dx.data_ptr<float>(), d.dw.data_ptr<float>(), d.db.data_ptr<float>(), un);
    const auto vg = ex::evaluate_all(chain_vg, d.x, d.w, d.b, d.g);
    double e1 = 0, e2 = 0, e3 = 0;
    for (std::size_t i = 0; i < un; ++i) {
        e1 = std::max(e1, std::fabs(double(y_fused.data_ptr<float>()[i]) - y_eager.data_ptr<float>()[i]));
        e2 = std::max(e2, std::fabs(double(y_fused.data_ptr<float>()[i]) - d.y.data_ptr<float>()[i]));
        e3 = std::max(e3, std::fabs(double(vg[1].data_ptr<float>()[i]) - d.dx.data_ptr<float>()[i]));
    }
    std::printf("agreement (n=%lld): |fused-eager| %.2g, |fused-hand| %.2g, |dx vg-hand| %.2g\n",
                static_cast<long long>(n), e1, e2, e3);
    if (e1 > 1e-5 || e2 > 1e-5 || e3 > 1e-4) {
        std::fprintf(stderr, "bench_expr: variants disagree\n");
        std::exit(1);
    }
}

// ------------------------------------------------------------------ summary

class summary_reporter : public benchmark::ConsoleReporter {
public:
    summary_reporter() : ConsoleReporter(isatty(STDOUT_FILENO) ? OO_ColorTabular : OO_Tabular) {}

    void ReportRuns(const std::vector<Run>& runs) override {
        for (const Run& r : runs) {
            if (r.error_occurred) continue;
            std::string key = r.run_name.function_name;
            if (!r.run_name.args.empty()) key += "/" + r.run_name.args;
            entry& e = results_[key];
            if (r.run_type == Run::RT_Aggregate) {
                if (r.aggregate_name == "median")
                    for (const auto& [name, c] : r.counters) e.median[name] = c.value;
            } else {
                for (const auto& [name, c] : r.counters) e.sum[name] += c.value;
                ++e.count;
            }
        }
        ConsoleReporter::ReportRuns(runs);
    }

    void Finalize() override {
        ConsoleReporter::Finalize();
        print_summary();
    }

private:
    struct entry {
        std::map<std::string, double> median, sum;
        int count = 0;
    };
    std::map<std::string, entry> results_;

    double bw(const std::string& key) const {
        const auto it = results_.find(key);
        if (it == results_.end()) return std::nan("");
        const entry& e = it->second;
        if (const auto m = e.median.find("bandwidth"); m != e.median.end()) return m->second / 1e9;
        if (const auto s = e.sum.find("bandwidth"); s != e.sum.end() && e.count > 0) return s->second / e.count / 1e9;
        return std::nan("");
    }

    static void floor_line(const std::string& what, double value, double floor, const char* unit) {
        if (std::isnan(value)) {
            std::printf("  %-62s  not measured in this run\n", what.c_str());
            return;
        }
        std::printf("  %-62s  %7.3f%s (floor %.2f%s)  %s\n", what.c_str(), value, unit, floor, unit,
                    value >= floor ? "MET" : "NOT MET");
    }

    void print_summary() const {
        std::printf("\n==== graft expr bench summary (SIMD target %s; medians when repeated) ====\n",
                    gk::target_name(gk::current_target()));
        std::printf("GB/s with the bytes that must move (fwd 16 B/elem, fwd+bwd 32 B/elem, memcpy 8 B/elem).\n");
        std::printf("%-7s %9s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n", "fwd", "elements", "fused", "f_into",
                    "eager", "h_std", "h_hwy", "memcpy", "fu/hwy", "in/hwy", "fu/std", "fu/eag", "fu/copy");
        for (std::int64_t n : kSizes) {
            const std::string sz = std::to_string(n);
            const double f = bw("fwd/fused/" + sz), fi = bw("fwd/fused_into/" + sz), e = bw("fwd/eager/" + sz),
                         hs = bw("fwd/hand_std/" + sz), hh = bw("fwd/hand_hwy/" + sz), c = bw("copy/memcpy/" + sz);
            std::printf("%-7s %9s %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.3f %8.3f %8.2f %8.2f %8.3f\n", "", sz.c_str(),
                        f, fi, e, hs, hh, c, f / hh, fi / hh, f / hs, f / e, f / c);
        }
        std::printf("%-7s %9s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n", "fwd+bwd", "elements", "vg",
                    "vg_into", "fn_save", "fn_rec", "eager", "h_std", "h_hwy", "memcpy", "vg/hwy", "in/hwy", "vg/std",
                    "vg/eag", "vg/copy");
        for (std::int64_t n : kSizes) {
            const std::string sz = std::to_string(n);
            const double f = bw("fwdbwd/fused_vg/" + sz), fi = bw("fwdbwd/fused_vg_into/" + sz),
                         fs = bw("fwdbwd/fused_fn_save/" + sz), fr = bw("fwdbwd/fused_fn_rec/" + sz),
                         e = bw("fwdbwd/eager/" + sz), hs = bw("fwdbwd/hand_std/" + sz),
                         hh = bw("fwdbwd/hand_hwy/" + sz), c = bw("copy/memcpy/" + sz);
            std::printf("%-7s %9s %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.3f %8.3f %8.2f %8.2f %8.3f\n", "",
                        sz.c_str(), f, fi, fs, fr, e, hs, hh, c, f / hh, fi / hh, f / hs, f / e, f / c);
        }
        // The floor compares like with like: the fused pass writing into preallocated
        // outputs, as the hand loops do. The allocating calls add one tensor allocation
        // per output (what eager ops pay too); ex::function runs two passes by design (the
        // output gradient exists only after the forward). Both are printed as context.
        std::printf("\nFloors (issue 4): fused pass vs hand loop, both into preallocated outputs:\n");
        for (std::int64_t n : kSizes) {
            const std::string sz = std::to_string(n);
            floor_line("fwd " + sz + ": fused_into / hand loop (Highway, same math)",
                       bw("fwd/fused_into/" + sz) / bw("fwd/hand_hwy/" + sz), 0.9, "");
            floor_line("fwd+bwd " + sz + ": value_and_grad into / hand (Highway)",
                       bw("fwdbwd/fused_vg_into/" + sz) / bw("fwdbwd/hand_hwy/" + sz), 0.9, "");
            floor_line("fwd " + sz + ": fused / hand loop (std::tanh, std::exp)",
                       bw("fwd/fused/" + sz) / bw("fwd/hand_std/" + sz), 0.9, "");
            floor_line("fwd+bwd " + sz + ": fused one pass (value_and_grad) / hand (std)",
                       bw("fwdbwd/fused_vg/" + sz) / bw("fwdbwd/hand_std/" + sz), 0.9, "");
        }
        std::printf("Context (not floors): allocating calls and ex::function vs the hand loop (Highway):\n");
        const auto ratio_line = [](const std::string& what, double value) {
            if (std::isnan(value)) std::printf("  %-62s  not measured in this run\n", what.c_str());
            else std::printf("  %-62s  %7.3f\n", what.c_str(), value);
        };
        for (std::int64_t n : kSizes) {
            const std::string sz = std::to_string(n);
            ratio_line("fwd " + sz + ": fused, allocating y / hand loop", bw("fwd/fused/" + sz) / bw("fwd/hand_hwy/" + sz));
            ratio_line("fwd+bwd " + sz + ": value_and_grad, allocating 4 outputs / hand",
                       bw("fwdbwd/fused_vg/" + sz) / bw("fwdbwd/hand_hwy/" + sz));
            ratio_line("fwd+bwd " + sz + ": ex::function recompute (2 passes, autograd) / hand",
                       bw("fwdbwd/fused_fn_rec/" + sz) / bw("fwdbwd/hand_hwy/" + sz));
        }
        std::printf("Floors (issue 4): against eager graft and memory bandwidth:\n");
        const std::string m1 = std::to_string(std::int64_t{1} << 20), m16 = std::to_string(std::int64_t{1} << 24);
        floor_line("fwd 1M: fused / eager graft", bw("fwd/fused/" + m1) / bw("fwd/eager/" + m1), 3.0, "x");
        floor_line("fwd+bwd 1M: value_and_grad / eager graft", bw("fwdbwd/fused_vg/" + m1) / bw("fwdbwd/eager/" + m1),
                   3.0, "x");
        floor_line("fwd+bwd 1M: ex::function (save_all) / eager graft",
                   bw("fwdbwd/fused_fn_save/" + m1) / bw("fwdbwd/eager/" + m1), 3.0, "x");
        floor_line("fwd+bwd 1M: ex::function (recompute) / eager graft",
                   bw("fwdbwd/fused_fn_rec/" + m1) / bw("fwdbwd/eager/" + m1), 3.0, "x");
        floor_line("fwd 16M: fused GB/s / memcpy GB/s", bw("fwd/fused/" + m16) / bw("copy/memcpy/" + m16), 0.7, "");
        floor_line("fwd+bwd 16M: value_and_grad GB/s / memcpy GB/s",
                   bw("fwdbwd/fused_vg/" + m16) / bw("copy/memcpy/" + m16), 0.7, "");
        // ex::function moves more than the 32 B/elem counted (two passes: inputs read twice,
        // saved values written and read back), so its 16M ratio is context, not a floor.
        std::printf("Context (not floors): ex::function at 16M, necessary-bytes GB/s / memcpy GB/s: "
                    "recompute %.3f, save_all %.3f\n",
                    bw("fwdbwd/fused_fn_rec/" + m16) / bw("copy/memcpy/" + m16),
                    bw("fwdbwd/fused_fn_save/" + m16) / bw("copy/memcpy/" + m16));
        std::printf("Reference: hand (Highway) / memcpy at 16M: fwd %.3f, fwd+bwd %.3f\n",
                    bw("fwd/hand_hwy/" + m16) / bw("copy/memcpy/" + m16),
                    bw("fwdbwd/hand_hwy/" + m16) / bw("copy/memcpy/" + m16));
        std::fflush(stdout);
    }
};

void register_all() {
    auto sizes = [](benchmark::internal::Benchmark* b) {
        for (std::int64_t n : kSizes) b->Arg(n);
    };
    benchmark::RegisterBenchmark("copy/memcpy", bm_memcpy)->Apply(sizes);
    benchmark::RegisterBenchmark("fwd/fused", bm_fwd_fused)->Apply(sizes);
    benchmark::RegisterBenchmark("fwd/fused_into", bm_fwd_fused_into)->Apply(sizes);
    benchmark::RegisterBenchmark("fwd/eager", bm_fwd_eager)->Apply(sizes);
    benchmark::RegisterBenchmark("fwd/hand_std", bm_fwd_hand_std)->Apply(sizes);
    benchmark::RegisterBenchmark("fwd/hand_hwy", bm_fwd_hand_hwy)->Apply(sizes);
    benchmark::RegisterBenchmark("fwdbwd/fused_vg", bm_fwdbwd_fused_vg)->Apply(sizes);
    benchmark::RegisterBenchmark("fwdbwd/fused_vg_into", bm_fwdbwd_fused_vg_into)->Apply(sizes);
    benchmark::RegisterBenchmark("fwdbwd/fused_fn_save", bm_fwdbwd_fused_fn<true>)->Apply(sizes);
    benchmark::RegisterBenchmark("fwdbwd/fused_fn_rec", bm_fwdbwd_fused_fn<false>)->Apply(sizes);
    benchmark::RegisterBenchmark("fwdbwd/eager", bm_fwdbwd_eager)->Apply(sizes);
    benchmark::RegisterBenchmark("fwdbwd/hand_std", bm_fwdbwd_hand_std)->Apply(sizes);
    benchmark::RegisterBenchmark("fwdbwd/hand_hwy", bm_fwdbwd_hand_hwy)->Apply(sizes);
}

}  // namespace

int main(int argc, char** argv) {
    bool console = true;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg(argv[i]);
        if (arg.rfind("--benchmark_format=", 0) == 0 && arg != "--benchmark_format=console") console = false;
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::AddCustomContext("graft_simd_target", gk::target_name(gk::current_target()));
    benchmark::AddCustomContext("graft_version", graft::version_string);
    check_agreement();
    register_all();
    if (console) {
        summary_reporter reporter;
        benchmark::RunSpecifiedBenchmarks(&reporter);
    } else {
        benchmark::RunSpecifiedBenchmarks();
    }
    benchmark::Shutdown();
    return 0;
}
