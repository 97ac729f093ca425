// graft::nn's recurrent layers: RNN, LSTM, GRU and RNNCell, LSTMCell, GRUCell. Checked against
// PyTorch 1.13's results (tests/fixtures/rnn.txt, written by tests/fixtures/gen_rnn.py:
// outputs, final states and the gradients of the input, the initial states and every
// parameter, and the state_dict keys), against finite differences (first and second
// derivatives), across eager, nn::script and nn::aot, and the fused cell ops against the same
// formulas written with ordinary ops. Dropout between layers, printing, constructors and errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <graft/graft.hpp>

#include "fixture_common.hpp"
#include "grad_test_common.hpp"

using namespace graft;
namespace F = graft::nn::functional;

namespace {

// ------------------------------------------------------------------ the PyTorch fixture

struct rnn_case {
    std::string name;
    dtype type = dtype::float64;
    std::vector<std::string> keys;
    std::map<std::string, Tensor> results;  // output, h_n, c_n, grad_input, grad_h0, grad_c0, grad_<param>
};

std::vector<rnn_case> read_fixture() {
    const std::string path = std::string(GRAFT_SOURCE_DIR) + "/tests/fixtures/rnn.txt";
    std::ifstream file(path);
    REQUIRE(file.good());
    std::vector<rnn_case> cases;
    std::string line;
    while (std::getline(file, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream in(line);
        std::string tag;
        in >> tag;
        if (tag == "case") {
            rnn_case c;
            std::string type;
            in >> c.name >> type;
            c.type = type == "float32" ? dtype::float32 : dtype::float64;
            cases.push_back(std::move(c));
        } else if (tag == "keys") {
            std::string k;
            while (in >> k) cases.back().keys.push_back(k);
        } else if (tag == "t") {
            std::string label;
            in >> label;
            cases.back().results[label] = fx::read_tensor(in).to(cases.back().type);
        }
    }
    REQUIRE(cases.size() == 23);
    return cases;
}

/// The fixture's formulas (see gen_rnn.py), computed in float64 and rounded to `type`.
Tensor formula(const int_list& sizes, const std::function<double(std::int64_t)>& f, dtype type) {
    std::int64_t n = 1;
    for (auto s : sizes) n *= s;
    std::vector<double> v(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = f(i);
    return from_vector(v).reshape(sizes).to(type);
}

enum class kind { rnn, lstm, gru, rnn_cell, lstm_cell, gru_cell };

struct layer_case {
    std::function<std::shared_ptr<nn::Module>(dtype)> make;
    kind k;
    int_list input_sizes, state_sizes;
    bool with_state;
};

constexpr std::int64_t T = 3, N = 2, I = 3, H = 3;

const std::map<std::string, layer_case>& layer_cases() {
    using M = std::shared_ptr<nn::Module>;
    static const std::map<std::string, layer_case> cases{
        {"rnn_tanh", {[](dtype t) -> M { return std::make_shared<nn::RNN>(I, H, nn::rnn_options{.type = t}); },
                      kind::rnn, {T, N, I}, {1, N, H}, true}},
        {"rnn_relu_2layers_nobias",
         {[](dtype t) -> M {
              return std::make_shared<nn::RNN>(I, H, nn::rnn_options{.num_layers = 2, .nonlinearity = "relu", .bias = false, .type = t});
          },
          kind::rnn, {T, N, I}, {2, N, H}, true}},
        {"rnn_bidirectional_unbatched",
         {[](dtype t) -> M { return std::make_shared<nn::RNN>(I, H, 1, "tanh", true, false, 0.0, true, t); }, kind::rnn,
          {T, I}, {2, H}, true}},
        {"lstm", {[](dtype t) -> M { return std::make_shared<nn::LSTM>(I, H, nn::rnn_options{.type = t}); }, kind::lstm,
                  {T, N, I}, {1, N, H}, true}},
        {"lstm_2layers_bidirectional",
         {[](dtype t) -> M {
              return std::make_shared<nn::LSTM>(I, H, nn::rnn_options{.num_layers = 2, .bidirectional = true, .type = t});
          },
          kind::lstm, {T, N, I}, {4, N, H}, true}},
        {"lstm_batch_first_nostate",
         {[](dtype t) -> M { return std::make_shared<nn::LSTM>(I, H, 1, true, true, 0.0, false, 0, t); }, kind::lstm,
          {N, T, I}, {1, N, H}, false}},
        {"lstm_unbatched_bidirectional",
         {[](dtype t) -> M { return std::make_shared<nn::LSTM>(I, H, nn::rnn_options{.bidirectional = true, .type = t}); },
          kind::lstm, {T, I}, {2, H}, true}},
        {"lstm_nobias_2layers",
         {[](dtype t) -> M { return std::make_shared<nn::LSTM>(I, H, nn::rnn_options{.num_layers = 2, .bias = false, .type = t}); },
          kind::lstm, {T, N, I}, {2, N, H}, true}},
        {"gru", {[](dtype t) -> M { return std::make_shared<nn::GRU>(I, H, nn::rnn_options{.type = t}); }, kind::gru,
                 {T, N, I}, {1, N, H}, true}},
        {"gru_2layers_bidirectional_batch_first",
         {[](dtype t) -> M { return std::make_shared<nn::GRU>(I, H, 2, true, true, 0.0, true, t); }, kind::gru,
          {N, T, I}, {4, N, H}, true}},
        {"gru_unbatched_nobias",
         {[](dtype t) -> M { return std::make_shared<nn::GRU>(I, H, nn::rnn_options{.bias = false, .type = t}); },
          kind::gru, {T, I}, {1, H}, true}},
        {"gru_nostate", {[](dtype t) -> M { return std::make_shared<nn::GRU>(I, H, nn::rnn_options{.type = t}); },
                         kind::gru, {T, N, I}, {1, N, H}, false}},
        {"rnncell_tanh", {[](dtype t) -> M { return std::make_shared<nn::RNNCell>(I, H, true, "tanh", t); },
                          kind::rnn_cell, {N, I}, {N, H}, true}},
        {"rnncell_relu_unbatched_nobias",
         {[](dtype t) -> M { return std::make_shared<nn::RNNCell>(I, H, false, "relu", t); }, kind::rnn_cell, {I}, {H},
          true}},
        {"lstmcell", {[](dtype t) -> M { return std::make_shared<nn::LSTMCell>(I, H, true, t); }, kind::lstm_cell,
                      {N, I}, {N, H}, true}},
        {"lstmcell_unbatched_nostate",
         {[](dtype t) -> M { return std::make_shared<nn::LSTMCell>(I, H, true, t); }, kind::lstm_cell, {I}, {H}, false}},
        {"grucell", {[](dtype t) -> M { return std::make_shared<nn::GRUCell>(I, H, true, t); }, kind::gru_cell, {N, I},
                     {N, H}, true}},
        {"grucell_unbatched_nobias",
         {[](dtype t) -> M { return std::make_shared<nn::GRUCell>(I, H, false, t); }, kind::gru_cell, {I}, {H}, true}},
    };
    return cases;
}

/// (output, h_n, c_n) of the module on (x, h0, c0) (undefined where the kind has none): the
/// same call for every path (eager, the function nn::script and nn::aot trace).
std::vector<Tensor> call_module(nn::Module& m, kind k, const Tensor& x, const Tensor& h0, const Tensor& c0) {
    switch (k) {
        case kind::rnn: {
            auto r = dynamic_cast<nn::RNN&>(m)(x, h0);
            return {r.output, r.h_n};
        }
        case kind::gru: {
            auto r = dynamic_cast<nn::GRU&>(m)(x, h0);
            return {r.output, r.h_n};
        }
        case kind::lstm: {
            auto r = dynamic_cast<nn::LSTM&>(m)(x, {h0, c0});
            return {r.output, r.h_n, r.c_n};
        }
        case kind::rnn_cell: return {dynamic_cast<nn::RNNCell&>(m)(x, h0)};
        case kind::gru_cell: return {dynamic_cast<nn::GRUCell&>(m)(x, h0)};
        case kind::lstm_cell: {
            auto s = dynamic_cast<nn::LSTMCell&>(m)(x, {h0, c0});
            return {s.h, s.c};  // c' is the fixture's c_n
        }
    }
    return {};
}

/// Output labels of call_module's results.
std::vector<std::string> output_labels(kind k) {
    switch (k) {
        case kind::rnn:
        case kind::gru: return {"output", "h_n"};
        case kind::lstm: return {"output", "h_n", "c_n"};
        case kind::lstm_cell: return {"output", "c_n"};
        default: return {"output"};
    }
}

/// The module built and given the fixture's parameter values.
std::shared_ptr<nn::Module> make_layer(const rnn_case& c) {
    auto m = layer_cases().at(c.name).make(c.type);
    const autograd::no_grad guard;
    std::int64_t p = 0;
    for (auto& [name, w] : m->named_parameters()) {
        Tensor t = w;
        const double q = static_cast<double>(p++);
        t.copy_(formula(t.sizes(), [q](std::int64_t i) { return 0.4 * std::sin(0.7 * i + 1.3 * q + 0.1); }, c.type));
    }
    return m;
}

enum class path { eager, script, aot };

/// Backpropagates the outputs' sum and drops them. (A differentiable jit plan whose output is
/// also a value saved for its backward, as tanh's result in RNNCell, is kept in a reference
/// cycle until its backward runs: outputs dropped without a backward leak, which
/// LeakSanitizer reports; the same holds for jit::script(tanh(matmul(a, w))) alone.)
void backward_and_forget(const std::vector<Tensor>& outs) {
    Tensor total;
    for (const Tensor& o : outs) total = total.defined() ? total + o.sum() : o.sum();
    total.backward();
}

/// Every result of the case on `p`, by the fixture's labels.
std::map<std::string, Tensor> run_case(const rnn_case& c, path p) {
    const layer_case& lc = layer_cases().at(c.name);
    auto m = make_layer(c);
    const bool lstm = lc.k == kind::lstm || lc.k == kind::lstm_cell;
    Tensor x = formula(lc.input_sizes, [](std::int64_t i) { return 0.8 * std::sin(0.37 * i + 0.2); }, c.type);
    Tensor h0 = formula(lc.state_sizes, [](std::int64_t i) { return 0.5 * std::cos(0.41 * i + 0.3); }, c.type);
    Tensor c0 = formula(lc.state_sizes, [](std::int64_t i) { return 0.6 * std::sin(0.29 * i + 0.5); }, c.type);
    x.requires_grad_(true);
    h0.requires_grad_(true);
    if (lstm) c0.requires_grad_(true);
    else c0 = zeros_like(h0);  // passed to the traced function, unused
    std::vector<Tensor> outs;
    const auto with_state = [k = lc.k](nn::Module& mod, const Tensor& a, const Tensor& h, const Tensor& cc) {
        return call_module(mod, k, a, h, cc);
    };
    const auto without_state = [k = lc.k](nn::Module& mod, const Tensor& a) { return call_module(mod, k, a, {}, {}); };
    switch (p) {
        case path::eager: outs = lc.with_state ? call_module(*m, lc.k, x, h0, c0) : without_state(*m, x); break;
        case path::script:
            if (lc.with_state) {
                auto s = nn::script(m, with_state);
                for (int i = 0; i < 2; ++i) backward_and_forget(s(x, h0, c0));  // profile, then compile
                outs = s(x, h0, c0);
            } else {
                auto s = nn::script(m, without_state);
                for (int i = 0; i < 2; ++i) backward_and_forget(s(x));
                outs = s(x);
            }
            break;
        case path::aot:
            if (lc.with_state) outs = nn::aot(m, with_state, x, h0, c0)(x, h0, c0);
            else outs = nn::aot(m, without_state, x)(x);
            break;
    }
    m->zero_grad();
    for (Tensor* t : {&x, &h0, &c0}) t->set_grad(Tensor());
    const std::vector<std::string> labels = output_labels(lc.k);
    REQUIRE(outs.size() == labels.size());
    std::map<std::string, Tensor> r;
    Tensor loss;
    for (std::size_t i = 0; i < outs.size(); ++i) {
        const std::function<double(std::int64_t)> g =
            labels[i] == "output" ? [](std::int64_t j) { return std::cos(0.23 * j); }
            : labels[i] == "h_n"  ? [](std::int64_t j) { return std::sin(0.31 * j + 0.4); }
                                  : [](std::int64_t j) { return std::cos(0.17 * j + 0.2); };
        const Tensor term = (outs[i] * formula(outs[i].sizes(), g, c.type)).sum();
        loss = loss.defined() ? loss + term : term;
        r[labels[i]] = outs[i].detach();
    }
    loss.backward();
    r["grad_input"] = x.grad();
    if (lc.with_state) {
        r["grad_h0"] = h0.grad();
        if (lstm) r["grad_c0"] = c0.grad();
    }
    for (auto& [name, w] : m->named_parameters()) r["grad_" + name] = w.grad();
    return r;
}

/// max |a - b| / (1 + |b|), or infinity when sizes or dtypes differ.
double rel_error(const Tensor& a, const Tensor& b) {
    if (!a.defined() || a.sizes() != b.sizes() || a.type() != b.type()) return INFINITY;
    if (a.numel() == 0) return 0;
    const Tensor ad = a.to(dtype::float64), bd = b.to(dtype::float64);
    return ((ad - bd).abs() / (bd.abs() + 1.0)).amax().item<double>();
}

// ------------------------------------------------------------------ helpers for the other tests

/// A module's parameters as leaves for gradcheck (copies of its own values).
std::vector<Tensor> parameter_leaves(nn::Module& m) {
    std::vector<Tensor> r;
    for (const Tensor& p : m.parameters()) r.push_back(p.detach().clone().requires_grad_());
    return r;
}

/// The outputs of `m` on in[0] (input), in[1] (h0), in[2] (c0, LSTM only), with its parameters
/// replaced by the rest of `in`.
autograd::tensor_list call_with(nn::Module& m, kind k, const autograd::tensor_list& in) {
    const bool lstm = k == kind::lstm || k == kind::lstm_cell;
    const std::size_t first = lstm ? 3 : 2;
    std::vector<Tensor> params(in.begin() + static_cast<std::ptrdiff_t>(first), in.end());
    autograd::tensor_list out;
    nn::detail::with_parameters(m, params, [&] { out = call_module(m, k, in[0], in[1], lstm ? in[2] : Tensor{}); });
    return out;
}

/// The LSTM gate math written with ordinary ops: (h', c') stacked.
Tensor lstm_reference(const Tensor& xg, const Tensor& hg, const Tensor& cx) {
    const std::int64_t h = cx.size(-1);
    const Tensor gates = xg + hg;
    const Tensor i = sigmoid(gates.narrow(-1, 0, h)), f = sigmoid(gates.narrow(-1, h, h));
    const Tensor g = tanh(gates.narrow(-1, 2 * h, h)), o = sigmoid(gates.narrow(-1, 3 * h, h));
    const Tensor c = f * cx + i * g;
    return stack({o * tanh(c), c}, 0);
}

/// The GRU gate math written with ordinary ops.
Tensor gru_reference(const Tensor& xg, const Tensor& hg, const Tensor& hx) {
    const std::int64_t h = hx.size(-1);
    const Tensor r = sigmoid(xg.narrow(-1, 0, h) + hg.narrow(-1, 0, h));
    const Tensor z = sigmoid(xg.narrow(-1, h, h) + hg.narrow(-1, h, h));
    const Tensor n = tanh(xg.narrow(-1, 2 * h, h) + r * hg.narrow(-1, 2 * h, h));
    return (1.0 - z) * n + z * hx;
}

}  // namespace

TEST_CASE("recurrent layers: eager results and gradients equal PyTorch 1.13's", "[nn][rnn]") {
    for (const rnn_case& c : read_fixture()) {
        INFO(c.name << " " << c.type);
        const auto r = run_case(c, path::eager);
        // The same formulas up to rounding (graft adds both biases to the input projection first,
        // and sums in other orders): 2.4e-16 seen in float64, 1.2e-7 in float32 (relative to
        // 1 + |value|).
        const double tol = c.type == dtype::float64 ? 1e-12 : 1e-6;
        REQUIRE(r.size() == c.results.size());
        for (const auto& [label, expected] : c.results) {
            INFO(label);
            REQUIRE(r.count(label) == 1);
            const double err = rel_error(r.at(label), expected);
            UNSCOPED_INFO("error " << err);
            CHECK(err <= tol);
        }
    }
}

TEST_CASE("recurrent layers: state_dict keys and their order are PyTorch's", "[nn][rnn]") {
    for (const rnn_case& c : read_fixture()) {
        INFO(c.name);
        const auto m = layer_cases().at(c.name).make(c.type);
        std::vector<std::string> keys;
        for (const auto& [k, v] : m->state_dict()) keys.push_back(k);
        CHECK(keys == c.keys);
    }
}

TEST_CASE("recurrent layers: nn::script and nn::aot give eager's results and gradients", "[nn][rnn][jit][capture]") {
    for (const rnn_case& c : read_fixture()) {
        INFO(c.name << " " << c.type);
        const auto eager = run_case(c, path::eager);
        for (const path p : {path::script, path::aot}) {
            INFO((p == path::script ? "nn::script" : "nn::aot"));
            const auto r = run_case(c, p);
            REQUIRE(r.size() == eager.size());
            for (const auto& [label, expected] : eager) {
                INFO(label);
                // The same ops in the same order forward (fusion groups apply the eager kernels'
                // lane math): bitwise. Gradients may be summed in another order.
                const bool forward = label == "output" || label == "h_n" || label == "c_n";
                if (forward) CHECK(equal(r.at(label), expected));
                else CHECK(rel_error(r.at(label), expected) <= (c.type == dtype::float64 ? 1e-13 : 1e-6));
            }
        }
    }
}

TEST_CASE("fused LSTM and GRU cell ops: bitwise the formulas written with ordinary ops, forward and backward",
          "[nn][rnn][ops]") {
    for (const dtype t : {dtype::float32, dtype::float64}) {
        // Hidden sizes around the program's tiles and vector lengths; batched and unbatched.
        for (const int_list& state : {int_list{2, 1}, int_list{3, 7}, int_list{2, 130}, int_list{17}, int_list{0, 5}}) {
            INFO(t << " " << state);
            const std::int64_t h = state.back();
            int_list g4 = state, g3 = state;
            g4.back() = 4 * h;
            g3.back() = 3 * h;
            const Tensor xg = gt::leaf(g4, 1, t, -3, 3), hg = gt::leaf(g4, 2, t, -3, 3), cx = gt::leaf(state, 3, t);
            const Tensor fused = autograd::detail::fused_lstm_cell(xg, hg, cx);
            const Tensor ref = lstm_reference(xg, hg, cx);
            CHECK(equal(fused, ref));
            int_list hc = state;
            hc.insert(hc.begin(), 2);
            const Tensor g = gt::leaf(hc, 4, t).detach();
            const auto fg = autograd::grad({fused}, {xg, hg, cx}, {g});
            const auto rg = autograd::grad({ref}, {xg, hg, cx}, {g});
            for (std::size_t k = 0; k < 3; ++k) CHECK(rel_error(fg[k], rg[k]) <= (t == dtype::float32 ? 1e-6 : 1e-15));

            const Tensor gi = gt::leaf(g3, 5, t, -3, 3), gh = gt::leaf(g3, 6, t, -3, 3), hx = gt::leaf(state, 7, t);
            const Tensor gf = autograd::detail::fused_gru_cell(gi, gh, hx);
            const Tensor gr = gru_reference(gi, gh, hx);
            CHECK(equal(gf, gr));
            const Tensor gg = gt::leaf(state, 8, t).detach();
            const auto fgg = autograd::grad({gf}, {gi, gh, hx}, {gg});
            const auto rgg = autograd::grad({gr}, {gi, gh, hx}, {gg});
            for (std::size_t k = 0; k < 3; ++k) CHECK(rel_error(fgg[k], rgg[k]) <= (t == dtype::float32 ? 1e-6 : 1e-15));
        }
    }
    // The backward ops against their composite form (what create_graph runs).
    const Tensor xg = gt::leaf({3, 8}, 11), hg = gt::leaf({3, 8}, 12), cx = gt::leaf({3, 2}, 13);
    const Tensor g = gt::leaf({2, 3, 2}, 14);
    const Tensor fused = ops::fused_lstm_cell_backward(g, xg, hg, cx);
    Tensor composite;
    {
        const autograd::enable_grad on;
        composite = autograd::detail::fused_lstm_cell_backward(g, xg, hg, cx);
    }
    CHECK(composite.grad_fn() != nullptr);
    CHECK(rel_error(fused, composite.detach()) <= 1e-15);
    const Tensor gi = gt::leaf({3, 6}, 15), gh = gt::leaf({3, 6}, 16), hx = gt::leaf({3, 2}, 17), gg = gt::leaf({3, 2}, 18);
    const Tensor gfused = ops::fused_gru_cell_backward(gg, gi, gh, hx);
    Tensor gcomposite;
    {
        const autograd::enable_grad on;
        gcomposite = autograd::detail::fused_gru_cell_backward(gg, gi, gh, hx);
    }
    CHECK(rel_error(gfused, gcomposite.detach()) <= 1e-15);
    // Node names, as PyTorch's fused cells' (ThnnFused...Backward0) without the prefix.
    CHECK(autograd::detail::fused_lstm_cell(xg, hg, cx).grad_fn()->name() == "FusedLstmCellBackward0");
    CHECK(autograd::detail::fused_gru_cell(gi, gh, hx).grad_fn()->name() == "FusedGruCellBackward0");
}

TEST_CASE("recurrent cells and a 2-layer bidirectional module: first and second derivatives against finite differences",
          "[nn][rnn][gradcheck]") {
    using L = autograd::tensor_list;
    const auto check_module = [](const std::shared_ptr<nn::Module>& m, kind k, const int_list& x_sizes,
                                 const int_list& state_sizes) {
        L in{gt::leaf(x_sizes, 21), gt::leaf(state_sizes, 22, -0.8, 0.8)};
        if (k == kind::lstm || k == kind::lstm_cell) in.push_back(gt::leaf(state_sizes, 23, -0.8, 0.8));
        for (const Tensor& p : parameter_leaves(*m)) in.push_back(p);
        gt::check_grads([&](const L& v) { return call_with(*m, k, v); }, in);
    };
    const dtype d = dtype::float64;
    SECTION("cells") {
        check_module(std::make_shared<nn::RNNCell>(3, 2, true, "tanh", d), kind::rnn_cell, {2, 3}, {2, 2});
        check_module(std::make_shared<nn::RNNCell>(3, 2, false, "relu", d), kind::rnn_cell, {3}, {2});
        check_module(std::make_shared<nn::LSTMCell>(3, 2, true, d), kind::lstm_cell, {2, 3}, {2, 2});
        check_module(std::make_shared<nn::GRUCell>(3, 2, true, d), kind::gru_cell, {2, 3}, {2, 2});
    }
    SECTION("2-layer bidirectional modules") {
        const nn::rnn_options o{.num_layers = 2, .bidirectional = true, .type = d};
        check_module(std::make_shared<nn::LSTM>(2, 2, o), kind::lstm, {2, 2, 2}, {4, 2, 2});
        check_module(std::make_shared<nn::GRU>(2, 2, o), kind::gru, {2, 2, 2}, {4, 2, 2});
        check_module(std::make_shared<nn::RNN>(2, 2, o), kind::rnn, {2, 2, 2}, {4, 2, 2});
    }
}

TEST_CASE("recurrent layers: dropout between layers in training only", "[nn][rnn]") {
    // Two ReLU layers that pass positive inputs through (identity input weights, no recurrence,
    // no bias): the output is the first layer's output after dropout, x * mask / (1 - p).
    const double p = 0.3;
    auto rnn = std::make_shared<nn::RNN>(8, 8, nn::rnn_options{.num_layers = 2, .nonlinearity = "relu", .bias = false,
                                                               .dropout = p, .type = dtype::float64});
    {
        const autograd::no_grad guard;
        for (auto& [name, w] : rnn->named_parameters()) {
            Tensor t = w;
            t.copy_(name.rfind("weight_ih", 0) == 0 ? formula({8, 8}, [](std::int64_t i) { return i % 9 == 0 ? 1.0 : 0.0; }, dtype::float64)
                                                    : zeros({8, 8}, dtype::float64));
        }
    }
    generator g(5);
    const Tensor x = rand({50, 40, 8}, dtype::float64, g) + 0.5;  // in [0.5, 1.5)
    manual_seed(7);
    const Tensor y = (*rnn)(x);
    const Tensor ratio = y / x;
    const double zeros_fraction = (ratio == 0.0).to(dtype::float64).mean().item<double>();
    const double kept = ((ratio - 1.0 / (1.0 - p)).abs() < 1e-12).to(dtype::float64).mean().item<double>();
    CHECK(std::abs(zeros_fraction - p) < 0.02);  // 16,000 draws: the fraction's sd is 0.004
    CHECK(zeros_fraction + kept == 1.0);          // every element is dropped or scaled by 1 / (1 - p)
    // The same seed, the same mask.
    manual_seed(7);
    CHECK(equal((*rnn)(x), y));
    // Eval: no dropout (the identity here), as a module built with dropout 0.
    rnn->eval();
    CHECK(equal((*rnn)(x), x));
    // One layer: no dropout at all (it acts between layers only).
    auto one = std::make_shared<nn::LSTM>(4, 3, nn::rnn_options{.dropout = 0.9});
    const Tensor s = randn({5, 2, 4});
    const Tensor a = (*one)(s);
    one->eval();
    CHECK(equal((*one)(s), a));
}

TEST_CASE("recurrent layers: printing, constructors, parameters, initialization, Module interface", "[nn][rnn]") {
    CHECK(nn::RNN(3, 4, nn::rnn_options{.num_layers = 2, .nonlinearity = "relu", .bias = false, .batch_first = true,
                                        .dropout = 0.5, .bidirectional = true})
              .to_string() == "RNN(3, 4, num_layers=2, bias=False, batch_first=True, dropout=0.5, bidirectional=True)");
    CHECK(nn::LSTM(3, 4, 2).to_string() == "LSTM(3, 4, num_layers=2)");
    CHECK(nn::GRU(3, 4).to_string() == "GRU(3, 4)");
    CHECK(nn::RNNCell(3, 4, false, "relu").to_string() == "RNNCell(3, 4, bias=False, nonlinearity=relu)");
    CHECK(nn::LSTMCell(3, 4).to_string() == "LSTMCell(3, 4)");
    CHECK(nn::GRUCell(3, 4, false).to_string() == "GRUCell(3, 4, bias=False)");

    // Shapes: weight_ih [G * H, in], weight_hh [G * H, H]; layer 1 reads both directions.
    nn::LSTM lstm(5, 4, nn::rnn_options{.num_layers = 2, .bidirectional = true});
    CHECK(lstm.get_parameter("weight_ih_l0").sizes() == int_list{16, 5});
    CHECK(lstm.get_parameter("weight_hh_l0_reverse").sizes() == int_list{16, 4});
    CHECK(lstm.get_parameter("weight_ih_l1").sizes() == int_list{16, 8});
    CHECK(lstm.get_parameter("bias_hh_l1_reverse").sizes() == int_list{16});
    CHECK(nn::GRU(5, 4).get_parameter("weight_ih_l0").sizes() == int_list{12, 5});
    CHECK(nn::GRUCell(5, 4).weight_hh.sizes() == int_list{12, 4});
    // Initialization: every parameter within +-1/sqrt(hidden_size), spread over it.
    nn::GRU big(10, 100);
    for (const Tensor& p : big.parameters()) {
        CHECK(p.abs().amax().item<float>() <= 0.1f);
        CHECK(p.abs().amax().item<float>() > 0.09f);
    }
    // The same generator state, the same values; positional and options forms agree.
    generator g1(3), g2(3);
    nn::LSTM a(3, 4, 1, true, false, 0.0, false, 0, dtype::float32, g1);
    nn::LSTM b(3, 4, nn::rnn_options{.gen = &g2});
    CHECK(equal(a.get_parameter("weight_hh_l0"), b.get_parameter("weight_hh_l0")));
    CHECK(nn::LSTM(3, 4, nn::rnn_options{.type = dtype::float64}).get_parameter("bias_ih_l0").type() == dtype::float64);

    // forward(input) is the output sequence (LSTMCell: h'), so the layers sit in a Sequential.
    auto seq = std::make_shared<nn::Sequential>(std::make_shared<nn::GRU>(3, 4, nn::rnn_options{.batch_first = true}),
                                                std::make_shared<nn::Linear>(4, 2));
    CHECK((*seq)(randn({2, 5, 3})).sizes() == int_list{2, 5, 2});
    nn::LSTMCell cell(3, 4);
    const Tensor x = randn({2, 3});
    CHECK(equal(cell.forward(x), cell(x, {}).h));
    // A state carried across calls equals one call over the whole sequence.
    auto gru = std::make_shared<nn::GRU>(3, 4, 2);
    const Tensor seqx = randn({6, 2, 3});
    const auto whole = (*gru)(seqx, {});
    const auto first = (*gru)(seqx.narrow(0, 0, 4), {});
    const auto rest = (*gru)(seqx.narrow(0, 4, 2), first.h_n);
    CHECK(allclose(rest.output, whole.output.narrow(0, 4, 2), 1e-6, 1e-6));
    CHECK(allclose(rest.h_n, whole.h_n, 1e-6, 1e-6));
    auto l2 = std::make_shared<nn::LSTM>(3, 4);
    const auto lw = (*l2)(seqx, {});
    const auto l1 = (*l2)(seqx.narrow(0, 0, 1), {});
    CHECK(allclose((*l2)(seqx.narrow(0, 1, 5), l1.state()).c_n, lw.c_n, 1e-6, 1e-6));
    // An empty batch gives empty results.
    CHECK((*gru)(randn({3, 0, 3}), {}).output.sizes() == int_list{3, 0, 4});
}

TEST_CASE("recurrent layers: capture records one fused op per LSTM / GRU step, forward and backward",
          "[nn][rnn][capture]") {
    auto lstm = std::make_shared<nn::LSTM>(3, 4);
    const Tensor x = randn({5, 2, 3});
    auto a = nn::aot(lstm, x);
    const std::string fw = ir::to_string(*a.function().forward), bw = ir::to_string(*a.function().backward);
    const auto count = [](const std::string& s, const std::string& what) {
        std::size_t n = 0;
        for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
        return n;
    };
    CHECK(count(fw, "fused_lstm_cell(") == 5);
    CHECK(count(bw, "fused_lstm_cell_backward(") == 5);
    // The backward joins the steps' gradients with one cat, not one zero-filled tensor per step.
    CHECK(count(bw, "narrow_backward") == 0);
    auto gru = std::make_shared<nn::GRU>(3, 4);
    auto ga = nn::aot(gru, x);
    CHECK(count(ir::to_string(*ga.function().forward), "fused_gru_cell(") == 5);
    CHECK(count(ir::to_string(*ga.function().backward), "fused_gru_cell_backward(") == 5);
}

TEST_CASE("recurrent layers: bad input is a graft::error naming the problem", "[nn][rnn][errors]") {
    auto lstm = std::make_shared<nn::LSTM>(3, 4);
    using Catch::Contains;
    CHECK_THROWS_WITH((*lstm)(randn({5, 2, 4})), Contains("input.size(-1) must be input_size 3"));
    CHECK_THROWS_WITH((*lstm)(randn({2, 5, 2, 3})), Contains("2-D (unbatched) or 3-D (batched)"));
    CHECK_THROWS_WITH((*lstm)(randn({3})), Contains("got a 1-D tensor"));
    CHECK_THROWS_WITH((*lstm)(ones({5, 2, 3}, dtype::int64)), Contains("floating-point input"));
    CHECK_THROWS_WITH((*lstm)(randn({5, 2, 3}, dtype::float64)), Contains("the parameters are float32"));
    CHECK_THROWS_WITH((*lstm)(randn({0, 2, 3})), Contains("at least one step"));
    CHECK_THROWS_WITH((*lstm)(Tensor{}), Contains("undefined"));
    CHECK_THROWS_WITH((*lstm)(randn({5, 2, 3}), {zeros({1, 3, 4}), zeros({1, 3, 4})}),
                      Contains("expected h0 of sizes [1, 2, 4], got [1, 3, 4]"));
    CHECK_THROWS_WITH((*lstm)(randn({5, 2, 3}), {zeros({1, 2, 4}), zeros({2, 2, 4})}), Contains("c0 of sizes"));
    CHECK_THROWS_WITH((*lstm)(randn({5, 2, 3}), {zeros({1, 2, 4}), Tensor{}}), Contains("both h0 and c0"));
    CHECK_THROWS_WITH((*lstm)(randn({5, 3}), {zeros({1, 2, 4}), zeros({1, 2, 4})}),
                      Contains("h0 should be 2-D for an unbatched input"));
    CHECK_THROWS_WITH((*lstm)(randn({5, 2, 3}), {zeros({1, 2, 4}, dtype::float64), zeros({1, 2, 4}, dtype::float64)}),
                      Contains("h0 is float64"));
    auto gru = std::make_shared<nn::GRU>(3, 4, 2);
    CHECK_THROWS_WITH((*gru)(randn({5, 2, 3}), zeros({1, 2, 4})), Contains("expected hx of sizes [2, 2, 4]"));
    nn::GRUCell cell(3, 4);
    CHECK_THROWS_WITH(cell(randn({5, 4}), {}), Contains("input has 4 features"));
    CHECK_THROWS_WITH(cell(randn({5, 3}), zeros({4, 4})), Contains("expected hx of sizes [5, 4], got [4, 4]"));
    CHECK_THROWS_WITH(cell(randn({5, 3, 1}), {}), Contains("expected input to be 1-D or 2-D"));
    CHECK_THROWS_WITH(nn::LSTMCell(3, 4)(randn({3}), {zeros({4}), Tensor{}}), Contains("both h and c"));
    CHECK_THROWS_WITH(nn::RNN(3, 4, nn::rnn_options{.dropout = 1.5}), Contains("dropout should be a number in [0, 1]"));
    CHECK_THROWS_WITH(nn::GRU(3, 4, nn::rnn_options{.proj_size = 2}), Contains("proj_size is only an LSTM argument"));
    CHECK_THROWS_WITH(nn::LSTM(3, 4, 1, true, false, 0.0, false, 2), Contains("proj_size (LSTM with projections) is not supported"));
    CHECK_THROWS_WITH(nn::RNN(3, 4, 1, "sigmoid"), Contains("Unknown nonlinearity 'sigmoid'"));
    CHECK_THROWS_WITH(nn::RNNCell(3, 4, true, "sigmoid"), Contains("Unknown nonlinearity 'sigmoid'"));
    CHECK_THROWS_WITH(nn::LSTM(3, 4, nn::rnn_options{.nonlinearity = "relu"}), Contains("nonlinearity is only an RNN argument"));
    CHECK_THROWS_WITH(nn::LSTM(3, 0), Contains("hidden_size must be positive"));
    CHECK_THROWS_WITH(nn::GRU(3, 4, 0), Contains("num_layers must be positive"));
    CHECK_THROWS_WITH(nn::GRU(3, 4, nn::rnn_options{.type = dtype::int64}), Contains("floating-point dtype"));
    // The fused ops check their operands.
    CHECK_THROWS_WITH(ops::fused_lstm_cell(zeros({2, 8}), zeros({2, 7}), zeros({2, 2})), Contains("hidden gates of sizes"));
    CHECK_THROWS_WITH(ops::fused_gru_cell(zeros({2, 6}), zeros({2, 6}), zeros({2, 2}, dtype::float64)),
                      Contains("expected every operand to be float32"));
    CHECK_THROWS_WITH(ops::fused_lstm_cell(ones({2, 8}, dtype::int64), ones({2, 8}, dtype::int64), ones({2, 2}, dtype::int64)),
                      Contains("floating-point gates"));
    // A refused call leaves the module usable.
    CHECK((*lstm)(randn({5, 2, 3})).sizes() == int_list{5, 2, 4});
}
