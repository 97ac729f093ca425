// graft/kernels/lanes-inl.hpp: per-target lane functors, one per op of the op table
// (graft/ops/table.hpp): u_<op>(d, v), b_<op>(d, a, b) on vectors, c_<op>(a, b) -> mask.
// The elementwise kernels (elementwise-inl.hpp) and the fused expression evaluator
// (graft/expr/detail/fused-inl.hpp) both apply these, so fused and eager results are the
// same bits. Numeric contracts: see elementwise-inl.hpp.
//
// Re-included once per SIMD target through graft/kernels/all-inl.hpp, OUTSIDE the
// GRAFT_HAS_KERNELS guard: these are templates only (no code unless instantiated), so
// every translation unit has them, also those that do not compile the kernels.

#include "graft/kernels/api.hpp"

#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

// graft-amalgamate: per-target
#if defined(GRAFT_KERNELS_LANES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GRAFT_KERNELS_LANES_INL_H_
#undef GRAFT_KERNELS_LANES_INL_H_
#else
#define GRAFT_KERNELS_LANES_INL_H_
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

// ---- float32 exp family (graft's own; float64 lanes keep Highway's Exp and Tanh)
//
// Range reduction x = n*ln2 + r, |r| <= ln2/2 (a little more where MulAdd is not fused):
// n = round(x*log2(e)) by the round-to-nearest "magic number" add (x*log2e + 1.5*2^23 leaves
// n, plus any bias folded into the constant, in the low mantissa bits, so 2^n is those bits
// shifted into the exponent field). exp and sigmoid split ln2 = hi + lo, hi with 15
// significant bits, so n*hi and x - n*hi are exact for |n| < 512 (Cody-Waite); tanh uses
// ln2 rounded to float (its error n*2e-9 is multiplied by e^-2|x| <= 2^-n, negligible).
// Polynomial: e^r = 1 + r*h(r), h(r) = 1 + G0 r + ... + G4 r^5: G0..G4 are the Chebyshev
// interpolant of (e^r - 1 - r)/r^2 on |r| <= 1.02*ln2/2 (mpmath.chebyfit with 5 terms, then
// rounded to float32). Relative error of the rounded fit in exact arithmetic: 1.1e-8 for e^r,
// 2.7e-8 for expm1(r) = r*h(r) (< 0.25 ULP). All three evaluate h with Horner's rule.
namespace f32c {
inline constexpr float kLog2e = 0x1.715476p+0f;
inline constexpr float kLn2Hi = 0x1.62e4p-1f;
inline constexpr float kLn2Lo = 0x1.7f7d1cp-20f;
inline constexpr float kLn2 = 0x1.62e430p-1f;
inline constexpr float kMagic = 0x1.8p23f;  // 1.5*2^23: y + kMagic rounds y to an integer
inline constexpr float kG0 = 0x1p-1f;
inline constexpr float kG1 = 0x1.5554d4p-3f;
inline constexpr float kG2 = 0x1.555514p-5f;
inline constexpr float kG3 = 0x1.121582p-7f;
inline constexpr float kG4 = 0x1.6d1b1cp-10f;
// Largest x with a finite exp(x) in float32.
inline constexpr float kExpMaxArg = 88.72283172607421875f;
}  // namespace f32c

// max(c, v) and min(c, v) that return v when v is NaN, so NaN flows through the clamps of
// the exp family and needs no blend at the end. x86 maxps/minps return their second operand
// when either is NaN; other targets (SCALAR: IEEE maxNum) get an explicit blend.
#if HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
#define GRAFT_LANES_X86_MINMAX_NAN 1
#else
#define GRAFT_LANES_X86_MINMAX_NAN 0
#endif
template <class V>
HWY_INLINE V max_keep_nan(V c, V v) {
#if GRAFT_LANES_X86_MINMAX_NAN
    return hn::Max(c, v);
#else
    return hn::IfThenElse(hn::IsNaN(v), v, hn::Max(c, v));
#endif
}
template <class V>
HWY_INLINE V min_keep_nan(V c, V v) {
#if GRAFT_LANES_X86_MINMAX_NAN
    return hn::Min(c, v);
#else
    return hn::IfThenElse(hn::IsNaN(v), v, hn::Min(c, v));
#endif
}
#undef GRAFT_LANES_X86_MINMAX_NAN

// The argument for Highway's Exp, Tanh (Expm1), Sin and Cos. On EMU128 and SCALAR, Highway
// 1.0.3 converts float lanes to int32 with a plain C++ cast (ToInt32: ConvertTo/DemoteTo),
// which is undefined for NaN (+-inf and huge values are clamped first): clang's
// -fsanitize=undefined reports it (GCC's does not check float-cast-overflow) and LLVM turns
// it into poison. Those targets get NaN lanes zeroed; every caller overrides the results of
// NaN lanes afterwards.
template <class V>
HWY_INLINE V hwy_math_arg(V x) {
#if HWY_TARGET == HWY_EMU128 || HWY_TARGET == HWY_SCALAR
    return hn::IfThenZeroElse(hn::IsNaN(x), x);
#else
    return x;
#endif
}

