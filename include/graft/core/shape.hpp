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

}  // namespace detail

/// The shape two shapes broadcast to (trailing dimensions aligned; a size 1
/// stretches), as torch.broadcast_shapes. Throws graft::error when incompatible.
[[nodiscard]] GRAFT_INLINE int_list broadcast_shapes(const int_list& a, const int_list& b);

}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/core/impl/shape.ipp"
#endif
