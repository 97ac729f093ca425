#pragma once
// The per-step gate math of the LSTM and GRU cells as single ops (PyTorch's
// _thnn_fused_lstm_cell / _thnn_fused_gru_cell), forward and backward: each runs one fused
// elementwise program (kernels::run_program) per row over the gates, so a time step is one
// pass over memory instead of a dozen ops. The programs apply the eager kernels' lane math in
// the order the ordinary ops would (add, sigmoid, tanh, mul, ...), so the results are bitwise
// those of the same formula written with graft's elementwise ops. float32 and float64. The
// matmuls stay outside (graft::matmul); nn::LSTM / nn::GRU and their cells call these through
// graft::autograd::detail (graft/autograd/rnn_cell.hpp). IR kinds fused_lstm_cell,
// fused_lstm_cell_backward, fused_gru_cell, fused_gru_cell_backward.
#include "graft/core/tensor.hpp"

namespace graft::ops {

/// LSTM gates: with gates = input_gates + hidden_gates split into i, f, g, o along the last
/// dimension (PyTorch's order), c' = sigmoid(f) cx + sigmoid(i) tanh(g) and
/// h' = sigmoid(o) tanh(c'). input_gates and hidden_gates are [..., 4H], cx [..., H] (the same
/// leading sizes, the same floating dtype). Returns h' and c' stacked: [2, ..., H].
[[nodiscard]] GRAFT_INLINE Tensor fused_lstm_cell(const Tensor& input_gates, const Tensor& hidden_gates,
                                                  const Tensor& cx);

/// fused_lstm_cell's derivative: `grad` [2, ..., H] is the gradient of its result (h', c');
/// returns the gradients of the gates (the same for input_gates and hidden_gates) and of cx,
/// side by side along the last dimension: [..., 5H] = [d gates (4H), d cx (H)].
[[nodiscard]] GRAFT_INLINE Tensor fused_lstm_cell_backward(const Tensor& grad, const Tensor& input_gates,
                                                           const Tensor& hidden_gates, const Tensor& cx);

/// GRU gates: input_gates = W_i x + b_i and hidden_gates = W_h h + b_h, each [..., 3H] split
/// into r, z, n (PyTorch's order); r = sigmoid(i_r + h_r), z = sigmoid(i_z + h_z),
/// n = tanh(i_n + r h_n), h' = (1 - z) n + z hx. hx is [..., H]. Returns h' [..., H].
[[nodiscard]] GRAFT_INLINE Tensor fused_gru_cell(const Tensor& input_gates, const Tensor& hidden_gates,
                                                 const Tensor& hx);

/// fused_gru_cell's derivative: `grad` [..., H] is the gradient of h'; returns
/// [..., 7H] = [d input_gates (3H), d hidden_gates (3H), d hx (H)].
[[nodiscard]] GRAFT_INLINE Tensor fused_gru_cell_backward(const Tensor& grad, const Tensor& input_gates,
                                                          const Tensor& hidden_gates, const Tensor& hx);

}  // namespace graft::ops

#if GRAFT_HAS_CODE
#include "graft/ops/impl/rnn_cell.ipp"
#endif
