#pragma once
// Definitions for graft/nn/rnn.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/nn/rnn.hpp"

#include <cmath>
#include <memory>

#include "graft/autograd/join_split.hpp"
#include "graft/autograd/rnn_cell.hpp"
#include "graft/nn/init.hpp"

namespace graft::nn {

namespace detail {

GRAFT_INLINE std::vector<Tensor> unbind_steps(const Tensor& t) {
    graft::detail::check(t.defined() && t.dim() >= 1, "unbind_steps: expected a tensor with at least one dimension");
    const std::int64_t n = t.size(0);
    std::vector<Tensor> steps;
    steps.reserve(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
        steps.push_back(graft::detail::raw::squeeze(graft::detail::raw::narrow(t, 0, i, 1), 0));
    auto node = autograd::detail::make_node("UnbindBackward0", t);
    if (!node) return steps;
    node->backward = [n](autograd::function_node&, const autograd::tensor_list& g, autograd::tensor_list& grad_inputs) {
        const Tensor* any = nullptr;
        for (const Tensor& x : g)
            if (x.defined()) any = &x;
        if (any == nullptr) {
            grad_inputs.emplace_back();
            return;
        }
        std::vector<Tensor> parts;
        parts.reserve(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) {
            const auto k = static_cast<std::size_t>(i);
            parts.push_back(k < g.size() && g[k].defined() ? g[k] : zeros_like(*any));
        }
        grad_inputs.push_back(stack(parts, 0));
    };
    for (const Tensor& s : steps) autograd::detail::set_history(s, node);
    return steps;
}

GRAFT_INLINE lstm_state lstm_step(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& c) {
    if (fused_cells) {
        const std::vector<Tensor> hc = unbind_steps(autograd::detail::fused_lstm_cell(input_gates, hidden_gates, c));
        return {hc[0], hc[1]};
    }
    const std::int64_t h = c.size(-1);
    const Tensor gates = input_gates + hidden_gates;
    const Tensor i = sigmoid(gates.narrow(-1, 0, h)), f = sigmoid(gates.narrow(-1, h, h));
    const Tensor g = tanh(gates.narrow(-1, 2 * h, h)), o = sigmoid(gates.narrow(-1, 3 * h, h));
    const Tensor c_next = f * c + i * g;
    return {o * tanh(c_next), c_next};
}

GRAFT_INLINE Tensor gru_step(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& hx) {
    if (fused_cells) return autograd::detail::fused_gru_cell(input_gates, hidden_gates, hx);
    const std::int64_t h = hx.size(-1);
    const Tensor r = sigmoid(input_gates.narrow(-1, 0, h) + hidden_gates.narrow(-1, 0, h));
    const Tensor z = sigmoid(input_gates.narrow(-1, h, h) + hidden_gates.narrow(-1, h, h));
    const Tensor n = tanh(input_gates.narrow(-1, 2 * h, h) + r * hidden_gates.narrow(-1, 2 * h, h));
    return (1.0 - z) * n + z * hx;
}

inline std::int64_t positive_size(const char* layer, const char* what, std::int64_t n) {
    graft::detail::check(n > 0, layer, ": ", what, " must be positive, got ", n);
    return n;
}

inline dtype floating_type(const char* layer, dtype type) {
    graft::detail::check(is_floating_point(type), layer, ": expected a floating-point dtype, got ", type);
    return type;
}

inline Tensor parameter_if(bool present, const int_list& sizes, dtype type) {
    return present ? empty(sizes, type) : Tensor{};
}

/// Every parameter of `m` drawn from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), in
/// registration order (PyTorch's reset_parameters).
inline void uniform_parameters(Module& m, std::int64_t hidden_size, generator& gen) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(hidden_size));
    for (Tensor& p : m.parameters()) init::uniform_(p, -bound, bound, gen);
}

/// Checks a recurrent layer's input: defined, floating, of the parameters' dtype.
inline void check_input(const Module& m, const Tensor& input, dtype type) {
    const std::string& name = m.type_name();
    graft::detail::check(input.defined(), name, ": the input is an undefined tensor");
    graft::detail::check(is_floating_point(input.type()), name, ": expected a floating-point input, got ", input.type());
    graft::detail::check(input.type() == type, name, ": the input is ", input.type(), " but the parameters are ", type,
                         " (convert one with to())");
}

/// Checks a given state against the input's dtype and the expected sizes.
inline void check_state(const Module& m, const Tensor& s, const char* what, const int_list& expected, dtype type,
                        bool batched) {
    const std::string& name = m.type_name();
    graft::detail::check(is_floating_point(s.type()) && s.type() == type, name, ": ", what, " is ", s.type(),
                         " but the input and the parameters are ", type);
    graft::detail::check(s.dim() == static_cast<std::int64_t>(expected.size()), name, ": ", what, " should be ",
                         expected.size(), "-D for ", batched ? "a batched" : "an unbatched", " input, got a ", s.dim(),
                         "-D tensor of sizes ", s.sizes());
    graft::detail::check(s.sizes() == expected, name, ": expected ", what, " of sizes ", expected, ", got ", s.sizes());
}

GRAFT_INLINE rnn_cell_base::rnn_cell_base(std::string name, std::int64_t in, std::int64_t hidden, bool with_bias,
                                          std::int64_t gates, dtype type, generator& gen)
    : Module(std::move(name)),
      input_size(positive_size(type_name().c_str(), "input_size", in)),
      hidden_size(positive_size(type_name().c_str(), "hidden_size", hidden)),
      bias(with_bias),
      weight_ih(register_parameter("weight_ih", empty({gates * hidden, in}, floating_type(type_name().c_str(), type)))),
      weight_hh(register_parameter("weight_hh", empty({gates * hidden, hidden}, type))),
      bias_ih(register_parameter("bias_ih", parameter_if(with_bias, {gates * hidden}, type))),
      bias_hh(register_parameter("bias_hh", parameter_if(with_bias, {gates * hidden}, type))) {
    reset_parameters(gen);
}

GRAFT_INLINE void rnn_cell_base::reset_parameters(generator& gen) { uniform_parameters(*this, hidden_size, gen); }

GRAFT_INLINE std::string rnn_cell_base::extra_repr() const {
    std::string s = graft::detail::concat(input_size, ", ", hidden_size);
    if (!bias) s += ", bias=False";
    return s;
}

GRAFT_INLINE Tensor rnn_cell_base::checked_state(const Tensor& input, const Tensor& hx, const char* what) const {
    const std::string& name = type_name();
    check_input(*this, input, weight_ih.type());
    graft::detail::check(input.dim() == 1 || input.dim() == 2, name, ": expected input to be 1-D or 2-D, got a ",
                         input.dim(), "-D tensor of sizes ", input.sizes());
    graft::detail::check(input.size(-1) == input_size, name, ": input has ", input.size(-1),
                         " features (its last size), expected input_size ", input_size);
    if (!hx.defined()) return hx;
    const int_list expected = input.dim() == 2 ? int_list{input.size(0), hidden_size} : int_list{hidden_size};
    check_state(*this, hx, what, expected, weight_ih.type(), input.dim() == 2);
    return hx;
}

inline std::string checked_nonlinearity(const char* layer, std::string s) {
    graft::detail::check(s == "tanh" || s == "relu", layer, ": Unknown nonlinearity '", s,
                         "' (expected \"tanh\" or \"relu\")");
    return s;
}

}  // namespace detail

