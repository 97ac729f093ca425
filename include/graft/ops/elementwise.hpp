#pragma once
// Elementwise tensor operations with PyTorch's broadcasting and type promotion.
// float32/float64 run on the SIMD kernels; int64 and bool run plain loops.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "graft/core/factories.hpp"
#include "graft/core/tensor.hpp"
#include "graft/kernels/dispatch.hpp"
#include "graft/kernels/reference.hpp"

namespace graft {
namespace detail {

/// PyTorch's three priority classes: tensors with dimensions, 0-dim tensors,
/// then C++ numbers. A lower class only raises the result's category.
struct promotion_state {
    int dim_result = -1, zero_result = -1, wrapped_result = -1;

    static int promote(int a, int b) { return a < 0 ? b : (b < 0 ? a : (a > b ? a : b)); }
    void add(const Tensor& t) {
        int& slot = t.dim() > 0 ? dim_result : zero_result;
        slot = promote(slot, static_cast<int>(t.type()));
    }
    void add(const scalar& s) {
        const dtype d = s.is_floating_point() ? default_float_dtype : s.kind();
        wrapped_result = promote(wrapped_result, static_cast<int>(d));
    }
    static bool is_float(int t) {
        return t >= 0 && is_floating_point(static_cast<dtype>(t));
    }
    static int combine(int higher, int lower) {
        if (is_float(higher)) return higher;
        if (higher == static_cast<int>(dtype::bool_) || is_float(lower)) return promote(higher, lower);
        return higher >= 0 ? higher : lower;
    }
    [[nodiscard]] dtype result() const {
        const int r = combine(dim_result, combine(zero_result, wrapped_result));
        return r < 0 ? default_float_dtype : static_cast<dtype>(r);
    }
};

template <class... Args>
[[nodiscard]] dtype result_type_of(const Args&... args) {
    promotion_state s;
    (s.add(args), ...);
    return s.result();
}

inline void check_defined(const char* op, const Tensor& t) {
    check(t.defined(), op, ": got an undefined tensor");
}

/// A C++ number as a 0-dim tensor of the computation's dtype.
[[nodiscard]] inline Tensor as_tensor(const scalar& s, dtype type) { return full({}, s, type); }

template <class T>
[[nodiscard]] inline T* row_ptr(char* p) noexcept { return reinterpret_cast<T*>(p); }

[[nodiscard]] constexpr std::string_view op_name(kernels::binary_op op) {
    using kernels::binary_op;
    switch (op) {
        case binary_op::add: return "add";
        case binary_op::sub: return "sub";
        case binary_op::mul: return "mul";
        case binary_op::div: return "div";
        case binary_op::pow: return "pow";
        case binary_op::maximum: return "maximum";
        case binary_op::minimum: return "minimum";
    }
    return "?";
}

/// Broadcasts a and b (already of dtype `type`) and runs op into a new tensor.
/// Converts a and b to `type`, broadcasts them to `shape`, allocates an `out_type`
/// result and calls `row(T{}, ptrs, byte_strides, n)` for each innermost row, with
/// ptrs = {out, a, b}: the loop shared by the binary and comparison ops.
template <class Row>
Tensor map_broadcast(const Tensor& a, const Tensor& b, dtype type, dtype out_type, const int_list& shape, Row&& row) {
    const Tensor x = raw::expand(raw::to(a, type), shape), y = raw::expand(raw::to(b, type), shape);
    Tensor out = empty(shape, out_type);
    const int_list so = byte_strides(out), sx = byte_strides(x), sy = byte_strides(y);
    visit_dtype(type, [&](auto z) {
        for_each_row<3>(shape, {&so, &sx, &sy},
                        {static_cast<char*>(out.raw_data()), static_cast<char*>(x.raw_data()),
                         static_cast<char*>(y.raw_data())},
                        [&](std::array<char*, 3> p, std::array<std::int64_t, 3> st, std::int64_t n) { row(z, p, st, n); });
    });
    return out;
}

inline Tensor run_binary(kernels::binary_op op, const Tensor& a, const Tensor& b, dtype type) {
    using kernels::binary_op;
    const std::string_view name = op_name(op);
    if (type == dtype::bool_)
        check(op != binary_op::sub, "sub: subtraction, the `-` operator, with two bool tensors is not supported; "
                                    "use the `^` or logical_xor() operator instead");
    int_list shape;
    try {
        shape = broadcast_shapes(a.sizes(), b.sizes());
    } catch (const error&) {
        fail(concat(name, ": the size of tensor a ", a.sizes(), " must match the size of tensor b ",
                    b.sizes(), " at every non-singleton dimension (broadcasting failed)"));
    }
    if (type == dtype::int64 && op == binary_op::pow) {
        // PyTorch rejects integer tensors raised to negative integer powers.
        const Tensor e = raw::to(b, dtype::int64);
        for (auto v : e.to_vector<std::int64_t>())
            check(v >= 0, "pow: integers to negative integer powers are not allowed");
    }
    return map_broadcast(a, b, type, type, shape,
                         [&](auto z, std::array<char*, 3> p, std::array<std::int64_t, 3> st, std::int64_t n) {
                             using T = decltype(z);
                             constexpr auto es = static_cast<std::int64_t>(sizeof(T));
                             if constexpr (std::is_floating_point_v<T>) {
                                 if (st[0] == es) {
                                     kernels::binary(op, row_ptr<T>(p[1]), st[1] / es, row_ptr<T>(p[2]), st[2] / es,
                                                     row_ptr<T>(p[0]), static_cast<std::size_t>(n));
                                     return;
                                 }
                             }
                             for (std::int64_t i = 0; i < n; ++i) {
                                 T va, vb;
                                 std::memcpy(&va, p[1] + i * st[1], sizeof(T));
                                 std::memcpy(&vb, p[2] + i * st[2], sizeof(T));
                                 T r;
                                 if constexpr (std::is_floating_point_v<T>)
                                     kernels::binary(op, &va, 0, &vb, 0, &r, 1);
                                 else
                                     r = kernels::reference::binary_scalar<T>(op, va, vb);
                                 std::memcpy(p[0] + i * st[0], &r, sizeof(T));
                             }
                         });
}

/// dtype of the computation and of the result for arithmetic binary ops.
[[nodiscard]] inline dtype arithmetic_type(kernels::binary_op op, dtype promoted) {
    if (op == kernels::binary_op::div && !is_floating_point(promoted)) return default_float_dtype;
    if (op == kernels::binary_op::pow && promoted == dtype::bool_) return dtype::int64;
    return promoted;
}

inline void check_defined_for(kernels::binary_op op, const Tensor& t) {
    if (!t.defined()) fail(concat(op_name(op), ": got an undefined tensor"));
}

/// The common case without broadcasting machinery: floating operands of the
/// result dtype, contiguous, same sizes (or a number). Returns an undefined
/// tensor when the general path is needed.
template <class T>
[[nodiscard]] Tensor binary_fast(kernels::binary_op op, const Tensor& a, const T* b, std::ptrdiff_t sb, bool b_first) {
    Tensor out = empty(a.sizes(), a.type());
    const T* pa = a.data_ptr<T>();
    T* po = out.data_ptr<T>();
    const auto n = static_cast<std::size_t>(a.numel());
    using kernels::binary_op;
    if (n == 1 && (op == binary_op::add || op == binary_op::sub || op == binary_op::mul || op == binary_op::div)) {
        // One element (autograd on scalars): plain arithmetic, the same IEEE result as the
        // kernel without its dispatch and loop setup.
        const T x = b_first ? *b : *pa, y = b_first ? *pa : *b;
        switch (op) {
            case binary_op::add: *po = x + y; break;
            case binary_op::sub: *po = x - y; break;
            case binary_op::mul: *po = x * y; break;
            default: *po = x / y; break;
        }
        return out;
    }
    if (b_first) kernels::binary(op, b, sb, pa, 1, po, n);
    else kernels::binary(op, pa, 1, b, sb, po, n);
    return out;
}

inline Tensor binary_tt(kernels::binary_op op, const Tensor& a, const Tensor& b) {
    check_defined_for(op, a);
    check_defined_for(op, b);
    const dtype type = arithmetic_type(op, result_type_of(a, b));
    if (is_floating_point(type) && a.type() == type && b.type() == type && a.sizes() == b.sizes() &&
        a.is_contiguous() && b.is_contiguous()) {
        if (type == dtype::float32) return binary_fast<float>(op, a, b.data_ptr<float>(), 1, false);
        return binary_fast<double>(op, a, b.data_ptr<double>(), 1, false);
    }
    return run_binary(op, a, b, type);
}
/// A tensor and a C++ number, in either order (`number_first` for number op tensor).
inline Tensor binary_with_scalar(kernels::binary_op op, const Tensor& t, const scalar& s, bool number_first) {
    check_defined_for(op, t);
    const dtype type = arithmetic_type(op, number_first ? result_type_of(s, t) : result_type_of(t, s));
    if (t.type() == type && t.is_contiguous()) {
        if (type == dtype::float32) {
            const float v = s.to<float>();
            return binary_fast<float>(op, t, &v, 0, number_first);
        }
        if (type == dtype::float64) {
            const double v = s.to<double>();
            return binary_fast<double>(op, t, &v, 0, number_first);
        }
    }
    const Tensor c = as_tensor(s, type);
    return number_first ? run_binary(op, c, t, type) : run_binary(op, t, c, type);
}
inline Tensor binary_ts(kernels::binary_op op, const Tensor& a, const scalar& b) {
    return binary_with_scalar(op, a, b, false);
}
inline Tensor binary_st(kernels::binary_op op, const scalar& a, const Tensor& b) {
    return binary_with_scalar(op, b, a, true);
}

inline Tensor run_compare(kernels::compare_op op, const Tensor& a, const Tensor& b, dtype type) {
    check_defined("comparison", a);
    check_defined("comparison", b);
    const int_list shape = broadcast_shapes(a.sizes(), b.sizes());
    return map_broadcast(a, b, type, dtype::bool_, shape,
                         [&](auto z, std::array<char*, 3> p, std::array<std::int64_t, 3> st, std::int64_t n) {
                             using T = decltype(z);
                             constexpr auto es = static_cast<std::int64_t>(sizeof(T));
                             if constexpr (std::is_floating_point_v<T>) {
                                 if (st[0] == 1) {
                                     kernels::compare(op, row_ptr<T>(p[1]), st[1] / es, row_ptr<T>(p[2]), st[2] / es,
                                                      row_ptr<bool>(p[0]), static_cast<std::size_t>(n));
                                     return;
                                 }
                             }
                             for (std::int64_t i = 0; i < n; ++i) {
                                 T va, vb;
                                 std::memcpy(&va, p[1] + i * st[1], sizeof(T));
                                 std::memcpy(&vb, p[2] + i * st[2], sizeof(T));
                                 const bool r = kernels::reference::compare_scalar<T>(op, va, vb);
                                 std::memcpy(p[0] + i * st[0], &r, 1);
                             }
                         });
}

}  // namespace detail

/// The dtype an op on these operands computes in (torch.result_type).
template <class A, class B>
[[nodiscard]] dtype result_type(const A& a, const B& b) {
    return detail::result_type_of(a, b);
}

namespace ops {
// The raw forward of each op: no autograd. graft::add etc. (autograd/) record the graph.
#define GRAFT_DETAIL_BINARY_OP(fn, op)                                                                  \
    [[nodiscard]] inline Tensor fn(const Tensor& a, const Tensor& b) {                                  \
        const detail::observed_op obs;                                                                  \
        return obs.done(detail::binary_tt(op, a, b), #fn, {a, b});                                      \
    }                                                                                                   \
    [[nodiscard]] inline Tensor fn(const Tensor& a, const scalar& b) {                                  \
        const detail::observed_op obs;                                                                  \
        return obs.done(detail::binary_ts(op, a, b), #fn, {a, b});                                      \
    }                                                                                                   \
    [[nodiscard]] inline Tensor fn(const scalar& a, const Tensor& b) {                                  \
        const detail::observed_op obs;                                                                  \
        return obs.done(detail::binary_st(op, a, b), #fn, {a, b});                                      \
    }

GRAFT_DETAIL_BINARY_OP(add, kernels::binary_op::add)
GRAFT_DETAIL_BINARY_OP(sub, kernels::binary_op::sub)
GRAFT_DETAIL_BINARY_OP(mul, kernels::binary_op::mul)
GRAFT_DETAIL_BINARY_OP(div, kernels::binary_op::div)
GRAFT_DETAIL_BINARY_OP(pow, kernels::binary_op::pow)
GRAFT_DETAIL_BINARY_OP(maximum, kernels::binary_op::maximum)
GRAFT_DETAIL_BINARY_OP(minimum, kernels::binary_op::minimum)
#undef GRAFT_DETAIL_BINARY_OP

}  // namespace ops

#define GRAFT_DETAIL_COMPARE_OP(fn, op, sym)                                                              \
    [[nodiscard]] inline Tensor fn(const Tensor& a, const Tensor& b) {                                    \
        const detail::observed_op obs;                                                                    \
        return obs.done(detail::run_compare(op, a, b, detail::result_type_of(a, b)), #fn, {a, b});        \
    }                                                                                                     \
    [[nodiscard]] inline Tensor fn(const Tensor& a, const scalar& b) {                                    \
        const detail::observed_op obs;                                                                    \
        const dtype t = detail::result_type_of(a, b);                                                     \
        return obs.done(detail::run_compare(op, a, detail::as_tensor(b, t), t), #fn, {a, b});            \
    }                                                                                                     \
    [[nodiscard]] inline Tensor operator sym(const Tensor& a, const Tensor& b) { return fn(a, b); }      \
    [[nodiscard]] inline Tensor operator sym(const Tensor& a, const scalar& b) { return fn(a, b); }

GRAFT_DETAIL_COMPARE_OP(eq, kernels::compare_op::eq, ==)
GRAFT_DETAIL_COMPARE_OP(ne, kernels::compare_op::ne, !=)
GRAFT_DETAIL_COMPARE_OP(lt, kernels::compare_op::lt, <)
GRAFT_DETAIL_COMPARE_OP(le, kernels::compare_op::le, <=)
GRAFT_DETAIL_COMPARE_OP(gt, kernels::compare_op::gt, >)
GRAFT_DETAIL_COMPARE_OP(ge, kernels::compare_op::ge, >=)
#undef GRAFT_DETAIL_COMPARE_OP


/// where(cond, a, b): a where cond is true, else b; all three broadcast. cond must be bool.
namespace ops {
[[nodiscard]] inline Tensor where_unobserved(const Tensor& cond, const Tensor& a, const Tensor& b);
[[nodiscard]] inline Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
    const detail::observed_op obs;
    return obs.done(where_unobserved(cond, a, b), "where", {cond, a, b});
}
/// where without reporting to an op observer (the body of where).
[[nodiscard]] inline Tensor where_unobserved(const Tensor& cond, const Tensor& a, const Tensor& b) {
    detail::check_defined("where", cond);
    detail::check_defined("where", a);
    detail::check_defined("where", b);
    detail::check(cond.type() == dtype::bool_, "where: expected condition to be a bool tensor, but got a tensor "
                  "with dtype ", cond.type());
    const dtype type = detail::result_type_of(a, b);
    const int_list shape = broadcast_shapes(cond.sizes(), broadcast_shapes(a.sizes(), b.sizes()));
    const Tensor c = detail::raw::expand(cond, shape), x = detail::raw::expand(detail::raw::to(a, type), shape),
                 y = detail::raw::expand(detail::raw::to(b, type), shape);
    Tensor out = empty(shape, type);
    const int_list so = detail::byte_strides(out), sc = detail::byte_strides(c), sx = detail::byte_strides(x),
                   sy = detail::byte_strides(y);
    detail::visit_dtype(type, [&](auto z) {
        using T = decltype(z);
        detail::for_each_row<4>(
            shape, {&so, &sc, &sx, &sy},
            {static_cast<char*>(out.raw_data()), static_cast<char*>(c.raw_data()), static_cast<char*>(x.raw_data()),
             static_cast<char*>(y.raw_data())},
            [&](std::array<char*, 4> p, std::array<std::int64_t, 4> st, std::int64_t n) {
                constexpr auto es = static_cast<std::int64_t>(sizeof(T));
                if constexpr (std::is_floating_point_v<T>) {
                    if (st[0] == es) {
                        kernels::where(detail::row_ptr<bool>(p[1]), st[1], detail::row_ptr<T>(p[2]), st[2] / es,
                                       detail::row_ptr<T>(p[3]), st[3] / es, detail::row_ptr<T>(p[0]),
                                       static_cast<std::size_t>(n));
                        return;
                    }
                }
                for (std::int64_t i = 0; i < n; ++i) {
                    bool cv;
                    std::memcpy(&cv, p[1] + i * st[1], 1);
                    std::memcpy(p[0] + i * st[0], cv ? p[2] + i * st[2] : p[3] + i * st[3], sizeof(T));
                }
            });
    });
    return out;
}

/// Elementwise logical and of two bool tensors (broadcast); not differentiable.
[[nodiscard]] inline Tensor logical_and(const Tensor& a, const Tensor& b) {
    detail::check_defined("logical_and", a);
    detail::check_defined("logical_and", b);
    detail::check(a.type() == dtype::bool_ && b.type() == dtype::bool_,
                  "logical_and: expected two bool tensors, got ", a.type(), " and ", b.type());
    const detail::observed_op obs;
    return obs.done(where(a, b, zeros({}, dtype::bool_)), "logical_and", {a, b});
}
[[nodiscard]] inline Tensor where(const Tensor& cond, const Tensor& a, const scalar& b) {
    const detail::observed_op obs;
    const dtype t = detail::result_type_of(a, b);
    return obs.done(where(cond, detail::raw::to(a, t), detail::as_tensor(b, t)), "where", {cond, a, b});
}
[[nodiscard]] inline Tensor where(const Tensor& cond, const scalar& a, const Tensor& b) {
    const detail::observed_op obs;
    const dtype t = detail::result_type_of(a, b);
    return obs.done(where(cond, detail::as_tensor(a, t), detail::raw::to(b, t)), "where", {cond, a, b});
}

}  // namespace ops
using ops::logical_and;  // not differentiable: the same function with or without autograd

namespace detail {

[[nodiscard]] constexpr std::string_view op_name(kernels::unary_op op) {
    using kernels::unary_op;
    switch (op) {
        case unary_op::neg: return "neg";
        case unary_op::abs: return "abs";
        case unary_op::exp: return "exp";
        case unary_op::log: return "log";
        case unary_op::sqrt: return "sqrt";
        case unary_op::rsqrt: return "rsqrt";
        case unary_op::tanh: return "tanh";
        case unary_op::sigmoid: return "sigmoid";
        case unary_op::relu: return "relu";
        case unary_op::gelu: return "gelu";
        case unary_op::gelu_tanh: return "gelu";
        case unary_op::sin: return "sin";
        case unary_op::cos: return "cos";
    }
    return "?";
}

inline Tensor run_unary(kernels::unary_op op, const Tensor& a) {
    using kernels::unary_op;
    const std::string_view name = op_name(op);
    if (!a.defined()) fail(concat(name, ": got an undefined tensor"));
    const bool integer_ok = op == unary_op::neg || op == unary_op::abs || op == unary_op::relu;
    if (integer_ok && !is_floating_point(a.type())) {
        check(a.type() != dtype::bool_, name, ": not supported for bool tensors",
              op == unary_op::neg ? " (negation, the `-` operator, on a bool tensor is not supported; use "
                                    "logical_not() instead)"
                                  : "");
        Tensor out = empty(a.sizes(), dtype::int64);
        const auto in = a.to_vector<std::int64_t>();
        auto* o = out.data_ptr<std::int64_t>();
        for (std::size_t i = 0; i < in.size(); ++i) {
            const std::int64_t v = in[i];
            o[i] = op == unary_op::neg ? static_cast<std::int64_t>(0ULL - static_cast<std::uint64_t>(v))
                   : op == unary_op::abs ? (v < 0 ? static_cast<std::int64_t>(0ULL - static_cast<std::uint64_t>(v)) : v)
                                         : (v < 0 ? 0 : v);
        }
        return out;
    }
    const dtype type = is_floating_point(a.type()) ? a.type() : default_float_dtype;
    if (a.type() == type && a.is_contiguous()) {
        Tensor out = empty(a.sizes(), type);
        const auto n = static_cast<std::size_t>(a.numel());
        if (type == dtype::float32) kernels::unary(op, a.data_ptr<float>(), 1, out.data_ptr<float>(), n);
        else kernels::unary(op, a.data_ptr<double>(), 1, out.data_ptr<double>(), n);
        return out;
    }
    const Tensor x = raw::to(a, type);
    Tensor out = empty(a.sizes(), type);
    const int_list so = byte_strides(out), sx = byte_strides(x);
    visit_dtype(type, [&](auto z) {
        using T = decltype(z);
        if constexpr (std::is_floating_point_v<T>) {
            for_each_row<2>(a.sizes(), {&so, &sx},
                            {static_cast<char*>(out.raw_data()), static_cast<char*>(x.raw_data())},
                            [&](std::array<char*, 2> p, std::array<std::int64_t, 2> st, std::int64_t n) {
                                constexpr auto es = static_cast<std::int64_t>(sizeof(T));
                                kernels::unary(op, row_ptr<T>(p[1]), st[1] / es, row_ptr<T>(p[0]),
                                               static_cast<std::size_t>(n));
                            });
        }
    });
    return out;
}

}  // namespace detail

namespace ops {
[[nodiscard]] inline Tensor neg(const Tensor& a) {
    const detail::observed_op obs;
    return obs.done(detail::run_unary(kernels::unary_op::neg, a), "neg", {a});
}
[[nodiscard]] inline Tensor abs(const Tensor& a) {
    const detail::observed_op obs;
    return obs.done(detail::run_unary(kernels::unary_op::abs, a), "abs", {a});
}
[[nodiscard]] inline Tensor exp(const Tensor& a) {
    const detail::observed_op obs;
    return obs.done(detail::run_unary(kernels::unary_op::exp, a), "exp", {a});
}
[[nodiscard]] inline Tensor log(const Tensor& a) {
    const detail::observed_op obs;
    return obs.done(detail::run_unary(kernels::unary_op::log, a), "log", {a});
}
[[nodiscard]] inline Tensor sqrt(const Tensor& a) {
    const detail::observed_op obs;
    return obs.done(detail::run_unary(kernels::unary_op::sqrt, a), "sqrt", {a});
}
[[nodiscard]] inline Tensor rsqrt(const Tensor& a) {
    const detail::observed_op obs;
    return obs.done(detail::run_unary(kernels::unary_op::rsqrt, a), "rsqrt", {a});
}
[[nodiscard]] inline Tensor tanh(const Tensor& a) {
    const detail::observed_op obs;
    return obs.done(detail::run_unary(kernels::unary_op::tanh, a), "tanh", {a});
}
[[nodiscard]] inline Tensor sigmoid(const Tensor& a) {
    const detail::observed_op obs;
    return obs.done(detail::run_unary(kernels::unary_op::sigmoid, a), "sigmoid", {a});
}
[[nodiscard]] inline Tensor relu(const Tensor& a) {
    const detail::observed_op obs;
    return obs.done(detail::run_unary(kernels::unary_op::relu, a), "relu", {a});
}
[[nodiscard]] inline Tensor sin(const Tensor& a) {
    const detail::observed_op obs;
    return obs.done(detail::run_unary(kernels::unary_op::sin, a), "sin", {a});
}
[[nodiscard]] inline Tensor cos(const Tensor& a) {
    const detail::observed_op obs;
    return obs.done(detail::run_unary(kernels::unary_op::cos, a), "cos", {a});
}
/// GELU; `approximate` is "none" (exact, with erf) or "tanh", as torch.nn.functional.gelu.
[[nodiscard]] inline Tensor gelu(const Tensor& a, std::string_view approximate = "none") {
    detail::check(approximate == "none" || approximate == "tanh",
                  "gelu: approximate must be \"none\" or \"tanh\", got \"", approximate, "\"");
    const detail::observed_op obs;
    return obs.done(detail::run_unary(approximate == "none" ? kernels::unary_op::gelu : kernels::unary_op::gelu_tanh, a),
                    "gelu", {a}, {{"approximate", std::string(approximate)}});
}

}  // namespace ops
}  // namespace graft
