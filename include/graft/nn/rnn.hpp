#pragma once
// graft::nn recurrent layers: RNNCell, LSTMCell, GRUCell and the multi-layer RNN, LSTM and GRU
// (torch.nn.RNNCell, ..., torch.nn.GRU) with PyTorch 1.13's arguments, defaults, parameter
// names and order (so state_dict keys are PyTorch's), shapes, gate order (LSTM i, f, g, o; GRU
// r, z, n) and initialization (every parameter U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))).
//
// A layer computes one matmul for the whole sequence's input projection per layer and
// direction, then per time step the hidden matmul and the gate math: one fused op per step for
// the LSTM and GRU (graft/autograd/rnn_cell.hpp), ordinary ops for the plain RNN. So autograd,
// capture and the executor see ordinary ops, and gradients of any order work.
//
// Calling: forward(input) returns the output sequence only (what Sequential passes on);
// `m(input, hx)` returns PyTorch's tuple as a struct: rnn_output {output, h_n} for RNN and GRU,
// lstm_output {output, h_n, c_n} for LSTM; an undefined hx (Tensor{} / lstm_state{}) is zeros.
// The cells return the new hidden state (LSTMCell: lstm_state {h, c}). Manual: docs/nn.md.
#include <cstdint>
#include <string>
#include <vector>

#include "graft/core/factories.hpp"
#include "graft/nn/functional.hpp"
#include "graft/nn/module.hpp"

namespace graft::nn {

/// An LSTM's state (h, c): PyTorch's tuple (h, c). Both undefined means zeros.
struct lstm_state {
    Tensor h, c;
};

/// What RNN and GRU return: PyTorch's (output, h_n).
struct rnn_output {
    Tensor output;  // [T, N, D * H] ([N, T, D * H] with batch_first; [T, D * H] unbatched)
    Tensor h_n;     // [num_layers * D, N, H] ([num_layers * D, H] unbatched)
};

/// What LSTM returns: PyTorch's (output, (h_n, c_n)), flattened.
struct lstm_output {
    Tensor output, h_n, c_n;
    /// (h_n, c_n), to pass to the next call.
    [[nodiscard]] lstm_state state() const { return {h_n, c_n}; }
};

/// The keyword arguments of RNN, LSTM and GRU, in PyTorch's order, for designated
/// initializers: nn::LSTM(64, 128, {.num_layers = 2, .bidirectional = true}).
struct rnn_options {
    std::int64_t num_layers = 1;
    std::string nonlinearity = "tanh";  // RNN only: "tanh" or "relu"
    bool bias = true;
    bool batch_first = false;
    double dropout = 0.0;  // on every layer's output but the last, in training only
    bool bidirectional = false;
    std::int64_t proj_size = 0;  // LSTM's projections: not offered (non-zero is an error)
    dtype type = dtype::float32;
    generator* gen = nullptr;  // default_generator() when null
};

namespace detail {

/// A benchmark and test hook, not an option: when false (on this thread), the LSTM and GRU
/// layers and cells compute the per-step gate math with ordinary ops instead of the fused cell
/// ops (the same values; bench/rnn measures both).
inline thread_local bool fused_cells = true;

/// The LSTM step from its gates (input projection and hidden matmul) and c: (h', c').
[[nodiscard]] GRAFT_INLINE lstm_state lstm_step(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& c);
/// The GRU step: h'.
[[nodiscard]] GRAFT_INLINE Tensor gru_step(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& h);

/// The steps t[0], t[1], ... of t along dimension 0, as views, with one backward node that
/// stacks their gradients (PyTorch's UnbindBackward0): the backward of a sequence split into T
/// steps costs one copy, not T zero-filled tensors of the whole sequence. Captured as a narrow
/// and a squeeze per step (whose backward the narrow_backwards_to_cat pass joins into one cat).
[[nodiscard]] GRAFT_INLINE std::vector<Tensor> unbind_steps(const Tensor& t);

/// What the three cells share (PyTorch's RNNCellBase): weight_ih [gates * hidden, input],
/// weight_hh [gates * hidden, hidden], bias_ih and bias_hh [gates * hidden].
class rnn_cell_base : public Module {
public:
    GRAFT_INLINE rnn_cell_base(std::string type_name, std::int64_t input_size, std::int64_t hidden_size, bool bias,
                               std::int64_t gates, dtype type, generator& gen);
    /// Draws new values: every parameter U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)).
    GRAFT_INLINE void reset_parameters(generator& gen = default_generator());
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;

