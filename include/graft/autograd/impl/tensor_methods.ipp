#pragma once
// Definitions for graft/autograd/tensor_methods.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/autograd/tensor_methods.hpp"

namespace graft {

GRAFT_INLINE Tensor& Tensor::requires_grad_(bool enabled) {
    autograd::detail::refresh_if_view(*this);
    auto* m = autograd::detail::meta(*this);
    if (m && m->grad_fn) {
        detail::check(enabled, "requires_grad_: you can only change requires_grad flags of leaf variables. If you "
                                "want to use a computed variable in a subgraph that doesn't require differentiation "
                                "use var_no_grad = var.detach().");
        return *this;
    }
    detail::check(!enabled || is_floating_point(type()), "requires_grad_: only Tensors of floating point dtype can "
                  "require gradients (got ", type(), ")");
    if (!m && !enabled) return *this;
    autograd::detail::ensure_meta(*this).requires_grad = enabled;
    return *this;
}

GRAFT_INLINE void Tensor::set_grad(const Tensor& g) const {
    if (g.defined())
        detail::check(g.sizes() == sizes() && g.type() == type(), "set_grad: assigned grad has shape ",
                      g.sizes(), " and dtype ", g.type(), ", expected ",
                      sizes(), " and ", type());
    autograd::detail::ensure_meta(*this).grad = g;
}

GRAFT_INLINE Tensor Tensor::detach() const {
    Tensor out = detail::raw::alias(*this);
    out.impl_ptr()->is_view = is_view();
    detail::observe_detach(out);  // graph capture: reads of `out` are detach(source)
    return out;
}

GRAFT_INLINE void Tensor::retain_grad() const {
    detail::check(requires_grad(), "can't retain_grad on Tensor that has requires_grad=False");
    if (is_leaf()) return;  // leaves keep their grad anyway (is_leaf refreshes a stale view)
    auto& m = autograd::detail::ensure_meta(*this);
    if (m.retains_grad) return;
    m.retains_grad = true;
    m.grad_fn->retain_grad_target(m.output_nr) = impl_ptr();
}

GRAFT_INLINE autograd::hook_handle Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) const {
    detail::check(requires_grad(), "register_hook: cannot register a hook on a tensor that doesn't require gradient");
    autograd::detail::refresh_if_view(*this);
    auto& m = autograd::detail::ensure_meta(*this);
    if (m.grad_fn) return autograd::detail::add_hook(m.grad_fn->tensor_pre_hooks(m.output_nr), std::move(hook));
    return autograd::detail::add_hook(m.leaf_hooks, std::move(hook));
}

GRAFT_INLINE autograd::hook_handle Tensor::register_post_accumulate_grad_hook_erased(
    std::function<void(const Tensor&)> hook) const {
    detail::check(requires_grad() && is_leaf(), "post accumulate grad hooks cannot be registered on non-leaf tensors");
    auto& m = autograd::detail::ensure_meta(*this);
    return autograd::detail::add_hook(m.post_accumulate_hooks, std::move(hook));
}

namespace autograd {

GRAFT_INLINE GradientEdge get_gradient_edge(const Tensor& t) {
    graft::detail::check(t.defined() && t.requires_grad(), "It is not possible to get the gradient edge for a Tensor "
                         "that does not require gradients");
    const Edge e = detail::gradient_edge(t);
    return {e.function, e.input_nr};
}

GRAFT_INLINE Edge grad_input::to_edge() const {
    if (tensor.defined()) {
        graft::detail::check(tensor.requires_grad(), "One of the differentiated Tensors does not require grad");
        return detail::gradient_edge(tensor);
    }
    graft::detail::check(edge.node != nullptr, "autograd::grad: got an empty GradientEdge");
    return {edge.node, edge.output_nr};
}

GRAFT_INLINE void backward(const tensor_list& outputs, const tensor_list& grad_outputs, bool retain_graph,
                           bool create_graph, const std::vector<grad_input>& inputs) {
    std::vector<Edge> edges;
    edges.reserve(inputs.size());
    for (const auto& in : inputs) edges.push_back(in.to_edge());
    tensor_list captured = detail::run_backward(outputs, grad_outputs, retain_graph || create_graph, create_graph,
                                                edges, true, true);
    // Non-leaf inputs get their gradient in .grad, as if they retained it.
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const Tensor& t = inputs[i].tensor;
        if (!t.defined() || t.is_leaf() || !captured[i].defined()) continue;
        auto& m = detail::ensure_meta(t);
        const Tensor g = create_graph ? captured[i] : captured[i].detach();
        m.grad = m.grad.defined() ? m.grad + g : g;
    }
}

