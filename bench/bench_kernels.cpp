// bench/bench_kernels.cpp: graft's kernel benchmarks, with the in-run references
// (memcpy bandwidth, plain scalar loops, the FMA peak of one core) needed to read off
// ratios, and a summary of the floors printed at the end.
//
// Families (names are "<family>/<op>/<elements>"):
//   kernel/<op>/N   graft::kernels pointer-level call, preallocated and pre-touched output
//   tensor/<op>/N   Tensor-level op (a + b, exp(a), ..., a.sum()); allocates its result
//   loop/<op>/N     plain loop compiled in this binary with the project's flags (-O3, no
//                   -march: x86-64 baseline, SSE2). add/mul/copy loops MAY be
//                   auto-vectorized (SSE2) by the compiler; exp/tanh/gelu call std::exp,
//                   std::tanh, std::erf per element (no vector libm without -ffast-math);
//                   sum is a sequential float accumulation (not vectorizable without
//                   -ffast-math).
//   copy/memcpy/N   std::memcpy of N floats into a preallocated, pre-touched buffer
//   matmul/{kernel,tensor,loop}/n   n x n x n float32 matmul (loop: naive i-k-j, to 512)
//   fma_peak/{avx512,avx2}  many independent register FMAs: one core's FMA peak
//   matmul/{graft,openblas}/<m>x<k>x<n>   only when built with OpenBLAS
//                   (GRAFT_BENCH_HAVE_OPENBLAS, set by bench/CMakeLists.txt when it finds
//                   it): graft::kernels::matmul and cblas_sgemm (row-major, no transpose,
//                   alpha 1, beta 0) into the same kind of preallocated, pre-touched C, for
//                   the shapes (A is m x k, B is k x n). OpenBLAS runs on one thread
//                   (openblas_set_num_threads(1) at startup; also run with
//                   OPENBLAS_NUM_THREADS=1 so its pool is never started). Debian's
//                   OpenBLAS 0.3.21 may not recognise a newer CPU and then falls back to an
//                   older (e.g. SSE3) kernel: run with OPENBLAS_CORETYPE=SkylakeX to compare
//                   against its AVX-512 sgemm. The summary prints the core it used and warns
//                   when it is not an AVX-512 one.
//
// Counters (benchmark::Counter, kIsRate, SI units): "bandwidth" in bytes/s with bytes
// counted minimally (add/mul 12 B/elem, unary 8 B/elem, sum 4 B/elem, memcpy 8 B/elem);
// "flops" in FLOP/s (matmul 2*n^3, FMA peak lanes*2 per FMA). Rates use the thread's
// CPU time (Google Benchmark's default), which on this shared, loaded VM is steadier
// than wall-clock; the console shows both Time (wall) and CPU columns.
#include <graft/graft.hpp>
#include <graft/kernels/dispatch.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

#if defined(GRAFT_BENCH_HAVE_OPENBLAS) && GRAFT_BENCH_HAVE_OPENBLAS
#include <cblas.h>  // OpenBLAS's (openblas_set_num_threads, openblas_get_corename)
#define GRAFT_BENCH_OPENBLAS 1
#else
#define GRAFT_BENCH_OPENBLAS 0
#endif

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define GRAFT_BENCH_X86 1
#include <immintrin.h>
#else
#define GRAFT_BENCH_X86 0
#endif

namespace {

namespace gk = graft::kernels;

constexpr std::int64_t kSizes[] = {std::int64_t{1} << 10, std::int64_t{1} << 16, std::int64_t{1} << 20,
                                   std::int64_t{1} << 24};
constexpr std::int64_t kMatSizes[] = {64, 128, 256, 512, 1024};

// ------------------------------------------------------------------ buffers

struct aligned_delete {
    void operator()(float* p) const noexcept { ::operator delete(p, std::align_val_t{64}); }
};
using buffer = std::unique_ptr<float[], aligned_delete>;

buffer make_buffer(std::size_t n) {
    return buffer(static_cast<float*>(::operator new(std::max<std::size_t>(n, 1) * sizeof(float),
                                                      std::align_val_t{64})));
}

// Deterministic, fast fill (a 64-bit LCG) with uniform values in [lo, hi).
void fill_uniform(float* p, std::size_t n, float lo, float hi, std::uint64_t seed) {
    std::uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    for (std::size_t i = 0; i < n; ++i) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        const float u = static_cast<float>(s >> 40) * (1.0f / 16777216.0f);  // [0, 1)
        p[i] = lo + (hi - lo) * u;
    }
}

