#pragma once
// The op table: one definition per elementwise op, read by every layer that
// needs to know about ops. Each definition (a type in graft::ops::def) names
// the op and its backward node, gives its arity and kernel, a scalar reference
// for one element, and its derivative written once, generically, with the
// ops' free functions. The eager engine instantiates the derivative with
// graft::Tensor (so backward is itself differentiable), the compile-time graphs
// (graft/expr) with expression types, and the graph IR with its values.
//
// `call(values...)` applies the op to values of any type that has the op as a free
// function (graft::tensor: graft::tanh etc., recorded by autograd).
// A derivative `grad_<i>(g, inputs..., out)` returns the gradient of input i,
// of the output's (broadcast) shape: the caller sums it back to the input's
// shape. `grad_reads<i>` says which of inputs/out that derivative reads, so
// callers save only what they need (PyTorch's saved-variable rules).
#include <array>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "graft/kernels/api.hpp"
#include "graft/kernels/reference.hpp"

namespace graft::ops {

/// What an op computes per element: its operands and result categories.
enum class op_kind {
    unary,    // one floating-point operand
    binary,   // two operands, broadcast, promoted to a common dtype
    compare,  // two operands -> bool, not differentiable
    where,    // (bool condition, a, b) -> a or b per element
    logical,  // bool operands -> bool (logical_and), not differentiable
};

/// Bits of `grad_reads`: which values a derivative reads.
inline constexpr unsigned reads_input0 = 1U << 0;
inline constexpr unsigned reads_input1 = 1U << 1;
inline constexpr unsigned reads_input2 = 1U << 2;
inline constexpr unsigned reads_output = 1U << 3;
[[nodiscard]] constexpr unsigned reads_input(int i) noexcept { return 1U << i; }

namespace def {

// Derivatives call the ops' free functions unqualified, found by argument-dependent
// lookup for the value type (graft::Tensor, expression types, IR values). These
// deleted declarations stop ordinary lookup here, so graft::ops' raw (non-recording)
// functions never compete with the value type's own.
void neg() = delete;
void abs() = delete;
void exp() = delete;
void log() = delete;
void sqrt() = delete;
void rsqrt() = delete;
void tanh() = delete;
void sigmoid() = delete;
void relu() = delete;
void sin() = delete;
void cos() = delete;
void log1p() = delete;
void expm1() = delete;
void sign() = delete;
void add() = delete;
void sub() = delete;
void mul() = delete;
void div() = delete;
void pow() = delete;
void maximum() = delete;
void minimum() = delete;
void eq() = delete;
void ne() = delete;
void lt() = delete;
void le() = delete;
void gt() = delete;
void ge() = delete;
void where() = delete;
void zeros_like() = delete;
void logical_and() = delete;

// ---------------------------------------------------------------- unary

#define GRAFT_DETAIL_UNARY_DEF(ident, kernel_op, backward_name, reads, ...)                          \
    struct ident##_op {                                                                               \
        static constexpr std::string_view name = #ident;                                              \
        static constexpr const char* node_name = backward_name;                                       \
        static constexpr op_kind kind = op_kind::unary;                                               \
        static constexpr int arity = 1;                                                               \
        static constexpr kernels::unary_op kernel = kernels::unary_op::kernel_op;                     \
        static constexpr bool differentiable = true;                                                  \
        static constexpr std::array<unsigned, 1> grad_reads{reads};                                   \
        template <class T>                                                                            \
        [[nodiscard]] static constexpr T scalar(T x) {                                                          \
            return kernels::reference::unary_scalar(kernel, x);                                       \
        }                                                                                             \
        template <class X>                                                                            \
        [[nodiscard]] static auto call(const X& x) {                                                  \
            return ident(x);                                                                          \
        }                                                                                             \
        template <class G, class X, class Y>                                                          \
        [[nodiscard]] static constexpr auto grad_0([[maybe_unused]] const G& g, [[maybe_unused]] const X& x,    \
                                         [[maybe_unused]] const Y& y) {                               \
            __VA_ARGS__                                                                               \
        }                                                                                             \
    };

GRAFT_DETAIL_UNARY_DEF(neg, neg, "NegBackward0", 0U, return -g;)
GRAFT_DETAIL_UNARY_DEF(abs, abs, "AbsBackward0", reads_input0, return g * sign(x);)
GRAFT_DETAIL_UNARY_DEF(exp, exp, "ExpBackward0", reads_output, return g * y;)
GRAFT_DETAIL_UNARY_DEF(log, log, "LogBackward0", reads_input0, return g / x;)
GRAFT_DETAIL_UNARY_DEF(sqrt, sqrt, "SqrtBackward0", reads_output, return g / (y * 2.0);)
GRAFT_DETAIL_UNARY_DEF(rsqrt, rsqrt, "RsqrtBackward0", reads_output, return g * (-0.5) * y * y * y;)
GRAFT_DETAIL_UNARY_DEF(tanh, tanh, "TanhBackward0", reads_output, return g * (1.0 - y * y);)
GRAFT_DETAIL_UNARY_DEF(sigmoid, sigmoid, "SigmoidBackward0", reads_output, return g * y * (1.0 - y);)
// relu: PyTorch's threshold_backward, result <= 0 ? 0 : grad (relu(NaN) = NaN passes the gradient).
GRAFT_DETAIL_UNARY_DEF(relu, relu, "ReluBackward0", reads_output, return where(y <= 0.0, zeros_like(g), g);)
GRAFT_DETAIL_UNARY_DEF(sin, sin, "SinBackward0", reads_input0, return g * cos(x);)
GRAFT_DETAIL_UNARY_DEF(cos, cos, "CosBackward0", reads_input0, return -g * sin(x);)
GRAFT_DETAIL_UNARY_DEF(log1p, log1p, "Log1PBackward0", reads_input0, return g / (x + 1.0);)
GRAFT_DETAIL_UNARY_DEF(expm1, expm1, "Expm1Backward0", reads_output, return g * (y + 1.0);)
#undef GRAFT_DETAIL_UNARY_DEF

// ---------------------------------------------------------------- binary

#define GRAFT_DETAIL_BINARY_DEF(ident, kernel_op, backward_name, reads_a, reads_b, grad_a_body, grad_b_body) \
    struct ident##_op {                                                                                       \
        static constexpr std::string_view name = #ident;                                                      \
        static constexpr const char* node_name = backward_name;                                               \
        static constexpr op_kind kind = op_kind::binary;                                                      \
        static constexpr int arity = 2;                                                                       \
        static constexpr kernels::binary_op kernel = kernels::binary_op::kernel_op;                           \
        static constexpr bool differentiable = true;                                                          \
        static constexpr std::array<unsigned, 2> grad_reads{reads_a, reads_b};                                \
        template <class T>                                                                                    \
        [[nodiscard]] static constexpr T scalar(T a, T b) {                                                             \
            return kernels::reference::binary_scalar(kernel, a, b);                                           \
        }                                                                                                     \
        template <class A, class B>                                                                           \
        [[nodiscard]] static auto call(const A& a, const B& b) {                                              \
            return ident(a, b);                                                                               \
        }                                                                                                     \
        template <class G, class A, class B, class Y>                                                         \
        [[nodiscard]] static constexpr auto grad_0([[maybe_unused]] const G& g, [[maybe_unused]] const A& a,            \
                                         [[maybe_unused]] const B& b, [[maybe_unused]] const Y& y) {          \
            grad_a_body                                                                                       \
        }                                                                                                     \
        template <class G, class A, class B, class Y>                                                         \
        [[nodiscard]] static constexpr auto grad_1([[maybe_unused]] const G& g, [[maybe_unused]] const A& a,            \
                                         [[maybe_unused]] const B& b, [[maybe_unused]] const Y& y) {          \
            grad_b_body                                                                                       \
        }                                                                                                     \
    };

