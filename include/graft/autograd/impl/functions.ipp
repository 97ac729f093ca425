#pragma once
// Definitions for graft/autograd/functions.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/autograd/functions.hpp"

#include <cmath>
#include <numbers>
#include <string>

namespace graft {

namespace autograd::detail {

GRAFT_INLINE void set_history(const Tensor& out, const std::shared_ptr<Node>& node) {
    auto& m = ensure_meta(out);
    m.grad_fn = node;
    m.output_nr = node->add_output(out);
    m.requires_grad = false;
}

GRAFT_INLINE void set_history(const Tensor& out, std::shared_ptr<Node>&& node) {
    auto& m = ensure_meta(out);
    m.output_nr = node->add_output(out);
    m.grad_fn = std::move(node);
    m.requires_grad = false;
}

GRAFT_INLINE void handle_view_on_rebase(const view_meta& vm, const Tensor& self, const char* op, bool indirect) {
    if (vm.creation == creation_meta::default_mode) return;
    const auto* m = meta(self);
    if (vm.creation == creation_meta::in_custom_function) {
        // PyTorch's CreationMeta::IN_CUSTOM_FUNCTION: rebasing the view's history onto its base
        // would route gradients around the Function's own backward.
        const std::string fn = vm.custom_function ? graft::detail::concat("the custom Function ", vm.custom_function)
                                                  : std::string("a custom Function");
        const std::string what =
            indirect ? graft::detail::concat("A view returned by ", fn, " is being used after its base or another "
                                             "view of its base has been modified inplace")
            : m && m->grad_fn ? graft::detail::concat("Output ", m->output_nr, " of ", m->grad_fn->name(),
                                                      " is a view and is being modified inplace. It comes from ", fn)
                              : graft::detail::concat("A view returned by ", fn, " is being modified inplace");
        graft::detail::fail(graft::detail::concat(
            op ? op : "", op ? ": " : "", what, " (an input its forward returned as-is, or a view made in its "
            "forward), and rebasing the view's history onto its base would bypass the Function's backward and "
            "give wrong gradients, so graft forbids it: clone the Function's output (or return a clone from "
            "forward) before modifying it, or its base, in place."));
    }
    if (vm.creation == creation_meta::multi_output_node) {
        // PyTorch's CreationMeta::MULTI_OUTPUT_NODE: the views of one split/chunk/unbind share one
        // backward node, which cannot be rebased (CopySlices) for one of them.
        const char* modified = indirect ? "its base or another view of its base has been" : "is being";
        const std::string what =
            m && m->grad_fn ? graft::detail::concat("Output ", m->output_nr, " of ", m->grad_fn->name(),
                                                    " is a view and ", modified, " modified inplace.")
                            : graft::detail::concat("A view ", modified, " modified inplace with grad mode enabled.");
        graft::detail::fail(graft::detail::concat(
            op ? op : "", op ? ": " : "", what, " It is one of multiple views that one call of split, "
            "split_with_sizes, chunk or unbind returned together; they share one backward node, which cannot be "
            "rebased for one of them, so graft (as PyTorch) forbids modifying them in place while autograd "
            "records. Replace the in-place op by an out-of-place one, or clone() the view first."));
    }
    const std::string prefix = m && m->grad_fn
                                   ? graft::detail::concat("Output ", m->output_nr, " of ", m->grad_fn->name(),
                                                           " is a view of a view which was created in")
                                   : std::string("A view was created in");
    graft::detail::fail(graft::detail::concat(
        op ? op : "", op ? ": " : "", prefix, " no_grad mode and ",
        indirect ? "its base or another view of its base has been" : "is being",
        " modified inplace with grad mode enabled. graft forbids this because it is ambiguous whether the "
        "in-place change should be tracked: create the view and run the in-place op both inside no_grad "
        "(not tracked) or both outside it (tracked)."));
}

GRAFT_INLINE void check_rebase_supported(const char* op, const Tensor& view, const Tensor& base) {
    const strided_geometry b = geometry_of(base), v = geometry_of(view);
    graft::detail::check(is_dense(b) && lies_within(v, b), op,
                         ": graft cannot track autograd through a view whose base is not dense or which reaches "
                         "outside its base's elements (base sizes ", b.sizes, ", strides ", b.strides,
                         ", offset ", b.offset, "; view sizes ", v.sizes, ", strides ", v.strides, ", offset ",
                         v.offset, "); clone() the base first");
}

GRAFT_INLINE void check_inplace(const char* op, const Tensor& self, bool other_requires_grad) {
    graft::detail::check(self.defined(), op, ": got an undefined tensor");
    notify_inplace(self);  // allow_mutation_on_saved_tensors: save pre-mutation values first
    if (!is_grad_enabled()) return;
    const bool self_requires_grad = requires_grad(self);
    if (!self_requires_grad && !other_requires_grad) return;
    if (const view_meta* vm = tracked_view(self)) {
        handle_view_on_rebase(*vm, self, op, false);
        const auto* bm = meta(vm->base);
        graft::detail::check(!(self_requires_grad && !(bm && bm->grad_fn)), op,
                             ": a view of a leaf Variable that requires grad is being used in an in-place operation.");
        const strided_geometry g = geometry_of(self);
        graft::detail::check(is_non_overlapping(g), op, ": unsupported operation: more than one element of the "
                             "written-to view refers to a single memory location (sizes ", g.sizes, ", strides ",
                             g.strides, "); clone() the view before the in-place operation");
        check_rebase_supported(op, self, vm->base);
        refresh_if_view(self);
    }
    const auto* m = meta(self);
    graft::detail::check(!(m && m->requires_grad && !m->grad_fn), op,
                         ": a leaf Variable that requires grad is being used in an in-place operation.");
}

GRAFT_INLINE Tensor unsqueeze_reduced(const Tensor& g, const int_list& in_sizes, const int_list& dims,
                                      bool keepdim) {
    if (keepdim || in_sizes.empty()) return g;
    const auto rank = static_cast<std::int64_t>(in_sizes.size());
    std::vector<bool> mask(in_sizes.size(), dims.empty());
    for (auto d : dims) mask[static_cast<std::size_t>(graft::detail::wrap_dim("sum", d, rank))] = true;
    int_list shape;
    for (std::size_t i = 0; i < in_sizes.size(); ++i) shape.push_back(mask[i] ? 1 : in_sizes[i]);
    return g.reshape(shape);
}

}  // namespace autograd::detail

GRAFT_INLINE Tensor sum_to_size(const Tensor& g, const int_list& sizes) {
    if (g.sizes() == sizes) return g;
    const auto lead = static_cast<std::int64_t>(g.dim()) - static_cast<std::int64_t>(sizes.size());
    graft::detail::check(lead >= 0, "sum_to_size: cannot sum ", g.sizes(), " to ",
                         sizes);
    int_list dims;
    for (std::int64_t i = 0; i < g.dim(); ++i) {
        if (i < lead) dims.push_back(i);
        else if (sizes[static_cast<std::size_t>(i - lead)] == 1 && g.size(i) != 1) dims.push_back(i);
    }
    if (dims.empty()) return g.reshape(sizes);
    return sum(g, dims, true).reshape(sizes);
}

namespace autograd::detail {

GRAFT_INLINE Tensor reduce_grad(Tensor g, const int_list& sizes, dtype type) {
    g = sum_to_size(g, sizes);
    return g.type() == type ? g : g.to(type);
}

GRAFT_INLINE tensor_list binary_backward(binary_kind kind, const Tensor& g, const Tensor& a, const Tensor& b,
                                         const Tensor& out, bool need_a, bool need_b,
                                         const int_list& a_sizes, const int_list& b_sizes) {
    return visit_binary(kind, [&](auto op) -> tensor_list {
        using Op = decltype(op);
        return {need_a ? reduce_grad(Op::grad_0(g, a, b, out), a.defined() ? a.sizes() : a_sizes,
                                     a.defined() ? a.type() : g.type())
                       : Tensor{},
                need_b ? reduce_grad(Op::grad_1(g, a, b, out), b.defined() ? b.sizes() : b_sizes,
                                     b.defined() ? b.type() : g.type())
                       : Tensor{}};
    });
}

GRAFT_INLINE Tensor record_binary(binary_kind kind, const Tensor& a, const Tensor& b, Tensor out) {
    return visit_binary(kind, [&](auto op) { return record_binary_op<decltype(op)>(a, b, std::move(out)); });
}

GRAFT_INLINE Tensor record_binary_scalar(binary_kind kind, const Tensor& t, const scalar& s, bool tensor_first,
                                         Tensor out) {
    return visit_binary(kind, [&](auto op) {
        return record_binary_scalar_op<decltype(op)>(t, s, tensor_first, std::move(out));
    });
}

}  // namespace autograd::detail

#define GRAFT_DETAIL_DIFF_BINARY(fn, kind)                                                                        \
    GRAFT_INLINE Tensor fn(const Tensor& a, const Tensor& b) {                                                    \
        return autograd::detail::record_binary(kind, a, b, ops::fn(a, b));                                        \
    }                                                                                                             \
    GRAFT_INLINE Tensor fn(const Tensor& a, const scalar& b) {                                                    \
        return autograd::detail::record_binary_scalar(kind, a, b, true, ops::fn(a, b));                           \
    }                                                                                                             \
    GRAFT_INLINE Tensor fn(const scalar& a, const Tensor& b) {                                                    \
        return autograd::detail::record_binary_scalar(kind, b, a, false, ops::fn(a, b));                          \
    }

GRAFT_DETAIL_DIFF_BINARY(add, autograd::detail::binary_kind::add)
GRAFT_DETAIL_DIFF_BINARY(sub, autograd::detail::binary_kind::sub)
GRAFT_DETAIL_DIFF_BINARY(mul, autograd::detail::binary_kind::mul)
GRAFT_DETAIL_DIFF_BINARY(div, autograd::detail::binary_kind::div)
GRAFT_DETAIL_DIFF_BINARY(pow, autograd::detail::binary_kind::pow)
GRAFT_DETAIL_DIFF_BINARY(maximum, autograd::detail::binary_kind::maximum)
GRAFT_DETAIL_DIFF_BINARY(minimum, autograd::detail::binary_kind::minimum)
#undef GRAFT_DETAIL_DIFF_BINARY

GRAFT_INLINE Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
    using Op = ops::def::where_op;
    Tensor out = ops::where(cond, a, b);
    auto node = autograd::detail::make_node(Op::node_name, a, b);
    if (!node) return out;
    node->save(cond);
    node->backward = [sa = a.sizes(), sb = b.sizes(), ta = a.type(), tb = b.type()](
                         autograd::function_node& n, const autograd::tensor_list& g) -> autograd::tensor_list {
        using autograd::detail::reduce_grad;
        const Tensor c = n.saved(0), none;
        return {n.needs_input_grad(0) ? reduce_grad(Op::grad_1(g[0], c, none, none, none), sa, ta) : Tensor{},
                n.needs_input_grad(1) ? reduce_grad(Op::grad_2(g[0], c, none, none, none), sb, tb) : Tensor{}};
    };
    autograd::detail::set_history(out, node);
    return out;
}

