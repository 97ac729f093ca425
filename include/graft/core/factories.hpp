#pragma once
// Tensor factories: filled, ranged, random (seeded, reproducible) and from C++ data.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <mutex>
#include <random>
#include <vector>

#include "graft/core/detail/mt19937_64.hpp"
#include "graft/core/tensor.hpp"

namespace graft {

[[nodiscard]] GRAFT_INLINE Tensor full(const int_list& sizes, const scalar& value, dtype type);
/// Without a dtype, the value's category decides: bool, int64 or float32 (as torch.full).
[[nodiscard]] inline Tensor full(const int_list& sizes, const scalar& value) {
    return full(sizes, value, value.is_floating_point() ? default_float_dtype : value.kind());
}
[[nodiscard]] inline Tensor zeros(const int_list& sizes, dtype type = default_float_dtype) {
    return full(sizes, 0, type);
}
[[nodiscard]] inline Tensor ones(const int_list& sizes, dtype type = default_float_dtype) {
    return full(sizes, 1, type);
}
[[nodiscard]] inline Tensor empty_like(const Tensor& t) { return empty(t.sizes(), t.type()); }
// The _like factories are ops of their tensor (IR kinds zeros_like, ones_like, full_like): under
// graph capture their sizes follow it, so a symbolic graph computes them per call (a backward's
// `where(x > 0, g, zeros_like(g))` serves every batch size) instead of holding a constant.
[[nodiscard]] inline Tensor zeros_like(const Tensor& t) {
    const detail::observed_op op;
    return op.done(zeros(t.sizes(), t.type()), "zeros_like", {t});
}
[[nodiscard]] inline Tensor ones_like(const Tensor& t) {
    const detail::observed_op op;
    return op.done(ones(t.sizes(), t.type()), "ones_like", {t});
}
[[nodiscard]] inline Tensor full_like(const Tensor& t, const scalar& v) {
    const detail::observed_op op;
    return op.done(full(t.sizes(), v, t.type()), "full_like", {t},
                   {{"value", v.is_floating_point()      ? detail::op_attr(v.to_double())
                              : v.kind() == dtype::bool_ ? detail::op_attr(v.to_int64() != 0)
                                                         : detail::op_attr(v.to_int64())}});
}

[[nodiscard]] GRAFT_INLINE Tensor arange(const scalar& start, const scalar& end, const scalar& step, dtype type);
/// Values start, start+step, ... below end. int64 when all arguments are integers, else float32.
[[nodiscard]] inline Tensor arange(const scalar& start, const scalar& end, const scalar& step = 1) {
    const bool integral = !start.is_floating_point() && !end.is_floating_point() && !step.is_floating_point();
    return arange(start, end, step, integral ? dtype::int64 : default_float_dtype);
}
[[nodiscard]] inline Tensor arange(const scalar& end) { return arange(0, end, 1); }

/// `steps` values evenly spaced from start to end inclusive (as torch.linspace).
[[nodiscard]] GRAFT_INLINE Tensor linspace(double start, double end, std::int64_t steps,
                                           dtype type = default_float_dtype);

/// A seeded pseudo-random generator (64-bit Mersenne Twister): the same seed
/// gives the same sequence of tensors on every platform. Its engine is graft's own
/// detail::mt19937_64 (faster than libstdc++'s), which draws exactly what std::mt19937_64
/// draws for the same seed: the numbers are those graft drew when it used std::mt19937_64.
class generator {
public:
    explicit generator(std::uint64_t seed = default_seed);
    void manual_seed(std::uint64_t seed);
    [[nodiscard]] std::uint64_t initial_seed() const { return seed_; }

    /// Uniform in [0, 1) with 53 random bits.
    double uniform() {
        std::lock_guard lock(mutex_);
        return uniform_unlocked();
    }
    /// Standard normal (Box-Muller; the second value of each pair is kept).
    double normal();
    /// An integer uniform in [0, n) (n >= 1), without modulo bias.
    std::uint64_t below(std::uint64_t n);