// Cody-Waite reduction of x (|x| <= ~150) to r; kf = x*log2e + magic carries n (+ the
// bias folded into magic) in its low mantissa bits.
template <class D, class V>
HWY_INLINE V f32_exp_reduce(D d, V x, float magic, V& kf) {
    const V vm = hn::Set(d, magic);
    kf = hn::MulAdd(x, hn::Set(d, f32c::kLog2e), vm);
    const V n = hn::Sub(kf, vm);
    const V r = hn::MulAdd(n, hn::Set(d, -f32c::kLn2Hi), x);
    return hn::MulAdd(n, hn::Set(d, -f32c::kLn2Lo), r);
}

// k*h(t*rho) with h(r) = (e^r - 1)/r (Horner). k and t are powers of two: the coefficients
// are scaled exactly, so every intermediate is the k = t = 1 value times a power of two (no
// extra rounding, as long as nothing leaves the normal range).
template <class D, class V>
HWY_INLINE V f32_expm1_ratio(D d, V rho, float k = 1.0f, float t = 1.0f) {
    const float t2 = t * t, t3 = t2 * t, t4 = t3 * t, t5 = t4 * t;
    V h = hn::Set(d, k * t5 * f32c::kG4);
    h = hn::MulAdd(h, rho, hn::Set(d, k * t4 * f32c::kG3));
    h = hn::MulAdd(h, rho, hn::Set(d, k * t3 * f32c::kG2));
    h = hn::MulAdd(h, rho, hn::Set(d, k * t2 * f32c::kG1));
    h = hn::MulAdd(h, rho, hn::Set(d, k * t * f32c::kG0));
    return hn::MulAdd(h, rho, hn::Set(d, k));
}

// The float whose exponent field is the low bits of kf (bias already folded into magic).
template <class D, class V>
HWY_INLINE V f32_pow2_bits(D d, V kf) {
    const hn::RebindToSigned<D> di;
    return hn::BitCast(d, hn::ShiftLeft<23>(hn::BitCast(di, kf)));
}

// float32 exp. x is clamped to [-104, kExpMaxArg] (exp(-104) < 2^-150 rounds to 0);
// 2^n (n in [-151, 128]) is applied as 2^(n>>1) * 2^(n-(n>>1)), both normal: p*2^(n>>1)
// is exact and the second product rounds once, also into the subnormal range (no flush)
// and without overflowing at n = 128. NaN: p is NaN (clamps keep it), so y is NaN.
template <class D, class V>
HWY_INLINE V exp_f32(D d, V x) {
    const hn::RebindToSigned<D> di;
    const V xc = min_keep_nan(hn::Set(d, f32c::kExpMaxArg), max_keep_nan(hn::Set(d, -104.0f), x));
    V kf;
    const V r = f32_exp_reduce(d, xc, f32c::kMagic, kf);
    const V p = hn::MulAdd(f32_expm1_ratio(d, r), r, hn::Set(d, 1.0f));
    const auto n = hn::Sub(hn::BitCast(di, kf), hn::BitCast(di, hn::Set(d, f32c::kMagic)));
    const auto n1 = hn::ShiftRight<1>(n);
    const auto n2 = hn::Sub(n, n1);
    const auto bias = hn::Set(di, 127);
    const V s1 = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(n1, bias)));
    const V s2 = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(n2, bias)));
    const V y = hn::Mul(hn::Mul(p, s1), s2);
    return hn::IfThenElse(hn::Gt(x, hn::Set(d, f32c::kExpMaxArg)), hn::Set(d, std::numeric_limits<float>::infinity()), y);
}

// float32 sigmoid, as 1/(1 + e^-x) without overflow or flushing: with x = m*ln2 + r
// (x clamped to [-104, 20]: beyond, the result rounds to 0 or 1), e^-x = 2^-m e^-r and
//   sigmoid(x) = 2^m / (2^m + e^-r) = N / (N + c e^-r),  N = c 2^m, c = 2^32,
// where N (m in [-150, 29]) and c e^-r (coefficients scaled exactly by c, evaluated at -r)
// are normal floats. Two roundings (denominator, quotient); a subnormal result (x < -87.3)
// comes straight from the division, rounded once (no flush). NaN flows through (c e^-r is
// NaN).
template <class D, class V>
HWY_INLINE V sigmoid_f32(D d, V x) {
    constexpr float c = 0x1p32f;
    const V xc = min_keep_nan(hn::Set(d, 20.0f), max_keep_nan(hn::Set(d, -104.0f), x));
    V kf;
    const V r = f32_exp_reduce(d, xc, f32c::kMagic + float(127 + 32), kf);
    const V ce = hn::NegMulAdd(f32_expm1_ratio(d, r, c, -1.0f), r, hn::Set(d, c));  // c*e^-r
    const V N = f32_pow2_bits(d, kf);                                                  // c*2^m
    return hn::Div(N, hn::Add(N, ce));
}

