#pragma once
// The LSTM and GRU cells' gate math (graft/ops/rnn_cell.hpp) with autograd: one node per
// step (FusedLstmCellBackward0, FusedGruCellBackward0) whose first derivative is the fused
// backward op, and whose derivative under create_graph is the same formula written with
// graft's ordinary ops, so gradients of any order work. Graph capture records each as one
// node (IR kinds fused_lstm_cell, fused_gru_cell and their _backward). Internal to the nn
// layer's recurrent modules (graft/nn/rnn.hpp), which are what users call.
#include "graft/autograd/functions.hpp"
#include "graft/autograd/join_split.hpp"
#include "graft/ops/rnn_cell.hpp"

namespace graft::autograd::detail {

/// ops::fused_lstm_cell, differentiable in all three inputs: [2, ..., H] = (h', c').
[[nodiscard]] GRAFT_INLINE Tensor fused_lstm_cell(const Tensor& input_gates, const Tensor& hidden_gates,
                                                  const Tensor& cx);
/// ops::fused_lstm_cell_backward; when grad mode is on and an operand requires grad (a
/// backward with create_graph), the same values from ordinary differentiable ops.
[[nodiscard]] GRAFT_INLINE Tensor fused_lstm_cell_backward(const Tensor& grad, const Tensor& input_gates,
                                                           const Tensor& hidden_gates, const Tensor& cx);
/// ops::fused_gru_cell, differentiable in all three inputs: h' [..., H].
[[nodiscard]] GRAFT_INLINE Tensor fused_gru_cell(const Tensor& input_gates, const Tensor& hidden_gates,
                                                 const Tensor& hx);
/// ops::fused_gru_cell_backward, or its differentiable composite form (as for the LSTM).
[[nodiscard]] GRAFT_INLINE Tensor fused_gru_cell_backward(const Tensor& grad, const Tensor& input_gates,
                                                          const Tensor& hidden_gates, const Tensor& hx);

}  // namespace graft::autograd::detail

#if GRAFT_HAS_CODE
#include "graft/autograd/impl/rnn_cell.ipp"
#endif