    // Bulk draws: sink(i, value) for i = 0 .. n-1, in order, under one lock. They draw
    // bitwise what n calls of uniform() / normal() / below(range) would (same engine calls,
    // same Box-Muller pairs and kept spare, same rejection), and leave the generator in the
    // same state. What they save is the lock and unlock per value, which cost about as
    // much as a uniform draw (a tensor factory draws millions), and the engine's per-call
    // bookkeeping: they take its outputs in blocks (engine_block). The sink runs under the
    // lock: it must not call back into this generator.
    template <class Sink>
    void draw_uniforms(std::int64_t n, Sink sink) {
        std::lock_guard lock(mutex_);
        std::uint64_t buf[block_size];
        for (std::int64_t i = 0; i < n;) {
            const auto k = static_cast<std::size_t>(std::min<std::int64_t>(n - i, block_size));
            engine_.fill(buf, k);
            for (std::size_t j = 0; j < k; ++j, ++i) sink(i, to_uniform(buf[j]));
        }
    }
    template <class Sink>
    void draw_normals(std::int64_t n, Sink sink) {
        std::lock_guard lock(mutex_);
        std::int64_t i = 0;
        if (n > 0 && has_spare_) sink(i++, normal_unlocked());
        // Each pair of outputs takes two uniforms (more only when u1 is 0, which redraws it).
        engine_block draws(engine_, static_cast<std::uint64_t>(n - i + 1) / 2 * 2);
        for (; i < n; ++i) sink(i, normal_from(draws));
    }
    /// range >= 1, checked before anything is drawn (as below()).
    template <class Sink>
    void draw_below(std::uint64_t range, std::int64_t n, Sink sink) {
        const std::uint64_t limit = below_limit(range);
        std::lock_guard lock(mutex_);
        engine_block draws(engine_, static_cast<std::uint64_t>(n));
        for (std::int64_t i = 0; i < n; ++i) sink(i, below_from(draws, range, limit));
    }

    /// Everything that decides the numbers drawn next (torch.Generator.get_state / set_state):
    /// set_state(s) makes the generator draw again what it drew after get_state() returned s.
    struct state {
        detail::mt19937_64 engine;
        std::uint64_t seed = default_seed;
        double spare = 0.0;
        bool has_spare = false;
    };
    [[nodiscard]] state get_state() const {
        std::lock_guard lock(mutex_);
        return {engine_, seed_, spare_, has_spare_};
    }
    void set_state(const state& s) {
        std::lock_guard lock(mutex_);
        engine_ = s.engine;
        seed_ = s.seed;
        spare_ = s.spare;
        has_spare_ = s.has_spare;
    }

    static constexpr std::uint64_t default_seed = 67280421310721ULL;

private:
    static constexpr std::int64_t block_size = 256;  // engine outputs taken at once by the bulk draws

    // The engine one output per call (the scalar members).
    struct engine_calls {
        detail::mt19937_64& engine;
        std::uint64_t next() { return engine(); }
        void need_one_more() {}
    };
    // The engine's outputs in blocks of up to block_size, never more than are drawn in the end:
    // `needed` counts the outputs still to be drawn if nothing is rejected (a lower bound), and
    // a rejection adds one. So the engine ends where the scalar calls would have left it.
    struct engine_block {
        detail::mt19937_64& engine;
        std::uint64_t needed;
        std::uint64_t buf[block_size];
        std::size_t have = 0, next_index = 0;
        engine_block(detail::mt19937_64& e, std::uint64_t n) : engine(e), needed(n) {}
        std::uint64_t next() {
            if (next_index == have) {
                have = static_cast<std::size_t>(std::clamp<std::uint64_t>(needed, 1, block_size));
                engine.fill(buf, have);
                next_index = 0;
            }
            if (needed > 0) --needed;
            return buf[next_index++];
        }
        void need_one_more() { ++needed; }
    };

