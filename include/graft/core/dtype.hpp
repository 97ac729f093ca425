#pragma once
// Element types of graft tensors and PyTorch's type-promotion rules.
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <string_view>
#include <type_traits>

#include "graft/core/error.hpp"
#include "graft/core/half.hpp"

namespace graft {

/// The element type of a tensor. `bool_` is stored as one byte per element. int32, float16
/// and bfloat16 are storage dtypes: tensors hold them exactly (creation, conversion, views,
/// printing, safetensors), and ops compute on them in int64 / float32 and round the result
/// back to them, as PyTorch's CPU kernels do (docs/tensor.md#dtypes).
enum class dtype : std::uint8_t { bool_, int64, float32, float64, int32, float16, bfloat16 };

[[nodiscard]] constexpr std::string_view name(dtype t) noexcept {
    switch (t) {
        case dtype::bool_: return "bool";
        case dtype::int64: return "int64";
        case dtype::float32: return "float32";
        case dtype::float64: return "float64";
        case dtype::int32: return "int32";
        case dtype::float16: return "float16";
        case dtype::bfloat16: return "bfloat16";
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
        case dtype::int32: return 4;
        case dtype::float16: return 2;
        case dtype::bfloat16: return 2;
    }
    return 0;
}

[[nodiscard]] constexpr bool is_floating_point(dtype t) noexcept {
    return t == dtype::float32 || t == dtype::float64 || t == dtype::float16 || t == dtype::bfloat16;
}

/// The default dtype of floating-point factories and of Python-float-like scalars.
inline constexpr dtype default_float_dtype = dtype::float32;

namespace detail {
/// Rank in the promotion lattice bool < int32 < int64 < float16, bfloat16 < float32 < float64.
[[nodiscard]] constexpr int promotion_rank(dtype t) noexcept {
    switch (t) {
        case dtype::bool_: return 0;
        case dtype::int32: return 1;
        case dtype::int64: return 2;
        case dtype::float16: return 3;
        case dtype::bfloat16: return 3;
        case dtype::float32: return 4;
        case dtype::float64: return 5;
    }
    return 0;
}
}  // namespace detail

/// The smallest dtype both `a` and `b` convert to without losing category, as
/// torch.promote_types: bool < int32 < int64 < float16, bfloat16 < float32 < float64, and
/// float16 with bfloat16 gives float32.
[[nodiscard]] constexpr dtype promote_types(dtype a, dtype b) noexcept {
    if (a == b) return a;
    if ((a == dtype::float16 && b == dtype::bfloat16) || (a == dtype::bfloat16 && b == dtype::float16))
        return dtype::float32;
    return detail::promotion_rank(a) >= detail::promotion_rank(b) ? a : b;
}

/// Is `t` a storage dtype (int32, float16, bfloat16): ops compute on it in compute_dtype(t)?
[[nodiscard]] constexpr bool is_storage_dtype(dtype t) noexcept {
    return t == dtype::int32 || t == dtype::float16 || t == dtype::bfloat16;
}

/// The dtype graft computes in for tensors of dtype `t`: float32 for float16 and bfloat16,
/// int64 for int32, `t` itself otherwise.
[[nodiscard]] constexpr dtype compute_dtype(dtype t) noexcept {
    if (t == dtype::float16 || t == dtype::bfloat16) return dtype::float32;
    if (t == dtype::int32) return dtype::int64;
    return t;
}

/// Maps a C++ element type to its dtype.
template <class T>
struct dtype_of;
template <> struct dtype_of<bool> { static constexpr dtype value = dtype::bool_; };
template <> struct dtype_of<std::int64_t> { static constexpr dtype value = dtype::int64; };
template <> struct dtype_of<float> { static constexpr dtype value = dtype::float32; };
template <> struct dtype_of<double> { static constexpr dtype value = dtype::float64; };
template <> struct dtype_of<std::int32_t> { static constexpr dtype value = dtype::int32; };
template <> struct dtype_of<half> { static constexpr dtype value = dtype::float16; };
template <> struct dtype_of<bfloat16> { static constexpr dtype value = dtype::bfloat16; };
template <class T>
inline constexpr dtype dtype_of_v = dtype_of<T>::value;

/// Element types graft stores.
template <class T>
concept element = std::is_same_v<T, bool> || std::is_same_v<T, std::int64_t> || std::is_same_v<T, float> ||
                  std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> || std::is_same_v<T, half> ||
                  std::is_same_v<T, bfloat16>;

namespace detail {

/// Calls `f(T{})` with the C++ type of `t`, for the dtypes graft's kernels compute in (bool,
/// int64, float32, float64). A storage dtype here is a kernel that has not converted its
/// operands to compute_dtype first: a clear error, never a misread.
template <class F>
decltype(auto) visit_dtype(dtype t, F&& f) {
    switch (t) {
        case dtype::bool_: return f(bool{});
        case dtype::int64: return f(std::int64_t{});
        case dtype::float32: return f(float{});
        case dtype::float64: return f(double{});
        case dtype::int32:
        case dtype::float16:
        case dtype::bfloat16:
            throw error(std::string("graft: this operation has no kernel for ") + std::string(name(t)) +
                        " tensors (a storage dtype); convert with .to(dtype::" +
                        (t == dtype::int32 ? "int64" : "float32") + ") first");
    }
    throw error("graft: invalid dtype value");
}

/// visit_dtype over every dtype, storage dtypes included: for code that moves, converts or
/// prints elements without computing on them.
template <class F>
decltype(auto) visit_storage_dtype(dtype t, F&& f) {
    switch (t) {
        case dtype::int32: return f(std::int32_t{});
        case dtype::float16: return f(half{});
        case dtype::bfloat16: return f(bfloat16{});
        default: return visit_dtype(t, std::forward<F>(f));
    }
}

}  // namespace detail
}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/core/impl/dtype.ipp"
#endif