GRAFT_INLINE Tensor where(const Tensor& cond, const Tensor& a, const scalar& b) {
    return where(cond, a, full({}, b, result_type(a, b)));
}

GRAFT_INLINE Tensor where(const Tensor& cond, const scalar& a, const Tensor& b) {
    return where(cond, full({}, a, result_type(a, b)), b);
}

GRAFT_INLINE Tensor neg(const Tensor& a) {
    return autograd::detail::record_unary_op<ops::def::neg_op>(a, ops::neg(a));
}

GRAFT_INLINE Tensor sign(const Tensor& a) {
    Tensor out;
    {
        const graft::detail::observed_op obs;  // one op for graph capture (IR kind sign)
        const Tensor x = a.detach();
        // (0 < x) - (x < 0), as PyTorch: NaN and -0 give +0.
        const Tensor pos = ops::where(x > 0.0, ones_like(x), zeros_like(x));
        out = ops::where(x < 0.0, full_like(x, -1), pos);
        obs.record("sign", {a}, out);
    }
    // SignBackward0: a zero gradient (PyTorch's), so sign(x).sum().backward() works.
    return autograd::detail::record_unary_op<ops::def::sign_op>(a, std::move(out));
}

GRAFT_INLINE Tensor abs(const Tensor& a) {
    return autograd::detail::record_unary_op<ops::def::abs_op>(a, ops::abs(a));
}