    // The draws themselves, for a caller that holds mutex_: the public members lock once
    // per value (uniform()) or once per tensor (draw_uniforms()) around these.
    /// An engine output's top 53 bits as a double in [0, 1).
    static double to_uniform(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }
    double uniform_unlocked() { return to_uniform(engine_()); }
    double normal_unlocked() {
        engine_calls draws{engine_};
        return normal_from(draws);
    }
    template <class Draws>
    double normal_from(Draws& draws) {
        if (has_spare_) {
            has_spare_ = false;
            return spare_;
        }
        double u1 = to_uniform(draws.next());
        while (u1 == 0.0) {
            draws.need_one_more();
            u1 = to_uniform(draws.next());
        }
        const double u2 = to_uniform(draws.next());
        const double r = std::sqrt(-2.0 * std::log(u1));
        constexpr double two_pi = 6.283185307179586476925286766559;
        spare_ = r * std::sin(two_pi * u2);
        has_spare_ = true;
        return r * std::cos(two_pi * u2);
    }
    /// The top of the last whole copy of [0, n) in the engine's range (draws at or above it
    /// are rejected so that every value is equally likely); checks n >= 1.
    static std::uint64_t below_limit(std::uint64_t n) {
        detail::check(n >= 1, "generator::below: the range is empty");
        constexpr std::uint64_t top = std::numeric_limits<std::uint64_t>::max();
        return top - top % n;
    }
    std::uint64_t below_unlocked(std::uint64_t n, std::uint64_t limit) {
        engine_calls draws{engine_};
        return below_from(draws, n, limit);
    }
    template <class Draws>
    static std::uint64_t below_from(Draws& draws, std::uint64_t n, std::uint64_t limit) {
        std::uint64_t v = draws.next();
        while (v >= limit) {
            draws.need_one_more();
            v = draws.next();
        }
        return v % n;
    }

