// graft/kernels/elementwise-inl.hpp: per-target unary / binary / compare / where
// kernels. Re-included once per SIMD target by hwy/foreach_target.h through
// graft/kernels/all-inl.hpp; do not include it directly (use graft/kernels/dispatch.hpp).
//
// Numeric contract (checked by tests/test_kernels_elementwise.cpp against
// graft/kernels/reference.hpp on every compiled target). "ULP" is measured against the
// correctly rounded result; all kernels keep float32/float64 denormals (no FTZ/DAZ).
//   neg, abs, sqrt, relu, rsqrt : exact (IEEE: sqrt correctly rounded, rsqrt = 1/sqrt
//                                  with two correctly rounded ops, <= 1 ULP).
//                                  abs(-0) = +0; relu(x) = x < 0 ? 0 : x, so
//                                  relu(-0) = -0 and relu(NaN) = NaN (PyTorch).
//   exp  : Highway Exp (<= 1 ULP) on its valid range; fixed up to IEEE: x > ln(max) → +inf,
//          -inf → 0, NaN → NaN; results in the denormal range are kept (not flushed).
//   log  : Highway Log (<= 4 ULP); denormal inputs are rescaled; log(±0) = -inf,
//          log(x<0) = NaN, log(+inf) = +inf, NaN → NaN.
//   tanh : Highway Tanh (<= 4 ULP); tanh(±inf) = ±1, NaN → NaN.
//   sigmoid : e = exp(-|x|); x >= 0: 1/(1+e), x < 0: e/(1+e). No overflow, no NaN for
//          finite or infinite x (sigmoid(-inf) = 0, sigmoid(+inf) = 1), and tiny results
//          for very negative x are kept (PyTorch's float 1/(1+exp(-x)) flushes them to 0
//          below x = -88.7). <= 4 ULP (exp error + 2 roundings).
//   gelu : 0.5*x*erfc(-x/sqrt(2)). float32: computed in float64 lanes with the
//          Numerical-Recipes t*exp(-z^2+P(t)) erfc (relative error < 1.2e-7), so the
//          float32 result has relative error < 2e-7 everywhere (also in the far
//          negative tail). float64: scalar std::erfc per lane, with a first-order
//          correction for the rounding of x/sqrt(2) (<= 4 ULP in tests).
//   gelu_tanh : 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3))), as PyTorch; error is that
//          of Tanh amplified near the zero of (1+tanh) for very negative x
//          (absolute error <= ~4 ULP of |x|).
//   sin, cos : Highway Sin/Cos (<= 3 ULP) for |x| <= 39000; other lanes (large |x|,
//          ±inf, NaN) are recomputed with std::sin/std::cos, so results are libm's.
//   add, sub, mul, div : exact IEEE (div by 0 → ±inf or NaN).
//   pow  : scalar std::pow per element (exact libm semantics: 0^0 = 1, negative base
//          with integral exponent, pow(x, ±inf), ...). Not vectorized.
//   maximum, minimum : NaN if either operand is NaN (PyTorch); otherwise max/min. The
//          sign of a zero result for max(+0,-0) is unspecified (compares equal).
//   compare : IEEE ordered compares (any NaN → false, except ne → true).
//   where : out = c ? a : b, bitwise copy.

#include "graft/kernels/api.hpp"

#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

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

// Upper bound on lanes of any vector of this target, for stack buffers.
template <class T>
inline constexpr std::size_t kMaxLanes = HWY_MAX_BYTES / sizeof(T) > 0 ? HWY_MAX_BYTES / sizeof(T) : 1;

// ---------------------------------------------------------------- math helpers

