// graft/kernels/program-inl.hpp: per-target interpreter of fused elementwise programs
// (graft::kernels::run_program, used by the profiling executor's fusion groups).
// Re-included once per SIMD target through graft/kernels/all-inl.hpp; do not include it
// directly (use graft/kernels/dispatch.hpp).
//
// A program is a list of unary/binary instructions over registers. The loop runs tile by
// tile (program_tile_elements of each register, 512 bytes); every instruction sweeps the tile with the
// same lane functors the eager kernels apply (lanes-inl.hpp), so every element gets the
// bits the unfused ops give it. The whole program runs inside one per-target function: no
// dispatch through the target table and no stride checks per instruction and tile (what made
// the executor's first fusion groups 1.6x slower than the compile-time fused kernel), one
// direct call per instruction and tile to a function made for its op.

#include "graft/kernels/api.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <type_traits>
#include <vector>

#include <hwy/highway.h>
#include "graft/kernels/lanes-inl.hpp"
#include "graft/kernels/reduce-inl.hpp"  // kSumSteps: the eager sum's block

// graft-amalgamate: per-target
#if defined(GRAFT_KERNELS_PROGRAM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GRAFT_KERNELS_PROGRAM_INL_H_
#undef GRAFT_KERNELS_PROGRAM_INL_H_
#else
#define GRAFT_KERNELS_PROGRAM_INL_H_
#endif