// Inputs a, b in [-4, 4) (a sensible range for exp, tanh and gelu alike) and a
// pre-touched output, cached per size so setup is paid once per process.
struct elem_data {
    std::size_t n;
    buffer a, b, out;
};

elem_data& data(std::size_t n) {
    static std::map<std::size_t, std::unique_ptr<elem_data>> cache;
    auto& slot = cache[n];
    if (!slot) {
        slot = std::make_unique<elem_data>(elem_data{n, make_buffer(n), make_buffer(n), make_buffer(n)});
        fill_uniform(slot->a.get(), n, -4.0f, 4.0f, 1);
        fill_uniform(slot->b.get(), n, -4.0f, 4.0f, 2);
        std::memset(slot->out.get(), 0, n * sizeof(float));  // fault the pages in now
    }
    return *slot;
}

struct tensor_data {
    graft::Tensor a, b;
};

graft::Tensor tensor_copy_of(const float* p, std::size_t n) {
    graft::Tensor t = graft::empty({static_cast<std::int64_t>(n)}, graft::dtype::float32);
    std::memcpy(t.data_ptr<float>(), p, n * sizeof(float));
    return t;
}

tensor_data& tensors(std::size_t n) {
    static std::map<std::size_t, std::unique_ptr<tensor_data>> cache;
    auto& slot = cache[n];
    if (!slot) {
        elem_data& d = data(n);
        slot = std::make_unique<tensor_data>(tensor_data{tensor_copy_of(d.a.get(), n), tensor_copy_of(d.b.get(), n)});
    }
    return *slot;
}

struct mat_data {
    std::size_t n;
    buffer a, b, c;
    graft::Tensor ta, tb;
};

mat_data& mat(std::size_t n) {
    static std::map<std::size_t, std::unique_ptr<mat_data>> cache;
    auto& slot = cache[n];
    if (!slot) {
        const std::size_t nn = n * n;
        slot = std::make_unique<mat_data>(mat_data{n, make_buffer(nn), make_buffer(nn), make_buffer(nn), {}, {}});
        fill_uniform(slot->a.get(), nn, -1.0f, 1.0f, 3);
        fill_uniform(slot->b.get(), nn, -1.0f, 1.0f, 4);
        std::memset(slot->c.get(), 0, nn * sizeof(float));
        const auto ni = static_cast<std::int64_t>(n);
        slot->ta = graft::empty({ni, ni}, graft::dtype::float32);
        slot->tb = graft::empty({ni, ni}, graft::dtype::float32);
        std::memcpy(slot->ta.data_ptr<float>(), slot->a.get(), nn * sizeof(float));
        std::memcpy(slot->tb.data_ptr<float>(), slot->b.get(), nn * sizeof(float));
    }
    return *slot;
}

// ------------------------------------------------------------------ counters

