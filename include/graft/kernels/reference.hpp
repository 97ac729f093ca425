#pragma once
// graft/kernels/reference.hpp: plain scalar reference implementations of every kernel
// in graft/kernels/dispatch.hpp, templated on the element type, with the same
// signatures (strides: 0 = broadcast, 1 = contiguous, other = strided) and semantics.
//
// * float/double: computed in double (or long double for double sums) and rounded
//   once, so they serve as the accuracy oracle in tests.
// * std::int64_t and bool (binary/compare/where/reduce/matmul): the actual
//   implementation used by the ops layer for integer and boolean tensors.
//     - int64 add/sub/mul/sum/matmul wrap modulo 2^64 (two's complement, no UB),
//       like PyTorch on CPU.
//     - int64 pow: exponentiation by squaring; negative exponents follow ATen's powi
//       (1 → 1, -1 → ±1, otherwise 0).
//     - int64 div truncates toward zero and gives 0 for a zero divisor (not used by
//       graft's ops, which promote integer division to float).
//     - bool is computed as 0/1 integers and converted back with != 0: add = or,
//       mul = and, maximum = or, minimum = and (sub/div/pow on bool are rejected by
//       the ops layer, as in PyTorch).
//     - reduce on int64/bool returns int64 (sum of bool counts trues, as in PyTorch);
//       on float/double returns the input type.
//   maximum/minimum/amax/amin propagate NaN for floating types.

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "graft/kernels/api.hpp"

