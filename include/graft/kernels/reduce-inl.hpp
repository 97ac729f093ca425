// graft/kernels/reduce-inl.hpp: per-target reductions and row-wise softmax.
// Re-included once per target via graft/kernels/all-inl.hpp.
//
// Numeric contract:
//   sum  : accumulates in the input type (like PyTorch). Blocks of 4 vectors x 32
//          steps (AVX3 float32: 2048 elements) are summed with 4*lanes independent
//          accumulators; block results are combined pairwise (recursive halving).
//          Error bound: |s - exact| <= (32 + 2 + ceil(log2(lanes*4)) + ceil(log2(nblocks)))
//          * eps * sum|x|  (eps = 2^-24 float32, 2^-53 float64). Integer-valued sums
//          that are exactly representable (e.g. 1e7 ones in float32) are exact.
//          n == 0 → 0.
//   amax/amin : NaN if any element is NaN (PyTorch); caller guarantees n > 0.
//   softmax_rows : per row m = max(x) (NaN-propagating), e = exp(x - m),
//          s = sum(e) (vector accumulators), softmax = e / s,
//          log_softmax = (x - m) - log(s). exp/log are the IEEE-fixed Highway versions
//          (<= 1 ULP exp, <= 4 ULP log). Rows of all -inf (or containing +inf or NaN)
//          give NaN, like PyTorch. cols == 0: nothing is written.

#include "graft/kernels/api.hpp"

#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include "graft/kernels/elementwise-inl.hpp"

// graft-amalgamate: per-target
#if defined(GRAFT_KERNELS_REDUCE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GRAFT_KERNELS_REDUCE_INL_H_
#undef GRAFT_KERNELS_REDUCE_INL_H_
#else
#define GRAFT_KERNELS_REDUCE_INL_H_
#endif