GRAFT_INLINE Tensor exp(const Tensor& a) {
    return autograd::detail::record_unary_op<ops::def::exp_op>(a, ops::exp(a));
}

GRAFT_INLINE Tensor log(const Tensor& a) {
    return autograd::detail::record_unary_op<ops::def::log_op>(a, ops::log(a));
}

GRAFT_INLINE Tensor sqrt(const Tensor& a) {
    return autograd::detail::record_unary_op<ops::def::sqrt_op>(a, ops::sqrt(a));
}

GRAFT_INLINE Tensor rsqrt(const Tensor& a) {
    return autograd::detail::record_unary_op<ops::def::rsqrt_op>(a, ops::rsqrt(a));
}

GRAFT_INLINE Tensor tanh(const Tensor& a) {
    return autograd::detail::record_unary_op<ops::def::tanh_op>(a, ops::tanh(a));
}

GRAFT_INLINE Tensor sigmoid(const Tensor& a) {
    return autograd::detail::record_unary_op<ops::def::sigmoid_op>(a, ops::sigmoid(a));
}

GRAFT_INLINE Tensor relu(const Tensor& a) {
    return autograd::detail::record_unary_op<ops::def::relu_op>(a, ops::relu(a));
}

GRAFT_INLINE Tensor cos(const Tensor& a) {
    return autograd::detail::record_unary_op<ops::def::cos_op>(a, ops::cos(a));
}

