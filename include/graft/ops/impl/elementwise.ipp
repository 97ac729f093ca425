#pragma once
// Definitions for graft/ops/elementwise.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/ops/elementwise.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace graft {
namespace detail {

GRAFT_INLINE void check_defined(const char* op, const Tensor& t) {
    check(t.defined(), op, ": got an undefined tensor");
}

GRAFT_INLINE Tensor as_tensor(const scalar& s, dtype type) { return full({}, s, type); }

GRAFT_INLINE Tensor widen_operand(const Tensor& t, dtype type) {
    return raw::to(raw::to(t, type), compute_dtype(type));
}

GRAFT_INLINE Tensor narrow_result(const Tensor& out, dtype type) {
    return out.defined() && out.type() == compute_dtype(type) ? raw::to(out, type) : out;
}

GRAFT_INLINE Tensor run_binary(kernels::binary_op op, const Tensor& a, const Tensor& b, dtype type) {
    using kernels::binary_op;
    if (is_storage_dtype(type))
        return raw::to(run_binary(op, widen_operand(a, type), widen_operand(b, type), compute_dtype(type)), type);
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

GRAFT_INLINE void check_defined_for(kernels::binary_op op, const Tensor& t) {
    if (!t.defined()) fail(concat(op_name(op), ": got an undefined tensor"));
}

GRAFT_INLINE Tensor binary_tt(kernels::binary_op op, const Tensor& a, const Tensor& b) {
    check_defined_for(op, a);
    check_defined_for(op, b);
    const dtype type = arithmetic_type(op, result_type_of(a, b));
    if ((type == dtype::float32 || type == dtype::float64) && a.type() == type && b.type() == type &&
        a.sizes() == b.sizes() && a.is_contiguous() && b.is_contiguous()) {
        if (type == dtype::float32) return binary_fast<float>(op, a, b.data_ptr<float>(), 1, false);
        return binary_fast<double>(op, a, b.data_ptr<double>(), 1, false);
    }
    return run_binary(op, a, b, type);
}

GRAFT_INLINE Tensor binary_with_scalar(kernels::binary_op op, const Tensor& t, const scalar& s, bool number_first) {
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

GRAFT_INLINE Tensor run_compare(kernels::compare_op op, const Tensor& a, const Tensor& b, dtype type) {
    check_defined("comparison", a);
    check_defined("comparison", b);
    if (is_storage_dtype(type))
        return run_compare(op, widen_operand(a, type), widen_operand(b, type), compute_dtype(type));
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

namespace ops {
#define GRAFT_DETAIL_BINARY_OP(fn, op)                                                                  \
    GRAFT_INLINE Tensor fn(const Tensor& a, const Tensor& b) {                                          \
        const detail::observed_op obs;                                                                  \
        return obs.done(detail::binary_tt(op, a, b), #fn, {a, b});                                      \
    }                                                                                                   \
    GRAFT_INLINE Tensor fn(const Tensor& a, const scalar& b) {                                          \
        const detail::observed_op obs;                                                                  \
        return obs.done(detail::binary_ts(op, a, b), #fn, {a, b});                                      \
    }                                                                                                   \
    GRAFT_INLINE Tensor fn(const scalar& a, const Tensor& b) {                                          \
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
    GRAFT_INLINE Tensor fn(const Tensor& a, const Tensor& b) {                                            \
        const detail::observed_op obs;                                                                    \
        return obs.done(detail::run_compare(op, a, b, detail::result_type_of(a, b)), #fn, {a, b});        \
    }                                                                                                     \
    GRAFT_INLINE Tensor fn(const Tensor& a, const scalar& b) {                                            \
        const detail::observed_op obs;                                                                    \
        const dtype t = detail::result_type_of(a, b);                                                     \
        return obs.done(detail::run_compare(op, a, detail::as_tensor(b, t), t), #fn, {a, b});            \
    }

GRAFT_DETAIL_COMPARE_OP(eq, kernels::compare_op::eq, ==)
GRAFT_DETAIL_COMPARE_OP(ne, kernels::compare_op::ne, !=)
GRAFT_DETAIL_COMPARE_OP(lt, kernels::compare_op::lt, <)
GRAFT_DETAIL_COMPARE_OP(le, kernels::compare_op::le, <=)
GRAFT_DETAIL_COMPARE_OP(gt, kernels::compare_op::gt, >)
GRAFT_DETAIL_COMPARE_OP(ge, kernels::compare_op::ge, >=)
#undef GRAFT_DETAIL_COMPARE_OP

namespace ops {
GRAFT_INLINE Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
    const detail::observed_op obs;
    return obs.done(where_unobserved(cond, a, b), "where", {cond, a, b});
}

GRAFT_INLINE Tensor where_unobserved(const Tensor& cond, const Tensor& a, const Tensor& b) {
    detail::check_defined("where", cond);
    detail::check_defined("where", a);
    detail::check_defined("where", b);
    detail::check(cond.type() == dtype::bool_, "where: expected condition to be a bool tensor, but got a tensor "
                  "with dtype ", cond.type());
    const dtype type = detail::result_type_of(a, b);
    if (is_storage_dtype(type))  // selects values: exact through the compute dtype
        return detail::raw::to(
            where_unobserved(cond, detail::widen_operand(a, type), detail::widen_operand(b, type)), type);
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

GRAFT_INLINE Tensor logical_and(const Tensor& a, const Tensor& b) {
    detail::check_defined("logical_and", a);
    detail::check_defined("logical_and", b);
    detail::check(a.type() == dtype::bool_ && b.type() == dtype::bool_,
                  "logical_and: expected two bool tensors, got ", a.type(), " and ", b.type());
    const detail::observed_op obs;
    return obs.done(where(a, b, zeros({}, dtype::bool_)), "logical_and", {a, b});
}

GRAFT_INLINE Tensor where(const Tensor& cond, const Tensor& a, const scalar& b) {
    const detail::observed_op obs;
    const dtype t = detail::result_type_of(a, b);
    return obs.done(where(cond, detail::raw::to(a, t), detail::as_tensor(b, t)), "where", {cond, a, b});
}

GRAFT_INLINE Tensor where(const Tensor& cond, const scalar& a, const Tensor& b) {
    const detail::observed_op obs;
    const dtype t = detail::result_type_of(a, b);
    return obs.done(where(cond, detail::as_tensor(a, t), detail::raw::to(b, t)), "where", {cond, a, b});
}

}  // namespace ops

namespace detail {

GRAFT_INLINE Tensor run_unary(kernels::unary_op op, const Tensor& a) {
    using kernels::unary_op;
    const std::string_view name = op_name(op);
    if (!a.defined()) fail(concat(name, ": got an undefined tensor"));
    if (is_storage_dtype(a.type())) return narrow_result(run_unary(op, raw::to(a, compute_dtype(a.type()))), a.type());
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
        Tensor out = empty_same_shape(a);
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
GRAFT_INLINE Tensor neg(const Tensor& a) {
    const detail::observed_op obs;
    return obs.done(detail::run_unary(kernels::unary_op::neg, a), "neg", {a});
}

GRAFT_INLINE Tensor abs(const Tensor& a) {
    const detail::observed_op obs;
    return obs.done(detail::run_unary(kernels::unary_op::abs, a), "abs", {a});
}

GRAFT_INLINE Tensor exp(const Tensor& a) {
    const detail::observed_op obs;
    return obs.done(detail::run_unary(kernels::unary_op::exp, a), "exp", {a});
}

GRAFT_INLINE Tensor log(const Tensor& a) {
    const detail::observed_op obs;
    return obs.done(detail::run_unary(kernels::unary_op::log, a), "log", {a});
}

GRAFT_INLINE Tensor sqrt(const Tensor& a) {
    const detail::observed_op obs;
    return obs.done(detail::run_unary(kernels::unary_op::sqrt, a), "sqrt", {a});
}

GRAFT_INLINE Tensor rsqrt(const Tensor& a) {
    const detail::observed_op obs;
    return obs.done(detail::run_unary(kernels::unary_op::rsqrt, a), "rsqrt", {a});
}

GRAFT_INLINE Tensor tanh(const Tensor& a) {
    const detail::observed_op obs;
    return obs.done(detail::run_unary(kernels::unary_op::tanh, a), "tanh", {a});
}

GRAFT_INLINE Tensor sigmoid(const Tensor& a) {
    const detail::observed_op obs;
    return obs.done(detail::run_unary(kernels::unary_op::sigmoid, a), "sigmoid", {a});
}

GRAFT_INLINE Tensor relu(const Tensor& a) {
    const detail::observed_op obs;
    return obs.done(detail::run_unary(kernels::unary_op::relu, a), "relu", {a});
}

GRAFT_INLINE Tensor sin(const Tensor& a) {
    const detail::observed_op obs;
    return obs.done(detail::run_unary(kernels::unary_op::sin, a), "sin", {a});
}

GRAFT_INLINE Tensor cos(const Tensor& a) {
    const detail::observed_op obs;
    return obs.done(detail::run_unary(kernels::unary_op::cos, a), "cos", {a});
}

GRAFT_INLINE Tensor log1p(const Tensor& a) {
    const detail::observed_op obs;
    return obs.done(detail::run_unary(kernels::unary_op::log1p, a), "log1p", {a});
}

GRAFT_INLINE Tensor expm1(const Tensor& a) {
    const detail::observed_op obs;
    return obs.done(detail::run_unary(kernels::unary_op::expm1, a), "expm1", {a});
}

GRAFT_INLINE Tensor gelu(const Tensor& a, std::string_view approximate) {
    detail::check(approximate == "none" || approximate == "tanh",
                  "gelu: approximate must be \"none\" or \"tanh\", got \"", approximate, "\"");
    const detail::observed_op obs;
    return obs.done(detail::run_unary(approximate == "none" ? kernels::unary_op::gelu : kernels::unary_op::gelu_tanh, a),
                    "gelu", {a}, {{"approximate", std::string(approximate)}});
}

GRAFT_INLINE Tensor binary_cross_entropy(const Tensor& input, const Tensor& target) {
    constexpr const char* op = "binary_cross_entropy";
    detail::check_defined(op, input);
    detail::check_defined(op, target);
    detail::check(is_floating_point(input.type()), op, ": expected a floating-point input, got ", input.type());
    detail::check(target.type() == input.type(), op, ": Found dtype ", target.type(), " but expected ", input.type());
    detail::check(target.sizes() == input.sizes(), op, ": Using a target size (", target.sizes(),
                  ") that is different to the input size (", input.sizes(), ") is deprecated. Please ensure they have the same size.");
    const detail::observed_op obs;  // one op for graph capture: IR kind binary_cross_entropy
    const Tensor x = graft::detail::raw::contiguous(input), t = graft::detail::raw::contiguous(target);
    Tensor out = empty(input.sizes(), input.type());
    const auto run = [&](auto zero) {
        using T = decltype(zero);
        const T* xp = x.data_ptr<T>();
        const T* tp = t.data_ptr<T>();
        T* op_out = out.data_ptr<T>();
        const std::int64_t n = x.numel();
        for (std::int64_t i = 0; i < n; ++i)  // checked first: a refused call writes nothing visible
            detail::check(xp[i] >= T(0) && xp[i] <= T(1), op, ": all elements of input should be between 0 and 1");
        for (std::int64_t i = 0; i < n; ++i)
            op_out[i] = (tp[i] - T(1)) * std::max(T(std::log(T(1) - xp[i])), T(-100)) -
                        tp[i] * std::max(T(std::log(xp[i])), T(-100));
    };
    if (input.type() == dtype::float32) run(0.0f);
    else run(0.0);
    return obs.done(out, "binary_cross_entropy", {input, target});
}

GRAFT_INLINE Tensor normal_cdf(const Tensor& a) {
    detail::check_defined("normal_cdf", a);
    detail::check(is_floating_point(a.type()), "normal_cdf: expected a floating-point tensor, got ", a.type());
    const detail::observed_op obs;  // one op for graph capture: IR kind normal_cdf
    return obs.done(detail::run_unary(kernels::unary_op::normal_cdf, a), "normal_cdf", {a});
}

}  // namespace ops
}  // namespace graft
