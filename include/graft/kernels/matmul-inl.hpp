// graft/kernels/matmul-inl.hpp: per-target GEMM, C[m x n] = A[m x k] * B[k x n]
// (row-major, element leading dimensions lda/ldb/ldc; C is overwritten).
// Re-included once per target via graft/kernels/all-inl.hpp.
//
// Algorithm (GotoBLAS/BLIS layout, single thread):
//   for each NC-column panel of B, for each KC-deep slice: pack B[kc x nc] into
//   NR-wide column slivers (zero padded); for each MC-row block of A: pack A[mc x kc]
//   into MR-row slivers (zero padded); then an MR x NR register-blocked micro-kernel
//   (NR = NV vectors; broadcast one A element, MulAdd against NV B vectors) updates C.
//   The last, partial sliver of B is packed ceil(w / lanes) vectors wide, not NR: it runs
//   an MR x (fewer vectors) micro-kernel, so n = 128 on AVX3 computes 96 + 32 columns, not
//   144. Edge tiles (rows past m, or a last vector only partly inside n) run the micro-kernel
//   into a stack tile and copy the valid part.
// Numeric contract: each C element is a sum over k of products with FMA, in k order
//   within a KC slice, slices added in order: |error| <= k * eps * sum|a||b| (standard
//   dot-product bound); results do not depend on the target except through FMA vs
//   separate multiply-add on targets without FMA (SCALAR, SSE4).
// k == 0 → C = 0. m == 0 or n == 0 → nothing written.

#include "graft/kernels/api.hpp"

#include <hwy/highway.h>

#include "graft/kernels/elementwise-inl.hpp"

// graft-amalgamate: per-target
#if defined(GRAFT_KERNELS_MATMUL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GRAFT_KERNELS_MATMUL_INL_H_
#undef GRAFT_KERNELS_MATMUL_INL_H_
#else
#define GRAFT_KERNELS_MATMUL_INL_H_
#endif

HWY_BEFORE_NAMESPACE();
namespace graft {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Register blocking per target: MR rows x NV vectors of accumulators.
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
inline constexpr std::size_t kGemmMR = 8;   // 8 x 3 = 24 of 32 zmm accumulators
inline constexpr std::size_t kGemmNV = 3;
#elif HWY_TARGET == HWY_SCALAR || HWY_TARGET == HWY_EMU128
inline constexpr std::size_t kGemmMR = 4;
inline constexpr std::size_t kGemmNV = 4;
#else
inline constexpr std::size_t kGemmMR = 6;   // 6 x 2 = 12 of 16 ymm/xmm accumulators
inline constexpr std::size_t kGemmNV = 2;
#endif
inline constexpr std::size_t kGemmKC = 256;

// The MR x NV register block: C[MR x NV vectors] (+)= A-block * B-sliver over kc.
// A's element (r, p) is pa[r * rs + p * step]: the packed sliver (rs 1, step MR), or A read in
// place (RowStrided: rows rs apart, columns step apart; without RowStrided rs is 1, A's
// columns contiguous, a transposed operand). The sums are the same in every form.
template <std::size_t MR, std::size_t NV, bool RowStrided = false, class D>
HWY_INLINE void gemm_micro(D d, std::size_t kc, const hn::TFromD<D>* HWY_RESTRICT pa, std::ptrdiff_t rs,
                           std::ptrdiff_t step, const hn::TFromD<D>* HWY_RESTRICT pb, hn::TFromD<D>* HWY_RESTRICT c,
                           std::ptrdiff_t ldc, bool accumulate) {
    using V = hn::Vec<D>;
    const std::size_t N = hn::Lanes(d);
    V acc[MR][NV];
#pragma GCC unroll 16
    for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) acc[r][v] = hn::Zero(d);
    for (std::size_t p = 0; p < kc; ++p) {
        V b[NV];
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) b[v] = hn::Load(d, pb + v * N);
#pragma GCC unroll 16
        for (std::size_t r = 0; r < MR; ++r) {
            const V a = hn::Set(d, RowStrided ? pa[static_cast<std::ptrdiff_t>(r) * rs] : pa[r]);
#pragma GCC unroll 4
            for (std::size_t v = 0; v < NV; ++v) acc[r][v] = hn::MulAdd(a, b[v], acc[r][v]);
        }
        pa += step;
        pb += NV * N;
    }
