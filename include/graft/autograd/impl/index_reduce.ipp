#pragma once
// Definitions for graft/autograd/index_reduce.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/autograd/index_reduce.hpp"

#include <utility>

namespace graft {

namespace autograd::detail {

/// Records tril (lower) or triu of t: the gradient is the same triangle of g.
[[nodiscard]] GRAFT_INLINE Tensor record_triangle(const Tensor& t, std::int64_t diagonal, bool lower, Tensor out) {
    auto node = make_node(lower ? "TrilBackward0" : "TriuBackward0", t);
    if (!node) return out;
    node->backward = [diagonal, lower](function_node&, const tensor_list& g, tensor_list& grad_inputs) {
        grad_inputs.push_back(lower ? graft::tril(g[0], diagonal) : graft::triu(g[0], diagonal));
    };
    set_history(out, std::move(node));
    return out;
}

}  // namespace autograd::detail

GRAFT_INLINE Tensor tril(const Tensor& t, std::int64_t diagonal) {
    return autograd::detail::record_triangle(t, diagonal, true, ops::tril(t, diagonal));
}

GRAFT_INLINE Tensor triu(const Tensor& t, std::int64_t diagonal) {
    return autograd::detail::record_triangle(t, diagonal, false, ops::triu(t, diagonal));
}

GRAFT_INLINE Tensor masked_fill(const Tensor& t, const Tensor& mask, const scalar& value) {
    Tensor out = ops::masked_fill(t, mask, value);
    auto node = autograd::detail::make_node("MaskedFillBackward0", t);
    if (!node) return out;
    node->backward = [mask, sizes = t.sizes(), type = t.type()](autograd::function_node&, const autograd::tensor_list& g,
                                                                autograd::tensor_list& grad_inputs) {
        grad_inputs.push_back(autograd::detail::reduce_grad(graft::masked_fill(g[0], mask, 0), sizes, type));
    };
    autograd::detail::set_history(out, std::move(node));
    return out;
}

GRAFT_INLINE Tensor outer(const Tensor& a, const Tensor& b) {
    graft::detail::check(a.defined() && b.defined(), "outer: got an undefined tensor");
    graft::detail::check(a.dim() == 1, "outer: expected 1-D argument self, but got ", a.dim(), "-D");
    graft::detail::check(b.dim() == 1, "outer: expected 1-D argument vec2, but got ", b.dim(), "-D");
    return mul(a.unsqueeze(1), b.unsqueeze(0));
}

// ---------------------------------------------------------------- methods

GRAFT_INLINE Tensor Tensor::tril(std::int64_t diagonal) const { return graft::tril(*this, diagonal); }
GRAFT_INLINE Tensor Tensor::triu(std::int64_t diagonal) const { return graft::triu(*this, diagonal); }
GRAFT_INLINE Tensor Tensor::masked_fill(const Tensor& mask, const scalar& value) const {
    return graft::masked_fill(*this, mask, value);
}
GRAFT_INLINE Tensor Tensor::outer(const Tensor& other) const { return graft::outer(*this, other); }

GRAFT_INLINE Tensor& Tensor::tril_(std::int64_t diagonal) {
    return autograd::detail::inplace_unary(
        "tril_", "TrilBackward0", *this, [diagonal](const Tensor& x) { return ops::tril(x, diagonal); },
        [diagonal](const Tensor& g, const Tensor&) { return graft::tril(g, diagonal); },
        autograd::detail::inplace_saves::nothing);
}

GRAFT_INLINE Tensor& Tensor::triu_(std::int64_t diagonal) {
    return autograd::detail::inplace_unary(
        "triu_", "TriuBackward0", *this, [diagonal](const Tensor& x) { return ops::triu(x, diagonal); },
        [diagonal](const Tensor& g, const Tensor&) { return graft::triu(g, diagonal); },
        autograd::detail::inplace_saves::nothing);
}

GRAFT_INLINE Tensor& Tensor::masked_fill_(const Tensor& mask, const scalar& value) {
    // A mask that would broadcast this tensor to a larger shape is refused before any write
    // (the result's shape must be this tensor's).
    return autograd::detail::inplace_unary(
        "masked_fill_", "MaskedFillBackward0", *this, [&](const Tensor& x) { return ops::masked_fill(x, mask, value); },
        [mask](const Tensor& g, const Tensor&) { return graft::masked_fill(g, mask, 0); },
        autograd::detail::inplace_saves::nothing);
}

}  // namespace graft