HWY_BEFORE_NAMESPACE();
namespace graft {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// out[0, m) = f(a[0, m)) (binary: f(a, b)), m a multiple of the vector length.
template <class D, class F>
HWY_INLINE void sweep_unary_u(D d, const F& f, const hn::TFromD<D>* a, hn::TFromD<D>* out, std::size_t m) {
    const std::size_t N = hn::Lanes(d);
    for (std::size_t j = 0; j < m; j += N) hn::StoreU(f(d, hn::LoadU(d, a + j)), d, out + j);
}
template <class D, class F>
HWY_INLINE void sweep_binary(D d, const F& f, const hn::TFromD<D>* a, const hn::TFromD<D>* b, hn::TFromD<D>* out,
                             std::size_t m) {
    const std::size_t N = hn::Lanes(d);
    for (std::size_t j = 0; j < m; j += N) hn::StoreU(f(d, hn::LoadU(d, a + j), hn::LoadU(d, b + j)), d, out + j);
}

template <class D, class F>
HWY_INLINE void sweep_compare(D d, const F& f, const hn::TFromD<D>* a, const hn::TFromD<D>* b, hn::TFromD<D>* out,
                              std::size_t m) {
    using T = hn::TFromD<D>;
    const std::size_t N = hn::Lanes(d);
    const auto one = hn::Set(d, T(1));
    for (std::size_t j = 0; j < m; j += N) hn::StoreU(hn::IfThenElseZero(f(hn::LoadU(d, a + j), hn::LoadU(d, b + j)), one), d, out + j);
}

// out = cond != 0 ? a : b, a bitwise select (as the eager where kernel). != as in C++ (a NaN
// condition is true): Not(Eq), as Highway's Ne is an ordered comparison on x86.
template <class T>
HWY_INLINE void program_where(const T* cond, const T* a, const T* b, T* out, std::size_t m) {
    const hn::ScalableTag<T> d;
    const std::size_t N = hn::Lanes(d);
    const auto zero = hn::Zero(d);
    for (std::size_t j = 0; j < m; j += N)
        hn::StoreU(hn::IfThenElse(hn::Not(hn::Eq(hn::LoadU(d, cond + j), zero)), hn::LoadU(d, a + j), hn::LoadU(d, b + j)),
                   d, out + j);
}

// dst[0, m) += src[0, m), any m.
template <class T>
HWY_INLINE void add_into(T* dst, const T* src, std::size_t m) {
    const hn::ScalableTag<T> d;
    const std::size_t N = hn::Lanes(d);
    std::size_t j = 0;
    for (; j + N <= m; j += N) hn::StoreU(hn::Add(hn::LoadU(d, dst + j), hn::LoadU(d, src + j)), d, dst + j);
    for (; j < m; ++j) dst[j] = dst[j] + src[j];
}

// The values of elements [pos, pos + count) summed into their columns, in the order of the
// eager column reduction: result = row 0; then each block of column_sum_block_rows rows is
// summed in order into `partial`, which is added to the result after the block's last row.
template <class T>
HWY_NOINLINE void program_sum_rows(const row_sum& rs, const T* v, std::size_t pos, std::size_t count) {
    T* result = static_cast<T*>(rs.result);
    T* partial = static_cast<T*>(rs.partial);
    constexpr std::size_t block = column_sum_block_rows;
    for (std::size_t j = 0; j < count;) {
        const std::size_t e = pos + j, r = e / rs.inner, c = e % rs.inner;
        const std::size_t len = std::min(count - j, rs.inner - c);
        if (r == 0) {
            std::memcpy(result + c, v + j, len * sizeof(T));
        } else {
            if ((r - 1) % block == 0) std::memcpy(partial + c, v + j, len * sizeof(T));
            else add_into(partial + c, v + j, len);
            if (r % block == 0 || r + 1 == rs.rows) add_into(result + c, partial + c, len);
        }
        j += len;
    }
}

template <class T>
HWY_INLINE std::size_t sum_block_elements() {
    return 4 * kSumSteps * hn::Lanes(hn::ScalableTag<T>());
}

// A full_sum's running state over one run: the open block's four vector accumulators (kept
// in memory between tiles), which block is open and how many of its elements are in.
template <class T>
struct total_state {
    T* acc = nullptr;  // 4 vectors
    std::size_t block = 0, in_block = 0;
};

// Adds elements [0, count) of v, the next ones of the run, to a full_sum in the order of the
// eager sum (reduce-inl.hpp's sum_block and sum_pairwise): within a block of 4 * kSumSteps
// vectors, element steps of 4 vectors go to accumulators s0..s3; in the run's last block,
// the whole vectors after its last whole step go to s0 and its last partial vector, padded
// with zeros, to s1; a full block's sum is (s0 + s1) + (s2 + s3) summed over its lanes.
// count is a multiple of the vector length except at the run's end.
template <class T>
HWY_NOINLINE void program_sum_all(const full_sum& fs, total_state<T>& st, const T* v, std::size_t count) {
    const hn::ScalableTag<T> d;
    const std::size_t N = hn::Lanes(d);
    const std::size_t block = sum_block_elements<T>();
    T* block_sums = static_cast<T*>(fs.block_sums);
    auto s0 = hn::LoadU(d, st.acc), s1 = hn::LoadU(d, st.acc + N), s2 = hn::LoadU(d, st.acc + 2 * N),
         s3 = hn::LoadU(d, st.acc + 3 * N);
    for (std::size_t j = 0; j < count;) {
        const std::size_t size = std::min(block, fs.n - st.block * block);  // the open block's elements
        const std::size_t steps_end = size / (4 * N) * (4 * N);
        const std::size_t take = std::min(count - j, size - st.in_block);
        const T* at = v + j - st.in_block;  // at[k]: the block's element k
        std::size_t k = st.in_block;
        const std::size_t stop = k + take;
        // The whole steps (every tile's elements on targets whose step fits a tile).
        if (const std::size_t whole_end = std::min(steps_end, stop); k % (4 * N) == 0)
            for (; k + 4 * N <= whole_end; k += 4 * N) {
                s0 = hn::Add(s0, hn::LoadU(d, at + k));
                s1 = hn::Add(s1, hn::LoadU(d, at + k + N));
                s2 = hn::Add(s2, hn::LoadU(d, at + k + 2 * N));
                s3 = hn::Add(s3, hn::LoadU(d, at + k + 3 * N));
            }
        while (k < stop) {
            if (k < steps_end) {
                // A step split between two calls (tiles shorter than a step): one vector.
                const auto x = hn::LoadU(d, at + k);
                switch ((k / N) % 4) {
                    case 0: s0 = hn::Add(s0, x); break;
                    case 1: s1 = hn::Add(s1, x); break;
                    case 2: s2 = hn::Add(s2, x); break;
                    default: s3 = hn::Add(s3, x); break;
                }
                k += N;
            } else if (k + N <= stop) {
                s0 = hn::Add(s0, hn::LoadU(d, at + k));
                k += N;
            } else {
                HWY_ALIGN T buf[kMaxLanes<T>];
                const std::size_t r = stop - k;
                for (std::size_t e = 0; e < r; ++e) buf[e] = at[k + e];
                for (std::size_t e = r; e < N; ++e) buf[e] = T(0);
                s1 = hn::Add(s1, hn::Load(d, buf));
                k = stop;
            }
        }
        st.in_block = stop;
        j += take;
        if (st.in_block == size) {
            block_sums[st.block++] = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3))));
            st.in_block = 0;
            s0 = s1 = s2 = s3 = hn::Zero(d);
        }
    }
    hn::StoreU(s0, d, st.acc);
    hn::StoreU(s1, d, st.acc + N);
    hn::StoreU(s2, d, st.acc + 2 * N);
    hn::StoreU(s3, d, st.acc + 3 * N);
}