GRAFT_INLINE RNNCell::RNNCell(std::int64_t in, std::int64_t hidden, bool with_bias, std::string nl, dtype type,
                              generator& gen)
    : rnn_cell_base("RNNCell", in, hidden, with_bias, 1, type, gen),
      nonlinearity(detail::checked_nonlinearity("RNNCell", std::move(nl))) {}

GRAFT_INLINE Tensor RNNCell::forward(const Tensor& input, const Tensor& hx) {
    Tensor h = checked_state(input, hx, "hx");
    const Tensor xg = functional::linear(input, weight_ih, bias_ih);
    if (!h.defined()) h = zeros_like(xg);
    const Tensor pre = xg + functional::linear(h, weight_hh, bias_hh);
    return nonlinearity == "tanh" ? graft::tanh(pre) : graft::relu(pre);
}

GRAFT_INLINE std::string RNNCell::extra_repr() const {
    std::string s = rnn_cell_base::extra_repr();
    if (nonlinearity != "tanh") s += ", nonlinearity=" + nonlinearity;
    return s;
}

GRAFT_INLINE LSTMCell::LSTMCell(std::int64_t in, std::int64_t hidden, bool with_bias, dtype type, generator& gen)
    : rnn_cell_base("LSTMCell", in, hidden, with_bias, 4, type, gen) {}