    const std::int64_t input_size, hidden_size;
    const bool bias;
    Tensor& weight_ih;
    Tensor& weight_hh;
    Tensor& bias_ih;  // undefined without bias
    Tensor& bias_hh;  // undefined without bias

protected:
    /// Checks input [N, input_size] or [input_size] and a state (undefined: zeros of the right
    /// sizes); returns the state.
    GRAFT_INLINE Tensor checked_state(const Tensor& input, const Tensor& hx, const char* what) const;
};

}  // namespace detail

/// torch.nn.RNNCell: h' = nonlinearity(W_ih x + b_ih + W_hh h + b_hh), nonlinearity "tanh"
/// or "relu". input [N, input_size] or unbatched [input_size]; hx the same with hidden_size.
class RNNCell : public detail::rnn_cell_base {
public:
    GRAFT_INLINE RNNCell(std::int64_t input_size, std::int64_t hidden_size, bool bias = true,
                         std::string nonlinearity = "tanh", dtype type = dtype::float32,
                         generator& gen = default_generator());
    /// h' from a zero state.
    Tensor forward(const Tensor& input) override { return forward(input, Tensor{}); }
    GRAFT_INLINE Tensor forward(const Tensor& input, const Tensor& hx);
    using Module::operator();
    Tensor operator()(const Tensor& input, const Tensor& hx) { return forward(input, hx); }
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;
    const std::string nonlinearity;
};

/// torch.nn.LSTMCell: gates i, f, g, o (4 * hidden_size rows of the weights, in that order);
/// c' = f c + i g, h' = o tanh(c'). Returns lstm_state {h', c'}.
class LSTMCell : public detail::rnn_cell_base {
public:
    GRAFT_INLINE LSTMCell(std::int64_t input_size, std::int64_t hidden_size, bool bias = true,
                          dtype type = dtype::float32, generator& gen = default_generator());
    /// h' from a zero state (the Module interface; the cell state is dropped).
    Tensor forward(const Tensor& input) override { return forward(input, lstm_state{}).h; }
    GRAFT_INLINE lstm_state forward(const Tensor& input, const lstm_state& hx);
    using Module::operator();
    lstm_state operator()(const Tensor& input, const lstm_state& hx) { return forward(input, hx); }
};

/// torch.nn.GRUCell: gates r, z, n (3 * hidden_size rows, in that order);
/// n = tanh(W_in x + b_in + r (W_hn h + b_hn)), h' = (1 - z) n + z h.
class GRUCell : public detail::rnn_cell_base {
public:
    GRAFT_INLINE GRUCell(std::int64_t input_size, std::int64_t hidden_size, bool bias = true,
                         dtype type = dtype::float32, generator& gen = default_generator());
    Tensor forward(const Tensor& input) override { return forward(input, Tensor{}); }
    GRAFT_INLINE Tensor forward(const Tensor& input, const Tensor& hx);
    using Module::operator();
    Tensor operator()(const Tensor& input, const Tensor& hx) { return forward(input, hx); }
};

namespace detail {

/// What RNN, LSTM and GRU share (PyTorch's RNNBase): per layer l and direction, parameters
/// weight_ih_l{l}, weight_hh_l{l}, bias_ih_l{l}, bias_hh_l{l} (with "_reverse" for the
/// backward direction), registered in PyTorch's order.
class rnn_base : public Module {
public:
    enum class cell { rnn_tanh, rnn_relu, lstm, gru };
    GRAFT_INLINE rnn_base(std::string type_name, cell mode, std::int64_t input_size, std::int64_t hidden_size,
                          const rnn_options& options);
    /// Draws new values: every parameter U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)).
    GRAFT_INLINE void reset_parameters(generator& gen = default_generator());
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;

