// Elementwise kernels (unary, binary, compare, where) on every available target
// against graft/kernels/reference.hpp.
#include "test_kernels_common.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <numbers>

using namespace kt;
using gk::binary_op;
using gk::compare_op;
using gk::unary_op;

namespace {

const char* unary_name(unary_op op) {
    static const char* names[] = {"neg",  "abs",  "exp",       "log",        "sqrt", "rsqrt", "tanh",
                                  "sigmoid", "relu", "gelu", "gelu_tanh", "normal_cdf", "sin",  "cos",
                                  "log1p", "expm1"};
    return names[static_cast<int>(op)];
}

// Documented tolerances (see elementwise-inl.hpp), vs a reference rounded once from
// double (float32) / long double (float64).
tol unary_tol(unary_op op) {
    switch (op) {
        case unary_op::neg: case unary_op::abs: case unary_op::relu: case unary_op::sqrt: return {0, 0};
        case unary_op::rsqrt: return {1, 0};
        case unary_op::exp: return {2, 0};
        case unary_op::log: return {4, 0};
        case unary_op::tanh: return {4, 0};
        case unary_op::sigmoid: return {4, 0};
        case unary_op::gelu: return {6, 0};       // float32: max 6 ULP over every float in [-14, 14]
        case unary_op::gelu_tanh: return {6, 0};  // sigmoid form, relative everywhere: max 5 ULP (all floats in [-14, 14])
        case unary_op::normal_cdf: return {5, 0};  // float32: max 5 ULP over every float in [-16, 16]
        case unary_op::sin: case unary_op::cos: return {4, 2};  // |err| <= 4 ULP or 2 eps absolute
        case unary_op::log1p: return {2, 0};  // max 2 ULP: every float32, float64 sweeps
        case unary_op::expm1: return {2, 0};  // max 2 ULP: every float32, float64 sweeps
    }
    return {};
}

// Input range per op for the random part.
std::pair<double, double> unary_range(unary_op op) {
    switch (op) {
        case unary_op::exp: return {-110, 95};
        case unary_op::log: case unary_op::sqrt: case unary_op::rsqrt: return {0, 1e6};
        case unary_op::sin: case unary_op::cos: return {-100, 100};
        case unary_op::log1p: return {-1, 30};
        case unary_op::expm1: return {-50, 90};
        default: return {-12, 12};
    }
}

// The tolerance at input x: unary_tol(op), except for float64 normal_cdf, which keeps the
// formula 0.5*erfc(-x*sqrt(2)/2) of graft::normal_cdf before it had a kernel: the rounding of
// its argument grows with x^2 in erfc's tail (measured <= 1.8*(x^2+1) ULP).
template <class T>
tol unary_tol_at(unary_op op, T x) {
    if (op == unary_op::normal_cdf && sizeof(T) == 8) {
        const double xd = static_cast<double>(x);
        return {4 + 2 * (std::isfinite(xd) ? xd * xd : 0.0), 0};
    }
    return unary_tol(op);
}

template <class T>
void check_unary_all_targets() {
    target_guard guard;
    const unary_op ops[] = {unary_op::neg,  unary_op::abs,     unary_op::exp,  unary_op::log,      unary_op::sqrt,
                            unary_op::rsqrt, unary_op::tanh,   unary_op::sigmoid, unary_op::relu,  unary_op::gelu,
                            unary_op::gelu_tanh, unary_op::normal_cdf, unary_op::sin, unary_op::cos,
                            unary_op::log1p, unary_op::expm1};
    for (gk::target t : gk::available_targets()) {
        gk::set_target(t);
        for (unary_op op : ops) {
            const auto [lo, hi] = unary_range(op);
            for (std::size_t n : test_lengths()) {
                for (std::ptrdiff_t stride : {1, 0, 3}) {
                    const std::size_t span = stride == 0 ? 1 : (n == 0 ? 0 : (n - 1) * static_cast<std::size_t>(stride) + 1);
                    // +1: offset the input by one element (unaligned).
                    auto in = make_data<T>(span + 1, lo, hi, static_cast<std::uint32_t>(n * 7 + static_cast<std::size_t>(stride)));
                    std::vector<T> got(n + 1, T(-12345)), want(n);
                    const T* a = in.data() + 1;
                    gk::unary(op, a, stride, got.data() + 1, n);
                    gk::reference::unary(op, a, stride, want.data(), n);
                    for (std::size_t i = 0; i < n; ++i) {
                        const T x = a[static_cast<std::ptrdiff_t>(i) * stride];
                        const bool ok = close(got[i + 1], want[i], unary_tol_at(op, x), static_cast<double>(x));
                        if (!ok) {
                            INFO("target " << gk::target_name(t) << " op " << unary_name(op) << " n " << n << " stride "
                                           << stride << " i " << i << " x " << x << " got " << got[i + 1] << " want "
                                           << want[i] << " ulp " << ulp_distance(got[i + 1], want[i]));
                            CHECK(ok);
                        }
                    }
                    CHECK(got[0] == T(-12345));  // nothing written before out
                }
            }
            // All special values, contiguous, each also checked for exact IEEE classes.
            const auto sp = special_values<T>();
            std::vector<T> got(sp.size()), want(sp.size());
            gk::unary(op, sp.data(), 1, got.data(), sp.size());
            gk::reference::unary(op, sp.data(), 1, want.data(), sp.size());
            for (std::size_t i = 0; i < sp.size(); ++i) {
                const bool ok = close(got[i], want[i], unary_tol_at(op, sp[i]), static_cast<double>(sp[i]));
                if (!ok) {
                    INFO("special: target " << gk::target_name(t) << " op " << unary_name(op) << " x " << sp[i] << " got "
                                            << got[i] << " want " << want[i]);
                    CHECK(ok);
                }
            }
        }
    }
}

}  // namespace

TEST_CASE("kernels: unary float32 matches reference on every target", "[kernels][unary]") {
    check_unary_all_targets<float>();
}
TEST_CASE("kernels: unary float64 matches reference on every target", "[kernels][unary]") {
    check_unary_all_targets<double>();
}

