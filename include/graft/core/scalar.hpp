#pragma once
// graft::scalar: a C++ number passed to a tensor op, remembering its category
// (bool, integer or floating) for type promotion, like a Python number in PyTorch.
#include <concepts>
#include <cstdint>
#include <ostream>

#include "graft/core/dtype.hpp"

namespace graft {

namespace detail {

/// A floating-point value converted to int64 with defined results everywhere: truncation
/// toward zero in range; NaN, infinities and values outside int64's range give INT64_MIN
/// (what x86-64's conversion instruction, and so PyTorch on this platform, returns).
[[nodiscard]] constexpr std::int64_t float_to_int64(double v) noexcept {
    // 2^63 is exact in double; the range check is false for NaN.
    return v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? static_cast<std::int64_t>(v)
                                                                   : std::int64_t{-9223372036854775807 - 1};
}

}  // namespace detail

class scalar {
public:
    constexpr scalar(bool v) noexcept : value_(v ? 1.0 : 0.0), int_(v), kind_(dtype::bool_) {}
    template <std::integral I>
        requires(!std::same_as<I, bool>)
    constexpr scalar(I v) noexcept
        : value_(static_cast<double>(v)), int_(static_cast<std::int64_t>(v)), kind_(dtype::int64) {}
    template <std::floating_point F>
    constexpr scalar(F v) noexcept : value_(static_cast<double>(v)), int_(0), kind_(dtype::float64) {}

    /// bool_, int64 or float64: the category of the number, not a tensor dtype.
    [[nodiscard]] constexpr dtype kind() const noexcept { return kind_; }
    [[nodiscard]] constexpr bool is_floating_point() const noexcept { return kind_ == dtype::float64; }
    [[nodiscard]] constexpr double to_double() const noexcept { return value_; }
    [[nodiscard]] constexpr std::int64_t to_int64() const noexcept {
        return kind_ == dtype::float64 ? detail::float_to_int64(value_) : int_;
    }

    /// The value converted to element type T.
    template <class T>
    [[nodiscard]] constexpr T to() const noexcept {
        if constexpr (std::same_as<T, bool>) return value_ != 0.0;
        else if constexpr (std::integral<T>) return static_cast<T>(to_int64());
        else return static_cast<T>(value_);
    }

    friend std::ostream& operator<<(std::ostream& os, const scalar& s) {
        if (s.kind_ == dtype::float64) return os << s.value_;
        if (s.kind_ == dtype::bool_) return os << (s.int_ ? "True" : "False");
        return os << s.int_;
    }

private:
    double value_;
    std::int64_t int_;
    dtype kind_;
};

}  // namespace graft
