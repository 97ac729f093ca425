#pragma once
// Definitions for graft/core/factories.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/core/factories.hpp"

#include <cmath>
#include <limits>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

namespace graft {

GRAFT_INLINE Tensor full(const int_list& sizes, const scalar& value, dtype type) {
    const detail::observed_op factory;  // its contents are known: a constant when captured
    Tensor t = empty(sizes, type);
    detail::raw::fill_(t, value);
    return t;
}

GRAFT_INLINE Tensor arange(const scalar& start, const scalar& end, const scalar& step, dtype type) {
    const detail::observed_op factory;  // its contents are known: a constant when captured
    if (is_storage_dtype(type)) return detail::raw::to(arange(start, end, step, compute_dtype(type)), type);
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
    detail::check(is_floating_point(type) || type == dtype::int64 || type == dtype::int32,
                  "linspace: unsupported dtype ", type);
    if (is_storage_dtype(type)) return detail::raw::to(linspace(start, end, steps, compute_dtype(type)), type);
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
    return normal_unlocked();
}

GRAFT_INLINE generator& default_generator() {
    static generator g;
    return g;
}

GRAFT_INLINE std::uint64_t generator::below(std::uint64_t n) {
    const std::uint64_t limit = below_limit(n);  // checks n >= 1 before locking
    std::lock_guard lock(mutex_);
    return below_unlocked(n, limit);
}

namespace detail {
GRAFT_INLINE Tensor random_tensor(const char* op, const int_list& sizes, dtype type, generator& gen, bool uniform) {
    check(is_floating_point(type), op, ": expected a floating-point dtype, got ", type);
    if (is_storage_dtype(type)) {
        // Drawn in float32 and rounded; a uniform draw that rounds up to 1 takes the largest
        // value below 1 instead, so that rand stays in [0, 1).
        Tensor t = raw::to(random_tensor(op, sizes, compute_dtype(type), gen, uniform), type);
        if (uniform) {
            const Tensor below_one = full({}, 1.0, type);
            const std::uint16_t largest = type == dtype::float16 ? 0x3BFF : 0x3F7F;
            auto* p = static_cast<std::uint16_t*>(t.raw_data());
            const auto one = *static_cast<const std::uint16_t*>(below_one.raw_data());
            for (std::int64_t i = 0; i < t.numel(); ++i)
                if (p[i] == one) p[i] = largest;
        }
        return t;
    }
    Tensor t = empty(sizes, type);
    const std::int64_t n = t.numel();
    visit_dtype(type, [&](auto z) {
        using T = decltype(z);
        if constexpr (std::is_floating_point_v<T>) {
            T* p = t.data_ptr<T>();
            if (!uniform) {
                gen.draw_normals(n, [p](std::int64_t i, double v) { p[i] = static_cast<T>(v); });
            } else if constexpr (std::is_same_v<T, float>) {
                // A double just below 1 rounds up to 1.0f, which must not leave [0, 1).
                gen.draw_uniforms(n, [p](std::int64_t i, double v) {
                    const float f = static_cast<float>(v);
                    p[i] = f >= 1.0f ? std::nextafter(1.0f, 0.0f) : f;
                });
            } else {
                gen.draw_uniforms(n, [p](std::int64_t i, double v) { p[i] = static_cast<T>(v); });
            }
        }
    });
    return t;
}
}  // namespace detail

// Random factories report themselves as random ops (on_random), so that graph capture
// records a node that draws when the graph runs instead of this call's values.

GRAFT_INLINE Tensor rand(const int_list& sizes, dtype type, generator& gen) {
    const detail::observed_op op;
    return op.random_done(detail::random_tensor("rand", sizes, type, gen, true), "rand", {},
                          {{"sizes", detail::to_vector(sizes)}, {"dtype", std::string(name(type))}}, gen);
}

GRAFT_INLINE Tensor randn(const int_list& sizes, dtype type, generator& gen) {
    const detail::observed_op op;
    return op.random_done(detail::random_tensor("randn", sizes, type, gen, false), "randn", {},
                          {{"sizes", detail::to_vector(sizes)}, {"dtype", std::string(name(type))}}, gen);
}

GRAFT_INLINE Tensor rand_like(const Tensor& like, generator& gen) {
    detail::check(like.defined(), "rand_like: the tensor is undefined");
    const detail::observed_op op;
    return op.random_done(detail::random_tensor("rand", like.sizes(), like.type(), gen, true),
                          "rand_like", {like}, {}, gen);
}

GRAFT_INLINE Tensor randn_like(const Tensor& like, generator& gen) {
    detail::check(like.defined(), "randn_like: the tensor is undefined");
    const detail::observed_op op;
    return op.random_done(detail::random_tensor("randn", like.sizes(), like.type(), gen, false),
                          "randn_like", {like}, {}, gen);
}

namespace detail {
/// A tensor of `type` filled with gen's integers in [low, high), row-major.
inline Tensor randint_tensor(const char* op, std::int64_t low, std::int64_t high, const int_list& sizes, dtype type,
                             generator& gen) {
    check(high > low, op, ": expected low < high, got low = ", low, ", high = ", high);
    check(type != dtype::bool_, op, ": dtype bool is not supported");
    Tensor t = empty(sizes, type);
    const auto range = static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low);
    const std::int64_t n = t.numel();
    visit_storage_dtype(type, [&](auto z) {
        using T = decltype(z);
        if constexpr (!std::is_same_v<T, bool>) {
            T* p = t.data_ptr<T>();
            gen.draw_below(range, n, [p, low](std::int64_t i, std::uint64_t v) {
                p[i] = convert_element<T>(static_cast<std::int64_t>(static_cast<std::uint64_t>(low) + v));
            });
        }
    });
    return t;
}
}  // namespace detail