HWY_BEFORE_NAMESPACE();
namespace graft {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

inline constexpr std::size_t kSumSteps = 32;  // vector adds per accumulator per block

// Sum of one block (n <= 4 * kSumSteps * lanes), 4 vector accumulators.
template <class D>
HWY_INLINE hn::TFromD<D> sum_block(D d, const hn::TFromD<D>* HWY_RESTRICT a, std::size_t n) {
    using T = hn::TFromD<D>;
    const std::size_t N = hn::Lanes(d);
    auto s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
    std::size_t i = 0;
    for (; i + 4 * N <= n; i += 4 * N) {
        s0 = hn::Add(s0, hn::LoadU(d, a + i));
        s1 = hn::Add(s1, hn::LoadU(d, a + i + N));
        s2 = hn::Add(s2, hn::LoadU(d, a + i + 2 * N));
        s3 = hn::Add(s3, hn::LoadU(d, a + i + 3 * N));
    }
    for (; i + N <= n; i += N) s0 = hn::Add(s0, hn::LoadU(d, a + i));
    if (i < n) {
        HWY_ALIGN T buf[kMaxLanes<T>];
        const std::size_t r = n - i;
        for (std::size_t j = 0; j < r; ++j) buf[j] = a[i + j];
        for (std::size_t j = r; j < N; ++j) buf[j] = T(0);
        s1 = hn::Add(s1, hn::Load(d, buf));
    }
    const auto s = hn::Add(hn::Add(s0, s1), hn::Add(s2, s3));
    return hn::GetLane(hn::SumOfLanes(d, s));
}

template <class D>
HWY_NOINLINE hn::TFromD<D> sum_pairwise(D d, const hn::TFromD<D>* a, std::size_t n, std::size_t block) {
    if (n <= block) return sum_block(d, a, n);
    // Split at a block boundary near the middle.
    const std::size_t nb = (n + block - 1) / block;
    const std::size_t left = (nb / 2) * block;
    return sum_pairwise(d, a, left, block) + sum_pairwise(d, a + left, n - left, block);
}

template <class T>
HWY_INLINE T sum_impl(const T* a, std::size_t n) {
    const hn::ScalableTag<T> d;
    if (n == 0) return T(0);
    const std::size_t block = 4 * kSumSteps * hn::Lanes(d);
    return sum_pairwise(d, a, n, block);
}

template <bool kMax, class T>
HWY_INLINE T minmax_impl(const T* a, std::size_t n) {
    const hn::ScalableTag<T> d;
    const std::size_t N = hn::Lanes(d);
    if (n == 0) return std::numeric_limits<T>::quiet_NaN();
    auto acc = hn::Set(d, a[0]);
    auto nan = hn::FirstN(d, 0);
    std::size_t i = 0;
    for (; i + N <= n; i += N) {
        const auto v = hn::LoadU(d, a + i);
        nan = hn::Or(nan, hn::IsNaN(v));
        acc = kMax ? hn::Max(acc, v) : hn::Min(acc, v);
    }
    T r = hn::GetLane(kMax ? hn::MaxOfLanes(d, acc) : hn::MinOfLanes(d, acc));
    bool any_nan = !hn::AllFalse(d, nan);
    for (; i < n; ++i) {
        const T v = a[i];
        if (v != v) any_nan = true;
        r = kMax ? (v > r ? v : r) : (v < r ? v : r);
    }
    return any_nan ? std::numeric_limits<T>::quiet_NaN() : r;
}

template <class T>
HWY_INLINE T reduce_impl(reduce_op op, const T* a, std::size_t n) {
    switch (op) {
        case reduce_op::sum: return sum_impl(a, n);
        case reduce_op::amax: return minmax_impl<true>(a, n);
        case reduce_op::amin: return minmax_impl<false>(a, n);
    }
    return T(0);
}

inline std::size_t sum_block_f32() { return 4 * kSumSteps * hn::Lanes(hn::ScalableTag<float>()); }
inline std::size_t sum_block_f64() { return 4 * kSumSteps * hn::Lanes(hn::ScalableTag<double>()); }

inline float reduce_f32(reduce_op op, const float* a, std::size_t n) { return reduce_impl<float>(op, a, n); }
inline double reduce_f64(reduce_op op, const double* a, std::size_t n) { return reduce_impl<double>(op, a, n); }

// ---------------------------------------------------------------- softmax

template <class T>
HWY_INLINE void softmax_row(const T* in, T* out, std::size_t cols, bool log) {
    const hn::ScalableTag<T> d;
    const std::size_t N = hn::Lanes(d);
    if (cols == 0) return;
    const T m = minmax_impl<true>(in, cols);
    const auto vm = hn::Set(d, m);
    HWY_ALIGN T buf[kMaxLanes<T>];
    // Pass 1: e = exp(x - m) into out (softmax) and accumulate the sum.
    auto s0 = hn::Zero(d), s1 = hn::Zero(d);
    std::size_t i = 0;
    for (; i + 2 * N <= cols; i += 2 * N) {
        const auto e0 = exp_ieee(d, hn::Sub(hn::LoadU(d, in + i), vm));
        const auto e1 = exp_ieee(d, hn::Sub(hn::LoadU(d, in + i + N), vm));
        if (!log) {
            hn::StoreU(e0, d, out + i);
            hn::StoreU(e1, d, out + i + N);
        }
        s0 = hn::Add(s0, e0);
        s1 = hn::Add(s1, e1);
    }
    for (; i < cols; i += N) {
        const std::size_t r = cols - i < N ? cols - i : N;
        for (std::size_t j = 0; j < r; ++j) buf[j] = in[i + j];
        for (std::size_t j = r; j < N; ++j) buf[j] = -std::numeric_limits<T>::infinity();
        // padding lanes: exp(-inf - m) = 0 unless m is -inf/NaN (then the row is NaN anyway)
        auto e = exp_ieee(d, hn::Sub(hn::Load(d, buf), vm));
        if (r < N) e = hn::IfThenElseZero(hn::FirstN(d, r), e);
        hn::Store(e, d, buf);
        if (!log)
            for (std::size_t j = 0; j < r; ++j) out[i + j] = buf[j];
        s0 = hn::Add(s0, e);
    }
    const T s = hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
    if (!log) {
        const auto vs = hn::Set(d, s);
        i = 0;
        for (; i + N <= cols; i += N) hn::StoreU(hn::Div(hn::LoadU(d, out + i), vs), d, out + i);
        for (; i < cols; ++i) out[i] = out[i] / s;
    } else {
        const T ls = hn::GetLane(log_ieee(d, hn::Set(d, s)));
        const auto vls = hn::Set(d, ls);
        i = 0;
        for (; i + N <= cols; i += N)
            hn::StoreU(hn::Sub(hn::Sub(hn::LoadU(d, in + i), vm), vls), d, out + i);
        for (; i < cols; ++i) out[i] = (in[i] - m) - ls;
    }
}

template <class T>
HWY_INLINE void softmax_impl(const T* in, T* out, std::size_t rows, std::size_t cols, bool log) {
    for (std::size_t r = 0; r < rows; ++r) softmax_row(in + r * cols, out + r * cols, cols, log);
}

inline void softmax_f32(const float* in, float* out, std::size_t rows, std::size_t cols, bool log) {
    softmax_impl<float>(in, out, rows, cols, log);
}
inline void softmax_f64(const double* in, double* out, std::size_t rows, std::size_t cols, bool log) {
    softmax_impl<double>(in, out, rows, cols, log);
}

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace graft
HWY_AFTER_NAMESPACE();

#endif  // toggle guard