// float32 tanh: with u = -2|x| = n*ln2 + r and m = expm1(u), tanh(-|x|) = m/(2 + m), then
// x's sign. m = 2^n*r*h(r) + (2^n - 1) in one MulAdd (n in [-29, 0]; for n = 0 this is
// expm1(r) itself, so small |x| keep full relative accuracy, down to subnormal x where the
// result is x exactly). Reduced as rho = r/2 = -|x| - n*ln2/2, so u is never formed; h is
// evaluated as 2*h(2 rho) (exactly scaled coefficients). |x| is clamped at 10 (tanh rounds
// to 1 from 9.01 on). NaN flows through (m is NaN).
template <class D, class V>
HWY_INLINE V tanh_f32(D d, V x) {
    const V one = hn::Set(d, 1.0f);
    const V na = max_keep_nan(hn::Set(d, -10.0f), hn::Or(x, hn::SignBit(d)));  // -|x|
    const V vm = hn::Set(d, f32c::kMagic + 127.0f);
    const V kf = hn::MulAdd(na, hn::Set(d, 2.0f * f32c::kLog2e), vm);
    const V rho = hn::MulAdd(hn::Sub(kf, vm), hn::Set(d, -0.5f * f32c::kLn2), na);
    const V h2 = f32_expm1_ratio(d, rho, 2.0f, 2.0f);  // 2*h(r)
    const V s = f32_pow2_bits(d, kf);                    // 2^n
    const V m = hn::MulAdd(hn::Mul(s, rho), h2, hn::Sub(s, one));
    return hn::CopySign(hn::Div(m, hn::Add(hn::Set(d, 2.0f), m)), x);
}

// exp with IEEE special values: x > ln(max) -> +inf, -inf -> 0, NaN -> NaN, subnormal
// results kept. float32: exp_f32. float64: Highway's Exp, valid on [-FLT_MAX, 706], which
// returns garbage for NaN/+inf and for x in (ln(max), 706] and flushes subnormal results.
template <class D, class V>
HWY_INLINE V exp_ieee(D d, V x) {
    using T = hn::TFromD<D>;
    if constexpr (sizeof(T) == 4) {
        return exp_f32(d, x);
    } else {
        const T kMaxArg = static_cast<T>(709.782712893384);  // largest x with a finite exp
        const T kMinNormalArg = static_cast<T>(-708.3964185322641);  // below: subnormal result
        V y = hn::Exp(d, hwy_math_arg(x));
        const auto sub = hn::Lt(x, hn::Set(d, kMinNormalArg));
        if (HWY_UNLIKELY(!hn::AllFalse(d, sub))) {
            // exp(x) = exp(x/2)^2: x/2 is exact and exp(x/2) is normal; the final multiply
            // rounds once into the subnormal range (<= ~2 subnormal ULP).
            const V h = hn::Exp(d, hwy_math_arg(hn::Mul(x, hn::Set(d, T(0.5)))));
            y = hn::IfThenElse(sub, hn::Mul(h, h), y);
        }
        y = hn::IfThenElse(hn::Gt(x, hn::Set(d, kMaxArg)), hn::Set(d, std::numeric_limits<T>::infinity()), y);
        return hn::IfThenElse(hn::IsNaN(x), x, y);
    }
}

// log's and log1p's special values around their pole p (0 for log, -1 for log1p), over the
// vector result y: x == p -> -inf, x < p -> NaN, +inf -> +inf, NaN -> NaN (std::log's).
template <class D, class V>
HWY_INLINE V log_special_values(D d, V x, V y, V pole) {
    using T = hn::TFromD<D>;
    const V inf = hn::Set(d, std::numeric_limits<T>::infinity());
    y = hn::IfThenElse(hn::Eq(x, pole), hn::Neg(inf), y);
    y = hn::IfThenElse(hn::Lt(x, pole), hn::Set(d, std::numeric_limits<T>::quiet_NaN()), y);
    y = hn::IfThenElse(hn::Eq(x, inf), inf, y);
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
    return log_special_values(d, x, y, zero);
}

template <class D, class V>
HWY_INLINE V tanh_ieee(D d, V x) {
    using T = hn::TFromD<D>;
    if constexpr (sizeof(T) == 4) {
        return tanh_f32(d, x);
    } else {
        V y = hn::Tanh(d, hwy_math_arg(x));
        // Tanh saturates to ±1 for large |x|; make ±inf exact and keep NaN.
        const auto big = hn::Gt(hn::Abs(x), hn::Set(d, T(19)));
        y = hn::IfThenElse(big, hn::CopySign(hn::Set(d, T(1)), x), y);
        return hn::IfThenElse(hn::IsNaN(x), x, y);
    }
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
    const V y = hn::Sin(d, hwy_math_arg(x));
    const auto bad = hn::Not(hn::Le(hn::Abs(x), hn::Set(d, T(39000))));  // also NaN
    return fix_lanes_scalar(d, x, y, bad, [](T v) { return static_cast<T>(std::sin(v)); });
}