GRAFT_INLINE lstm_state LSTMCell::forward(const Tensor& input, const lstm_state& hx) {
    graft::detail::check(hx.h.defined() == hx.c.defined(), "LSTMCell: give both h and c of the state, or neither");
    Tensor h = checked_state(input, hx.h, "h");
    Tensor c = checked_state(input, hx.c, "c");
    const Tensor xg = functional::linear(input, weight_ih, bias_ih);
    if (!h.defined()) {
        h = zeros_like(xg.narrow(-1, 0, hidden_size));
        c = zeros_like(h);
    }
    return detail::lstm_step(xg, functional::linear(h, weight_hh, bias_hh), c);
}

GRAFT_INLINE GRUCell::GRUCell(std::int64_t in, std::int64_t hidden, bool with_bias, dtype type, generator& gen)
    : rnn_cell_base("GRUCell", in, hidden, with_bias, 3, type, gen) {}

GRAFT_INLINE Tensor GRUCell::forward(const Tensor& input, const Tensor& hx) {
    Tensor h = checked_state(input, hx, "hx");
    const Tensor xg = functional::linear(input, weight_ih, bias_ih);
    if (!h.defined()) h = zeros_like(xg.narrow(-1, 0, hidden_size));
    return detail::gru_step(xg, functional::linear(h, weight_hh, bias_hh), h);
}