    mutable std::mutex mutex_;
    detail::mt19937_64 engine_;
    std::uint64_t seed_;
    double spare_ = 0.0;
    bool has_spare_ = false;
};

/// The process-wide generator used when none is passed.
[[nodiscard]] GRAFT_INLINE generator& default_generator();
/// Seeds the default generator, as torch.manual_seed.
inline void manual_seed(std::uint64_t seed) { default_generator().manual_seed(seed); }

namespace detail {
/// A tensor of `type` filled with gen's uniform (rand) or standard normal (randn) draws, in
/// row-major order, under one lock of gen.
GRAFT_INLINE Tensor random_tensor(const char* op, const int_list& sizes, dtype type, generator& gen, bool uniform);
}  // namespace detail

/// Uniform samples in [0, 1).
[[nodiscard]] GRAFT_INLINE Tensor rand(const int_list& sizes, dtype type = default_float_dtype,
                                       generator& gen = default_generator());
/// Standard normal samples.
[[nodiscard]] GRAFT_INLINE Tensor randn(const int_list& sizes, dtype type = default_float_dtype,
                                        generator& gen = default_generator());
/// rand / randn with `like`'s sizes and dtype (torch.rand_like / randn_like; `like` must be
/// floating point). Its values are not read: under graph capture the sizes follow `like`'s.
[[nodiscard]] GRAFT_INLINE Tensor rand_like(const Tensor& like, generator& gen = default_generator());
[[nodiscard]] GRAFT_INLINE Tensor randn_like(const Tensor& like, generator& gen = default_generator());
/// Integers uniform in [low, high) (torch.randint), int64 by default; high > low.
[[nodiscard]] GRAFT_INLINE Tensor randint(std::int64_t low, std::int64_t high, const int_list& sizes,
                                          dtype type = dtype::int64, generator& gen = default_generator());
/// A random permutation of 0, 1, ..., n-1 (torch.randperm), int64 by default (float32 and float64
/// when every value is exact in them: n <= 2^24, 2^53). A Fisher-Yates shuffle drawing from gen:
/// for i = 0 .. n-2, position i swaps with position i + gen.below(n - i) (one draw each).
[[nodiscard]] GRAFT_INLINE Tensor randperm(std::int64_t n, dtype type = dtype::int64,
                                           generator& gen = default_generator());
/// randint with `like`'s sizes and dtype (torch.randint_like; any dtype but bool). Its values
/// are not read: under graph capture the sizes follow `like`'s.
[[nodiscard]] GRAFT_INLINE Tensor randint_like(const Tensor& like, std::int64_t low, std::int64_t high,
                                               generator& gen = default_generator());
/// randint_like(like, 0, high).
[[nodiscard]] inline Tensor randint_like(const Tensor& like, std::int64_t high, generator& gen = default_generator()) {
    return randint_like(like, 0, high, gen);
}
/// 1 with probability p[i], else 0, for every element of the floating-point tensor p (values in
/// [0, 1]); p's sizes and dtype (torch.bernoulli(p)). Never differentiable.
[[nodiscard]] GRAFT_INLINE Tensor bernoulli(const Tensor& p, generator& gen = default_generator());
/// 1 with probability p, else 0, with `like`'s sizes and dtype (torch.bernoulli(input, p)).
[[nodiscard]] GRAFT_INLINE Tensor bernoulli(const Tensor& like, double p, generator& gen = default_generator());

/// A tensor holding a copy of `values` with the given sizes (1-D when sizes is empty).
template <element T>
[[nodiscard]] Tensor from_vector(const std::vector<T>& values, int_list sizes = {-1}) {
    const detail::observed_op factory;  // its contents are known: a constant when captured
    sizes = detail::infer_size("from_vector", std::move(sizes), static_cast<std::int64_t>(values.size()),
                               {static_cast<std::int64_t>(values.size())});
    Tensor t = empty(sizes, dtype_of_v<T>);
    T* p = t.data_ptr<T>();
    for (std::size_t i = 0; i < values.size(); ++i) p[i] = values[i];
    return t;
}
/// A tensor from a braced list, as torch.tensor: integers give int64, floating
/// values float32 (the default dtype), bools bool; pass a dtype to choose.
namespace detail {
/// The values at full precision: bool, int64 or float64.
template <class T>
[[nodiscard]] Tensor exact_tensor(std::initializer_list<T> values, int_list sizes) {
    if constexpr (std::is_same_v<T, bool>) return from_vector(std::vector<bool>(values), std::move(sizes));
    else if constexpr (std::is_integral_v<T>)
        return from_vector(std::vector<std::int64_t>(values.begin(), values.end()), std::move(sizes));
    else return from_vector(std::vector<double>(values.begin(), values.end()), std::move(sizes));
}
}  // namespace detail

/// A tensor from a braced list, as torch.tensor: integers give int64, floating
/// values float32 (the default dtype), bools bool; pass a dtype to choose.
template <class T>
    requires std::is_arithmetic_v<T>
[[nodiscard]] Tensor tensor(std::initializer_list<T> values, int_list sizes = {-1}) {
    Tensor t = detail::exact_tensor(values, std::move(sizes));
    return std::is_floating_point_v<T> ? detail::raw::to(t, default_float_dtype) : t;
}
template <class T>
    requires std::is_arithmetic_v<T>
[[nodiscard]] Tensor tensor(std::initializer_list<T> values, int_list sizes, dtype type) {
    return detail::raw::to(detail::exact_tensor(values, std::move(sizes)), type);
}
/// A 0-dim tensor holding one value (float32 for floating values, int64 for integers, bool).
[[nodiscard]] inline Tensor scalar_tensor(const scalar& value) { return full({}, value); }
[[nodiscard]] inline Tensor scalar_tensor(const scalar& value, dtype type) { return full({}, value, type); }

}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/core/impl/factories.ipp"
#endif