template <class D, class V>
HWY_INLINE V cos_ieee(D d, V x) {
    using T = hn::TFromD<D>;
    const V y = hn::Cos(d, hwy_math_arg(x));
    const auto bad = hn::Not(hn::Le(hn::Abs(x), hn::Set(d, T(39000))));
    return fix_lanes_scalar(d, x, y, bad, [](T v) { return static_cast<T>(std::cos(v)); });
}

// log1p with std::log1p's special values: Highway's Log1p, log(u)*x/(u-1) with u = 1+x
// rounded (D. Goldberg's correction of the rounding of 1+x; x itself where u rounds to 1, so
// ±0 and tiny x give x exactly). Highway documents it for x >= 0; the form holds on (-1, +inf),
// where u >= 2^-53 is a normal number (its log takes no subnormal path) and u-1 is exact for
// x < 0 (Sterbenz). The other lanes: log1p(-1) = -inf, x < -1 -> NaN, +inf -> +inf, NaN -> NaN.
template <class D, class V>
HWY_INLINE V log1p_ieee(D d, V x) {
    using T = hn::TFromD<D>;
    return log_special_values(d, x, hn::Log1p(d, x), hn::Set(d, T(-1)));
}

// expm1 with std::expm1's special values. Highway's Expm1 forms 2^q*(1+p) - 1 for |x| >= ln2/2
// (two roundings next to a cancellation: up to 4 ULP); here x = n*ln2 + r (n = round(x/ln2),
// Cody-Waite split of ln2), p = expm1(r) from Highway's Expm1 on |r| <= ln2/2 (its polynomial
// branch, r + r^2*P(r)), and expm1(x) = 2^n*p + (2^n - 1) in one multiply-add (fused where the
// target has FMA): 2^n - 1 is exact for n >= -digits; below (x < -16.98 (f32) / -37.08 (f64))
// (2^n + 2^n*p) - 1, whose result rounds to -1 or its neighbour. x is clamped to [lo, hi]
// (f32 [-20, 88], f64 [-40, 709], so 2^n is a normal number); x < lo gives -1 (the rounded
// result from -17.4 (f32) / -37.5 (f64) on), x > hi takes exp_ieee (e^x - 1 rounds as e^x
// there; overflow to +inf past ln(max)). r + r^2*P(r) loses the sign of -0 (+0 - 0 = +0): zeros
// are returned as they are; other tiny x give x exactly (r^2*P(r) underflows against r).
// NaN -> NaN, -inf -> -1, +inf -> +inf. Measured: <= 2 ULP (see elementwise-inl.hpp).
template <class D, class V>
HWY_INLINE V expm1_ieee(D d, V x) {
    using T = hn::TFromD<D>;
    constexpr bool f32 = sizeof(T) == 4;
    const hn::RebindToSigned<D> di;
    using TI = hn::TFromD<decltype(di)>;
    const V one = hn::Set(d, T(1));
    const V lo = hn::Set(d, f32 ? T(-20) : T(-40));
    const V hi = hn::Set(d, f32 ? T(88) : T(709));
    // ln2 = hi + lo, hi with 15 (f32) / 33 (f64) significant bits: n*hi is exact.
    const T kLn2Hi = f32 ? static_cast<T>(0x1.62e4p-1) : static_cast<T>(0x1.62e42feep-1);
    const T kLn2Lo = f32 ? static_cast<T>(0x1.7f7d1cp-20) : static_cast<T>(0x1.a39ef35793c76p-33);
    const V xc = hn::Min(hn::Max(hwy_math_arg(x), lo), hi);  // NaN lanes become finite (fixed at the end)
    const V n = hn::Round(hn::Mul(xc, hn::Set(d, static_cast<T>(1.44269504088896340735992468100189214L))));
    const V r = hn::MulAdd(n, hn::Set(d, -kLn2Lo), hn::MulAdd(n, hn::Set(d, -kLn2Hi), xc));
    const V p = hn::Expm1(d, r);
    constexpr int kMantBits = f32 ? 23 : 52;
    const V s = hn::BitCast(d, hn::ShiftLeft<kMantBits>(hn::Add(hn::ConvertTo(di, n), hn::Set(di, TI(f32 ? 127 : 1023)))));
    V y = hn::MulAdd(s, p, hn::Sub(s, one));
    const auto deep = hn::Lt(n, hn::Set(d, f32 ? T(-24) : T(-53)));  // 2^n - 1 not exact
    y = hn::IfThenElse(deep, hn::Sub(hn::MulAdd(s, p, s), one), y);
    const auto big = hn::Gt(x, hi);
    if (HWY_UNLIKELY(!hn::AllFalse(d, big))) y = hn::IfThenElse(big, exp_ieee(d, x), y);
    y = hn::IfThenElse(hn::Lt(x, lo), hn::Set(d, T(-1)), y);
    y = hn::IfThenElse(hn::Eq(x, hn::Zero(d)), x, y);
    return hn::IfThenElse(hn::IsNaN(x), x, y);
}

