#pragma once
// Definitions for graft/ops/rnn_cell.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/ops/rnn_cell.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "graft/core/detail/op_observer.hpp"
#include "graft/core/factories.hpp"
#include "graft/kernels/dispatch.hpp"

namespace graft::detail::rnn_cell {

/// A fused program under construction: registers are numbered in the order they are made.
struct program_text {
    std::vector<kernels::program_instr> code;
    std::vector<kernels::operand_mode> mode;

    std::uint16_t reg(kernels::operand_mode m) {
        mode.push_back(m);
        return static_cast<std::uint16_t>(mode.size() - 1);
    }
    std::uint16_t input() { return reg(kernels::operand_mode::contiguous); }
    std::uint16_t number() { return reg(kernels::operand_mode::broadcast); }
    std::uint16_t output() { return reg(kernels::operand_mode::output); }
    /// out = op(a), into `out` (an output register) or a new temporary.
    std::uint16_t un(kernels::unary_op op, std::uint16_t a, int out = -1) {
        const auto r = out < 0 ? reg(kernels::operand_mode::temp) : static_cast<std::uint16_t>(out);
        code.push_back({kernels::instr_kind::unary, static_cast<std::uint8_t>(op), a, 0, 0, r});
        return r;
    }
    std::uint16_t bin(kernels::binary_op op, std::uint16_t a, std::uint16_t b, int out = -1) {
        const auto r = out < 0 ? reg(kernels::operand_mode::temp) : static_cast<std::uint16_t>(out);
        code.push_back({kernels::instr_kind::binary, static_cast<std::uint8_t>(op), a, b, 0, r});
        return r;
    }
    std::uint16_t add(std::uint16_t a, std::uint16_t b, int out = -1) { return bin(kernels::binary_op::add, a, b, out); }
    std::uint16_t sub(std::uint16_t a, std::uint16_t b, int out = -1) { return bin(kernels::binary_op::sub, a, b, out); }
    std::uint16_t mul(std::uint16_t a, std::uint16_t b, int out = -1) { return bin(kernels::binary_op::mul, a, b, out); }
    std::uint16_t sigmoid(std::uint16_t a) { return un(kernels::unary_op::sigmoid, a); }
    std::uint16_t tanh(std::uint16_t a, int out = -1) { return un(kernels::unary_op::tanh, a, out); }