// program_sum_all's common case inline: a tile of whole steps that does not end the open
// block (every tile but a block's last on targets whose step fits a tile).
template <class T>
HWY_INLINE void program_sum_all_tile(const full_sum& fs, total_state<T>& st, const T* v, std::size_t count) {
    const hn::ScalableTag<T> d;
    const std::size_t N = hn::Lanes(d);
    const std::size_t block = sum_block_elements<T>();
    const std::size_t end = st.in_block + count;
    if (st.in_block % (4 * N) != 0 || count % (4 * N) != 0 || end >= block || st.block * block + end >= fs.n) {
        program_sum_all<T>(fs, st, v, count);
        return;
    }
    auto s0 = hn::LoadU(d, st.acc), s1 = hn::LoadU(d, st.acc + N), s2 = hn::LoadU(d, st.acc + 2 * N),
         s3 = hn::LoadU(d, st.acc + 3 * N);
    for (std::size_t k = 0; k < count; k += 4 * N) {
        s0 = hn::Add(s0, hn::LoadU(d, v + k));
        s1 = hn::Add(s1, hn::LoadU(d, v + k + N));
        s2 = hn::Add(s2, hn::LoadU(d, v + k + 2 * N));
        s3 = hn::Add(s3, hn::LoadU(d, v + k + 3 * N));
    }
    hn::StoreU(s0, d, st.acc);
    hn::StoreU(s1, d, st.acc + N);
    hn::StoreU(s2, d, st.acc + 2 * N);
    hn::StoreU(s3, d, st.acc + 3 * N);
    st.in_block = end;
}

// Each instruction runs through a function made for its op, chosen once per run (one
// indirect call per instruction and tile instead of a switch on its kind and op). Cheap ops
// have their full-tile sweep fully unrolled (a constant trip count) besides the general one.
template <class T>
using program_step = void (*)(T* const* cur, const program_instr& in, std::size_t m);

template <class F>
inline constexpr bool unroll_full_tiles = false;
template <> inline constexpr bool unroll_full_tiles<u_neg> = true;
template <> inline constexpr bool unroll_full_tiles<u_abs> = true;
template <> inline constexpr bool unroll_full_tiles<u_relu> = true;
template <> inline constexpr bool unroll_full_tiles<b_add> = true;
template <> inline constexpr bool unroll_full_tiles<b_sub> = true;
template <> inline constexpr bool unroll_full_tiles<b_mul> = true;
template <> inline constexpr bool unroll_full_tiles<b_max> = true;
template <> inline constexpr bool unroll_full_tiles<b_min> = true;