// Error-free product: returns p = fl(a*b) and sets e so that a*b = p + e exactly
// (barring underflow/overflow). FMA targets: e = fma(a, b, -p). Others: Dekker's
// product with Veltkamp splitting (needs round-to-nearest and no compiler contraction of
// these mul/sub pairs into FMA, which needs FMA-enabled -m flags on such a target).
template <class D, class V>
HWY_INLINE V two_prod(D d, V a, V b, V& e) {
    const V p = hn::Mul(a, b);
#if HWY_NATIVE_FMA
    (void)d;
    e = hn::MulSub(a, b, p);
#else
    using T = hn::TFromD<D>;
    const V split = hn::Set(d, static_cast<T>(sizeof(T) == 4 ? 4097.0 : 134217729.0));
    const V ca = hn::Mul(split, a);
    const V ah = hn::Sub(ca, hn::Sub(ca, a));
    const V al = hn::Sub(a, ah);
    const V cb = hn::Mul(split, b);
    const V bh = hn::Sub(cb, hn::Sub(cb, b));
    const V bl = hn::Sub(b, bh);
    e = hn::Add(hn::Add(hn::Add(hn::Sub(hn::Mul(ah, bh), p), hn::Mul(ah, bl)), hn::Mul(al, bh)), hn::Mul(al, bl));
#endif
    return p;
}

// Error-free sum (Knuth): returns s = fl(a+b) and sets e so that a+b = s + e exactly.
template <class V>
HWY_INLINE V two_sum(V a, V b, V& e) {
    const V s = hn::Add(a, b);
    const V bb = hn::Sub(s, a);
    e = hn::Add(hn::Sub(a, hn::Sub(s, bb)), hn::Sub(b, bb));
    return s;
}

// gelu_tanh(x) = 0.5*x*(1+tanh(z)), z = sqrt(2/pi)*(x+0.044715*x^3), evaluated as the
// identical x*sigmoid(2z) = x/(1+exp(u)), u = -2z = x*(A + B*x^2), which has no
// cancellation for negative x. u is carried as a double-T (u_hi + u_lo, relative error
// ~2^-46 for float) because exp amplifies the absolute error of u (|u| reaches ~100
// before the result underflows). With e = exp(-|u|) (never overflows):
//   u <= 0 (x >= 0): x/(1+e);  u > 0 (x < 0): x*e/(1+e),
// and where e is subnormal (u > ~87) x*e is formed as (x*h)*h, h = exp(-|u|/2), so the
// tiny/subnormal results of the far negative tail are rounded once.
template <class D, class V>
HWY_INLINE V gelu_tanh_ieee(D d, V x) {
    using T = hn::TFromD<D>;
    constexpr bool f32 = sizeof(T) == 4;
    // A = -2*sqrt(2/pi), B = A*0.044715, each as hi + lo.
    const V Ah = hn::Set(d, static_cast<T>(f32 ? -0x1.988454p+0 : -0x1.9884533d43651p+0));
    const V Al = hn::Set(d, static_cast<T>(f32 ? 0x1.857936p-25 : 0x1.cbc0d30ebfd15p-54));
    const V Bh = hn::Set(d, static_cast<T>(f32 ? -0x1.2444f2p-4 : -0x1.2444f2a4d8b4bp-4));
    const V Bl = hn::Set(d, static_cast<T>(f32 ? -0x1.49b16ap-29 : 0x1.6c843a29d1c70p-61));
    const T kClamp = f32 ? T(20) : T(40);  // beyond: e == 0 exactly in T
    const T kMinNormalArg = f32 ? static_cast<T>(-87.33654) : static_cast<T>(-708.3964185322641);
    const V one = hn::Set(d, T(1));
    const V half = hn::Set(d, T(0.5));
    const V xc = hn::Min(hn::Max(x, hn::Set(d, -kClamp)), hn::Set(d, kClamp));
    V se, te, qe, ue;
    const V s = two_prod(d, xc, xc, se);  // x^2 = s + se
    const V t = two_prod(d, Bh, s, te);   // Bh*s = t + te
    const V q = two_sum(Ah, t, qe);       // Ah + t = q + qe
    // q + ql = A + B*x^2 (dropping Bl*se and roundings of ql: ~2^-46 relative)
    const V ql = hn::Add(hn::Add(hn::MulAdd(Bl, s, Al), hn::MulAdd(Bh, se, te)), qe);
    const V u = two_prod(d, xc, q, ue);
    const V ul = hn::MulAdd(xc, ql, ue);
    const auto pos = hn::Gt(u, hn::Zero(d));  // x < 0
    const V wh = hn::IfThenElse(pos, hn::Neg(u), u);  // -|u| = wh + wl
    const V wl = hn::IfThenElse(pos, hn::Neg(ul), ul);
    const V e = hn::Mul(hn::Exp(d, hwy_math_arg(wh)), hn::Add(one, wl));
    V num = hn::IfThenElse(pos, hn::Mul(x, e), x);
    const auto sub = hn::And(pos, hn::Lt(wh, hn::Set(d, kMinNormalArg)));
    if (HWY_UNLIKELY(!hn::AllFalse(d, sub))) {
        const V h = hn::Mul(hn::Exp(d, hwy_math_arg(hn::Mul(wh, half))), hn::MulAdd(wl, half, one));
        num = hn::IfThenElse(sub, hn::Mul(hn::Mul(x, h), h), num);
    }
    const V r = hn::Div(num, hn::Add(one, e));
    return hn::IfThenElse(hn::IsNaN(x), x, r);
}