TEST_CASE("kernels: unary IEEE special cases", "[kernels][unary]") {
    target_guard guard;
    using L = std::numeric_limits<float>;
    for (gk::target t : gk::available_targets()) {
        gk::set_target(t);
        INFO("target " << gk::target_name(t));
        auto f = [](unary_op op, float x) {
            float y;
            gk::unary(op, &x, 1, &y, 1);
            return y;
        };
        CHECK(f(unary_op::exp, 89.f) == L::infinity());
        CHECK(f(unary_op::exp, L::infinity()) == L::infinity());
        CHECK(f(unary_op::exp, -L::infinity()) == 0.f);
        CHECK(std::isnan(f(unary_op::exp, L::quiet_NaN())));
        CHECK(f(unary_op::exp, -100.f) > 0.f);  // denormal result kept
        CHECK(f(unary_op::exp, -100.f) == Approx(std::exp(-100.0)).epsilon(0.05));
        CHECK(f(unary_op::log, 0.f) == -L::infinity());
        CHECK(f(unary_op::log, -0.f) == -L::infinity());
        CHECK(std::isnan(f(unary_op::log, -1.f)));
        CHECK(f(unary_op::log, L::infinity()) == L::infinity());
        CHECK(f(unary_op::log, L::denorm_min()) == Approx(std::log(static_cast<double>(L::denorm_min()))));
        CHECK(f(unary_op::tanh, L::infinity()) == 1.f);
        CHECK(f(unary_op::tanh, -L::infinity()) == -1.f);
        CHECK(f(unary_op::sigmoid, -1000.f) == 0.f);
        CHECK(f(unary_op::sigmoid, 1000.f) == 1.f);
        CHECK(f(unary_op::sigmoid, -L::infinity()) == 0.f);
        CHECK(std::isnan(f(unary_op::relu, L::quiet_NaN())));
        CHECK(std::signbit(f(unary_op::relu, -0.f)));
        CHECK(f(unary_op::relu, -3.f) == 0.f);
        CHECK(!std::signbit(f(unary_op::abs, -0.f)));
        CHECK(std::isnan(f(unary_op::sin, L::infinity())));
        CHECK(f(unary_op::sin, 1e6f) == Approx(std::sin(1e6)).margin(1e-6));
        CHECK(f(unary_op::cos, 1e30f) == Approx(std::cos(static_cast<double>(1e30f))).margin(1e-6));
        CHECK(f(unary_op::rsqrt, 0.f) == L::infinity());
        CHECK(f(unary_op::gelu, -10.f) == Approx(-10.0 * 0.5 * std::erfc(10.0 / std::sqrt(2.0))).epsilon(3e-7));
    }
}

namespace {

// Every `step`-th float32 bit pattern with |x| <= 14 (both signs), through the kernel
// on the current target; returns the max ULP distance to the reference.
double max_ulp_sweep(unary_op op, std::uint32_t step, float& worst_x) {
    std::vector<float> xs;
    const std::uint32_t lim = 0x41600000u;  // 14.0f
    for (std::uint32_t b = 0; b <= lim; b += step)
        for (std::uint32_t sgn : {0u, 0x80000000u}) {
            float f;
            const std::uint32_t bits = b | sgn;
            std::memcpy(&f, &bits, 4);
            xs.push_back(f);
        }
    std::vector<float> got(xs.size());
    gk::unary(op, xs.data(), 1, got.data(), xs.size());
    double worst = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
        const float want = gk::reference::unary_scalar(op, xs[i]);
        const double u = ulp_distance(got[i], want);
        if (u > worst) {
            worst = u;
            worst_x = xs[i];
        }
    }
    return worst;
}

}  // namespace

TEST_CASE("kernels: float32 gelu and gelu_tanh ULP bounds over a dense sweep of [-14, 14]", "[kernels][unary][gelu]") {
    target_guard guard;
    for (gk::target t : gk::available_targets()) {
        gk::set_target(t);
        for (unary_op op : {unary_op::gelu, unary_op::gelu_tanh}) {
            float wx = 0;
            const double u = max_ulp_sweep(op, 1021, wx);  // ~2.1M points incl. tails and subnormal results
            INFO("target " << gk::target_name(t) << " op " << unary_name(op) << " max ulp " << u << " at x=" << wx);
            CHECK(u <= unary_tol(op).ulps);
        }
    }
}

namespace {

// Every `step`-th float32 bit pattern with |x| <= lim (both signs), through the kernel on the
// current target: max ULP distance to the reference where both are finite, and how many
// inputs get a result of another class (NaN / infinite / finite, or the sign of a zero).
struct sweep_result {
    double ulp = 0;
    float worst_x = 0;
    std::size_t class_mismatch = 0;
};
sweep_result ulp_sweep(unary_op op, std::uint32_t step, float lim) {
    std::uint32_t lim_bits;
    std::memcpy(&lim_bits, &lim, 4);
    std::vector<float> xs;
    for (std::uint32_t b = 0; b <= lim_bits; b += step)
        for (std::uint32_t sgn : {0u, 0x80000000u}) {
            float f;
            const std::uint32_t bits = b | sgn;
            std::memcpy(&f, &bits, 4);
            xs.push_back(f);
        }
    std::vector<float> got(xs.size());
    gk::unary(op, xs.data(), 1, got.data(), xs.size());
    sweep_result r;
    for (std::size_t i = 0; i < xs.size(); ++i) {
        const float want = gk::reference::unary_scalar(op, xs[i]);
        const float y = got[i];
        if (std::isnan(want) || std::isnan(y) || std::isinf(want) || std::isinf(y) ||
            (want == 0 && y == 0 && std::signbit(want) != std::signbit(y))) {
            if (!(std::isnan(want) && std::isnan(y)) && !(want == y && std::signbit(want) == std::signbit(y)))
                ++r.class_mismatch;
            continue;
        }
        const double u = ulp_distance(y, want);
        if (u > r.ulp) {
            r.ulp = u;
            r.worst_x = xs[i];
        }
    }
    return r;
}

}  // namespace

TEST_CASE("kernels: float32 exp, tanh and sigmoid ULP bounds over dense sweeps", "[kernels][unary]") {
    // Bounds measured over all 2^32 float32 inputs on SCALAR, AVX2 and AVX3 (see the contract
    // in elementwise-inl.hpp); ranges reach past overflow / saturation / underflow to 0.
    struct item {
        unary_op op;
        float lim;
        double ulps;
    };
    const item items[] = {{unary_op::exp, 110.f, 1}, {unary_op::tanh, 12.f, 3}, {unary_op::sigmoid, 110.f, 2}};
    target_guard guard;
    for (gk::target t : gk::available_targets()) {
        gk::set_target(t);
        for (const item& it : items) {
            const sweep_result r = ulp_sweep(it.op, 613, it.lim);  // ~3.7M points for lim 110
            INFO("target " << gk::target_name(t) << " op " << unary_name(it.op) << " max ulp " << r.ulp << " at x="
                           << r.worst_x);
            CHECK(r.ulp <= it.ulps);
            CHECK(r.class_mismatch == 0);
        }
    }
}

