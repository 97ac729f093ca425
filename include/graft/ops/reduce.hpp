#pragma once
// Reductions over all elements or chosen dimensions (sum, mean, amax, amin), with keepdim.
#include <algorithm>
#include <cstring>
#include <cmath>
#include <limits>
#include <vector>

#include "graft/core/factories.hpp"
#include "graft/core/tensor.hpp"
#include "graft/kernels/dispatch.hpp"
#include "graft/ops/elementwise.hpp"

namespace graft {
namespace detail {

/// Which dimensions a reduction removes: an empty list means all of them.
[[nodiscard]] inline std::vector<bool> reduced_mask(const char* op, const Tensor& t, const int_list& dims) {
    std::vector<bool> mask(static_cast<std::size_t>(t.dim()), dims.empty());
    for (auto d : dims) {
        const auto k = static_cast<std::size_t>(wrap_dim(op, d, t.dim()));
        if (t.dim() == 0) continue;
        check(!mask[k] || dims.empty(), op, ": dim ", d, " appears multiple times in the list of dims");
        mask[k] = true;
    }
    return mask;
}

/// Lays `t` out as [kept..., reduced...] rows: returns a contiguous tensor of
/// shape [outer, inner] plus the output sizes.
struct reduction_layout {
    Tensor rows;
    int_list out_sizes;
    std::int64_t outer = 1, inner = 1;
};

[[nodiscard]] inline reduction_layout layout_for_reduction(const char* op, const Tensor& t, const int_list& dims,
                                                           bool keepdim) {
    const auto mask = reduced_mask(op, t, dims);
    reduction_layout r;
    int_list perm;
    for (std::size_t i = 0; i < mask.size(); ++i)
        if (!mask[i]) {
            perm.push_back(static_cast<std::int64_t>(i));
            r.outer *= t.sizes()[i];
        }
    for (std::size_t i = 0; i < mask.size(); ++i)
        if (mask[i]) {
            perm.push_back(static_cast<std::int64_t>(i));
            r.inner *= t.sizes()[i];
        }
    for (std::size_t i = 0; i < mask.size(); ++i) {
        if (!mask[i]) r.out_sizes.push_back(t.sizes()[i]);
        else if (keepdim) r.out_sizes.push_back(1);
    }
    r.rows = raw::contiguous(raw::permute(t, perm));
    return r;
}

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
    constexpr std::int64_t block = 256;
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

inline Tensor reduce(const char* op_name, kernels::reduce_op op, const Tensor& t, const int_list& dims, bool keepdim) {
    check(t.defined(), op_name, ": got an undefined tensor");
    if (dims.empty() && !keepdim && is_floating_point(t.type()) && t.is_contiguous() &&
        (t.numel() > 0 || op == kernels::reduce_op::sum)) {
        Tensor out = empty({}, t.type());
        const auto n = static_cast<std::size_t>(t.numel());
        if (t.type() == dtype::float32) *out.data_ptr<float>() = kernels::reduce(op, t.data_ptr<float>(), n);
        else *out.data_ptr<double>() = kernels::reduce(op, t.data_ptr<double>(), n);
        return out;
    }
    if (is_floating_point(t.type()) && t.dim() > 0) {
        const auto mask = reduced_mask(op_name, t, dims);
        int_list out_sizes;
        for (std::size_t i = 0; i < mask.size(); ++i) {
            if (!mask[i]) out_sizes.push_back(t.sizes()[i]);
            else if (keepdim) out_sizes.push_back(1);
        }
        Tensor out = empty(out_sizes, t.type());
        const bool done = visit_dtype(t.type(), [&](auto z) {
            using T = decltype(z);
            if constexpr (std::is_floating_point_v<T>) return try_column_reduce<T>(op, t, mask, out);
            else return false;
        });
        if (done) return out;
    }
    reduction_layout r = layout_for_reduction(op_name, t, dims, keepdim);
    if (op != kernels::reduce_op::sum)
        check(r.inner > 0 || r.outer == 0, op_name, ": expected reduction dims to have non-zero size, but the input "
              "has shape ", t.sizes(),
              " (the operation does not have an identity)");
    const dtype out_type = (op == kernels::reduce_op::sum && !is_floating_point(t.type())) ? dtype::int64 : t.type();
    Tensor out = empty(r.out_sizes, out_type);
    visit_dtype(t.type(), [&](auto z) {
        using T = decltype(z);
        const T* in = r.rows.template data_ptr<T>();
        for (std::int64_t o = 0; o < r.outer; ++o) {
            const T* row = in + o * r.inner;
            if constexpr (std::is_floating_point_v<T>) {
                out.data_ptr<T>()[o] = kernels::reduce(op, row, static_cast<std::size_t>(r.inner));
            } else if constexpr (std::is_same_v<T, bool>) {
                if (op == kernels::reduce_op::sum) {
                    std::int64_t c = 0;
                    for (std::int64_t i = 0; i < r.inner; ++i) c += row[i] ? 1 : 0;
                    out.data_ptr<std::int64_t>()[o] = c;
                } else {
                    out.data_ptr<bool>()[o] = reduce_row_scalar<bool, std::int64_t>(op, row, r.inner) != 0;
                }
            } else {
                out.data_ptr<std::int64_t>()[o] = reduce_row_scalar<T, std::int64_t>(op, row, r.inner);
            }
        }
    });
    return out;
}

}  // namespace detail

namespace ops {

/// Sum of all elements (a 0-dim tensor); int64 for integer and bool inputs.
[[nodiscard]] inline Tensor sum(const Tensor& t) {
    const detail::observed_op obs;
    return obs.done(detail::reduce("sum", kernels::reduce_op::sum, t, {}, false), "sum", {t});
}
/// Sum over `dims` (all when empty), keeping them as size 1 when keepdim.
[[nodiscard]] inline Tensor sum(const Tensor& t, const int_list& dims, bool keepdim = false) {
    const detail::observed_op obs;
    return obs.done(detail::reduce("sum", kernels::reduce_op::sum, t, dims, keepdim), "sum", {t},
                    {{"dims", detail::to_vector(dims)}, {"keepdim", keepdim}});
}
/// Mean over `dims` (all when empty); floating-point inputs only. Empty reductions give NaN.
[[nodiscard]] inline Tensor mean(const Tensor& t, const int_list& dims = {}, bool keepdim = false) {
    const detail::observed_op obs;
    detail::check(t.defined(), "mean: got an undefined tensor");
    detail::check(is_floating_point(t.type()), "mean(): could not infer output dtype. Input dtype must be either a "
                  "floating point or complex dtype. Got: ", t.type());
    Tensor s = sum(t, dims, keepdim);
    const std::int64_t n = s.numel() == 0 ? 0 : t.numel() / std::max<std::int64_t>(s.numel(), 1);
    const auto count = t.numel() == 0 ? std::int64_t{0} : n;
    return obs.done(detail::run_binary(kernels::binary_op::div, s,
                                       detail::as_tensor(static_cast<double>(count), t.type()), t.type()),
                    "mean", {t}, {{"dims", detail::to_vector(dims)}, {"keepdim", keepdim}});
}
/// Maximum over `dims` (all when empty); NaN propagates. Throws on empty reductions.
[[nodiscard]] inline Tensor amax(const Tensor& t, const int_list& dims = {}, bool keepdim = false) {
    const detail::observed_op obs;
    return obs.done(detail::reduce("amax", kernels::reduce_op::amax, t, dims, keepdim), "amax", {t},
                    {{"dims", detail::to_vector(dims)}, {"keepdim", keepdim}});
}
/// Minimum over `dims` (all when empty); NaN propagates. Throws on empty reductions.
[[nodiscard]] inline Tensor amin(const Tensor& t, const int_list& dims = {}, bool keepdim = false) {
    const detail::observed_op obs;
    return obs.done(detail::reduce("amin", kernels::reduce_op::amin, t, dims, keepdim), "amin", {t},
                    {{"dims", detail::to_vector(dims)}, {"keepdim", keepdim}});
}

}  // namespace ops
}  // namespace graft