namespace graft::kernels::reference {

namespace detail {

template <class T>
inline constexpr bool is_fp = std::is_floating_point_v<T>;

// Wider type used for computation.
template <class T>
using wide_t = std::conditional_t<is_fp<T>, std::conditional_t<sizeof(T) <= 4, double, long double>, std::int64_t>;

constexpr std::int64_t wrap_add(std::int64_t a, std::int64_t b) {
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}
constexpr std::int64_t wrap_sub(std::int64_t a, std::int64_t b) {
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}
constexpr std::int64_t wrap_mul(std::int64_t a, std::int64_t b) {
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
}

constexpr std::int64_t ipow(std::int64_t a, std::int64_t b) {
    if (b < 0) {
        if (a == 1) return 1;
        if (a == -1) return (-(b % 2)) != 0 ? -1 : 1;
        return 0;
    }
    std::int64_t r = 1;
    while (b != 0) {
        if (b & 1) r = wrap_mul(r, a);
        b >>= 1;
        a = wrap_mul(a, a);
    }
    return r;
}

template <class T>
inline T get(const T* p, std::ptrdiff_t s, std::size_t i) {
    return p[static_cast<std::ptrdiff_t>(i) * s];
}

template <class T>
constexpr T fp_max(T a, T b) {
    if (a != a) return a;
    if (b != b) return b;
    return a > b ? a : b;
}
template <class T>
constexpr T fp_min(T a, T b) {
    if (a != a) return a;
    if (b != b) return b;
    return a < b ? a : b;
}

// For constant evaluation (the constant folding of graft/expr): clang, unlike GCC, cannot
// evaluate std::fabs(double) or std::sqrt at compile time. Exact equivalents from the bits.
template <class T>
constexpr T fabs_bits(T x) {
    using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    return std::bit_cast<T>(static_cast<U>(std::bit_cast<U>(x) & ~(U{1} << (sizeof(T) * 8 - 1))));
}

/// Correctly rounded sqrt of a double: the integer square root of its 53-bit significand
/// scaled by 2^56 (55 result bits, digit by digit in 128-bit arithmetic), rounded to
/// nearest even with the remainder as sticky bit. float: through double (innocuous double
/// rounding for sqrt, 53 >= 2*24 + 2).
template <class T>
constexpr T sqrt_bits(T x) {
    if constexpr (sizeof(T) == 4) {
        return static_cast<T>(sqrt_bits(static_cast<double>(x)));
    } else {
        if (x != x || x == T(0) || x == std::numeric_limits<T>::infinity()) return x;  // NaN, +-0, +inf
        if (x < T(0)) return std::numeric_limits<T>::quiet_NaN();
        const auto u = std::bit_cast<std::uint64_t>(x);
        constexpr std::uint64_t implicit = std::uint64_t{1} << 52;
        std::uint64_t m = u & (implicit - 1);
        int e = static_cast<int>(u >> 52);
        if (e == 0) {  // subnormal: normalize
            e = -1074;
            while (m < implicit) {
                m <<= 1;
                --e;
            }
        } else {
            m |= implicit;
            e -= 1075;
        }
        if (e % 2 != 0) {  // x = m * 2^e with e even, m in [2^52, 2^54)
            m <<= 1;
            --e;
        }
        // q = floor(sqrt(m * 2^56)) in [2^54, 2^55), num = the remainder.
        std::uint64_t num_hi = m >> 8, num_lo = m << 56, res_hi = 0, res_lo = 0;
        std::uint64_t bit_hi = std::uint64_t{1} << 46, bit_lo = 0;  // 2^110 > m * 2^56
        for (int i = 0; i < 56; ++i) {
            const std::uint64_t t_lo = res_lo + bit_lo, t_hi = res_hi + bit_hi + (t_lo < res_lo ? 1 : 0);
            const bool ge = num_hi != t_hi ? num_hi > t_hi : num_lo >= t_lo;
            res_lo = (res_lo >> 1) | (res_hi << 63);
            res_hi >>= 1;
            if (ge) {
                num_hi = num_hi - t_hi - (num_lo < t_lo ? 1 : 0);
                num_lo -= t_lo;
                res_lo += bit_lo;  // no carry: bit's set bit is above res's
                res_hi += bit_hi;
            }
            bit_lo = (bit_lo >> 2) | (bit_hi << 62);
            bit_hi >>= 2;
        }
        const std::uint64_t q = res_lo;
        std::uint64_t mant = q >> 2;
        if ((q & 2) != 0 && ((q & 1) != 0 || (num_hi | num_lo) != 0 || (mant & 1) != 0)) ++mant;
        int k = (e - 56) / 2 + 2;  // sqrt(x) = mant * 2^k
        if (mant == implicit << 1) {
            mant >>= 1;
            ++k;
        }
        return std::bit_cast<T>((static_cast<std::uint64_t>(52 + k + 1023) << 52) | (mant - implicit));
    }
}

}  // namespace detail

/// Scalar unary op (float/double only), computed in a wider type and rounded once.
template <class T>
constexpr T unary_scalar(unary_op op, T x) {
    static_assert(detail::is_fp<T>, "unary kernels are floating point only");
    using W = detail::wide_t<T>;
    const W w = static_cast<W>(x);
    switch (op) {
        case unary_op::neg: return -x;
        case unary_op::abs: return std::is_constant_evaluated() ? detail::fabs_bits(x) : std::fabs(x);
        case unary_op::exp: return static_cast<T>(std::exp(w));
        case unary_op::log: return static_cast<T>(std::log(w));
        case unary_op::sqrt: return std::is_constant_evaluated() ? detail::sqrt_bits(x) : std::sqrt(x);
        case unary_op::rsqrt: return static_cast<T>(W(1) / std::sqrt(w));
        case unary_op::tanh: return static_cast<T>(std::tanh(w));
        case unary_op::sigmoid: return static_cast<T>(W(1) / (W(1) + std::exp(-w)));
        case unary_op::relu: return x < T(0) ? T(0) : x;
        case unary_op::gelu: return static_cast<T>(W(0.5) * w * std::erfc(-w * W(0.707106781186547524400844362104849L)));
        case unary_op::gelu_tanh: {
            // 0.5*x*(1+tanh(z)) == x*sigmoid(2z), z = sqrt(2/pi)*(x+0.044715*x^3); the
            // sigmoid form has no cancellation for negative x (1+tanh(z) does, even in
            // double: 1+tanh(-43.6) is 0 in double but 1.6e-38 exactly).
            const W kBeta = W(0.797884560802865355879892119868763737L);
            const W u = W(-2) * kBeta * (w + W(0.044715L) * w * w * w);  // -2z
            if (u > W(0)) {
                const W e = std::exp(-u);
                return static_cast<T>(w * e / (W(1) + e));
            }
            return static_cast<T>(w / (W(1) + std::exp(u)));
        }
        case unary_op::normal_cdf: return static_cast<T>(W(0.5) * std::erfc(-w * W(0.707106781186547524400844362104849L)));
        case unary_op::sin: return static_cast<T>(std::sin(w));
        case unary_op::cos: return static_cast<T>(std::cos(w));
        case unary_op::log1p: return static_cast<T>(std::log1p(w));
        case unary_op::expm1: return static_cast<T>(std::expm1(w));
    }
    return x;
}

template <class T>
inline void unary(unary_op op, const T* a, std::ptrdiff_t sa, T* out, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) out[i] = unary_scalar(op, detail::get(a, sa, i));
}