// erfc for float32 lanes, shared by gelu_erf_f32 and normal_cdf_f32. For xa = |x| (clamped
// to [0, 15] by the caller) and a = xa/sqrt(2):
//   erfc(a) = R(a)*exp(-a^2),  R(a) = (1 + P(q))/(1 + 2a),  q = (a-2)/(a+2) in [-1, 0.69],
// P a degree-11 polynomial (Chebyshev interpolant of (1+2a)*erfcx(a)-1 on a in [0, 10.7],
// relative fit error 1.5e-9, the same form as N. Juffa's erfcf). exp(-a^2) uses
// a^2 = x^2/2 = s_hi + s_lo from an exact product of x (the rounding of a or a^2 would cost
// ~2a^2 eps relative, ~200 ULP in the tail): E = exp(-s_hi)*(1-s_lo).
// Returns R and sets E, s_hi and s_lo.
template <class D, class V>
HWY_INLINE V erfc_scaled_f32(D d, V xa, V& E, V& s_hi, V& s_lo) {
    const V one = hn::Set(d, 1.0f);
    const V two = hn::Set(d, 2.0f);
    const V half = hn::Set(d, 0.5f);
    V pe;
    const V p = two_prod(d, xa, xa, pe);
    s_hi = hn::Mul(p, half);  // a^2 = s_hi + s_lo exactly (scaling by 1/2)
    s_lo = hn::Mul(pe, half);
    const V a = hn::Mul(xa, hn::Set(d, 0.70710678118654752f));
    const V q = hn::Div(hn::Sub(a, two), hn::Add(a, two));
    V r = hn::Set(d, 0x1.614d92p-14f);
    r = hn::MulAdd(r, q, hn::Set(d, 0x1.768802p-13f));
    r = hn::MulAdd(r, q, hn::Set(d, -0x1.a566ep-12f));
    r = hn::MulAdd(r, q, hn::Set(d, -0x1.77201ap-10f));
    r = hn::MulAdd(r, q, hn::Set(d, 0x1.47c83cp-10f));
    r = hn::MulAdd(r, q, hn::Set(d, 0x1.1d82dp-7f));
    r = hn::MulAdd(r, q, hn::Set(d, -0x1.071dccp-7f));
    r = hn::MulAdd(r, q, hn::Set(d, -0x1.bc2868p-5f));
    r = hn::MulAdd(r, q, hn::Set(d, 0x1.4ff9e6p-3f));
    r = hn::MulAdd(r, q, hn::Set(d, -0x1.5407cap-3f));
    r = hn::MulAdd(r, q, hn::Set(d, -0x1.7bf5e8p-4f));
    r = hn::MulAdd(r, q, hn::Set(d, 0x1.1ba038p-2f));
    E = hn::Mul(hn::Exp(d, hwy_math_arg(hn::Neg(s_hi))), hn::NegMulAdd(s_lo, one, one));  // exp(-a^2)
    return hn::Div(hn::Add(one, r), hn::MulAdd(two, a, one));  // exp(a^2)*erfc(a)
}

// h = exp(-a^2/2) from a^2 = s_hi + s_lo (as erfc_scaled_f32's E): where E = exp(-a^2) is
// subnormal (s_hi > 87), a result y*E is formed as (y*h)*h, so that it is rounded once.
template <class D, class V>
HWY_INLINE V exp_half_neg_a2_f32(D d, V s_hi, V s_lo) {
    return hn::Mul(hn::Exp(d, hwy_math_arg(hn::Mul(s_hi, hn::Set(d, -0.5f)))),
                   hn::NegMulAdd(s_lo, hn::Set(d, 0.5f), hn::Set(d, 1.0f)));
}