namespace detail {

inline std::int64_t gate_count(rnn_base::cell mode) {
    switch (mode) {
        case rnn_base::cell::lstm: return 4;
        case rnn_base::cell::gru: return 3;
        default: return 1;
    }
}

GRAFT_INLINE rnn_base::rnn_base(std::string name, cell m, std::int64_t in, std::int64_t hidden,
                                const rnn_options& o)
    : Module(std::move(name)),
      mode(m),
      input_size(positive_size(type_name().c_str(), "input_size", in)),
      hidden_size(positive_size(type_name().c_str(), "hidden_size", hidden)),
      num_layers(positive_size(type_name().c_str(), "num_layers", o.num_layers)),
      bias(o.bias),
      batch_first(o.batch_first),
      dropout(o.dropout),
      bidirectional(o.bidirectional) {
    const char* layer = type_name().c_str();
    graft::detail::check(o.dropout >= 0.0 && o.dropout <= 1.0, layer,
                         ": dropout should be a number in [0, 1] (the probability of zeroing an element), got ",
                         o.dropout);
    graft::detail::check(o.proj_size == 0 || m == cell::lstm, layer,
                         ": proj_size is only an LSTM argument (not RNN's or GRU's)");
    graft::detail::check(o.proj_size == 0, layer, ": proj_size (LSTM with projections) is not supported; got proj_size=",
                         o.proj_size);
    graft::detail::check(o.nonlinearity == "tanh" || m == cell::rnn_tanh || m == cell::rnn_relu, layer,
                         ": nonlinearity is only an RNN argument, got \"", o.nonlinearity, "\"");
    const dtype type = floating_type(layer, o.type);
    const std::int64_t gates = gate_count(m) * hidden, directions = bidirectional ? 2 : 1;
    for (std::int64_t l = 0; l < num_layers; ++l) {
        const std::int64_t layer_in = l == 0 ? in : hidden * directions;
        for (std::int64_t d = 0; d < directions; ++d) {
            const std::string suffix = graft::detail::concat("_l", l, d == 1 ? "_reverse" : "");
            layer_weights w{};
            w.w_ih = &register_parameter("weight_ih" + suffix, empty({gates, layer_in}, type));
            w.w_hh = &register_parameter("weight_hh" + suffix, empty({gates, hidden}, type));
            w.b_ih = &register_parameter("bias_ih" + suffix, parameter_if(bias, {gates}, type));
            w.b_hh = &register_parameter("bias_hh" + suffix, parameter_if(bias, {gates}, type));
            weights_.push_back(w);
        }
    }
    reset_parameters(o.gen != nullptr ? *o.gen : default_generator());
}

GRAFT_INLINE void rnn_base::reset_parameters(generator& gen) { uniform_parameters(*this, hidden_size, gen); }

GRAFT_INLINE std::string rnn_base::extra_repr() const {
    std::string s = graft::detail::concat(input_size, ", ", hidden_size);
    if (num_layers != 1) s += graft::detail::concat(", num_layers=", num_layers);
    if (!bias) s += ", bias=False";
    if (batch_first) s += ", batch_first=True";
    if (dropout != 0.0) s += graft::detail::concat(", dropout=", dropout);
    if (bidirectional) s += ", bidirectional=True";
    return s;
}

GRAFT_INLINE lstm_output rnn_base::run(const Tensor& input, const Tensor& h0, const Tensor& c0) {
    const std::string& name = type_name();
    const bool is_lstm = mode == cell::lstm;
    const dtype type = weights_[0].w_ih->type();
    check_input(*this, input, type);
    graft::detail::check(input.dim() == 2 || input.dim() == 3, name,
                         ": expected a 2-D (unbatched) or 3-D (batched) input, got a ", input.dim(),
                         "-D tensor of sizes ", input.sizes());
    const bool batched = input.dim() == 3;
    graft::detail::check(input.size(-1) == input_size, name, ": input.size(-1) must be input_size ", input_size,
                         ", got input of sizes ", input.sizes());
    // [T, N, input_size] from here on.
    const Tensor x = batched ? (batch_first ? input.transpose(0, 1) : input) : input.unsqueeze(1);
    const std::int64_t steps = x.size(0), batch = x.size(1), directions = bidirectional ? 2 : 1;
    graft::detail::check(steps > 0, name, ": expected a sequence of at least one step, got input of sizes ",
                         input.sizes());
    const int_list state_sizes = batched ? int_list{num_layers * directions, batch, hidden_size}
                                         : int_list{num_layers * directions, hidden_size};
    graft::detail::check(!is_lstm || h0.defined() == c0.defined(), name,
                         ": give both h0 and c0 of the state, or neither");
    if (h0.defined()) check_state(*this, h0, is_lstm ? "h0" : "hx", state_sizes, type, batched);
    if (c0.defined()) check_state(*this, c0, "c0", state_sizes, type, batched);
    const std::vector<Tensor> h_init = h0.defined() ? unbind_steps(batched ? h0 : h0.unsqueeze(1)) : std::vector<Tensor>{};
    const std::vector<Tensor> c_init =
        is_lstm && c0.defined() ? unbind_steps(batched ? c0 : c0.unsqueeze(1)) : std::vector<Tensor>{};

    std::vector<Tensor> h_last, c_last;
    Tensor layer_input = x;
    for (std::int64_t l = 0; l < num_layers; ++l) {
        const bool last = l + 1 == num_layers;
        // The last layer's output is stacked along the batch-first time dimension directly.
        const std::int64_t time_dim = last && batched && batch_first ? 1 : 0;
        std::vector<Tensor> outputs;
        for (std::int64_t d = 0; d < directions; ++d) {
            const auto k = static_cast<std::size_t>(l * directions + d);
            const layer_weights& w = weights_[k];
            // LSTM and RNN add both biases to every step's gates: folded into the projection.
            // The GRU's hidden bias sits inside r * (W_hn h + b_hn): added per step.
            const Tensor in_bias = !bias ? Tensor{} : mode == cell::gru ? *w.b_ih : *w.b_ih + *w.b_hh;
            const Tensor hidden_bias = bias && mode == cell::gru ? *w.b_hh : Tensor{};
            // The weights transposed into contiguous copies once per call: graft's matmul reads a
            // contiguous right operand about 3x faster than a transposed view at these shapes
            // ([16, 128] x [128, 512]: 15 against 46 us), and each is read by every step.
            Tensor projection = matmul(layer_input, w.w_ih->t().contiguous());
            if (in_bias.defined()) projection = projection + in_bias;
            const std::vector<Tensor> gates = unbind_steps(projection);
            const Tensor w_hh_t = w.w_hh->t().contiguous();
            Tensor h = h_init.empty() ? zeros_like(gates[0].narrow(-1, 0, hidden_size)) : h_init[k];
            Tensor c = !is_lstm ? Tensor{} : c_init.empty() ? zeros_like(h) : c_init[k];
            std::vector<Tensor> out(static_cast<std::size_t>(steps));
            for (std::int64_t s = 0; s < steps; ++s) {
                const auto t = static_cast<std::size_t>(d == 0 ? s : steps - 1 - s);
                Tensor hg = matmul(h, w_hh_t);
                switch (mode) {
                    case cell::rnn_tanh: h = graft::tanh(gates[t] + hg); break;
                    case cell::rnn_relu: h = graft::relu(gates[t] + hg); break;
                    case cell::lstm: {
                        const lstm_state next = lstm_step(gates[t], hg, c);
                        h = next.h;
                        c = next.c;
                        break;
                    }
                    case cell::gru:
                        if (hidden_bias.defined()) hg = hg + hidden_bias;
                        h = gru_step(gates[t], hg, h);
                        break;
                }
                out[t] = h;
            }
            outputs.push_back(stack(out, time_dim));
            h_last.push_back(h);
            if (is_lstm) c_last.push_back(c);
        }
        Tensor layer_output = directions == 2 ? cat(outputs, -1) : outputs[0];
        if (!last && dropout > 0.0 && is_training()) layer_output = functional::dropout(layer_output, dropout, true);
        layer_input = layer_output;
    }
    lstm_output r;
    r.output = batched ? layer_input : layer_input.squeeze(1);
    r.h_n = stack(h_last, 0);
    if (!batched) r.h_n = r.h_n.squeeze(1);
    if (is_lstm) {
        r.c_n = stack(c_last, 0);
        if (!batched) r.c_n = r.c_n.squeeze(1);
    }
    return r;
}

}  // namespace detail

