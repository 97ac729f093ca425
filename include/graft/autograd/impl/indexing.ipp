#pragma once
// Definitions for graft/autograd/indexing.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/autograd/indexing.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "graft/autograd/tensor_methods.hpp"
#include "graft/core/detail/op_observer.hpp"
#include "graft/core/factories.hpp"

namespace graft {

GRAFT_INLINE Tensor nonzero(const Tensor& t) {
    detail::check(t.defined(), "nonzero: the tensor is undefined");
    detail::observe_read("nonzero", t);  // its result's size is data: graph capture refuses it
    const Tensor flat = t.ne(0).contiguous().reshape({t.numel()});
    const std::vector<bool> mask = flat.to_vector<bool>();
    const auto rank = static_cast<std::size_t>(t.dim());
    std::vector<std::int64_t> out;
    const int_list& sizes = t.sizes();
    for (std::size_t i = 0; i < mask.size(); ++i) {
        if (!mask[i]) continue;
        std::int64_t rest = static_cast<std::int64_t>(i);
        const std::size_t at = out.size();
        out.resize(at + rank);
        for (std::size_t d = rank; d-- > 0;) {
            out[at + d] = rest % sizes[d];
            rest /= sizes[d];
        }
    }
    const auto n = static_cast<std::int64_t>(rank == 0 ? (mask.empty() ? 0 : (mask[0] ? 1 : 0)) : out.size() / rank);
    if (out.empty()) return zeros({n, t.dim()}, dtype::int64);
    return from_vector(out).reshape({n, t.dim()});
}

namespace detail {

/// The view the basic indices make, and the index tensors (with the view's dimension each
/// indexes) the advanced ones leave.
struct indexed_view {
    Tensor view;
    std::vector<std::int64_t> dims;
    std::vector<Tensor> tensors;
};

inline indexed_view apply_basic_indices(const Tensor& self, const std::vector<indexing::TensorIndex>& indices) {
    check(self.defined(), "index: the tensor is undefined");
    // Dimensions the indices consume (integers, slices, index tensors; a mask its rank).
    std::int64_t consumed = 0;
    int ellipses = 0;
    for (const auto& i : indices) {
        const auto& v = i.value();
        if (std::holds_alternative<std::int64_t>(v) || std::holds_alternative<indexing::Slice>(v)) ++consumed;
        else if (std::holds_alternative<indexing::ellipsis_t>(v)) ++ellipses;
        else if (const auto* t = std::get_if<Tensor>(&v)) {
            check(t->defined(), "index: an index tensor is undefined");
            consumed += t->type() == dtype::bool_ ? t->dim() : 1;
        }
    }
    check(ellipses <= 1, "index: an index can only have a single ellipsis ('...')");
    check(consumed <= self.dim(), "index: too many indices for tensor of dimension ", self.dim(), " (got ", consumed,
          ")");
    indexed_view r{self, {}, {}};
    std::int64_t d = 0;  // the view's dimension the next index applies to
    for (std::size_t k = 0; k < indices.size(); ++k) {
        const auto& v = indices[k].value();
        if (const auto* i = std::get_if<std::int64_t>(&v)) {
            const std::int64_t n = r.view.size(d);
            check(*i >= -n && *i < n, "index ", *i, " is out of bounds for dimension ", d, " with size ", n);
            r.view = r.view.select(d, *i);
        } else if (const auto* s = std::get_if<indexing::Slice>(&v)) {
            const std::int64_t step = s->step.value_or(1);
            check(step > 0, "index: slice step must be greater than zero, got ", step);
            r.view = r.view.slice(d, s->start.value_or(0), s->stop.value_or(std::numeric_limits<std::int64_t>::max()),
                                  step);
            ++d;
        } else if (std::holds_alternative<indexing::none_t>(v)) {
            r.view = r.view.unsqueeze(d);
            ++d;
        } else if (std::holds_alternative<indexing::ellipsis_t>(v)) {
            // The dimensions left to the indices after this one (None and bools add their own).
            d += self.dim() - consumed;
        } else if (const auto* b = std::get_if<bool>(&v)) {
            // A new dimension of size 1 (true) or 0 (false), as PyTorch's t[True] / t[False].
            r.view = r.view.unsqueeze(d);
            if (!*b) r.view = r.view.slice(d, 0, 0);
            ++d;
        } else {
            const Tensor& t = std::get<Tensor>(v);
            if (t.type() == dtype::bool_) {
                // A mask over the next t.dim() dimensions: the indices of its true elements.
                Tensor mask = t;
                if (t.dim() == 0) {  // a 0-dim mask indexes a new dimension of size 1
                    r.view = r.view.unsqueeze(d);
                    mask = t.reshape({1});
                }
                for (std::int64_t j = 0; j < mask.dim(); ++j)
                    check(mask.size(j) == r.view.size(d + j), "index: The shape of the mask ", t.sizes(),
                          " at index ", j, " does not match the shape of the indexed tensor ", self.sizes(),
                          " at index ", d + j);
                const Tensor nz = nonzero(mask);
                for (std::int64_t j = 0; j < mask.dim(); ++j) {
                    r.dims.push_back(d + j);
                    r.tensors.push_back(nz.select(1, j));
                }
                d += mask.dim();
            } else {
                check(t.type() == dtype::int64, "index: tensors used as indices must be int64 or bool tensors, got ",
                      t.type());
                r.dims.push_back(d);
                r.tensors.push_back(t);
                ++d;
            }
        }
    }
    return r;
}

/// The view's dimensions with the indexed ones first (in order): the permutation that lets
/// graft::index (which indexes leading dimensions) apply them.
inline int_list indexed_first(const indexed_view& r) {
    int_list perm = r.dims;
    for (std::int64_t d = 0; d < r.view.dim(); ++d)
        if (std::find(r.dims.begin(), r.dims.end(), d) == r.dims.end()) perm.push_back(d);
    return perm;
}

/// Where the broadcast index shape goes in the result: at the first indexed dimension when the
/// indexed dimensions are adjacent, else first (PyTorch's and NumPy's rule).
inline std::int64_t broadcast_position(const indexed_view& r) {
    const bool adjacent = r.dims.back() - r.dims.front() + 1 == static_cast<std::int64_t>(r.dims.size());
    return adjacent ? r.dims.front() : 0;
}

/// Moves `b` leading dimensions of t to start at `pos`.
inline Tensor move_leading(const Tensor& t, std::int64_t b, std::int64_t pos) {
    if (pos == 0) return t;
    int_list perm;
    for (std::int64_t d = b; d < b + pos; ++d) perm.push_back(d);
    for (std::int64_t d = 0; d < b; ++d) perm.push_back(d);
    for (std::int64_t d = b + pos; d < t.dim(); ++d) perm.push_back(d);
    return t.permute(perm);
}

inline int_list broadcast_index_sizes(const std::vector<Tensor>& tensors) {
    std::vector<std::int64_t> out;
    for (const Tensor& t : tensors) {
        const int_list& s = t.sizes();
        if (s.size() > out.size()) out.insert(out.begin(), s.size() - out.size(), 1);
        for (std::size_t i = 0; i < s.size(); ++i) {
            std::int64_t& o = out[out.size() - s.size() + i];
            check(o == 1 || s[i] == 1 || o == s[i], "index: shape mismatch: indexing tensors could not be broadcast "
                                                     "together with shapes ", t.sizes());
            if (o == 1) o = s[i];
        }
    }
    int_list r;
    for (const std::int64_t v : out) r.push_back(v);
    return r;
}

}  // namespace detail

GRAFT_INLINE Tensor detail::index_full(const Tensor& t, const std::vector<indexing::TensorIndex>& indices) {
    const detail::indexed_view r = detail::apply_basic_indices(t, indices);
    if (r.tensors.empty()) return r.view;
    const Tensor gathered = graft::index(r.view.permute(detail::indexed_first(r)), r.tensors);
    const auto b = static_cast<std::int64_t>(detail::broadcast_index_sizes(r.tensors).size());
    return detail::move_leading(gathered, b, detail::broadcast_position(r));
}

GRAFT_INLINE Tensor& detail::index_put_full(Tensor& t, const std::vector<indexing::TensorIndex>& indices,
                                            const Tensor& values, bool accumulate) {
    detail::check(values.defined(), "index_put_: the values tensor is undefined");
    const detail::indexed_view r = detail::apply_basic_indices(t, indices);
    if (r.tensors.empty()) {
        // A view of t: values broadcast to it (accumulate adds).
        Tensor view = r.view;
        const Tensor v = values.to(t.type()).broadcast_to(view.sizes());
        if (accumulate) view.add_(v);
        else view.copy_(v);
        return t;
    }
    Tensor permuted = r.view.permute(detail::indexed_first(r));
    // The values in the result's layout, then with the broadcast index dimensions first.
    const int_list bsizes = detail::broadcast_index_sizes(r.tensors);
    const auto b = static_cast<std::int64_t>(bsizes.size());
    const std::int64_t pos = detail::broadcast_position(r);
    int_list first = bsizes;  // B + the dimensions not indexed
    for (std::int64_t d = static_cast<std::int64_t>(r.dims.size()); d < permuted.dim(); ++d)
        first.push_back(permuted.size(d));
    int_list laid = first;  // the result's layout: B at pos
    std::rotate(laid.begin(), laid.begin() + b, laid.begin() + b + pos);
    const Tensor v = values.to(t.type()).broadcast_to(laid);
    int_list back;  // laid -> first
    for (std::int64_t d = pos; d < pos + b; ++d) back.push_back(d);
    for (std::int64_t d = 0; d < pos; ++d) back.push_back(d);
    for (std::int64_t d = pos + b; d < static_cast<std::int64_t>(laid.size()); ++d) back.push_back(d);
    permuted.index_put_(r.tensors, v.permute(back), accumulate);
    return t;
}

GRAFT_INLINE Tensor Tensor::index(std::initializer_list<indexing::TensorIndex> indices) const {
    return detail::index_full(*this, std::vector<indexing::TensorIndex>(indices));
}
GRAFT_INLINE Tensor Tensor::index(const std::vector<indexing::TensorIndex>& indices) const {
    return detail::index_full(*this, indices);
}
GRAFT_INLINE Tensor& Tensor::index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& values,
                                       bool accumulate) {
    return detail::index_put_full(*this, std::vector<indexing::TensorIndex>(indices), values, accumulate);
}
GRAFT_INLINE Tensor& Tensor::index_put_(std::initializer_list<indexing::TensorIndex> indices, const scalar& value) {
    detail::check(defined(), "index_put_: the tensor is undefined");
    return detail::index_put_full(*this, std::vector<indexing::TensorIndex>(indices), full({}, value, type()), false);
}
GRAFT_INLINE Tensor& Tensor::index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& values,
                                       bool accumulate) {
    return detail::index_put_full(*this, indices, values, accumulate);
}

}  // namespace graft