    const cell mode;
    const std::int64_t input_size, hidden_size, num_layers;
    const bool bias, batch_first;
    const double dropout;
    const bool bidirectional;

protected:
    /// The whole computation: output, h_n and (LSTM) c_n. c0 is used by the LSTM only.
    GRAFT_INLINE lstm_output run(const Tensor& input, const Tensor& h0, const Tensor& c0);

private:
    struct layer_weights {
        Tensor *w_ih, *w_hh, *b_ih, *b_hh;
    };
    std::vector<layer_weights> weights_;  // per layer, then direction
};

}  // namespace detail

/// torch.nn.RNN: num_layers Elman layers h_t = nonlinearity(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh).
/// input [T, N, input_size] ([N, T, input_size] with batch_first; unbatched [T, input_size]),
/// h0 [num_layers * D, N, hidden_size] (D = 2 when bidirectional).
class RNN : public detail::rnn_base {
public:
    GRAFT_INLINE RNN(std::int64_t input_size, std::int64_t hidden_size, rnn_options options = {});
    /// PyTorch's positional order.
    GRAFT_INLINE RNN(std::int64_t input_size, std::int64_t hidden_size, std::int64_t num_layers,
                     std::string nonlinearity = "tanh", bool bias = true, bool batch_first = false,
                     double dropout = 0.0, bool bidirectional = false, dtype type = dtype::float32,
                     generator& gen = default_generator());
    /// The output sequence, from zero states.
    Tensor forward(const Tensor& input) override { return forward(input, Tensor{}).output; }
    rnn_output forward(const Tensor& input, const Tensor& h0) {
        lstm_output r = run(input, h0, Tensor{});
        return {r.output, r.h_n};
    }
    using Module::operator();
    rnn_output operator()(const Tensor& input, const Tensor& h0) { return forward(input, h0); }
    const std::string nonlinearity;
};

/// torch.nn.LSTM: num_layers LSTM layers (gates i, f, g, o), states (h0, c0) each
/// [num_layers * D, N, hidden_size]; returns (output, h_n, c_n).
class LSTM : public detail::rnn_base {
public:
    GRAFT_INLINE LSTM(std::int64_t input_size, std::int64_t hidden_size, rnn_options options = {});
    /// PyTorch's positional order (proj_size must be 0).
    GRAFT_INLINE LSTM(std::int64_t input_size, std::int64_t hidden_size, std::int64_t num_layers, bool bias = true,
                      bool batch_first = false, double dropout = 0.0, bool bidirectional = false,
                      std::int64_t proj_size = 0, dtype type = dtype::float32, generator& gen = default_generator());
    Tensor forward(const Tensor& input) override { return forward(input, lstm_state{}).output; }
    lstm_output forward(const Tensor& input, const lstm_state& hx) { return run(input, hx.h, hx.c); }
    using Module::operator();
    lstm_output operator()(const Tensor& input, const lstm_state& hx) { return forward(input, hx); }
};

/// torch.nn.GRU: num_layers GRU layers (gates r, z, n); returns (output, h_n).
class GRU : public detail::rnn_base {
public:
    GRAFT_INLINE GRU(std::int64_t input_size, std::int64_t hidden_size, rnn_options options = {});
    /// PyTorch's positional order.
    GRAFT_INLINE GRU(std::int64_t input_size, std::int64_t hidden_size, std::int64_t num_layers, bool bias = true,
                     bool batch_first = false, double dropout = 0.0, bool bidirectional = false,
                     dtype type = dtype::float32, generator& gen = default_generator());
    Tensor forward(const Tensor& input) override { return forward(input, Tensor{}).output; }
    rnn_output forward(const Tensor& input, const Tensor& h0) {
        lstm_output r = run(input, h0, Tensor{});
        return {r.output, r.h_n};
    }
    using Module::operator();
    rnn_output operator()(const Tensor& input, const Tensor& h0) { return forward(input, h0); }
};

}  // namespace graft::nn

#if GRAFT_HAS_CODE
#include "graft/nn/impl/rnn.ipp"
#endif