/// Scalar binary op for float, double, std::int64_t and bool.
template <class T>
constexpr T binary_scalar(binary_op op, T a, T b) {
    if constexpr (std::is_same_v<T, bool>) {
        const auto r = binary_scalar<std::int64_t>(op, a ? 1 : 0, b ? 1 : 0);
        return r != 0;
    } else if constexpr (detail::is_fp<T>) {
        switch (op) {
            case binary_op::add: return a + b;
            case binary_op::sub: return a - b;
            case binary_op::mul: return a * b;
            case binary_op::div: return a / b;
            case binary_op::pow: return pow_value(a, b);
            case binary_op::maximum: return detail::fp_max(a, b);
            case binary_op::minimum: return detail::fp_min(a, b);
        }
        return a;
    } else {
        static_assert(std::is_same_v<T, std::int64_t>, "reference binary: float, double, int64 or bool");
        switch (op) {
            case binary_op::add: return detail::wrap_add(a, b);
            case binary_op::sub: return detail::wrap_sub(a, b);
            case binary_op::mul: return detail::wrap_mul(a, b);
            case binary_op::div:
                if (b == 0) return 0;
                if (b == -1) return detail::wrap_sub(0, a);
                return a / b;
            case binary_op::pow: return detail::ipow(a, b);
            case binary_op::maximum: return a > b ? a : b;
            case binary_op::minimum: return a < b ? a : b;
        }
        return a;
    }
}

template <class T>
inline void binary(binary_op op, const T* a, std::ptrdiff_t sa, const T* b, std::ptrdiff_t sb, T* out,
                   std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) out[i] = binary_scalar(op, detail::get(a, sa, i), detail::get(b, sb, i));
}

template <class T>
constexpr bool compare_scalar(compare_op op, T a, T b) {
    switch (op) {
        case compare_op::eq: return a == b;
        case compare_op::ne: return a != b;
        case compare_op::lt: return a < b;
        case compare_op::le: return a <= b;
        case compare_op::gt: return a > b;
        case compare_op::ge: return a >= b;
    }
    return false;
}

template <class T>
inline void compare(compare_op op, const T* a, std::ptrdiff_t sa, const T* b, std::ptrdiff_t sb, bool* out,
                    std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) out[i] = compare_scalar(op, detail::get(a, sa, i), detail::get(b, sb, i));
}

template <class T>
inline void where(const bool* c, std::ptrdiff_t sc, const T* a, std::ptrdiff_t sa, const T* b, std::ptrdiff_t sb,
                  T* out, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) out[i] = detail::get(c, sc, i) ? detail::get(a, sa, i) : detail::get(b, sb, i);
}

/// Result type of reduce<T>: T for float/double, std::int64_t for integers and bool.
template <class T>
using reduce_result_t = std::conditional_t<detail::is_fp<T>, T, std::int64_t>;

/// Contiguous reduction. Floating sums accumulate in a wider type (the accuracy
/// oracle); integer/bool sums wrap in int64. amax/amin need n > 0 (NaN/0 otherwise).
template <class T>
inline reduce_result_t<T> reduce(reduce_op op, const T* a, std::size_t n) {
    using R = reduce_result_t<T>;
    if constexpr (detail::is_fp<T>) {
        using W = detail::wide_t<T>;
        if (op == reduce_op::sum) {
            W s = 0;
            for (std::size_t i = 0; i < n; ++i) s += static_cast<W>(a[i]);
            return static_cast<R>(s);
        }
        if (n == 0) return std::numeric_limits<T>::quiet_NaN();
        T r = a[0];
        for (std::size_t i = 0; i < n; ++i) r = op == reduce_op::amax ? detail::fp_max(r, a[i]) : detail::fp_min(r, a[i]);
        return r;
    } else {
        if (op == reduce_op::sum) {
            std::int64_t s = 0;
            for (std::size_t i = 0; i < n; ++i) s = detail::wrap_add(s, static_cast<std::int64_t>(a[i]));
            return s;
        }
        if (n == 0) return 0;
        R r = static_cast<R>(a[0]);
        for (std::size_t i = 0; i < n; ++i) {
            const R v = static_cast<R>(a[i]);
            r = op == reduce_op::amax ? (v > r ? v : r) : (v < r ? v : r);
        }
        return r;
    }
}