GRAFT_INLINE tensor_list grad(const tensor_list& outputs, const std::vector<grad_input>& inputs,
                              const tensor_list& grad_outputs, std::optional<bool> retain_graph,
                              bool create_graph, bool allow_unused) {
    graft::detail::check(!inputs.empty(), "grad requires at least one input");
    std::vector<Edge> edges;
    edges.reserve(inputs.size());
    for (const auto& in : inputs) edges.push_back(in.to_edge());
    return detail::run_backward(outputs, grad_outputs, retain_graph.value_or(create_graph), create_graph, edges,
                                false, allow_unused);
}

GRAFT_INLINE tensor_list AccumulateGrad::apply(tensor_list&& grads) {
    if (!grads[0].defined()) return {};
    auto& m = detail::ensure_meta(leaf_);
    {
        std::lock_guard lock(m.mutex);
        Tensor g = std::move(grads[0]);
        if (!is_grad_enabled()) {
            // Steal the gradient (as PyTorch does) only when nobody but the engine's copy for
            // post-hooks holds it and it is a plain contiguous tensor; otherwise copy it, so
            // .grad never aliases, say, the gradient a user passed to backward().
            const bool stealable = g.impl_ptr().use_count() <= 2 && !g.is_view() && g.is_contiguous();
            g = stealable ? g : graft::detail::raw::clone(g);
        }
        m.grad = m.grad.defined() ? (is_grad_enabled() ? m.grad + g : ops::add(m.grad, g)) : g;
    }
    for (const auto& h : std::vector(m.post_accumulate_hooks))
        if (!h->removed) h->fn(leaf_);
    return {};
}

}  // namespace autograd

GRAFT_INLINE void Tensor::backward(const Tensor& gradient, bool retain_graph, bool create_graph,
                                   const std::vector<Tensor>& inputs) const {
    std::vector<autograd::grad_input> in(inputs.begin(), inputs.end());
    autograd::backward({*this}, gradient.defined() ? autograd::tensor_list{gradient} : autograd::tensor_list{},
                       retain_graph, create_graph, in);
}

namespace autograd::detail {

GRAFT_INLINE Tensor embed(const Tensor& g, const int_list& sizes, const std::function<Tensor(const Tensor&)>& view) {
    Tensor out = zeros(sizes, g.type());
    {
        no_grad guard;
        graft::detail::raw::copy_(view(out), g);
    }
    return record_view("SliceBackwardBackward0", g, out, [view](const Tensor& gg) { return view(gg); });
}

GRAFT_INLINE Tensor narrow_embed(const Tensor& g, const int_list& sizes, std::int64_t d, std::int64_t start,
                                 std::int64_t length) {
    Tensor out;
    {
        no_grad guard;
        out = graft::detail::raw::narrow_backward(g, sizes, d, start, length);
    }
    return record_view("SliceBackwardBackward0", g, out,
                       [d, start, length](const Tensor& gg) { return gg.narrow(d, start, length); });
}

}  // namespace autograd::detail

GRAFT_INLINE Tensor Tensor::view(int_list sizes) const {
    const int_list in = this->sizes();
    return autograd::detail::record_view_op("ViewBackward0", *this, detail::raw::view(*this, std::move(sizes)),
                                         [in](const Tensor& g) { return g.reshape(in); });
}

