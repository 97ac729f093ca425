// graft/kernels/elementwise-inl.hpp: per-target unary / binary / compare / where
// kernels. Re-included once per SIMD target by hwy/foreach_target.h through
// graft/kernels/all-inl.hpp; do not include it directly (use graft/kernels/dispatch.hpp).
// The per-lane math (u_tanh, b_add, c_lt, ...) lives in graft/kernels/lanes-inl.hpp,
// shared with the fused expression evaluator (graft/expr/detail/fused-inl.hpp).
//
// Numeric contract (checked by tests/test_kernels_elementwise.cpp against
// graft/kernels/reference.hpp on every compiled target). "ULP" is measured against the
// correctly rounded result; all kernels keep float32/float64 denormals (no FTZ/DAZ).
//   neg, abs, sqrt, relu, rsqrt : exact (IEEE: sqrt correctly rounded, rsqrt = 1/sqrt
//                                  with two correctly rounded ops, <= 1 ULP).
//                                  abs(-0) = +0; relu(x) = x < 0 ? 0 : x, so
//                                  relu(-0) = -0 and relu(NaN) = NaN (PyTorch).
//   exp  : float32: graft's own exp_f32 (lanes-inl.hpp: Cody-Waite reduction, degree-6
//          polynomial, 2^n from the exponent bits); measured max error 1 ULP over all 2^32
//          float32 inputs (SCALAR, AVX2, AVX3). float64: Highway Exp (<= 1 ULP), fixed up.
//          Both: x > ln(max) → +inf, -inf → 0, NaN → NaN; results in the denormal range
//          are kept (float32: rounded once; not flushed).
//   tanh : float32: tanh_f32, m/(2+m) with m = expm1(-2|x|) and x's sign; measured max
//          error 3 ULP over all 2^32 float32 inputs (SCALAR, AVX2, AVX3). tanh(±0) = ±0,
//          subnormal x → x exactly, |x| >= 9.1 → ±1 exactly. float64: Highway Tanh (<= 4 ULP).
//          tanh(±inf) = ±1, NaN → NaN.
//   sigmoid : no overflow, no NaN for finite or infinite x (sigmoid(-inf) = 0,
//          sigmoid(+inf) = 1), and tiny results for very negative x are kept (PyTorch's
//          float 1/(1+exp(-x)) flushes them to 0 below x = -88.7). float32: sigmoid_f32,
//          2^m/(2^m + e^-r) for x = m ln2 + r, one rounded division (also into the subnormal
//          range); measured max error 2 ULP over all 2^32 float32 inputs (SCALAR, AVX2, AVX3).
//          float64: e = exp(-|x|); x >= 0: 1/(1+e), x < 0: e/(1+e); <= 4 ULP (exp error +
//          2 roundings). NaN → NaN.
//          (exp, tanh, sigmoid float32: "measured" = every float32 bit pattern through the
//          kernel vs the reference (double result rounded to float); a NaN input gives a
//          NaN, not necessarily the same payload or sign.)
//   gelu : 0.5*x*erfc(-x/sqrt(2)). float32: float32 lanes (gelu_erf_f32): erfc(a) =
//          exp(-a^2)*(1+P(q))/(1+2a), q = (a-2)/(a+2), with exp(-a^2) taken from the exact
//          x^2 = hi + lo (no rounding of a^2 before exp), so the error is relative in the
//          whole range, negative tail included; subnormal results are rounded once.
//          Measured max error vs the correctly rounded result, every float32 in [-14, 14]
//          (2.19e9 inputs, SCALAR/AVX2/AVX3): 6 ULP (at x = -5.217628); max relative error
//          3.9e-7 where the result is a normal float.
//          x < -15 gives -0 (the result underflows), gelu(-inf) = NaN, gelu(+inf) = +inf.
//          float64: scalar std::erfc per lane, with a first-order
//          correction for the rounding of x/sqrt(2) (<= 4 ULP in tests).
//   gelu_tanh : 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3))) (PyTorch's formula), computed
//          as the identical x*sigmoid(2z) = x/(1+exp(-2z)) (gelu_tanh_ieee), which has no
//          cancellation for negative x; -2z is carried in double-T so exp does not amplify
//          its rounding. No overflow NaNs; tiny/subnormal results of the negative tail are
//          kept (x -> -inf gives -0; gelu_tanh(-inf) = NaN, as -inf*0 in the tanh form).
//          Measured max error vs the correctly rounded result, every float32 in [-14, 14]
//          (2.19e9 inputs, SCALAR/AVX2/AVX3): 5 ULP (at x = -10.0410709); max relative
//          error 3.8e-7 where the result is a normal float. float64: <= 6 ULP in tests.
//   normal_cdf : the standard normal CDF Phi(x) = 0.5*erfc(-x/sqrt(2)) (graft::normal_cdf,
//          GELU's derivative). float32: float32 lanes (normal_cdf_f32), the erfc(a) = R*E of
//          gelu's float32 lanes (erfc_scaled_f32): x >= 0: 1 - 0.5*R*E (one fused
//          multiply-subtract); x < 0: 0.5*R*E, relative in the whole negative tail; subnormal
//          results (x < -12.95) are rounded once. Measured max error vs the correctly rounded
//          result (long double erfc rounded to float), every float32 in [-16, 16] (2.20e9
//          inputs, SCALAR/AVX2/AVX3): 5 ULP (AVX2/AVX3 at x = -2.1551824, SCALAR at
//          x = -0.0059168697; 54 inputs at 5 ULP on AVX2/AVX3, 123 on SCALAR, the rest <= 4);
//          max relative error 3.7e-7 where the result is a normal float. The bound is R's
//          (polynomial fit, the divisions for q and R) plus exp's and the final products'
//          roundings, as for gelu without gelu's product by x. x < -15 gives +0 (Phi
//          underflows below -14.17), Phi(-inf) = +0, Phi(+inf) = 1, Phi(±0) = 0.5, NaN → NaN.
//          float64: scalar std::erfc per lane with the formula graft::normal_cdf used before
//          it had a kernel, 0.5*erfc(-x*sqrt(2)/2), so float64 results are unchanged; the
//          rounding of the argument grows with x^2 in the negative tail: measured <= 1.8*(x^2+1)
//          ULP (1690 ULP at x = -37.28; tested with a bound of 4 + 2x^2 ULP).
//   sin, cos : Highway Sin/Cos (<= 3 ULP) for |x| <= 39000; other lanes (large |x|,
//          ±inf, NaN) are recomputed with std::sin/std::cos, so results are libm's.
//   log1p : log(1+x), Highway's Log1p (log(u)*x/(u-1), u = 1+x rounded; x itself where u
//          rounds to 1) on (-1, +inf), in float32 and float64 lanes (log1p_ieee). Special
//          values as std::log1p: log1p(±0) = ±0, log1p(-1) = -inf, x < -1 (-inf included) →
//          NaN, +inf → +inf, NaN → NaN; tiny and subnormal x give x exactly. Measured max
//          error vs the reference (std::log1p in double rounded to float; long double for
//          float64): float32, every one of the 2^32 inputs (SCALAR, AVX2, AVX3): 2 ULP
//          (worst x = -4.4604033e-07; 3.0e6 inputs at 2 ULP, the rest <= 1), no result of
//          another class; float64, 2M log-uniform |x| in [2^-60, 2^10] of both signs and 2M
//          uniform in [-1, 2]: 2 ULP (SCALAR, AVX2, AVX3).
//   expm1 : exp(x)-1 (expm1_ieee): x = n*ln2 + r (Cody-Waite), p = expm1(r) from Highway's
//          Expm1 on |r| <= ln2/2 (its polynomial branch), expm1(x) = 2^n*p + (2^n - 1) in one
//          multiply-add, fused where the target has FMA (Highway's own 2^n*(1+p) - 1 measured
//          4 ULP). Special values as std::expm1: expm1(±0) = ±0, -inf → -1 (as every
//          x < -20 (f32) / -40 (f64)), +inf → +inf, overflow to +inf past ln(max) (through
//          exp_ieee above x = 88 / 709), NaN → NaN; tiny and subnormal x give x exactly.
//          Measured max error vs the reference (as log1p's): float32, all 2^32 inputs
//          (SCALAR, AVX2, AVX3): 2 ULP, just above ln2/2 (8 inputs on AVX2/AVX3, worst
//          x = 0.34734973; 258 on SCALAR, which has no FMA, worst x = 0.3466568; the rest
//          <= 1), no result of another class; float64, 2M inputs each in [-1, 2], log-uniform
//          |x| in [2^-60, 2^10], [-50, -30] and [30, 720]: 2 ULP (SCALAR, AVX2, AVX3).
//   add, sub, mul, div : exact IEEE (div by 0 → ±inf or NaN).
//   pow  : scalar pow_value per element (api.hpp: PyTorch's sqrt / rsqrt / x*x / ... for
//          the exponents 0.5, -0.5, 2, 3, -1, -2, else libm's std::pow: 0^0 = 1, negative base
//          with integral exponent, pow(x, ±inf), ...). Not vectorized.
//   maximum, minimum : NaN if either operand is NaN (PyTorch); otherwise max/min. The
//          sign of a zero result for max(+0,-0) is unspecified (compares equal).
//   compare : IEEE ordered compares (any NaN → false, except ne → true). Vectorized for
//          strides 0/1 (mask → 0/1 bytes); other strides and the tail are scalar.
//   where : out = c ? a : b, bitwise copy (any nonzero bool byte is true). Vectorized for
//          strides 0/1 of c, a and b; other strides and the tail are scalar.

