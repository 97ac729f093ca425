#pragma once
// The strided n-dimensional loop every elementwise operation runs on: it drops
// size-1 dimensions, merges dimensions that are contiguous for every operand,
// and calls an inner function once per innermost row.
#include <array>
#include <cstddef>
#include <cstdint>

#include "graft/core/shape.hpp"

namespace graft::detail {

/// Operand data pointers and strides are in bytes; `inner(ptrs, strides, n)`
/// handles one row of `n` elements.
template <std::size_t N, class Inner>
void for_each_row(const int_list& sizes, const std::array<const int_list*, N>& strides_bytes,
                  std::array<char*, N> data, Inner&& inner) {
    constexpr std::size_t max_rank = 64;
    std::array<std::int64_t, max_rank> size{};
    std::array<std::array<std::int64_t, N>, max_rank> stride{};
    std::size_t rank = 0;
    for (std::size_t d = 0; d < sizes.size(); ++d) {
        if (sizes[d] == 0) return;
        if (sizes[d] == 1) continue;
        // Merge into the previous (outer) kept dimension when contiguous for all operands.
        if (rank > 0) {
            bool merge = true;
            for (std::size_t k = 0; k < N; ++k)
                merge = merge && stride[rank - 1][k] == (*strides_bytes[k])[d] * sizes[d];
            if (merge) {
                size[rank - 1] *= sizes[d];
                for (std::size_t k = 0; k < N; ++k) stride[rank - 1][k] = (*strides_bytes[k])[d];
                continue;
            }
        }
        check(rank < max_rank, "graft: tensors of rank above 64 are not supported");
        size[rank] = sizes[d];
        for (std::size_t k = 0; k < N; ++k) stride[rank][k] = (*strides_bytes[k])[d];
        ++rank;
    }
    if (rank == 0) {
        std::array<std::int64_t, N> zero{};
        inner(data, zero, std::int64_t{1});
        return;
    }
    const std::size_t last = rank - 1;
    std::array<std::int64_t, max_rank> index{};
    for (;;) {
        inner(data, stride[last], size[last]);
        std::size_t d = last;
        for (;;) {
            if (d == 0) return;
            --d;
            ++index[d];
            for (std::size_t k = 0; k < N; ++k) data[k] += stride[d][k];
            if (index[d] < size[d]) break;
            for (std::size_t k = 0; k < N; ++k) data[k] -= stride[d][k] * size[d];
            index[d] = 0;
        }
    }
}

}  // namespace graft::detail