void set_bandwidth(benchmark::State& st, std::size_t n, double bytes_per_elem) {
    st.counters["bandwidth"] = benchmark::Counter(static_cast<double>(st.iterations()) * static_cast<double>(n) *
                                                      bytes_per_elem,
                                                  benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void set_flops(benchmark::State& st, double flops_per_iter) {
    st.counters["flops"] = benchmark::Counter(static_cast<double>(st.iterations()) * flops_per_iter,
                                              benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

// ------------------------------------------------------------------ plain loops (references)
// noinline so each is one honest, separately compiled loop.

[[gnu::noinline]] void loop_add(const float* a, const float* b, float* out, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
[[gnu::noinline]] void loop_mul(const float* a, const float* b, float* out, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
}
[[gnu::noinline]] void loop_exp(const float* a, float* out, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) out[i] = std::exp(a[i]);
}
[[gnu::noinline]] void loop_tanh(const float* a, float* out, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) out[i] = std::tanh(a[i]);
}
[[gnu::noinline]] void loop_gelu(const float* a, float* out, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        const float x = a[i];
        out[i] = 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
    }
}
[[gnu::noinline]] float loop_sum(const float* a, std::size_t n) {
    float s = 0.0f;
    for (std::size_t i = 0; i < n; ++i) s += a[i];
    return s;
}
[[gnu::noinline]] void loop_matmul(const float* a, const float* b, float* c, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        float* ci = c + i * n;
        for (std::size_t j = 0; j < n; ++j) ci[j] = 0.0f;
        for (std::size_t k = 0; k < n; ++k) {
            const float aik = a[i * n + k];
            const float* bk = b + k * n;
            for (std::size_t j = 0; j < n; ++j) ci[j] += aik * bk[j];
        }
    }
}

// ------------------------------------------------------------------ elementwise / sum

enum class op { add, mul, exp, tanh, gelu };

const char* op_name(op o) {
    switch (o) {
        case op::add: return "add";
        case op::mul: return "mul";
        case op::exp: return "exp";
        case op::tanh: return "tanh";
        case op::gelu: return "gelu";
    }
    return "?";
}

bool is_binary(op o) { return o == op::add || o == op::mul; }
double bytes_per_elem(op o) { return is_binary(o) ? 12.0 : 8.0; }

gk::unary_op to_unary(op o) {
    return o == op::exp ? gk::unary_op::exp : o == op::tanh ? gk::unary_op::tanh : gk::unary_op::gelu;
}

void bm_kernel(benchmark::State& st, op o) {
    const auto n = static_cast<std::size_t>(st.range(0));
    elem_data& d = data(n);
    if (is_binary(o)) {
        const gk::binary_op bo = o == op::add ? gk::binary_op::add : gk::binary_op::mul;
        for (auto _ : st) {
            gk::binary(bo, d.a.get(), 1, d.b.get(), 1, d.out.get(), n);
            benchmark::ClobberMemory();
        }
    } else {
        const gk::unary_op uo = to_unary(o);
        for (auto _ : st) {
            gk::unary(uo, d.a.get(), 1, d.out.get(), n);
            benchmark::ClobberMemory();
        }
    }
    set_bandwidth(st, n, bytes_per_elem(o));
}

void bm_loop(benchmark::State& st, op o) {
    const auto n = static_cast<std::size_t>(st.range(0));
    elem_data& d = data(n);
    for (auto _ : st) {
        switch (o) {
            case op::add: loop_add(d.a.get(), d.b.get(), d.out.get(), n); break;
            case op::mul: loop_mul(d.a.get(), d.b.get(), d.out.get(), n); break;
            case op::exp: loop_exp(d.a.get(), d.out.get(), n); break;
            case op::tanh: loop_tanh(d.a.get(), d.out.get(), n); break;
            case op::gelu: loop_gelu(d.a.get(), d.out.get(), n); break;
        }
        benchmark::ClobberMemory();
    }
    set_bandwidth(st, n, bytes_per_elem(o));
}

void bm_tensor(benchmark::State& st, op o) {
    const auto n = static_cast<std::size_t>(st.range(0));
    tensor_data& t = tensors(n);
    for (auto _ : st) {
        graft::Tensor r;
        switch (o) {
            case op::add: r = t.a + t.b; break;
            case op::mul: r = t.a * t.b; break;
            case op::exp: r = graft::exp(t.a); break;
            case op::tanh: r = graft::tanh(t.a); break;
            case op::gelu: r = graft::gelu(t.a); break;
        }
        benchmark::DoNotOptimize(r.data_ptr<float>());
        benchmark::ClobberMemory();
    }  // r (its buffer) is released here, every iteration
    set_bandwidth(st, n, bytes_per_elem(o));
}

void bm_sum_kernel(benchmark::State& st) {
    const auto n = static_cast<std::size_t>(st.range(0));
    elem_data& d = data(n);
    for (auto _ : st) {
        float s = gk::reduce(gk::reduce_op::sum, d.a.get(), n);
        benchmark::DoNotOptimize(s);
    }
    set_bandwidth(st, n, 4.0);
}

void bm_sum_loop(benchmark::State& st) {
    const auto n = static_cast<std::size_t>(st.range(0));
    elem_data& d = data(n);
    for (auto _ : st) {
        float s = loop_sum(d.a.get(), n);
        benchmark::DoNotOptimize(s);
    }
    set_bandwidth(st, n, 4.0);
}

void bm_sum_tensor(benchmark::State& st) {
    const auto n = static_cast<std::size_t>(st.range(0));
    tensor_data& t = tensors(n);
    for (auto _ : st) {
        graft::Tensor s = t.a.sum();
        benchmark::DoNotOptimize(s.data_ptr<float>());
    }
    set_bandwidth(st, n, 4.0);
}

void bm_memcpy(benchmark::State& st) {
    const auto n = static_cast<std::size_t>(st.range(0));
    elem_data& d = data(n);
    for (auto _ : st) {
        std::memcpy(d.out.get(), d.a.get(), n * sizeof(float));
        benchmark::ClobberMemory();
    }
    set_bandwidth(st, n, 8.0);  // read + write
}

// ------------------------------------------------------------------ matmul

double matmul_flops(std::size_t n) { return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n); }