GRAFT_INLINE Tensor Tensor::reshape(int_list sizes) const {
    const int_list in = this->sizes();
    Tensor out = detail::raw::reshape(*this, std::move(sizes));
    const char* name = out.shares_storage_with(*this) ? "ViewBackward0" : "UnsafeViewBackward0";
    return autograd::detail::record_view_op(name, *this, out, [in](const Tensor& g) { return g.reshape(in); });
}

namespace detail {

/// The numbers of `sizes`; under capture (the outermost op of user code) reports the list first.
[[nodiscard]] inline int_list reported_sizes(const sym_int_list& sizes) {
    int_list r;
    bool symbolic = false;
    for (const SymInt& s : sizes) {
        r.push_back(s.value());
        symbolic = symbolic || s.is_symbolic();
    }
    if (symbolic && tl_op_observer != nullptr && tl_op_depth == 0) tl_op_observer->on_symbolic_sizes(sizes);
    return r;
}

}  // namespace detail

GRAFT_INLINE Tensor Tensor::view_symint(const sym_int_list& sizes) const { return view(detail::reported_sizes(sizes)); }

GRAFT_INLINE Tensor Tensor::reshape_symint(const sym_int_list& sizes) const {
    return reshape(detail::reported_sizes(sizes));
}

GRAFT_INLINE Tensor Tensor::expand_symint(const sym_int_list& sizes) const {
    return expand(detail::reported_sizes(sizes));
}

GRAFT_INLINE Tensor Tensor::narrow_symint(std::int64_t d, const SymInt& start, const SymInt& length) const {
    const int_list n = detail::reported_sizes({start, length});
    return narrow(d, n[0], n[1]);
}

GRAFT_INLINE Tensor Tensor::transpose(std::int64_t d0, std::int64_t d1) const {
    return autograd::detail::record_view_op("TransposeBackward0", *this, detail::raw::transpose(*this, d0, d1),
                                         [d0, d1](const Tensor& g) { return g.transpose(d0, d1); });
}

GRAFT_INLINE Tensor Tensor::t() const {
    return autograd::detail::record_view_op("TBackward0", *this, detail::raw::t(*this),
                                         [](const Tensor& g) { return g.t(); });
}

GRAFT_INLINE Tensor Tensor::permute(const int_list& dims) const {
    Tensor out = detail::raw::permute(*this, dims);
    int_list inverse(dims.size());
    for (std::size_t i = 0; i < dims.size(); ++i)
        inverse[static_cast<std::size_t>(detail::wrap_dim("permute", dims[i], dim()))] = static_cast<std::int64_t>(i);
    return autograd::detail::record_view_op("PermuteBackward0", *this, out,
                                         [inverse](const Tensor& g) { return g.permute(inverse); });
}

GRAFT_INLINE Tensor Tensor::narrow(std::int64_t d, std::int64_t start, std::int64_t length) const {
    Tensor out = detail::raw::narrow(*this, d, start, length);
    const int_list in = sizes();
    const std::int64_t s = start < 0 ? start + size(d) : start;
    return autograd::detail::record_view_op("SliceBackward0", *this, out, [in, d, s, length](const Tensor& g) {
        return autograd::detail::narrow_embed(g, in, d, s, length);
    });
}

GRAFT_INLINE Tensor Tensor::slice(std::int64_t d, std::int64_t start, std::int64_t end, std::int64_t step) const {
    Tensor out = detail::raw::slice(*this, d, start, end, step);
    const int_list in = sizes();
    return autograd::detail::record_view_op("SliceBackward0", *this, out, [in, d, start, end, step](const Tensor& g) {
        return autograd::detail::embed(g, in,
                                       [d, start, end, step](const Tensor& z) { return z.slice(d, start, end, step); });
    });
}

GRAFT_INLINE Tensor Tensor::select(std::int64_t d, std::int64_t index) const {
    Tensor out = detail::raw::select(*this, d, index);
    const int_list in = sizes();
    return autograd::detail::record_view_op("SelectBackward0", *this, out, [in, d, index](const Tensor& g) {
        return autograd::detail::embed(g, in, [d, index](const Tensor& z) { return z.select(d, index); });
    });
}