    [[nodiscard]] kernels::program program() const {
        return {code.data(), code.size(), mode.data(), mode.size(), nullptr, nullptr, nullptr};
    }
};

// Register numbering of each program: inputs and numbers first, in the order the runner
// passes their addresses, then the outputs, then temporaries.

/// xi xf xg xo | hi hf hg ho | cx || h' c'.
inline const program_text& lstm_forward() {
    static const program_text p = [] {
        program_text t;
        std::array<std::uint16_t, 4> x{}, h{};
        for (auto& r : x) r = t.input();
        for (auto& r : h) r = t.input();
        const auto cx = t.input();
        const auto hy = t.output(), cy = t.output();
        const auto i = t.sigmoid(t.add(x[0], h[0]));
        const auto f = t.sigmoid(t.add(x[1], h[1]));
        const auto g = t.tanh(t.add(x[2], h[2]));
        const auto o = t.sigmoid(t.add(x[3], h[3]));
        t.add(t.mul(f, cx), t.mul(i, g), cy);
        t.mul(o, t.tanh(cy), hy);
        return t;
    }();
    return p;
}

/// xi xf xg xo | hi hf hg ho | cx | grad h' | grad c' | 1 || d i, d f, d g, d o, d cx.
inline const program_text& lstm_backward() {
    static const program_text p = [] {
        program_text t;
        std::array<std::uint16_t, 4> x{}, h{}, d{};
        for (auto& r : x) r = t.input();
        for (auto& r : h) r = t.input();
        const auto cx = t.input(), gh = t.input(), gc = t.input(), one = t.number();
        for (auto& r : d) r = t.output();
        const auto dcx = t.output();
        const auto i = t.sigmoid(t.add(x[0], h[0]));
        const auto f = t.sigmoid(t.add(x[1], h[1]));
        const auto g = t.tanh(t.add(x[2], h[2]));
        const auto o = t.sigmoid(t.add(x[3], h[3]));
        const auto c = t.add(t.mul(f, cx), t.mul(i, g));
        const auto tc = t.tanh(c);
        // d c' in total: the incoming one plus h' = o tanh(c')'s.
        const auto dc = t.add(gc, t.mul(t.mul(gh, o), t.sub(one, t.mul(tc, tc))));
        t.mul(dc, f, dcx);
        t.mul(t.mul(dc, g), t.mul(i, t.sub(one, i)), d[0]);
        t.mul(t.mul(dc, cx), t.mul(f, t.sub(one, f)), d[1]);
        t.mul(t.mul(dc, i), t.sub(one, t.mul(g, g)), d[2]);
        t.mul(t.mul(gh, tc), t.mul(o, t.sub(one, o)), d[3]);
        return t;
    }();
    return p;
}

/// ir iz in | hr hz hn | hx | 1 || h'.
inline const program_text& gru_forward() {
    static const program_text p = [] {
        program_text t;
        std::array<std::uint16_t, 3> x{}, h{};
        for (auto& r : x) r = t.input();
        for (auto& r : h) r = t.input();
        const auto hx = t.input(), one = t.number();
        const auto hy = t.output();
        const auto r = t.sigmoid(t.add(x[0], h[0]));
        const auto z = t.sigmoid(t.add(x[1], h[1]));
        const auto n = t.tanh(t.add(x[2], t.mul(r, h[2])));
        t.add(t.mul(t.sub(one, z), n), t.mul(z, hx), hy);
        return t;
    }();
    return p;
}

/// ir iz in | hr hz hn | hx | grad h' | 1 || d ir, d iz, d in, d hr, d hz, d hn, d hx.
inline const program_text& gru_backward() {
    static const program_text p = [] {
        program_text t;
        std::array<std::uint16_t, 3> x{}, h{}, di{}, dh{};
        for (auto& r : x) r = t.input();
        for (auto& r : h) r = t.input();
        const auto hx = t.input(), g = t.input(), one = t.number();
        for (auto& r : di) r = t.output();
        for (auto& r : dh) r = t.output();
        const auto dhx = t.output();
        const auto r = t.sigmoid(t.add(x[0], h[0]));
        const auto z = t.sigmoid(t.add(x[1], h[1]));
        const auto n = t.tanh(t.add(x[2], t.mul(r, h[2])));
        t.mul(g, z, dhx);
        const auto one_minus_z = t.sub(one, z);
        const auto dn = t.mul(t.mul(g, one_minus_z), t.sub(one, t.mul(n, n)), di[2]);
        t.mul(dn, r, dh[2]);
        const auto dr = t.mul(t.mul(dn, h[2]), t.mul(r, t.sub(one, r)), di[0]);
        const auto dz = t.mul(t.mul(g, t.sub(hx, n)), t.mul(z, one_minus_z), di[1]);
        t.mul(dr, one, dh[0]);  // times 1: a copy (the gates' sums get the same gradient)
        t.mul(dz, one, dh[1]);
        return t;
    }();
    return p;
}

/// Per-thread scratch tiles for a program of `registers` registers.
template <class T>
T* scratch(std::size_t registers) {
    struct deleter {
        void operator()(void* p) const noexcept { ::operator delete(p, std::align_val_t{64}); }
    };
    thread_local std::unique_ptr<void, deleter> buf;
    thread_local std::size_t cap = 0;
    const std::size_t bytes = registers * kernels::program_scratch_stride<T> * sizeof(T);
    if (bytes > cap) {
        buf.reset();
        cap = 0;
        buf.reset(::operator new(bytes, std::align_val_t{64}));
        cap = bytes;
    }
    return static_cast<T*>(buf.get());
}

/// Where a register's row r starts: a tensor's data at row r (rows of `row` elements, the
/// register `offset` elements into each), or a number (the same address for every row).
struct operand {
    Tensor tensor;  // undefined for a number
    std::int64_t row = 0, offset = 0;
    double value = 0;
};

/// Runs `text` once per row over `width` elements; `operands` are the program's inputs,
/// numbers and outputs in register order.
template <class T>
void run_rows(const program_text& text, const std::vector<operand>& operands, std::int64_t rows, std::int64_t width) {
    if (rows == 0 || width == 0) return;
    const kernels::program prog = text.program();
    std::vector<T*> base(text.mode.size(), nullptr);
    std::vector<T> numbers(operands.size());
    std::vector<T*> start(operands.size());
    for (std::size_t k = 0; k < operands.size(); ++k) {
        const operand& o = operands[k];
        if (o.tensor.defined()) {
            start[k] = o.tensor.data_ptr<T>() + o.offset;
        } else {
            numbers[k] = static_cast<T>(o.value);
            start[k] = &numbers[k];
        }
    }
    T* tiles = scratch<T>(text.mode.size());
    for (std::int64_t r = 0; r < rows; ++r) {
        for (std::size_t k = 0; k < operands.size(); ++k)
            base[k] = operands[k].tensor.defined() ? start[k] + r * operands[k].row : start[k];
        kernels::run_program(prog, base.data(), tiles, 0, static_cast<std::size_t>(width));
    }
}

/// A [..., gates * H] operand's gate k.
inline operand gate(const Tensor& t, std::int64_t gates, std::int64_t h, std::int64_t k) {
    return {t, gates * h, k * h, 0.0};
}

/// Checks the cell op's operands and returns H: each gate tensor is [..., gates * H] and
/// each state [..., H], all with the same leading sizes and floating dtype.
inline std::int64_t check_cell(const char* op, std::int64_t gates, const Tensor& input_gates,
                               const Tensor& hidden_gates, std::initializer_list<const Tensor*> states) {
    check(input_gates.defined() && hidden_gates.defined(), op, ": got an undefined tensor");
    for (const Tensor* s : states) check(s->defined(), op, ": got an undefined tensor");
    const Tensor& first = **states.begin();
    check(is_floating_point(input_gates.type()), op, ": expected floating-point gates, got ", input_gates.type());
    check(first.dim() >= 1, op, ": expected a state with at least one dimension, got sizes ", first.sizes());
    const std::int64_t h = first.size(-1);
    int_list gate_sizes = first.sizes();
    gate_sizes.back() = gates * h;
    check(input_gates.sizes() == gate_sizes, op, ": input gates of sizes ", input_gates.sizes(), " for a state of sizes ",
          first.sizes(), " (expected ", gate_sizes, ")");
    check(hidden_gates.sizes() == gate_sizes, op, ": hidden gates of sizes ", hidden_gates.sizes(),
          " for a state of sizes ", first.sizes(), " (expected ", gate_sizes, ")");
    for (const Tensor* t : {&hidden_gates, &first})
        check(t->type() == input_gates.type(), op, ": expected every operand to be ", input_gates.type(), ", got ",
              t->type());
    for (const Tensor* s : states) {
        check(s->sizes() == first.sizes(), op, ": state sizes ", s->sizes(), " differ from ", first.sizes());
        check(s->type() == input_gates.type(), op, ": expected every operand to be ", input_gates.type(), ", got ",
              s->type());
    }
    return h;
}

template <class F>
void visit_float(dtype t, F&& f) {
    if (t == dtype::float32) f(0.0f);
    else f(0.0);
}

}  // namespace graft::detail::rnn_cell

