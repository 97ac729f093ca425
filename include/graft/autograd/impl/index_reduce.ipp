#pragma once
// Definitions for graft/autograd/index_reduce.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/autograd/index_reduce.hpp"

#include <algorithm>
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

// ---------------------------------------------------------------- index reductions

GRAFT_INLINE Tensor argmax(const Tensor& t, std::optional<std::int64_t> dim, bool keepdim) {
    return ops::argmax(t, dim, keepdim);
}

GRAFT_INLINE Tensor argmin(const Tensor& t, std::optional<std::int64_t> dim, bool keepdim) {
    return ops::argmin(t, dim, keepdim);
}

namespace autograd::detail {

/// max / min along dim: argmax / argmin, the values gathered there; the gradient is put back
/// at the indices.
[[nodiscard]] GRAFT_INLINE std::tuple<Tensor, Tensor> extremum_along(const char* op, bool want_max, const Tensor& t,
                                                                     std::int64_t dim, bool keepdim) {
    graft::detail::check(t.defined(), op, ": got an undefined tensor");
    graft::detail::check(t.type() != dtype::bool_, op, ": not implemented for 'Bool'");
    const std::int64_t d = graft::detail::wrap_dim(op, dim, t.dim());
    if (t.dim() > 0)
        graft::detail::check(t.size(d) > 0, op, ": Expected reduction dim ", d, " to have non-zero size (input sizes ",
                             t.sizes(), ")");
    const Tensor at = want_max ? ops::argmax(t, d, true) : ops::argmin(t, d, true);
    Tensor values = ops::gather(t, d, at);
    Tensor indices = at;
    if (!keepdim && t.dim() > 0) {
        values = graft::detail::raw::squeeze(values, d);
        indices = graft::detail::raw::squeeze(at, d);
    }
    auto node = make_node(want_max ? "MaxBackward0" : "MinBackward0", t);
    if (node) {
        node->backward = [sizes = t.sizes(), d, keepdim, at](function_node&, const tensor_list& g,
                                                             tensor_list& grad_inputs) {
            const Tensor gk = keepdim || sizes.empty() ? g[0] : g[0].unsqueeze(d);
            grad_inputs.push_back(gather_backward(gk, sizes, d, at));
        };
        set_history(values, std::move(node));
    }
    return {values, indices};
}

}  // namespace autograd::detail

GRAFT_INLINE std::tuple<Tensor, Tensor> max(const Tensor& t, std::int64_t dim, bool keepdim) {
    return autograd::detail::extremum_along("max", true, t, dim, keepdim);
}

GRAFT_INLINE std::tuple<Tensor, Tensor> min(const Tensor& t, std::int64_t dim, bool keepdim) {
    return autograd::detail::extremum_along("min", false, t, dim, keepdim);
}

namespace autograd::detail {

/// torch.max(t) / torch.min(t)'s node (PyTorch's evenly_distribute_backward): g / count to each
/// element equal to the result, or, when the result is NaN, to each NaN element.
GRAFT_INLINE Tensor record_full_extremum(const char* name, const Tensor& t, Tensor out) {
    auto node = make_node(name, t);
    if (!node) return out;
    node->save(t);
    set_history(out, node);
    node->save(out, true);
    node->backward = [](function_node& n, const tensor_list& g) -> tensor_list {
        const Tensor x = n.saved(0), y = n.saved(1);
        // y is 0-dim: it broadcasts. No branch on its value, so a traced backward serves all.
        const Tensor one = ones_like(x), zero = zeros_like(x);
        const Tensor count_mask = where(y != y, where(x != x, one, zero), where(x == y, one, zero));
        return {where(count_mask != 0.0, g[0] / sum(count_mask), 0.0)};
    };
    return out;
}

}  // namespace autograd::detail

GRAFT_INLINE Tensor max(const Tensor& t) {
    return autograd::detail::record_full_extremum("MaxBackward1", t, ops::max_all(t));
}

GRAFT_INLINE Tensor min(const Tensor& t) {
    return autograd::detail::record_full_extremum("MinBackward1", t, ops::min_all(t));
}