TEST_CASE("kernels: float32 normal_cdf ULP bound over a dense sweep of [-16, 16] and its special values",
          "[kernels][unary][normal_cdf]") {
    using L = std::numeric_limits<float>;
    const double bound = unary_tol(unary_op::normal_cdf).ulps;
    target_guard guard;
    for (gk::target t : gk::available_targets()) {
        gk::set_target(t);
        INFO("target " << gk::target_name(t));
        auto f = [](float x) {
            float y;
            gk::unary(unary_op::normal_cdf, &x, 1, &y, 1);
            return y;
        };
        // ~2.2M points over [-16, 16]: saturation to 1 (x > 5.4), the subnormal results and the
        // underflow to +0 (x < -14.2) included; every result of the reference's class.
        const sweep_result r = ulp_sweep(unary_op::normal_cdf, 1021, 16.f);
        INFO("sweep: max ulp " << r.ulp << " at x=" << r.worst_x);
        CHECK(r.ulp <= bound);
        CHECK(r.class_mismatch == 0);
        // Every float in [-15, -12.5]: Phi(x) < 2^-126 below x = -12.95, so the results are
        // subnormal (rounded once; from ((0.5*R)*h)*h below x = -13.19, where exp(-x^2/2) is
        // itself subnormal), and +0 below x = -14.17.
        std::vector<float> xs;
        for (float x = -15.f; x <= -12.5f; x = std::nextafter(x, 0.f)) xs.push_back(x);
        std::vector<float> ys(xs.size());
        gk::unary(unary_op::normal_cdf, xs.data(), 1, ys.data(), xs.size());
        double worst = 0;
        float worst_x = 0;
        std::size_t subnormal = 0, zero = 0;
        for (std::size_t i = 0; i < xs.size(); ++i) {
            const float want = gk::reference::unary_scalar(unary_op::normal_cdf, xs[i]);
            const double u = ulp_distance(ys[i], want);
            if (u > worst) {
                worst = u;
                worst_x = xs[i];
            }
            if (ys[i] > 0 && ys[i] < L::min()) ++subnormal;
            if (ys[i] == 0 && !std::signbit(ys[i])) ++zero;
        }
        INFO("tail [-15, -12.5]: max ulp " << worst << " at x=" << worst_x);
        CHECK(worst <= bound);
        CHECK(subnormal > 1000000);  // the sweep did reach the subnormal results
        CHECK(zero > 100000);
        // Special values.
        CHECK(f(0.f) == 0.5f);
        CHECK(f(-0.f) == 0.5f);
        CHECK(f(L::denorm_min()) == 0.5f);
        CHECK(f(-L::denorm_min()) == 0.5f);
        CHECK(f(L::infinity()) == 1.f);
        CHECK(f(L::max()) == 1.f);
        CHECK(f(6.f) == 1.f);  // 1 - 9.9e-10 rounds to 1
        for (float x : {-L::infinity(), -L::max(), -100.f, -15.5f, -15.f}) {
            CHECK(f(x) == 0.f);
            CHECK(!std::signbit(f(x)));
        }
        CHECK(f(-13.5f) > 0.f);  // 7.8e-42, subnormal
        CHECK(std::isnan(f(L::quiet_NaN())));
        CHECK(std::isnan(f(-L::quiet_NaN())));
        // float64 lanes are per element the formula graft::normal_cdf had before the kernel,
        // bit for bit.
        std::vector<double> xd;
        for (int i = -400000; i <= 400000; ++i) xd.push_back(i * 1e-4 + 1e-9 * (i % 7));
        for (double v : special_values<double>()) xd.push_back(v);
        std::vector<double> yd(xd.size());
        gk::unary(unary_op::normal_cdf, xd.data(), 1, yd.data(), xd.size());
        std::size_t differ = 0;
        for (std::size_t i = 0; i < xd.size(); ++i) {
            const double want = 0.5 * std::erfc(-xd[i] * std::numbers::sqrt2 / 2.0);
            if (!(std::isnan(want) ? std::isnan(yd[i]) : std::memcmp(&want, &yd[i], sizeof(double)) == 0)) ++differ;
        }
        CHECK(differ == 0);
    }
}

