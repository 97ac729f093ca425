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
#include <cstddef>
#include <iterator>
#include <string_view>
#include <type_traits>
#include <vector>

#include "graft/core/error.hpp"
#include "graft/kernels/api.hpp"

// The per-target Highway pass: only where the kernels are compiled (header-only mode, or
// the library TU in compiled mode). Elsewhere this header needs no Highway header at all.
#include "graft/kernels/simd.hpp"

namespace graft::kernels {

/// Human-readable name of a target: "AVX3", "AVX2", "SSE4", "SCALAR", ...
GRAFT_INLINE const char* target_name(target t) noexcept;

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

GRAFT_INLINE const kernel_table* find_compiled(target t) noexcept;

/// Whether the running CPU (and OS) supports target t.
GRAFT_INLINE bool cpu_supports(target t) noexcept;

GRAFT_INLINE std::vector<target> available();

GRAFT_INLINE bool parse_target(std::string_view s, target& out) noexcept;

struct dispatch_state {
    std::atomic<const kernel_table*> table;
    std::atomic<target> current;

    dispatch_state();
};

GRAFT_INLINE dispatch_state& state();

inline const kernel_table& active() noexcept { return *state().table.load(std::memory_order_relaxed); }

}  // namespace detail

/// Targets compiled into this program, best first (whether or not the CPU supports them).
GRAFT_INLINE std::vector<target> compiled_targets();

/// Targets that are compiled AND supported by this CPU, best first.
GRAFT_INLINE std::vector<target> available_targets();

/// The target kernels currently dispatch to.
GRAFT_INLINE target current_target();

/// Dispatch all kernels to `t` from now on (process-wide). Throws graft::error, leaving
/// the current target unchanged, if `t` is not compiled in or not supported by the CPU.
GRAFT_INLINE void set_target(target t);

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
    detail::active().matmul_f32(a, lda, 1, b, ldb, 1, c, ldc, m, n, k);
}
inline void matmul(const double* a, std::ptrdiff_t lda, const double* b, std::ptrdiff_t ldb, double* c,
                   std::ptrdiff_t ldc, std::size_t m, std::size_t n, std::size_t k) {
    detail::active().matmul_f64(a, lda, 1, b, ldb, 1, c, ldc, m, n, k);
}
/// The same with element strides for A's and B's rows and columns: A(i, p) = a[i*rsa + p*csa],
/// B(p, j) = b[p*rsb + j*csb] (a transposed operand is read in place, packed once per block
/// like any other). C is row-major with leading dimension ldc. Results are bitwise those of
/// the contiguous form for the same values.
inline void matmul(const float* a, std::ptrdiff_t rsa, std::ptrdiff_t csa, const float* b, std::ptrdiff_t rsb,
                   std::ptrdiff_t csb, float* c, std::ptrdiff_t ldc, std::size_t m, std::size_t n, std::size_t k) {
    detail::active().matmul_f32(a, rsa, csa, b, rsb, csb, c, ldc, m, n, k);
}
inline void matmul(const double* a, std::ptrdiff_t rsa, std::ptrdiff_t csa, const double* b, std::ptrdiff_t rsb,
                   std::ptrdiff_t csb, double* c, std::ptrdiff_t ldc, std::size_t m, std::size_t n, std::size_t k) {
    detail::active().matmul_f64(a, rsa, csa, b, rsb, csb, c, ldc, m, n, k);
}
/// Row-wise softmax (log=false) or log_softmax (log=true) over `rows` contiguous rows.
inline void softmax_rows(const float* in, float* out, std::size_t rows, std::size_t cols, bool log) {
    detail::active().softmax_f32(in, out, rows, cols, log);
}
inline void softmax_rows(const double* in, double* out, std::size_t rows, std::size_t cols, bool log) {
    detail::active().softmax_f64(in, out, rows, cols, log);
}

/// Elements per block of the sum kernel on the active target (a program's full sums split
/// their runs at multiples of it).
template <class T>
[[nodiscard]] inline std::size_t sum_block_elements() {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
    if constexpr (std::is_same_v<T, float>) return detail::active().sum_block_f32();
    else return detail::active().sum_block_f64();
}

/// Runs a fused elementwise program over elements [begin, end). base[r]: register r's
/// array (contiguous), or its one value (broadcast); unused for temps. scratch: room for
/// program_tile_elements<T> elements per register, reused for every tile (per thread).
/// Every instruction applies the eager kernel's lane math, so results are bitwise those of
/// running the instructions one by one with unary()/binary().
inline void run_program(const program& p, float* const* base, float* scratch, std::size_t begin, std::size_t end) {
    detail::active().run_program_f32(p, base, scratch, begin, end);
}
inline void run_program(const program& p, double* const* base, double* scratch, std::size_t begin,
                        std::size_t end) {
    detail::active().run_program_f64(p, base, scratch, begin, end);
}

/// One fused SGD step over n contiguous elements (graft::optim::SGD): param and the momentum
/// buffer `buf` (unused, may be null, when momentum is 0) are updated in place from grad.
inline void sgd_step(const sgd_args& a, float* param, const float* grad, float* buf, std::size_t n) {
    detail::active().sgd_f32(a, param, grad, buf, n);
}
inline void sgd_step(const sgd_args& a, double* param, const double* grad, double* buf, std::size_t n) {
    detail::active().sgd_f64(a, param, grad, buf, n);
}
/// One fused Adam / AdamW step over n contiguous elements: param, exp_avg, exp_avg_sq and
/// (amsgrad only; may be null otherwise) max_exp_avg_sq are updated in place from grad.
inline void adam_step(const adam_args& a, float* param, const float* grad, float* exp_avg, float* exp_avg_sq,
                      float* max_exp_avg_sq, std::size_t n) {
    detail::active().adam_f32(a, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n);
}
inline void adam_step(const adam_args& a, double* param, const double* grad, double* exp_avg, double* exp_avg_sq,
                      double* max_exp_avg_sq, std::size_t n) {
    detail::active().adam_f64(a, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n);
}

}  // namespace graft::kernels

#if GRAFT_HAS_CODE
#include "graft/kernels/impl/dispatch.ipp"
#endif