template <class T, class F>
HWY_NOINLINE void step_unary(T* const* cur, const program_instr& in, std::size_t m) {
    const hn::ScalableTag<T> d;
    if constexpr (unroll_full_tiles<F>) {
        if (m == program_tile_elements<T>) return sweep_unary_u(d, F{}, cur[in.a], cur[in.out], program_tile_elements<T>);
    }
    // Two independent vectors per iteration: the long lane math of two vectors overlaps, and
    // the loop's own instructions are paid once per two vectors.
    const std::size_t N = hn::Lanes(d);
    const T* a = cur[in.a];
    T* out = cur[in.out];
    const F f{};
    std::size_t j = 0;
    for (; j + 2 * N <= m; j += 2 * N) {
        const auto v0 = f(d, hn::LoadU(d, a + j));
        const auto v1 = f(d, hn::LoadU(d, a + j + N));
        hn::StoreU(v0, d, out + j);
        hn::StoreU(v1, d, out + j + N);
    }
    if (j < m) hn::StoreU(f(d, hn::LoadU(d, a + j)), d, out + j);
}
template <class T, class F>
HWY_NOINLINE void step_binary(T* const* cur, const program_instr& in, std::size_t m) {
    const hn::ScalableTag<T> d;
    if constexpr (unroll_full_tiles<F>) {
        if (m == program_tile_elements<T>)
            return sweep_binary(d, F{}, cur[in.a], cur[in.b], cur[in.out], program_tile_elements<T>);
    }
    sweep_binary(d, F{}, cur[in.a], cur[in.b], cur[in.out], m);
}
template <class T>
HWY_NOINLINE void step_pow(T* const* cur, const program_instr& in, std::size_t m) {  // scalar libm, as the eager kernel
    const T* a = cur[in.a];
    const T* b = cur[in.b];
    T* out = cur[in.out];
    for (std::size_t j = 0; j < m; ++j) out[j] = pow_value(a[j], b[j]);
}
template <class T, class F>
HWY_NOINLINE void step_compare(T* const* cur, const program_instr& in, std::size_t m) {
    const hn::ScalableTag<T> d;
    if (m == program_tile_elements<T>)
        return sweep_compare(d, F{}, cur[in.a], cur[in.b], cur[in.out], program_tile_elements<T>);
    sweep_compare(d, F{}, cur[in.a], cur[in.b], cur[in.out], m);
}
template <class T>
HWY_NOINLINE void step_where(T* const* cur, const program_instr& in, std::size_t m) {
    if (m == program_tile_elements<T>)
        return program_where<T>(cur[in.a], cur[in.b], cur[in.c], cur[in.out], program_tile_elements<T>);
    program_where<T>(cur[in.a], cur[in.b], cur[in.c], cur[in.out], m);
}

template <class T>
HWY_NOINLINE void step_none(T* const*, const program_instr&, std::size_t) {}  // an op out of range

// The functions by kind, indexed by op (the enums' order, api.hpp).
template <class T>
using gelu_lanes = std::conditional_t<sizeof(T) == 4, u_gelu_f32, u_gelu_f64>;
template <class T>
using normal_cdf_lanes = std::conditional_t<sizeof(T) == 4, u_normal_cdf_f32, u_normal_cdf_f64>;
template <class T>
inline constexpr program_step<T> unary_steps[] = {
    &step_unary<T, u_neg>,  &step_unary<T, u_abs>,     &step_unary<T, u_exp>,       &step_unary<T, u_log>,
    &step_unary<T, u_sqrt>, &step_unary<T, u_rsqrt>,   &step_unary<T, u_tanh>,      &step_unary<T, u_sigmoid>,
    &step_unary<T, u_relu>, &step_unary<T, gelu_lanes<T>>, &step_unary<T, u_gelu_tanh>,
    &step_unary<T, normal_cdf_lanes<T>>, &step_unary<T, u_sin>, &step_unary<T, u_cos>,
    &step_unary<T, u_log1p>, &step_unary<T, u_expm1>};
template <class T>
inline constexpr program_step<T> binary_steps[] = {&step_binary<T, b_add>, &step_binary<T, b_sub>, &step_binary<T, b_mul>,
                                                   &step_binary<T, b_div>, &step_pow<T>,           &step_binary<T, b_max>,
                                                   &step_binary<T, b_min>};
template <class T>
inline constexpr program_step<T> compare_steps[] = {&step_compare<T, c_eq>, &step_compare<T, c_ne>, &step_compare<T, c_lt>,
                                                    &step_compare<T, c_le>, &step_compare<T, c_gt>, &step_compare<T, c_ge>};
