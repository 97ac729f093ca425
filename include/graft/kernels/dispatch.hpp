#pragma once
// graft/kernels/dispatch.hpp: the public SIMD kernel API of graft, with run-time
// dispatch to the best compiled Highway target the CPU supports.
//
// * Header-only: no libhwy is needed. graft does its own CPU detection
//   (__builtin_cpu_supports on x86 with GCC/Clang) and its own dispatch tables
//   (inline variables, identical in every TU built with the same flags), instead of
//   HWY_EXPORT/HWY_DYNAMIC_DISPATCH which need libhwy's GetChosenTarget().
// * Compiled targets: see graft/kernels/config.hpp (default SCALAR, AVX2, AVX3).
// * Selection: at first use, the best available target, or the one named by the
//   environment variable GRAFT_SIMD_TARGET (scalar, emu128, ssse3, sse4, avx2, avx3,
//   avx3_dl, neon, sve, sve2, wasm, rvv; case-insensitive). An unknown or unavailable
//   name is ignored with one warning on stderr. set_target() overrides at run time.
// * Strides are element strides: 0 = broadcast one value, 1 = contiguous (both
//   vectorized), anything else = strided (gathered through a small buffer).
// * Build time: in header-only mode every TU that includes this header compiles the
//   kernels for every target; in compiled mode (GRAFT_COMPILED_LIB, graft/config.hpp)
//   they are compiled once, in the graft library.
// * Numeric contracts are documented in elementwise-inl.hpp, reduce-inl.hpp and
//   matmul-inl.hpp; graft/kernels/reference.hpp holds the scalar reference.

#include "graft/kernels/config.hpp"

#include <atomic>
#include <cctype>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "graft/core/error.hpp"
#include "graft/kernels/api.hpp"

// The per-target Highway pass: only where the kernels are compiled (header-only mode, or
// the library TU in compiled mode). Elsewhere this header needs no Highway header at all.
#include "graft/kernels/simd.hpp"

namespace graft::kernels {

/// Human-readable name of a target: "AVX3", "AVX2", "SSE4", "SCALAR", ...
inline const char* target_name(target t) noexcept {
    switch (t) {
        case target::scalar: return "SCALAR";
        case target::emu128: return "EMU128";
        case target::ssse3: return "SSSE3";
        case target::sse4: return "SSE4";
        case target::avx2: return "AVX2";
        case target::avx3: return "AVX3";
        case target::avx3_dl: return "AVX3_DL";
        case target::neon: return "NEON";
        case target::sve: return "SVE";
        case target::sve2: return "SVE2";
        case target::wasm: return "WASM";
        case target::rvv: return "RVV";
        case target::unknown: break;
    }
    return "UNKNOWN";
}

namespace detail {

struct target_entry {
    target t;
    const kernel_table* table;
};

/// The compiled targets, best first.
struct target_entries {
    const target_entry* data;
    std::size_t size;
    [[nodiscard]] const target_entry* begin() const noexcept { return data; }
    [[nodiscard]] const target_entry* end() const noexcept { return data + size; }
};

#if !GRAFT_HAS_KERNELS
// Compiled mode: the kernels and this table live in the graft library (src/kernels.cpp).
target_entries compiled_entries() noexcept;
#else
inline constexpr target_entry compiled_table[] = {
#if HWY_TARGETS & HWY_AVX3_DL
    {target::avx3_dl, &N_AVX3_DL::table},
#endif
#if HWY_TARGETS & HWY_AVX3
    {target::avx3, &N_AVX3::table},
#endif
#if HWY_TARGETS & HWY_AVX2
    {target::avx2, &N_AVX2::table},
#endif
#if HWY_TARGETS & HWY_SSE4
    {target::sse4, &N_SSE4::table},
#endif
#if HWY_TARGETS & HWY_SSSE3
    {target::ssse3, &N_SSSE3::table},
#endif
#if HWY_TARGETS & HWY_SVE2
    {target::sve2, &N_SVE2::table},
#endif
#if HWY_TARGETS & HWY_SVE
    {target::sve, &N_SVE::table},
#endif
#if HWY_TARGETS & HWY_NEON
    {target::neon, &N_NEON::table},
#endif
#if HWY_TARGETS & HWY_RVV
    {target::rvv, &N_RVV::table},
#endif
#if HWY_TARGETS & HWY_WASM
    {target::wasm, &N_WASM::table},
#endif
#if HWY_TARGETS & HWY_EMU128
    {target::emu128, &N_EMU128::table},
#endif
#if HWY_TARGETS & HWY_SCALAR
    {target::scalar, &N_SCALAR::table},
#endif
#if !(HWY_STATIC_TARGET & (HWY_AVX3_DL | HWY_AVX3 | HWY_AVX2 | HWY_SSE4 | HWY_SSSE3 | HWY_SVE2 | HWY_SVE | \
                           HWY_NEON | HWY_RVV | HWY_WASM | HWY_EMU128 | HWY_SCALAR))
    {target::unknown, &HWY_STATIC_DISPATCH(table)},  // some other static target
#endif
};