GRAFT_INLINE Tensor Tensor::squeeze() const {
    const int_list in = sizes();
    return autograd::detail::record_view_op("SqueezeBackward0", *this, detail::raw::squeeze(*this),
                                         [in](const Tensor& g) { return g.reshape(in); });
}

GRAFT_INLINE Tensor Tensor::squeeze(std::int64_t d) const {
    const int_list in = sizes();
    return autograd::detail::record_view_op("SqueezeBackward1", *this, detail::raw::squeeze(*this, d),
                                         [in](const Tensor& g) { return g.reshape(in); });
}

GRAFT_INLINE Tensor Tensor::unsqueeze(std::int64_t d) const {
    const int_list in = sizes();
    return autograd::detail::record_view_op("UnsqueezeBackward0", *this, detail::raw::unsqueeze(*this, d),
                                         [in](const Tensor& g) { return g.reshape(in); });
}

GRAFT_INLINE Tensor Tensor::expand(const int_list& sizes) const {
    const int_list in = this->sizes();
    return autograd::detail::record_view_op("ExpandBackward0", *this, detail::raw::expand(*this, sizes),
                                         [in](const Tensor& g) { return sum_to_size(g, in); });
}

GRAFT_INLINE Tensor Tensor::broadcast_to(const int_list& sizes) const {
    (void)broadcast_shapes(this->sizes(), sizes);
    return expand(sizes);
}

GRAFT_INLINE Tensor Tensor::as_strided(int_list sizes, int_list strides, std::int64_t offset) const {
    Tensor out = detail::raw::as_strided(*this, std::move(sizes), std::move(strides), offset);
    const autograd::detail::strided_geometry in = autograd::detail::geometry_of(*this);
    const autograd::detail::strided_geometry view = autograd::detail::geometry_of(out);
    if (requires_grad() && autograd::is_grad_enabled())
        detail::check(autograd::detail::is_dense(in) && autograd::detail::lies_within(view, in),
                      "as_strided: differentiable only when the input is dense (no gaps, no overlap) and the view "
                      "stays within its elements; got input sizes ", in.sizes, ", strides ", in.strides,
                      ", offset ", in.offset, " and view sizes ", view.sizes, ", strides ", view.strides,
                      ", offset ", view.offset, " (call it on a contiguous clone)");
    return autograd::detail::record_view_op("AsStridedBackward0", *this, out, [in, view](const Tensor& g) {
        return autograd::detail::as_strided_embed(g, in, view);
    });
}

GRAFT_INLINE Tensor Tensor::contiguous() const {
    if (is_contiguous()) return *this;
    return clone();
}

GRAFT_INLINE Tensor Tensor::clone() const {
    return autograd::detail::record_view("CloneBackward0", *this, detail::raw::clone(*this),
                                         [](const Tensor& g) { return g; });
}

GRAFT_INLINE Tensor Tensor::to(dtype target) const {
    if (target == type()) return *this;
    const dtype source = type();
    const bool differentiable = is_floating_point(target);
    Tensor out = detail::raw::to(*this, target);
    if (!differentiable) return out;
    return autograd::detail::record_view("ToCopyBackward0", *this, out,
                                         [source](const Tensor& g) { return g.to(source); });
}

