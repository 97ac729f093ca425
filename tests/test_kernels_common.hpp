#pragma once
// Shared helpers for tests/test_kernels_*.cpp (not a test TU itself).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "graft/kernels/dispatch.hpp"
#include "graft/kernels/reference.hpp"

namespace kt {

namespace gk = graft::kernels;

/// Restores the dispatch target on scope exit.
struct target_guard {
    gk::target saved = gk::current_target();
    ~target_guard() { gk::set_target(saved); }
};

/// Distance in units in the last place between two finite values of the same type
/// (ordered-integer mapping, so denormals and sign changes count correctly).
template <class T>
inline double ulp_distance(T a, T b) {
    using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    constexpr U sign = U(1) << (8 * sizeof(T) - 1);
    U ua, ub;
    std::memcpy(&ua, &a, sizeof(T));
    std::memcpy(&ub, &b, sizeof(T));
    // Monotonic map of the float order onto unsigned integers (-0 and +0 are adjacent).
    ua = (ua & sign) ? U(~ua) : U(ua | sign);
    ub = (ub & sign) ? U(~ub) : U(ub | sign);
    return static_cast<double>(ua > ub ? ua - ub : ub - ua);
}

/// Tolerance: pass if within `ulps` ULP of the reference, or within
/// abs_eps * eps * max(1, |scale|) absolutely (for ops whose contract is absolute near zeros).
struct tol {
    double ulps = 0;
    double abs_eps = 0;
};

template <class T>
inline bool close(T got, T want, tol t, double scale = 1.0) {
    if (std::isnan(want)) return std::isnan(got);
    if (std::isnan(got)) return false;
    if (std::isinf(want) || std::isinf(got)) return got == want;
    if (got == want) return true;
    if (ulp_distance(got, want) <= t.ulps) return true;
    const double eps = std::numeric_limits<T>::epsilon();
    const double s = std::fabs(scale) > 1 ? std::fabs(scale) : 1.0;
    return std::fabs(static_cast<double>(got) - static_cast<double>(want)) <= t.abs_eps * eps * s;
}

template <class T>
inline std::vector<T> special_values() {
    using L = std::numeric_limits<T>;
    return {T(0),        -T(0),       T(1),          T(-1),          L::infinity(), -L::infinity(), L::quiet_NaN(),
            L::denorm_min(), -L::denorm_min(), L::min(),   -L::min(),   L::min() / 3, L::max(),      -L::max(),
            T(0.5),      T(-0.5),     T(2),          T(-3),          T(1e-7),       T(-1e-7),       T(88.5),
            T(-88.5),    T(89),       T(-104),       T(-87.5),       T(100),        T(-100),        T(710),
            T(-745),     T(3.14159265358979),        T(1e5),         T(-1e6),       T(20),          T(-20),
            T(10),       T(-10),      T(5.5),        T(-5.5)};
}

/// Lengths every kernel is tested at: 0..3*maxlanes+1 plus a few large ones.
inline std::vector<std::size_t> test_lengths() {
    std::vector<std::size_t> v;
    for (std::size_t n = 0; n <= 3 * 16 + 1; ++n) v.push_back(n);
    for (std::size_t n : {63u, 64u, 65u, 127u, 1000u, 4099u}) v.push_back(n);
    return v;
}

/// Random data mixing uniform values in [lo, hi] with special values.
template <class T>
inline std::vector<T> make_data(std::size_t n, double lo, double hi, std::uint32_t seed, bool specials = true) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(lo, hi);
    const auto sp = special_values<T>();
    std::vector<T> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        if (specials && rng() % 5 == 0)
            v[i] = sp[rng() % sp.size()];
        else
            v[i] = static_cast<T>(u(rng));
    }
    return v;
}

}  // namespace kt
