#pragma once
// Element types of graft tensors and PyTorch's type-promotion rules.
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string_view>
#include <type_traits>

#include "graft/core/error.hpp"

namespace graft {

/// The element type of a tensor. `bool_` is stored as one byte per element.
enum class dtype : std::uint8_t { bool_, int64, float32, float64 };

[[nodiscard]] constexpr std::string_view name(dtype t) noexcept {
    switch (t) {
        case dtype::bool_: return "bool";
        case dtype::int64: return "int64";
        case dtype::float32: return "float32";
        case dtype::float64: return "float64";
    }
    return "?";
}

GRAFT_INLINE std::ostream& operator<<(std::ostream& os, dtype t);

[[nodiscard]] constexpr std::size_t element_size(dtype t) noexcept {
    switch (t) {
        case dtype::bool_: return 1;
        case dtype::int64: return 8;
        case dtype::float32: return 4;
        case dtype::float64: return 8;
    }
    return 0;
}

[[nodiscard]] constexpr bool is_floating_point(dtype t) noexcept {
    return t == dtype::float32 || t == dtype::float64;
}

/// The default dtype of floating-point factories and of Python-float-like scalars.
inline constexpr dtype default_float_dtype = dtype::float32;

/// The smallest dtype both `a` and `b` convert to without losing category
/// (bool < int64 < float32 < float64), as torch.promote_types.
[[nodiscard]] constexpr dtype promote_types(dtype a, dtype b) noexcept {
    return static_cast<std::uint8_t>(a) > static_cast<std::uint8_t>(b) ? a : b;
}

/// Maps a C++ element type to its dtype.
template <class T>
struct dtype_of;
template <> struct dtype_of<bool> { static constexpr dtype value = dtype::bool_; };
template <> struct dtype_of<std::int64_t> { static constexpr dtype value = dtype::int64; };
template <> struct dtype_of<float> { static constexpr dtype value = dtype::float32; };
template <> struct dtype_of<double> { static constexpr dtype value = dtype::float64; };
template <class T>
inline constexpr dtype dtype_of_v = dtype_of<T>::value;

/// Element types graft stores.
template <class T>
concept element = std::is_same_v<T, bool> || std::is_same_v<T, std::int64_t> ||
                  std::is_same_v<T, float> || std::is_same_v<T, double>;

namespace detail {

/// Calls `f(T{})` with the C++ type of `t`.
template <class F>
decltype(auto) visit_dtype(dtype t, F&& f) {
    switch (t) {
        case dtype::bool_: return f(bool{});
        case dtype::int64: return f(std::int64_t{});
        case dtype::float32: return f(float{});
        case dtype::float64: return f(double{});
    }
    throw error("graft: invalid dtype value");
}

}  // namespace detail
}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/core/impl/dtype.ipp"
#endif