// exp with IEEE special values. Highway's Exp is valid on [-FLT_MAX, 104]
// (float64: 706) and returns garbage for NaN/+inf and for x in (ln(max), 104].
template <class D, class V>
HWY_INLINE V exp_ieee(D d, V x) {
    using T = hn::TFromD<D>;
    // Largest x with a finite exp: float 88.72283172607421875, double 709.782712893384.
    const T kMaxArg = sizeof(T) == 4 ? static_cast<T>(88.72283172607421875) : static_cast<T>(709.782712893384);
    // Below this x the result is subnormal; Highway flushes it to zero.
    const T kMinNormalArg = sizeof(T) == 4 ? static_cast<T>(-87.33654) : static_cast<T>(-708.3964185322641);
    V y = hn::Exp(d, x);
    const auto sub = hn::Lt(x, hn::Set(d, kMinNormalArg));
    if (HWY_UNLIKELY(!hn::AllFalse(d, sub))) {
        // exp(x) = exp(x/2)^2: x/2 is exact and exp(x/2) is normal; the final multiply
        // rounds once into the subnormal range (<= ~2 subnormal ULP).
        const V h = hn::Exp(d, hn::Mul(x, hn::Set(d, T(0.5))));
        y = hn::IfThenElse(sub, hn::Mul(h, h), y);
    }
    y = hn::IfThenElse(hn::Gt(x, hn::Set(d, kMaxArg)), hn::Set(d, std::numeric_limits<T>::infinity()), y);
    return hn::IfThenElse(hn::IsNaN(x), x, y);
}

template <class D, class V>
HWY_INLINE V log_ieee(D d, V x) {
    using T = hn::TFromD<D>;
    const V zero = hn::Zero(d);
    const auto denorm = hn::And(hn::Gt(x, zero), hn::Lt(x, hn::Set(d, std::numeric_limits<T>::min())));
    V y;
    if (HWY_UNLIKELY(!hn::AllFalse(d, denorm))) {
        // Scale denormals by 2^k (exact), subtract k*ln2 (split in hi+lo for accuracy).
        const T k = sizeof(T) == 4 ? T(32) : T(64);
        const T scale = sizeof(T) == 4 ? static_cast<T>(4294967296.0) : static_cast<T>(18446744073709551616.0);
        const T ln2_hi = static_cast<T>(0.693145751953125);          // exact in float
        const T ln2_lo = static_cast<T>(1.42860682030941723212e-6);  // ln2 - ln2_hi
        const V xs = hn::IfThenElse(denorm, hn::Mul(x, hn::Set(d, scale)), x);
        V ys = hn::Log(d, xs);
        const V corr = hn::IfThenElseZero(denorm, hn::Set(d, k));
        ys = hn::NegMulAdd(corr, hn::Set(d, ln2_lo), ys);
        y = hn::NegMulAdd(corr, hn::Set(d, ln2_hi), ys);
    } else {
        y = hn::Log(d, x);
    }
    const V inf = hn::Set(d, std::numeric_limits<T>::infinity());
    y = hn::IfThenElse(hn::Eq(x, zero), hn::Neg(inf), y);
    y = hn::IfThenElse(hn::Lt(x, zero), hn::Set(d, std::numeric_limits<T>::quiet_NaN()), y);
    y = hn::IfThenElse(hn::Eq(x, inf), inf, y);
    return hn::IfThenElse(hn::IsNaN(x), x, y);
}

template <class D, class V>
HWY_INLINE V tanh_ieee(D d, V x) {
    using T = hn::TFromD<D>;
    V y = hn::Tanh(d, x);
    // Tanh saturates to ±1 for large |x|; make ±inf exact and keep NaN.
    const auto big = hn::Gt(hn::Abs(x), hn::Set(d, static_cast<T>(sizeof(T) == 4 ? 9.0 : 19.0)));
    y = hn::IfThenElse(big, hn::CopySign(hn::Set(d, T(1)), x), y);
    return hn::IfThenElse(hn::IsNaN(x), x, y);
}

// Lanes where the vector result is not trusted are recomputed by a scalar function.
template <class D, class V, class M, class F>
HWY_INLINE V fix_lanes_scalar(D d, V x, V y, M bad, F f) {
    using T = hn::TFromD<D>;
    if (HWY_LIKELY(hn::AllFalse(d, bad))) return y;
    HWY_ALIGN T bx[kMaxLanes<T>];
    HWY_ALIGN T by[kMaxLanes<T>];
    hn::Store(x, d, bx);
    hn::Store(hn::IfThenElse(bad, hn::Set(d, T(1)), hn::Zero(d)), d, by);
    const std::size_t n = hn::Lanes(d);
    HWY_ALIGN T bm[kMaxLanes<T>];
    for (std::size_t i = 0; i < n; ++i) bm[i] = by[i];
    hn::Store(y, d, by);
    for (std::size_t i = 0; i < n; ++i)
        if (bm[i] != T(0)) by[i] = f(bx[i]);
    return hn::Load(d, by);
}

