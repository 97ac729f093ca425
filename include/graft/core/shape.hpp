#pragma once
// Sizes, strides, broadcasting (NumPy/PyTorch rules) and dimension wrapping.
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

#include "graft/core/error.hpp"
#include "graft/core/int_list.hpp"

namespace graft {


namespace detail {

/// "[2, 3]": how shapes appear in error messages.
[[nodiscard]] GRAFT_INLINE std::string to_string(const int_list& v);

/// Number of elements of a tensor with these sizes; 1 for a 0-dim tensor.
[[nodiscard]] inline std::int64_t numel_of(const int_list& sizes) noexcept {
    std::int64_t n = 1;
    for (auto s : sizes) n *= s;
    return n;
}

/// Row-major (C-contiguous) strides, in elements.
[[nodiscard]] GRAFT_INLINE int_list contiguous_strides(const int_list& sizes);
/// The same, written into `strides` (no temporary list).
GRAFT_INLINE void assign_contiguous_strides(int_list& strides, const int_list& sizes);

/// True when the layout is row-major contiguous (size-1 dims may have any stride).
[[nodiscard]] inline bool is_contiguous_layout(const int_list& sizes, const int_list& strides) noexcept {
    std::int64_t expected = 1;
    for (std::size_t i = sizes.size(); i-- > 0;) {
        if (sizes[i] == 0) return true;
        if (sizes[i] != 1) {
            if (strides[i] != expected) return false;
            expected *= sizes[i];
        }
    }
    return true;
}

/// Wraps a possibly negative `dim` into [0, rank) ([0, 1) for rank 0, as PyTorch), or throws.
[[nodiscard]] GRAFT_INLINE std::int64_t wrap_dim(const char* op, std::int64_t dim, std::int64_t rank);

/// Checks sizes are non-negative.
GRAFT_INLINE void check_sizes(const char* op, const int_list& sizes);

/// a * b and a + b when they fit in int64 (false on overflow, `out` then unspecified).
[[nodiscard]] inline bool mul_fits(std::int64_t a, std::int64_t b, std::int64_t& out) noexcept {
    return !__builtin_mul_overflow(a, b, &out);
}
[[nodiscard]] inline bool add_fits(std::int64_t a, std::int64_t b, std::int64_t& out) noexcept {
    return !__builtin_add_overflow(a, b, &out);
}

/// Checks sizes are non-negative and that the product of the sizes (each counted as at least
/// 1, so contiguous strides fit too) fits in int64; returns the element count. Throws
/// graft::error naming `op` and the sizes otherwise.
GRAFT_INLINE std::int64_t checked_numel(const char* op, const int_list& sizes);

/// Bytes for `numel` elements of `element_size` bytes, when the count is addressable
/// (<= PTRDIFF_MAX); throws graft::error naming `op` otherwise.
GRAFT_INLINE std::size_t checked_bytes(const char* op, std::int64_t numel, std::size_t element_size);

}  // namespace detail

/// The shape two shapes broadcast to (trailing dimensions aligned; a size 1
/// stretches), as torch.broadcast_shapes. Throws graft::error when incompatible.
[[nodiscard]] GRAFT_INLINE int_list broadcast_shapes(const int_list& a, const int_list& b);

namespace detail {
/// broadcast_shapes without the exception, for code that only asks (a per-run check that may
/// fail every run): `out` (which may be `a` or `b`) gets the shape; false when incompatible.
[[nodiscard]] GRAFT_INLINE bool try_broadcast_shapes(const int_list& a, const int_list& b, int_list& out);
}  // namespace detail

}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/core/impl/shape.ipp"
#endif
