#pragma once
// graft/kernels/api.hpp: types shared by the dispatcher (graft/kernels/dispatch.hpp)
// and the per-target kernels (graft/kernels/*-inl.hpp). No Highway here.
//
// Include graft/kernels/dispatch.hpp to use the kernels; this header alone only
// declares the enums and the per-target function table.

#include "graft/config.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <limits>
#include <memory>
#include <new>

namespace graft::kernels {

/// Floating-point pow as PyTorch computes x ** number on the CPU: the exponents 0.5, -0.5, 2, 3,
/// -1 and -2 are sqrt(x), 1 / sqrt(x), x*x, x*x*x, 1 / x and 1 / (x*x) (so pow(-inf, 0.5) is
/// NaN and pow(-0, 0.5) is -0, where IEEE pow gives inf and +0); any other exponent is
/// std::pow. graft applies it to every exponent, tensor ones included (PyTorch uses std::pow
/// for a tensor exponent): one definition for eager kernels, fused programs and compile-time
/// graphs, whichever way an exponent reaches them.
template <class T>
[[nodiscard]] inline T pow_value(T a, T b) {
    if (b == T(0.5)) return std::sqrt(a);
    if (b == T(-0.5)) return T(1) / std::sqrt(a);
    if (b == T(2)) return a * a;
    if (b == T(3)) return a * a * a;
    if (b == T(-1)) return T(1) / a;
    if (b == T(-2)) return T(1) / (a * a);
    return std::pow(a, b);
}

// normal_cdf: the standard normal CDF, 0.5*erfc(-x/sqrt(2)) (GELU's derivative's main term).
// log1p: log(1+x); expm1: exp(x)-1 (both accurate near x = 0, where the plain forms cancel).
enum class unary_op : int { neg, abs, exp, log, sqrt, rsqrt, tanh, sigmoid, relu, gelu, gelu_tanh, normal_cdf, sin, cos, log1p, expm1 };
enum class binary_op : int { add, sub, mul, div, pow, maximum, minimum };
enum class compare_op : int { eq, ne, lt, le, gt, ge };
enum class reduce_op : int { sum, amax, amin };

/// A SIMD instruction-set target graft may have compiled kernels for.
/// Values are graft's own (stable), not Highway's target bits.
enum class target : int {
    scalar = 0,  // Highway HWY_SCALAR: one lane, portable C++
    emu128,      // Highway HWY_EMU128: portable 128-bit emulation
    ssse3,
    sse4,
    avx2,
    avx3,        // AVX-512 F/BW/DQ/VL
    avx3_dl,     // AVX-512 + VNNI/VBMI2/... (Ice Lake)
    neon,
    sve,
    sve2,
    wasm,
    rvv,
    unknown,
};

/// How a register of a fused elementwise program is addressed (run_program).
enum class operand_mode : std::uint8_t {
    contiguous,  // base[r] + i: an input array
    broadcast,   // base[r][0]: one value for every element
    temp,        // an intermediate: lives in the register's scratch tile only
    output,      // base[r] + i: an array the program writes (and may read back)
    row,         // base[r] + i % period[r]: a row broadcast over the leading dimensions (a bias);
                 // base[r] holds the row followed by its first program_tile_elements repeated
};

/// What a program instruction computes.
enum class instr_kind : std::uint8_t {
    unary,    // out = op(a)                        (op: unary_op)
    binary,   // out = op(a, b)                     (op: binary_op)
    compare,  // out = op(a, b) ? 1 : 0             (op: compare_op; a condition register)
    where,    // out = a != 0 ? b : c, bitwise      (a: a condition register)
    sum_rows, // program.reductions[out] += register a, summed over the leading dimensions
    sum_all,  // program.totals[out] = every element of register a summed (or their mean)
};

/// Rows summed per partial sum by the column reduction (graft::sum over leading dimensions
/// of a contiguous tensor): the first row, then blocks of this many rows each summed in
/// order into a partial that is added to the result. Shared by the eager kernel and the
/// fused programs' sum_rows epilogue so that both give the same bits.
inline constexpr std::size_t column_sum_block_rows = 256;

/// A sum over the leading dimensions computed by a program (instr_kind::sum_rows): the
/// values at element i go to column i % inner of a result of `inner` elements, summed over
/// `rows` rows in the column reduction's order (column_sum_block_rows).
struct row_sum {
    void* result = nullptr;   // inner elements of the program's type
    void* partial = nullptr;  // inner elements of scratch
    std::size_t inner = 0, rows = 0;
};

/// A full reduction computed by a program (instr_kind::sum_all): every element of a register
/// summed in the order of the eager sum kernel (graft::sum of a contiguous tensor: blocks of
/// `block` elements, 4 vectors x 32 steps, each summed with four vector accumulators, the block
/// sums combined pairwise), so that both give the same bits. A run writes the sums of the
/// blocks it covers; every call must start at a block boundary (threads may take whole blocks
/// each: a misaligned call poisons its block with NaN); once all n elements are in,
/// finish_full_sum writes the result.
struct full_sum {
    void* result = nullptr;      // one element of the program's type
    void* block_sums = nullptr;  // full_sum_scratch_elements(n) elements of the program's type
    std::size_t n = 0;           // the elements of the program's run
    std::size_t block = 0;       // elements per block: sum_block_elements<T>() of the running target
    double divisor = 0;          // mean: the sum divided by T(divisor) (as graft::mean); 0: the sum
};
/// Scratch elements a full_sum over n elements needs (one per block; a block holds at least
/// 128 elements on every target).
[[nodiscard]] inline constexpr std::size_t full_sum_scratch_elements(std::size_t n) { return n / 128 + 1; }

namespace detail {
template <class T>
T combine_block_sums(const T* block_sums, std::size_t first, std::size_t count) {
    if (count == 1) return block_sums[first];
    const std::size_t left = count / 2;  // as the eager sum splits its blocks
    return combine_block_sums(block_sums, first, left) + combine_block_sums(block_sums, first + left, count - left);
}
}  // namespace detail

/// Writes a full_sum's result from its block sums (all written): combined pairwise as the
/// eager sum does, then divided by T(divisor) for a mean.
template <class T>
void finish_full_sum(const full_sum& fs) {
    const std::size_t blocks = fs.block == 0 ? 0 : (fs.n + fs.block - 1) / fs.block;
    T s = blocks == 0 ? T(0) : detail::combine_block_sums(static_cast<const T*>(fs.block_sums), 0, blocks);
    if (fs.divisor > 0) s = s / static_cast<T>(fs.divisor);
    *static_cast<T*>(fs.result) = s;
}

/// One instruction of a fused elementwise program. Conditions (compare results) live in
/// registers as the values 1 and 0 of the program's type.
struct program_instr {
    instr_kind kind = instr_kind::unary;
    std::uint8_t op = 0;  // unary_op, binary_op or compare_op
    std::uint16_t a = 0, b = 0, c = 0, out = 0;
};

/// A fused elementwise program: the per-register addressing and the instructions.
struct program {
    const program_instr* code = nullptr;
    std::size_t num_instructions = 0;
    const operand_mode* mode = nullptr;  // per register
    std::size_t num_registers = 0;        // at most program_max_registers
    const std::size_t* period = nullptr;  // per register: the row length (row registers only)
    row_sum* reductions = nullptr;        // sum_rows targets (a program with any runs on one thread,
                                          // over all its elements in order)
    full_sum* totals = nullptr;           // sum_all targets (calls start at their block boundaries)
};

/// Registers a program may use, and the tile each instruction sweeps: 512 bytes of a
/// register, so every register's tile stays in L1 (measured on Zen 4 with the chain of
/// bench_jit: 256-byte tiles ran it 1.3x slower, 1024- and 2048-byte tiles 1.2x and 1.6x).
inline constexpr std::size_t program_max_registers = 256;
template <class T>
inline constexpr std::size_t program_tile_elements = 512 / sizeof(T);
/// Distance between two registers' scratch tiles: a tile plus one cache line, so that
/// registers do not sit at multiples of 4 KiB from each other (4K aliasing stalls loads
/// behind unrelated stores).
template <class T>
inline constexpr std::size_t program_scratch_stride = program_tile_elements<T> + 64 / sizeof(T);

/// Scalars of one fused SGD step (graft::optim::SGD; the per-element update is written out in
/// graft/kernels/optim-inl.hpp). `first`: the momentum buffer is new and is set to the gradient.
struct sgd_args {
    double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
    bool nesterov = false, maximize = false, first = false;
};

/// Scalars of one fused Adam / AdamW step (graft::optim::Adam, AdamW), with the step's bias
/// corrections already folded in: step_size = lr / (1 - beta1^t),
/// bias_correction2_sqrt = sqrt(1 - beta2^t). `decoupled`: AdamW's decay of the parameter.
struct adam_args {
    double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
    double step_size = 0, bias_correction2_sqrt = 1;
    bool decoupled = false, amsgrad = false, maximize = false;
};

namespace detail {

/// One compiled target's entry points. Every per-target namespace
/// (graft::kernels::N_AVX3, ...) defines `inline constexpr kernel_table table`.
struct kernel_table {
    void (*unary_f32)(unary_op, const float*, std::ptrdiff_t, float*, std::size_t);
    void (*unary_f64)(unary_op, const double*, std::ptrdiff_t, double*, std::size_t);
    void (*binary_f32)(binary_op, const float*, std::ptrdiff_t, const float*, std::ptrdiff_t, float*, std::size_t);
    void (*binary_f64)(binary_op, const double*, std::ptrdiff_t, const double*, std::ptrdiff_t, double*, std::size_t);
    void (*compare_f32)(compare_op, const float*, std::ptrdiff_t, const float*, std::ptrdiff_t, bool*, std::size_t);
    void (*compare_f64)(compare_op, const double*, std::ptrdiff_t, const double*, std::ptrdiff_t, bool*, std::size_t);
    void (*where_f32)(const bool*, std::ptrdiff_t, const float*, std::ptrdiff_t, const float*, std::ptrdiff_t, float*, std::size_t);
    void (*where_f64)(const bool*, std::ptrdiff_t, const double*, std::ptrdiff_t, const double*, std::ptrdiff_t, double*, std::size_t);
    float (*reduce_f32)(reduce_op, const float*, std::size_t);
    double (*reduce_f64)(reduce_op, const double*, std::size_t);
    // A and B with row and column strides (a transposed operand needs no copy).
    void (*matmul_f32)(const float*, std::ptrdiff_t, std::ptrdiff_t, const float*, std::ptrdiff_t, std::ptrdiff_t, float*,
                       std::ptrdiff_t, std::size_t, std::size_t, std::size_t);
    void (*matmul_f64)(const double*, std::ptrdiff_t, std::ptrdiff_t, const double*, std::ptrdiff_t, std::ptrdiff_t,
                       double*, std::ptrdiff_t, std::size_t, std::size_t, std::size_t);
    void (*softmax_f32)(const float*, float*, std::size_t, std::size_t, bool);
    void (*softmax_f64)(const double*, double*, std::size_t, std::size_t, bool);
    void (*run_program_f32)(const program&, float* const*, float*, std::size_t, std::size_t);
    void (*run_program_f64)(const program&, double* const*, double*, std::size_t, std::size_t);
    // Fused optimizer steps: param, grad and state read and written in one pass.
    void (*sgd_f32)(const sgd_args&, float*, const float*, float*, std::size_t);
    void (*sgd_f64)(const sgd_args&, double*, const double*, double*, std::size_t);
    void (*adam_f32)(const adam_args&, float*, const float*, float*, float*, float*, std::size_t);
    void (*adam_f64)(const adam_args&, double*, const double*, double*, double*, double*, std::size_t);
    // Elements per block of the sum kernel (and of a program's full sums).
    std::size_t (*sum_block_f32)();
    std::size_t (*sum_block_f64)();
};

struct aligned_free {
    void operator()(void* p) const noexcept { ::operator delete(p, std::align_val_t{64}); }
};

/// Per-thread scratch memory (64-byte aligned) reused by kernels such as matmul's
/// packing buffers. The pointer is valid until the next call on the same thread.
inline void* scratch(std::size_t bytes) {
    thread_local std::unique_ptr<void, aligned_free> buf;
    thread_local std::size_t cap = 0;
    if (bytes > cap) {
        buf.reset();
        cap = 0;
        buf.reset(::operator new(bytes, std::align_val_t{64}));
        cap = bytes;
    }
    return buf.get();
}

}  // namespace detail
}  // namespace graft::kernels
