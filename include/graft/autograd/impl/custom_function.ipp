#pragma once
// Definitions for graft/autograd/custom_function.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/autograd/custom_function.hpp"

#include "graft/autograd/view_tracking.hpp"
#include "graft/core/factories.hpp"

namespace graft::autograd {

namespace detail {
[[nodiscard]] inline bool cf_same_tensor(const Tensor& a, const Tensor& b) noexcept {
    return a.defined() && b.defined() && a.impl_ptr() == b.impl_ptr();
}
[[nodiscard]] inline bool cf_contains_tensor(const tensor_list& list, const Tensor& t) noexcept {
    for (const auto& x : list)
        if (cf_same_tensor(x, t)) return true;
    return false;
}

/// The grad_fn of gradients a once_differentiable Function computed with create_graph: a
/// second backward that reaches it throws (PyTorch's DelayedError). Its edges are the
/// Function's, so that autograd::grad(..., inputs) sees it on the path to those inputs and
/// runs it, instead of reporting the inputs as unused.
class once_differentiable_error final : public Node {
public:
    explicit once_differentiable_error(std::string function) : Node("DelayedError"), function_(std::move(function)) {}

protected:
    tensor_list apply(tensor_list&&) override {
        graft::detail::fail(graft::detail::concat(
            function_, ": trying to differentiate twice a function that was marked with once_differentiable (its "
            "backward runs without recording, so it has no derivative); drop once_differentiable and write "
            "backward with graft's differentiable ops to allow double backward"));
    }

private:
    std::string function_;
};
}  // namespace detail

GRAFT_INLINE void FunctionCtx::save_for_backward(tensor_list tensors) {
    graft::detail::check(in_forward_, name(), ": save_for_backward can only be called from forward");
    to_save_ = std::move(tensors);
    has_saved_ = true;
}

GRAFT_INLINE tensor_list FunctionCtx::get_saved_variables() {
    if (in_forward_) return to_save_;
    tensor_list out;
    out.reserve(saved_.size());
    auto self = shared_from_this();
    for (const auto& s : saved_) out.push_back(s.unpack(self));
    return out;
}

GRAFT_INLINE void FunctionCtx::mark_dirty(const tensor_list& tensors) {
    graft::detail::check(in_forward_, name(), ": mark_dirty can only be called from forward");
    for (const auto& t : tensors) {
        graft::detail::check(t.defined(), name(), ": mark_dirty got an undefined tensor");
        dirty_.push_back(t);
    }
}

GRAFT_INLINE void FunctionCtx::mark_non_differentiable(const tensor_list& tensors) {
    graft::detail::check(in_forward_, name(), ": mark_non_differentiable can only be called from forward");
    for (const auto& t : tensors) {
        graft::detail::check(t.defined(), name(), ": mark_non_differentiable got an undefined tensor");
        non_differentiable_.push_back(t);
    }
}

GRAFT_INLINE bool FunctionCtx::needs_input_grad(std::size_t i) const {
    if (i >= needs_input_grad_.size()) [[unlikely]]
        graft::detail::fail(graft::detail::concat(name(), ": needs_input_grad(", i, ") but forward has ",
                                                  needs_input_grad_.size(), " arguments"));
    return needs_input_grad_[i];
}

GRAFT_INLINE void FunctionCtx::release_variables() {
    for (auto& s : saved_) s.release();
}

GRAFT_INLINE std::vector<std::string> FunctionCtx::describe_saved() const {
    std::vector<std::string> out;
    for (const auto& s : saved_)
        if (s.defined()) out.push_back(graft::detail::concat(graft::name(s.type()), s.sizes()));
    return out;
}

GRAFT_INLINE void FunctionCtx::prepare_grads(tensor_list& grads) const {
    grads.resize(num_outputs());
    if (!materialize_grads_) return;
    for (std::size_t i = 0; i < grads.size(); ++i)
        if (!grads[i].defined()) grads[i] = zeros(output_metadata(i).sizes, output_metadata(i).type);
}

GRAFT_INLINE tensor_list FunctionCtx::finish_backward(tensor_list&& grads) const {
    const std::size_t n = slot_of_arg_.size();
    graft::detail::check(grads.size() == n, "function ", name(), " returned an incorrect number of gradients "
                         "(expected ", n, ", got ", grads.size(), "): backward returns one gradient per forward "
                         "argument, an undefined Tensor for arguments that are not tensors or need none");
    tensor_list out(next_functions().size());
    for (std::size_t i = 0; i < n; ++i) {
        if (slot_of_arg_[i] < 0) {
            graft::detail::check(!grads[i].defined(), "function ", name(), " returned a gradient different than "
                                 "an undefined Tensor at position ", i + 1, ", but the corresponding forward "
                                 "input was not a Tensor");
            continue;
        }
        // A gradient for an input that needs none is dropped, as PyTorch does.
        const auto slot = static_cast<std::size_t>(slot_of_arg_[i]);
        if (next_functions()[slot].valid()) out[slot] = std::move(grads[i]);
    }
    return out;
}

GRAFT_INLINE void FunctionCtx::refuse_double_backward(tensor_list& grads) const {
    auto err = std::make_shared<detail::once_differentiable_error>(name());
    for (const auto& e : next_functions())
        if (e.valid()) err->add_next_edge(e);
    for (auto& g : grads) {
        if (!g.defined()) continue;
        // An alias: backward may have returned a tensor that lives on elsewhere (its incoming
        // gradient, a saved tensor), whose own history must not change.
        Tensor out = graft::detail::raw::alias(g);
        auto& m = detail::ensure_meta(out);
        m.output_nr = err->add_output(out);
        m.grad_fn = err;
        m.requires_grad = false;
        g = std::move(out);
    }
}

namespace detail {

GRAFT_INLINE void custom_function_access::check_not_capturing(const char* node_name) {
    graft::detail::check(graft::detail::tl_op_observer == nullptr, "autograd::Function::apply (",
                         node_name, "): custom autograd Functions can't be captured by capture::trace, "
                         "capture::aot or jit::script (a user-written backward has no graph form); call the "
                         "function eagerly, or write it with graft's differentiable ops");
}

GRAFT_INLINE bool custom_function_access::begin_forward(FunctionCtx& ctx, const char* function_name,
                                                        const tensor_list& inputs,
                                                        const std::vector<bool>& is_tensor_arg) {
    const bool grad_on = is_grad_enabled();
    ctx.function_name_ = function_name;
    bool executable = false;
    ctx.slot_of_arg_.assign(is_tensor_arg.size(), -1);
    ctx.needs_input_grad_.assign(is_tensor_arg.size(), false);
    std::size_t k = 0;
    for (std::size_t i = 0; i < is_tensor_arg.size(); ++i) {
        if (!is_tensor_arg[i]) continue;
        const Tensor& t = inputs[k];
        // needs_input_grad is the input's requires_grad, as in Python (python_function.cpp's
        // unpack_input), also under no_grad; only the edges depend on the grad mode.
        const bool wants = requires_grad(t);
        const bool needs = grad_on && wants;
        ctx.slot_of_arg_[i] = static_cast<int>(k);
        ctx.needs_input_grad_[i] = wants;
        ctx.add_next_edge(needs ? gradient_edge(t) : Edge{});
        executable = executable || needs;
        ++k;
    }
    ctx.in_forward_ = true;
    return executable;
}

GRAFT_INLINE void custom_function_access::abort_forward(FunctionCtx& ctx) noexcept {
    ctx.in_forward_ = false;
    ctx.to_save_.clear();
    ctx.dirty_.clear();
    ctx.non_differentiable_.clear();
}

GRAFT_INLINE void custom_function_access::finish_forward(const std::shared_ptr<FunctionCtx>& ctx,
                                                         const tensor_list& inputs, tensor_list& outputs,
                                                         bool executable) {
    struct reset_on_exit {
        FunctionCtx& c;
        ~reset_on_exit() { abort_forward(c); }
    } reset{*ctx};
    const std::string fn = ctx->name();
    graft::detail::check(!outputs.empty(), fn, ": forward returned no tensors");
    for (std::size_t i = 0; i < outputs.size(); ++i)
        graft::detail::check(outputs[i].defined(), fn, ": forward returned an undefined tensor as output ", i);
    for (const auto& d : ctx->dirty_) {
        graft::detail::check(cf_contains_tensor(inputs, d), fn, ": a tensor passed to mark_dirty is not an input "
                             "of forward (only inputs modified in place may be marked dirty)");
        graft::detail::check(cf_contains_tensor(outputs, d), fn, ": Some elements marked as dirty during the forward "
                             "method were not returned as output. The inputs that are modified inplace must all "
                             "be outputs of the Function.");
    }
    for (const auto& t : ctx->non_differentiable_)
        graft::detail::check(cf_contains_tensor(outputs, t), fn, ": mark_non_differentiable got a tensor that "
                             "forward did not return");
    if (executable) {
        for (const auto& d : ctx->dirty_) {
            graft::detail::check(tracked_view(d) == nullptr, fn, ": mark_dirty on a view is not implemented "
                                 "(graft would have to rewrite the base's history); modify the base instead");
            const auto* m = meta(d);
            graft::detail::check(!(m && m->requires_grad && !m->grad_fn), fn,
                                 ": a leaf Variable that requires grad has been used in an in-place operation.");
        }
    }
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        Tensor& out = outputs[i];
        const bool dirty = cf_contains_tensor(ctx->dirty_, out);
        const bool is_input = cf_contains_tensor(inputs, out);
        const bool differentiable = executable && !cf_contains_tensor(ctx->non_differentiable_, out) &&
                                    is_floating_point(out.type());
        if (is_input && !dirty) {
            // An input returned unchanged: a new tensor of the same memory (PyTorch: x.view_as(x)),
            // which gets the history. One that requires grad but gets no history comes back
            // detached (PyTorch: x.detach()), so it is no view.
            const Tensor input = out;
            out = graft::detail::raw::alias(input);
            if (differentiable || !requires_grad(input)) track_view(input, out);
        } else if (executable && !dirty && meta(out) != nullptr && (meta(out)->grad_fn || meta(out)->requires_grad)) {
            // A tensor from elsewhere (say a captured parameter): don't rewrite its history.
            const Tensor other = out;
            out = graft::detail::raw::alias(other);
            if (differentiable) track_view(other, out);
        }
        if (!dirty) {
            // Outputs that are views (returned inputs, views made in forward) can't be modified in
            // place with grad mode on, nor used after their base was: rebasing their history
            // would bypass this backward (PyTorch's CreationMeta::IN_CUSTOM_FUNCTION).
            if (view_meta* vm = tracked_view(out)) {
                vm->creation = creation_meta::in_custom_function;
                vm->custom_function = ctx->function_name_;
            }
        }
        if (!executable) continue;
        for (std::size_t j = 0; j < i; ++j)
            graft::detail::check(!cf_same_tensor(outputs[j], out), fn, ": forward returned the same tensor as outputs ",
                                 j, " and ", i, "; return a clone or an alias for one of them");
        const std::uint32_t nr = ctx->add_output(out);
        if (differentiable) {
            auto& m = ensure_meta(out);
            m.grad_fn = ctx;
            m.output_nr = nr;
            m.requires_grad = false;
        } else if (dirty) {
            // A non-differentiable dirty input loses its history, as its values changed.
            auto& m = ensure_meta(out);
            m.grad_fn = nullptr;
            m.requires_grad = false;
        }
    }
    if (!executable) return;
    ctx->saved_.reserve(ctx->to_save_.size());
    for (const auto& t : ctx->to_save_) {
        bool is_output = false;
        for (const auto& o : outputs) is_output = is_output || cf_same_tensor(o, t);
        ctx->saved_.emplace_back(t, is_output && meta(t) != nullptr && meta(t)->grad_fn == ctx);
    }
}

GRAFT_INLINE std::string short_type_name(std::string_view pretty) {
    // gcc: "... [with T = ns::Foo; ...]", clang: "... [T = ns::Foo]", msvc: "...<ns::Foo>(void)".
    std::string_view s = pretty;
    if (auto p = s.find("T = "); p != std::string_view::npos) {
        s.remove_prefix(p + 4);
        int depth = 0;
        std::size_t end = 0;
        for (; end < s.size(); ++end) {
            const char c = s[end];
            if (c == '<' || c == '(' || c == '[') ++depth;
            else if ((c == '>' || c == ')') && depth > 0) --depth;
            else if ((c == ';' || c == ']') && depth == 0) break;
            else if (c == ']') --depth;
        }
        s = s.substr(0, end);
    } else if (auto b = s.find("pretty_name_of<"); b != std::string_view::npos) {
        s.remove_prefix(b + 15);
        s = s.substr(0, s.rfind(">("));
        for (std::string_view kw : {"struct ", "class "})
            if (s.starts_with(kw)) s.remove_prefix(kw.size());
    }
    // Strip namespaces and enclosing classes (outside template arguments).
    int depth = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i + 1 < s.size(); ++i) {
        if (s[i] == '<' || s[i] == '(') ++depth;
        else if ((s[i] == '>' || s[i] == ')') && depth > 0) --depth;
        else if (depth == 0 && s[i] == ':' && s[i + 1] == ':') start = i + 2;
    }
    s.remove_prefix(start);
    return s.empty() ? std::string("Function") : std::string(s);
}

}  // namespace detail
}  // namespace graft::autograd