void bm_matmul_kernel(benchmark::State& st) {
    const auto n = static_cast<std::size_t>(st.range(0));
    mat_data& m = mat(n);
    const auto ld = static_cast<std::ptrdiff_t>(n);
    for (auto _ : st) {
        gk::matmul(m.a.get(), ld, m.b.get(), ld, m.c.get(), ld, n, n, n);
        benchmark::ClobberMemory();
    }
    set_flops(st, matmul_flops(n));
}

void bm_matmul_tensor(benchmark::State& st) {
    const auto n = static_cast<std::size_t>(st.range(0));
    mat_data& m = mat(n);
    for (auto _ : st) {
        graft::Tensor c = graft::matmul(m.ta, m.tb);
        benchmark::DoNotOptimize(c.data_ptr<float>());
        benchmark::ClobberMemory();
    }
    set_flops(st, matmul_flops(n));
}

void bm_matmul_loop(benchmark::State& st) {
    const auto n = static_cast<std::size_t>(st.range(0));
    mat_data& m = mat(n);
    for (auto _ : st) {
        loop_matmul(m.a.get(), m.b.get(), m.c.get(), n);
        benchmark::ClobberMemory();
    }
    set_flops(st, matmul_flops(n));
}

// ------------------------------------------------------------------ matmul against OpenBLAS
// The shapes, m x k x n (A is m x k, B is k x n, C is m x n), all row-major and
// contiguous; graft and OpenBLAS get the same inputs and their own pre-touched C.
#if GRAFT_BENCH_OPENBLAS

struct gemm_shape {
    std::size_t m, k, n;
};
constexpr gemm_shape kGemmShapes[] = {{512, 512, 512}, {128, 2048, 128}, {64, 256, 256}};

std::string shape_name(const gemm_shape& s) {
    return std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n);
}

struct gemm_data {
    buffer a, b, c;
};

gemm_data& gemm(const gemm_shape& s) {
    static std::map<std::string, std::unique_ptr<gemm_data>> cache;
    auto& slot = cache[shape_name(s)];
    if (!slot) {
        slot = std::make_unique<gemm_data>(
            gemm_data{make_buffer(s.m * s.k), make_buffer(s.k * s.n), make_buffer(s.m * s.n)});
        fill_uniform(slot->a.get(), s.m * s.k, -1.0f, 1.0f, 5);
        fill_uniform(slot->b.get(), s.k * s.n, -1.0f, 1.0f, 6);
        std::memset(slot->c.get(), 0, s.m * s.n * sizeof(float));
    }
    return *slot;
}

double gemm_flops(const gemm_shape& s) {
    return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.k) * static_cast<double>(s.n);
}