GRAFT_INLINE Tensor sin(const Tensor& a) {
    return autograd::detail::record_unary_op<ops::def::sin_op>(a, ops::sin(a));
}

GRAFT_INLINE Tensor log1p(const Tensor& a) {
    return autograd::detail::record_unary_op<ops::def::log1p_op>(a, ops::log1p(a));
}

GRAFT_INLINE Tensor expm1(const Tensor& a) {
    return autograd::detail::record_unary_op<ops::def::expm1_op>(a, ops::expm1(a));
}

GRAFT_INLINE Tensor normal_cdf(const Tensor& a) {
    // The kernel (kernels::unary_op::normal_cdf): float32 lanes in float32 arithmetic, float64
    // per element 0.5*erfc(-x*sqrt(2)/2); graph capture records one normal_cdf op.
    Tensor out = ops::normal_cdf(a);
    return autograd::detail::record_unary("NormalCdfBackward0", a, out, true, false,
                                          [](const Tensor& g, const Tensor& x, const Tensor&) {
                                              const double inv_sqrt_2pi = 0.5 * std::numbers::inv_sqrtpi * std::numbers::sqrt2;
                                              return g * exp(x * x * (-0.5)) * inv_sqrt_2pi;
                                          });
}

GRAFT_INLINE Tensor autograd::detail::binary_cross_entropy_elements(const Tensor& input, const Tensor& target) {
    Tensor out = ops::binary_cross_entropy(input, target);
    auto node = make_node("BinaryCrossEntropyBackward0", input, target);
    if (!node) return out;
    node->save(input);
    node->save(target);
    node->backward = [](function_node& n, const tensor_list& g, tensor_list& grad_inputs) {
        const Tensor x = n.saved(0), t = n.saved(1);
        // PyTorch's bound is the float 1e-12 (9.99999996e-13) in every dtype: float64 gradients
        // where x (1 - x) is below it (x at or near 0 or 1) are torch's to the last bit only so.
        constexpr double eps = static_cast<double>(1e-12f);
        grad_inputs.push_back(n.needs_input_grad(0) ? g[0] * (x - t) / maximum((1.0 - x) * x, eps) : Tensor{});
        grad_inputs.push_back(n.needs_input_grad(1) ? -g[0] * log(x / (1.0 - x)) : Tensor{});
    };
    set_history(out, std::move(node));
    return out;
}