#pragma GCC unroll 16
    for (std::size_t r = 0; r < MR; ++r) {
        auto* cr = c + static_cast<std::ptrdiff_t>(r) * ldc;
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) {
            if (accumulate) {
                hn::StoreU(hn::Add(hn::LoadU(d, cr + v * N), acc[r][v]), d, cr + v * N);
            } else {
                hn::StoreU(acc[r][v], d, cr + v * N);
            }
        }
    }
}

// The last B sliver's micro-kernel: MR x nv vectors, 0 < nv < NV (run time), out of line
// (one call per MR x kc block; keeps the full-width kernel's inlined loop as it was).
template <std::size_t MR, std::size_t NV, bool RowStrided = false, class D>
HWY_NOINLINE void gemm_micro_narrow(D d, std::size_t nv, std::size_t kc, const hn::TFromD<D>* HWY_RESTRICT pa,
                                    std::ptrdiff_t rs, std::ptrdiff_t step, const hn::TFromD<D>* HWY_RESTRICT pb,
                                    hn::TFromD<D>* HWY_RESTRICT c, std::ptrdiff_t ldc, bool accumulate) {
    if constexpr (NV > 1) {
        if (nv == NV - 1) return gemm_micro<MR, NV - 1, RowStrided>(d, kc, pa, rs, step, pb, c, ldc, accumulate);
        if constexpr (NV > 2) {
            if (nv == NV - 2) return gemm_micro<MR, NV - 2, RowStrided>(d, kc, pa, rs, step, pb, c, ldc, accumulate);
            if constexpr (NV > 3)
                gemm_micro_narrow<MR, NV - 2, RowStrided>(d, nv, kc, pa, rs, step, pb, c, ldc, accumulate);
        }
    }
}

#if HWY_TARGET != HWY_SCALAR
// Transposes the N x N block whose row r is the N contiguous elements at src + r * rs into dst
// (row p: column p of the block, N contiguous elements), N = Lanes(d): log2(N) rounds, round s
// swapping the off-diagonal s x s sub-blocks of the row pairs (r, r + s): halves (s = N/2),
// 128-bit blocks, 64-bit pairs, then single lanes, each with fixed shuffles (no index tables:
// Highway's table lookups assert in debug builds, which would need libhwy). Only moves values.
template <class D>
HWY_INLINE void transpose_square(D d, const hn::TFromD<D>* HWY_RESTRICT src, std::ptrdiff_t rs,
                                 hn::TFromD<D>* HWY_RESTRICT dst) {
    using T = hn::TFromD<D>;
    using V = hn::Vec<D>;
    const std::size_t N = hn::Lanes(d);
    constexpr std::size_t kBlock = 16 / sizeof(T);  // lanes per 128-bit block
    const hn::Repartition<std::uint64_t, D> d64;
    V rows[kMaxLanes<T>];  // fully unrolled below, so the rows stay in registers
#pragma GCC unroll 16
    for (std::size_t r = 0; r < N; ++r) rows[r] = hn::LoadU(d, src + static_cast<std::ptrdiff_t>(r) * rs);
#pragma GCC unroll 8
    for (std::size_t s = N / 2; s >= 1; s /= 2) {
#pragma GCC unroll 16
        for (std::size_t i = 0; i + s < N; ++i) {  // (i + s < N: the same rows, and g++ sees the bound)
            if (i & s) continue;
            const V a = rows[i], b = rows[i + s];
            V lo, hi;  // lanes with bit s set come from b (lo: b's lane - s; hi: b's own)
            if (s == N / 2) {
                lo = hn::ConcatLowerLower(d, b, a);
                hi = hn::ConcatUpperUpper(d, b, a);
            } else if (s == kBlock) {
                lo = hn::OddEvenBlocks(hn::SwapAdjacentBlocks(b), a);
                hi = hn::OddEvenBlocks(b, hn::SwapAdjacentBlocks(a));
            } else if (s == 2 && sizeof(T) == 4) {
                lo = hn::BitCast(d, hn::InterleaveLower(d64, hn::BitCast(d64, a), hn::BitCast(d64, b)));
                hi = hn::BitCast(d, hn::InterleaveUpper(d64, hn::BitCast(d64, a), hn::BitCast(d64, b)));
            } else {  // s == 1
                lo = hn::OddEven(hn::DupEven(b), a);
                hi = hn::OddEven(b, hn::DupOdd(a));
            }
            rows[i] = lo;
            rows[i + s] = hi;
        }
    }
#pragma GCC unroll 16
    for (std::size_t p = 0; p < N; ++p) hn::StoreU(rows[p], d, dst + p * N);
}
#endif