GRAFT_DETAIL_BINARY_DEF(add, add, "AddBackward0", 0U, 0U, return g;, return g;)
GRAFT_DETAIL_BINARY_DEF(sub, sub, "SubBackward0", 0U, 0U, return g;, return -g;)
GRAFT_DETAIL_BINARY_DEF(mul, mul, "MulBackward0", reads_input1, reads_input0, return g * b;, return g * a;)
// d/db is PyTorch's -g * ((a / b) / b), a / b being the output: -g * a / (b * b) underflows
// b * b (0 / 1e-300 gave NaN, PyTorch -0).
GRAFT_DETAIL_BINARY_DEF(div, div, "DivBackward0", reads_input1, reads_input1 | reads_output, return g / b;,
                        return -g * (y / b);)
// PyTorch masks the 0 * inf cases: d/da is 0 where b == 0; d/db is 0 where a == 0 and b >= 0.
GRAFT_DETAIL_BINARY_DEF(pow, pow, "PowBackward1", reads_input0 | reads_input1,
                        reads_input0 | reads_input1 | reads_output,
                        return where(b == 0.0, zeros_like(g), g * b * pow(a, b - 1.0));,
                        return where(logical_and(a == 0.0, b >= 0.0), zeros_like(g), g * y * log(a));)
// Ties split the gradient evenly between the operands, and the losing operand's gradient is
// masked to zero, as PyTorch does (so at a NaN, where no comparison holds, both get it).
GRAFT_DETAIL_BINARY_DEF(maximum, maximum, "MaximumBackward0", reads_input0 | reads_input1,
                        reads_input0 | reads_input1,
                        return where(a < b, zeros_like(g), where(a == b, g * 0.5, g));,
                        return where(a > b, zeros_like(g), where(a == b, g * 0.5, g));)
