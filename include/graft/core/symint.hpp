#pragma once
// graft::SymInt: a size that remembers how it was computed while a function is being captured
// (PyTorch's c10::SymInt, reduced). Outside capture a SymInt is a plain int64 and costs
// nothing more. Under capture (capture::trace, capture::aot, jit::script), `x.sym_size(d)`
// returns a SymInt that records the arithmetic done on it (+, -, *, / and % with numbers or
// other SymInts), and view_symint/reshape_symint/expand_symint/narrow_symint report those expressions to the
// capture: the graph then computes these sizes from each call's input sizes instead of
// keeping the traced numbers (`x.reshape_symint({x.sym_size(0) / 2, -1})` serves every even batch;
// `x.narrow_symint(0, 1, x.sym_size(0) - 1)` every batch). Reading the number (`value()`,
// `guard_int()`) specializes the capture to it, as in PyTorch.
#include <compare>
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

#include "graft/config.hpp"
#include "graft/core/error.hpp"

namespace graft {

namespace detail {

/// One step of a size expression: a size read from a tensor, a number, or an operation on
/// two sub-expressions. Immutable and shared between SymInts.
struct sym_node {
    enum class op : std::uint8_t { size, constant, add, sub, mul, div, mod };
    op kind = op::constant;
    std::int64_t value = 0;  // size: the size read; constant: the number
    std::shared_ptr<const sym_node> lhs, rhs;
};

}  // namespace detail

/// A size: an int64 with, under capture, the expression that computed it.
class SymInt {
public:
    SymInt() noexcept = default;
    /// A plain number (implicit, so that numbers and SymInts mix in size lists:
    /// `x.reshape_symint({x.sym_size(0), 3})`).
    template <std::integral I>
    SymInt(I v) noexcept : value_(static_cast<std::int64_t>(v)) {}  // NOLINT: implicit by design

    /// A size read from a tensor under capture (Tensor::sym_size).
    [[nodiscard]] static SymInt size_of(std::int64_t v, bool symbolic) {
        SymInt r(v);
        if (symbolic)
            r.node_ = std::make_shared<const detail::sym_node>(detail::sym_node{detail::sym_node::op::size, v, {}, {}});
        return r;
    }

    /// The number. Under capture this fixes the graph to it (the value is not symbolic).
    [[nodiscard]] std::int64_t value() const noexcept { return value_; }
    /// PyTorch's name for value().
    [[nodiscard]] std::int64_t guard_int() const noexcept { return value_; }
    /// Does this carry an expression of sizes read under capture?
    [[nodiscard]] bool is_symbolic() const noexcept { return node_ != nullptr; }
    /// The expression (null when not symbolic).
    [[nodiscard]] const std::shared_ptr<const detail::sym_node>& node() const noexcept { return node_; }

    // Checked: overflow and a zero divisor are a graft::error (PyTorch raises too), never a
    // wrapped or made-up size.
    friend SymInt operator+(const SymInt& a, const SymInt& b) {
        std::int64_t v = 0;
        if (__builtin_add_overflow(a.value_, b.value_, &v)) overflow("+", a, b);
        return combine(detail::sym_node::op::add, a, b, v);
    }
    friend SymInt operator-(const SymInt& a, const SymInt& b) {
        std::int64_t v = 0;
        if (__builtin_sub_overflow(a.value_, b.value_, &v)) overflow("-", a, b);
        return combine(detail::sym_node::op::sub, a, b, v);
    }
    friend SymInt operator*(const SymInt& a, const SymInt& b) {
        std::int64_t v = 0;
        if (__builtin_mul_overflow(a.value_, b.value_, &v)) overflow("*", a, b);
        return combine(detail::sym_node::op::mul, a, b, v);
    }
    /// Integer division truncating toward zero, as C++'s (sizes are >= 0, where it equals
    /// Python's floor division). A zero divisor is a graft::error.
    friend SymInt operator/(const SymInt& a, const SymInt& b) {
        if (b.value_ == 0) divide_by_zero("/", a);
        if (b.value_ == -1 && a.value_ == INT64_MIN) overflow("/", a, b);
        return combine(detail::sym_node::op::div, a, b, a.value_ / b.value_);
    }
    /// Remainder of that division (C++'s %); a zero divisor is a graft::error.
    friend SymInt operator%(const SymInt& a, const SymInt& b) {
        if (b.value_ == 0) divide_by_zero("%", a);
        return combine(detail::sym_node::op::mod, a, b, b.value_ == -1 ? 0 : a.value_ % b.value_);
    }
    SymInt& operator+=(const SymInt& b) { return *this = *this + b; }
    SymInt& operator-=(const SymInt& b) { return *this = *this - b; }
    SymInt& operator*=(const SymInt& b) { return *this = *this * b; }
    SymInt& operator/=(const SymInt& b) { return *this = *this / b; }

    /// Comparisons read the numbers (under capture the graph keeps the branch taken).
    friend bool operator==(const SymInt& a, const SymInt& b) noexcept { return a.value_ == b.value_; }
    friend auto operator<=>(const SymInt& a, const SymInt& b) noexcept { return a.value_ <=> b.value_; }

private:
    [[noreturn]] static void overflow(const char* op, const SymInt& a, const SymInt& b) {
        detail::fail_with("SymInt: ", a.value_, " ", op, " ", b.value_, " overflows int64");
    }
    [[noreturn]] static void divide_by_zero(const char* op, const SymInt& a) {
        detail::fail_with("SymInt: ", a.value_, " ", op, " 0: division by zero");
    }
    static SymInt combine(detail::sym_node::op k, const SymInt& a, const SymInt& b, std::int64_t v) {
        SymInt r(v);
        if (a.node_ || b.node_) {
            const auto leaf = [](const SymInt& s) {
                return s.node_ ? s.node_
                               : std::make_shared<const detail::sym_node>(
                                     detail::sym_node{detail::sym_node::op::constant, s.value_, {}, {}});
            };
            r.node_ = std::make_shared<const detail::sym_node>(detail::sym_node{k, v, leaf(a), leaf(b)});
        }
        return r;
    }

    std::int64_t value_ = 0;
    std::shared_ptr<const detail::sym_node> node_;
};

/// A list of sizes, each a number or a SymInt: the argument of view_symint, reshape_symint,
/// expand_symint.
using sym_int_list = std::vector<SymInt>;

}  // namespace graft