namespace {

// log1p and expm1 at their special values, which must be std::log1p's / std::expm1's exactly
// (the sign of a zero included), and at tiny inputs, where both return x itself.
template <class T>
void check_log1p_expm1_specials() {
    using L = std::numeric_limits<T>;
    const auto f = [](unary_op op, T x) {
        T y;
        gk::unary(op, &x, 1, &y, 1);
        return y;
    };
    const auto same = [](T got, T want) {
        if (std::isnan(want)) return std::isnan(got);
        return got == want && std::signbit(got) == std::signbit(want);
    };
    const T inf = L::infinity();
    const T nan = L::quiet_NaN();
    // log1p: ±0 kept, -1 -> -inf, below -1 NaN, +inf -> +inf, NaN -> NaN.
    CHECK(same(f(unary_op::log1p, T(0)), T(0)));
    CHECK(same(f(unary_op::log1p, -T(0)), -T(0)));
    CHECK(same(f(unary_op::log1p, T(-1)), -inf));
    for (T x : {std::nextafter(T(-1), T(-2)), T(-1.5), T(-2), T(-1e6), -L::max(), -inf, nan, -nan})
        CHECK(std::isnan(f(unary_op::log1p, x)));
    CHECK(same(f(unary_op::log1p, inf), inf));
    // expm1: ±0 kept, -inf -> -1, +inf -> +inf, NaN -> NaN, overflow past ln(max).
    CHECK(same(f(unary_op::expm1, T(0)), T(0)));
    CHECK(same(f(unary_op::expm1, -T(0)), -T(0)));
    CHECK(same(f(unary_op::expm1, -inf), T(-1)));
    CHECK(same(f(unary_op::expm1, inf), inf));
    CHECK(std::isnan(f(unary_op::expm1, nan)));
    CHECK(std::isnan(f(unary_op::expm1, -nan)));
    const T ln_max = std::log(L::max());
    CHECK(std::isfinite(f(unary_op::expm1, std::nextafter(ln_max, T(0)))));
    CHECK(same(f(unary_op::expm1, std::nextafter(ln_max, inf) * T(1.0001)), inf));
    CHECK(same(f(unary_op::expm1, L::max()), inf));
    for (T x : {T(-40), T(-104), T(-745), T(-1e6), -L::max()}) CHECK(same(f(unary_op::expm1, x), T(-1)));
    // Tiny inputs: log1p(x) = expm1(x) = x (the next terms, -x^2/2 and x^2/2, are far below
    // half an ULP of x), subnormal inputs included.
    for (T x : {T(1e-30), T(-1e-30), T(1e-20), T(-1e-20), T(1e-10) * T(1e-10) * T(1e-10), L::min(), -L::min(),
                L::denorm_min(), -L::denorm_min(), L::min() / T(3)}) {
        INFO("x " << x);
        CHECK(same(f(unary_op::log1p, x), x));
        CHECK(same(f(unary_op::expm1, x), x));
    }
    // Where the plain forms cancel: log(1+x) and exp(x)-1 would give 0 at x = 1e-10 (float32)
    // or 1e-17 (float64).
    const T small = sizeof(T) == 4 ? T(1e-10) : T(1e-17);
    CHECK(f(unary_op::log1p, small) == small);
    CHECK(f(unary_op::expm1, small) == small);
    for (T x : {T(1e-4), T(-1e-4), T(0.3), T(-0.3), T(0.35), T(0.4), T(-0.75), T(std::nextafter(T(-1), T(0))),
                T(1e10), L::max(), T(-16.9), T(-17.5), T(-36.9), T(-37.5), T(20), T(40), T(88), T(709)}) {
        INFO("x " << x);
        for (unary_op op : {unary_op::log1p, unary_op::expm1}) {
            const T want = gk::reference::unary_scalar(op, x);
            CHECK(close(f(op, x), want, unary_tol(op)));
        }
    }
}

// float64: |x| log-uniform in [2^lo_exp, 2^hi_exp], both signs (plus the neighbourhood of -1
// for log1p): max ULP distance to the reference (long double, rounded once).
double f64_ulp_sweep(unary_op op, double lo_exp, double hi_exp, std::size_t n, double& worst_x) {
    std::mt19937_64 rng(99);
    std::uniform_real_distribution<double> e(lo_exp, hi_exp);
    std::vector<double> xs(n);
    for (std::size_t i = 0; i < n; ++i) xs[i] = std::exp2(e(rng)) * ((rng() & 1) ? -1.0 : 1.0);
    if (op == unary_op::log1p)
        for (std::size_t i = 0; i < n / 8; ++i) xs[i] = -1.0 + std::exp2(-e(rng) - 8.0);  // just above -1
    std::vector<double> ys(n);
    gk::unary(op, xs.data(), 1, ys.data(), n);
    double worst = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double want = gk::reference::unary_scalar(op, xs[i]);
        if (!std::isfinite(want)) {
            CHECK((std::isnan(want) ? std::isnan(ys[i]) : ys[i] == want));
            continue;
        }
        const double u = ulp_distance(ys[i], want);
        if (u > worst) {
            worst = u;
            worst_x = xs[i];
        }
    }
    return worst;
}

}  // namespace

TEST_CASE("kernels: log1p and expm1 special values, tiny inputs and ULP bounds", "[kernels][unary][log1p]") {
    target_guard guard;
    for (gk::target t : gk::available_targets()) {
        gk::set_target(t);
        INFO("target " << gk::target_name(t));
        check_log1p_expm1_specials<float>();
        check_log1p_expm1_specials<double>();
        for (unary_op op : {unary_op::log1p, unary_op::expm1}) {
            INFO("op " << unary_name(op));
            const double bound = unary_tol(op).ulps;
            // float32: ~7M points over the whole finite range (both signs), every result of the
            // reference's class (NaN below -1, -inf at -1, overflow, -1 and ±0 exactly).
            const sweep_result r = ulp_sweep(op, 613, std::numeric_limits<float>::max());
            INFO("float32 sweep: max ulp " << r.ulp << " at x=" << r.worst_x);
            CHECK(r.ulp <= bound);
            CHECK(r.class_mismatch == 0);
            // float32: every float in [-1, 1] near the reconstruction edges (|x| around ln2/2 for
            // expm1, -1 < x < -0.29 for log1p) in a dense stretch.
            std::vector<float> xs;
            for (float x = op == unary_op::expm1 ? 0.33f : -1.f; x < (op == unary_op::expm1 ? 0.4f : -0.99f);
                 x = std::nextafter(x, 1.f))
                xs.push_back(x);
            std::vector<float> ys(xs.size());
            gk::unary(op, xs.data(), 1, ys.data(), xs.size());
            double worst = 0;
            for (std::size_t i = 0; i < xs.size(); ++i)
                worst = std::max(worst, ulp_distance(ys[i], gk::reference::unary_scalar(op, xs[i])));
            INFO("float32 dense stretch: max ulp " << worst);
            CHECK(worst <= bound);
            // float64 against long double.
            double wx = 0;
            const double u64 = f64_ulp_sweep(op, -60.0, op == unary_op::expm1 ? 9.47 : 1023.0, 400000, wx);
            INFO("float64 sweep: max ulp " << u64 << " at x=" << wx);
            CHECK(u64 <= bound);
        }
    }
}