GRAFT_INLINE Tensor logsumexp(const Tensor& t, const int_list& dims, bool keepdim) {
    Tensor out = ops::logsumexp(t, dims, keepdim);
    auto node = autograd::detail::make_node("LogsumexpBackward0", t);
    if (!node) return out;
    autograd::function_node& recorded = *node;
    recorded.save(t);
    autograd::detail::set_history(out, std::move(node));
    recorded.save(out, true);
    recorded.backward = [dims, keepdim](autograd::function_node& n, const autograd::tensor_list& g,
                                        autograd::tensor_list& grad_inputs) {
        using autograd::detail::unsqueeze_reduced;
        const Tensor x = n.saved(0), y = n.saved(1);
        const int_list& sizes = x.sizes();
        grad_inputs.push_back(unsqueeze_reduced(g[0], sizes, dims, keepdim) *
                              exp(x - unsqueeze_reduced(y, sizes, dims, keepdim)));
    };
    return out;
}

namespace autograd::detail {

/// var's gradient for the incoming gradient g: 2 / dof * g * (x - mean(x)).
[[nodiscard]] GRAFT_INLINE Tensor var_backward(const Tensor& g, const Tensor& x, const int_list& dims, double dof,
                                               bool keepdim) {
    return unsqueeze_reduced(g, x.sizes(), dims, keepdim) * (2.0 / dof) * (x - mean(x, dims, true));
}

/// The degrees of freedom of a var / std of t whose result has `out_numel` elements.
[[nodiscard]] inline double degrees_of_freedom(const Tensor& t, std::int64_t out_numel, double correction) {
    const std::int64_t n = out_numel == 0 ? 0 : t.numel() / out_numel;
    return std::max(0.0, static_cast<double>(n) - correction);
}

}  // namespace autograd::detail

GRAFT_INLINE Tensor var(const Tensor& t, const int_list& dims, double correction, bool keepdim) {
    Tensor out = ops::var(t, dims, correction, keepdim);
    auto node = autograd::detail::make_node("VarBackward0", t);
    if (!node) return out;
    node->save(t);
    const double dof = autograd::detail::degrees_of_freedom(t, out.numel(), correction);
    node->backward = [dims, dof, keepdim](autograd::function_node& n, const autograd::tensor_list& g,
                                          autograd::tensor_list& grad_inputs) {
        grad_inputs.push_back(autograd::detail::var_backward(g[0], n.saved(0), dims, dof, keepdim));
    };
    autograd::detail::set_history(out, std::move(node));
    return out;
}

GRAFT_INLINE Tensor std(const Tensor& t, const int_list& dims, double correction, bool keepdim) {
    Tensor out = ops::std(t, dims, correction, keepdim);
    auto node = autograd::detail::make_node("StdBackward0", t);
    if (!node) return out;
    autograd::function_node& recorded = *node;
    recorded.save(t);
    autograd::detail::set_history(out, std::move(node));
    recorded.save(out, true);
    const double dof = autograd::detail::degrees_of_freedom(t, out.numel(), correction);
    recorded.backward = [dims, dof, keepdim](autograd::function_node& n, const autograd::tensor_list& g,
                                             autograd::tensor_list& grad_inputs) {
        const Tensor x = n.saved(0), y = n.saved(1);
        // d std = d var / (2 std); 0 where std is 0 (PyTorch's std_backward).
        const Tensor gv = masked_fill(g[0] / (y * 2.0), y == 0.0, 0.0);
        grad_inputs.push_back(autograd::detail::var_backward(gv, x, dims, dof, keepdim));
    };
    return out;
}