GRAFT_DETAIL_BINARY_DEF(minimum, minimum, "MinimumBackward0", reads_input0 | reads_input1,
                        reads_input0 | reads_input1,
                        return where(a > b, zeros_like(g), where(a == b, g * 0.5, g));,
                        return where(a < b, zeros_like(g), where(a == b, g * 0.5, g));)
#undef GRAFT_DETAIL_BINARY_DEF

// ---------------------------------------------------------------- comparisons

#define GRAFT_DETAIL_COMPARE_DEF(ident, kernel_op)                             \
    struct ident##_op {                                                        \
        static constexpr std::string_view name = #ident;                       \
        static constexpr const char* node_name = nullptr;                      \
        static constexpr op_kind kind = op_kind::compare;                      \
        static constexpr int arity = 2;                                        \
        static constexpr kernels::compare_op kernel = kernels::compare_op::kernel_op; \
        static constexpr bool differentiable = false;                          \
        template <class T>                                                     \
        [[nodiscard]] static constexpr bool scalar(T a, T b) {                           \
            return kernels::reference::compare_scalar(kernel, a, b);           \
        }                                                                      \
        template <class A, class B>                                            \
        [[nodiscard]] static auto call(const A& a, const B& b) {               \
            return ident(a, b);                                                \
        }                                                                      \
    };
GRAFT_DETAIL_COMPARE_DEF(eq, eq)
GRAFT_DETAIL_COMPARE_DEF(ne, ne)
GRAFT_DETAIL_COMPARE_DEF(lt, lt)
GRAFT_DETAIL_COMPARE_DEF(le, le)
GRAFT_DETAIL_COMPARE_DEF(gt, gt)
GRAFT_DETAIL_COMPARE_DEF(ge, ge)
#undef GRAFT_DETAIL_COMPARE_DEF

// ---------------------------------------------------------------- where