namespace autograd::detail {

GRAFT_INLINE void commit_inplace(Tensor& self, const Tensor& result, const std::shared_ptr<function_node>& node) {
    graft::detail::raw::copy_(self, result);
    if (node) rebase_history(self, node);
}

GRAFT_INLINE void check_inplace_result(const char* op, const Tensor& self, const Tensor& result) {
    graft::detail::check(result.sizes() == self.sizes(), op, ": output with shape ",
                         self.sizes(), " doesn't match the broadcast shape ",
                         result.sizes());
    graft::detail::check(promote_types(result.type(), self.type()) == self.type(), op, ": result type ",
                         result.type(), " can't be cast to the desired output type ", self.type());
}

GRAFT_INLINE Tensor& inplace_binary(const char* op, binary_kind kind, Tensor& self, const Tensor& other) {
    check_inplace(op, self, requires_grad(other));
    Tensor result;
    switch (kind) {
        case binary_kind::add: result = ops::add(self, other); break;
        case binary_kind::sub: result = ops::sub(self, other); break;
        case binary_kind::mul: result = ops::mul(self, other); break;
        case binary_kind::div: result = ops::div(self, other); break;
        default: graft::detail::fail(graft::detail::concat(op, ": not an in-place op"));
    }
    check_inplace_result(op, self, result);
    auto node = make_node(binary_node_name(kind), self, other);
    if (node && binary_saves_inputs(kind)) {
        // Save only what the needed derivatives read: d/dself of mul_ needs other, d/dother
        // needs the value self had before this write (a clone); div_ needs other for both.
        const bool na = node->needs_input_grad(0), nb = node->needs_input_grad(1);
        node->save(nb ? self.clone() : Tensor{});  // differentiable clone: double backward sees its history
        node->save(na || kind == binary_kind::div ? other : Tensor{});
    }
    if (node) {
        const int_list sa = self.sizes(), sb = other.sizes();
        node->backward = [kind, sa, sb](function_node& n, const tensor_list& g) -> tensor_list {
            const bool na = n.needs_input_grad(0), nb = n.needs_input_grad(1);
            if (!binary_saves_inputs(kind))
                return {na ? sum_to_size(g[0], sa) : Tensor{},
                        nb ? sum_to_size(kind == binary_kind::sub ? -g[0] : g[0], sb) : Tensor{}};
            // div's d/dother reads the output: recomputed from self's saved value (the same
            // division, so the same bits) rather than saved, as self is overwritten.
            const Tensor out = kind == binary_kind::div && nb ? n.saved(0) / n.saved(1) : Tensor{};
            return binary_backward(kind, g[0], n.saved(0), n.saved(1), out, na, nb, sa, sb);
        };
    }
    commit_inplace(self, result.type() == self.type() ? result : graft::detail::raw::to(result, self.type()), node);
    return self;
}

}  // namespace autograd::detail

GRAFT_INLINE Tensor& Tensor::copy_(const Tensor& src) {
    autograd::detail::check_inplace("copy_", *this, autograd::detail::requires_grad(src));
    detail::check(src.defined(), "copy_: source tensor is undefined");
    (void)broadcast_shapes(sizes(), src.sizes());
    auto node = autograd::detail::make_node("CopyBackwards", *this, src);
    if (node) {
        const int_list ss = src.sizes();
        const dtype st = src.type();
        node->backward = [ss, st](autograd::function_node& n, const autograd::tensor_list& g) -> autograd::tensor_list {
            return {n.needs_input_grad(0) ? zeros_like(g[0]) : Tensor{},
                    n.needs_input_grad(1) ? sum_to_size(g[0], ss).to(st) : Tensor{}};
        };
    }
    detail::raw::copy_(*this, src);
    if (node) autograd::detail::rebase_history(*this, node);
    return *this;
}

GRAFT_INLINE Tensor& Tensor::fill_(const scalar& value) {
    autograd::detail::check_inplace("fill_", *this, false);
    auto node = autograd::detail::make_node("FillBackward0", *this);
    if (node)
        node->backward = [](autograd::function_node&, const autograd::tensor_list& g) {
            return autograd::tensor_list{zeros_like(g[0])};
        };
    detail::raw::fill_(*this, value);
    if (node) autograd::detail::rebase_history(*this, node);
    return *this;
}

namespace detail {

/// A number as the other operand of an in-place op on a `self_type` tensor: of self's dtype
/// when the result keeps it, else of the number's own category, so that the in-place op
/// refuses the cast as PyTorch does (`int64.mul_(0.5)`: result type Float can't be cast to Long).
inline Tensor inplace_scalar_operand(const scalar& o, dtype self_type) {
    if (o.is_floating_point() && !is_floating_point(self_type)) return full({}, o, default_float_dtype);
    if (o.kind() == dtype::int64 && self_type == dtype::bool_) return full({}, o, dtype::int64);
    return full({}, o, self_type);
}

}  // namespace detail