TEST_CASE("kernels: float32 exp, tanh and sigmoid at the edges", "[kernels][unary]") {
    using L = std::numeric_limits<float>;
    target_guard guard;
    for (gk::target t : gk::available_targets()) {
        gk::set_target(t);
        INFO("target " << gk::target_name(t));
        auto f = [](unary_op op, float x) {
            float y;
            gk::unary(op, &x, 1, &y, 1);
            return y;
        };
        auto ref = [](unary_op op, float x) { return gk::reference::unary_scalar(op, x); };
        // exp: the largest finite argument, overflow, results down to the last subnormal.
        const float max_arg = 88.72283172607421875f;
        CHECK(std::isfinite(f(unary_op::exp, max_arg)));
        CHECK(ulp_distance(f(unary_op::exp, max_arg), ref(unary_op::exp, max_arg)) <= 1);
        CHECK(f(unary_op::exp, std::nextafter(max_arg, 100.f)) == L::infinity());
        CHECK(f(unary_op::exp, L::max()) == L::infinity());
        CHECK(f(unary_op::exp, -103.5f) == L::denorm_min());  // e^-103.5 = 1.12e-45
        CHECK(f(unary_op::exp, -104.f) == 0.f);
        CHECK(f(unary_op::exp, -L::max()) == 0.f);
        CHECK(f(unary_op::exp, -0.f) == 1.f);
        CHECK(f(unary_op::exp, L::denorm_min()) == 1.f);
        for (float x : {-87.f, -88.f, -95.5f, -100.f, -102.9f})  // subnormal results, rounded once
            CHECK(ulp_distance(f(unary_op::exp, x), ref(unary_op::exp, x)) <= 1);
        // tanh: signed zeros, subnormal inputs returned exactly, saturation to exactly ±1.
        CHECK(std::signbit(f(unary_op::tanh, -0.f)));
        CHECK(f(unary_op::tanh, -0.f) == 0.f);
        CHECK(!std::signbit(f(unary_op::tanh, 0.f)));
        CHECK(f(unary_op::tanh, L::denorm_min()) == L::denorm_min());
        CHECK(f(unary_op::tanh, -L::min()) == -L::min());
        CHECK(f(unary_op::tanh, 1e-30f) == 1e-30f);
        CHECK(ulp_distance(f(unary_op::tanh, 9.f), ref(unary_op::tanh, 9.f)) <= 1);  // 0.99999994 (near a tie)
        CHECK(f(unary_op::tanh, 9.1f) == 1.f);
        CHECK(f(unary_op::tanh, 9.5f) == 1.f);
        CHECK(f(unary_op::tanh, -9.5f) == -1.f);
        CHECK(f(unary_op::tanh, -L::max()) == -1.f);
        // sigmoid: 0.5 at ±0, tiny results kept down to the subnormal range, exact 1 and 0.
        CHECK(f(unary_op::sigmoid, -0.f) == 0.5f);
        CHECK(f(unary_op::sigmoid, 0.f) == 0.5f);
        for (float x : {-20.f, -87.f, -90.f, -100.f, -103.f})
            CHECK(ulp_distance(f(unary_op::sigmoid, x), ref(unary_op::sigmoid, x)) <= 1);
        CHECK(f(unary_op::sigmoid, -100.f) > 0.f);
        CHECK(f(unary_op::sigmoid, -104.f) == 0.f);
        CHECK(f(unary_op::sigmoid, 17.5f) == 1.f);
        CHECK(f(unary_op::sigmoid, L::max()) == 1.f);
        CHECK(f(unary_op::sigmoid, -L::max()) == 0.f);
        // NaN of either sign stays NaN.
        for (unary_op op : {unary_op::exp, unary_op::tanh, unary_op::sigmoid}) {
            CHECK(std::isnan(f(op, L::quiet_NaN())));
            CHECK(std::isnan(f(op, -L::quiet_NaN())));
        }
    }
}

TEST_CASE("kernels: gelu_tanh has no cancellation in the negative tail", "[kernels][unary][gelu]") {
    target_guard guard;
    for (gk::target t : gk::available_targets()) {
        gk::set_target(t);
        INFO("target " << gk::target_name(t));
        auto f = [](float x) {
            float y;
            gk::unary(unary_op::gelu_tanh, &x, 1, &y, 1);
            return y;
        };
        auto exact = [](double x) {  // x*sigmoid(2z) in long double
            const long double w = x;
            const long double z = 0.797884560802865355879892119868763737L * (w + 0.044715L * w * w * w);
            return static_cast<double>(w / (1.0L + std::exp(-2.0L * z)));
        };
        // 0.5*x*(1+tanh(z)) in float gave -3.02e-7 here (true -1.433e-7).
        CHECK(f(-5.06882763f) == Approx(exact(-5.06882763f)).epsilon(5e-7));
        CHECK(f(-10.f) < 0.f);  // -1.19e-37, a normal float
        CHECK(f(-10.f) == Approx(exact(-10.0)).epsilon(5e-7));
        CHECK(f(-10.3f) < 0.f);  // about -1e-40, subnormal, kept
        CHECK(f(-10.3f) == Approx(exact(-10.3f)).epsilon(1e-4));
        CHECK(std::signbit(f(-20.f)));
        CHECK(f(-20.f) == 0.f);
        CHECK(f(std::numeric_limits<float>::infinity()) == std::numeric_limits<float>::infinity());
        CHECK(std::isnan(f(-std::numeric_limits<float>::infinity())));  // -inf*0, as 0.5*x*(1+tanh)
        CHECK(std::isnan(f(std::numeric_limits<float>::quiet_NaN())));
        // The ops-level bound (tests/test_ops_elementwise.cpp): 1e-7 + 4e-6*|want| on [-6, 6].
        std::vector<float> xs, ys;
        for (int i = -600000; i <= 600000; ++i) xs.push_back(static_cast<float>(i * 1e-5));
        ys.resize(xs.size());
        gk::unary(unary_op::gelu_tanh, xs.data(), 1, ys.data(), xs.size());
        double worst = 0;
        for (std::size_t i = 0; i < xs.size(); ++i) {
            const double want = exact(xs[i]);
            worst = std::max(worst, std::fabs(ys[i] - want) / (1e-7 + 4e-6 * std::fabs(want)));
        }
        CHECK(worst <= 1.0);
    }
}

