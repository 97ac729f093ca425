#pragma once
// Definitions for graft/ops/index_reduce.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/ops/index_reduce.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace graft {

namespace detail {

// ---------------------------------------------------------------- argmax, argmin

[[nodiscard]] GRAFT_INLINE Tensor arg_extremum(const char* op, const Tensor& t, std::optional<std::int64_t> dim,
                                               bool keepdim, bool want_max) {
    check(t.defined(), op, ": got an undefined tensor");
    check(t.type() != dtype::bool_, op, ": not implemented for 'Bool'");
    if (is_storage_dtype(t.type()))  // widening keeps every order and tie
        return arg_extremum(op, raw::to(t, compute_dtype(t.type())), dim, keepdim, want_max);
    int_list dims;
    if (dim) {
        const std::int64_t d = wrap_dim(op, *dim, t.dim());
        if (t.dim() > 0)
            check(t.sizes()[static_cast<std::size_t>(d)] > 0, op, ": Expected reduction dim ", d,
                  " to have non-zero size (input sizes ", t.sizes(), ")");
        dims.push_back(d);
    } else {
        check(t.numel() > 0, op, ": Expected reduction dim to be specified for input.numel() == 0 (input sizes ",
              t.sizes(), ")");
    }
    const reduction_layout r = layout_for_reduction(op, t, dims, keepdim);
    Tensor out = empty(r.out_sizes, dtype::int64);
    std::int64_t* o = out.data_ptr<std::int64_t>();
    visit_dtype(t.type(), [&](auto z) {
        using T = decltype(z);
        if constexpr (!std::is_same_v<T, bool>) {
            const T* in = r.rows.template data_ptr<T>();
            for (std::int64_t k = 0; k < r.outer; ++k) {
                const T* row = in + k * r.inner;
                std::int64_t best = 0;
                T bv = row[0];
                for (std::int64_t i = 1; i < r.inner; ++i) {
                    if constexpr (std::is_floating_point_v<T>) {
                        if (std::isnan(bv)) break;  // the first NaN wins
                        if (std::isnan(row[i])) {
                            best = i;
                            bv = row[i];
                            continue;
                        }
                    }
                    if (want_max ? row[i] > bv : row[i] < bv) {  // strict: the first of ties stays
                        best = i;
                        bv = row[i];
                    }
                }
                o[k] = best;
            }
        }
    });
    return out;
}

// ---------------------------------------------------------------- statistics

[[nodiscard]] GRAFT_INLINE Tensor variance(const char* op, const Tensor& t, const int_list& dims, double correction,
                                           bool keepdim) {
    check(t.defined(), op, ": got an undefined tensor");
    check(is_floating_point(t.type()), op, ": std and var only support floating point dtypes, got ", t.type());
    check(std::isfinite(correction), op, ": the correction must be a finite number, got ", correction);
    if (is_storage_dtype(t.type()))  // float32 throughout, rounded once
        return raw::to(variance(op, raw::to(t, dtype::float32), dims, correction, keepdim), t.type());
    (void)reduced_mask(op, t, dims);  // dims checked under this op's name
    const Tensor centered = ops::sub(t, ops::mean(t, dims, true));
    const Tensor squares = ops::sum(ops::mul(centered, centered), dims, keepdim);
    const std::int64_t n = squares.numel() == 0 ? 0 : t.numel() / squares.numel();
    const double dof = std::max(0.0, static_cast<double>(n) - correction);
    return ops::div(squares, dof);
}

// ---------------------------------------------------------------- index ops

GRAFT_INLINE void check_index_tensor(const char* op, const Tensor& index) {
    check(index.defined(), op, ": got an undefined index tensor");
    check(index.type() == dtype::int64, op, ": expected an int64 index tensor, got ", index.type());
}

/// index_select's and embedding's index: int64, or int32 (widened), as PyTorch accepts both.
[[nodiscard]] GRAFT_INLINE Tensor int64_index(const char* op, const Tensor& index) {
    check(index.defined(), op, ": got an undefined index tensor");
    check(index.type() == dtype::int64 || index.type() == dtype::int32, op,
          ": expected an int64 or int32 index tensor, got ", index.type());
    return index.type() == dtype::int32 ? raw::to(index, dtype::int64) : index;
}

/// sizes with 0-dim read as [1] (PyTorch compares ranks of gather/scatter this way).
[[nodiscard]] inline int_list sizes_at_least_1d(const Tensor& t) {
    return t.dim() == 0 ? int_list{1} : t.sizes();
}

/// Row-major strides of `sizes`.
[[nodiscard]] inline std::vector<std::int64_t> row_major_strides(const int_list& sizes) {
    std::vector<std::int64_t> st(sizes.size(), 1);
    for (std::size_t i = sizes.size(); i-- > 1;) st[i - 1] = st[i] * sizes[i];
    return st;
}

/// For every element k (row-major) of an index of sizes `isz`: checks its value v against
/// n (the size along d) and calls f(k, t_offset, other_offset), where t_offset is the
/// element's position with v along d in a contiguous tensor of strides tst, and
/// other_offset its position in a contiguous tensor of strides ost (src for scatter_add).
template <class F>
void for_each_index(const char* op, const int_list& isz, std::size_t d, std::int64_t n, const std::int64_t* idx,
                    const std::vector<std::int64_t>& tst, const std::vector<std::int64_t>& ost, F f) {
    std::int64_t count = 1;
    for (auto s : isz) count *= s;
    if (count == 0) return;
    std::vector<std::int64_t> pos(isz.size(), 0);
    std::int64_t base = 0, other = 0;  // t's offset without dim d, the other tensor's offset
    for (std::int64_t k = 0; k < count; ++k) {
        const std::int64_t v = idx[k];
        check(v >= 0 && v < n, op, ": index ", v, " is out of bounds for dimension ", d, " with size ", n);
        f(k, base + v * tst[d], other);
        for (std::size_t r = isz.size(); r-- > 0;) {
            ++pos[r];
            if (r != d) base += tst[r];
            other += ost[r];
            if (pos[r] < isz[r]) break;
            if (r != d) base -= tst[r] * isz[r];
            other -= ost[r] * isz[r];
            pos[r] = 0;
        }
    }
}

/// Checks gather's / scatter_add's geometry: index has t's rank and, outside d, sizes no
/// larger than t's; with src, index's sizes are no larger than src's everywhere.
GRAFT_INLINE void check_scatter_gather(const char* op, const int_list& tsz, std::size_t d, const int_list& isz,
                                       const int_list* ssz) {
    check(isz.size() == tsz.size(), op, ": Index tensor must have the same number of dimensions as input tensor "
          "(index sizes ", isz, ", input sizes ", tsz, ")");
    if (ssz)
        check(ssz->size() == tsz.size(), op, ": Index tensor must have the same number of dimensions as src tensor "
              "(index sizes ", isz, ", src sizes ", *ssz, ")");
    for (std::size_t r = 0; r < isz.size(); ++r) {
        check(r == d || isz[r] <= tsz[r], op, ": Size does not match at dimension ", r, " expected index ", isz,
              " to be smaller than self ", tsz, " apart from dimension ", d);
        if (ssz)
            check(isz[r] <= (*ssz)[r], op, ": Size does not match at dimension ", r, " expected index ", isz,
                  " to be smaller than src ", *ssz);
    }
}

/// out (contiguous, sizes osz) += src at index along d; the indices are checked as they are read.
GRAFT_INLINE void scatter_add_into(const char* op, Tensor& out, const int_list& osz, std::size_t d,
                                   const Tensor& index, const int_list& isz, const Tensor& src, const int_list& ssz) {
    const Tensor idx = raw::contiguous(index);
    const Tensor s = raw::contiguous(src);
    const auto ost = row_major_strides(osz), sst = row_major_strides(ssz);
    visit_dtype(out.type(), [&](auto z) {
        using T = decltype(z);
        if constexpr (!std::is_same_v<T, bool>) {
            T* o = out.data_ptr<T>();
            const T* v = s.data_ptr<T>();
            for_each_index(op, isz, d, osz[d], idx.data_ptr<std::int64_t>(), ost, sst,
                           [&](std::int64_t, std::int64_t at, std::int64_t from) {
                               if constexpr (std::is_integral_v<T>)  // int64 wraps, as PyTorch's
                                   o[at] = static_cast<T>(static_cast<std::uint64_t>(o[at]) +
                                                          static_cast<std::uint64_t>(v[from]));
                               else o[at] += v[from];
                           });
        }
    });
}

/// [outer, n, inner] for dimension d of sizes.
struct slab {
    std::int64_t outer = 1, inner = 1;
};
[[nodiscard]] inline slab slab_of(const int_list& sizes, std::size_t d) {
    slab s;
    for (std::size_t r = 0; r < sizes.size(); ++r) {
        if (r < d) s.outer *= sizes[r];
        else if (r > d) s.inner *= sizes[r];
    }
    return s;
}

/// The positions of index_select's index, checked against n.
[[nodiscard]] GRAFT_INLINE std::vector<std::int64_t> select_positions(const char* op, const Tensor& index,
                                                                      std::size_t d, std::int64_t n) {
    auto v = index.to_vector<std::int64_t>();
    for (auto i : v) check(i >= 0 && i < n, op, ": index ", i, " is out of range for dimension ", d, " with size ", n);
    return v;
}

GRAFT_INLINE void check_index_select_index(const char* op, const Tensor& index) {
    check_index_tensor(op, index);
    check(index.dim() <= 1, op, ": Index is supposed to be a vector, got sizes ", index.sizes());
}

}  // namespace detail