void bm_gemm_graft(benchmark::State& st, gemm_shape s) {
    gemm_data& g = gemm(s);
    for (auto _ : st) {
        gk::matmul(g.a.get(), static_cast<std::ptrdiff_t>(s.k), g.b.get(), static_cast<std::ptrdiff_t>(s.n),
                   g.c.get(), static_cast<std::ptrdiff_t>(s.n), s.m, s.n, s.k);
        benchmark::ClobberMemory();
    }
    set_flops(st, gemm_flops(s));
}

void bm_gemm_openblas(benchmark::State& st, gemm_shape s) {
    gemm_data& g = gemm(s);
    const auto m = static_cast<blasint>(s.m), k = static_cast<blasint>(s.k), n = static_cast<blasint>(s.n);
    for (auto _ : st) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, g.a.get(), k, g.b.get(), n, 0.0f,
                    g.c.get(), n);
        benchmark::ClobberMemory();
    }
    set_flops(st, gemm_flops(s));
}

// OpenBLAS's AVX-512 cores (the ones issue 15 compares against); any other name means
// the CPU was not recognised and OPENBLAS_CORETYPE was not set.
bool openblas_core_is_avx512(const char* name) {
    std::string n = name ? name : "";
    for (char& ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return n == "skylakex" || n == "cooperlake" || n == "sapphirerapids";
}
#endif  // GRAFT_BENCH_OPENBLAS

// ------------------------------------------------------------------ FMA peak
// Many independent FMA chains held in registers (acc = acc * m + a); m and a come in
// as run-time values, so nothing folds. The fixed point is 1.0: no overflow, no
// denormals. FLOP = lanes * 2 per FMA.

constexpr std::int64_t kFmaInner = 1 << 15;

#if GRAFT_BENCH_X86
#define GRAFT_BENCH_REP16(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#define GRAFT_BENCH_REP12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

constexpr int kAvx512Chains = 16;  // of 32 zmm registers
constexpr int kAvx2Chains = 12;    // of 16 ymm registers (m and a take two more)

__attribute__((target("avx512f,fma"), noinline)) float fma_loop_avx512(std::int64_t iters, float mv, float av) {
    const __m512 m = _mm512_set1_ps(mv), a = _mm512_set1_ps(av);
#define GRAFT_BENCH_DECL(i) __m512 c##i = _mm512_set1_ps(1.0f + 0.001f * (i));
    GRAFT_BENCH_REP16(GRAFT_BENCH_DECL)
#undef GRAFT_BENCH_DECL
    for (std::int64_t it = 0; it < iters; ++it) {
#define GRAFT_BENCH_FMA(i) c##i = _mm512_fmadd_ps(c##i, m, a);
        GRAFT_BENCH_REP16(GRAFT_BENCH_FMA)
#undef GRAFT_BENCH_FMA
    }
    __m512 s = _mm512_setzero_ps();
#define GRAFT_BENCH_ADD(i) s = _mm512_add_ps(s, c##i);
    GRAFT_BENCH_REP16(GRAFT_BENCH_ADD)
#undef GRAFT_BENCH_ADD
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, s);
    float r = 0.0f;
    for (float v : lanes) r += v;
    return r;
}

__attribute__((target("avx2,fma"), noinline)) float fma_loop_avx2(std::int64_t iters, float mv, float av) {
    const __m256 m = _mm256_set1_ps(mv), a = _mm256_set1_ps(av);
#define GRAFT_BENCH_DECL(i) __m256 c##i = _mm256_set1_ps(1.0f + 0.001f * (i));
    GRAFT_BENCH_REP12(GRAFT_BENCH_DECL)
#undef GRAFT_BENCH_DECL
    for (std::int64_t it = 0; it < iters; ++it) {
#define GRAFT_BENCH_FMA(i) c##i = _mm256_fmadd_ps(c##i, m, a);
        GRAFT_BENCH_REP12(GRAFT_BENCH_FMA)
#undef GRAFT_BENCH_FMA
    }
    __m256 s = _mm256_setzero_ps();
#define GRAFT_BENCH_ADD(i) s = _mm256_add_ps(s, c##i);
    GRAFT_BENCH_REP12(GRAFT_BENCH_ADD)
#undef GRAFT_BENCH_ADD
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, s);
    float r = 0.0f;
    for (float v : lanes) r += v;
    return r;
}