// Matrix-vector shapes (n == 1 or m == 1): the blocked path would pad its NR- or MR-wide
// panels with zeros (up to 48x the work). Outputs are computed a vector at a time: the matrix
// operand's block of N outputs x KC is read in place when it is contiguous along the outputs
// (A column-major for n == 1, B row-major for m == 1), else packed so first. The same sums in
// the same order (FMA chains over k from zero, KC slices added in order), so results are
// bitwise those of the blocked path.
template <class T>
HWY_INLINE void matvec(const T* a, std::ptrdiff_t rsa, std::ptrdiff_t csa, const T* b, std::ptrdiff_t rsb,
                       std::ptrdiff_t csb, T* c, std::ptrdiff_t ldc, std::size_t m, std::size_t n, std::size_t k) {
    const hn::ScalableTag<T> d;
    const hn::CappedTag<T, 1> d1;
    const std::size_t N = hn::Lanes(d);
    const bool column = n == 1;  // outputs C(o, 0), o < m; else C(0, o), o < n
    const std::size_t outs = column ? m : n;
    // The matrix operand M(o, p) and the vector v(p), as pointers and strides.
    const T* mat = column ? a : b;
    const std::ptrdiff_t mo = column ? rsa : csb, mp = column ? csa : rsb;  // strides along outputs, along k
    const T* vec = column ? b : a;
    const std::ptrdiff_t vp = column ? rsb : csa;
    const std::ptrdiff_t co = column ? ldc : 1;  // C's stride along the outputs
    const std::size_t kc_max = k < kGemmKC ? k : kGemmKC;
    // Up to kGroup blocks of N outputs at a time: independent FMA chains, one per block.
    constexpr std::size_t kGroup = 4;
    T* packed = mo == 1 ? nullptr : static_cast<T*>(detail::scratch(kGroup * kc_max * N * sizeof(T) + 64));
    HWY_ALIGN T lanes[kMaxLanes<T>];
    for (std::size_t pc = 0; pc < k; pc += kGemmKC) {
        const std::size_t kc = k - pc < kGemmKC ? k - pc : kGemmKC;
        std::size_t o = 0;
        // G blocks starting at output o: element (o + j N + r, pc + p) at cols[j][p * step + r].
        const auto blocks = [&]<std::size_t G>() {
            const T* cols[G];
            std::ptrdiff_t step = mp;
            for (std::size_t j = 0; j < G; ++j) {
                const T* base = mat + static_cast<std::ptrdiff_t>(o + j * N) * mo + static_cast<std::ptrdiff_t>(pc) * mp;
                cols[j] = base;
                if (!packed) continue;
                T* dst = packed + j * kc * N;
                std::size_t p = 0;
#if HWY_TARGET != HWY_SCALAR
                if (mp == 1)  // rows contiguous along k (a row-major A for n == 1): N x N blocks in registers
                    for (; p + N <= kc && N > 1; p += N) transpose_square(d, base + static_cast<std::ptrdiff_t>(p), mo, dst + p * N);
#endif
                for (; p < kc; ++p)
                    for (std::size_t r = 0; r < N; ++r)
                        dst[p * N + r] = base[static_cast<std::ptrdiff_t>(p) * mp + static_cast<std::ptrdiff_t>(r) * mo];
                cols[j] = dst;
            }
            if (packed) step = static_cast<std::ptrdiff_t>(N);
            hn::Vec<decltype(d)> acc[G];
            for (std::size_t j = 0; j < G; ++j) acc[j] = hn::Zero(d);
            for (std::size_t p = 0; p < kc; ++p) {
                const auto v = hn::Set(d, vec[static_cast<std::ptrdiff_t>(pc + p) * vp]);
                for (std::size_t j = 0; j < G; ++j)
                    acc[j] = hn::MulAdd(hn::LoadU(d, cols[j] + static_cast<std::ptrdiff_t>(p) * step), v, acc[j]);
            }
            for (std::size_t j = 0; j < G; ++j) {
                T* out = c + static_cast<std::ptrdiff_t>(o + j * N) * co;
                if (co == 1) {
                    hn::StoreU(pc == 0 ? acc[j] : hn::Add(hn::LoadU(d, out), acc[j]), d, out);
                } else {
                    hn::Store(acc[j], d, lanes);
                    for (std::size_t r = 0; r < N; ++r) {
                        T& x = out[static_cast<std::ptrdiff_t>(r) * co];
                        x = pc == 0 ? lanes[r] : x + lanes[r];
                    }
                }
            }
            o += G * N;
        };
        while (o + kGroup * N <= outs) blocks.template operator()<kGroup>();
        while (o + N <= outs) blocks.template operator()<1>();
        for (; o < outs; ++o) {  // the last outputs, one FMA chain each
            auto acc = hn::Zero(d1);
            for (std::size_t p = pc; p < pc + kc; ++p)
                acc = hn::MulAdd(hn::Set(d1, mat[static_cast<std::ptrdiff_t>(o) * mo + static_cast<std::ptrdiff_t>(p) * mp]),
                                 hn::Set(d1, vec[static_cast<std::ptrdiff_t>(p) * vp]), acc);
            T& x = c[static_cast<std::ptrdiff_t>(o) * co];
            x = pc == 0 ? hn::GetLane(acc) : x + hn::GetLane(acc);
        }
    }
}

