#pragma once
// Definitions for graft/ops/advanced_index.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/ops/advanced_index.hpp"

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "graft/core/factories.hpp"
#include "graft/core/shape.hpp"

namespace graft::detail {

/// Where each indexed row starts: rows[b] is the offset, in rows of `inner` elements, of
/// t[i0[b], ..., ik-1[b]] in a contiguous tensor of sizes `sizes`.
struct index_plan {
    int_list index_shape;    // B: the index tensors' broadcast shape
    int_list result_sizes;   // B + sizes[k:]
    std::int64_t inner = 1;  // elements per row: prod(sizes[k:])
    std::vector<std::int64_t> rows;
};

GRAFT_INLINE index_plan make_index_plan(const char* op, const int_list& sizes, std::span<const Tensor> indices) {
    const auto rank = sizes.size();
    check(!indices.empty(), op, ": expected at least one index tensor");
    check(indices.size() <= rank, op, ": too many indices for tensor of dimension ", rank, " (got ",
          indices.size(), ")");
    index_plan p;
    for (std::size_t j = 0; j < indices.size(); ++j) {
        const Tensor& ix = indices[j];
        check(ix.defined(), op, ": index tensor ", j, " is undefined");
        check(ix.type() != dtype::bool_, op, ": boolean mask indices are not implemented; index with int64 "
              "positions instead");
        check(ix.type() == dtype::int64, op, ": tensors used as indices must be int64, got ", ix.type(),
              " for index ", j);
        if (j == 0) {
            p.index_shape = ix.sizes();
            continue;
        }
        try {
            p.index_shape = broadcast_shapes(p.index_shape, ix.sizes());
        } catch (const error&) {
            std::string shapes;
            for (std::size_t i = 0; i < indices.size(); ++i) shapes += to_string(indices[i].sizes()) + " ";
            fail(concat(op, ": shape mismatch: indexing tensors could not be broadcast together with shapes ",
                        shapes));
        }
    }
    const std::size_t k = indices.size();
    p.result_sizes = p.index_shape;
    for (std::size_t r = k; r < rank; ++r) {
        p.result_sizes.push_back(sizes[r]);
        p.inner *= sizes[r];
    }
    (void)checked_numel(op, p.result_sizes);
    std::int64_t n = 1;
    for (auto s : p.index_shape) n *= s;
    p.rows.assign(static_cast<std::size_t>(n), 0);
    std::int64_t row_stride = 1;
    for (std::size_t j = k; j-- > 0;) {
        const Tensor ix = raw::contiguous(raw::expand(indices[j], p.index_shape));
        const std::int64_t* v = ix.data_ptr<std::int64_t>();
        const std::int64_t size = sizes[j];
        for (std::int64_t b = 0; b < n; ++b) {
            std::int64_t i = v[b];
            check(i >= -size && i < size, op, ": index ", i, " is out of bounds for dimension ", j, " with size ",
                  size);
            if (i < 0) i += size;
            p.rows[static_cast<std::size_t>(b)] += i * row_stride;
        }
        row_stride *= size;
    }
    return p;
}

/// Adds (accumulate) or writes the rows of contiguous `src` into contiguous `out` at plan.rows.
GRAFT_INLINE void put_rows(Tensor& out, const Tensor& src, const index_plan& p, bool accumulate) {
    visit_dtype(out.type(), [&](auto z) {
        using T = decltype(z);
        T* o = out.data_ptr<T>();
        const T* s = src.data_ptr<T>();
        const std::int64_t inner = p.inner;
        for (std::size_t b = 0; b < p.rows.size(); ++b) {
            T* dst = o + p.rows[b] * inner;
            const T* from = s + static_cast<std::int64_t>(b) * inner;
            for (std::int64_t e = 0; e < inner; ++e) {
                if (!accumulate) dst[e] = from[e];
                else if constexpr (std::is_same_v<T, bool>) dst[e] = dst[e] || from[e];
                else if constexpr (std::is_integral_v<T>)  // int64 wraps, as PyTorch's
                    dst[e] = static_cast<T>(static_cast<std::uint64_t>(dst[e]) + static_cast<std::uint64_t>(from[e]));
                else dst[e] = static_cast<T>(dst[e] + from[e]);
            }
        }
    });
}

[[nodiscard]] inline std::vector<op_operand> index_operands(std::initializer_list<op_operand> head,
                                                            std::span<const Tensor> indices) {
    std::vector<op_operand> ops(head);
    for (const auto& ix : indices) ops.emplace_back(ix);
    return ops;
}

}  // namespace graft::detail

namespace graft::ops {

GRAFT_INLINE Tensor index(const Tensor& t, std::span<const Tensor> indices) {
    const graft::detail::observed_op obs;
    graft::detail::check(t.defined(), "index: got an undefined tensor");
    const auto p = graft::detail::make_index_plan("index", t.sizes(), indices);
    Tensor out = empty(p.result_sizes, t.type());
    const Tensor src = graft::detail::raw::contiguous(t);
    const std::size_t row = static_cast<std::size_t>(p.inner) * element_size(t.type());
    const auto* in = static_cast<const char*>(src.raw_data());
    auto* o = static_cast<char*>(out.raw_data());
    if (row > 0)
        for (std::size_t b = 0; b < p.rows.size(); ++b)
            std::memcpy(o + b * row, in + static_cast<std::size_t>(p.rows[b]) * row, row);
    const auto operands = graft::detail::index_operands({t}, indices);
    return obs.done_list(out, "index", operands);
}

GRAFT_INLINE Tensor index_put(const Tensor& t, std::span<const Tensor> indices, const Tensor& values, bool accumulate) {
    const graft::detail::observed_op obs;
    graft::detail::check(t.defined() && values.defined(), "index_put: got an undefined tensor");
    graft::detail::check(values.type() == t.type(), "index_put: Index put requires the source and destination "
                         "dtypes match, got ", t.type(), " for the destination and ", values.type(), " for the source");
    const auto p = graft::detail::make_index_plan("index_put", t.sizes(), indices);
    bool fits = true;
    try {
        fits = broadcast_shapes(p.result_sizes, values.sizes()) == p.result_sizes;
    } catch (const error&) {
        fits = false;
    }
    graft::detail::check(fits, "index_put: shape mismatch: value tensor of shape ", values.sizes(),
                         " cannot be broadcast to indexing result of shape ", p.result_sizes);
    Tensor out = graft::detail::raw::clone(t);
    const Tensor src = graft::detail::raw::contiguous(graft::detail::raw::expand(values, p.result_sizes));
    graft::detail::put_rows(out, src, p, accumulate);
    const auto operands = graft::detail::index_operands({t, values}, indices);
    return obs.done_list(out, "index_put", operands, {{"accumulate", accumulate}});
}

GRAFT_INLINE Tensor index_backward(const Tensor& g, const int_list& sizes, std::span<const Tensor> indices) {
    const graft::detail::observed_op obs;
    graft::detail::check(g.defined(), "index_backward: the gradient is undefined");
    const auto p = graft::detail::make_index_plan("index_backward", sizes, indices);
    graft::detail::check(g.sizes() == p.result_sizes, "index_backward: the gradient's sizes ", g.sizes(),
                         " are not the indexing result's ", p.result_sizes);
    Tensor out = zeros(sizes, g.type());
    graft::detail::put_rows(out, graft::detail::raw::contiguous(g), p, true);
    const auto operands = graft::detail::index_operands({g}, indices);
    return obs.done_list(out, "index_backward", operands, {{"sizes", graft::detail::to_vector(sizes)}});
}

}  // namespace graft::ops