#include "graft/kernels/api.hpp"

#include <hwy/highway.h>
#include "graft/kernels/lanes-inl.hpp"

// graft-amalgamate: per-target
#if defined(GRAFT_KERNELS_ELEMENTWISE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GRAFT_KERNELS_ELEMENTWISE_INL_H_
#undef GRAFT_KERNELS_ELEMENTWISE_INL_H_
#else
#define GRAFT_KERNELS_ELEMENTWISE_INL_H_
#endif

HWY_BEFORE_NAMESPACE();
namespace graft {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---------------------------------------------------------------- drivers

// Applies f lane-wise: out[i] = f(a[i*sa]). sa == 1 and sa == 0 are vectorized
// directly; other strides go through a gather buffer (same vector code, so results are
// identical for all strides).
template <class D, class F>
HWY_INLINE void drive_unary(D d, const F& f, const hn::TFromD<D>* HWY_RESTRICT a, std::ptrdiff_t sa,
                            hn::TFromD<D>* out, std::size_t n) {
    using T = hn::TFromD<D>;
    if (n == 0) return;
    const std::size_t N = hn::Lanes(d);
    HWY_ALIGN T buf[kMaxLanes<T>];
    if (sa == 1) {
        std::size_t i = 0;
        for (; i + N <= n; i += N) hn::StoreU(f(d, hn::LoadU(d, a + i)), d, out + i);
        if (i < n) {
            const std::size_t r = n - i;
            for (std::size_t j = 0; j < r; ++j) buf[j] = a[i + j];
            for (std::size_t j = r; j < N; ++j) buf[j] = T(0);
            hn::Store(f(d, hn::Load(d, buf)), d, buf);
            for (std::size_t j = 0; j < r; ++j) out[i + j] = buf[j];
        }
    } else if (sa == 0) {
        const T v = hn::GetLane(f(d, hn::Set(d, a[0])));
        for (std::size_t i = 0; i < n; ++i) out[i] = v;
    } else {
        for (std::size_t i = 0; i < n; i += N) {
            const std::size_t r = n - i < N ? n - i : N;
            for (std::size_t j = 0; j < r; ++j) buf[j] = a[static_cast<std::ptrdiff_t>(i + j) * sa];
            for (std::size_t j = r; j < N; ++j) buf[j] = T(0);
            hn::Store(f(d, hn::Load(d, buf)), d, buf);
            for (std::size_t j = 0; j < r; ++j) out[i + j] = buf[j];
        }
    }
}

template <class T>
HWY_INLINE void unary_impl(unary_op op, const T* a, std::ptrdiff_t sa, T* out, std::size_t n) {
    const hn::ScalableTag<T> d;
    switch (op) {
        case unary_op::neg: return drive_unary(d, u_neg{}, a, sa, out, n);
        case unary_op::abs: return drive_unary(d, u_abs{}, a, sa, out, n);
        case unary_op::exp: return drive_unary(d, u_exp{}, a, sa, out, n);
        case unary_op::log: return drive_unary(d, u_log{}, a, sa, out, n);
        case unary_op::sqrt: return drive_unary(d, u_sqrt{}, a, sa, out, n);
        case unary_op::rsqrt: return drive_unary(d, u_rsqrt{}, a, sa, out, n);
        case unary_op::tanh: return drive_unary(d, u_tanh{}, a, sa, out, n);
        case unary_op::sigmoid: return drive_unary(d, u_sigmoid{}, a, sa, out, n);
        case unary_op::relu: return drive_unary(d, u_relu{}, a, sa, out, n);
        case unary_op::gelu:
            if constexpr (sizeof(T) == 4) {
                return drive_unary(d, u_gelu_f32{}, a, sa, out, n);
            } else {
                return drive_unary(d, u_gelu_f64{}, a, sa, out, n);
            }
        case unary_op::gelu_tanh: return drive_unary(d, u_gelu_tanh{}, a, sa, out, n);
        case unary_op::normal_cdf:
            if constexpr (sizeof(T) == 4) {
                return drive_unary(d, u_normal_cdf_f32{}, a, sa, out, n);
            } else {
                return drive_unary(d, u_normal_cdf_f64{}, a, sa, out, n);
            }
        case unary_op::sin: return drive_unary(d, u_sin{}, a, sa, out, n);
        case unary_op::cos: return drive_unary(d, u_cos{}, a, sa, out, n);
        case unary_op::log1p: return drive_unary(d, u_log1p{}, a, sa, out, n);
        case unary_op::expm1: return drive_unary(d, u_expm1{}, a, sa, out, n);
    }
}

inline void unary_f32(unary_op op, const float* a, std::ptrdiff_t sa, float* out, std::size_t n) {
    unary_impl<float>(op, a, sa, out, n);
}
inline void unary_f64(unary_op op, const double* a, std::ptrdiff_t sa, double* out, std::size_t n) {
    unary_impl<double>(op, a, sa, out, n);
}

// ---------------------------------------------------------------- binary

template <class D, class F>
HWY_INLINE void drive_binary(D d, const F& f, const hn::TFromD<D>* a, std::ptrdiff_t sa,
                             const hn::TFromD<D>* b, std::ptrdiff_t sb, hn::TFromD<D>* out, std::size_t n) {
    using T = hn::TFromD<D>;
    if (n == 0) return;
    const std::size_t N = hn::Lanes(d);
    HWY_ALIGN T ba[kMaxLanes<T>];
    HWY_ALIGN T bb[kMaxLanes<T>];
    std::size_t i = 0;
    if (sa == 1 && sb == 1) {
        for (; i + N <= n; i += N) hn::StoreU(f(d, hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, out + i);
    } else if (sa == 1 && sb == 0) {
        const auto vb = hn::Set(d, b[0]);
        for (; i + N <= n; i += N) hn::StoreU(f(d, hn::LoadU(d, a + i), vb), d, out + i);
    } else if (sa == 0 && sb == 1) {
        const auto va = hn::Set(d, a[0]);
        for (; i + N <= n; i += N) hn::StoreU(f(d, va, hn::LoadU(d, b + i)), d, out + i);
    } else if (sa == 0 && sb == 0) {
        const T v = hn::GetLane(f(d, hn::Set(d, a[0]), hn::Set(d, b[0])));
        for (; i < n; ++i) out[i] = v;
        return;
    }
    // Remainder (or everything, for general strides) through gather buffers.
    for (; i < n; i += N) {
        const std::size_t r = n - i < N ? n - i : N;
        for (std::size_t j = 0; j < r; ++j) {
            ba[j] = a[static_cast<std::ptrdiff_t>(i + j) * sa];
            bb[j] = b[static_cast<std::ptrdiff_t>(i + j) * sb];
        }
        for (std::size_t j = r; j < N; ++j) ba[j] = bb[j] = T(1);
        hn::Store(f(d, hn::Load(d, ba), hn::Load(d, bb)), d, ba);
        for (std::size_t j = 0; j < r; ++j) out[i + j] = ba[j];
    }
}

template <class T>
HWY_INLINE void binary_impl(binary_op op, const T* a, std::ptrdiff_t sa, const T* b, std::ptrdiff_t sb, T* out,
                            std::size_t n) {
    const hn::ScalableTag<T> d;
    switch (op) {
        case binary_op::add: return drive_binary(d, b_add{}, a, sa, b, sb, out, n);
        case binary_op::sub: return drive_binary(d, b_sub{}, a, sa, b, sb, out, n);
        case binary_op::mul: return drive_binary(d, b_mul{}, a, sa, b, sb, out, n);
        case binary_op::div: return drive_binary(d, b_div{}, a, sa, b, sb, out, n);
        case binary_op::pow:
            for (std::size_t i = 0; i < n; ++i)
                out[i] = pow_value(a[static_cast<std::ptrdiff_t>(i) * sa], b[static_cast<std::ptrdiff_t>(i) * sb]);
            return;
        case binary_op::maximum: return drive_binary(d, b_max{}, a, sa, b, sb, out, n);
        case binary_op::minimum: return drive_binary(d, b_min{}, a, sa, b, sb, out, n);
    }
}

inline void binary_f32(binary_op op, const float* a, std::ptrdiff_t sa, const float* b, std::ptrdiff_t sb,
                       float* out, std::size_t n) {
    binary_impl<float>(op, a, sa, b, sb, out, n);
}
inline void binary_f64(binary_op op, const double* a, std::ptrdiff_t sa, const double* b, std::ptrdiff_t sb,
                       double* out, std::size_t n) {
    binary_impl<double>(op, a, sa, b, sb, out, n);
}

// ---------------------------------------------------------------- compare / where

// Contiguous (kContig) or broadcast operand for the stride-{0,1} vector loops.
template <bool kContig, class D, class V>
HWY_INLINE V load_or_bcast(D d, const hn::TFromD<D>* p, std::size_t i, V bcast) {
    if constexpr (kContig) {
        return hn::LoadU(d, p + i);
    } else {
        (void)p;
        (void)i;
        return bcast;
    }
}

// Full vectors of out[i] = vc(a[i], b[i]) for a, b each contiguous or broadcast (n > 0);
// returns the number of elements done (a multiple of Lanes(d)).
template <bool kA, bool kB, class D, class VCmp>
HWY_INLINE std::size_t compare_loop(D d, const VCmp& vc, const hn::TFromD<D>* a, const hn::TFromD<D>* b,
                                    bool* out, std::size_t n) {
    const std::size_t N = hn::Lanes(d);
    const auto va0 = hn::Set(d, a[0]);
    const auto vb0 = hn::Set(d, b[0]);
    std::size_t i = 0;
    for (; i + N <= n; i += N)
        store_mask_bytes(d, vc(load_or_bcast<kA>(d, a, i, va0), load_or_bcast<kB>(d, b, i, vb0)), out + i);
    return i;
}

// Strides 1 and 0 (broadcast) are vectorized; the rest (and the < Lanes tail) is scalar,
// with the same IEEE semantics.
template <class T, class Cmp, class VCmp>
HWY_INLINE void drive_compare(Cmp cmp, const VCmp& vc, const T* a, std::ptrdiff_t sa, const T* b,
                              std::ptrdiff_t sb, bool* out, std::size_t n) {
    if (n == 0) return;
    const hn::ScalableTag<T> d;
    std::size_t i = 0;
    if (sa == 0 && sb == 0) {
        const bool v = cmp(a[0], b[0]);
        for (; i < n; ++i) out[i] = v;
        return;
    }
    if (sa == 1 && sb == 1) i = compare_loop<true, true>(d, vc, a, b, out, n);
    else if (sa == 1 && sb == 0) i = compare_loop<true, false>(d, vc, a, b, out, n);
    else if (sa == 0 && sb == 1) i = compare_loop<false, true>(d, vc, a, b, out, n);
    for (; i < n; ++i) {
        const auto k = static_cast<std::ptrdiff_t>(i);
        out[i] = cmp(a[k * sa], b[k * sb]);
    }
}

template <class T>
HWY_INLINE void compare_impl(compare_op op, const T* a, std::ptrdiff_t sa, const T* b, std::ptrdiff_t sb,
                             bool* out, std::size_t n) {
    switch (op) {
        case compare_op::eq: return drive_compare([](T x, T y) { return x == y; }, c_eq{}, a, sa, b, sb, out, n);
        case compare_op::ne: return drive_compare([](T x, T y) { return x != y; }, c_ne{}, a, sa, b, sb, out, n);
        case compare_op::lt: return drive_compare([](T x, T y) { return x < y; }, c_lt{}, a, sa, b, sb, out, n);
        case compare_op::le: return drive_compare([](T x, T y) { return x <= y; }, c_le{}, a, sa, b, sb, out, n);
        case compare_op::gt: return drive_compare([](T x, T y) { return x > y; }, c_gt{}, a, sa, b, sb, out, n);
        case compare_op::ge: return drive_compare([](T x, T y) { return x >= y; }, c_ge{}, a, sa, b, sb, out, n);
    }
}

inline void compare_f32(compare_op op, const float* a, std::ptrdiff_t sa, const float* b, std::ptrdiff_t sb,
                        bool* out, std::size_t n) {
    compare_impl<float>(op, a, sa, b, sb, out, n);
}
inline void compare_f64(compare_op op, const double* a, std::ptrdiff_t sa, const double* b, std::ptrdiff_t sb,
                        bool* out, std::size_t n) {
    compare_impl<double>(op, a, sa, b, sb, out, n);
}

// Full vectors of out = c ? a : b (bitwise select) for c, a, b each contiguous or
// broadcast (n > 0); returns the number of elements done.
template <bool kC, bool kA, bool kB, class T>
HWY_INLINE std::size_t where_loop(const bool* c, const T* a, const T* b, T* out, std::size_t n) {
    const hn::ScalableTag<T> d;
    const std::size_t N = hn::Lanes(d);
    const auto va0 = hn::Set(d, a[0]);
    const auto vb0 = hn::Set(d, b[0]);
    const auto m0 = hn::Ne(hn::Set(d, c[0] ? T(1) : T(0)), hn::Zero(d));
    std::size_t i = 0;
    for (; i + N <= n; i += N) {
        const auto va = load_or_bcast<kA>(d, a, i, va0);
        const auto vb = load_or_bcast<kB>(d, b, i, vb0);
        if constexpr (kC) {
            hn::StoreU(hn::IfThenElse(load_bool_mask(d, c + i), va, vb), d, out + i);
        } else {
            hn::StoreU(hn::IfThenElse(m0, va, vb), d, out + i);
        }
    }
    return i;
}

template <class T>
HWY_INLINE void where_impl(const bool* c, std::ptrdiff_t sc, const T* a, std::ptrdiff_t sa, const T* b,
                           std::ptrdiff_t sb, T* out, std::size_t n) {
    if (n == 0) return;
    std::size_t i = 0;
    const auto unit = [](std::ptrdiff_t s) { return s == 0 || s == 1; };
    if (unit(sc) && unit(sa) && unit(sb)) {
        switch ((sc == 1 ? 4 : 0) | (sa == 1 ? 2 : 0) | (sb == 1 ? 1 : 0)) {
            case 0: i = where_loop<false, false, false>(c, a, b, out, n); break;
            case 1: i = where_loop<false, false, true>(c, a, b, out, n); break;
            case 2: i = where_loop<false, true, false>(c, a, b, out, n); break;
            case 3: i = where_loop<false, true, true>(c, a, b, out, n); break;
            case 4: i = where_loop<true, false, false>(c, a, b, out, n); break;
            case 5: i = where_loop<true, false, true>(c, a, b, out, n); break;
            case 6: i = where_loop<true, true, false>(c, a, b, out, n); break;
            default: i = where_loop<true, true, true>(c, a, b, out, n); break;
        }
    }
    for (; i < n; ++i) {
        const auto k = static_cast<std::ptrdiff_t>(i);
        out[i] = c[k * sc] ? a[k * sa] : b[k * sb];
    }
}

inline void where_f32(const bool* c, std::ptrdiff_t sc, const float* a, std::ptrdiff_t sa, const float* b,
                      std::ptrdiff_t sb, float* out, std::size_t n) {
    where_impl<float>(c, sc, a, sa, b, sb, out, n);
}
inline void where_f64(const bool* c, std::ptrdiff_t sc, const double* a, std::ptrdiff_t sa, const double* b,
                      std::ptrdiff_t sb, double* out, std::size_t n) {
    where_impl<double>(c, sc, a, sa, b, sb, out, n);
}

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace graft
HWY_AFTER_NAMESPACE();

#endif  // toggle guard