// Exact gelu for float32 lanes: 0.5*x*erfc(a), a = -x/sqrt(2), with erfc(|a|) = R*E from
// erfc_scaled_f32:
//   x >= 0: x*(1 - 0.5*erfc(|a|));  x < 0: (0.5*x*R)*exp(-a^2), formed as ((0.5*x*R)*h)*h,
// h = exp(-a^2/2), where exp(-a^2) is subnormal (so subnormal results are rounded once).
template <class D, class V>
HWY_INLINE V gelu_erf_f32(D d, V x) {
    const V one = hn::Set(d, 1.0f);
    const V half = hn::Set(d, 0.5f);
    const V xa = hn::Min(hn::Abs(x), hn::Set(d, 15.0f));  // beyond: result x or 0 (or NaN for -inf)
    V E, s_hi, s_lo;
    const V R = erfc_scaled_f32(d, xa, E, s_hi, s_lo);
    const V hR = hn::Mul(half, R);
    const auto neg = hn::Lt(x, hn::Zero(d));
    const V rpos = hn::Mul(x, hn::NegMulAdd(hR, E, one));
    const V xhR = hn::Mul(x, hR);
    V rneg = hn::Mul(xhR, E);
    const auto sub = hn::And(neg, hn::Gt(s_hi, hn::Set(d, 87.0f)));
    if (HWY_UNLIKELY(!hn::AllFalse(d, sub))) {
        const V h = exp_half_neg_a2_f32(d, s_hi, s_lo);
        rneg = hn::IfThenElse(sub, hn::Mul(hn::Mul(xhR, h), h), rneg);
        // x < -15 (a clamped): the result underflows; x*0 gives -0, and NaN for -inf as
        // 0.5*x*erfc(+inf) does.
        rneg = hn::IfThenElse(hn::Lt(x, hn::Set(d, -15.0f)), hn::Mul(x, hn::Zero(d)), rneg);
    }
    const V res = hn::IfThenElse(neg, rneg, rpos);
    return hn::IfThenElse(hn::IsNaN(x), x, res);
}

// The standard normal CDF for float32 lanes: Phi(x) = 0.5*erfc(a), a = -x/sqrt(2), with
// erfc(|a|) = R*E from erfc_scaled_f32 (gelu_erf_f32 without the factor x):
//   x >= 0: 1 - 0.5*R*E (one fused multiply-subtract);  x < 0: (0.5*R)*E, formed as
// ((0.5*R)*h)*h, h = exp(-a^2/2), where E is subnormal (x < -13.19), so the subnormal
// results of the tail are rounded once. x < -15 (a clamped) gives +0 (Phi(-15) = 3.7e-51
// underflows), Phi(-inf) = +0, Phi(+inf) = 1, Phi(±0) = 0.5, NaN gives NaN.
template <class D, class V>
HWY_INLINE V normal_cdf_f32(D d, V x) {
    const V one = hn::Set(d, 1.0f);
    const V half = hn::Set(d, 0.5f);
    const V xa = hn::Min(hn::Abs(x), hn::Set(d, 15.0f));
    V E, s_hi, s_lo;
    const V R = erfc_scaled_f32(d, xa, E, s_hi, s_lo);
    const V hR = hn::Mul(half, R);
    const auto neg = hn::Lt(x, hn::Zero(d));
    const V rpos = hn::NegMulAdd(hR, E, one);
    V rneg = hn::Mul(hR, E);
    const auto sub = hn::And(neg, hn::Gt(s_hi, hn::Set(d, 87.0f)));
    if (HWY_UNLIKELY(!hn::AllFalse(d, sub))) {
        const V h = exp_half_neg_a2_f32(d, s_hi, s_lo);
        rneg = hn::IfThenElse(sub, hn::Mul(hn::Mul(hR, h), h), rneg);
        rneg = hn::IfThenZeroElse(hn::Lt(x, hn::Set(d, -15.0f)), rneg);
    }
    const V res = hn::IfThenElse(neg, rneg, rpos);
    return hn::IfThenElse(hn::IsNaN(x), x, res);
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
        if constexpr (sizeof(hn::TFromD<D>) == 4) {
            return sigmoid_f32(d, x);
        } else {
            // e = exp(-|x|) never overflows; x >= 0: 1/(1+e), x < 0: e/(1+e) (keeps
            // tiny/subnormal results for very negative x instead of 1/(1+inf) = 0).
            const V one = hn::Set(d, hn::TFromD<D>(1));
            const V e = exp_ieee(d, hn::Neg(hn::Abs(x)));
            const V num = hn::IfThenElse(hn::Lt(x, hn::Zero(d)), e, one);
            return hn::Div(num, hn::Add(one, e));
        }
    }
};
struct u_relu {
    template <class D, class V> HWY_INLINE V operator()(D d, V x) const {
        return hn::IfThenZeroElse(hn::Lt(x, hn::Zero(d)), x);
    }
};
struct u_gelu_tanh {
    template <class D, class V> HWY_INLINE V operator()(D d, V x) const { return gelu_tanh_ieee(d, x); }
};
struct u_sin { template <class D, class V> HWY_INLINE V operator()(D d, V x) const { return sin_ieee(d, x); } };
struct u_cos { template <class D, class V> HWY_INLINE V operator()(D d, V x) const { return cos_ieee(d, x); } };
struct u_log1p { template <class D, class V> HWY_INLINE V operator()(D d, V x) const { return log1p_ieee(d, x); } };
struct u_expm1 { template <class D, class V> HWY_INLINE V operator()(D d, V x) const { return expm1_ieee(d, x); } };

