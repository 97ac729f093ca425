#pragma once
// Definitions of Tensor's autograd, view, copy, in-place and math methods, and
// the public entry points autograd::backward, autograd::grad, GradientEdge.
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graft/autograd/engine.hpp"
#include "graft/autograd/functions.hpp"
#include "graft/autograd/join_split.hpp"
#include "graft/autograd/view_tracking.hpp"

namespace graft {

// ---------------------------------------------------------------- autograd state

inline bool Tensor::requires_grad() const { return autograd::detail::requires_grad(*this); }

inline bool Tensor::is_leaf() const {
    autograd::detail::refresh_if_view(*this);
    const auto* m = autograd::detail::meta(*this);
    return !m || !m->grad_fn;
}

inline Tensor Tensor::grad() const {
    const auto* m = autograd::detail::meta(*this);
    return m ? m->grad : Tensor{};
}

inline std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
    autograd::detail::refresh_if_view(*this);  // a view's history is regenerated after in-place changes
    const auto* m = autograd::detail::meta(*this);
    return m ? m->grad_fn : nullptr;
}

inline std::uint32_t Tensor::output_nr() const {
    autograd::detail::refresh_if_view(*this);
    const auto* m = autograd::detail::meta(*this);
    return m ? m->output_nr : 0;
}

inline bool Tensor::retains_grad() const {
    const auto* m = autograd::detail::meta(*this);
    return m && m->retains_grad;
}

namespace autograd {

/// Where the gradient of a tensor flows in the graph: (node, input slot).
struct GradientEdge {
    std::shared_ptr<Node> node;
    std::uint32_t output_nr = 0;
};

/// The gradient edge of `t`: its grad_fn, or its AccumulateGrad for a leaf.
[[nodiscard]] GRAFT_INLINE GradientEdge get_gradient_edge(const Tensor& t);

/// A differentiation target: a tensor or a gradient edge.
struct grad_input {
    grad_input(const Tensor& t) : tensor(t) {}  // NOLINT: implicit by design
    grad_input(GradientEdge e) : edge(std::move(e)) {}  // NOLINT
    Tensor tensor;
    GradientEdge edge;
    [[nodiscard]] Edge to_edge() const;
};

/// Computes the sum of gradients of `outputs` w.r.t. the leaves (accumulated into .grad),
/// or only w.r.t. `inputs` when given, as torch.autograd.backward.
GRAFT_INLINE void backward(const tensor_list& outputs, const tensor_list& grad_outputs = {}, bool retain_graph = false,
                           bool create_graph = false, const std::vector<grad_input>& inputs = {});

/// Returns the gradients of `outputs` w.r.t. `inputs` without touching .grad (torch.autograd.grad).
[[nodiscard]] GRAFT_INLINE tensor_list grad(const tensor_list& outputs, const std::vector<grad_input>& inputs,
                                            const tensor_list& grad_outputs = {}, std::optional<bool> retain_graph = {},
                                            bool create_graph = false, bool allow_unused = false);

}  // namespace autograd

// ---------------------------------------------------------------- views

namespace autograd::detail {

/// Records a view op whose gradient is `bwd(grad)`.
template <class Backward>
Tensor record_view(const char* name, const Tensor& self, Tensor out, Backward bwd) {
    auto node = make_node(name, self);
    if (!node) return out;
    node->backward = [bwd](function_node&, const tensor_list& g) -> tensor_list { return {bwd(g[0])}; };
    set_history(out, node);
    return out;
}

/// record_view for the view ops: also marks `out` as a differentiable view of self's base.
template <class Backward>
Tensor record_view_op(const char* name, const Tensor& self, Tensor out, Backward bwd) {
    track_view(self, out);
    return record_view(name, self, std::move(out), std::move(bwd));
}

/// zeros of `sizes` with `view(result)` set to g: the gradient of narrow/slice/select.
/// Differentiable in g (its derivative is the same view of the incoming gradient).
GRAFT_INLINE Tensor embed(const Tensor& g, const int_list& sizes, const std::function<Tensor(const Tensor&)>& view);
/// narrow's backward (raw::narrow_backward), differentiable: its own backward narrows again.
GRAFT_INLINE Tensor narrow_embed(const Tensor& g, const int_list& sizes, std::int64_t d, std::int64_t start,
                                 std::int64_t length);

}  // namespace autograd::detail

// ---------------------------------------------------------------- copies

/// torch.clone: a copy that stays in the graph (CloneBackward0).
[[nodiscard]] inline Tensor clone(const Tensor& t) { return t.clone(); }

// ---------------------------------------------------------------- in-place

