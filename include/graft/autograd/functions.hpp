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

inline void check_inplace(const char* op, const Tensor& self, bool other_requires_grad) {
    graft::detail::check(self.defined(), op, ": got an undefined tensor");
    notify_inplace(self);  // allow_mutation_on_saved_tensors: save pre-mutation values first
    if (!is_grad_enabled()) return;
    const auto* m = meta(self);
    graft::detail::check(!(m && m->requires_grad && !m->grad_fn), op,
                         ": a leaf Variable that requires grad is being used in an in-place operation.");
    graft::detail::check(!(self.is_view() && (requires_grad(self) || other_requires_grad)), op,
                         ": in-place operations on views are not differentiable in graft yet; apply the operation "
                         "out of place (or to the base tensor)");
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

/// Gradients of a binary op; a or b may be a 0-dim stand-in for a number.
[[nodiscard]] inline tensor_list binary_backward(binary_kind kind, const Tensor& g, const Tensor& a, const Tensor& b,
                                                 const Tensor& out, bool need_a, bool need_b) {
    Tensor ga, gb;
    switch (kind) {
        case binary_kind::add:
            ga = g;
            gb = g;
            break;
        case binary_kind::sub:
            ga = g;
            if (need_b) gb = -g;
            break;
        case binary_kind::mul:
            if (need_a) ga = g * b;
            if (need_b) gb = g * a;
            break;
        case binary_kind::div:
            if (need_a) ga = g / b;
            if (need_b) gb = -g * a / (b * b);
            break;
        case binary_kind::pow:
            // PyTorch masks the 0 * inf cases: d/da is 0 where b == 0, d/db is 0 where a == 0 and b >= 0.
            if (need_a) ga = where(b == 0.0, zeros_like(out), g * b * pow(a, b - 1.0));
            if (need_b) gb = where((a == 0.0) * (b >= 0.0) == 1, zeros_like(out), g * out * log(a));
            break;
        case binary_kind::maximum:
        case binary_kind::minimum: {
            // Ties split the gradient evenly, as PyTorch does.
            const Tensor win = kind == binary_kind::maximum ? gt(a, b) : lt(a, b);
            const Tensor tie = eq(a, b);
            const Tensor half = g * 0.5;
            if (need_a) ga = where(win, g, where(tie, half, zeros_like(g)));
            if (need_b) gb = where(win, zeros_like(g), where(tie, half, g));
            break;
        }
    }
    return {need_a && ga.defined() ? sum_to_size(ga, a.sizes()) : Tensor{},
            need_b && gb.defined() ? sum_to_size(gb, b.sizes()) : Tensor{}};
}

[[nodiscard]] constexpr const char* binary_node_name(binary_kind k) {
    switch (k) {
        case binary_kind::add: return "AddBackward0";
        case binary_kind::sub: return "SubBackward0";
        case binary_kind::mul: return "MulBackward0";
        case binary_kind::div: return "DivBackward0";
        case binary_kind::pow: return "PowBackward1";
        case binary_kind::maximum: return "MaximumBackward0";
        case binary_kind::minimum: return "MinimumBackward0";
    }
    return "?";
}

[[nodiscard]] inline bool binary_saves_inputs(binary_kind k) { return k != binary_kind::add && k != binary_kind::sub; }

inline Tensor record_binary(binary_kind kind, const Tensor& a, const Tensor& b, Tensor out) {
    auto node = make_node(binary_node_name(kind), a, b);
    if (!node) return out;
    // Only sizes are needed for add/sub; other ops keep the inputs (and pow its output).
    const int_list sa = a.sizes(), sb = b.sizes();
    const dtype ta = a.type(), tb = b.type();
    if (binary_saves_inputs(kind)) {
        node->save(a);
        node->save(b);
    }
    node->backward = [kind, sa, sb, ta, tb](function_node& n, const tensor_list& g) -> tensor_list {
        const bool na = n.needs_input_grad(0), nb = n.needs_input_grad(1);
        if (!binary_saves_inputs(kind)) {
            Tensor ga = na ? sum_to_size(g[0], sa) : Tensor{};
            Tensor gb = nb ? sum_to_size(kind == binary_kind::sub ? -g[0] : g[0], sb) : Tensor{};
            if (ga.defined() && ga.type() != ta) ga = ga.to(ta);
            if (gb.defined() && gb.type() != tb) gb = gb.to(tb);
            return {ga, gb};
        }
        const Tensor a = n.saved(0), b = n.saved(1);
        const Tensor out = kind == binary_kind::pow ? pow(a, b) : Tensor{};
        return binary_backward(kind, g[0], a, b, out, na, nb);
    };
    set_history(out, node);
    return out;
}

/// A number operand: the node has one edge, for the tensor.
inline Tensor record_binary_scalar(binary_kind kind, const Tensor& t, const scalar& s, bool tensor_first, Tensor out) {
    auto node = make_node(binary_node_name(kind), t);
    if (!node) return out;
    const bool needs_tensor = binary_saves_inputs(kind) && !(kind == binary_kind::mul) &&
                              !(kind == binary_kind::div && tensor_first);
    if (needs_tensor) node->save(t);
    const int_list st = t.sizes();
    node->backward = [kind, s, tensor_first, st](function_node& n, const tensor_list& g) -> tensor_list {
        if (!binary_saves_inputs(kind)) {
            const bool negate = kind == binary_kind::sub && !tensor_first;
            return {sum_to_size(negate ? -g[0] : g[0], st)};
        }
        // Multiplying or dividing by a number: the gradient is the same op on the gradient.
        if (kind == binary_kind::mul) return {g[0] * s};
        if (kind == binary_kind::div && tensor_first) return {g[0] / s};
        const Tensor t = n.saved(0);
        const Tensor c = full({}, s, t.type());
        const Tensor a = tensor_first ? t : c, b = tensor_first ? c : t;
        const Tensor out = kind == binary_kind::pow ? pow(a, b) : Tensor{};
        tensor_list r = binary_backward(kind, g[0], a, b, out, tensor_first, !tensor_first);
        return {tensor_first ? r[0] : r[1]};
    };
    set_history(out, node);
    return out;
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
    Tensor out = ops::where(cond, a, b);
    auto node = autograd::detail::make_node("WhereBackward0", a, b);
    if (!node) return out;
    node->save(cond);
    const int_list sa = a.sizes(), sb = b.sizes();
    node->backward = [sa, sb](autograd::function_node& n, const autograd::tensor_list& g) -> autograd::tensor_list {
        const Tensor c = n.saved(0);
        const Tensor zero = zeros_like(g[0]);
        return {n.needs_input_grad(0) ? sum_to_size(where(c, g[0], zero), sa) : Tensor{},
                n.needs_input_grad(1) ? sum_to_size(where(c, zero, g[0]), sb) : Tensor{}};
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

}  // namespace autograd::detail

inline Tensor neg(const Tensor& a) {
    return autograd::detail::record_unary("NegBackward0", a, ops::neg(a), false, false,
                                          [](const Tensor& g, const Tensor&, const Tensor&) { return -g; });
}
inline Tensor operator-(const Tensor& a) { return neg(a); }
/// sign(x): -1, 0 or 1 (NaN stays NaN); not differentiable (its gradient is zero).
inline Tensor sign(const Tensor& a) {
    const Tensor pos = ops::where(a > 0.0, ones_like(a), zeros_like(a));
    return ops::where(a < 0.0, full_like(a, -1), ops::where(a != a, a, pos));
}
inline Tensor abs(const Tensor& a) {
    return autograd::detail::record_unary("AbsBackward0", a, ops::abs(a), true, false,
                                          [](const Tensor& g, const Tensor& x, const Tensor&) { return g * sign(x); });
}
inline Tensor exp(const Tensor& a) {
    return autograd::detail::record_unary("ExpBackward0", a, ops::exp(a), false, true,
                                          [](const Tensor& g, const Tensor&, const Tensor& y) { return g * y; });
}
inline Tensor log(const Tensor& a) {
    return autograd::detail::record_unary("LogBackward0", a, ops::log(a), true, false,
                                          [](const Tensor& g, const Tensor& x, const Tensor&) { return g / x; });
}
inline Tensor sqrt(const Tensor& a) {
    return autograd::detail::record_unary("SqrtBackward0", a, ops::sqrt(a), false, true,
                                          [](const Tensor& g, const Tensor&, const Tensor& y) { return g / (2.0 * y); });
}
inline Tensor rsqrt(const Tensor& a) {
    return autograd::detail::record_unary("RsqrtBackward0", a, ops::rsqrt(a), false, true,
                                          [](const Tensor& g, const Tensor&, const Tensor& y) {
                                              return g * (-0.5) * y * y * y;
                                          });
}
inline Tensor tanh(const Tensor& a) {
    return autograd::detail::record_unary("TanhBackward0", a, ops::tanh(a), false, true,
                                          [](const Tensor& g, const Tensor&, const Tensor& y) {
                                              return g * (1.0 - y * y);
                                          });
}
inline Tensor sigmoid(const Tensor& a) {
    return autograd::detail::record_unary("SigmoidBackward0", a, ops::sigmoid(a), false, true,
                                          [](const Tensor& g, const Tensor&, const Tensor& y) {
                                              return g * y * (1.0 - y);
                                          });
}
inline Tensor relu(const Tensor& a) {
    return autograd::detail::record_unary("ReluBackward0", a, ops::relu(a), false, true,
                                          [](const Tensor& g, const Tensor&, const Tensor& y) {
                                              return where(y > 0.0, g, zeros_like(g));
                                          });
}
inline Tensor sin(const Tensor& a);
inline Tensor cos(const Tensor& a) {
    return autograd::detail::record_unary("CosBackward0", a, ops::cos(a), true, false,
                                          [](const Tensor& g, const Tensor& x, const Tensor&) { return -g * sin(x); });
}
inline Tensor sin(const Tensor& a) {
    return autograd::detail::record_unary("SinBackward0", a, ops::sin(a), true, false,
                                          [](const Tensor& g, const Tensor& x, const Tensor&) { return g * cos(x); });
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