GRAFT_INLINE Tensor gelu(const Tensor& a, std::string_view approximate) {
    Tensor out = ops::gelu(a, approximate);
    if (approximate == "none")
        return autograd::detail::record_unary("GeluBackward0", a, out, true, false,
                                              [](const Tensor& g, const Tensor& x, const Tensor&) {
                                                  const double inv_sqrt_2pi =
                                                      0.5 * std::numbers::inv_sqrtpi * std::numbers::sqrt2;
                                                  return g * (normal_cdf(x) + x * exp(x * x * (-0.5)) * inv_sqrt_2pi);
                                              });
    return autograd::detail::record_unary("GeluBackward0", a, out, true, false,
                                          [](const Tensor& g, const Tensor& x, const Tensor&) {
                                              const double k = std::numbers::sqrt2 * std::numbers::inv_sqrtpi * 2.0 / 2.0;
                                              const double c = 0.044715;
                                              const Tensor t = tanh((x + x * x * x * c) * k);
                                              const Tensor left = (t + 1.0) * 0.5;
                                              const Tensor right = x * 0.5 * (1.0 - t * t) * k * (x * x * (3.0 * c) + 1.0);
                                              return g * (left + right);
                                          });
}

GRAFT_INLINE Tensor sum(const Tensor& t, const int_list& dims, bool keepdim) {
    Tensor out = ops::sum(t, dims, keepdim);
    auto node = autograd::detail::make_node("SumBackward1", t);
    if (!node) return out;
    const int_list sizes = t.sizes();
    node->backward = [sizes, dims, keepdim](autograd::function_node&, const autograd::tensor_list& g) {
        return autograd::tensor_list{autograd::detail::unsqueeze_reduced(g[0], sizes, dims, keepdim).expand(sizes)};
    };
    autograd::detail::set_history(out, node);
    return out;
}

GRAFT_INLINE Tensor sum(const Tensor& t) {
    Tensor out = ops::sum(t);
    auto node = autograd::detail::make_node("SumBackward0", t);
    if (!node) return out;
    const int_list sizes = t.sizes();
    node->backward = [sizes](autograd::function_node&, const autograd::tensor_list& g) {
        return autograd::tensor_list{g[0].expand(sizes)};
    };
    autograd::detail::set_history(out, node);
    return out;
}

GRAFT_INLINE Tensor mean(const Tensor& t, const int_list& dims, bool keepdim) {
    Tensor out = ops::mean(t, dims, keepdim);
    auto node = autograd::detail::make_node("MeanBackward1", t);
    if (!node) return out;
    const int_list sizes = t.sizes();
    const double count = out.numel() == 0 ? 0.0 : static_cast<double>(t.numel()) / static_cast<double>(out.numel());
    node->backward = [sizes, dims, keepdim, count](autograd::function_node&, const autograd::tensor_list& g) {
        return autograd::tensor_list{
            autograd::detail::unsqueeze_reduced(g[0], sizes, dims, keepdim).expand(sizes) / count};
    };
    autograd::detail::set_history(out, node);
    return out;
}

namespace autograd::detail {

GRAFT_INLINE Tensor record_extremum(const char* name, const Tensor& t, const int_list& dims, bool keepdim, Tensor out) {
    auto node = make_node(name, t);
    if (!node) return out;
    node->save(t);
    set_history(out, node);
    node->save(out, true);
    node->backward = [dims, keepdim](function_node& n, const tensor_list& g) -> tensor_list {
        const Tensor x = n.saved(0), y = n.saved(1);
        const int_list sizes = x.sizes();
        const Tensor y_full = unsqueeze_reduced(y, sizes, dims, keepdim);
        const Tensor mask = where(x == y_full, ones_like(x), zeros_like(x));
        const Tensor count = sum(mask, dims, true);
        return {unsqueeze_reduced(g[0], sizes, dims, keepdim) * mask / count};
    };
    return out;
}

}  // namespace autograd::detail

GRAFT_INLINE Tensor amax(const Tensor& t, const int_list& dims, bool keepdim) {
    return autograd::detail::record_extremum("AmaxBackward0", t, dims, keepdim, ops::amax(t, dims, keepdim));
}

GRAFT_INLINE Tensor amin(const Tensor& t, const int_list& dims, bool keepdim) {
    return autograd::detail::record_extremum("AminBackward0", t, dims, keepdim, ops::amin(t, dims, keepdim));
}


