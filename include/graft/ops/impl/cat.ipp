#pragma once
// Definitions for graft/ops/cat.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/ops/cat.hpp"

#include <vector>

namespace graft::ops {

GRAFT_INLINE Tensor cat(std::span<const Tensor> tensors, std::int64_t dim) {
    const graft::detail::observed_op obs;
    graft::detail::check(!tensors.empty(), "cat: expected a non-empty list of Tensors");
    // The first tensor that is not a legacy empty 1-D tensor fixes the rank and the sizes.
    const auto skipped = [](const Tensor& t) { return t.dim() == 1 && t.numel() == 0; };
    std::size_t ref = tensors.size();
    dtype type = dtype::bool_;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const Tensor& t = tensors[i];
        graft::detail::check(t.defined(), "cat: tensor ", i, " in the list is undefined");
        graft::detail::check(t.dim() > 0, "cat: zero-dimensional tensor (at position ", i, ") cannot be concatenated");
        type = i == 0 ? t.type() : promote_types(type, t.type());
        if (ref == tensors.size() && !skipped(t)) ref = i;
    }
    if (ref == tensors.size()) ref = 0;  // only empty 1-D tensors: the result is one of them
    const Tensor& first = tensors[ref];
    const std::int64_t d = graft::detail::wrap_dim("cat", dim, first.dim());
    const auto k = static_cast<std::size_t>(d);
    int_list sizes = first.sizes();
    sizes[k] = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const Tensor& t = tensors[i];
        if (skipped(t) && i != ref) continue;
        graft::detail::check(t.dim() == first.dim(), "cat: Tensors must have same number of dimensions: got ", first.dim(),
                      " and ", t.dim(), " (tensor ", ref, " has sizes ", first.sizes(), ", tensor ", i, " has sizes ",
                      t.sizes(), ")");
        for (std::size_t j = 0; j < sizes.size(); ++j)
            graft::detail::check(j == k || t.sizes()[j] == first.sizes()[j],
                          "cat: Sizes of tensors must match except in dimension ", d, ". Expected size ",
                          first.sizes()[j], " but got size ", t.sizes()[j], " for tensor number ", i,
                          " in the list (sizes ", first.sizes(), " and ", t.sizes(), ")");
        graft::detail::check(graft::detail::add_fits(sizes[k], t.sizes()[k], sizes[k]), "cat: the joined size along dimension ",
                      d, " overflows int64");
    }
    Tensor out = empty(sizes, type);
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const Tensor& t = tensors[i];
        if (skipped(t) && i != ref) continue;
        const std::int64_t n = t.sizes()[k];
        if (n > 0) graft::detail::copy_elements(graft::detail::raw::narrow(out, d, offset, n), t);
        offset += n;
    }
    std::vector<graft::detail::op_operand> operands(tensors.begin(), tensors.end());
    return obs.done_list(out, "cat", operands, {{"dim", dim}});
}

}  // namespace graft::ops