static_assert(std::size(unary_steps<float>) == static_cast<std::size_t>(unary_op::expm1) + 1);
static_assert(std::size(binary_steps<float>) == static_cast<std::size_t>(binary_op::minimum) + 1);
static_assert(std::size(compare_steps<float>) == static_cast<std::size_t>(compare_op::ge) + 1);

// Two adjacent arithmetic instructions run as one sweep when the first one's result is a
// temporary that only the second reads: out = op2(op1(a, b), c) (or op2(c, op1(a, b))), the
// intermediate kept in a register instead of a tile. The bits are the two ops' own: the
// empty asm keeps the compiler from contracting a multiply and an add into an FMA (which
// separate sweeps never do). Only where that barrier is written (x86, GCC and clang).
#if HWY_ARCH_X86 && (defined(__GNUC__) || defined(__clang__))
inline constexpr bool can_pair_steps = true;
template <class V>
HWY_INLINE V keep_rounded(V v) {
    asm("" : "+x"(v.raw));
    return v;
}
#else
inline constexpr bool can_pair_steps = false;
template <class V>
HWY_INLINE V keep_rounded(V v) {
    return v;
}
#endif

// Where the second op of a pair reads the intermediate: its left operand, its right one, or
// both (a square such as (a - b)^2 in a loss or a variance, with F2 = mul).
enum class pair_side { right, left, both };

template <class T, class F1, class F2, pair_side side>
HWY_NOINLINE void step_pair(T* const* cur, const program_instr& first, std::size_t m) {
    const program_instr& second = (&first)[1];
    const hn::ScalableTag<T> d;
    const std::size_t N = hn::Lanes(d);
    const T* a = cur[first.a];
    const T* b = cur[first.b];
    const T* c = cur[side == pair_side::left ? second.b : second.a];  // unread for both
    T* out = cur[second.out];
    const auto one = [&](std::size_t j) {
        const auto v = keep_rounded(F1{}(d, hn::LoadU(d, a + j), hn::LoadU(d, b + j)));
        if constexpr (side == pair_side::both) {
            hn::StoreU(F2{}(d, v, v), d, out + j);
        } else {
            const auto o = hn::LoadU(d, c + j);
            hn::StoreU(side == pair_side::left ? F2{}(d, v, o) : F2{}(d, o, v), d, out + j);
        }
    };
    if (m == program_tile_elements<T>) {
        for (std::size_t j = 0; j < program_tile_elements<T>; j += N) one(j);
    } else {
        for (std::size_t j = 0; j < m; j += N) one(j);
    }
}

// Squares, by first op (add, sub, mul).
template <class T>
inline constexpr program_step<T> square_steps[3] = {&step_pair<T, b_add, b_mul, pair_side::both>,
                                                    &step_pair<T, b_sub, b_mul, pair_side::both>,
                                                    &step_pair<T, b_mul, b_mul, pair_side::both>};

// By first op, second op (add, sub, mul: binary_op's first three) and the intermediate's side.
template <class T, class F1>
inline constexpr program_step<T> pair_steps_after[3][2] = {
    {&step_pair<T, F1, b_add, pair_side::right>, &step_pair<T, F1, b_add, pair_side::left>},
    {&step_pair<T, F1, b_sub, pair_side::right>, &step_pair<T, F1, b_sub, pair_side::left>},
    {&step_pair<T, F1, b_mul, pair_side::right>, &step_pair<T, F1, b_mul, pair_side::left>}};
template <class T>
inline constexpr const program_step<T> (*pair_steps[3])[2] = {pair_steps_after<T, b_add>, pair_steps_after<T, b_sub>,
                                                               pair_steps_after<T, b_mul>};
static_assert(static_cast<int>(binary_op::add) == 0 && static_cast<int>(binary_op::sub) == 1 &&
              static_cast<int>(binary_op::mul) == 2);

// The function of an instruction; null for sum_rows and sum_all (which need the tile's
// position and the run's state).
template <class T>
HWY_INLINE program_step<T> step_of(const program_instr& in) {
    const auto pick = [&in](const auto& steps) {
        return in.op < std::size(steps) ? steps[in.op] : &step_none<T>;
    };
    switch (in.kind) {
        case instr_kind::unary: return pick(unary_steps<T>);
        case instr_kind::binary: return pick(binary_steps<T>);
        case instr_kind::compare: return pick(compare_steps<T>);
        case instr_kind::where: return &step_where<T>;
        default: return nullptr;  // sum_rows, sum_all
    }
}