namespace autograd::detail {

/// var_mean / std_mean: one node with two outputs (PyTorch's VarMeanBackward0 /
/// StdMeanBackward0), whose backward adds the gradients var / std and mean would give alone
/// (the same expressions, so the same values as two separate nodes). Either output's gradient
/// may be missing.
GRAFT_INLINE std::tuple<Tensor, Tensor> record_spread_mean(const char* name, bool is_std, const Tensor& t,
                                                           const int_list& dims, double correction, bool keepdim) {
    Tensor spread = is_std ? ops::std(t, dims, correction, keepdim) : ops::var(t, dims, correction, keepdim);
    Tensor m = ops::mean(t, dims, keepdim);
    auto node = make_node(name, t);
    if (!node) return {spread, m};
    function_node& recorded = *node;
    recorded.save(t);
    set_history(spread, node);
    set_history(m, std::move(node));
    recorded.save(is_std ? spread : Tensor{}, true);
    const double dof = degrees_of_freedom(t, spread.numel(), correction);
    const double count = m.numel() == 0 ? 0.0 : static_cast<double>(t.numel()) / static_cast<double>(m.numel());
    recorded.backward = [is_std, dims, dof, count, keepdim](function_node& n, const tensor_list& g,
                                                            tensor_list& grad_inputs) {
        const Tensor x = n.saved(0);
        Tensor gx;
        if (g[0].defined()) {
            Tensor gv = g[0];
            if (is_std) {  // as std's node: d std = d var / (2 std), 0 where std is 0
                const Tensor y = n.saved(1);
                gv = masked_fill(g[0] / (y * 2.0), y == 0.0, 0.0);
            }
            gx = var_backward(gv, x, dims, dof, keepdim);
        }
        if (g.size() > 1 && g[1].defined()) {  // as mean's node
            const Tensor gm = unsqueeze_reduced(g[1], x.sizes(), dims, keepdim).expand(x.sizes()) / count;
            gx = gx.defined() ? gx + gm : gm;
        }
        grad_inputs.push_back(gx);
    };
    return {spread, m};
}

}  // namespace autograd::detail

GRAFT_INLINE std::tuple<Tensor, Tensor> var_mean(const Tensor& t, const int_list& dims, double correction,
                                                 bool keepdim) {
    return autograd::detail::record_spread_mean("VarMeanBackward0", false, t, dims, correction, keepdim);
}

GRAFT_INLINE std::tuple<Tensor, Tensor> std_mean(const Tensor& t, const int_list& dims, double correction,
                                                 bool keepdim) {
    return autograd::detail::record_spread_mean("StdMeanBackward0", true, t, dims, correction, keepdim);
}

// ---------------------------------------------------------------- index ops

namespace autograd::detail {

GRAFT_INLINE Tensor gather_backward(const Tensor& g, const int_list& sizes, std::int64_t dim, const Tensor& index) {
    Tensor out = ops::gather_backward(g, sizes, dim, index);
    auto node = make_node("ScatterAddBackward0", g);
    if (!node) return out;
    node->backward = [dim, index](function_node&, const tensor_list& gg, tensor_list& grad_inputs) {
        grad_inputs.push_back(graft::gather(gg[0], dim, index));
    };
    set_history(out, std::move(node));
    return out;
}

GRAFT_INLINE Tensor index_select_backward(const Tensor& g, const int_list& sizes, std::int64_t dim,
                                          const Tensor& index) {
    Tensor out = ops::index_select_backward(g, sizes, dim, index);
    auto node = make_node("IndexAddBackward0", g);
    if (!node) return out;
    node->backward = [dim, index](function_node&, const tensor_list& gg, tensor_list& grad_inputs) {
        grad_inputs.push_back(graft::index_select(gg[0], dim, index));
    };
    set_history(out, std::move(node));
    return out;
}

}  // namespace autograd::detail

GRAFT_INLINE Tensor gather(const Tensor& t, std::int64_t dim, const Tensor& index) {
    Tensor out = ops::gather(t, dim, index);
    auto node = autograd::detail::make_node("GatherBackward0", t);
    if (!node) return out;
    node->backward = [sizes = t.sizes(), dim, index](autograd::function_node&, const autograd::tensor_list& g,
                                                     autograd::tensor_list& grad_inputs) {
        grad_inputs.push_back(autograd::detail::gather_backward(g[0], sizes, dim, index));
    };
    autograd::detail::set_history(out, std::move(node));
    return out;
}