namespace ops {

GRAFT_INLINE Tensor argmax(const Tensor& t, std::optional<std::int64_t> dim, bool keepdim) {
    const graft::detail::observed_op obs;
    Tensor out = graft::detail::arg_extremum("argmax", t, dim, keepdim, true);
    if (dim) return obs.done(out, "argmax", {t}, {{"dim", *dim}, {"keepdim", keepdim}});
    return obs.done(out, "argmax", {t}, {{"keepdim", keepdim}});
}

GRAFT_INLINE Tensor argmin(const Tensor& t, std::optional<std::int64_t> dim, bool keepdim) {
    const graft::detail::observed_op obs;
    Tensor out = graft::detail::arg_extremum("argmin", t, dim, keepdim, false);
    if (dim) return obs.done(out, "argmin", {t}, {{"dim", *dim}, {"keepdim", keepdim}});
    return obs.done(out, "argmin", {t}, {{"keepdim", keepdim}});
}

GRAFT_INLINE Tensor logsumexp(const Tensor& t, const int_list& dims, bool keepdim) {
    const graft::detail::observed_op obs;
    graft::detail::check(t.defined(), "logsumexp: got an undefined tensor");
    if (is_storage_dtype(t.type()) && is_floating_point(t.type()))  // float32 throughout, rounded once
        return obs.done(graft::detail::raw::to(logsumexp(graft::detail::raw::to(t, dtype::float32), dims, keepdim),
                                               t.type()),
                        "logsumexp", {t}, {{"dims", graft::detail::to_vector(dims)}, {"keepdim", keepdim}});
    const Tensor x = is_floating_point(t.type()) ? t : graft::detail::raw::to(t, default_float_dtype);
    (void)graft::detail::reduced_mask("logsumexp", x, dims);  // checks the dims
    Tensor out;
    if (x.numel() == 0) {
        out = log(sum(exp(x), dims, keepdim));  // log(0) = -inf over empty reductions
    } else {
        // The maximum shifted out (an infinite maximum is not: x - inf would be NaN).
        Tensor m = amax(x, dims, true);
        m = where_unobserved(eq(abs(m), std::numeric_limits<double>::infinity()),
                             graft::detail::as_tensor(0.0, x.type()), m);
        const Tensor s = sum(exp(sub(x, m)), dims, keepdim);
        out = add(log(s), graft::detail::raw::reshape(m, s.sizes()));
    }
    return obs.done(out, "logsumexp", {t}, {{"dims", graft::detail::to_vector(dims)}, {"keepdim", keepdim}});
}

GRAFT_INLINE Tensor var(const Tensor& t, const int_list& dims, double correction, bool keepdim) {
    const graft::detail::observed_op obs;
    return obs.done(graft::detail::variance("var", t, dims, correction, keepdim), "var", {t},
                    {{"dims", graft::detail::to_vector(dims)}, {"correction", correction}, {"keepdim", keepdim}});
}

GRAFT_INLINE Tensor std(const Tensor& t, const int_list& dims, double correction, bool keepdim) {
    const graft::detail::observed_op obs;
    return obs.done(sqrt(graft::detail::variance("std", t, dims, correction, keepdim)), "std", {t},
                    {{"dims", graft::detail::to_vector(dims)}, {"correction", correction}, {"keepdim", keepdim}});
}

GRAFT_INLINE Tensor gather(const Tensor& t, std::int64_t dim, const Tensor& index) {
    const graft::detail::observed_op obs;
    graft::detail::check(t.defined(), "gather: got an undefined tensor");
    graft::detail::check_index_tensor("gather", index);
    const auto d = static_cast<std::size_t>(graft::detail::wrap_dim("gather", dim, t.dim()));
    const int_list tsz = graft::detail::sizes_at_least_1d(t), isz = graft::detail::sizes_at_least_1d(index);
    graft::detail::check_scatter_gather("gather", tsz, d, isz, nullptr);
    Tensor out = empty(index.sizes(), t.type());
    const Tensor src = graft::detail::raw::contiguous(t);
    const Tensor idx = graft::detail::raw::contiguous(index);
    const auto tst = graft::detail::row_major_strides(tsz), ost = graft::detail::row_major_strides(isz);
    graft::detail::visit_storage_dtype(t.type(), [&](auto z) {  // copies elements only
        using T = decltype(z);
        const T* p = src.data_ptr<T>();
        T* o = out.data_ptr<T>();
        graft::detail::for_each_index("gather", isz, d, tsz[d], idx.data_ptr<std::int64_t>(), tst, ost,
                                      [&](std::int64_t k, std::int64_t at, std::int64_t) { o[k] = p[at]; });
    });
    return obs.done(out, "gather", {t, index}, {{"dim", dim}});
}

GRAFT_INLINE Tensor scatter_add(const Tensor& t, std::int64_t dim, const Tensor& index, const Tensor& src) {
    const graft::detail::observed_op obs;
    graft::detail::check(t.defined() && src.defined(), "scatter_add: got an undefined tensor");
    graft::detail::check_index_tensor("scatter_add", index);
    graft::detail::check(t.type() != dtype::bool_, "scatter_add: not implemented for 'Bool'");
    graft::detail::check(src.type() == t.type(), "scatter_add: Expected self.dtype to be equal to src.dtype, got ",
                         t.type(), " and ", src.type());
    const auto d = static_cast<std::size_t>(graft::detail::wrap_dim("scatter_add", dim, t.dim()));
    const int_list tsz = graft::detail::sizes_at_least_1d(t), isz = graft::detail::sizes_at_least_1d(index),
                   ssz = graft::detail::sizes_at_least_1d(src);
    graft::detail::check_scatter_gather("scatter_add", tsz, d, isz, &ssz);
    if (is_storage_dtype(t.type())) {  // sums in the compute dtype, rounded once per element
        const dtype c = compute_dtype(t.type());
        return obs.done(graft::detail::raw::to(scatter_add(graft::detail::raw::to(t, c), dim, index,
                                                           graft::detail::raw::to(src, c)),
                                               t.type()),
                        "scatter_add", {t, index, src}, {{"dim", dim}});
    }
    Tensor out = graft::detail::raw::clone(t);
    graft::detail::scatter_add_into("scatter_add", out, tsz, d, index, isz, src, ssz);
    return obs.done(out, "scatter_add", {t, index, src}, {{"dim", dim}});
}

GRAFT_INLINE Tensor index_select(const Tensor& t, std::int64_t dim, const Tensor& index_in) {
    const graft::detail::observed_op obs;
    graft::detail::check(t.defined(), "index_select: got an undefined tensor");
    const Tensor index = graft::detail::int64_index("index_select", index_in);
    graft::detail::check_index_select_index("index_select", index);
    const auto d = static_cast<std::size_t>(graft::detail::wrap_dim("index_select", dim, t.dim()));
    if (t.dim() == 0) {
        graft::detail::check(index.numel() == 1, "index_select: Index to scalar can have only 1 value, got ",
                             index.numel(), " value(s)");
        (void)graft::detail::select_positions("index_select", index, d, 1);
        return obs.done(graft::detail::raw::clone(t), "index_select", {t, index}, {{"dim", dim}});
    }
    const auto pos = graft::detail::select_positions("index_select", index, d, t.sizes()[d]);
    int_list sizes = t.sizes();
    sizes[d] = static_cast<std::int64_t>(pos.size());
    Tensor out = empty(sizes, t.type());
    const Tensor src = graft::detail::raw::contiguous(t);
    const graft::detail::slab s = graft::detail::slab_of(t.sizes(), d);
    const std::size_t row = static_cast<std::size_t>(s.inner) * element_size(t.type());
    const auto* in = static_cast<const char*>(src.raw_data());
    auto* o = static_cast<char*>(out.raw_data());
    const std::int64_t n = t.sizes()[d], m = static_cast<std::int64_t>(pos.size());
    if (row > 0)
        for (std::int64_t a = 0; a < s.outer; ++a)
            for (std::int64_t k = 0; k < m; ++k)
                std::memcpy(o + static_cast<std::size_t>(a * m + k) * row,
                            in + static_cast<std::size_t>(a * n + pos[static_cast<std::size_t>(k)]) * row, row);
    return obs.done(out, "index_select", {t, index_in}, {{"dim", dim}});
}

GRAFT_INLINE Tensor gather_backward(const Tensor& g, const int_list& sizes, std::int64_t dim, const Tensor& index) {
    const graft::detail::observed_op obs;
    graft::detail::check(g.defined(), "gather_backward: the gradient is undefined");
    graft::detail::check_index_tensor("gather_backward", index);
    if (is_storage_dtype(g.type()))  // sums in the compute dtype, rounded once per element
        return obs.done(graft::detail::raw::to(gather_backward(graft::detail::raw::to(g, compute_dtype(g.type())),
                                                               sizes, dim, index),
                                               g.type()),
                        "gather_backward", {g, index}, {{"sizes", graft::detail::to_vector(sizes)}, {"dim", dim}});
    graft::detail::check(g.type() != dtype::bool_, "gather_backward: not implemented for 'Bool'");
    graft::detail::check(g.sizes() == index.sizes(), "gather_backward: the gradient's sizes ", g.sizes(),
                         " are not the index's ", index.sizes());
    Tensor out = zeros(sizes, g.type());
    const auto d = static_cast<std::size_t>(graft::detail::wrap_dim("gather_backward", dim, out.dim()));
    const int_list osz = graft::detail::sizes_at_least_1d(out), isz = graft::detail::sizes_at_least_1d(index);
    graft::detail::check_scatter_gather("gather_backward", osz, d, isz, &isz);
    graft::detail::scatter_add_into("gather_backward", out, osz, d, index, isz, g, isz);
    return obs.done(out, "gather_backward", {g, index}, {{"sizes", graft::detail::to_vector(sizes)}, {"dim", dim}});
}

GRAFT_INLINE Tensor index_select_backward(const Tensor& g, const int_list& sizes, std::int64_t dim,
                                          const Tensor& index_in) {
    const graft::detail::observed_op obs;
    graft::detail::check(g.defined(), "index_select_backward: the gradient is undefined");
    const Tensor index = graft::detail::int64_index("index_select_backward", index_in);
    if (is_storage_dtype(g.type()))  // sums in the compute dtype, rounded once per element
        return obs.done(graft::detail::raw::to(index_select_backward(graft::detail::raw::to(g, compute_dtype(g.type())),
                                                                     sizes, dim, index),
                                               g.type()),
                        "index_select_backward", {g, index_in},
                        {{"sizes", graft::detail::to_vector(sizes)}, {"dim", dim}});
    graft::detail::check_index_select_index("index_select_backward", index);
    Tensor out = zeros(sizes, g.type());
    const auto d = static_cast<std::size_t>(graft::detail::wrap_dim("index_select_backward", dim, out.dim()));
    const int_list osz = graft::detail::sizes_at_least_1d(out);
    int_list want = osz;
    want[d] = index.numel();
    const int_list gsz = graft::detail::sizes_at_least_1d(g);
    graft::detail::check(gsz == want && g.type() != dtype::bool_, "index_select_backward: the gradient's sizes ",
                         g.sizes(), " are not those of index_select(", dim, ") of sizes ", sizes, " with ",
                         index.numel(), " indices");
    const auto pos = graft::detail::select_positions("index_select_backward", index, d, osz[d]);
    const Tensor src = graft::detail::raw::contiguous(g);
    const graft::detail::slab s = graft::detail::slab_of(osz, d);
    const std::int64_t n = osz[d], m = static_cast<std::int64_t>(pos.size());
    graft::detail::visit_dtype(g.type(), [&](auto z) {
        using T = decltype(z);
        if constexpr (!std::is_same_v<T, bool>) {
            const T* in = src.data_ptr<T>();
            T* o = out.data_ptr<T>();
            for (std::int64_t a = 0; a < s.outer; ++a)
                for (std::int64_t k = 0; k < m; ++k) {
                    T* dst = o + (a * n + pos[static_cast<std::size_t>(k)]) * s.inner;
                    const T* from = in + (a * m + k) * s.inner;
                    for (std::int64_t i = 0; i < s.inner; ++i) {
                        if constexpr (std::is_integral_v<T>)
                            dst[i] = static_cast<T>(static_cast<std::uint64_t>(dst[i]) +
                                                    static_cast<std::uint64_t>(from[i]));
                        else dst[i] += from[i];
                    }
                }
        }
    });
    return obs.done(out, "index_select_backward", {g, index_in},
                    {{"sizes", graft::detail::to_vector(sizes)}, {"dim", dim}});
}

}  // namespace ops
}  // namespace graft
