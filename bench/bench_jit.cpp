// The profiling executor (graft::jit): per-call overhead of an optimized plan,
// time to the first optimized call, and throughput of the fused chain
// y = tanh(x*w + b) * sigmoid(x) against eager graft and the compile-time
// fused kernel (graft::expr), all in one run. A summary of the floors
// is printed at the end.
#include <graft/graft.hpp>

#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

#include "chain_hand.hpp"

namespace ex = graft::expr;
namespace jit = graft::jit;
using graft::Tensor;

namespace {

Tensor chain(Tensor x, Tensor w, Tensor b) { return graft::tanh(x * w + b) * graft::sigmoid(x); }

// Ten ops: mul, add, tanh, sigmoid, mul, neg, exp, add, relu, sub.
Tensor ten_ops(Tensor x, Tensor w, Tensor b) {
    return graft::tanh(x * w + b) * graft::sigmoid(x) + graft::exp(-x) - graft::relu(w);
}

const auto chain_expr = ex::trace<3>([](auto x, auto w, auto b) { return tanh(x * w + b) * sigmoid(x); });

Tensor uniform(std::int64_t n, double lo, double hi) { return graft::rand({n}) * (hi - lo) + lo; }

struct inputs {
    Tensor x, w, b, g;
};
inputs& data(std::int64_t n) {
    static std::map<std::int64_t, std::unique_ptr<inputs>> cache;
    auto& slot = cache[n];
    if (!slot) {
        graft::manual_seed(static_cast<std::uint64_t>(n));
        slot = std::make_unique<inputs>(inputs{uniform(n, -2, 2), uniform(n, -2, 2), uniform(n, -2, 2), uniform(n, -1, 1)});
    }
    return *slot;
}

jit::options bench_options(std::size_t threads = 1) {
    jit::options o;
    o.num_threads = threads;
    return o;
}

void set_bytes(benchmark::State& s, std::int64_t n, int bytes_per_element) {
    s.SetBytesProcessed(static_cast<std::int64_t>(s.iterations()) * n * bytes_per_element);
    s.counters["bandwidth"] =
        benchmark::Counter(static_cast<double>(n * bytes_per_element), benchmark::Counter::kIsIterationInvariantRate);
}

// ------------------------------------------------------------------ per-call overhead

void bm_call_jit_ten(benchmark::State& s) {
    auto fn = jit::script(ten_ops, bench_options());
    const Tensor x = graft::randn({1}), w = graft::randn({1}), b = graft::randn({1});
    const std::vector<Tensor> in{x, w, b};
    for (int i = 0; i < 3; ++i) benchmark::DoNotOptimize(fn(in));  // profile, optimize
    for (auto _ : s) benchmark::DoNotOptimize(fn(in));
    if (fn.debug_state().levels[0].plan->hits < static_cast<std::uint64_t>(s.iterations())) s.SkipWithError("not on the optimized plan");
}

void bm_call_eager_ten(benchmark::State& s) {
    const Tensor x = graft::randn({1}), w = graft::randn({1}), b = graft::randn({1});
    for (auto _ : s) benchmark::DoNotOptimize(ten_ops(x, w, b));
}

void bm_call_interpreter_ten(benchmark::State& s) {
    const Tensor x = graft::randn({1}), w = graft::randn({1}), b = graft::randn({1});
    auto cap = graft::capture::trace(ten_ops, x, w, b);
    graft::ir::default_pipeline::run(cap.graph());
    const std::vector<Tensor> in{x, w, b};
    for (auto _ : s) benchmark::DoNotOptimize(graft::ir::interpret(cap.graph(), in));
}

// A function that writes into an input: its plan checks on every call that no two inputs share
// memory (graph_meta::aliasing_matches). The guard alone, on the same inputs, gives its share.
Tensor writes_input(Tensor a, Tensor b, Tensor c, Tensor d) {
    a.add_(b);
    return a * c + d;
}

std::vector<Tensor> four_inputs() {
    return {graft::randn({1}), graft::randn({1}), graft::randn({1}), graft::randn({1})};
}

void bm_call_jit_writes_input(benchmark::State& s) {
    auto fn = jit::script(writes_input, bench_options());
    const std::vector<Tensor> in = four_inputs();
    for (int i = 0; i < 3; ++i) benchmark::DoNotOptimize(fn(in));  // profile, optimize
    for (auto _ : s) benchmark::DoNotOptimize(fn(in));
    if (fn.debug_state().levels[0].plan->hits < static_cast<std::uint64_t>(s.iterations())) s.SkipWithError("not on the optimized plan");
}

void bm_aliasing_guard(benchmark::State& s) {
    const std::vector<Tensor> in = four_inputs();
    const auto cap = graft::capture::trace(writes_input, in);
    if (cap.meta().mutated_inputs.empty()) s.SkipWithError("the capture writes no input");
    for (auto _ : s) benchmark::DoNotOptimize(cap.meta().aliasing_matches(in));
}

// The count every call of a script and of its top-level executor keeps so that flushed plans
// can be freed (jit::detail::active_calls): entering and leaving, twice, as one script call does.
void bm_active_calls(benchmark::State& s) {
    static jit::detail::active_calls script_calls, executor_calls;
    for (auto _ : s) {
        const jit::detail::active_calls::guard a(script_calls.mine());
        const jit::detail::active_calls::guard b(executor_calls.mine());
        benchmark::ClobberMemory();
    }
}

// ------------------------------------------------------------------ changing batch sizes

// A 2-32-32-1 MLP training step (forward, mean squared error, gradients of the parameters)
// over batch sizes 8, 16, 32, 5, 64, 128 in turn: the default strategy's two STATIC
// specializations take 8 and 16, the DYNAMIC one (symbolic batch size) every other size.
Tensor mlp_loss(Tensor x, Tensor y, Tensor w1, Tensor b1, Tensor w2, Tensor b2, Tensor w3, Tensor b3) {
    const Tensor h1 = graft::tanh(graft::matmul(x, w1) + b1);
    const Tensor h2 = graft::tanh(graft::matmul(h1, w2) + b2);
    const Tensor p = graft::matmul(h2, w3) + b3;
    return ((p - y) * (p - y)).mean();
}

struct batch_data {
    std::vector<std::pair<Tensor, Tensor>> batches;
    std::vector<Tensor> params;
    batch_data() {
        graft::manual_seed(7);
        for (std::int64_t n : {8, 16, 32, 5, 64, 128}) batches.emplace_back(graft::randn({n, 2}), graft::randn({n, 1}));
        params = {graft::randn({2, 32}), graft::randn({32}), graft::randn({32, 32}), graft::randn({32}),
                  graft::randn({32, 1}), graft::randn({1})};
        for (auto& p : params) p.requires_grad_();
    }
};

template <class F>
void train_step(F& f, const batch_data& d, std::size_t i) {
    const auto& [x, y] = d.batches[i % d.batches.size()];
    const auto& p = d.params;
    const Tensor loss = f(x, y, p[0], p[1], p[2], p[3], p[4], p[5]);
    benchmark::DoNotOptimize(graft::autograd::grad({loss}, {p[0], p[1], p[2], p[3], p[4], p[5]}));
}

void bm_dynamic_training_jit(benchmark::State& s) {
    const batch_data d;
    auto fn = jit::script(mlp_loss, bench_options());
    for (std::size_t i = 0; i < 12; ++i) train_step(fn, d, i);  // profile, specialize
    const std::size_t before = fn.debug_state().compilations;
    std::size_t i = 0;
    for (auto _ : s) train_step(fn, d, i++);
    const jit::debug_state st = fn.debug_state();
    s.counters["compilations"] = static_cast<double>(st.compilations);
    s.counters["compilations_while_timed"] = static_cast<double>(st.compilations - before);
    std::uint64_t unoptimized = 0;
    for (const auto& l : st.levels) unoptimized += l.unoptimized_runs;
    s.counters["unoptimized_runs"] = static_cast<double>(unoptimized);
}

void bm_dynamic_training_eager(benchmark::State& s) {
    const batch_data d;
    const auto eager = [](auto&&... a) { return mlp_loss(a...); };
    std::size_t i = 0;
    for (auto _ : s) train_step(eager, d, i++);
}

// The same MLP training step at one batch size B (16 .. 16K): the issue's "faster than eager
// at every batch size" for a training step's forward and backward graphs.
struct fixed_batch {
    Tensor x, y;
    std::vector<Tensor> params;
    explicit fixed_batch(std::int64_t n) {
        graft::manual_seed(11);
        x = graft::randn({n, 2});
        y = graft::randn({n, 1});
        params = {graft::randn({2, 32}) * 0.7, graft::randn({32}) * 0.1, graft::randn({32, 32}) * 0.2,
                  graft::randn({32}) * 0.1,    graft::randn({32, 1}) * 0.2, graft::randn({1}) * 0.1};
        for (auto& p : params) p.requires_grad_();
    }
};

template <class F>
void fixed_step(F& f, const fixed_batch& d) {
    const auto& p = d.params;
    const Tensor loss = f(d.x, d.y, p[0], p[1], p[2], p[3], p[4], p[5]);
    benchmark::DoNotOptimize(graft::autograd::grad({loss}, {p[0], p[1], p[2], p[3], p[4], p[5]}));
}

void bm_mlp_step_jit(benchmark::State& s) {
    const fixed_batch d(s.range(0));
    auto fn = jit::script(mlp_loss, bench_options());
    for (int i = 0; i < 3; ++i) fixed_step(fn, d);  // profile, specialize
    for (auto _ : s) fixed_step(fn, d);
}

void bm_mlp_step_eager(benchmark::State& s) {
    const fixed_batch d(s.range(0));
    const auto eager = [](auto&&... a) { return mlp_loss(a...); };
    for (auto _ : s) fixed_step(eager, d);
}

// ------------------------------------------------------------------ first calls

void bm_first_calls(benchmark::State& s) {
    const Tensor x = graft::randn({16}), w = graft::randn({16}), b = graft::randn({16});
    double first = 0, second = 0, third = 0;
    for (auto _ : s) {
        auto fn = jit::script(chain, bench_options());
        const auto t0 = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(fn(x, w, b));  // capture + profiling run
        const auto t1 = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(fn(x, w, b));  // compile + first optimized run
        const auto t2 = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(fn(x, w, b));  // optimized
        const auto t3 = std::chrono::steady_clock::now();
        first += std::chrono::duration<double, std::micro>(t1 - t0).count();
        second += std::chrono::duration<double, std::micro>(t2 - t1).count();
        third += std::chrono::duration<double, std::micro>(t3 - t2).count();
    }
    const auto it = static_cast<double>(s.iterations());
    s.counters["call1_us"] = first / it;
    s.counters["call2_us"] = second / it;
    s.counters["call3_us"] = third / it;
}

// ------------------------------------------------------------------ throughput

void bm_fwd_jit(benchmark::State& s, std::size_t threads) {
    const std::int64_t n = s.range(0);
    auto& d = data(n);
    auto fn = jit::script(chain, bench_options(threads));
    for (int i = 0; i < 2; ++i) benchmark::DoNotOptimize(fn(d.x, d.w, d.b));
    for (auto _ : s) benchmark::DoNotOptimize(fn(d.x, d.w, d.b));
    set_bytes(s, n, 16);
}
void bm_fwd_jit1(benchmark::State& s) { bm_fwd_jit(s, 1); }
void bm_fwd_jit2(benchmark::State& s) { bm_fwd_jit(s, 2); }

void bm_fwd_eager(benchmark::State& s) {
    const std::int64_t n = s.range(0);
    auto& d = data(n);
    for (auto _ : s) benchmark::DoNotOptimize(chain(d.x, d.w, d.b));
    set_bytes(s, n, 16);
}

void bm_fwd_expr(benchmark::State& s) {
    const std::int64_t n = s.range(0);
    auto& d = data(n);
    for (auto _ : s) benchmark::DoNotOptimize(ex::evaluate(chain_expr, d.x, d.w, d.b));
    set_bytes(s, n, 16);
}

// The compile-time fused kernel into a preallocated output (the floor's reference per call).
void bm_fwd_expr_into(benchmark::State& s) {
    const std::int64_t n = s.range(0);
    auto& d = data(n);
    Tensor y = graft::zeros({n});
    for (auto _ : s) {
        ex::evaluate_into(y, chain_expr, d.x, d.w, d.b);
        benchmark::ClobberMemory();
    }
    set_bytes(s, n, 16);
}

// The same math as one hand-written Highway loop (bench/chain_hand.hpp), output preallocated.
void bm_fwd_hand(benchmark::State& s) {
    const std::int64_t n = s.range(0);
    auto& d = data(n);
    Tensor y = graft::zeros({n});
    const auto h = chain_hand::hand_for_current_target();
    for (auto _ : s) {
        h.fwd(d.x.data_ptr<float>(), d.w.data_ptr<float>(), d.b.data_ptr<float>(), y.data_ptr<float>(),
              static_cast<std::size_t>(n));
        benchmark::ClobberMemory();
    }
    set_bytes(s, n, 16);
}

void bm_fwdbwd_jit(benchmark::State& s) {
    const std::int64_t n = s.range(0);
    auto& d = data(n);
    const Tensor x = d.x.detach().requires_grad_(), w = d.w.detach().requires_grad_(), b = d.b.detach().requires_grad_();
    auto fn = jit::script(chain, bench_options());
    for (int i = 0; i < 2; ++i) benchmark::DoNotOptimize(graft::autograd::grad({fn(x, w, b)}, {x, w, b}, {d.g}));
    for (auto _ : s) benchmark::DoNotOptimize(graft::autograd::grad({fn(x, w, b)}, {x, w, b}, {d.g}));
    set_bytes(s, n, 32);
}

// The same with the backward recomputing the elementwise chain (options::recompute_elementwise_in_backward):
// the forward saves only its inputs, so it writes one array instead of three.
void bm_fwdbwd_jit_recompute(benchmark::State& s) {
    const std::int64_t n = s.range(0);
    auto& d = data(n);
    const Tensor x = d.x.detach().requires_grad_(), w = d.w.detach().requires_grad_(), b = d.b.detach().requires_grad_();
    auto o = bench_options();
    o.recompute_elementwise_in_backward = true;
    auto fn = jit::script(chain, o);
    for (int i = 0; i < 2; ++i) benchmark::DoNotOptimize(graft::autograd::grad({fn(x, w, b)}, {x, w, b}, {d.g}));
    for (auto _ : s) benchmark::DoNotOptimize(graft::autograd::grad({fn(x, w, b)}, {x, w, b}, {d.g}));
    set_bytes(s, n, 32);
}

void bm_fwdbwd_eager(benchmark::State& s) {
    const std::int64_t n = s.range(0);
    auto& d = data(n);
    const Tensor x = d.x.detach().requires_grad_(), w = d.w.detach().requires_grad_(), b = d.b.detach().requires_grad_();
    for (auto _ : s) benchmark::DoNotOptimize(graft::autograd::grad({chain(x, w, b)}, {x, w, b}, {d.g}));
    set_bytes(s, n, 32);
}

// relu(x*w + b) * x: relu's backward (a comparison and where) fuses with its neighbours.
Tensor relu_chain(Tensor x, Tensor w, Tensor b) { return graft::relu(x * w + b) * x; }

void bm_fwdbwd_relu(benchmark::State& s, bool use_jit) {
    const std::int64_t n = s.range(0);
    auto& d = data(n);
    const Tensor x = d.x.detach().requires_grad_(), w = d.w.detach().requires_grad_(), b = d.b.detach().requires_grad_();
    auto fn = jit::script(relu_chain, bench_options());
    const auto step = [&] {
        return graft::autograd::grad({use_jit ? fn(x, w, b) : relu_chain(x, w, b)}, {x, w, b}, {d.g});
    };
    for (int i = 0; i < 2; ++i) benchmark::DoNotOptimize(step());
    for (auto _ : s) benchmark::DoNotOptimize(step());
    set_bytes(s, n, 32);
}
void bm_fwdbwd_relu_jit(benchmark::State& s) { bm_fwdbwd_relu(s, true); }
void bm_fwdbwd_relu_eager(benchmark::State& s) { bm_fwdbwd_relu(s, false); }

// A loss: mean((tanh(x*w + b) - target)^2). The jit computes the mean as its group's epilogue
// (kernels::instr_kind::sum_all), never writing the squared differences; loss/jit_then_mean is
// the plan without it (the script returns the squared differences, then graft::mean eagerly:
// what the plan ran before the epilogue), loss/eager the ops one by one; the _2threads rows
// split the group across two threads (wall time).
Tensor squared_error(Tensor x, Tensor w, Tensor b, Tensor target) {
    const Tensor d = graft::tanh(x * w + b) - target;
    return d * d;
}
Tensor mse_loss(Tensor x, Tensor w, Tensor b, Tensor target) { return graft::mean(squared_error(x, w, b, target)); }

void bm_loss(benchmark::State& s, int path, std::size_t threads = 1) {
    const std::int64_t n = s.range(0);
    auto& d = data(n);
    auto fn = jit::script(path == 1 ? squared_error : mse_loss, bench_options(threads));
    const auto step = [&] {
        if (path == 0) return fn(d.x, d.w, d.b, d.g);
        if (path == 1) return graft::mean(fn(d.x, d.w, d.b, d.g));
        return mse_loss(d.x, d.w, d.b, d.g);
    };
    for (int i = 0; i < 3; ++i) benchmark::DoNotOptimize(step());
    for (auto _ : s) benchmark::DoNotOptimize(step());
    set_bytes(s, n, 16);
}
void bm_loss_jit(benchmark::State& s) { bm_loss(s, 0); }
void bm_loss_jit_then_mean(benchmark::State& s) { bm_loss(s, 1); }
void bm_loss_eager(benchmark::State& s) { bm_loss(s, 2); }
void bm_loss_jit_2threads(benchmark::State& s) { bm_loss(s, 0, 2); }
void bm_loss_jit_then_mean_2threads(benchmark::State& s) { bm_loss(s, 1, 2); }

void bm_memcpy(benchmark::State& s) {
    const std::int64_t n = s.range(0);
    auto& d = data(n);
    Tensor dst = graft::zeros({n});
    for (auto _ : s) {
        std::memcpy(dst.data_ptr<float>(), d.x.data_ptr<float>(), static_cast<std::size_t>(n) * sizeof(float));
        benchmark::ClobberMemory();
    }
    set_bytes(s, n, 8);
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
            const bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
            if (r.run_type == Run::RT_Aggregate && !median) continue;
            // CPU time of the calling thread for single-threaded runs (robust to a shared machine),
            // wall time for the 2-thread runs (registered with UseRealTime).
            const double t = key.find("2threads") != std::string::npos ? r.GetAdjustedRealTime() : r.GetAdjustedCPUTime();
            // In ns, whatever unit the run reports in.
            if (median || !time_.count(key)) time_[key] = t * 1e9 / benchmark::GetTimeUnitMultiplier(r.time_unit);
            if (median || !counters_.count(key))
                for (const auto& [name, c] : r.counters) counters_[key][name] = c.value;
        }
        ConsoleReporter::ReportRuns(runs);
    }
    void Finalize() override {
        ConsoleReporter::Finalize();
        const auto t = [&](const std::string& k) { return time_.count(k) ? time_.at(k) : std::nan(""); };
        std::printf("\nsummary (medians when repeated; CPU time, wall time for 2 threads)\n");
        const double call = t("call/jit_10_ops"), eager = t("call/eager_10_ops"), interp = t("call/interpreter_10_ops");
        std::printf("  10-op graph, 1-element inputs: optimized plan %.0f ns per call (floor <= 1000 ns), eager %.0f ns, "
                    "interpreter %.0f ns; eager/jit %.2fx\n",
                    call, eager, interp, eager / call);
        const double writes = t("call/jit_writes_input"), guard = t("call/aliasing_guard");
        std::printf("  function writing into an input (4 inputs, 1 element): optimized plan %.0f ns per call, of which "
                    "the aliasing guard %.1f ns: +%.1f%% over the call without it (floor <= 10%%)\n",
                    writes, guard, 100 * guard / (writes - guard));
        const double active = t("call/active_calls");
        std::printf("  call counting for freeing flushed plans (script + executor): %.1f ns, %.1f%% of the 10-op call\n",
                    active, 100 * active / call);
        if (counters_.count("dynamic_training/jit")) {
            const auto& c = counters_.at("dynamic_training/jit");
            const double j = t("dynamic_training/jit"), e = t("dynamic_training/eager");
            std::printf("  MLP 2-32-32-1 training step over batch sizes 8, 16, 32, 5, 64, 128 in turn: jit %.1f us, eager "
                        "%.1f us per step (eager/jit %.2fx); %.0f compilations in all (%.0f while timed), %.0f "
                        "unoptimized runs\n",
                        j / 1e3, e / 1e3, e / j, c.at("compilations"), c.at("compilations_while_timed"), c.at("unoptimized_runs"));
        }
        if (time_.count("mlp_step/jit/16")) {
            std::printf("  MLP 2-32-32-1 training step at a fixed batch size, eager/jit (floor > 1 at every size):");
            for (const char* n : {"16", "128", "1024", "16384"})
                std::printf(" B=%s %.2fx (%.1f / %.1f us)", n, t(std::string("mlp_step/eager/") + n) / t(std::string("mlp_step/jit/") + n),
                            t(std::string("mlp_step/jit/") + n) / 1e3, t(std::string("mlp_step/eager/") + n) / 1e3);
            std::printf("\n");
        }
        if (counters_.count("first_calls")) {
            const auto& c = counters_.at("first_calls");
            std::printf("  first calls (16 elements): call 1 (capture + profile) %.0f us, call 2 (compile + run) %.0f us, "
                        "together %.0f us (floor <= 60 us); call 3 %.1f us\n",
                        c.at("call1_us"), c.at("call2_us"), c.at("call1_us") + c.at("call2_us"), c.at("call3_us"));
        }
        const double j16 = t("fwd/jit/16"), into16 = t("fwd/expr_into/16");
        std::printf("  chain fwd N=16 per call: jit %.0f ns, ex::evaluate_into %.0f ns, jit/into %.2f (floor <= 2.5), "
                    "eager %.0f ns, hand loop %.0f ns\n",
                    j16, into16, j16 / into16, t("fwd/eager/16"), t("fwd/hand/16"));
        std::printf("  chain fwd eager/jit (floor > 1 at every N):");
        for (const char* n : {"16", "256", "4096", "65536", "1048576", "16777216"})
            std::printf(" N=%s %.2fx", n, t(std::string("fwd/eager/") + n) / t(std::string("fwd/jit/") + n));
        std::printf("\n");
        for (const char* n : {"1048576", "16777216"}) {
            const std::string sz(n);
            const double jit1 = t("fwd/jit/" + sz), jit2 = t("fwd/jit_2threads/" + sz), eag = t("fwd/eager/" + sz),
                         exf = t("fwd/expr/" + sz), hand = t("fwd/hand/" + sz), fbj = t("fwdbwd/jit/" + sz),
                         fbe = t("fwdbwd/eager/" + sz), fbr = t("fwdbwd/jit_recompute/" + sz);
            std::printf("  N=%s fwd: hand/jit %.2f (floor >= 0.9), expr/jit %.2f, eager/jit %.2fx; 2 threads: "
                        "jit1/jit2 %.2fx (floor >= 1.7 at 16M, idle machine); fwd+bwd eager/jit %.2fx (floor >= 4), "
                        "recomputing %.2fx\n",
                        n, hand / jit1, exf / jit1, eag / jit1, jit1 / jit2, fbe / fbj, fbe / fbr);
            if (counters_.count("fwd/jit/" + sz) && counters_.count("memcpy/" + sz))
                std::printf("           fwd jit %.2f GB/s, 2 threads %.2f GB/s, memcpy %.2f GB/s\n",
                            counters_.at("fwd/jit/" + sz).at("bandwidth") / 1e9,
                            counters_.count("fwd/jit_2threads/" + sz) ? counters_.at("fwd/jit_2threads/" + sz).at("bandwidth") / 1e9 : std::nan(""),
                            counters_.at("memcpy/" + sz).at("bandwidth") / 1e9);
        }
        std::printf("  chain fwd+bwd N=16 through the differentiable plan: %.2f us per call (floor <= 2 us), eager %.2f us\n",
                    t("fwdbwd/jit/16") / 1e3, t("fwdbwd/eager/16") / 1e3);
        if (time_.count("loss/jit/65536")) {
            std::printf("  loss mean((tanh(x*w+b) - t)^2), the mean as the group's epilogue:");
            for (const char* n : {"65536", "1048576", "16777216"})
                std::printf(" N=%s jit %.0f us, jit then mean / jit %.2fx, eager / jit %.2fx, 2 threads: jit then "
                            "mean / jit %.2fx;", n, t(std::string("loss/jit/") + n) / 1e3,
                            t(std::string("loss/jit_then_mean/") + n) / t(std::string("loss/jit/") + n),
                            t(std::string("loss/eager/") + n) / t(std::string("loss/jit/") + n),
                            t(std::string("loss/jit_then_mean_2threads/") + n) / t(std::string("loss/jit_2threads/") + n));
            std::printf("\n");
        }
        std::printf("  relu chain fwd+bwd (relu's backward fused): eager/jit %.2fx at N=1024, %.2fx at 1M\n",
                    t("fwdbwd_relu/eager/1024") / t("fwdbwd_relu/jit/1024"),
                    t("fwdbwd_relu/eager/1048576") / t("fwdbwd_relu/jit/1048576"));
    }