namespace autograd::detail {

/// scatter_add's backward: self gets g; src gets g gathered at index, zero-padded where src
/// is larger than the index (those elements did not take part).
[[nodiscard]] inline auto scatter_add_backward(std::int64_t dim, const Tensor& index, const int_list& ssizes) {
    return [dim, index, ssizes](function_node& n, const tensor_list& g, tensor_list& grad_inputs) {
        grad_inputs.push_back(n.needs_input_grad(0) ? g[0] : Tensor{});
        if (!n.needs_input_grad(1)) {
            grad_inputs.emplace_back();
            return;
        }
        Tensor gs = gather(g[0], dim, index);
        if (gs.dim() == static_cast<std::int64_t>(ssizes.size())) {
            for (std::int64_t r = 0; r < gs.dim(); ++r) {
                if (gs.size(r) == ssizes[static_cast<std::size_t>(r)]) continue;
                int_list sizes = gs.sizes();
                sizes[static_cast<std::size_t>(r)] = ssizes[static_cast<std::size_t>(r)];
                gs = narrow_embed(gs, sizes, r, 0, gs.size(r));
            }
        }
        grad_inputs.push_back(gs.reshape(ssizes));
    };
}

}  // namespace autograd::detail

GRAFT_INLINE Tensor scatter_add(const Tensor& t, std::int64_t dim, const Tensor& index, const Tensor& src) {
    Tensor out = ops::scatter_add(t, dim, index, src);
    auto node = autograd::detail::make_node("ScatterAddBackward0", t, src);
    if (!node) return out;
    node->backward = autograd::detail::scatter_add_backward(dim, index, src.sizes());
    autograd::detail::set_history(out, std::move(node));
    return out;
}

GRAFT_INLINE Tensor index_select(const Tensor& t, std::int64_t dim, const Tensor& index) {
    Tensor out = ops::index_select(t, dim, index);
    auto node = autograd::detail::make_node("IndexSelectBackward0", t);
    if (!node) return out;
    node->backward = [sizes = t.sizes(), dim, index](autograd::function_node&, const autograd::tensor_list& g,
                                                     autograd::tensor_list& grad_inputs) {
        grad_inputs.push_back(autograd::detail::index_select_backward(g[0], sizes, dim, index));
    };
    autograd::detail::set_history(out, std::move(node));
    return out;
}

// ---------------------------------------------------------------- methods

GRAFT_INLINE Tensor& Tensor::scatter_add_(std::int64_t dim, const Tensor& index, const Tensor& src) {
    autograd::detail::check_inplace("scatter_add_", *this, autograd::detail::requires_grad(src));
    const Tensor result = ops::scatter_add(*this, dim, index, src);  // checks every index before the write
    autograd::detail::check_inplace_result("scatter_add_", *this, result);
    auto node = autograd::detail::make_node("ScatterAddBackward0", *this, src);
    if (node) node->backward = autograd::detail::scatter_add_backward(dim, index, src.sizes());
    autograd::detail::commit_inplace(*this, result, node);
    return *this;
}

GRAFT_INLINE Tensor Tensor::argmax(std::optional<std::int64_t> dim, bool keepdim) const {
    return graft::argmax(*this, dim, keepdim);
}
GRAFT_INLINE Tensor Tensor::argmin(std::optional<std::int64_t> dim, bool keepdim) const {
    return graft::argmin(*this, dim, keepdim);
}
GRAFT_INLINE std::tuple<Tensor, Tensor> Tensor::max(std::int64_t dim, bool keepdim) const {
    return graft::max(*this, dim, keepdim);
}
GRAFT_INLINE std::tuple<Tensor, Tensor> Tensor::min(std::int64_t dim, bool keepdim) const {
    return graft::min(*this, dim, keepdim);
}
GRAFT_INLINE Tensor Tensor::logsumexp(const int_list& dims, bool keepdim) const {
    return graft::logsumexp(*this, dims, keepdim);
}
GRAFT_INLINE Tensor Tensor::var(const int_list& dims, double correction, bool keepdim) const {
    return graft::var(*this, dims, correction, keepdim);
}
GRAFT_INLINE Tensor Tensor::std(const int_list& dims, double correction, bool keepdim) const {
    return graft::std(*this, dims, correction, keepdim);
}
GRAFT_INLINE Tensor Tensor::gather(std::int64_t dim, const Tensor& index) const {
    return graft::gather(*this, dim, index);
}
GRAFT_INLINE Tensor Tensor::scatter_add(std::int64_t dim, const Tensor& index, const Tensor& src) const {
    return graft::scatter_add(*this, dim, index, src);
}
GRAFT_INLINE Tensor Tensor::index_select(std::int64_t dim, const Tensor& index) const {
    return graft::index_select(*this, dim, index);
}


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
