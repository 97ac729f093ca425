#pragma once
// Definitions for graft/core/shape.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/core/shape.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace graft {

namespace detail {

GRAFT_INLINE std::string to_string(const int_list& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
}

GRAFT_INLINE void assign_contiguous_strides(int_list& strides, const int_list& sizes) {
    const std::size_t rank = sizes.size();
    strides.resize_for_overwrite(rank);
    const std::int64_t* sz = sizes.data();
    std::int64_t* st = strides.data();
    std::int64_t acc = 1;
    for (std::size_t i = rank; i-- > 0;) {
        st[i] = acc;
        acc *= sz[i] > 1 ? sz[i] : 1;
    }
}

GRAFT_INLINE int_list contiguous_strides(const int_list& sizes) {
    int_list strides;
    assign_contiguous_strides(strides, sizes);
    return strides;
}

GRAFT_INLINE std::int64_t wrap_dim(const char* op, std::int64_t dim, std::int64_t rank) {
    const std::int64_t r = rank == 0 ? 1 : rank;
    check(dim >= -r && dim < r, op, ": dimension out of range (expected to be in range of [", -r, ", ",
          r - 1, "], but got ", dim, ")");
    return dim < 0 ? dim + r : dim;
}

GRAFT_INLINE void check_sizes(const char* op, const int_list& sizes) {
    for (auto s : sizes)
        check(s >= 0, op, ": negative dimension ", s, " in size ", sizes);
}

GRAFT_INLINE std::int64_t checked_numel(const char* op, const int_list& sizes) {
    std::int64_t span = 1, numel = 1;
    for (auto s : sizes) {
        if (s < 0) [[unlikely]]
            check_sizes(op, sizes);  // fails with the message naming the negative size
        if (!mul_fits(span, s > 1 ? s : 1, span)) [[unlikely]]
            fail(concat(op, ": sizes ", sizes, " have more elements than an int64 can count"));
        numel = s == 0 ? 0 : numel;
    }
    return numel == 0 ? 0 : span;
}

GRAFT_INLINE std::size_t checked_bytes(const char* op, std::int64_t numel, std::size_t element_size) {
    std::int64_t bytes = 0;
    if (numel < 0 || !mul_fits(numel, static_cast<std::int64_t>(element_size), bytes))
        fail(concat(op, ": ", numel, " elements of ", element_size, " bytes cannot be addressed"));
    return static_cast<std::size_t>(bytes);
}

}  // namespace detail

GRAFT_INLINE bool detail::try_broadcast_shapes(const int_list& a, const int_list& b, int_list& out) {
    const std::size_t rank = a.size() > b.size() ? a.size() : b.size();
    int_list r(rank);
    for (std::size_t i = 0; i < rank; ++i) {
        const std::int64_t sa = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
        const std::int64_t sb = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
        if (!(sa == sb || sa == 1 || sb == 1)) return false;
        r[i] = sa == 1 ? sb : sa;
    }
    out = std::move(r);
    return true;
}

GRAFT_INLINE int_list broadcast_shapes(const int_list& a, const int_list& b) {
    int_list out;
    if (detail::try_broadcast_shapes(a, b, out)) return out;
    const std::size_t rank = a.size() > b.size() ? a.size() : b.size();
    for (std::size_t i = 0;; ++i) {  // the first dimension that does not broadcast, for the message
        const std::int64_t sa = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
        const std::int64_t sb = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
        detail::check(sa == sb || sa == 1 || sb == 1, "broadcast_shapes: shapes ", a, " and ", b,
                      " are not broadcastable (size ", sa, " vs ", sb, " at non-singleton dimension ", i, ")");
    }
}

}  // namespace graft