GRAFT_INLINE Tensor matmul(const Tensor& a, const Tensor& b) {
    Tensor out = ops::matmul(a, b);
    auto node = autograd::detail::make_node("MmBackward0", a, b);
    if (!node) return out;
    node->save(a);
    node->save(b);
    node->backward = [](autograd::function_node& n, const autograd::tensor_list& g) -> autograd::tensor_list {
        const Tensor a = n.saved(0), b = n.saved(1);
        // Promote 1-D operands as the forward did, then sum broadcast batch dims back.
        const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
        const Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
        Tensor g2 = g[0];
        if (a.dim() == 1 && b.dim() == 1) g2 = g2.reshape({1, 1});
        else if (a.dim() == 1) g2 = g2.unsqueeze(-2);
        else if (b.dim() == 1) g2 = g2.unsqueeze(-1);
        Tensor ga, gb;
        if (n.needs_input_grad(0)) ga = sum_to_size(matmul(g2, b2.transpose(-1, -2)), a2.sizes()).reshape(a.sizes());
        if (n.needs_input_grad(1)) gb = sum_to_size(matmul(a2.transpose(-1, -2), g2), b2.sizes()).reshape(b.sizes());
        return {ga, gb};
    };
    autograd::detail::set_history(out, node);
    return out;
}

GRAFT_INLINE Tensor softmax(const Tensor& t, std::int64_t dim) {
    Tensor out = ops::softmax(t, dim);
    auto node = autograd::detail::make_node("SoftmaxBackward0", t);
    if (!node) return out;
    autograd::detail::set_history(out, node);
    node->save(out, true);
    const std::int64_t d = t.dim() == 0 ? 0 : graft::detail::wrap_dim("softmax", dim, t.dim());
    node->backward = [d](autograd::function_node& n, const autograd::tensor_list& g) -> autograd::tensor_list {
        const Tensor y = n.saved(0);
        if (y.dim() == 0) return {g[0] * 0.0};
        return {y * (g[0] - sum(g[0] * y, {d}, true))};
    };
    return out;
}

GRAFT_INLINE Tensor log_softmax(const Tensor& t, std::int64_t dim) {
    Tensor out = ops::log_softmax(t, dim);
    auto node = autograd::detail::make_node("LogSoftmaxBackward0", t);
    if (!node) return out;
    autograd::detail::set_history(out, node);
    node->save(out, true);
    const std::int64_t d = t.dim() == 0 ? 0 : graft::detail::wrap_dim("log_softmax", dim, t.dim());
    node->backward = [d](autograd::function_node& n, const autograd::tensor_list& g) -> autograd::tensor_list {
        const Tensor y = n.saved(0);
        if (y.dim() == 0) return {g[0] * 0.0};
        return {g[0] - exp(y) * sum(g[0], {d}, true)};
    };
    return out;
}

namespace autograd::detail {

GRAFT_INLINE Tensor clamp_backward(const Tensor& g, const Tensor& x, const std::optional<scalar>& min,
                                   const std::optional<scalar>& max) {
    // Comparisons with NaN are false, so a NaN input (or bound) gets no gradient, as in PyTorch.
    Tensor r = g;
    if (max) r = where(x <= *max, r, zeros_like(g));
    if (min) r = where(x >= *min, r, zeros_like(g));
    return r;
}

/// Records clamp (node `name`) on x with these bounds; `out` is its raw result.
[[nodiscard]] GRAFT_INLINE Tensor record_clamp(const char* name, const Tensor& x, const std::optional<scalar>& min,
                                               const std::optional<scalar>& max, Tensor out) {
    auto node = make_node(name, x);
    if (!node) return out;
    node->save(x);
    node->backward = [min, max](function_node& n, const tensor_list& g, tensor_list& grad_inputs) {
        grad_inputs.push_back(clamp_backward(g[0], n.saved(0), min, max));
    };
    set_history(out, std::move(node));
    return out;
}

}  // namespace autograd::detail

GRAFT_INLINE Tensor clamp(const Tensor& x, const std::optional<scalar>& min, const std::optional<scalar>& max) {
    return autograd::detail::record_clamp("ClampBackward1", x, min, max, ops::clamp(x, min, max));
}

GRAFT_INLINE Tensor clamp_min(const Tensor& x, const scalar& min) {
    return autograd::detail::record_clamp("ClampMinBackward0", x, min, std::nullopt, ops::clamp(x, min, std::nullopt));
}

GRAFT_INLINE Tensor clamp_max(const Tensor& x, const scalar& max) {
    return autograd::detail::record_clamp("ClampMaxBackward0", x, std::nullopt, max, ops::clamp(x, std::nullopt, max));
}

}  // namespace graft