void bm_fma_avx512(benchmark::State& st) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f")) {
        st.SkipWithError("CPU has no AVX-512F");
        return;
    }
    float m = 0.999999f, a = 1e-6f;
    benchmark::DoNotOptimize(a);
    for (auto _ : st) {
        benchmark::DoNotOptimize(m);  // opaque per call: the (pure) call cannot be hoisted
        benchmark::DoNotOptimize(fma_loop_avx512(kFmaInner, m, a));
    }
    set_flops(st, static_cast<double>(kFmaInner) * kAvx512Chains * 16 * 2);
}

void bm_fma_avx2(benchmark::State& st) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        st.SkipWithError("CPU has no AVX2+FMA");
        return;
    }
    float m = 0.999999f, a = 1e-6f;
    benchmark::DoNotOptimize(a);
    for (auto _ : st) {
        benchmark::DoNotOptimize(m);  // opaque per call: the (pure) call cannot be hoisted
        benchmark::DoNotOptimize(fma_loop_avx2(kFmaInner, m, a));
    }
    set_flops(st, static_cast<double>(kFmaInner) * kAvx2Chains * 8 * 2);
}
#endif  // GRAFT_BENCH_X86

// ------------------------------------------------------------------ summary reporter
// Records each benchmark's counters (the median aggregate when there are repetitions,
// else the mean of the iteration runs) and prints ratios and the floors.

class summary_reporter : public benchmark::ConsoleReporter {
public:
    // Counters as columns; colour only on a terminal.
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

    // Counter value, or NaN when the benchmark did not run (filtered out / skipped).
    double get(const std::string& key, const char* counter) const {
        const auto it = results_.find(key);
        if (it == results_.end()) return std::nan("");
        const entry& e = it->second;
        if (const auto m = e.median.find(counter); m != e.median.end()) return m->second;
        if (const auto s = e.sum.find(counter); s != e.sum.end() && e.count > 0) return s->second / e.count;
        return std::nan("");
    }
    double bw(const std::string& key) const { return get(key, "bandwidth") / 1e9; }
    double gf(const std::string& key) const { return get(key, "flops") / 1e9; }

    static void floor_line(const char* what, double value, double floor, const char* unit) {
        if (std::isnan(value)) {
            std::printf("  %-52s  not measured in this run\n", what);
            return;
        }
        std::printf("  %-52s  %7.3f%s (floor %.2f%s)  %s\n", what, value, unit, floor, unit,
                    value >= floor ? "MET" : "NOT MET");
    }