namespace {

const char* binary_name(binary_op op) {
    static const char* names[] = {"add", "sub", "mul", "div", "pow", "maximum", "minimum"};
    return names[static_cast<int>(op)];
}

template <class T>
bool same_value(T a, T b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return a == b;
}

template <class T>
void check_binary_all_targets() {
    target_guard guard;
    const binary_op ops[] = {binary_op::add, binary_op::sub, binary_op::mul, binary_op::div,
                             binary_op::pow, binary_op::maximum, binary_op::minimum};
    for (gk::target t : gk::available_targets()) {
        gk::set_target(t);
        for (binary_op op : ops) {
            for (std::size_t n : test_lengths()) {
                for (std::ptrdiff_t sa : {1, 0, 3}) {
                    for (std::ptrdiff_t sb : {1, 0, 3}) {
                        auto span = [n](std::ptrdiff_t s) {
                            return s == 0 ? std::size_t{1} : (n == 0 ? 0 : (n - 1) * static_cast<std::size_t>(s) + 1);
                        };
                        const auto seed = static_cast<std::uint32_t>(n * 31 + static_cast<std::size_t>(sa * 3 + sb));
                        auto va = make_data<T>(span(sa) + 1, -8, 8, seed);
                        auto vb = make_data<T>(span(sb) + 1, -8, 8, seed + 1000);
                        std::vector<T> got(n), want(n);
                        gk::binary(op, va.data() + 1, sa, vb.data() + 1, sb, got.data(), n);
                        gk::reference::binary(op, va.data() + 1, sa, vb.data() + 1, sb, want.data(), n);
                        for (std::size_t i = 0; i < n; ++i) {
                            if (!same_value(got[i], want[i])) {
                                INFO("target " << gk::target_name(t) << " op " << binary_name(op) << " n " << n
                                               << " sa " << sa << " sb " << sb << " i " << i << " got " << got[i]
                                               << " want " << want[i]);
                                CHECK(same_value(got[i], want[i]));
                            }
                        }
                    }
                }
            }
        }
        // Exhaustive special x special.
        const auto sp = special_values<T>();
        std::vector<T> a, b;
        for (T x : sp)
            for (T y : sp) {
                a.push_back(x);
                b.push_back(y);
            }
        std::vector<T> got(a.size()), want(a.size());
        for (binary_op op : ops) {
            gk::binary(op, a.data(), 1, b.data(), 1, got.data(), a.size());
            gk::reference::binary(op, a.data(), 1, b.data(), 1, want.data(), a.size());
            for (std::size_t i = 0; i < a.size(); ++i)
                if (!same_value(got[i], want[i])) {
                    INFO("special: target " << gk::target_name(t) << " op " << binary_name(op) << " " << a[i] << ", "
                                            << b[i] << " got " << got[i] << " want " << want[i]);
                    CHECK(same_value(got[i], want[i]));
                }
        }
    }
}

template <class T>
void check_compare_where_all_targets() {
    target_guard guard;
    const compare_op ops[] = {compare_op::eq, compare_op::ne, compare_op::lt,
                              compare_op::le, compare_op::gt, compare_op::ge};
    auto span_of = [](std::size_t n, std::ptrdiff_t s) {
        return s == 0 ? std::size_t{1} : (n == 0 ? 0 : (n - 1) * static_cast<std::size_t>(s) + 1);
    };
    for (gk::target t : gk::available_targets()) {
        gk::set_target(t);
        INFO("target " << gk::target_name(t));
        for (std::size_t n : test_lengths()) {
            for (std::ptrdiff_t sa : {1, 0, 3}) {
                for (std::ptrdiff_t sb : {1, 0, 2}) {
                    INFO("n " << n << " sa " << sa << " sb " << sb);
                    const auto seed = static_cast<std::uint32_t>(n * 13 + static_cast<std::size_t>(sa * 5 + sb));
                    // make_data mixes in NaN, ±inf, ±0 and denormals.
                    auto va = make_data<T>(span_of(n, sa) + 1, -3, 3, seed);
                    auto vb = make_data<T>(span_of(n, sb) + 1, -3, 3, seed + 99);
                    for (std::size_t i = 0; i < vb.size(); i += 4) vb[i] = std::round(vb[i]);  // some equal pairs
                    for (std::size_t i = 0; i < va.size(); i += 3) va[i] = std::round(va[i]);
                    for (compare_op op : ops) {
                        INFO("op " << static_cast<int>(op));
                        std::unique_ptr<bool[]> g(new bool[n + 1]), w(new bool[n + 1]);
                        g[n] = true;
                        gk::compare(op, va.data() + 1, sa, vb.data() + 1, sb, g.get(), n);
                        gk::reference::compare(op, va.data() + 1, sa, vb.data() + 1, sb, w.get(), n);
                        for (std::size_t i = 0; i < n; ++i) REQUIRE(g[i] == w[i]);
                        REQUIRE(g[n]);  // nothing written past the end
                    }
                    for (std::ptrdiff_t sc : {1, 0, 3}) {
                        INFO("sc " << sc);
                        const std::size_t cspan = span_of(n, sc);
                        std::unique_ptr<bool[]> c(new bool[cspan + 1]);
                        for (std::size_t i = 0; i < cspan + 1; ++i) c[i] = (i * 7 + n + static_cast<std::size_t>(sa)) % 3 == 0;
                        std::vector<T> got(n + 1, T(-7)), want(n);
                        gk::where(c.get() + 1, sc, va.data() + 1, sa, vb.data() + 1, sb, got.data(), n);
                        gk::reference::where(c.get() + 1, sc, va.data() + 1, sa, vb.data() + 1, sb, want.data(), n);
                        for (std::size_t i = 0; i < n; ++i) REQUIRE(std::memcmp(&got[i], &want[i], sizeof(T)) == 0);
                        REQUIRE(got[n] == T(-7));
                    }
                }
            }
        }
        // NaN semantics: every comparison with NaN is false except ne.
        const T nan = std::numeric_limits<T>::quiet_NaN();
        std::vector<T> a(37, T(1)), b(37, T(1));
        for (std::size_t i = 0; i < a.size(); i += 2) a[i] = nan;
        for (compare_op op : ops) {
            std::unique_ptr<bool[]> g(new bool[a.size()]);
            for (std::ptrdiff_t sb : {1, 0}) {
                gk::compare(op, a.data(), 1, b.data(), sb, g.get(), a.size());
                for (std::size_t i = 0; i < a.size(); ++i)
                    REQUIRE(g[i] == (i % 2 == 0 ? op == compare_op::ne : (op == compare_op::eq || op == compare_op::le ||
                                                                          op == compare_op::ge)));
                gk::compare(op, b.data(), sb, a.data(), 1, g.get(), a.size());
                for (std::size_t i = 0; i < a.size(); ++i)
                    if (i % 2 == 0) REQUIRE(g[i] == (op == compare_op::ne));
            }
        }
    }
}

}  // namespace

TEST_CASE("kernels: binary float32 is exact vs reference on every target", "[kernels][binary]") {
    check_binary_all_targets<float>();
}
TEST_CASE("kernels: binary float64 is exact vs reference on every target", "[kernels][binary]") {
    check_binary_all_targets<double>();
}
TEST_CASE("kernels: compare and where on every target", "[kernels][compare]") {
    check_compare_where_all_targets<float>();
    check_compare_where_all_targets<double>();
}

TEST_CASE("kernels: maximum/minimum propagate NaN", "[kernels][binary]") {
    target_guard guard;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (gk::target t : gk::available_targets()) {
        gk::set_target(t);
        std::vector<float> a(37, 1.f), b(37, 2.f), out(37);
        a[3] = nan;
        b[20] = nan;
        gk::binary(binary_op::maximum, a.data(), 1, b.data(), 1, out.data(), a.size());
        CHECK(std::isnan(out[3]));
        CHECK(std::isnan(out[20]));
        CHECK(out[0] == 2.f);
        gk::binary(binary_op::minimum, a.data(), 1, b.data(), 1, out.data(), a.size());
        CHECK(std::isnan(out[3]));
        CHECK(std::isnan(out[20]));
        CHECK(out[0] == 1.f);
    }
}