GRAFT_INLINE Tensor& Tensor::add_(const scalar& o) { return add_(detail::inplace_scalar_operand(o, type())); }
GRAFT_INLINE Tensor& Tensor::sub_(const scalar& o) { return sub_(detail::inplace_scalar_operand(o, type())); }
GRAFT_INLINE Tensor& Tensor::mul_(const scalar& o) { return mul_(detail::inplace_scalar_operand(o, type())); }
GRAFT_INLINE Tensor& Tensor::div_(const scalar& o) {
    return div_(full({}, o, is_floating_point(type()) ? type() : default_float_dtype));
}

GRAFT_INLINE Tensor& Tensor::neg_() {
    return autograd::detail::inplace_unary("neg_", "NegBackward0", *this, [](const Tensor& x) { return ops::neg(x); },
                                           [](const Tensor& g, const Tensor&) { return -g; },
                                           autograd::detail::inplace_saves::nothing);
}

GRAFT_INLINE Tensor& Tensor::exp_() {
    return autograd::detail::inplace_unary("exp_", "ExpBackward0", *this, [](const Tensor& x) { return ops::exp(x); },
                                           [](const Tensor& g, const Tensor& y) { return g * y; });
}

GRAFT_INLINE Tensor& Tensor::tanh_() {
    return autograd::detail::inplace_unary("tanh_", "TanhBackward0", *this,
                                           [](const Tensor& x) { return ops::tanh(x); },
                                           [](const Tensor& g, const Tensor& y) { return g * (1.0 - y * y); });
}

GRAFT_INLINE Tensor& Tensor::sigmoid_() {
    return autograd::detail::inplace_unary("sigmoid_", "SigmoidBackward0", *this,
                                           [](const Tensor& x) { return ops::sigmoid(x); },
                                           [](const Tensor& g, const Tensor& y) { return g * y * (1.0 - y); });
}

GRAFT_INLINE Tensor& Tensor::relu_() {
    return autograd::detail::inplace_unary("relu_", "ReluBackward0", *this,
                                           [](const Tensor& x) { return ops::relu(x); },
                                           [](const Tensor& g, const Tensor& y) { return where(y > 0.0, g, zeros_like(g)); });
}

GRAFT_INLINE Tensor& Tensor::sin_() {
    // The derivative needs the overwritten input: a copy is saved before the write (as PyTorch).
    return autograd::detail::inplace_unary("sin_", "SinBackward0", *this, [](const Tensor& x) { return ops::sin(x); },
                                           [](const Tensor& g, const Tensor& x) { return g * graft::cos(x); },
                                           autograd::detail::inplace_saves::input);
}

GRAFT_INLINE Tensor& Tensor::clamp_(const std::optional<scalar>& min, const std::optional<scalar>& max) {
    // The mask of the gradient needs the overwritten input: a copy is saved before the write.
    const char* name = min && max ? "ClampBackward1" : (min ? "ClampMinBackward0" : "ClampMaxBackward0");
    return autograd::detail::inplace_unary(
        "clamp_", name, *this, [&](const Tensor& x) { return ops::clamp(x, min, max); },
        [min, max](const Tensor& g, const Tensor& x) { return autograd::detail::clamp_backward(g, x, min, max); },
        autograd::detail::inplace_saves::input);
}

GRAFT_INLINE Tensor& Tensor::clamp_min_(const scalar& min) { return clamp_(min, std::nullopt); }

GRAFT_INLINE Tensor& Tensor::clamp_max_(const scalar& max) { return clamp_(std::nullopt, max); }

GRAFT_INLINE Tensor& Tensor::square_() {
    return autograd::detail::inplace_unary("square_", "PowBackward0", *this,
                                           [](const Tensor& x) { return ops::mul(x, x); },
                                           [](const Tensor& g, const Tensor& x) { return g * x * 2.0; },
                                           autograd::detail::inplace_saves::input);
}

}  // namespace graft

namespace graft::autograd::detail {

GRAFT_INLINE Tensor accumulate(const Tensor& a, const Tensor& b) {
    if (!a.defined()) return b;
    if (!b.defined()) return a;
    return a + b;
}

}  // namespace graft::autograd::detail