template <class T>
HWY_INLINE void run_program_tiles(const program& p, T* const* base, T* scratch, std::size_t begin, std::size_t end,
                                  total_state<T>* totals) {
    const hn::ScalableTag<T> d;
    const std::size_t N = hn::Lanes(d);
    constexpr std::size_t tile = program_tile_elements<T>;
    // Register r's tile is scratch + r * program_scratch_stride<T>: temporaries live there; broadcast registers
    // hold their value splatted over it; contiguous registers use it for the last partial tile.
    constexpr std::size_t max_regs = program_max_registers;
    T* cur[max_regs];
    // Broadcast values fill as much of their tile as any sweep reads.
    const std::size_t span = end - begin < tile ? (end - begin + N - 1) / N * N : tile;
    // Arrays (contiguous, output) in place from `begin` (used as is when everything is one run
    // of whole vectors, below); the others on their scratch tile.
    bool rows = false;
    for (std::size_t r = 0; r < p.num_registers; ++r) {
        T* mine = scratch + r * program_scratch_stride<T>;
        switch (p.mode[r]) {
            case operand_mode::contiguous:
            case operand_mode::output: cur[r] = base[r] + begin; break;
            case operand_mode::broadcast: {
                const T v = base[r][0];
                for (std::size_t j = 0; j < span; ++j) mine[j] = v;
                cur[r] = mine;
                break;
            }
            case operand_mode::row: rows = true; cur[r] = mine; break;
            case operand_mode::temp: cur[r] = mine; break;
        }
    }
    // The reductions (no step function): their `valid` elements of register a at element `pos`.
    const auto reduce = [&](const program_instr& in, std::size_t pos, std::size_t valid) {
        if (in.kind == instr_kind::sum_rows) program_sum_rows<T>(p.reductions[in.out], cur[in.a], pos, valid);
        else if (in.kind == instr_kind::sum_all && totals != nullptr)
            program_sum_all_tile<T>(p.totals[in.out], totals[in.out], cur[in.a], valid);
        // (any other kind, in a hand-made program, does nothing)
    };
    // Every instruction over m elements from element `pos` on (`valid` of them real), each
    // decoded as it runs.
    const auto run_undecoded = [&](std::size_t pos, std::size_t m, std::size_t valid) {
        for (std::size_t k = 0; k < p.num_instructions; ++k) {
            const program_instr& in = p.code[k];
            if (const program_step<T> f = step_of<T>(in)) f(cur, in, m);
            else reduce(in, pos, valid);
        }
    };
    if (!rows && end - begin <= tile && (end - begin) % N == 0) {
        // Small runs of whole vectors (the per-call path of small graphs): one sweep, in place.
        if (end > begin) run_undecoded(begin, end - begin, end - begin);
        return;
    }
    // The run's steps: each instruction's function (null: sum_rows, run with the tile's
    // position) and its instruction, or a pair's function and its first instruction; with more
    // than max_steps instructions every tile decodes them one by one instead.
    constexpr std::size_t max_steps = 64;
    program_step<T> step_fn[max_steps];
    const program_instr* step_in[max_steps];
    std::size_t n_steps = 0;
    bool plain = p.num_instructions <= max_steps;  // every step decoded, no reductions
    if (plain) {
        // How often each register is read (0, 1, 2 or more), for pairs.
        std::uint8_t reads[max_regs];
        constexpr bool pairs = can_pair_steps;
        if (pairs) {
            std::fill(reads, reads + p.num_registers, std::uint8_t{0});
            const auto read = [&reads](std::uint16_t r) { reads[r] = static_cast<std::uint8_t>(reads[r] < 3 ? reads[r] + 1 : 3); };
            for (std::size_t k = 0; k < p.num_instructions; ++k) {
                const program_instr& in = p.code[k];
                read(in.a);
                if (in.kind == instr_kind::binary || in.kind == instr_kind::compare || in.kind == instr_kind::where) read(in.b);
                if (in.kind == instr_kind::where) read(in.c);
            }
        }
        const auto arithmetic = [](const program_instr& in) {
            return in.kind == instr_kind::binary && in.op <= static_cast<std::uint8_t>(binary_op::mul);
        };
        for (std::size_t k = 0; k < p.num_instructions; ++k) {
            const program_instr& in = p.code[k];
            step_in[n_steps] = &in;
            if (pairs && k + 1 < p.num_instructions && arithmetic(in) && arithmetic(p.code[k + 1]) &&
                p.mode[in.out] == operand_mode::temp) {
                const program_instr& next = p.code[k + 1];
                if (reads[in.out] == 1 && (next.a == in.out) != (next.b == in.out)) {
                    step_fn[n_steps++] = pair_steps<T>[in.op][next.op][next.a == in.out ? 1 : 0];
                    ++k;
                    continue;
                }
                if (reads[in.out] == 2 && next.a == in.out && next.b == in.out &&
                    next.op == static_cast<std::uint8_t>(binary_op::mul)) {
                    step_fn[n_steps++] = square_steps<T>[in.op];
                    ++k;
                    continue;
                }
            }
            if (!(step_fn[n_steps++] = step_of<T>(in))) plain = false;
        }
    }
    // m elements (a multiple of N) of every register from element `pos` on, of which `valid`
    // are real (the last partial vector's padding lanes are never stored or summed).
    const auto run_tile = [&](std::size_t pos, std::size_t m, std::size_t valid) {
        if (plain) {
            for (std::size_t k = 0; k < n_steps; ++k) step_fn[k](cur, *step_in[k], m);
            return;
        }
        if (n_steps > 0) {  // decoded, with reductions
            for (std::size_t k = 0; k < n_steps; ++k) {
                const program_instr& in = *step_in[k];
                if (step_fn[k]) step_fn[k](cur, in, m);
                else reduce(in, pos, valid);
            }
            return;
        }
        run_undecoded(pos, m, valid);
    };
    // The registers that move with the loop, listed once: arrays read or written in place
    // (contiguous, output) and rows read at i % period; the others stay on their scratch tile.
    std::uint16_t in_place[max_regs], row_regs[max_regs];
    std::size_t n_in_place = 0, n_rows = 0;
    for (std::size_t r = 0; r < p.num_registers; ++r) {
        if (p.mode[r] == operand_mode::contiguous || p.mode[r] == operand_mode::output)
            in_place[n_in_place++] = static_cast<std::uint16_t>(r);
        else if (p.mode[r] == operand_mode::row)
            row_regs[n_rows++] = static_cast<std::uint16_t>(r);
    }
    // Rows: the offset i % period kept up to date as i moves by whole tiles (no division per tile).
    std::size_t row_offset[max_regs], row_advance[max_regs];
    for (std::size_t k = 0; k < n_rows; ++k) {
        row_offset[k] = begin % p.period[row_regs[k]];
        row_advance[k] = tile % p.period[row_regs[k]];
    }
    // Points the moving registers at the next tile (i = begin, begin + tile, ... in order):
    // arrays in place start at `begin` (above) and step by a tile after the first.
    bool first_tile = true;
    const auto next_tile = [&] {
        if (!first_tile)
            for (std::size_t k = 0; k < n_in_place; ++k) cur[in_place[k]] += tile;
        first_tile = false;
        for (std::size_t k = 0; k < n_rows; ++k) {
            const std::size_t r = row_regs[k];
            cur[r] = base[r] + row_offset[k];
            row_offset[k] += row_advance[k];
            if (row_offset[k] >= p.period[r]) row_offset[k] -= p.period[r];
        }
    };
    std::size_t i = begin;
    for (; i + tile <= end; i += tile) {
        next_tile();
        run_tile(i, tile, tile);
    }
    if (i < end) {
        // Last partial tile: whole vectors in place, then the last partial vector (if any)
        // through the registers' scratch tiles, padded with ones (padding lanes are never stored).
        const std::size_t whole = (end - i) / N * N;
        if (whole > 0) {
            next_tile();
            run_tile(i, whole, whole);
            i += whole;
        }
        const std::size_t n = end - i;
        if (n > 0) {
            for (std::size_t r = 0; r < p.num_registers; ++r)
                if (p.mode[r] == operand_mode::contiguous || p.mode[r] == operand_mode::row) {
                    const T* src = p.mode[r] == operand_mode::row ? base[r] + i % p.period[r] : base[r] + i;
                    cur[r] = scratch + r * program_scratch_stride<T>;
                    for (std::size_t j = 0; j < n; ++j) cur[r][j] = src[j];
                    for (std::size_t j = n; j < N; ++j) cur[r][j] = T(1);
                } else if (p.mode[r] == operand_mode::output) {
                    cur[r] = scratch + r * program_scratch_stride<T>;
                }
            run_tile(i, N, n);
            for (std::size_t r = 0; r < p.num_registers; ++r)
                if (p.mode[r] == operand_mode::output)
                    for (std::size_t j = 0; j < n; ++j) base[r][i + j] = cur[r][j];
        }
    }
}