private:
    std::map<std::string, double> time_;
    std::map<std::string, std::map<std::string, double>> counters_;
};

void register_all() {
    benchmark::RegisterBenchmark("call/jit_10_ops", bm_call_jit_ten);
    benchmark::RegisterBenchmark("call/eager_10_ops", bm_call_eager_ten);
    benchmark::RegisterBenchmark("call/interpreter_10_ops", bm_call_interpreter_ten);
    benchmark::RegisterBenchmark("call/jit_writes_input", bm_call_jit_writes_input);
    benchmark::RegisterBenchmark("call/aliasing_guard", bm_aliasing_guard);
    benchmark::RegisterBenchmark("call/active_calls", bm_active_calls);
    benchmark::RegisterBenchmark("dynamic_training/jit", bm_dynamic_training_jit)->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("dynamic_training/eager", bm_dynamic_training_eager)->Unit(benchmark::kMicrosecond);
    const auto batches = [](benchmark::internal::Benchmark* b) {
        b->Arg(16)->Arg(128)->Arg(1024)->Arg(16384)->Unit(benchmark::kMicrosecond);
    };
    benchmark::RegisterBenchmark("mlp_step/jit", bm_mlp_step_jit)->Apply(batches);
    benchmark::RegisterBenchmark("mlp_step/eager", bm_mlp_step_eager)->Apply(batches);
    benchmark::RegisterBenchmark("first_calls", bm_first_calls)->Unit(benchmark::kMicrosecond)->Iterations(50);
    // One unit per family (us); the summary converts every time to ns.
    const auto all_sizes = [](benchmark::internal::Benchmark* b) {
        for (std::int64_t n : {std::int64_t{16}, std::int64_t{256}, std::int64_t{4096}, std::int64_t{65536},
                               std::int64_t{1} << 20, std::int64_t{1} << 24})
            b->Arg(n);
        b->Unit(benchmark::kMicrosecond);
    };
    const auto sizes = [](benchmark::internal::Benchmark* b) {
        b->Arg(std::int64_t{1} << 20)->Arg(std::int64_t{1} << 24)->Unit(benchmark::kMicrosecond);
    };
    const auto fb_sizes = [](benchmark::internal::Benchmark* b) {
        b->Arg(16)->Arg(std::int64_t{1} << 20)->Arg(std::int64_t{1} << 24)->Unit(benchmark::kMicrosecond);
    };
    benchmark::RegisterBenchmark("fwd/jit", bm_fwd_jit1)->Apply(all_sizes);
    benchmark::RegisterBenchmark("fwd/jit_2threads", bm_fwd_jit2)->Apply(sizes)->UseRealTime();
    benchmark::RegisterBenchmark("fwd/eager", bm_fwd_eager)->Apply(all_sizes);
    benchmark::RegisterBenchmark("fwd/expr", bm_fwd_expr)->Apply(sizes);
    benchmark::RegisterBenchmark("fwd/expr_into", bm_fwd_expr_into)->Apply(all_sizes);
    benchmark::RegisterBenchmark("fwd/hand", bm_fwd_hand)->Apply(all_sizes);
    benchmark::RegisterBenchmark("fwdbwd/jit", bm_fwdbwd_jit)->Apply(fb_sizes);
    benchmark::RegisterBenchmark("fwdbwd/jit_recompute", bm_fwdbwd_jit_recompute)->Apply(fb_sizes);
    benchmark::RegisterBenchmark("fwdbwd/eager", bm_fwdbwd_eager)->Apply(fb_sizes);
    const auto relu_sizes = [](benchmark::internal::Benchmark* b) {
        b->Arg(1024)->Arg(std::int64_t{1} << 20)->Unit(benchmark::kMicrosecond);
    };
    benchmark::RegisterBenchmark("fwdbwd_relu/jit", bm_fwdbwd_relu_jit)->Apply(relu_sizes);
    benchmark::RegisterBenchmark("fwdbwd_relu/eager", bm_fwdbwd_relu_eager)->Apply(relu_sizes);
    const auto loss_sizes = [](benchmark::internal::Benchmark* b) {
        b->Arg(std::int64_t{1} << 16)->Arg(std::int64_t{1} << 20)->Arg(std::int64_t{1} << 24)->Unit(benchmark::kMicrosecond);
    };
    benchmark::RegisterBenchmark("loss/jit", bm_loss_jit)->Apply(loss_sizes);
    benchmark::RegisterBenchmark("loss/jit_then_mean", bm_loss_jit_then_mean)->Apply(loss_sizes);
    benchmark::RegisterBenchmark("loss/eager", bm_loss_eager)->Apply(loss_sizes);
    benchmark::RegisterBenchmark("loss/jit_2threads", bm_loss_jit_2threads)->Apply(loss_sizes)->UseRealTime();
    benchmark::RegisterBenchmark("loss/jit_then_mean_2threads", bm_loss_jit_then_mean_2threads)->Apply(loss_sizes)->UseRealTime();
    benchmark::RegisterBenchmark("memcpy", bm_memcpy)->Apply(sizes);
}

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::AddCustomContext("graft_simd_target", graft::kernels::target_name(graft::kernels::current_target()));
    register_all();
    summary_reporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();
    return 0;
}