template <class D, class V>
HWY_INLINE V sin_ieee(D d, V x) {
    using T = hn::TFromD<D>;
    const V y = hn::Sin(d, x);
    const auto bad = hn::Not(hn::Le(hn::Abs(x), hn::Set(d, T(39000))));  // also NaN
    return fix_lanes_scalar(d, x, y, bad, [](T v) { return static_cast<T>(std::sin(v)); });
}

template <class D, class V>
HWY_INLINE V cos_ieee(D d, V x) {
    using T = hn::TFromD<D>;
    const V y = hn::Cos(d, x);
    const auto bad = hn::Not(hn::Le(hn::Abs(x), hn::Set(d, T(39000))));
    return fix_lanes_scalar(d, x, y, bad, [](T v) { return static_cast<T>(std::cos(v)); });
}

// erfc(z) for float64 lanes, Numerical Recipes "erfcc": relative error < 1.2e-7.
template <class D, class V>
HWY_INLINE V erfc_nr(D d, V z) {
    using T = hn::TFromD<D>;
    const V az = hn::Abs(z);
    const V one = hn::Set(d, T(1));
    const V t = hn::Div(one, hn::MulAdd(hn::Set(d, T(0.5)), az, one));
    V p = hn::Set(d, T(0.17087277));
    p = hn::MulAdd(p, t, hn::Set(d, T(-0.82215223)));
    p = hn::MulAdd(p, t, hn::Set(d, T(1.48851587)));
    p = hn::MulAdd(p, t, hn::Set(d, T(-1.13520398)));
    p = hn::MulAdd(p, t, hn::Set(d, T(0.27886807)));
    p = hn::MulAdd(p, t, hn::Set(d, T(-0.18628806)));
    p = hn::MulAdd(p, t, hn::Set(d, T(0.09678418)));
    p = hn::MulAdd(p, t, hn::Set(d, T(0.37409196)));
    p = hn::MulAdd(p, t, hn::Set(d, T(1.00002368)));
    p = hn::MulAdd(p, t, hn::Set(d, T(-1.26551223)));
    const V arg = hn::Sub(p, hn::Mul(az, az));
    const V r = hn::Mul(t, exp_ieee(d, arg));
    // erfc(-z) = 2 - erfc(z)
    return hn::IfThenElse(hn::Lt(z, hn::Zero(d)), hn::Sub(hn::Set(d, T(2)), r), r);
}

// ---------------------------------------------------------------- unary functors

struct u_neg { template <class D, class V> HWY_INLINE V operator()(D, V x) const { return hn::Neg(x); } };
struct u_abs { template <class D, class V> HWY_INLINE V operator()(D, V x) const { return hn::Abs(x); } };
struct u_exp { template <class D, class V> HWY_INLINE V operator()(D d, V x) const { return exp_ieee(d, x); } };
struct u_log { template <class D, class V> HWY_INLINE V operator()(D d, V x) const { return log_ieee(d, x); } };
struct u_sqrt { template <class D, class V> HWY_INLINE V operator()(D, V x) const { return hn::Sqrt(x); } };
struct u_rsqrt {
    template <class D, class V> HWY_INLINE V operator()(D d, V x) const {
        return hn::Div(hn::Set(d, hn::TFromD<D>(1)), hn::Sqrt(x));
    }
};
struct u_tanh { template <class D, class V> HWY_INLINE V operator()(D d, V x) const { return tanh_ieee(d, x); } };
struct u_sigmoid {
    template <class D, class V> HWY_INLINE V operator()(D d, V x) const {
        // e = exp(-|x|) never overflows; x >= 0: 1/(1+e), x < 0: e/(1+e) (keeps
        // tiny/subnormal results for very negative x instead of 1/(1+inf) = 0).
        const V one = hn::Set(d, hn::TFromD<D>(1));
        const V e = exp_ieee(d, hn::Neg(hn::Abs(x)));
        const V num = hn::IfThenElse(hn::Lt(x, hn::Zero(d)), e, one);
        return hn::Div(num, hn::Add(one, e));
    }
};
struct u_relu {
    template <class D, class V> HWY_INLINE V operator()(D d, V x) const {
        return hn::IfThenZeroElse(hn::Lt(x, hn::Zero(d)), x);
    }
};
struct u_gelu_tanh {
    template <class D, class V> HWY_INLINE V operator()(D d, V x) const {
        using T = hn::TFromD<D>;
        const V kBeta = hn::Set(d, static_cast<T>(0.7978845608028654));  // sqrt(2/pi)
        const V kKappa = hn::Set(d, static_cast<T>(0.044715));
        const V x3 = hn::Mul(hn::Mul(x, x), x);
        const V inner = hn::Mul(kBeta, hn::MulAdd(kKappa, x3, x));
        const V half_x = hn::Mul(hn::Set(d, T(0.5)), x);
        return hn::Mul(half_x, hn::Add(hn::Set(d, T(1)), tanh_ieee(d, inner)));
    }
};
struct u_sin { template <class D, class V> HWY_INLINE V operator()(D d, V x) const { return sin_ieee(d, x); } };
struct u_cos { template <class D, class V> HWY_INLINE V operator()(D d, V x) const { return cos_ieee(d, x); } };