GRAFT_INLINE target_entries compiled_entries() noexcept { return {compiled_table, std::size(compiled_table)}; }
#endif  // GRAFT_HAS_KERNELS

inline const kernel_table* find_compiled(target t) noexcept {
    for (const auto& e : compiled_entries())
        if (e.t == t) return e.table;
    return nullptr;
}

/// Whether the running CPU (and OS) supports target t.
inline bool cpu_supports(target t) noexcept {
    if (t == target::scalar || t == target::emu128) return true;
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    const bool ssse3 = __builtin_cpu_supports("ssse3");
    // Highway 1.0.3 requires AES and PCLMUL for SSE4 and above.
    const bool sse4 = ssse3 && __builtin_cpu_supports("sse4.1") && __builtin_cpu_supports("sse4.2") &&
                      __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("aes") &&
                      __builtin_cpu_supports("pclmul");
    const bool avx2 = sse4 && __builtin_cpu_supports("avx") && __builtin_cpu_supports("avx2") &&
                      __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi") &&
                      __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("f16c");
    const bool avx3 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
    switch (t) {
        case target::ssse3: return ssse3;
        case target::sse4: return sse4;
        case target::avx2: return avx2;
        case target::avx3: return avx3;
        case target::avx3_dl:
            return avx3 && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vbmi") &&
                   __builtin_cpu_supports("avx512vbmi2") && __builtin_cpu_supports("avx512bitalg") &&
                   __builtin_cpu_supports("avx512vpopcntdq") && __builtin_cpu_supports("vpclmulqdq") &&
                   __builtin_cpu_supports("vaes") && __builtin_cpu_supports("gfni");
        default: return false;
    }
#else
    // No run-time detection elsewhere: only the compile-time (static) target is trusted.
    // Only the best compiled target, which the compiler flags guarantee, is trusted.
    return compiled_entries().size > 0 && compiled_entries().data[0].t == t;
#endif
}

inline std::vector<target> available() {
    std::vector<target> v;
    for (const auto& e : compiled_entries())
        if (e.t == target::unknown || cpu_supports(e.t)) v.push_back(e.t);
    return v;
}

inline bool parse_target(std::string_view s, target& out) noexcept {
    std::string low;
    for (char ch : s) low.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
    for (int i = 0; i <= static_cast<int>(target::unknown); ++i) {
        std::string name = target_name(static_cast<target>(i));
        for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        if (name == low) {
            out = static_cast<target>(i);
            return true;
        }
    }
    return false;
}

struct dispatch_state {
    std::atomic<const kernel_table*> table;
    std::atomic<target> current;

    dispatch_state() {
        const std::vector<target> av = available();
        target best = av.empty() ? compiled_entries().data[0].t : av.front();
        if (const char* env = std::getenv("GRAFT_SIMD_TARGET"); env != nullptr && *env != '\0') {
            target want{};
            bool ok = parse_target(env, want);
            if (ok) {
                ok = false;
                for (target t : av) ok = ok || t == want;
            }
            if (ok) {
                best = want;
            } else {
                std::fprintf(stderr, "graft: ignoring GRAFT_SIMD_TARGET=%s (not compiled or not supported); using %s\n",
                             env, target_name(best));
            }
        }
        table.store(find_compiled(best), std::memory_order_relaxed);
        current.store(best, std::memory_order_relaxed);
    }
};

inline dispatch_state& state() {
    static dispatch_state s;
    return s;
}

inline const kernel_table& active() noexcept { return *state().table.load(std::memory_order_relaxed); }

}  // namespace detail

/// Targets compiled into this program, best first (whether or not the CPU supports them).
inline std::vector<target> compiled_targets() {
    std::vector<target> v;
    for (const auto& e : detail::compiled_entries()) v.push_back(e.t);
    return v;
}

