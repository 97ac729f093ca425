#pragma once
// Definitions for graft/ops/reduce.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/ops/reduce.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace graft {
namespace detail {

GRAFT_INLINE std::vector<bool> reduced_mask(const char* op, const Tensor& t, const int_list& dims) {
    std::vector<bool> mask(static_cast<std::size_t>(t.dim()), dims.empty());
    for (auto d : dims) {
        const auto k = static_cast<std::size_t>(wrap_dim(op, d, t.dim()));
        if (t.dim() == 0) continue;
        check(!mask[k] || dims.empty(), op, ": dim ", d, " appears multiple times in the list of dims");
        mask[k] = true;
    }
    return mask;
}

GRAFT_INLINE reduction_layout layout_for_reduction(const char* op, const Tensor& t, const int_list& dims,
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

GRAFT_INLINE Tensor reduce(const char* op_name, kernels::reduce_op op, const Tensor& t, const int_list& dims,
                           bool keepdim) {
    check(t.defined(), op_name, ": got an undefined tensor");
    if (is_storage_dtype(t.type())) {
        // Accumulated in the compute dtype, rounded once; an int32 sum is int64, as PyTorch's.
        Tensor r = reduce(op_name, op, raw::to(t, compute_dtype(t.type())), dims, keepdim);
        return op == kernels::reduce_op::sum && t.type() == dtype::int32 ? r : narrow_result(r, t.type());
    }
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

GRAFT_INLINE Tensor sum(const Tensor& t) {
    const detail::observed_op obs;
    return obs.done(detail::reduce("sum", kernels::reduce_op::sum, t, {}, false), "sum", {t});
}

GRAFT_INLINE Tensor sum(const Tensor& t, const int_list& dims, bool keepdim) {
    const detail::observed_op obs;
    return obs.done(detail::reduce("sum", kernels::reduce_op::sum, t, dims, keepdim), "sum", {t},
                    {{"dims", detail::to_vector(dims)}, {"keepdim", keepdim}});
}

GRAFT_INLINE Tensor mean(const Tensor& t, const int_list& dims, bool keepdim) {
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

GRAFT_INLINE Tensor amax(const Tensor& t, const int_list& dims, bool keepdim) {
    const detail::observed_op obs;
    return obs.done(detail::reduce("amax", kernels::reduce_op::amax, t, dims, keepdim), "amax", {t},
                    {{"dims", detail::to_vector(dims)}, {"keepdim", keepdim}});
}

GRAFT_INLINE Tensor amin(const Tensor& t, const int_list& dims, bool keepdim) {
    const detail::observed_op obs;
    return obs.done(detail::reduce("amin", kernels::reduce_op::amin, t, dims, keepdim), "amin", {t},
                    {{"dims", detail::to_vector(dims)}, {"keepdim", keepdim}});
}

GRAFT_INLINE Tensor max_all(const Tensor& t) {
    const detail::observed_op obs;
    return obs.done(detail::reduce("max", kernels::reduce_op::amax, t, {}, false), "amax", {t},
                    {{"dims", std::vector<std::int64_t>{}}, {"keepdim", false}, {"nan_shares", true}});
}

GRAFT_INLINE Tensor min_all(const Tensor& t) {
    const detail::observed_op obs;
    return obs.done(detail::reduce("min", kernels::reduce_op::amin, t, {}, false), "amin", {t},
                    {{"dims", std::vector<std::int64_t>{}}, {"keepdim", false}, {"nan_shares", true}});
}

}  // namespace ops
}  // namespace graft