// A program with full sums (kept apart from the plain path, whose per-call cost it would raise).
template <class T>
HWY_NOINLINE void run_program_with_totals(const program& p, T* const* base, T* scratch, std::size_t begin,
                                          std::size_t end) {
    // Full sums: their accumulators live through the run, which starts at a block boundary and
    // writes the sums of the blocks it covers (finish_full_sum combines them).
    std::size_t n_totals = 0;
    for (std::size_t k = 0; k < p.num_instructions; ++k)
        if (p.code[k].kind == instr_kind::sum_all) n_totals = std::max<std::size_t>(n_totals, p.code[k].out + 1u);
    const std::size_t N = hn::Lanes(hn::ScalableTag<T>());
    const std::size_t block = sum_block_elements<T>();
    bool misuse = begin % block != 0;
    for (std::size_t t = 0; t < n_totals; ++t) misuse = misuse || p.totals[t].block != block;
    if (misuse) {
        // Not this target's blocks, or a run starting inside one: the results are NaN.
        for (std::size_t t = 0; t < n_totals; ++t) {
            const std::size_t at = std::min(begin / block, full_sum_scratch_elements(p.totals[t].n) - 1);
            static_cast<T*>(p.totals[t].block_sums)[at] = std::numeric_limits<T>::quiet_NaN();
        }
        return;
    }
    // Accumulators on the stack for a few sums (a run per thread chunk: no heap allocation).
    constexpr std::size_t local_totals = 8, local_elements = 512;
    T acc_local[local_elements];
    total_state<T> states_local[local_totals];
    std::vector<T> acc_heap;
    std::vector<total_state<T>> states_heap;
    T* acc = acc_local;
    total_state<T>* states = states_local;
    if (n_totals > local_totals || n_totals * 4 * N > local_elements) {
        acc_heap.resize(n_totals * 4 * N);
        states_heap.resize(n_totals);
        acc = acc_heap.data();
        states = states_heap.data();
    }
    std::fill(acc, acc + n_totals * 4 * N, T(0));
    for (std::size_t t = 0; t < n_totals; ++t) {
        states[t].acc = acc + t * 4 * N;
        states[t].block = begin / block;
        states[t].in_block = 0;
    }
    run_program_tiles<T>(p, base, scratch, begin, end, states);
}

template <class T>
HWY_INLINE void run_program_impl(const program& p, T* const* base, T* scratch, std::size_t begin, std::size_t end) {
    if (p.totals != nullptr) return run_program_with_totals<T>(p, base, scratch, begin, end);
    run_program_tiles<T>(p, base, scratch, begin, end, nullptr);
}

inline void run_program_f32(const program& p, float* const* base, float* scratch, std::size_t begin, std::size_t end) {
    run_program_impl<float>(p, base, scratch, begin, end);
}
inline void run_program_f64(const program& p, double* const* base, double* scratch, std::size_t begin,
                            std::size_t end) {
    run_program_impl<double>(p, base, scratch, begin, end);
}

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace graft
HWY_AFTER_NAMESPACE();

#endif  // toggle guard