GRAFT_INLINE Tensor randint(std::int64_t low, std::int64_t high, const int_list& sizes, dtype type, generator& gen) {
    const detail::observed_op op;
    return op.random_done(detail::randint_tensor("randint", low, high, sizes, type, gen), "randint", {},
                          {{"low", low}, {"high", high}, {"sizes", detail::to_vector(sizes)},
                           {"dtype", std::string(name(type))}},
                          gen);
}

GRAFT_INLINE Tensor randperm(std::int64_t n, dtype type, generator& gen) {
    detail::check(n >= 0, "randperm: n must be non-negative, got ", n);
    detail::check(type == dtype::int64 || type == dtype::float32 || type == dtype::float64,
                  "randperm: expected dtype int64, float32 or float64, got ", type);
    const std::int64_t exact = type == dtype::float32 ? std::int64_t{1} << 24
                               : type == dtype::float64 ? std::int64_t{1} << 53
                                                        : std::numeric_limits<std::int64_t>::max();
    detail::check(n <= exact, "randperm: n = ", n, " is too large for dtype ", type, " (at most ", exact,
                  " values are exact in it)");
    const detail::observed_op op;
    std::vector<std::int64_t> perm(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) perm[static_cast<std::size_t>(i)] = i;
    for (std::int64_t i = 0; i + 1 < n; ++i) {
        const auto j = i + static_cast<std::int64_t>(gen.below(static_cast<std::uint64_t>(n - i)));
        std::swap(perm[static_cast<std::size_t>(i)], perm[static_cast<std::size_t>(j)]);
    }
    Tensor t = empty({n}, type);
    detail::visit_dtype(type, [&](auto z) {
        using T = decltype(z);
        T* p = t.data_ptr<T>();
        for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(perm[static_cast<std::size_t>(i)]);
    });
    return op.random_done(std::move(t), "randperm", {}, {{"n", n}, {"dtype", std::string(name(type))}}, gen);
}

GRAFT_INLINE Tensor randint_like(const Tensor& like, std::int64_t low, std::int64_t high, generator& gen) {
    detail::check(like.defined(), "randint_like: the tensor is undefined");
    const detail::observed_op op;
    return op.random_done(detail::randint_tensor("randint_like", low, high, like.sizes(), like.type(), gen),
                          "randint_like", {like}, {{"low", low}, {"high", high}}, gen);
}

namespace detail {
/// 1 where a uniform draw is below probability(i), else 0: bernoulli's loop (row-major order).
template <class Probability>
Tensor bernoulli_draws(const char* op, const int_list& sizes, dtype type, generator& gen, Probability probability) {
    check(is_floating_point(type), op, ": expected a floating-point dtype, got ", type);
    if (is_storage_dtype(type))  // 0 and 1 are exact in every dtype
        return raw::to(bernoulli_draws(op, sizes, compute_dtype(type), gen, probability), type);
    Tensor t = empty(sizes, type);
    const std::int64_t n = t.numel();
    visit_dtype(type, [&](auto z) {
        using T = decltype(z);
        if constexpr (std::is_floating_point_v<T>) {
            T* out = t.data_ptr<T>();
            // 1 or 0 picked by the comparison as an index: g++ compiles it without a branch
            // (a branch mispredicts half the draws at p = 0.5, which doubled the time).
            gen.draw_uniforms(n, [out, &probability](std::int64_t i, double u) {
                constexpr T values[2] = {T(0), T(1)};
                out[i] = values[u < probability(i) ? 1 : 0];
            });
        }
    });
    return t;
}
}  // namespace detail

GRAFT_INLINE Tensor bernoulli(const Tensor& p, generator& gen) {
    detail::check(p.defined(), "bernoulli: the tensor is undefined");
    detail::check(is_floating_point(p.type()), "bernoulli: expected a floating-point probability tensor, got ", p.type());
    const detail::observed_op op;
    if (is_storage_dtype(p.type())) {
        Tensor out = detail::raw::to(bernoulli(detail::raw::to(p, compute_dtype(p.type())), gen), p.type());
        return op.random_done(std::move(out), "bernoulli", {p}, {}, gen);
    }
    const Tensor probs = detail::raw::contiguous(p);
    Tensor out;
    detail::visit_dtype(p.type(), [&](auto z) {
        using T = decltype(z);
        if constexpr (std::is_floating_point_v<T>) {
            const T* q = probs.data_ptr<T>();
            for (std::int64_t i = 0; i < probs.numel(); ++i)
                detail::check(q[i] >= T(0) && q[i] <= T(1), "bernoulli: expected 0 <= p <= 1 for every element, got ",
                              static_cast<double>(q[i]), " at flat position ", i);
            out = detail::bernoulli_draws("bernoulli", p.sizes(), p.type(), gen,
                                          [q](std::int64_t i) { return static_cast<double>(q[i]); });
        }
    });
    return op.random_done(std::move(out), "bernoulli", {p}, {}, gen);
}

GRAFT_INLINE Tensor bernoulli(const Tensor& like, double p, generator& gen) {
    detail::check(like.defined(), "bernoulli: the tensor is undefined");
    detail::check(p >= 0.0 && p <= 1.0, "bernoulli: expected 0 <= p <= 1, got ", p);
    const detail::observed_op op;
    return op.random_done(detail::bernoulli_draws("bernoulli", like.sizes(), like.type(), gen,
                                                  [p](std::int64_t) { return p; }),
                          "bernoulli_p", {like}, {{"p", p}}, gen);
}

}  // namespace graft