/// Targets that are compiled AND supported by this CPU, best first.
inline std::vector<target> available_targets() { return detail::available(); }

/// The target kernels currently dispatch to.
inline target current_target() { return detail::state().current.load(std::memory_order_relaxed); }

/// Dispatch all kernels to `t` from now on (process-wide). Throws graft::error, leaving
/// the current target unchanged, if `t` is not compiled in or not supported by the CPU.
inline void set_target(target t) {
    detail::dispatch_state& s = detail::state();
    const detail::kernel_table* tab = detail::find_compiled(t);
    if (tab == nullptr)
        throw graft::error(std::string("graft::kernels::set_target: target ") + target_name(t) +
                           " is not compiled into this program");
    if (t != target::unknown && !detail::cpu_supports(t))
        throw graft::error(std::string("graft::kernels::set_target: target ") + target_name(t) +
                           " is not supported by this CPU");
    s.table.store(tab, std::memory_order_relaxed);
    s.current.store(t, std::memory_order_relaxed);
}

// ------------------------------------------------------------------ kernels

inline void unary(unary_op op, const float* a, std::ptrdiff_t sa, float* out, std::size_t n) {
    detail::active().unary_f32(op, a, sa, out, n);
}
inline void unary(unary_op op, const double* a, std::ptrdiff_t sa, double* out, std::size_t n) {
    detail::active().unary_f64(op, a, sa, out, n);
}
inline void binary(binary_op op, const float* a, std::ptrdiff_t sa, const float* b, std::ptrdiff_t sb, float* out,
                   std::size_t n) {
    detail::active().binary_f32(op, a, sa, b, sb, out, n);
}
inline void binary(binary_op op, const double* a, std::ptrdiff_t sa, const double* b, std::ptrdiff_t sb,
                   double* out, std::size_t n) {
    detail::active().binary_f64(op, a, sa, b, sb, out, n);
}
inline void compare(compare_op op, const float* a, std::ptrdiff_t sa, const float* b, std::ptrdiff_t sb, bool* out,
                    std::size_t n) {
    detail::active().compare_f32(op, a, sa, b, sb, out, n);
}
inline void compare(compare_op op, const double* a, std::ptrdiff_t sa, const double* b, std::ptrdiff_t sb,
                    bool* out, std::size_t n) {
    detail::active().compare_f64(op, a, sa, b, sb, out, n);
}
inline void where(const bool* c, std::ptrdiff_t sc, const float* a, std::ptrdiff_t sa, const float* b,
                  std::ptrdiff_t sb, float* out, std::size_t n) {
    detail::active().where_f32(c, sc, a, sa, b, sb, out, n);
}
inline void where(const bool* c, std::ptrdiff_t sc, const double* a, std::ptrdiff_t sa, const double* b,
                  std::ptrdiff_t sb, double* out, std::size_t n) {
    detail::active().where_f64(c, sc, a, sa, b, sb, out, n);
}
/// Contiguous reduction. n == 0: sum → 0; amax/amin require n > 0 (NaN returned otherwise).
inline float reduce(reduce_op op, const float* a, std::size_t n) { return detail::active().reduce_f32(op, a, n); }
inline double reduce(reduce_op op, const double* a, std::size_t n) { return detail::active().reduce_f64(op, a, n); }
/// C[m x n] = A[m x k] * B[k x n], row-major with element leading dimensions; overwrites C.
inline void matmul(const float* a, std::ptrdiff_t lda, const float* b, std::ptrdiff_t ldb, float* c,
                   std::ptrdiff_t ldc, std::size_t m, std::size_t n, std::size_t k) {
    detail::active().matmul_f32(a, lda, b, ldb, c, ldc, m, n, k);
}
inline void matmul(const double* a, std::ptrdiff_t lda, const double* b, std::ptrdiff_t ldb, double* c,
                   std::ptrdiff_t ldc, std::size_t m, std::size_t n, std::size_t k) {
    detail::active().matmul_f64(a, lda, b, ldb, c, ldc, m, n, k);
}
/// Row-wise softmax (log=false) or log_softmax (log=true) over `rows` contiguous rows.
inline void softmax_rows(const float* in, float* out, std::size_t rows, std::size_t cols, bool log) {
    detail::active().softmax_f32(in, out, rows, cols, log);
}
inline void softmax_rows(const double* in, double* out, std::size_t rows, std::size_t cols, bool log) {
    detail::active().softmax_f64(in, out, rows, cols, log);
}

}  // namespace graft::kernels