TEST_CASE("kernels: reference int64 and bool semantics", "[kernels][reference]") {
    namespace ref = gk::reference;
    using I = std::int64_t;
    CHECK(ref::binary_scalar<I>(binary_op::pow, 3, 4) == 81);
    CHECK(ref::binary_scalar<I>(binary_op::pow, 2, -1) == 0);
    CHECK(ref::binary_scalar<I>(binary_op::pow, -1, -3) == -1);
    CHECK(ref::binary_scalar<I>(binary_op::pow, 1, -3) == 1);
    CHECK(ref::binary_scalar<I>(binary_op::pow, 0, 0) == 1);
    CHECK(ref::binary_scalar<I>(binary_op::add, std::numeric_limits<I>::max(), 1) == std::numeric_limits<I>::min());
    CHECK(ref::binary_scalar<I>(binary_op::maximum, -5, 3) == 3);
    CHECK(ref::binary_scalar<bool>(binary_op::add, true, true) == true);
    CHECK(ref::binary_scalar<bool>(binary_op::mul, true, false) == false);
    const bool bs[] = {true, false, true, true};
    CHECK(ref::reduce(gk::reduce_op::sum, bs, 4) == 3);
    const I is[] = {4, -7, 9};
    CHECK(ref::reduce(gk::reduce_op::sum, is, 3) == 6);
    CHECK(ref::reduce(gk::reduce_op::amax, is, 3) == 9);
    CHECK(ref::reduce(gk::reduce_op::amin, is, 3) == -7);
    const I a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8};
    I c[4];
    ref::matmul(a, 2, b, 2, c, 2, 2, 2, 2);
    CHECK(c[0] == 19);
    CHECK(c[3] == 50);
    bool cmp[3];
    ref::compare(gk::compare_op::lt, is, 1, is, 0, cmp, 3);  // vs broadcast 4
    CHECK(!cmp[0]);
    CHECK(cmp[1]);
    CHECK(!cmp[2]);
}

// ---------------------------------------------------------------- fused programs