/// where(cond, a, b): differentiable in a and b (inputs 1 and 2), not in cond.
struct where_op {
    static constexpr std::string_view name = "where";
    static constexpr const char* node_name = "WhereBackward0";
    static constexpr op_kind kind = op_kind::where;
    static constexpr int arity = 3;
    static constexpr bool differentiable = true;
    static constexpr std::array<unsigned, 3> grad_reads{0U, reads_input0, reads_input0};
    template <class T>
    [[nodiscard]] static constexpr T scalar(bool c, T a, T b) { return c ? a : b; }
    template <class C, class A, class B>
    [[nodiscard]] static auto call(const C& c, const A& a, const B& b) {
        return where(c, a, b);
    }
    template <class G, class C, class A, class B, class Y>
    [[nodiscard]] static constexpr auto grad_1(const G& g, const C& c, const A&, const B&, const Y&) {
        return where(c, g, zeros_like(g));
    }
    template <class G, class C, class A, class B, class Y>
    [[nodiscard]] static constexpr auto grad_2(const G& g, const C& c, const A&, const B&, const Y&) {
        return where(c, zeros_like(g), g);
    }
};

/// sign(x): -1, 0 or 1; 0 at NaN and at -0, as PyTorch's (0 < x) - (x < 0) (so abs's derivative
/// g * sign(x) is 0 at NaN, as PyTorch's). Its derivative is zero, as in PyTorch.
/// No SIMD kernel id: used by derivatives (abs) and by the compile-time graphs.
struct sign_op {
    static constexpr std::string_view name = "sign";
    static constexpr const char* node_name = "SignBackward0";
    static constexpr op_kind kind = op_kind::unary;
    static constexpr int arity = 1;
    static constexpr bool differentiable = true;
    static constexpr std::array<unsigned, 1> grad_reads{0U};
    template <class T>
    [[nodiscard]] static constexpr T scalar(T x) {
        return x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0));
    }
    template <class X>
    [[nodiscard]] static auto call(const X& x) {
        return sign(x);
    }
    template <class G, class X, class Y>
    [[nodiscard]] static constexpr auto grad_0(const G& g, const X&, const Y&) {
        return zeros_like(g);
    }
};

/// logical_and(a, b) of two bool values (used by pow's derivative); not differentiable.
struct logical_and_op {
    static constexpr std::string_view name = "logical_and";
    static constexpr const char* node_name = nullptr;
    static constexpr op_kind kind = op_kind::logical;
    static constexpr int arity = 2;
    static constexpr bool differentiable = false;
    [[nodiscard]] static constexpr bool scalar(bool a, bool b) { return a && b; }
    template <class A, class B>
    [[nodiscard]] static auto call(const A& a, const B& b) {
        return logical_and(a, b);
    }
};

}  // namespace def

/// Every op in the table, for code that iterates over all of them.
using all_elementwise_ops =
    std::tuple<def::neg_op, def::abs_op, def::exp_op, def::log_op, def::sqrt_op, def::rsqrt_op, def::tanh_op, def::sigmoid_op, def::relu_op, def::sin_op, def::cos_op, def::log1p_op, def::expm1_op, def::add_op, def::sub_op, def::mul_op, def::div_op, def::pow_op, def::maximum_op, def::minimum_op, def::eq_op, def::ne_op, def::lt_op, def::le_op, def::gt_op, def::ge_op, def::where_op>;

/// An op-table entry: what every layer may rely on.
template <class Op>
concept op_definition = requires {
    { Op::name } -> std::convertible_to<std::string_view>;
    { Op::kind } -> std::convertible_to<op_kind>;
    { Op::arity } -> std::convertible_to<int>;
    { Op::differentiable } -> std::convertible_to<bool>;
};

/// Does input `i`'s derivative of `Op` read value `bit` (reads_input0.., reads_output)?
template <class Op>
[[nodiscard]] constexpr bool grad_reads(int i, unsigned bit) {
    if constexpr (requires { Op::grad_reads; }) return (Op::grad_reads[static_cast<std::size_t>(i)] & bit) != 0;
    else return false;
}

}  // namespace graft::ops
