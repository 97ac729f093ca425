#pragma once
// Reductions over all elements or chosen dimensions (sum, mean, amax, amin), with keepdim.
#include <algorithm>
#include <cstring>
#include <vector>

#include "graft/core/factories.hpp"
#include "graft/core/tensor.hpp"
#include "graft/kernels/dispatch.hpp"
#include "graft/ops/elementwise.hpp"

namespace graft {
namespace detail {

/// Which dimensions a reduction removes: an empty list means all of them.
[[nodiscard]] GRAFT_INLINE std::vector<bool> reduced_mask(const char* op, const Tensor& t, const int_list& dims);

/// Lays `t` out as [kept..., reduced...] rows: returns a contiguous tensor of
/// shape [outer, inner] plus the output sizes.
struct reduction_layout {
    Tensor rows;
    int_list out_sizes;
    std::int64_t outer = 1, inner = 1;
};

[[nodiscard]] GRAFT_INLINE reduction_layout layout_for_reduction(const char* op, const Tensor& t, const int_list& dims,
                                                                 bool keepdim);

template <class T, class Acc>
[[nodiscard]] Acc reduce_row_scalar(kernels::reduce_op op, const T* p, std::int64_t n) {
    Acc acc = op == kernels::reduce_op::sum ? Acc{0} : static_cast<Acc>(p[0]);
    for (std::int64_t i = 0; i < n; ++i) {
        const auto v = static_cast<Acc>(p[i]);
        if (op == kernels::reduce_op::sum) acc = static_cast<Acc>(static_cast<std::uint64_t>(acc) + static_cast<std::uint64_t>(v));
        else if (op == kernels::reduce_op::amax) acc = v > acc ? v : acc;
        else acc = v < acc ? v : acc;
    }
    return acc;
}

/// When `t` is contiguous and the reduced dims form one run with at least 16
/// kept elements after them, each [reduced, inner] block is reduced by adding
/// whole rows with the SIMD kernels instead of transposing first. Sums use a
/// two-level cascade (blocks of 256 rows) to keep float32 error small.
template <class T>
[[nodiscard]] bool try_column_reduce(kernels::reduce_op op, const Tensor& t, const std::vector<bool>& mask,
                                     Tensor& out) {
    if (!t.is_contiguous() || t.numel() == 0) return false;
    std::size_t first = mask.size(), last = 0;
    for (std::size_t i = 0; i < mask.size(); ++i)
        if (mask[i]) {
            first = std::min(first, i);
            last = i;
        }
    if (first == mask.size()) return false;
    for (std::size_t i = first; i <= last; ++i)
        if (!mask[i]) return false;
    std::int64_t outer = 1, rows = 1, inner = 1;
    for (std::size_t i = 0; i < mask.size(); ++i) {
        if (i < first) outer *= t.sizes()[i];
        else if (i <= last) rows *= t.sizes()[i];
        else inner *= t.sizes()[i];
    }
    if (inner < 16 || rows < 2) return false;
    const auto n = static_cast<std::size_t>(inner);
    const kernels::binary_op combine = op == kernels::reduce_op::sum    ? kernels::binary_op::add
                                       : op == kernels::reduce_op::amax ? kernels::binary_op::maximum
                                                                        : kernels::binary_op::minimum;
    const T* in = t.data_ptr<T>();
    T* o = out.data_ptr<T>();
    constexpr auto block = static_cast<std::int64_t>(kernels::column_sum_block_rows);
    Tensor partial_storage = op == kernels::reduce_op::sum ? empty({inner}, t.type()) : Tensor{};
    for (std::int64_t a = 0; a < outer; ++a) {
        const T* base = in + a * rows * inner;
        T* dst = o + a * inner;
        std::memcpy(dst, base, n * sizeof(T));
        if (op != kernels::reduce_op::sum) {
            for (std::int64_t r = 1; r < rows; ++r) kernels::binary(combine, dst, 1, base + r * inner, 1, dst, n);
            continue;
        }
        T* partial = partial_storage.data_ptr<T>();
        for (std::int64_t r0 = 1; r0 < rows; r0 += block) {
            const std::int64_t r1 = std::min(rows, r0 + block);
            std::memcpy(partial, base + r0 * inner, n * sizeof(T));
            for (std::int64_t r = r0 + 1; r < r1; ++r) kernels::binary(combine, partial, 1, base + r * inner, 1, partial, n);
            kernels::binary(combine, dst, 1, partial, 1, dst, n);
        }
    }
    return true;
}

GRAFT_INLINE Tensor reduce(const char* op_name, kernels::reduce_op op, const Tensor& t, const int_list& dims,
                           bool keepdim);

}  // namespace detail

namespace ops {

/// Sum of all elements (a 0-dim tensor); int64 for integer and bool inputs.
[[nodiscard]] GRAFT_INLINE Tensor sum(const Tensor& t);
/// Sum over `dims` (all when empty), keeping them as size 1 when keepdim.
[[nodiscard]] GRAFT_INLINE Tensor sum(const Tensor& t, const int_list& dims, bool keepdim = false);
/// Mean over `dims` (all when empty); floating-point inputs only. Empty reductions give NaN.
[[nodiscard]] GRAFT_INLINE Tensor mean(const Tensor& t, const int_list& dims = {}, bool keepdim = false);
/// Maximum over `dims` (all when empty); NaN propagates. Throws on empty reductions.
[[nodiscard]] GRAFT_INLINE Tensor amax(const Tensor& t, const int_list& dims = {}, bool keepdim = false);
/// Minimum over `dims` (all when empty); NaN propagates. Throws on empty reductions.
[[nodiscard]] GRAFT_INLINE Tensor amin(const Tensor& t, const int_list& dims = {}, bool keepdim = false);
/// amax / amin over every element for torch.max(t) / torch.min(t): the same value, recorded for
/// graph capture as amax / amin with nan_shares (their gradient differs from amax's at NaN).
[[nodiscard]] GRAFT_INLINE Tensor max_all(const Tensor& t);
[[nodiscard]] GRAFT_INLINE Tensor min_all(const Tensor& t);

}  // namespace ops
}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/ops/impl/reduce.ipp"
#endif