    void print_summary() const {
        std::printf("\n==== graft bench summary (SIMD target %s; medians when repeated) ====\n",
                    gk::target_name(gk::current_target()));
        std::printf("Elementwise and sum, GB/s with minimal byte counts; ratios from this run only.\n");
        std::printf("%-6s %10s %9s %9s %9s %9s %11s %11s %11s\n", "op", "elements", "kernel", "tensor", "loop",
                    "memcpy", "kern/copy", "kern/loop", "tens/kern");
        const op ops[] = {op::add, op::mul, op::exp, op::tanh, op::gelu};
        for (int oi = 0; oi <= 5; ++oi) {
            const std::string name = oi < 5 ? op_name(ops[oi]) : "sum";
            for (std::int64_t n : kSizes) {
                const std::string sz = std::to_string(n);
                const double k = bw("kernel/" + name + "/" + sz), t = bw("tensor/" + name + "/" + sz),
                             l = bw("loop/" + name + "/" + sz), c = bw("copy/memcpy/" + sz);
                if (std::isnan(k) && std::isnan(t) && std::isnan(l)) continue;
                std::printf("%-6s %10s %9.2f %9.2f %9.2f %9.2f %11.3f %11.2f %11.3f\n", name.c_str(), sz.c_str(), k,
                            t, l, c, k / c, k / l, t / k);
            }
        }
        double peak512 = std::nan(""), peak256 = std::nan("");
#if GRAFT_BENCH_X86
        peak512 = gf("fma_peak/avx512");
        peak256 = gf("fma_peak/avx2");
#endif
        double peak = std::nan("");
        if (!std::isnan(peak512)) peak = peak512;
        if (!std::isnan(peak256) && (std::isnan(peak) || peak256 > peak)) peak = peak256;
        std::printf("\nFMA peak of one core: AVX-512 %.1f GFLOP/s, AVX2 %.1f GFLOP/s; using %.1f\n", peak512, peak256,
                    peak);
        std::printf("%-8s %12s %12s %12s %11s %11s\n", "matmul n", "kernel GF/s", "tensor GF/s", "loop GF/s",
                    "kern %peak", "tens %peak");
        for (std::int64_t n : kMatSizes) {
            const std::string sz = std::to_string(n);
            const double k = gf("matmul/kernel/" + sz), t = gf("matmul/tensor/" + sz), l = gf("matmul/loop/" + sz);
            if (std::isnan(k) && std::isnan(t)) continue;
            std::printf("%-8s %12.2f %12.2f %12.2f %10.1f%% %10.1f%%\n", sz.c_str(), k, t, l, 100 * k / peak,
                        100 * t / peak);
        }
#if GRAFT_BENCH_OPENBLAS
        const char* core = openblas_get_corename();
        std::printf("\nmatmul against OpenBLAS sgemm (core %s, %d thread%s), m x k x n:\n", core ? core : "?",
                    openblas_get_num_threads(), openblas_get_num_threads() == 1 ? "" : "s");
        if (!openblas_core_is_avx512(core))
            std::printf("  WARNING: OpenBLAS core is not an AVX-512 one (SkylakeX/Cooperlake/SapphireRapids);\n"
                        "  the issue compares against SkylakeX: run with OPENBLAS_CORETYPE=SkylakeX.\n");
        std::printf("%-14s %12s %14s %9s\n", "shape", "graft GF/s", "OpenBLAS GF/s", "ratio");
        for (const gemm_shape& s : kGemmShapes) {
            const std::string sz = shape_name(s);
            const double g = gf("matmul/graft/" + sz), o = gf("matmul/openblas/" + sz);
            if (std::isnan(g) && std::isnan(o)) continue;
            std::printf("%-14s %12.2f %14.2f %9.3f\n", sz.c_str(), g, o, g / o);
        }
#endif
        const std::string m16 = std::to_string(std::int64_t{1} << 24), m1 = std::to_string(std::int64_t{1} << 20);
        std::printf("\nFloors (issue), pointer-level kernels:\n");
        floor_line("add 16M: kernel GB/s / memcpy GB/s", bw("kernel/add/" + m16) / bw("copy/memcpy/" + m16), 0.8, "");
        floor_line("mul 16M: kernel GB/s / memcpy GB/s", bw("kernel/mul/" + m16) / bw("copy/memcpy/" + m16), 0.8, "");
        floor_line("exp 1M: kernel / scalar std::exp loop", bw("kernel/exp/" + m1) / bw("loop/exp/" + m1), 4.0, "x");
        floor_line("tanh 1M: kernel / scalar std::tanh loop", bw("kernel/tanh/" + m1) / bw("loop/tanh/" + m1), 4.0,
                   "x");
        floor_line("matmul 512: kernel GFLOP/s / FMA peak", gf("matmul/kernel/512") / peak, 0.25, "");
#if GRAFT_BENCH_OPENBLAS
        for (const gemm_shape& s : kGemmShapes) {
            const std::string sz = shape_name(s);
            const std::string what = "matmul " + sz + ": graft / OpenBLAS GFLOP/s";
            floor_line(what.c_str(), gf("matmul/graft/" + sz) / gf("matmul/openblas/" + sz), 0.95, "");
        }
#endif
        std::printf("Same ratios at the Tensor level (informational, allocation included):\n");
        floor_line("add 16M: tensor GB/s / memcpy GB/s", bw("tensor/add/" + m16) / bw("copy/memcpy/" + m16), 0.8, "");
        floor_line("mul 16M: tensor GB/s / memcpy GB/s", bw("tensor/mul/" + m16) / bw("copy/memcpy/" + m16), 0.8, "");
        floor_line("exp 1M: tensor / scalar std::exp loop", bw("tensor/exp/" + m1) / bw("loop/exp/" + m1), 4.0, "x");
        floor_line("tanh 1M: tensor / scalar std::tanh loop", bw("tensor/tanh/" + m1) / bw("loop/tanh/" + m1), 4.0,
                   "x");
        floor_line("matmul 512: tensor GFLOP/s / FMA peak", gf("matmul/tensor/512") / peak, 0.25, "");
        std::fflush(stdout);
    }
};