namespace detail {
inline rnn_options rnn_positional(std::int64_t num_layers, std::string nonlinearity, bool bias, bool batch_first,
                                  double dropout, bool bidirectional, std::int64_t proj_size, dtype type,
                                  generator& gen) {
    rnn_options o;
    o.num_layers = num_layers;
    o.nonlinearity = std::move(nonlinearity);
    o.bias = bias;
    o.batch_first = batch_first;
    o.dropout = dropout;
    o.bidirectional = bidirectional;
    o.proj_size = proj_size;
    o.type = type;
    o.gen = &gen;
    return o;
}
inline detail::rnn_base::cell rnn_mode(const std::string& nonlinearity) {
    graft::detail::check(nonlinearity == "tanh" || nonlinearity == "relu", "RNN: Unknown nonlinearity '", nonlinearity,
                         "' (expected \"tanh\" or \"relu\")");
    return nonlinearity == "tanh" ? detail::rnn_base::cell::rnn_tanh : detail::rnn_base::cell::rnn_relu;
}
}  // namespace detail

GRAFT_INLINE RNN::RNN(std::int64_t in, std::int64_t hidden, rnn_options o)
    : rnn_base("RNN", detail::rnn_mode(o.nonlinearity), in, hidden, o), nonlinearity(o.nonlinearity) {}

GRAFT_INLINE RNN::RNN(std::int64_t in, std::int64_t hidden, std::int64_t layers, std::string nl, bool with_bias,
                      bool first, double p, bool bidi, dtype type, generator& gen)
    : RNN(in, hidden, detail::rnn_positional(layers, std::move(nl), with_bias, first, p, bidi, 0, type, gen)) {}

GRAFT_INLINE LSTM::LSTM(std::int64_t in, std::int64_t hidden, rnn_options o) : rnn_base("LSTM", cell::lstm, in, hidden, o) {}

GRAFT_INLINE LSTM::LSTM(std::int64_t in, std::int64_t hidden, std::int64_t layers, bool with_bias, bool first, double p,
                        bool bidi, std::int64_t proj, dtype type, generator& gen)
    : LSTM(in, hidden, detail::rnn_positional(layers, "tanh", with_bias, first, p, bidi, proj, type, gen)) {}

GRAFT_INLINE GRU::GRU(std::int64_t in, std::int64_t hidden, rnn_options o) : rnn_base("GRU", cell::gru, in, hidden, o) {}

GRAFT_INLINE GRU::GRU(std::int64_t in, std::int64_t hidden, std::int64_t layers, bool with_bias, bool first, double p,
                      bool bidi, dtype type, generator& gen)
    : GRU(in, hidden, detail::rnn_positional(layers, "tanh", with_bias, first, p, bidi, 0, type, gen)) {}

}  // namespace graft::nn
