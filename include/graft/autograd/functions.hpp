#pragma once
// The differentiable ops: each runs the raw forward from graft::ops and, when a
// gradient is needed, records a node whose derivative is written with these
// same ops (so backward is itself differentiable: double backward works).
#include <cmath>
#include <numbers>
#include <string>
#include <string_view>
#include <utility>

#include "graft/autograd/engine.hpp"
#include "graft/ops/elementwise.hpp"
#include "graft/ops/linalg.hpp"
#include "graft/ops/reduce.hpp"
#include "graft/ops/softmax.hpp"
#include "graft/ops/table.hpp"

namespace graft {

// Forward declarations: derivatives below use the differentiable functions.
#define GRAFT_DETAIL_DECLARE_BINARY(fn)                 \
    inline Tensor fn(const Tensor& a, const Tensor& b); \
    inline Tensor fn(const Tensor& a, const scalar& b); \
    inline Tensor fn(const scalar& a, const Tensor& b);
GRAFT_DETAIL_DECLARE_BINARY(add)
GRAFT_DETAIL_DECLARE_BINARY(sub)
GRAFT_DETAIL_DECLARE_BINARY(mul)
GRAFT_DETAIL_DECLARE_BINARY(div)
GRAFT_DETAIL_DECLARE_BINARY(pow)
GRAFT_DETAIL_DECLARE_BINARY(operator+)
GRAFT_DETAIL_DECLARE_BINARY(operator-)
GRAFT_DETAIL_DECLARE_BINARY(operator*)
GRAFT_DETAIL_DECLARE_BINARY(operator/)
#undef GRAFT_DETAIL_DECLARE_BINARY
inline Tensor operator-(const Tensor& a);
inline Tensor sum(const Tensor& t, const int_list& dims, bool keepdim);
inline Tensor sum_to_size(const Tensor& g, const int_list& sizes);
inline Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
inline Tensor exp(const Tensor& a);
inline Tensor log(const Tensor& a);
inline Tensor tanh(const Tensor& a);
inline Tensor matmul(const Tensor& a, const Tensor& b);

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
inline void set_history(const Tensor& out, const std::shared_ptr<Node>& node) {
    auto& m = ensure_meta(out);
    m.grad_fn = node;
    m.output_nr = node->add_output(out);
    m.requires_grad = false;
}

/// The error PyTorch raises when a view made in no_grad mode is (or, with `indirect`,
/// its base or a sibling view was) modified in place with grad mode enabled.
inline void handle_view_on_rebase(const view_meta& vm, const Tensor& self, const char* op, bool indirect) {
    if (vm.creation == creation_meta::default_mode) return;
    const auto* m = meta(self);
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

/// Checks that a view's history can be expressed from its base with as_strided.
inline void check_rebase_supported(const char* op, const Tensor& view, const Tensor& base) {
    const strided_geometry b = geometry_of(base), v = geometry_of(view);
    graft::detail::check(is_dense(b) && lies_within(v, b), op,
                         ": graft cannot track autograd through a view whose base is not dense or which reaches "
                         "outside its base's elements (base sizes ", b.sizes, ", strides ", b.strides,
                         ", offset ", b.offset, "; view sizes ", v.sizes, ", strides ", v.strides, ", offset ",
                         v.offset, "); clone() the base first");
}

/// PyTorch's check_inplace: run by every in-place op before it writes `self`.
inline void check_inplace(const char* op, const Tensor& self, bool other_requires_grad) {
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

/// dims that were reduced away, restored as size-1 dims (for expanding gradients back).
[[nodiscard]] inline Tensor unsqueeze_reduced(const Tensor& g, const int_list& in_sizes, const int_list& dims,
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

/// Sums `g` down to `sizes` over broadcast dimensions (the gradient of expand).
inline Tensor sum_to_size(const Tensor& g, const int_list& sizes) {
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
[[nodiscard]] inline Tensor reduce_grad(Tensor g, const int_list& sizes, dtype type) {
    g = sum_to_size(g, sizes);
    return g.type() == type ? g : g.to(type);
}

/// Gradients of a binary op from the op table; a or b may be a 0-dim stand-in for a number.
/// An operand the needed derivatives don't read may be undefined (mul and div save only
/// what they need) when the input sizes are given.
[[nodiscard]] inline tensor_list binary_backward(binary_kind kind, const Tensor& g, const Tensor& a, const Tensor& b,
                                                 const Tensor& out, bool need_a, bool need_b,
                                                 const int_list& a_sizes = {}, const int_list& b_sizes = {}) {
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
    node->save(reads(ops::reads_input0) ? a : Tensor{});
    node->save(reads(ops::reads_input1) ? b : Tensor{});
    set_history(out, node);
    node->save(reads(ops::reads_output) ? out : Tensor{}, true);
    node->backward = [sa = a.sizes(), sb = b.sizes(), ta = a.type(), tb = b.type()](
                         function_node& n, const tensor_list& g) -> tensor_list {
        const Tensor x = n.saved(0), y = n.saved(1), r = n.saved(2);
        return {n.needs_input_grad(0) ? reduce_grad(Op::grad_0(g[0], x, y, r), sa, ta) : Tensor{},
                n.needs_input_grad(1) ? reduce_grad(Op::grad_1(g[0], x, y, r), sb, tb) : Tensor{}};
    };
    return out;
}

inline Tensor record_binary(binary_kind kind, const Tensor& a, const Tensor& b, Tensor out) {
    return visit_binary(kind, [&](auto op) { return record_binary_op<decltype(op)>(a, b, std::move(out)); });
}

/// A number operand: the node has one edge, for the tensor. add/sub/mul/div read the
/// number directly; the other ops see it as a 0-dim tensor of the tensor's dtype.
template <class Op>
Tensor record_binary_scalar_op(const Tensor& t, const scalar& s, bool tensor_first, Tensor out) {
    auto node = make_node(Op::node_name, t);
    if (!node) return out;
    const int i = tensor_first ? 0 : 1;
    node->save(ops::grad_reads<Op>(i, ops::reads_input(i)) ? t : Tensor{});
    set_history(out, node);
    node->save(ops::grad_reads<Op>(i, ops::reads_output) ? out : Tensor{}, true);
    node->backward = [s, tensor_first, st = t.sizes(), tt = t.type()](function_node& n,
                                                                       const tensor_list& g) -> tensor_list {
        const Tensor x = n.saved(0), r = n.saved(1);
        constexpr bool number_as_scalar = std::is_same_v<Op, ops::def::add_op> ||
                                          std::is_same_v<Op, ops::def::sub_op> ||
                                          std::is_same_v<Op, ops::def::mul_op> || std::is_same_v<Op, ops::def::div_op>;
        if constexpr (number_as_scalar) {
            return {reduce_grad(tensor_first ? Op::grad_0(g[0], x, s, r) : Op::grad_1(g[0], s, x, r), st, tt)};
        } else {
            const Tensor c = full({}, s, tt);
            return {reduce_grad(tensor_first ? Op::grad_0(g[0], x, c, r) : Op::grad_1(g[0], c, x, r), st, tt)};
        }
    };
    return out;
}

inline Tensor record_binary_scalar(binary_kind kind, const Tensor& t, const scalar& s, bool tensor_first, Tensor out) {
    return visit_binary(kind, [&](auto op) {
        return record_binary_scalar_op<decltype(op)>(t, s, tensor_first, std::move(out));
    });
}

}  // namespace autograd::detail

#define GRAFT_DETAIL_DIFF_BINARY(fn, kind)                                                                        \
    inline Tensor fn(const Tensor& a, const Tensor& b) {                                                          \
        return autograd::detail::record_binary(kind, a, b, ops::fn(a, b));                                        \
    }                                                                                                             \
    inline Tensor fn(const Tensor& a, const scalar& b) {                                                          \
        return autograd::detail::record_binary_scalar(kind, a, b, true, ops::fn(a, b));                           \
    }                                                                                                             \
    inline Tensor fn(const scalar& a, const Tensor& b) {                                                          \
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
inline Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
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
inline Tensor where(const Tensor& cond, const Tensor& a, const scalar& b) {
    return where(cond, a, full({}, b, result_type(a, b)));
}
inline Tensor where(const Tensor& cond, const scalar& a, const Tensor& b) {
    return where(cond, full({}, a, result_type(a, b)), b);
}

// ---------------------------------------------------------------- unary ops

namespace autograd::detail {

/// Records a unary op; `bwd(grad, input, output)` gives the input's gradient.
template <class Backward>
Tensor record_unary(const char* name, const Tensor& a, Tensor out, bool save_input, bool save_output, Backward bwd) {
    auto node = make_node(name, a);
    if (!node) return out;
    node->save(save_input ? a : Tensor{});
    set_history(out, node);
    node->save(save_output ? out : Tensor{}, true);
    node->backward = [bwd](function_node& n, const tensor_list& g) -> tensor_list {
        return {bwd(g[0], n.saved(0), n.saved(1))};
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

inline Tensor neg(const Tensor& a) {
    return autograd::detail::record_unary_op<ops::def::neg_op>(a, ops::neg(a));
}
inline Tensor operator-(const Tensor& a) { return neg(a); }
/// sign(x): -1, 0 or 1 (NaN stays NaN); not differentiable (its gradient is zero).
inline Tensor sign(const Tensor& a) {
    const Tensor pos = ops::where(a > 0.0, ones_like(a), zeros_like(a));
    return ops::where(a < 0.0, full_like(a, -1), ops::where(a != a, a, pos));
}
inline Tensor abs(const Tensor& a) {
    return autograd::detail::record_unary_op<ops::def::abs_op>(a, ops::abs(a));
}
inline Tensor exp(const Tensor& a) {
    return autograd::detail::record_unary_op<ops::def::exp_op>(a, ops::exp(a));
}
inline Tensor log(const Tensor& a) {
    return autograd::detail::record_unary_op<ops::def::log_op>(a, ops::log(a));
}
inline Tensor sqrt(const Tensor& a) {
    return autograd::detail::record_unary_op<ops::def::sqrt_op>(a, ops::sqrt(a));
}
inline Tensor rsqrt(const Tensor& a) {
    return autograd::detail::record_unary_op<ops::def::rsqrt_op>(a, ops::rsqrt(a));
}
inline Tensor tanh(const Tensor& a) {
    return autograd::detail::record_unary_op<ops::def::tanh_op>(a, ops::tanh(a));
}
inline Tensor sigmoid(const Tensor& a) {
    return autograd::detail::record_unary_op<ops::def::sigmoid_op>(a, ops::sigmoid(a));
}
inline Tensor relu(const Tensor& a) {
    return autograd::detail::record_unary_op<ops::def::relu_op>(a, ops::relu(a));
}
inline Tensor sin(const Tensor& a);
inline Tensor cos(const Tensor& a) {
    return autograd::detail::record_unary_op<ops::def::cos_op>(a, ops::cos(a));
}
inline Tensor sin(const Tensor& a) {
    return autograd::detail::record_unary_op<ops::def::sin_op>(a, ops::sin(a));
}

/// The standard normal CDF Φ(x) = erfc(-x/√2)/2, from the exact gelu: Φ(x) = gelu(x)/x
/// is unstable near 0, so it is computed elementwise with std::erfc (double precision).
inline Tensor normal_cdf(const Tensor& a) {
    graft::detail::check(is_floating_point(a.type()), "normal_cdf: expected a floating-point tensor, got ", a.type());
    Tensor x = a.contiguous().detach();
    Tensor out = empty(a.sizes(), a.type());
    graft::detail::visit_dtype(a.type(), [&](auto z) {
        using T = decltype(z);
        if constexpr (std::is_floating_point_v<T>) {
            const T* p = x.data_ptr<T>();
            T* o = out.data_ptr<T>();
            for (std::int64_t i = 0; i < a.numel(); ++i)
                o[i] = static_cast<T>(0.5 * std::erfc(-static_cast<double>(p[i]) * std::numbers::sqrt2 / 2.0));
        }
    });
    return autograd::detail::record_unary("NormalCdfBackward0", a, out, true, false,
                                          [](const Tensor& g, const Tensor& x, const Tensor&) {
                                              const double inv_sqrt_2pi = 0.5 * std::numbers::inv_sqrtpi * std::numbers::sqrt2;
                                              return g * exp(x * x * (-0.5)) * inv_sqrt_2pi;
                                          });
}

/// GELU, exact (erf) or "tanh" approximation, as torch.nn.functional.gelu; twice differentiable.
inline Tensor gelu(const Tensor& a, std::string_view approximate = "none") {
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

// ---------------------------------------------------------------- reductions

inline Tensor sum(const Tensor& t, const int_list& dims, bool keepdim) {
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
inline Tensor sum(const Tensor& t) {
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
inline Tensor mean(const Tensor& t, const int_list& dims = {}, bool keepdim = false) {
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
/// amax/amin: the gradient is split evenly among the elements equal to the result.
inline Tensor record_extremum(const char* name, const Tensor& t, const int_list& dims, bool keepdim, Tensor out) {
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

inline Tensor amax(const Tensor& t, const int_list& dims = {}, bool keepdim = false) {
    return autograd::detail::record_extremum("AmaxBackward0", t, dims, keepdim, ops::amax(t, dims, keepdim));
}
inline Tensor amin(const Tensor& t, const int_list& dims = {}, bool keepdim = false) {
    return autograd::detail::record_extremum("AminBackward0", t, dims, keepdim, ops::amin(t, dims, keepdim));
}

// ---------------------------------------------------------------- matmul, softmax

inline Tensor matmul(const Tensor& a, const Tensor& b) {
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

inline Tensor softmax(const Tensor& t, std::int64_t dim) {
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
inline Tensor log_softmax(const Tensor& t, std::int64_t dim) {
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

}  // namespace graft