// gelu for float lanes: D is a float tag with as many lanes as a full float64 vector.
struct u_gelu_f32 {
    template <class D, class V> HWY_INLINE V operator()(D d, V x) const {
        const hn::Rebind<double, D> dd;
        const auto xd = hn::PromoteTo(dd, x);
        const auto z = hn::Mul(xd, hn::Set(dd, -0.70710678118654752440));
        const auto r = hn::Mul(hn::Mul(hn::Set(dd, 0.5), xd), erfc_nr(dd, z));
        // DemoteTo saturates on some targets: keep gelu(+inf) = +inf.
        return hn::IfThenElse(hn::Eq(x, hn::Set(d, std::numeric_limits<float>::infinity())), x, hn::DemoteTo(d, r));
    }
};
// gelu for double lanes: scalar std::erfc per lane.
struct u_gelu_f64 {
    template <class D, class V> HWY_INLINE V operator()(D d, V x) const {
        using T = hn::TFromD<D>;
        HWY_ALIGN T b[kMaxLanes<T>];
        hn::Store(x, d, b);
        const std::size_t n = hn::Lanes(d);
        // z = -x/sqrt(2) rounded would cost ~2 z^2 eps relative error in erfc; carry
        // the rounding error zl of z and correct to first order:
        // erfc(z + zl) ~= erfc(z) - zl * 2/sqrt(pi) * exp(-z^2).
        const T c_hi = 0.70710678118654757;     // 1/sqrt(2) rounded to double
        const T c_lo = -4.8336466567264567e-17;  // 1/sqrt(2) - c_hi
        for (std::size_t i = 0; i < n; ++i) {
            const T xi = b[i];
            if (!(xi - xi == T(0))) {  // ±inf or NaN
                b[i] = T(0.5) * xi * std::erfc(-xi * c_hi);
                continue;
            }
            const T p = xi * c_hi;
            const T pl = std::fma(xi, c_hi, -p) + xi * c_lo;
            const T z = -p;
            const T zl = -pl;
            const T e = std::erfc(z) - zl * T(1.1283791670955126) * std::exp(-z * z);
            b[i] = T(0.5) * xi * e;
        }
        return hn::Load(d, b);
    }
};

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
                const hn::Rebind<float, hn::ScalableTag<double>> df;
                return drive_unary(df, u_gelu_f32{}, a, sa, out, n);
            } else {
                return drive_unary(d, u_gelu_f64{}, a, sa, out, n);
            }
        case unary_op::gelu_tanh: return drive_unary(d, u_gelu_tanh{}, a, sa, out, n);
        case unary_op::sin: return drive_unary(d, u_sin{}, a, sa, out, n);
        case unary_op::cos: return drive_unary(d, u_cos{}, a, sa, out, n);
    }
}

