#pragma once
// Definitions for graft/autograd/view_meta.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/autograd/view_meta.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace graft::autograd::detail {

GRAFT_INLINE strided_geometry geometry_of(const Tensor& t) {
    return {t.sizes(), t.strides(), t.storage_offset()};
}

GRAFT_INLINE std::int64_t storage_extent(const strided_geometry& g) {
    std::int64_t hi = 0;
    for (std::size_t i = 0; i < g.sizes.size(); ++i) {
        if (g.sizes[i] == 0) return 0;
        hi += (g.sizes[i] - 1) * g.strides[i];
    }
    return hi + 1;
}

GRAFT_INLINE bool is_non_overlapping(const strided_geometry& g) {
    std::vector<std::pair<std::int64_t, std::int64_t>> dims;  // (stride, size) of dims with size > 1
    for (std::size_t i = 0; i < g.sizes.size(); ++i) {
        if (g.sizes[i] == 0) return true;
        if (g.sizes[i] > 1) dims.emplace_back(g.strides[i], g.sizes[i]);
    }
    std::sort(dims.begin(), dims.end());
    std::int64_t reach = 0;  // max position reached by the dims seen so far
    for (const auto& [stride, size] : dims) {
        if (stride <= reach) return false;
        reach += (size - 1) * stride;
    }
    return true;
}

}  // namespace graft::autograd::detail
