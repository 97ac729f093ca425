#pragma once
// The differentiable ops: each runs the raw forward from graft::ops and, when a
// gradient is needed, records a node whose derivative is written with these
// same ops (so backward is itself differentiable: double backward works).
#include <optional>
#include <string_view>
#include <utility>

#include "graft/autograd/engine.hpp"
#include "graft/ops/clamp.hpp"
#include "graft/ops/elementwise.hpp"
#include "graft/ops/linalg.hpp"
#include "graft/ops/reduce.hpp"
#include "graft/ops/softmax.hpp"
#include "graft/ops/table.hpp"

namespace graft {

// Forward declarations: derivatives below use the differentiable functions.
#define GRAFT_DETAIL_DECLARE_BINARY(spec, fn)         \
    spec Tensor fn(const Tensor& a, const Tensor& b); \
    spec Tensor fn(const Tensor& a, const scalar& b); \
    spec Tensor fn(const scalar& a, const Tensor& b);
GRAFT_DETAIL_DECLARE_BINARY(GRAFT_INLINE, add)
GRAFT_DETAIL_DECLARE_BINARY(GRAFT_INLINE, sub)
GRAFT_DETAIL_DECLARE_BINARY(GRAFT_INLINE, mul)
GRAFT_DETAIL_DECLARE_BINARY(GRAFT_INLINE, div)
GRAFT_DETAIL_DECLARE_BINARY(GRAFT_INLINE, pow)
GRAFT_DETAIL_DECLARE_BINARY(inline, operator+)
GRAFT_DETAIL_DECLARE_BINARY(inline, operator-)
GRAFT_DETAIL_DECLARE_BINARY(inline, operator*)
GRAFT_DETAIL_DECLARE_BINARY(inline, operator/)
inline Tensor operator-(const Tensor& a);
GRAFT_INLINE Tensor sum(const Tensor& t, const int_list& dims, bool keepdim);
GRAFT_INLINE Tensor sum_to_size(const Tensor& g, const int_list& sizes);
GRAFT_INLINE Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
GRAFT_INLINE Tensor exp(const Tensor& a);
GRAFT_INLINE Tensor log(const Tensor& a);
GRAFT_INLINE Tensor tanh(const Tensor& a);
GRAFT_INLINE Tensor matmul(const Tensor& a, const Tensor& b);

namespace autograd::detail {

/// A node for these inputs, or null when grad mode is off or none needs a gradient.
template <class... Ts>
[[nodiscard]] std::shared_ptr<function_node> make_node(const char* name, const Ts&... inputs) {
    if (!is_grad_enabled() || !(requires_grad(inputs) || ...)) return nullptr;
    auto node = std::allocate_shared<function_node>(graft::detail::pool_allocator<function_node>{}, name);
    (node->add_next_edge(gradient_edge(inputs)), ...);
    return node;
}

/// Makes `out` the output of `node` (its grad_fn).
GRAFT_INLINE void set_history(const Tensor& out, const std::shared_ptr<Node>& node);
/// The same, handing over the caller's reference (no reference-count update).
GRAFT_INLINE void set_history(const Tensor& out, std::shared_ptr<Node>&& node);

/// The error PyTorch raises when a view made in no_grad mode is (or, with `indirect`,
/// its base or a sibling view was) modified in place with grad mode enabled.
GRAFT_INLINE void handle_view_on_rebase(const view_meta& vm, const Tensor& self, const char* op, bool indirect);

/// Checks that a view's history can be expressed from its base with as_strided.
GRAFT_INLINE void check_rebase_supported(const char* op, const Tensor& view, const Tensor& base);

/// PyTorch's check_inplace: run by every in-place op before it writes `self`.
GRAFT_INLINE void check_inplace(const char* op, const Tensor& self, bool other_requires_grad);

/// dims that were reduced away, restored as size-1 dims (for expanding gradients back).
[[nodiscard]] GRAFT_INLINE Tensor unsqueeze_reduced(const Tensor& g, const int_list& in_sizes, const int_list& dims,
                                                    bool keepdim);

}  // namespace autograd::detail

/// Sums `g` down to `sizes` over broadcast dimensions (the gradient of expand).
GRAFT_INLINE Tensor sum_to_size(const Tensor& g, const int_list& sizes);

// ---------------------------------------------------------------- binary ops

namespace autograd::detail {

enum class binary_kind { add, sub, mul, div, pow, maximum, minimum };

/// Calls f with the op-table definition of `k`.
template <class F>
decltype(auto) visit_binary(binary_kind k, F&& f) {
    switch (k) {
        case binary_kind::add: return f(ops::def::add_op{});
        case binary_kind::sub: return f(ops::def::sub_op{});
        case binary_kind::mul: return f(ops::def::mul_op{});
        case binary_kind::div: return f(ops::def::div_op{});
        case binary_kind::pow: return f(ops::def::pow_op{});
        case binary_kind::maximum: return f(ops::def::maximum_op{});
        case binary_kind::minimum: return f(ops::def::minimum_op{});
    }
    return f(ops::def::add_op{});
}

/// A gradient of the output's shape summed back to an input's shape and dtype.
[[nodiscard]] GRAFT_INLINE Tensor reduce_grad(Tensor g, const int_list& sizes, dtype type);

/// Gradients of a binary op from the op table; a or b may be a 0-dim stand-in for a number.
/// An operand the needed derivatives don't read may be undefined (mul and div save only
/// what they need) when the input sizes are given.
[[nodiscard]] GRAFT_INLINE tensor_list binary_backward(binary_kind kind, const Tensor& g, const Tensor& a,
                                                       const Tensor& b, const Tensor& out, bool need_a, bool need_b,
                                                       const int_list& a_sizes = {}, const int_list& b_sizes = {});

[[nodiscard]] inline const char* binary_node_name(binary_kind k) {
    return visit_binary(k, [](auto op) { return decltype(op)::node_name; });
}

[[nodiscard]] inline bool binary_saves_inputs(binary_kind k) { return k != binary_kind::add && k != binary_kind::sub; }

/// Records a tensor-tensor binary op: saves only what the needed derivatives read.
template <class Op>
Tensor record_binary_op(const Tensor& a, const Tensor& b, Tensor out) {
    auto node = make_node(Op::node_name, a, b);
    if (!node) return out;
    const bool na = node->needs_input_grad(0), nb = node->needs_input_grad(1);
    const auto reads = [&](unsigned bit) {
        return (na && ops::grad_reads<Op>(0, bit)) || (nb && ops::grad_reads<Op>(1, bit));
    };
    function_node& recorded = *node;  // `out` owns the node from set_history on
    recorded.save(reads(ops::reads_input0) ? a : Tensor{});
    recorded.save(reads(ops::reads_input1) ? b : Tensor{});
    set_history(out, std::move(node));
    recorded.save(reads(ops::reads_output) ? out : Tensor{}, true);
    recorded.backward = [sa = a.sizes(), sb = b.sizes(), ta = a.type(), tb = b.type()](
                            function_node& n, const tensor_list& g, tensor_list& grad_inputs) {
        const Tensor x = n.saved(0), y = n.saved(1), r = n.saved(2);
        grad_inputs.push_back(n.needs_input_grad(0) ? reduce_grad(Op::grad_0(g[0], x, y, r), sa, ta) : Tensor{});
        grad_inputs.push_back(n.needs_input_grad(1) ? reduce_grad(Op::grad_1(g[0], x, y, r), sb, tb) : Tensor{});
    };
    return out;
}

GRAFT_INLINE Tensor record_binary(binary_kind kind, const Tensor& a, const Tensor& b, Tensor out);

/// A number operand: the node has one edge, for the tensor. add/sub/mul/div read the
/// number directly; the other ops see it as a 0-dim tensor of the tensor's dtype.
template <class Op>
Tensor record_binary_scalar_op(const Tensor& t, const scalar& s, bool tensor_first, Tensor out) {
    auto node = make_node(Op::node_name, t);
    if (!node) return out;
    function_node& recorded = *node;  // `out` owns the node from set_history on
    const int i = tensor_first ? 0 : 1;
    recorded.save(ops::grad_reads<Op>(i, ops::reads_input(i)) ? t : Tensor{});
    set_history(out, std::move(node));
    recorded.save(ops::grad_reads<Op>(i, ops::reads_output) ? out : Tensor{}, true);
    // The output has the tensor operand's shape (a number does not broadcast), so the
    // node's output metadata gives it back without a copy in the closure.
    recorded.backward = [s, tensor_first, tt = t.type()](function_node& n, const tensor_list& g, tensor_list& grad_inputs) {
        const Tensor x = n.saved(0), r = n.saved(1);
        const int_list& st = n.output_metadata(0).sizes;
        constexpr bool number_as_scalar = std::is_same_v<Op, ops::def::add_op> ||
                                          std::is_same_v<Op, ops::def::sub_op> ||
                                          std::is_same_v<Op, ops::def::mul_op> || std::is_same_v<Op, ops::def::div_op>;
        if constexpr (number_as_scalar) {
            grad_inputs.push_back(reduce_grad(tensor_first ? Op::grad_0(g[0], x, s, r) : Op::grad_1(g[0], s, x, r), st, tt));
        } else {
            const Tensor c = full({}, s, tt);
            grad_inputs.push_back(reduce_grad(tensor_first ? Op::grad_0(g[0], x, c, r) : Op::grad_1(g[0], c, x, r), st, tt));
        }
    };
    return out;
}

GRAFT_INLINE Tensor record_binary_scalar(binary_kind kind, const Tensor& t, const scalar& s, bool tensor_first,
                                         Tensor out);

}  // namespace autograd::detail

GRAFT_DETAIL_DECLARE_BINARY(GRAFT_INLINE, add)
GRAFT_DETAIL_DECLARE_BINARY(GRAFT_INLINE, sub)
GRAFT_DETAIL_DECLARE_BINARY(GRAFT_INLINE, mul)
GRAFT_DETAIL_DECLARE_BINARY(GRAFT_INLINE, div)
GRAFT_DETAIL_DECLARE_BINARY(GRAFT_INLINE, pow)
GRAFT_DETAIL_DECLARE_BINARY(GRAFT_INLINE, maximum)
GRAFT_DETAIL_DECLARE_BINARY(GRAFT_INLINE, minimum)
#undef GRAFT_DETAIL_DECLARE_BINARY

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator+(const Tensor& a, const scalar& b) { return add(a, b); }
inline Tensor operator+(const scalar& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator-(const Tensor& a, const scalar& b) { return sub(a, b); }
inline Tensor operator-(const scalar& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator*(const Tensor& a, const scalar& b) { return mul(a, b); }
inline Tensor operator*(const scalar& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator/(const Tensor& a, const scalar& b) { return div(a, b); }
inline Tensor operator/(const scalar& a, const Tensor& b) { return div(a, b); }

/// where(cond, a, b): differentiable in a and b.
GRAFT_INLINE Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
GRAFT_INLINE Tensor where(const Tensor& cond, const Tensor& a, const scalar& b);
GRAFT_INLINE Tensor where(const Tensor& cond, const scalar& a, const Tensor& b);

/// x * x (torch.square), differentiable (gradient 2x); bool becomes int64, as torch.square
/// (a pow) gives.
[[nodiscard]] inline Tensor square(const Tensor& x) {
    if (x.defined() && x.type() == dtype::bool_) return square(x.to(dtype::int64));
    return mul(x, x);
}

/// torch.clamp with number bounds (at least one; graft::error otherwise, as PyTorch's "At
/// least one of 'min' or 'max' must not be None"): NaN inputs and NaN bounds give NaN,
/// min > max gives max, an integer tensor with a floating bound is promoted (PyTorch's
/// rules). The gradient is PyTorch's clamp_backward: it passes where min <= x <= max
/// (bounds included) and is 0 elsewhere, NaN inputs included. Captured as one `clamp` node.
[[nodiscard]] GRAFT_INLINE Tensor clamp(const Tensor& x, const std::optional<scalar>& min,
                                        const std::optional<scalar>& max = {});
/// clamp(x, min, none) and clamp(x, none, max) (torch.clamp_min / clamp_max).
[[nodiscard]] GRAFT_INLINE Tensor clamp_min(const Tensor& x, const scalar& min);
[[nodiscard]] GRAFT_INLINE Tensor clamp_max(const Tensor& x, const scalar& max);

/// clamp with tensor bounds (broadcast; either may be undefined, not both): composed of
/// comparisons and `where`, so the gradient flows to x where it is inside the bounds and to
/// a bound where it is the result.
[[nodiscard]] inline Tensor clamp_min(const Tensor& x, const Tensor& min) { return where(x < min, min, x); }
[[nodiscard]] inline Tensor clamp_max(const Tensor& x, const Tensor& max) { return where(x > max, max, x); }
[[nodiscard]] inline Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max) {
    graft::detail::check(min.defined() || max.defined(), "clamp: At least one of 'min' or 'max' must not be None");
    const Tensor lo = min.defined() ? clamp_min(x, min) : x;
    return max.defined() ? clamp_max(lo, max) : lo;
}

namespace autograd::detail {
/// The gradient of clamp with number bounds: g where min <= x <= max, else 0.
[[nodiscard]] GRAFT_INLINE Tensor clamp_backward(const Tensor& g, const Tensor& x, const std::optional<scalar>& min,
                                                 const std::optional<scalar>& max);
}  // namespace autograd::detail

// ---------------------------------------------------------------- unary ops

namespace autograd::detail {

/// Records a unary op; `bwd(grad, input, output)` gives the input's gradient.
template <class Backward>
Tensor record_unary(const char* name, const Tensor& a, Tensor out, bool save_input, bool save_output, Backward bwd) {
    auto node = make_node(name, a);
    if (!node) return out;
    function_node& recorded = *node;  // `out` owns the node from set_history on
    recorded.save(save_input ? a : Tensor{});
    set_history(out, std::move(node));
    recorded.save(save_output ? out : Tensor{}, true);
    recorded.backward = [bwd](function_node& n, const tensor_list& g, tensor_list& grad_inputs) {
        grad_inputs.push_back(bwd(g[0], n.saved(0), n.saved(1)));
    };
    return out;
}

/// Records a unary op of the op table: its node name, saved values and derivative.
template <class Op>
Tensor record_unary_op(const Tensor& a, Tensor out) {
    return record_unary(Op::node_name, a, std::move(out), ops::grad_reads<Op>(0, ops::reads_input0),
                        ops::grad_reads<Op>(0, ops::reads_output),
                        [](const Tensor& g, const Tensor& x, const Tensor& y) { return Op::grad_0(g, x, y); });
}

}  // namespace autograd::detail

GRAFT_INLINE Tensor neg(const Tensor& a);
inline Tensor operator-(const Tensor& a) { return neg(a); }
/// sign(x): -1, 0 or 1, and 0 at NaN (PyTorch's); its gradient is zero (SignBackward0).
GRAFT_INLINE Tensor sign(const Tensor& a);
GRAFT_INLINE Tensor abs(const Tensor& a);
GRAFT_INLINE Tensor exp(const Tensor& a);
GRAFT_INLINE Tensor log(const Tensor& a);
GRAFT_INLINE Tensor sqrt(const Tensor& a);
GRAFT_INLINE Tensor rsqrt(const Tensor& a);
GRAFT_INLINE Tensor tanh(const Tensor& a);
GRAFT_INLINE Tensor sigmoid(const Tensor& a);
GRAFT_INLINE Tensor relu(const Tensor& a);
GRAFT_INLINE Tensor cos(const Tensor& a);
GRAFT_INLINE Tensor sin(const Tensor& a);
/// log(1+x) (Log1PBackward0: grad / (x + 1)); accurate for small |x|.
GRAFT_INLINE Tensor log1p(const Tensor& a);
/// exp(x)-1 (Expm1Backward0: grad * (result + 1)); accurate for small |x|.
GRAFT_INLINE Tensor expm1(const Tensor& a);

/// The standard normal CDF Φ(x) = erfc(-x/√2)/2, from the exact gelu: Φ(x) = gelu(x)/x
/// is unstable near 0, so it is computed elementwise by the kernel unary_op::normal_cdf:
/// float32 in SIMD float32 arithmetic (<= 5 ULP), float64 with std::erfc per element.
GRAFT_INLINE Tensor normal_cdf(const Tensor& a);

namespace autograd::detail {
/// Binary cross entropy per element (ops::binary_cross_entropy) with PyTorch's backward,
/// BinaryCrossEntropyBackward0: input g * (x - t) / max(x (1 - x), eps), eps = float(1e-12) as
/// PyTorch's (9.99999996e-13, also in float64; bounded where the
/// log's derivative is not), target -g * logit(x). nn::functional::binary_cross_entropy adds
/// the weight and the reduction; graph capture records one binary_cross_entropy op.
GRAFT_INLINE Tensor binary_cross_entropy_elements(const Tensor& input, const Tensor& target);
}  // namespace autograd::detail

/// GELU, exact (erf) or "tanh" approximation, as torch.nn.functional.gelu; twice differentiable.
GRAFT_INLINE Tensor gelu(const Tensor& a, std::string_view approximate = "none");

// ---------------------------------------------------------------- reductions

GRAFT_INLINE Tensor sum(const Tensor& t, const int_list& dims, bool keepdim);
GRAFT_INLINE Tensor sum(const Tensor& t);
GRAFT_INLINE Tensor mean(const Tensor& t, const int_list& dims = {}, bool keepdim = false);

namespace autograd::detail {
/// amax/amin: the gradient is split evenly among the elements equal to the result.
GRAFT_INLINE Tensor record_extremum(const char* name, const Tensor& t, const int_list& dims, bool keepdim, Tensor out);
}  // namespace autograd::detail

GRAFT_INLINE Tensor amax(const Tensor& t, const int_list& dims = {}, bool keepdim = false);
GRAFT_INLINE Tensor amin(const Tensor& t, const int_list& dims = {}, bool keepdim = false);

// ---------------------------------------------------------------- matmul, softmax

GRAFT_INLINE Tensor matmul(const Tensor& a, const Tensor& b);

GRAFT_INLINE Tensor softmax(const Tensor& t, std::int64_t dim);
GRAFT_INLINE Tensor log_softmax(const Tensor& t, std::int64_t dim);

}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/autograd/impl/functions.ipp"
#endif
