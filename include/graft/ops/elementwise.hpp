#pragma once
// Elementwise tensor operations with PyTorch's broadcasting and type promotion.
// float32/float64 run on the SIMD kernels; int64 and bool run plain loops.
#include <cstdint>
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

    static int promote(int a, int b) {
        if (a < 0) return b;
        if (b < 0) return a;
        return static_cast<int>(promote_types(static_cast<dtype>(a), static_cast<dtype>(b)));
    }
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

GRAFT_INLINE void check_defined(const char* op, const Tensor& t);

/// An operand of a computation whose dtype is the storage dtype `type` (float16, bfloat16,
/// int32): converted to `type` first (as PyTorch converts every operand to the result dtype),
/// then widened exactly to compute_dtype(type), which the kernels compute in.
[[nodiscard]] GRAFT_INLINE Tensor widen_operand(const Tensor& t, dtype type);
/// An op's result computed from widened operands, rounded back to the storage dtype `type`
/// when it came out in compute_dtype(type) (results of another dtype, such as bool or an
/// integer sum, are PyTorch's as they are).
[[nodiscard]] GRAFT_INLINE Tensor narrow_result(const Tensor& out, dtype type);

/// A C++ number as a 0-dim tensor of the computation's dtype.
[[nodiscard]] GRAFT_INLINE Tensor as_tensor(const scalar& s, dtype type);

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

GRAFT_INLINE Tensor run_binary(kernels::binary_op op, const Tensor& a, const Tensor& b, dtype type);

/// dtype of the computation and of the result for arithmetic binary ops.
[[nodiscard]] inline dtype arithmetic_type(kernels::binary_op op, dtype promoted) {
    if (op == kernels::binary_op::div && !is_floating_point(promoted)) return default_float_dtype;
    if (op == kernels::binary_op::pow && promoted == dtype::bool_) return dtype::int64;
    return promoted;
}

GRAFT_INLINE void check_defined_for(kernels::binary_op op, const Tensor& t);

/// The common case without broadcasting machinery: floating operands of the
/// result dtype, contiguous, same sizes (or a number). Returns an undefined
/// tensor when the general path is needed.
template <class T>
[[nodiscard]] Tensor binary_fast(kernels::binary_op op, const Tensor& a, const T* b, std::ptrdiff_t sb, bool b_first) {
    Tensor out = empty_same_shape(a);
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

GRAFT_INLINE Tensor binary_tt(kernels::binary_op op, const Tensor& a, const Tensor& b);
/// A tensor and a C++ number, in either order (`number_first` for number op tensor).
GRAFT_INLINE Tensor binary_with_scalar(kernels::binary_op op, const Tensor& t, const scalar& s, bool number_first);
inline Tensor binary_ts(kernels::binary_op op, const Tensor& a, const scalar& b) {
    return binary_with_scalar(op, a, b, false);
}
inline Tensor binary_st(kernels::binary_op op, const scalar& a, const Tensor& b) {
    return binary_with_scalar(op, b, a, true);
}

GRAFT_INLINE Tensor run_compare(kernels::compare_op op, const Tensor& a, const Tensor& b, dtype type);

}  // namespace detail

/// The dtype an op on these operands computes in (torch.result_type).
template <class A, class B>
[[nodiscard]] dtype result_type(const A& a, const B& b) {
    return detail::result_type_of(a, b);
}

namespace ops {
// The raw forward of each op: no autograd. graft::add etc. (autograd/) record the graph.
#define GRAFT_DETAIL_BINARY_OP(fn, op)                                                                  \
    [[nodiscard]] GRAFT_INLINE Tensor fn(const Tensor& a, const Tensor& b);                             \
    [[nodiscard]] GRAFT_INLINE Tensor fn(const Tensor& a, const scalar& b);                             \
    [[nodiscard]] GRAFT_INLINE Tensor fn(const scalar& a, const Tensor& b);

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
    [[nodiscard]] GRAFT_INLINE Tensor fn(const Tensor& a, const Tensor& b);                               \
    [[nodiscard]] GRAFT_INLINE Tensor fn(const Tensor& a, const scalar& b);                               \
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
[[nodiscard]] GRAFT_INLINE Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
/// where without reporting to an op observer (the body of where).
[[nodiscard]] GRAFT_INLINE Tensor where_unobserved(const Tensor& cond, const Tensor& a, const Tensor& b);

/// Elementwise logical and of two bool tensors (broadcast); not differentiable.
[[nodiscard]] GRAFT_INLINE Tensor logical_and(const Tensor& a, const Tensor& b);
[[nodiscard]] GRAFT_INLINE Tensor where(const Tensor& cond, const Tensor& a, const scalar& b);
[[nodiscard]] GRAFT_INLINE Tensor where(const Tensor& cond, const scalar& a, const Tensor& b);

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
        case unary_op::normal_cdf: return "normal_cdf";
        case unary_op::sin: return "sin";
        case unary_op::cos: return "cos";
        case unary_op::log1p: return "log1p";
        case unary_op::expm1: return "expm1";
    }
    return "?";
}

GRAFT_INLINE Tensor run_unary(kernels::unary_op op, const Tensor& a);

}  // namespace detail

namespace ops {
[[nodiscard]] GRAFT_INLINE Tensor neg(const Tensor& a);
[[nodiscard]] GRAFT_INLINE Tensor abs(const Tensor& a);
[[nodiscard]] GRAFT_INLINE Tensor exp(const Tensor& a);
[[nodiscard]] GRAFT_INLINE Tensor log(const Tensor& a);
[[nodiscard]] GRAFT_INLINE Tensor sqrt(const Tensor& a);
[[nodiscard]] GRAFT_INLINE Tensor rsqrt(const Tensor& a);
[[nodiscard]] GRAFT_INLINE Tensor tanh(const Tensor& a);
[[nodiscard]] GRAFT_INLINE Tensor sigmoid(const Tensor& a);
[[nodiscard]] GRAFT_INLINE Tensor relu(const Tensor& a);
[[nodiscard]] GRAFT_INLINE Tensor sin(const Tensor& a);
[[nodiscard]] GRAFT_INLINE Tensor cos(const Tensor& a);
/// log(1+x), accurate for small |x| (log1p(-1) = -inf, x < -1 gives NaN).
[[nodiscard]] GRAFT_INLINE Tensor log1p(const Tensor& a);
/// exp(x)-1, accurate for small |x|.
[[nodiscard]] GRAFT_INLINE Tensor expm1(const Tensor& a);
/// GELU; `approximate` is "none" (exact, with erf) or "tanh", as torch.nn.functional.gelu.
[[nodiscard]] GRAFT_INLINE Tensor gelu(const Tensor& a, std::string_view approximate = "none");
/// The standard normal CDF 0.5*erfc(-x/sqrt(2)) of a floating-point tensor (IR kind normal_cdf).
[[nodiscard]] GRAFT_INLINE Tensor normal_cdf(const Tensor& a);
/// Binary cross entropy per element, as PyTorch 1.13's CPU kernel:
/// (t - 1) * max(log(1 - x), -100) - t * max(log(x), -100). `input` and `target` have the same
/// sizes and floating dtype; every input element must be in [0, 1] (NaN is not), checked on
/// each call. IR kind binary_cross_entropy.
[[nodiscard]] GRAFT_INLINE Tensor binary_cross_entropy(const Tensor& input, const Tensor& target);

}  // namespace ops
}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/ops/impl/elementwise.ipp"
#endif