// gelu for float lanes (float32 arithmetic, see gelu_erf_f32).
struct u_gelu_f32 {
    template <class D, class V> HWY_INLINE V operator()(D d, V x) const { return gelu_erf_f32(d, x); }
};
// normal_cdf for float lanes (float32 arithmetic, see normal_cdf_f32).
struct u_normal_cdf_f32 {
    template <class D, class V> HWY_INLINE V operator()(D d, V x) const { return normal_cdf_f32(d, x); }
};
// normal_cdf for double lanes: scalar std::erfc per lane, the formula graft::normal_cdf
// used before it had a kernel (so float64 results did not change): 0.5*erfc(-x*sqrt(2)/2).
struct u_normal_cdf_f64 {
    template <class D, class V> HWY_INLINE V operator()(D d, V x) const {
        using T = hn::TFromD<D>;
        HWY_ALIGN T b[kMaxLanes<T>];
        hn::Store(x, d, b);
        const std::size_t n = hn::Lanes(d);
        const T sqrt2 = static_cast<T>(1.41421356237309504880168872420969808L);
        for (std::size_t i = 0; i < n; ++i) b[i] = T(0.5) * std::erfc(-b[i] * sqrt2 / T(2));
        return hn::Load(d, b);
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


// ---------------------------------------------------------------- binary functors


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
        for (std::size_t i = 0; i < n; ++i) ba[i] = pow_value(ba[i], bb[i]);
        return hn::Load(d, ba);
    }
};

// ---------------------------------------------------------------- masks and compare functors

// Mask → 0/1 bytes: Lanes(d) bools stored at out.
template <class D, class M>
HWY_INLINE void store_mask_bytes(D d, M m, bool* out) {
    using T = hn::TFromD<D>;
    const hn::Rebind<std::uint8_t, D> du8;
    if constexpr (sizeof(T) == 4) {
        const hn::RebindToSigned<D> di;
        const auto v = hn::IfThenElseZero(hn::RebindMask(di, m), hn::Set(di, 1));
        hn::StoreU(hn::DemoteTo(du8, v), du8, reinterpret_cast<std::uint8_t*>(out));
    } else {
        const hn::Rebind<std::int32_t, D> di;
        const auto v = hn::DemoteTo(di, hn::IfThenElseZero(m, hn::Set(d, T(1))));
        hn::StoreU(hn::DemoteTo(du8, v), du8, reinterpret_cast<std::uint8_t*>(out));
    }
}

// Lanes(d) bools at c → mask (any nonzero byte is true).
template <class D>
HWY_INLINE auto load_bool_mask(D d, const bool* c) {
    using T = hn::TFromD<D>;
    const hn::Rebind<std::uint8_t, D> du8;
    const hn::Rebind<std::int32_t, D> di;
    const auto vi = hn::PromoteTo(di, hn::LoadU(du8, reinterpret_cast<const std::uint8_t*>(c)));
    if constexpr (sizeof(T) == 4) {
        return hn::RebindMask(d, hn::Ne(vi, hn::Zero(di)));
    } else {
        return hn::Ne(hn::PromoteTo(d, vi), hn::Zero(d));
    }
}

// Vector compares. All ordered (false for NaN) except ne = !eq (true for NaN).
struct c_eq { template <class V> HWY_INLINE auto operator()(V a, V b) const { return hn::Eq(a, b); } };
struct c_ne { template <class V> HWY_INLINE auto operator()(V a, V b) const { return hn::Not(hn::Eq(a, b)); } };
struct c_lt { template <class V> HWY_INLINE auto operator()(V a, V b) const { return hn::Lt(a, b); } };
struct c_le { template <class V> HWY_INLINE auto operator()(V a, V b) const { return hn::Le(a, b); } };
struct c_gt { template <class V> HWY_INLINE auto operator()(V a, V b) const { return hn::Gt(a, b); } };
struct c_ge { template <class V> HWY_INLINE auto operator()(V a, V b) const { return hn::Ge(a, b); } };
// ---------------------------------------------------------------- extra lanes (expr)

// sign(x): -1, +0 or +1; NaN -> NaN (as graft::sign).
struct u_sign {
    template <class D, class V> HWY_INLINE V operator()(D d, V x) const {
        using T = hn::TFromD<D>;
        // PyTorch's (0 < x) - (x < 0): NaN and -0 give +0.
        const V zero = hn::Zero(d);
        return hn::IfThenElse(hn::Gt(x, zero), hn::Set(d, T(1)), hn::IfThenElse(hn::Lt(x, zero), hn::Set(d, T(-1)), zero));
    }
};

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace graft
HWY_AFTER_NAMESPACE();

#endif  // toggle guard