namespace autograd::detail {

/// Writes `result` into `self`, and, when recording, makes `node` self's new history
/// (its edges already point at self's previous history); for a view, the base's
/// history is rebased onto CopySlices (view_tracking.hpp).
GRAFT_INLINE void commit_inplace(Tensor& self, const Tensor& result, const std::shared_ptr<function_node>& node);

GRAFT_INLINE void check_inplace_result(const char* op, const Tensor& self, const Tensor& result);

GRAFT_INLINE Tensor& inplace_binary(const char* op, binary_kind kind, Tensor& self, const Tensor& other);

/// What an in-place unary op saves for its derivative.
enum class inplace_saves { nothing, result, input };

/// An in-place unary op; `bwd(grad, saved)` gives the gradient, where `saved` is the
/// result (exp_, tanh_, ...), a copy of the overwritten input (sin_) or nothing (neg_).
template <class Raw, class Backward>
Tensor& inplace_unary(const char* op, const char* node_name, Tensor& self, Raw raw, Backward bwd,
                      inplace_saves saves = inplace_saves::result) {
    check_inplace(op, self, false);
    Tensor result = raw(self);
    check_inplace_result(op, self, result);
    auto node = make_node(node_name, self);
    if (node && saves == inplace_saves::input) node->save(self.clone());  // before the write, with history
    commit_inplace(self, result, node);
    if (node) {
        if (saves == inplace_saves::result) node->save(self, true);  // the new value
        node->backward = [bwd](function_node& n, const tensor_list& g) -> tensor_list {
            return {bwd(g[0], n.saved_variables().empty() ? Tensor{} : n.saved(0))};
        };
    }
    return self;
}

}  // namespace autograd::detail

inline Tensor& Tensor::add_(const Tensor& o) { return autograd::detail::inplace_binary("add_", autograd::detail::binary_kind::add, *this, o); }
inline Tensor& Tensor::sub_(const Tensor& o) { return autograd::detail::inplace_binary("sub_", autograd::detail::binary_kind::sub, *this, o); }
inline Tensor& Tensor::mul_(const Tensor& o) { return autograd::detail::inplace_binary("mul_", autograd::detail::binary_kind::mul, *this, o); }
inline Tensor& Tensor::div_(const Tensor& o) { return autograd::detail::inplace_binary("div_", autograd::detail::binary_kind::div, *this, o); }

// ---------------------------------------------------------------- math methods

inline Tensor Tensor::sum() const { return graft::sum(*this); }
inline Tensor Tensor::sum(const int_list& dims, bool keepdim) const { return graft::sum(*this, dims, keepdim); }
inline Tensor Tensor::mean() const { return graft::mean(*this); }
inline Tensor Tensor::mean(const int_list& dims, bool keepdim) const { return graft::mean(*this, dims, keepdim); }
inline Tensor Tensor::amax(const int_list& dims, bool keepdim) const { return graft::amax(*this, dims, keepdim); }
inline Tensor Tensor::max() const { return graft::amax(*this); }
inline Tensor Tensor::min() const { return graft::amin(*this); }
inline Tensor Tensor::amin(const int_list& dims, bool keepdim) const { return graft::amin(*this, dims, keepdim); }
inline Tensor Tensor::exp() const { return graft::exp(*this); }
inline Tensor Tensor::log() const { return graft::log(*this); }
inline Tensor Tensor::sqrt() const { return graft::sqrt(*this); }
inline Tensor Tensor::tanh() const { return graft::tanh(*this); }
inline Tensor Tensor::sigmoid() const { return graft::sigmoid(*this); }
inline Tensor Tensor::relu() const { return graft::relu(*this); }
inline Tensor Tensor::abs() const { return graft::abs(*this); }
inline Tensor Tensor::neg() const { return graft::neg(*this); }
template <class F>
    requires(std::is_invocable_v<F&, const Tensor&> && std::is_void_v<std::invoke_result_t<F&, const Tensor&>>)
autograd::hook_handle Tensor::register_hook(F hook) const {
    return register_hook(std::function<Tensor(const Tensor&)>([h = std::move(hook)](const Tensor& g) mutable {
        h(g);
        return Tensor{};
    }));
}

template <class F>
    requires std::is_invocable_v<F&, Tensor&>
autograd::hook_handle Tensor::register_post_accumulate_grad_hook(F hook) const {
    static_assert(std::is_void_v<std::invoke_result_t<F&, Tensor&>>,
                  "register_post_accumulate_grad_hook: the hook must return void (a returned value would be "
                  "ignored, as PyTorch ignores it)");
    return register_post_accumulate_grad_hook_erased([h = std::move(hook)](const Tensor& t) mutable {
        Tensor p = t;  // the same tensor (a handle): in-place ops on p update it
        h(p);
    });
}