// The blocked product with an MR x NV register block (see the top of this file).
template <class T, std::size_t MR, std::size_t NV>
HWY_INLINE void matmul_blocked(const T* a, std::ptrdiff_t lda, std::ptrdiff_t csa, const T* b, std::ptrdiff_t ldb,
                               std::ptrdiff_t csb, T* c, std::ptrdiff_t ldc, std::size_t m, std::size_t n,
                               std::size_t k) {
    const hn::ScalableTag<T> d;
    const std::size_t N = hn::Lanes(d);
    const std::size_t NR = NV * N;
    const std::size_t KC = kGemmKC;
    const std::size_t MC = MR * (sizeof(T) == 4 ? 16 : 12);
    const std::size_t NC = NR * (4096 / NR > 0 ? 4096 / NR : 1);
    const std::size_t kc_max = k < KC ? k : KC;
    const std::size_t nc_max = ((n < NC ? n : NC) + NR - 1) / NR * NR;
    const std::size_t mc_max = ((m < MC ? m : MC) + MR - 1) / MR * MR;
    T* pb_buf = static_cast<T*>(detail::scratch((kc_max * nc_max + kc_max * mc_max) * sizeof(T) + 64));
    T* pa_buf = pb_buf + kc_max * nc_max;
    HWY_ALIGN T tile[MR * NV * kMaxLanes<T>];

    for (std::size_t jc = 0; jc < n; jc += NC) {
        const std::size_t nc = n - jc < NC ? n - jc : NC;
        const bool direct = (nc + NR - 1) / NR <= 4;  // few B slivers: A read in place (see below)
        for (std::size_t pc = 0; pc < k; pc += KC) {
            const std::size_t kc = k - pc < KC ? k - pc : KC;
            const bool accumulate = pc != 0;
            // Pack B[pc:pc+kc, jc:jc+nc] into slivers of kc rows: NR wide, except the last
            // one, ceil(w / N) vectors wide (zero padded to whole vectors only).
            for (std::size_t js = 0; js < nc; js += NR) {
                const std::size_t w = nc - js < NR ? nc - js : NR;
                const std::size_t nv = (w + N - 1) / N, wr = nv * N;  // vectors, padded width
                T* dst = pb_buf + js * kc;
                if (csb != 1 && ldb == 1) {
                    // Column-major B (a transposed operand): each column is contiguous over p.
                    for (std::size_t j = 0; j < w; ++j) {
                        const T* col = b + static_cast<std::ptrdiff_t>(pc) + static_cast<std::ptrdiff_t>(jc + js + j) * csb;
                        for (std::size_t p = 0; p < kc; ++p) dst[p * wr + j] = col[p];
                    }
                    for (std::size_t j = w; j < wr; ++j)
                        for (std::size_t p = 0; p < kc; ++p) dst[p * wr + j] = T(0);
                    continue;
                }
                for (std::size_t p = 0; p < kc; ++p) {
                    const T* src = b + static_cast<std::ptrdiff_t>(pc + p) * ldb + static_cast<std::ptrdiff_t>(jc + js) * csb;
                    if (w == wr && csb == 1) {
                        for (std::size_t v = 0; v < nv; ++v) hn::Store(hn::LoadU(d, src + v * N), d, dst + v * N);
                    } else {
                        for (std::size_t j = 0; j < w; ++j) dst[j] = src[static_cast<std::ptrdiff_t>(j) * csb];
                        for (std::size_t j = w; j < wr; ++j) dst[j] = T(0);
                    }
                    dst += wr;
                }
            }
            for (std::size_t ic = 0; ic < m; ic += MC) {
                const std::size_t mc = m - ic < MC ? m - ic : MC;
                // Pack A[ic:ic+mc, pc:pc+kc] into MR-row slivers: sliver holds kc columns of MR.
                // With few B slivers per panel the packing would not pay for itself (each
                // packed element is read once per sliver): full MR-row slivers are then read in
                // place, only a last partial one is packed (its rows past m padded with zeros).
                for (std::size_t is = 0; is < mc; is += MR) {
                    const std::size_t h = mc - is < MR ? mc - is : MR;
                    if (direct && h == MR) continue;  // read in place by the micro-kernel
                    T* dst = pa_buf + is * kc;
                    const T* src = a + static_cast<std::ptrdiff_t>(ic + is) * lda + static_cast<std::ptrdiff_t>(pc) * csa;
                    if (csa == 1) {
                        for (std::size_t r = 0; r < h; ++r) {
                            const T* s = src + static_cast<std::ptrdiff_t>(r) * lda;
                            for (std::size_t p = 0; p < kc; ++p) dst[p * MR + r] = s[p];
                        }
                    } else {
                        // Column-strided A (a transposed operand): walk each column's rows.
                        for (std::size_t p = 0; p < kc; ++p) {
                            const T* s = src + static_cast<std::ptrdiff_t>(p) * csa;
                            for (std::size_t r = 0; r < h; ++r) dst[p * MR + r] = s[static_cast<std::ptrdiff_t>(r) * lda];
                        }
                    }
                    for (std::size_t r = h; r < MR; ++r)
                        for (std::size_t p = 0; p < kc; ++p) dst[p * MR + r] = T(0);
                }
                for (std::size_t jr = 0; jr < nc; jr += NR) {
                    const std::size_t w = nc - jr < NR ? nc - jr : NR;
                    const std::size_t nv = (w + N - 1) / N, wr = nv * N;  // as packed
                    const T* pb = pb_buf + jr * kc;
                    for (std::size_t ir = 0; ir < mc; ir += MR) {
                        const std::size_t h = mc - ir < MR ? mc - ir : MR;
                        T* cc = c + static_cast<std::ptrdiff_t>(ic + ir) * ldc + static_cast<std::ptrdiff_t>(jc + jr);
                        // The block into dst (C itself, or the stack tile for edges).
                        const auto block = [&](T* dst, std::ptrdiff_t ldd, bool acc) {
                            if (direct && h == MR) {
                                const T* pa = a + static_cast<std::ptrdiff_t>(ic + ir) * lda + static_cast<std::ptrdiff_t>(pc) * csa;
                                if (lda == 1) {  // A's columns contiguous (a transposed operand)
                                    if (nv == NV) gemm_micro<MR, NV>(d, kc, pa, 1, csa, pb, dst, ldd, acc);
                                    else gemm_micro_narrow<MR, NV>(d, nv, kc, pa, 1, csa, pb, dst, ldd, acc);
                                } else {
                                    if (nv == NV) gemm_micro<MR, NV, true>(d, kc, pa, lda, csa, pb, dst, ldd, acc);
                                    else gemm_micro_narrow<MR, NV, true>(d, nv, kc, pa, lda, csa, pb, dst, ldd, acc);
                                }
                            } else {
                                const T* pa = pa_buf + ir * kc;
                                const auto step = static_cast<std::ptrdiff_t>(MR);
                                if (nv == NV) gemm_micro<MR, NV>(d, kc, pa, 1, step, pb, dst, ldd, acc);
                                else gemm_micro_narrow<MR, NV>(d, nv, kc, pa, 1, step, pb, dst, ldd, acc);
                            }
                        };
                        if (h == MR && w == wr) {
                            block(cc, ldc, accumulate);
                        } else {
                            block(tile, static_cast<std::ptrdiff_t>(wr), false);
                            for (std::size_t r = 0; r < h; ++r) {
                                T* crow = cc + static_cast<std::ptrdiff_t>(r) * ldc;
                                const T* trow = tile + r * wr;
                                std::size_t j = 0;
                                for (; j + N <= w; j += N) {  // whole vectors of the valid part
                                    const auto t = hn::Load(d, trow + j);
                                    hn::StoreU(accumulate ? hn::Add(hn::LoadU(d, crow + j), t) : t, d, crow + j);
                                }
                                if (accumulate) {
                                    for (; j < w; ++j) crow[j] += trow[j];
                                } else {
                                    for (; j < w; ++j) crow[j] = trow[j];
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

template <class T>
HWY_NOINLINE void matmul_impl(const T* a, std::ptrdiff_t lda, std::ptrdiff_t csa, const T* b, std::ptrdiff_t ldb,
                              std::ptrdiff_t csb, T* c, std::ptrdiff_t ldc, std::size_t m, std::size_t n,
                              std::size_t k) {
    if (m == 0 || n == 0) return;
    if (k == 0) {
        for (std::size_t i = 0; i < m; ++i)
            for (std::size_t j = 0; j < n; ++j) c[static_cast<std::ptrdiff_t>(i) * ldc + static_cast<std::ptrdiff_t>(j)] = T(0);
        return;
    }
    if (m == 1 || n == 1) return matvec<T>(a, lda, csa, b, ldb, csb, c, ldc, m, n, k);
    // A few rows (the [2 x 128] x [128 x 32] weight gradient of a 2-input layer): a 4-row
    // register block, not 8 or 12 rows mostly padding. Same sums in the same order.
    if (m <= 4) return matmul_blocked<T, 4, kGemmNV>(a, lda, csa, b, ldb, csb, c, ldc, m, n, k);
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    // Narrow B (n <= 2 vectors, an MLP's hidden width of 32 floats): 12 x 2 blocks (12 x 1 for
    // n <= 1 vector) instead of one 8 x 2 (8 x 1) sliver: more accumulators per broadcast of B.
    // Same sums in the same order.
    const hn::ScalableTag<T> d;
    // Row counts that 8 divides and 12 does not (32, 128) take 8-row blocks: no padded tile.
    if (n <= 2 * hn::Lanes(d)) {
        if (m % 8 == 0 && m % 12 != 0) return matmul_blocked<T, 8, 2>(a, lda, csa, b, ldb, csb, c, ldc, m, n, k);
        return matmul_blocked<T, 12, 2>(a, lda, csa, b, ldb, csb, c, ldc, m, n, k);
    }
#endif
    matmul_blocked<T, kGemmMR, kGemmNV>(a, lda, csa, b, ldb, csb, c, ldc, m, n, k);
}

inline void matmul_f32(const float* a, std::ptrdiff_t lda, std::ptrdiff_t csa, const float* b, std::ptrdiff_t ldb,
                       std::ptrdiff_t csb, float* c, std::ptrdiff_t ldc, std::size_t m, std::size_t n, std::size_t k) {
    matmul_impl<float>(a, lda, csa, b, ldb, csb, c, ldc, m, n, k);
}
inline void matmul_f64(const double* a, std::ptrdiff_t lda, std::ptrdiff_t csa, const double* b, std::ptrdiff_t ldb,
                       std::ptrdiff_t csb, double* c, std::ptrdiff_t ldc, std::size_t m, std::size_t n,
                       std::size_t k) {
    matmul_impl<double>(a, lda, csa, b, ldb, csb, c, ldc, m, n, k);
}

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace graft
HWY_AFTER_NAMESPACE();

#endif  // toggle guard