void register_all() {
    const op ops[] = {op::add, op::mul, op::exp, op::tanh, op::gelu};
    auto sizes = [](benchmark::internal::Benchmark* b) {
        for (std::int64_t n : kSizes) b->Arg(n);
    };
    // Order: references first, so each op's rows sit next to the copy figure.
    benchmark::RegisterBenchmark("copy/memcpy", bm_memcpy)->Apply(sizes);
    for (op o : ops) {
        const std::string name = op_name(o);
        benchmark::RegisterBenchmark(("kernel/" + name).c_str(), bm_kernel, o)->Apply(sizes);
        benchmark::RegisterBenchmark(("tensor/" + name).c_str(), bm_tensor, o)->Apply(sizes);
        benchmark::RegisterBenchmark(("loop/" + name).c_str(), bm_loop, o)->Apply(sizes);
    }
    benchmark::RegisterBenchmark("kernel/sum", bm_sum_kernel)->Apply(sizes);
    benchmark::RegisterBenchmark("tensor/sum", bm_sum_tensor)->Apply(sizes);
    benchmark::RegisterBenchmark("loop/sum", bm_sum_loop)->Apply(sizes);
#if GRAFT_BENCH_X86
    benchmark::RegisterBenchmark("fma_peak/avx512", bm_fma_avx512);
    benchmark::RegisterBenchmark("fma_peak/avx2", bm_fma_avx2);
#endif
    auto msizes = [](benchmark::internal::Benchmark* b) {
        for (std::int64_t n : kMatSizes) b->Arg(n);
        b->Unit(benchmark::kMicrosecond);
    };
    benchmark::RegisterBenchmark("matmul/kernel", bm_matmul_kernel)->Apply(msizes);
    benchmark::RegisterBenchmark("matmul/tensor", bm_matmul_tensor)->Apply(msizes);
    auto* loop = benchmark::RegisterBenchmark("matmul/loop", bm_matmul_loop);
    for (std::int64_t n : kMatSizes)
        if (n <= 512) loop->Arg(n);
    loop->Unit(benchmark::kMicrosecond);
#if GRAFT_BENCH_OPENBLAS
    // Each shape's graft and OpenBLAS rows run back to back (similar machine load).
    for (const gemm_shape& s : kGemmShapes) {
        const std::string sz = shape_name(s);
        benchmark::RegisterBenchmark(("matmul/graft/" + sz).c_str(), bm_gemm_graft, s)->Unit(benchmark::kMicrosecond);
        benchmark::RegisterBenchmark(("matmul/openblas/" + sz).c_str(), bm_gemm_openblas, s)
            ->Unit(benchmark::kMicrosecond);
    }
#endif
}

}  // namespace

int main(int argc, char** argv) {
    // A non-console --benchmark_format gets the library's own reporter (no summary).
    bool console = true;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg(argv[i]);
        if (arg.rfind("--benchmark_format=", 0) == 0 && arg != "--benchmark_format=console") console = false;
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::AddCustomContext("graft_simd_target", gk::target_name(gk::current_target()));
    benchmark::AddCustomContext("graft_version", graft::version_string);
#if GRAFT_BENCH_OPENBLAS
    openblas_set_num_threads(1);  // single-threaded comparison (also run with OPENBLAS_NUM_THREADS=1)
    benchmark::AddCustomContext("openblas_core", openblas_get_corename());
    benchmark::AddCustomContext("openblas_config", openblas_get_config());
#endif
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