inline Tensor Tensor::rsqrt() const { return graft::rsqrt(*this); }
inline Tensor Tensor::sin() const { return graft::sin(*this); }
inline Tensor Tensor::cos() const { return graft::cos(*this); }
inline Tensor Tensor::log1p() const { return graft::log1p(*this); }
inline Tensor Tensor::expm1() const { return graft::expm1(*this); }
inline Tensor Tensor::sign() const { return graft::sign(*this); }
inline Tensor Tensor::square() const { return graft::square(*this); }
inline Tensor Tensor::clamp(const std::optional<scalar>& min, const std::optional<scalar>& max) const {
    return graft::clamp(*this, min, max);
}
inline Tensor Tensor::clamp(const Tensor& min, const Tensor& max) const { return graft::clamp(*this, min, max); }
inline Tensor Tensor::clamp_min(const scalar& min) const { return graft::clamp_min(*this, min); }
inline Tensor Tensor::clamp_max(const scalar& max) const { return graft::clamp_max(*this, max); }
namespace autograd::detail {
[[nodiscard]] inline bool is_one(const scalar& s) { return s.to_double() == 1.0; }
/// alpha * o, integral when both are (so int64 tensors stay int64).
[[nodiscard]] inline scalar scaled(const scalar& o, const scalar& alpha) {
    if (!o.is_floating_point() && !alpha.is_floating_point())
        return scalar(static_cast<std::int64_t>(static_cast<std::uint64_t>(o.to_int64()) *
                                                static_cast<std::uint64_t>(alpha.to_int64())));
    return scalar(o.to_double() * alpha.to_double());
}
}  // namespace autograd::detail
inline Tensor Tensor::add(const Tensor& o, const scalar& alpha) const {
    return autograd::detail::is_one(alpha) ? graft::add(*this, o) : graft::add(*this, graft::mul(o, alpha));
}
inline Tensor Tensor::add(const scalar& o, const scalar& alpha) const {
    return graft::add(*this, autograd::detail::is_one(alpha) ? o : autograd::detail::scaled(o, alpha));
}
inline Tensor Tensor::sub(const Tensor& o, const scalar& alpha) const {
    return autograd::detail::is_one(alpha) ? graft::sub(*this, o) : graft::sub(*this, graft::mul(o, alpha));
}
inline Tensor Tensor::sub(const scalar& o, const scalar& alpha) const {
    return graft::sub(*this, autograd::detail::is_one(alpha) ? o : autograd::detail::scaled(o, alpha));
}
inline Tensor Tensor::mul(const Tensor& o) const { return graft::mul(*this, o); }
inline Tensor Tensor::mul(const scalar& o) const { return graft::mul(*this, o); }
inline Tensor Tensor::div(const Tensor& o) const { return graft::div(*this, o); }
inline Tensor Tensor::div(const scalar& o) const { return graft::div(*this, o); }
inline Tensor Tensor::maximum(const Tensor& o) const { return graft::maximum(*this, o); }
inline Tensor Tensor::minimum(const Tensor& o) const { return graft::minimum(*this, o); }
inline Tensor Tensor::eq(const Tensor& o) const { return graft::eq(*this, o); }
inline Tensor Tensor::eq(const scalar& o) const { return graft::eq(*this, o); }
inline Tensor Tensor::ne(const Tensor& o) const { return graft::ne(*this, o); }
inline Tensor Tensor::ne(const scalar& o) const { return graft::ne(*this, o); }
inline Tensor Tensor::lt(const Tensor& o) const { return graft::lt(*this, o); }
inline Tensor Tensor::lt(const scalar& o) const { return graft::lt(*this, o); }
inline Tensor Tensor::le(const Tensor& o) const { return graft::le(*this, o); }
inline Tensor Tensor::le(const scalar& o) const { return graft::le(*this, o); }
inline Tensor Tensor::gt(const Tensor& o) const { return graft::gt(*this, o); }
inline Tensor Tensor::gt(const scalar& o) const { return graft::gt(*this, o); }
inline Tensor Tensor::ge(const Tensor& o) const { return graft::ge(*this, o); }
inline Tensor Tensor::ge(const scalar& o) const { return graft::ge(*this, o); }
inline Tensor Tensor::pow(const Tensor& exponent) const { return graft::pow(*this, exponent); }
inline Tensor Tensor::pow(const scalar& exponent) const { return graft::pow(*this, exponent); }
inline Tensor Tensor::matmul(const Tensor& other) const { return graft::matmul(*this, other); }
inline Tensor Tensor::softmax(std::int64_t dim) const { return graft::softmax(*this, dim); }
inline Tensor Tensor::log_softmax(std::int64_t dim) const { return graft::log_softmax(*this, dim); }

}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/autograd/impl/tensor_methods.ipp"
#endif