inline void unary_f32(unary_op op, const float* a, std::ptrdiff_t sa, float* out, std::size_t n) {
    unary_impl<float>(op, a, sa, out, n);
}
inline void unary_f64(unary_op op, const double* a, std::ptrdiff_t sa, double* out, std::size_t n) {
    unary_impl<double>(op, a, sa, out, n);
}

// ---------------------------------------------------------------- binary

struct b_add { template <class D, class V> HWY_INLINE V operator()(D, V a, V b) const { return hn::Add(a, b); } };
struct b_sub { template <class D, class V> HWY_INLINE V operator()(D, V a, V b) const { return hn::Sub(a, b); } };
struct b_mul { template <class D, class V> HWY_INLINE V operator()(D, V a, V b) const { return hn::Mul(a, b); } };
struct b_div { template <class D, class V> HWY_INLINE V operator()(D, V a, V b) const { return hn::Div(a, b); } };
struct b_max {
    template <class D, class V> HWY_INLINE V operator()(D, V a, V b) const {
        const V m = hn::IfThenElse(hn::Gt(a, b), a, b);
        return hn::IfThenElse(hn::IsNaN(a), a, m);  // b NaN: Gt false → b
    }
};
struct b_min {
    template <class D, class V> HWY_INLINE V operator()(D, V a, V b) const {
        const V m = hn::IfThenElse(hn::Lt(a, b), a, b);
        return hn::IfThenElse(hn::IsNaN(a), a, m);
    }
};
struct b_pow {
    template <class D, class V> HWY_INLINE V operator()(D d, V a, V b) const {
        using T = hn::TFromD<D>;
        HWY_ALIGN T ba[kMaxLanes<T>];
        HWY_ALIGN T bb[kMaxLanes<T>];
        hn::Store(a, d, ba);
        hn::Store(b, d, bb);
        const std::size_t n = hn::Lanes(d);
        for (std::size_t i = 0; i < n; ++i) ba[i] = std::pow(ba[i], bb[i]);
        return hn::Load(d, ba);
    }
};

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
                out[i] = std::pow(a[static_cast<std::ptrdiff_t>(i) * sa], b[static_cast<std::ptrdiff_t>(i) * sb]);
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

template <class T, class Cmp>
HWY_INLINE void drive_compare(Cmp cmp, const T* a, std::ptrdiff_t sa, const T* b, std::ptrdiff_t sb, bool* out,
                              std::size_t n) {
    if (sa == 1 && sb == 1) {
        for (std::size_t i = 0; i < n; ++i) out[i] = cmp(a[i], b[i]);
    } else {
        for (std::size_t i = 0; i < n; ++i)
            out[i] = cmp(a[static_cast<std::ptrdiff_t>(i) * sa], b[static_cast<std::ptrdiff_t>(i) * sb]);
    }
}

template <class T>
HWY_INLINE void compare_impl(compare_op op, const T* a, std::ptrdiff_t sa, const T* b, std::ptrdiff_t sb,
                             bool* out, std::size_t n) {
    switch (op) {
        case compare_op::eq: return drive_compare([](T x, T y) { return x == y; }, a, sa, b, sb, out, n);
        case compare_op::ne: return drive_compare([](T x, T y) { return x != y; }, a, sa, b, sb, out, n);
        case compare_op::lt: return drive_compare([](T x, T y) { return x < y; }, a, sa, b, sb, out, n);
        case compare_op::le: return drive_compare([](T x, T y) { return x <= y; }, a, sa, b, sb, out, n);
        case compare_op::gt: return drive_compare([](T x, T y) { return x > y; }, a, sa, b, sb, out, n);
        case compare_op::ge: return drive_compare([](T x, T y) { return x >= y; }, a, sa, b, sb, out, n);
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

template <class T>
HWY_INLINE void where_impl(const bool* c, std::ptrdiff_t sc, const T* a, std::ptrdiff_t sa, const T* b,
                           std::ptrdiff_t sb, T* out, std::size_t n) {
    if (sc == 1 && sa == 1 && sb == 1) {
        for (std::size_t i = 0; i < n; ++i) out[i] = c[i] ? a[i] : b[i];
    } else {
        for (std::size_t i = 0; i < n; ++i) {
            const auto k = static_cast<std::ptrdiff_t>(i);
            out[i] = c[k * sc] ? a[k * sa] : b[k * sb];
        }
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