namespace graft::ops {

GRAFT_INLINE Tensor fused_lstm_cell(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& cx) {
    namespace rc = graft::detail::rnn_cell;
    constexpr const char* op = "fused_lstm_cell";
    const std::int64_t h = rc::check_cell(op, 4, input_gates, hidden_gates, {&cx});
    const graft::detail::observed_op obs;
    const Tensor x = graft::detail::raw::contiguous(input_gates), hg = graft::detail::raw::contiguous(hidden_gates),
                 c = graft::detail::raw::contiguous(cx);
    int_list sizes = cx.sizes();
    sizes.insert(sizes.begin(), 2);
    Tensor out = empty(sizes, cx.type());
    const std::int64_t rows = h == 0 ? 0 : cx.numel() / h;
    std::vector<rc::operand> o;
    for (std::int64_t k = 0; k < 4; ++k) o.push_back(rc::gate(x, 4, h, k));
    for (std::int64_t k = 0; k < 4; ++k) o.push_back(rc::gate(hg, 4, h, k));
    o.push_back({c, h, 0, 0.0});
    o.push_back({out, h, 0, 0.0});
    o.push_back({out, h, rows * h, 0.0});
    rc::visit_float(cx.type(), [&](auto z) { rc::run_rows<decltype(z)>(rc::lstm_forward(), o, rows, h); });
    return obs.done(out, op, {input_gates, hidden_gates, cx});
}

GRAFT_INLINE Tensor fused_lstm_cell_backward(const Tensor& grad, const Tensor& input_gates,
                                             const Tensor& hidden_gates, const Tensor& cx) {
    namespace rc = graft::detail::rnn_cell;
    constexpr const char* op = "fused_lstm_cell_backward";
    const std::int64_t h = rc::check_cell(op, 4, input_gates, hidden_gates, {&cx});
    int_list grad_sizes = cx.sizes();
    grad_sizes.insert(grad_sizes.begin(), 2);
    graft::detail::check(grad.defined() && grad.sizes() == grad_sizes && grad.type() == cx.type(), op,
                         ": expected a gradient of sizes ", grad_sizes, " and dtype ", cx.type(), ", got ",
                         grad.defined() ? graft::detail::concat(grad.sizes(), " ", grad.type()) : "an undefined tensor");
    const graft::detail::observed_op obs;
    const Tensor x = graft::detail::raw::contiguous(input_gates), hg = graft::detail::raw::contiguous(hidden_gates),
                 c = graft::detail::raw::contiguous(cx), g = graft::detail::raw::contiguous(grad);
    int_list sizes = cx.sizes();
    sizes.back() = 5 * h;
    Tensor out = empty(sizes, cx.type());
    const std::int64_t rows = h == 0 ? 0 : cx.numel() / h;
    std::vector<rc::operand> o;
    for (std::int64_t k = 0; k < 4; ++k) o.push_back(rc::gate(x, 4, h, k));
    for (std::int64_t k = 0; k < 4; ++k) o.push_back(rc::gate(hg, 4, h, k));
    o.push_back({c, h, 0, 0.0});
    o.push_back({g, h, 0, 0.0});
    o.push_back({g, h, rows * h, 0.0});
    o.push_back({Tensor{}, 0, 0, 1.0});
    for (std::int64_t k = 0; k < 5; ++k) o.push_back(rc::gate(out, 5, h, k));
    rc::visit_float(cx.type(), [&](auto z) { rc::run_rows<decltype(z)>(rc::lstm_backward(), o, rows, h); });
    return obs.done(out, op, {grad, input_gates, hidden_gates, cx});
}

GRAFT_INLINE Tensor fused_gru_cell(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& hx) {
    namespace rc = graft::detail::rnn_cell;
    constexpr const char* op = "fused_gru_cell";
    const std::int64_t h = rc::check_cell(op, 3, input_gates, hidden_gates, {&hx});
    const graft::detail::observed_op obs;
    const Tensor x = graft::detail::raw::contiguous(input_gates), hg = graft::detail::raw::contiguous(hidden_gates),
                 s = graft::detail::raw::contiguous(hx);
    Tensor out = empty(hx.sizes(), hx.type());
    const std::int64_t rows = h == 0 ? 0 : hx.numel() / h;
    std::vector<rc::operand> o;
    for (std::int64_t k = 0; k < 3; ++k) o.push_back(rc::gate(x, 3, h, k));
    for (std::int64_t k = 0; k < 3; ++k) o.push_back(rc::gate(hg, 3, h, k));
    o.push_back({s, h, 0, 0.0});
    o.push_back({Tensor{}, 0, 0, 1.0});
    o.push_back({out, h, 0, 0.0});
    rc::visit_float(hx.type(), [&](auto z) { rc::run_rows<decltype(z)>(rc::gru_forward(), o, rows, h); });
    return obs.done(out, op, {input_gates, hidden_gates, hx});
}

GRAFT_INLINE Tensor fused_gru_cell_backward(const Tensor& grad, const Tensor& input_gates, const Tensor& hidden_gates,
                                            const Tensor& hx) {
    namespace rc = graft::detail::rnn_cell;
    constexpr const char* op = "fused_gru_cell_backward";
    const std::int64_t h = rc::check_cell(op, 3, input_gates, hidden_gates, {&hx, &grad});
    const graft::detail::observed_op obs;
    const Tensor x = graft::detail::raw::contiguous(input_gates), hg = graft::detail::raw::contiguous(hidden_gates),
                 s = graft::detail::raw::contiguous(hx), g = graft::detail::raw::contiguous(grad);
    int_list sizes = hx.sizes();
    sizes.back() = 7 * h;
    Tensor out = empty(sizes, hx.type());
    const std::int64_t rows = h == 0 ? 0 : hx.numel() / h;
    std::vector<rc::operand> o;
    for (std::int64_t k = 0; k < 3; ++k) o.push_back(rc::gate(x, 3, h, k));
    for (std::int64_t k = 0; k < 3; ++k) o.push_back(rc::gate(hg, 3, h, k));
    o.push_back({s, h, 0, 0.0});
    o.push_back({g, h, 0, 0.0});
    o.push_back({Tensor{}, 0, 0, 1.0});
    for (std::int64_t k = 0; k < 7; ++k) o.push_back(rc::gate(out, 7, h, k));
    rc::visit_float(hx.type(), [&](auto z) { rc::run_rows<decltype(z)>(rc::gru_backward(), o, rows, h); });
    return obs.done(out, op, {grad, input_gates, hidden_gates, hx});
}

}  // namespace graft::ops
