#pragma once
// Definitions for graft/autograd/rnn_cell.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/autograd/rnn_cell.hpp"

#include <utility>

namespace graft::autograd::detail {

GRAFT_INLINE Tensor fused_lstm_cell(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& cx) {
    Tensor out = ops::fused_lstm_cell(input_gates, hidden_gates, cx);
    auto node = make_node("FusedLstmCellBackward0", input_gates, hidden_gates, cx);
    if (!node) return out;
    node->save(input_gates);
    node->save(hidden_gates);
    node->save(cx);
    node->backward = [h = cx.size(-1)](function_node& n, const tensor_list& g, tensor_list& grad_inputs) {
        if (g.empty() || !g[0].defined()) {
            grad_inputs.resize(3);
            return;
        }
        const Tensor packed = fused_lstm_cell_backward(g[0], n.saved(0), n.saved(1), n.saved(2));
        const Tensor gates = packed.narrow(-1, 0, 4 * h);
        grad_inputs.push_back(n.needs_input_grad(0) ? gates : Tensor{});
        grad_inputs.push_back(n.needs_input_grad(1) ? gates : Tensor{});
        grad_inputs.push_back(n.needs_input_grad(2) ? packed.narrow(-1, 4 * h, h) : Tensor{});
    };
    set_history(out, std::move(node));
    return out;
}

GRAFT_INLINE Tensor fused_lstm_cell_backward(const Tensor& grad, const Tensor& input_gates, const Tensor& hidden_gates,
                                             const Tensor& cx) {
    if (!is_grad_enabled() ||
        !(requires_grad(grad) || requires_grad(input_gates) || requires_grad(hidden_gates) || requires_grad(cx)))
        return ops::fused_lstm_cell_backward(grad, input_gates, hidden_gates, cx);
    // Recording (create_graph): the program's formula, op for op, with ordinary ops.
    (void)graft::detail::rnn_cell::check_cell("fused_lstm_cell_backward", 4, input_gates, hidden_gates, {&cx});
    const std::int64_t h = cx.size(-1);
    const Tensor gates = input_gates + hidden_gates;
    const Tensor i = sigmoid(gates.narrow(-1, 0, h)), f = sigmoid(gates.narrow(-1, h, h));
    const Tensor g = tanh(gates.narrow(-1, 2 * h, h)), o = sigmoid(gates.narrow(-1, 3 * h, h));
    const Tensor tc = tanh(f * cx + i * g);
    const Tensor gh = grad.select(0, 0), gc = grad.select(0, 1);
    const Tensor dc = gc + gh * o * (1.0 - tc * tc);
    return cat({dc * g * (i * (1.0 - i)), dc * cx * (f * (1.0 - f)), dc * i * (1.0 - g * g), gh * tc * (o * (1.0 - o)),
                dc * f},
               -1);
}

GRAFT_INLINE Tensor fused_gru_cell(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& hx) {
    Tensor out = ops::fused_gru_cell(input_gates, hidden_gates, hx);
    auto node = make_node("FusedGruCellBackward0", input_gates, hidden_gates, hx);
    if (!node) return out;
    node->save(input_gates);
    node->save(hidden_gates);
    node->save(hx);
    node->backward = [h = hx.size(-1)](function_node& n, const tensor_list& g, tensor_list& grad_inputs) {
        if (g.empty() || !g[0].defined()) {
            grad_inputs.resize(3);
            return;
        }
        const Tensor packed = fused_gru_cell_backward(g[0], n.saved(0), n.saved(1), n.saved(2));
        grad_inputs.push_back(n.needs_input_grad(0) ? packed.narrow(-1, 0, 3 * h) : Tensor{});
        grad_inputs.push_back(n.needs_input_grad(1) ? packed.narrow(-1, 3 * h, 3 * h) : Tensor{});
        grad_inputs.push_back(n.needs_input_grad(2) ? packed.narrow(-1, 6 * h, h) : Tensor{});
    };
    set_history(out, std::move(node));
    return out;
}

GRAFT_INLINE Tensor fused_gru_cell_backward(const Tensor& grad, const Tensor& input_gates, const Tensor& hidden_gates,
                                            const Tensor& hx) {
    if (!is_grad_enabled() ||
        !(requires_grad(grad) || requires_grad(input_gates) || requires_grad(hidden_gates) || requires_grad(hx)))
        return ops::fused_gru_cell_backward(grad, input_gates, hidden_gates, hx);
    (void)graft::detail::rnn_cell::check_cell("fused_gru_cell_backward", 3, input_gates, hidden_gates, {&hx, &grad});
    const std::int64_t h = hx.size(-1);
    const Tensor r = sigmoid(input_gates.narrow(-1, 0, h) + hidden_gates.narrow(-1, 0, h));
    const Tensor z = sigmoid(input_gates.narrow(-1, h, h) + hidden_gates.narrow(-1, h, h));
    const Tensor hn = hidden_gates.narrow(-1, 2 * h, h);
    const Tensor n = tanh(input_gates.narrow(-1, 2 * h, h) + r * hn);
    const Tensor one_minus_z = 1.0 - z;
    const Tensor dn = grad * one_minus_z * (1.0 - n * n);
    const Tensor dr = dn * hn * (r * (1.0 - r));
    const Tensor dz = grad * (hx - n) * (z * one_minus_z);
    return cat({dr, dz, dn, dr, dz, dn * r, grad * z}, -1);
}

}  // namespace graft::autograd::detail
