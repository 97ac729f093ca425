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
[[nodiscard]] inline std::string to_string(const int_list& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
}

/// Number of elements of a tensor with these sizes; 1 for a 0-dim tensor.
[[nodiscard]] inline std::int64_t numel_of(const int_list& sizes) noexcept {
    std::int64_t n = 1;
    for (auto s : sizes) n *= s;
    return n;
}

/// Row-major (C-contiguous) strides, in elements.
[[nodiscard]] inline int_list contiguous_strides(const int_list& sizes) {
    int_list strides(sizes.size());
    std::int64_t acc = 1;
    for (std::size_t i = sizes.size(); i-- > 0;) {
        strides[i] = acc;
        acc *= sizes[i] > 1 ? sizes[i] : 1;
    }
    return strides;
}

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
[[nodiscard]] inline std::int64_t wrap_dim(const char* op, std::int64_t dim, std::int64_t rank) {
    const std::int64_t r = rank == 0 ? 1 : rank;
    check(dim >= -r && dim < r, op, ": dimension out of range (expected to be in range of [", -r, ", ",
          r - 1, "], but got ", dim, ")");
    return dim < 0 ? dim + r : dim;
}

/// Checks sizes are non-negative.
inline void check_sizes(const char* op, const int_list& sizes) {
    for (auto s : sizes)
        check(s >= 0, op, ": negative dimension ", s, " in size ", sizes);
}

}  // namespace detail

/// The shape two shapes broadcast to (trailing dimensions aligned; a size 1
/// stretches), as torch.broadcast_shapes. Throws graft::error when incompatible.
[[nodiscard]] inline int_list broadcast_shapes(const int_list& a, const int_list& b) {
    const std::size_t rank = a.size() > b.size() ? a.size() : b.size();
    int_list out(rank);
    for (std::size_t i = 0; i < rank; ++i) {
        const std::int64_t sa = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
        const std::int64_t sb = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
        detail::check(sa == sb || sa == 1 || sb == 1, "broadcast_shapes: shapes ", a, " and ",
                      b, " are not broadcastable (size ", sa, " vs ", sb,
                      " at non-singleton dimension ", i, ")");
        out[i] = sa == 1 ? sb : sa;
    }
    return out;
}

}  // namespace graft