namespace {

// A random program over every unary, binary and compare op and where: registers 0..3 inputs (register 1 a
// broadcast value, register 3 a row of `period` elements repeated), then one register per
// instruction; the last two are outputs. The result
// must be bitwise that of running the instructions one by one with unary()/binary() over
// whole arrays (what an unfused graph does), at lengths around every tile and vector edge.
template <class T>
void check_programs_bitwise() {
    using namespace kt;
    target_guard restore;
    constexpr int num_unary = static_cast<int>(gk::unary_op::expm1) + 1;
    constexpr int num_binary = static_cast<int>(gk::binary_op::minimum) + 1;
    constexpr int num_compare = static_cast<int>(gk::compare_op::ge) + 1;
    std::mt19937 rng(7);
    for (gk::target t : gk::available_targets()) {
        gk::set_target(t);
        for (int trial = 0; trial < 40; ++trial) {
            const std::size_t num_instr = 2 + rng() % 6;
            std::vector<gk::program_instr> code;
            for (std::size_t k = 0; k < num_instr; ++k) {
                gk::program_instr in;
                const auto avail = static_cast<unsigned>(4 + k);  // registers defined so far
                in.kind = static_cast<gk::instr_kind>(rng() % 4);
                in.op = static_cast<std::uint8_t>(in.kind == gk::instr_kind::binary    ? rng() % num_binary
                                                  : in.kind == gk::instr_kind::compare ? rng() % num_compare
                                                  : in.kind == gk::instr_kind::unary   ? rng() % num_unary
                                                                                       : 0);
                in.a = static_cast<std::uint16_t>(rng() % avail);
                in.b = static_cast<std::uint16_t>(rng() % avail);
                in.c = static_cast<std::uint16_t>(rng() % avail);
                in.out = static_cast<std::uint16_t>(4 + k);
                code.push_back(in);
            }
            const std::size_t nregs = 4 + num_instr;
            std::vector<gk::operand_mode> mode(nregs, gk::operand_mode::temp);
            mode[0] = mode[2] = gk::operand_mode::contiguous;
            mode[1] = gk::operand_mode::broadcast;
            mode[3] = gk::operand_mode::row;
            const std::size_t period = std::size_t{1} + rng() % 200;
            std::vector<std::size_t> periods(nregs, 0);
            periods[3] = period;
            const auto row = make_data<T>(period, -2, 2, static_cast<std::uint32_t>(trial + 1000));
            std::vector<T> repeated(period + gk::program_tile_elements<T>);
            for (std::size_t j = 0; j < repeated.size(); ++j) repeated[j] = row[j % period];
            mode[nregs - 1] = mode[nregs - 2] = gk::operand_mode::output;
            const gk::program prog{code.data(), code.size(), mode.data(), nregs, periods.data()};
            for (std::size_t n : {std::size_t{1}, std::size_t{5}, std::size_t{16}, std::size_t{17}, std::size_t{127},
                                  std::size_t{128}, std::size_t{129}, std::size_t{300}, std::size_t{1000}}) {
                // Unfused: every register as a whole array.
                std::vector<std::vector<T>> reg(nregs, std::vector<T>(n));
                reg[0] = make_data<T>(n, -3, 3, static_cast<std::uint32_t>(trial * 31 + n));
                reg[2] = make_data<T>(n, 0.1, 4, static_cast<std::uint32_t>(trial * 37 + n));
                const T one = make_data<T>(1, -2, 2, static_cast<std::uint32_t>(trial), false)[0];
                reg[1].assign(n, one);
                for (std::size_t i = 0; i < n; ++i) reg[3][i] = row[i % period];
                const std::unique_ptr<bool[]> mask(new bool[n]);  // for the eager compare and where kernels
                for (const gk::program_instr& in : code) {
                    if (in.kind == gk::instr_kind::binary) {
                        gk::binary(static_cast<gk::binary_op>(in.op), reg[in.a].data(), 1, reg[in.b].data(), 1,
                                   reg[in.out].data(), n);
                    } else if (in.kind == gk::instr_kind::unary) {
                        gk::unary(static_cast<gk::unary_op>(in.op), reg[in.a].data(), 1, reg[in.out].data(), n);
                    } else if (in.kind == gk::instr_kind::compare) {
                        // A condition register holds the bool as 1 or 0.
                        gk::compare(static_cast<gk::compare_op>(in.op), reg[in.a].data(), 1, reg[in.b].data(), 1,
                                    mask.get(), n);
                        for (std::size_t i = 0; i < n; ++i) reg[in.out][i] = mask[i] ? T(1) : T(0);
                    } else {
                        for (std::size_t i = 0; i < n; ++i) mask[i] = reg[in.a][i] != T(0);
                        gk::where(mask.get(), 1, reg[in.b].data(), 1, reg[in.c].data(), 1,
                                  reg[in.out].data(), n);
                    }
                }
                // Fused, in two parts (as two threads would split it).
                std::vector<T> out_a(n, T(-7)), out_b(n, T(-7));
                std::vector<T*> base(nregs, nullptr);
                base[0] = reg[0].data();
                base[1] = &reg[1][0];
                base[2] = reg[2].data();
                base[3] = repeated.data();
                base[nregs - 2] = out_a.data();
                base[nregs - 1] = out_b.data();
                std::vector<T> scratch(nregs * gk::program_scratch_stride<T> + 64);
                const std::size_t mid = n / 256 * 128;  // a tile boundary
                gk::run_program(prog, base.data(), scratch.data(), 0, mid);
                gk::run_program(prog, base.data(), scratch.data(), mid, n);
                // Bitwise, except that a NaN's payload and sign are unspecified (commutative ops
                // may pick either operand's NaN: the kernels' contract).
                const auto same_bits = [](const std::vector<T>& x, const std::vector<T>& y) {
                    for (std::size_t i = 0; i < x.size(); ++i)
                        if (std::memcmp(&x[i], &y[i], sizeof(T)) != 0 && !(std::isnan(x[i]) && std::isnan(y[i])))
                            return false;
                    return true;
                };
                const bool same_a = same_bits(out_a, reg[nregs - 2]);
                const bool same_b = same_bits(out_b, reg[nregs - 1]);
                std::string text;
                for (const auto& in : code)
                    text += std::string(1, "ubcw"[static_cast<int>(in.kind)]) + std::to_string(in.op) + "(" +
                            std::to_string(in.a) + "," + std::to_string(in.b) + "," + std::to_string(in.c) + ")->" +
                            std::to_string(in.out) + " ";
                INFO("target " << gk::target_name(t) << " trial " << trial << " n " << n << " program " << text);
                CHECK(same_a);
                CHECK(same_b);
            }
        }
    }
}

// Two adjacent add/sub/mul instructions whose intermediate only the second reads run as one
// sweep (the intermediate in a register): every first op, second op and side of the
// intermediate, over runs of whole tiles, tails and thread-like splits, must give the bits of
// the two ops run one by one (no FMA contraction, operands in their order). Intermediates
// that are read twice, read by both operands or written out are not paired, and give the same.
template <class T>
void check_paired_arithmetic_bitwise() {
    using namespace kt;
    target_guard restore;
    const binary_op arith[] = {binary_op::add, binary_op::sub, binary_op::mul};
    enum class use { left, right, both, twice, output };
    for (gk::target t : gk::available_targets()) {
        gk::set_target(t);
        for (binary_op op1 : arith)
            for (binary_op op2 : arith)
                for (use u : {use::left, use::right, use::both, use::twice, use::output})
                    for (std::size_t n : {std::size_t{128}, std::size_t{300}, std::size_t{1000}, std::size_t{4101}}) {
                        // r0, r1, r2 inputs; r3 = op1(r0, r1); r4 = op2(...); r5 = r3 * r2 (twice only).
                        std::vector<gk::program_instr> code(2);
                        code[0].kind = code[1].kind = gk::instr_kind::binary;
                        code[0].op = static_cast<std::uint8_t>(op1);
                        code[0].a = 0;
                        code[0].b = 1;
                        code[0].out = 3;
                        code[1].op = static_cast<std::uint8_t>(op2);
                        code[1].a = u == use::right ? 2 : 3;
                        code[1].b = u == use::right ? 3 : u == use::both ? 3 : 2;
                        code[1].out = 4;
                        if (u == use::twice) {
                            gk::program_instr extra = code[0];
                            extra.op = static_cast<std::uint8_t>(binary_op::mul);
                            extra.a = 3;
                            extra.b = 2;
                            extra.out = 5;
                            code.push_back(extra);
                        }
                        const std::size_t nregs = u == use::twice ? 6 : 5;
                        std::vector<gk::operand_mode> mode(nregs, gk::operand_mode::temp);
                        mode[0] = mode[1] = mode[2] = gk::operand_mode::contiguous;
                        mode[4] = gk::operand_mode::output;
                        if (u == use::twice) mode[5] = gk::operand_mode::output;
                        if (u == use::output) mode[3] = gk::operand_mode::output;
                        std::vector<std::vector<T>> reg(nregs);
                        for (std::size_t r = 0; r < 3; ++r)
                            reg[r] = make_data<T>(n, -3, 3, static_cast<std::uint32_t>(n * 7 + r), false);
                        for (std::size_t r = 3; r < nregs; ++r) reg[r].assign(n, T(0));
                        for (const auto& in : code)  // one by one
                            gk::binary(static_cast<binary_op>(in.op), reg[in.a].data(), 1, reg[in.b].data(), 1,
                                       reg[in.out].data(), n);
                        std::vector<std::vector<T>> got(nregs, std::vector<T>(n, T(-7)));
                        std::vector<T*> base(nregs, nullptr);
                        for (std::size_t r = 0; r < 3; ++r) base[r] = reg[r].data();
                        for (std::size_t r = 3; r < nregs; ++r)
                            if (mode[r] == gk::operand_mode::output) base[r] = got[r].data();
                        std::vector<T> scratch(nregs * gk::program_scratch_stride<T> + 64);
                        const std::vector<std::size_t> periods(nregs, 0);
                        const gk::program prog{code.data(), code.size(), mode.data(), nregs, periods.data()};
                        const std::size_t mid = n / 256 * 128;  // a tile boundary
                        gk::run_program(prog, base.data(), scratch.data(), 0, mid);
                        gk::run_program(prog, base.data(), scratch.data(), mid, n);
                        INFO("target " << gk::target_name(t) << " op1 " << static_cast<int>(op1) << " op2 "
                                       << static_cast<int>(op2) << " use " << static_cast<int>(u) << " n " << n);
                        for (std::size_t r = 3; r < nregs; ++r)
                            if (mode[r] == gk::operand_mode::output)
                                CHECK(std::memcmp(got[r].data(), reg[r].data(), n * sizeof(T)) == 0);
                    }
    }
}

}  // namespace

TEST_CASE("kernels: adjacent add/sub/mul fused in one sweep keep each op's rounding (float32)", "[kernels][program]") {
    check_paired_arithmetic_bitwise<float>();
}
TEST_CASE("kernels: adjacent add/sub/mul fused in one sweep keep each op's rounding (float64)", "[kernels][program]") {
    check_paired_arithmetic_bitwise<double>();
}

TEST_CASE("kernels: fused programs are bitwise the op-by-op kernels (float32)", "[kernels][program]") {
    check_programs_bitwise<float>();
}
TEST_CASE("kernels: fused programs are bitwise the op-by-op kernels (float64)", "[kernels][program]") {
    check_programs_bitwise<double>();
}