/// C[m x n] = A[m x k] * B[k x n] (row-major, element leading dimensions), overwrites C.
/// float accumulates in double, double in long double, int64 wraps, bool is "any(a and b)".
template <class T>
inline void matmul(const T* a, std::ptrdiff_t lda, const T* b, std::ptrdiff_t ldb, T* c, std::ptrdiff_t ldc,
                   std::size_t m, std::size_t n, std::size_t k) {
    for (std::size_t i = 0; i < m; ++i) {
        for (std::size_t j = 0; j < n; ++j) {
            const auto ai = [&](std::size_t p) { return a[static_cast<std::ptrdiff_t>(i) * lda + static_cast<std::ptrdiff_t>(p)]; };
            const auto bj = [&](std::size_t p) { return b[static_cast<std::ptrdiff_t>(p) * ldb + static_cast<std::ptrdiff_t>(j)]; };
            T& out = c[static_cast<std::ptrdiff_t>(i) * ldc + static_cast<std::ptrdiff_t>(j)];
            if constexpr (std::is_same_v<T, bool>) {
                bool s = false;
                for (std::size_t p = 0; p < k; ++p) s = s || (ai(p) && bj(p));
                out = s;
            } else if constexpr (detail::is_fp<T>) {
                detail::wide_t<T> s = 0;
                for (std::size_t p = 0; p < k; ++p) s += static_cast<detail::wide_t<T>>(ai(p)) * bj(p);
                out = static_cast<T>(s);
            } else {
                std::int64_t s = 0;
                for (std::size_t p = 0; p < k; ++p) s = detail::wrap_add(s, detail::wrap_mul(ai(p), bj(p)));
                out = static_cast<T>(s);
            }
        }
    }
}

/// Row-wise softmax / log_softmax (float/double), computed in a wider type.
template <class T>
inline void softmax_rows(const T* in, T* out, std::size_t rows, std::size_t cols, bool log) {
    static_assert(detail::is_fp<T>, "softmax is floating point only");
    using W = detail::wide_t<T>;
    for (std::size_t r = 0; r < rows; ++r) {
        const T* x = in + r * cols;
        T* y = out + r * cols;
        if (cols == 0) continue;
        W m = x[0];
        for (std::size_t j = 0; j < cols; ++j) m = detail::fp_max<W>(m, x[j]);
        W s = 0;
        for (std::size_t j = 0; j < cols; ++j) s += std::exp(static_cast<W>(x[j]) - m);
        const W ls = std::log(s);
        for (std::size_t j = 0; j < cols; ++j) {
            const W z = static_cast<W>(x[j]) - m;
            y[j] = static_cast<T>(log ? z - ls : std::exp(z) / s);
        }
    }
}

/// The fused SGD step of graft/kernels/optim-inl.hpp as a plain scalar loop: the same
/// operations of T in the same order (not computed in double: this is the scalar fallback,
/// the math of the SIMD kernel, not an accuracy oracle).
template <class T>
inline void optim_sgd(const sgd_args& a, T* p, const T* grad, T* buf, std::size_t n) {
    static_assert(detail::is_fp<T>, "optim_sgd is floating point only");
    const T wd = static_cast<T>(a.weight_decay), mom = static_cast<T>(a.momentum);
    const T damp1 = static_cast<T>(1 - a.dampening), neg_lr = static_cast<T>(-a.lr);
    for (std::size_t i = 0; i < n; ++i) {
        T g = a.maximize ? -grad[i] : grad[i];
        if (a.weight_decay != 0) g = g + wd * p[i];
        if (a.momentum != 0) {
            const T b = a.first ? g : buf[i] * mom + damp1 * g;
            buf[i] = b;
            g = a.nesterov ? g + mom * b : b;
        }
        p[i] = p[i] + neg_lr * g;
    }
}

/// The fused Adam / AdamW step of graft/kernels/optim-inl.hpp as a plain scalar loop (same
/// operations of T, same order).
template <class T>
inline void optim_adam(const adam_args& a, T* p, const T* grad, T* m, T* v, T* vmax, std::size_t n) {
    static_assert(detail::is_fp<T>, "optim_adam is floating point only");
    const double w = 1 - a.beta1;
    const bool low = w < 0.5 && w > -0.5;
    const T decay = static_cast<T>(1 - a.lr * a.weight_decay), wd = static_cast<T>(a.weight_decay);
    const T tw = static_cast<T>(w), tw1 = static_cast<T>(1 - w), b2 = static_cast<T>(a.beta2);
    const T b2c = static_cast<T>(1 - a.beta2), bc2 = static_cast<T>(a.bias_correction2_sqrt);
    const T eps = static_cast<T>(a.eps), neg_step = static_cast<T>(-a.step_size);
    for (std::size_t i = 0; i < n; ++i) {
        T x = p[i];
        T g = a.maximize ? -grad[i] : grad[i];
        if (a.weight_decay != 0) {
            if (a.decoupled)
                x = x * decay;
            else
                g = g + wd * x;
        }
        const T mi = low ? m[i] + tw * (g - m[i]) : g - (g - m[i]) * tw1;
        m[i] = mi;
        T vi = v[i] * b2 + (b2c * g) * g;
        v[i] = vi;
        if (a.amsgrad) {
            const T old = vmax[i];
            vi = (old < vi || vi != vi) ? vi : old;
            vmax[i] = vi;
        }
        const T denom = std::sqrt(vi) / bc2 + eps;
        p[i] = x + (neg_step * mi) / denom;
    }
}

}  // namespace graft::kernels::reference
