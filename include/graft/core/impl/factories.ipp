#pragma once
// Definitions for graft/core/factories.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/core/factories.hpp"

#include <cmath>
#include <limits>
#include <cstdint>
#include <mutex>
#include <type_traits>

namespace graft {

GRAFT_INLINE Tensor full(const int_list& sizes, const scalar& value, dtype type) {
    const detail::observed_op factory;  // its contents are known: a constant when captured
    Tensor t = empty(sizes, type);
    detail::raw::fill_(t, value);
    return t;
}

GRAFT_INLINE Tensor arange(const scalar& start, const scalar& end, const scalar& step, dtype type) {
    const detail::observed_op factory;  // its contents are known: a constant when captured
    const double s = start.to_double(), e = end.to_double(), d = step.to_double();
    detail::check(d != 0.0, "arange: step must be nonzero");
    detail::check(std::isfinite(s) && std::isfinite(e), "arange: unsupported range: ", start, " -> ", end);
    detail::check((d > 0 && e >= s) || (d < 0 && e <= s), "arange: upper bound and larger bound inconsistent with "
                  "step sign (start ", start, ", end ", end, ", step ", step, ")");
    std::int64_t n = 0;
    if (type == dtype::int64 && !start.is_floating_point() && !end.is_floating_point() && !step.is_floating_point()) {
        const std::int64_t si = start.to_int64(), ei = end.to_int64(), di = step.to_int64();
        std::int64_t span = 0;  // |end - start|, the signs checked above
        if (__builtin_sub_overflow(di > 0 ? ei : si, di > 0 ? si : ei, &span))
            detail::fail(detail::concat("arange: ", start, " -> ", end, " by ", step,
                                        " has more elements than an int64 can count"));
        const std::uint64_t magnitude = di > 0 ? static_cast<std::uint64_t>(di) : 0 - static_cast<std::uint64_t>(di);
        n = span == 0 ? 0 : static_cast<std::int64_t>((static_cast<std::uint64_t>(span) - 1) / magnitude + 1);
    } else {
        const double count = std::ceil((e - s) / d);
        detail::check(count < 9.2e18, "arange: ", start, " -> ", end, " by ", step,
                      " has more elements than an int64 can count");
        n = static_cast<std::int64_t>(count);
    }
    Tensor t = empty({n}, type);
    detail::visit_dtype(type, [&](auto z) {
        using T = decltype(z);
        T* p = t.data_ptr<T>();
        for (std::int64_t i = 0; i < n; ++i) {
            if constexpr (std::is_same_v<T, std::int64_t>)
                p[i] = start.to_int64() + i * step.to_int64();
            else
                p[i] = detail::convert_element<T>(s + static_cast<double>(i) * d);
        }
    });
    return t;
}

GRAFT_INLINE Tensor linspace(double start, double end, std::int64_t steps, dtype type) {
    const detail::observed_op factory;  // its contents are known: a constant when captured
    detail::check(steps >= 0, "linspace: number of steps must be non-negative, got ", steps);
    detail::check(is_floating_point(type) || type == dtype::int64, "linspace: unsupported dtype ", type);
    Tensor t = empty({steps}, type);
    const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
    const std::int64_t half = steps / 2;
    detail::visit_dtype(type, [&](auto z) {
        using T = decltype(z);
        T* p = t.data_ptr<T>();
        // Like PyTorch: the first half counts up from start, the second half down from end.
        for (std::int64_t i = 0; i < steps; ++i) {
            const double v = steps == 1 ? start : i < half ? start + step * static_cast<double>(i)
                                      : end - step * static_cast<double>(steps - 1 - i);
            p[i] = static_cast<T>(v);
        }
    });
    return t;
}

GRAFT_INLINE generator::generator(std::uint64_t seed) : engine_(seed), seed_(seed) {}

GRAFT_INLINE void generator::manual_seed(std::uint64_t seed) {
    std::lock_guard lock(mutex_);
    engine_.seed(seed);
    seed_ = seed;
    has_spare_ = false;
}

GRAFT_INLINE double generator::normal() {
    std::lock_guard lock(mutex_);
    if (has_spare_) {
        has_spare_ = false;
        return spare_;
    }
    double u1 = 0.0;
    do u1 = uniform_unlocked(); while (u1 == 0.0);
    const double u2 = uniform_unlocked();
    const double r = std::sqrt(-2.0 * std::log(u1));
    constexpr double two_pi = 6.283185307179586476925286766559;
    spare_ = r * std::sin(two_pi * u2);
    has_spare_ = true;
    return r * std::cos(two_pi * u2);
}

GRAFT_INLINE generator& default_generator() {
    static generator g;
    return g;
}

GRAFT_INLINE Tensor rand(const int_list& sizes, dtype type, generator& gen) {
    const detail::observed_op factory;  // its contents are known: a constant when captured
    return detail::random_tensor("rand", sizes, type, [&] { return gen.uniform(); });
}

GRAFT_INLINE Tensor randn(const int_list& sizes, dtype type, generator& gen) {
    const detail::observed_op factory;  // its contents are known: a constant when captured
    return detail::random_tensor("randn", sizes, type, [&] { return gen.normal(); });
}

}  // namespace graft
