// Issue 33, "gains on real programs": the runtime-graph layer (jit::script's profiling
// executor, capture::aot) on four training steps written the way a PyTorch user ports
// PyTorch's examples, each measured three ways in one run:
//
//   eager   zero_grad; loss = loss_fn(x, y, params); loss.backward(); Adam step
//   script  the same with loss_fn through jit::script (the whole loss: forward + loss; its
//           differentiable plan's backward runs inside loss.backward())
//   aot     the same with loss_fn through capture::aot (forward and backward graphs captured
//           ahead of time, run by the IR interpreter as one CompiledFunctionBackward node)
//
// The programs (float32, one thread):
//   cnn          digits-like CNN on random 8x8 images, batch 64: conv 1->16, relu, maxpool,
//                conv 16->32, relu, maxpool, dropout 0.25, linear 128->10, cross_entropy
//   transformer  a one-block char LM: vocab 64, d 128, x [8, 64, 128], pre-LN 4-head causal
//                self-attention (matmul / masked_fill with a tril mask / softmax), GELU MLP
//                128->512->128, residuals, dropout 0.1, linear to the vocabulary, cross_entropy
//   gru          a GRU cell written by hand (linear, sigmoid, tanh) unrolled over 32 steps in a
//                C++ loop, hidden 64, batch 32, input 1: next value of sine waves, mse_loss
//   vae          VAE on 64-dim inputs, batch 128: 64->128->(mu, logvar 16), z = mu +
//                exp(0.5 logvar) * randn_like(mu), 16->128->64 logits,
//                binary_cross_entropy_with_logits (sum) + KL
//   gru_views    the gru step with its input and target given as two overlapping views of one
//                tensor, as PyTorch's time_sequence_prediction example slices its data
//
// Before the benchmarks run, each program's scripted and aot losses are compared with the
// eager loss on the same parameters after the same manual_seed (allclose, rtol 1e-5; the
// gradients too), and the verdicts are printed. A path that throws a graft::error (an op
// that cannot be captured, a refusal) is reported as unsupported, not run.
//
// Then the DYNAMIC runs: a 64-128-10 ReLU MLP, the CNN and the transformer step under
// jit::script with the strategy [(DYNAMIC, 10)], called with batch sizes 8, 16, 32, 5, 64, 128
// (the CNN and the transformer also with 6, 12, 24, 5, 48, 96, sizes the models do not have):
// compilations, guard failures, unoptimized runs (issue floor: <= 2 compilations, 0
// unoptimized runs), calls that ran an optimized plan, how often the script captured f, and a
// second round over the same batch sizes that must run every call on one plan (the floor's
// "one differentiable specialization serves every batch size").
//
// Environment: BENCH_PROGRAMS_DEBUG=1 prints each script's debug_string(); BENCH_PROGRAMS_SKIP_CHECKS=1
// runs the timed steps only (for a profiler: perf record ... --benchmark_filter='^transformer/script$').
//
// Times are the benchmark thread's CPU time (Google Benchmark's default; the jit runs with
// num_threads = 1, so no work hides in other threads). A summary with eager/script and
// eager/aot ratios of this run is printed at the end.
#include <graft/graft.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numbers>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <unistd.h>

namespace {

using namespace graft;
namespace F = graft::nn::functional;

// Counts the calls of a loss function: eager calls plus the traces jit::script / capture::aot
// make (a script capture runs f three times: the capture and two probes at other sizes).
std::atomic<std::uint64_t> loss_calls{0};

// A script's call returns a Tensor or a list of them, depending on graft's version.
template <class R>
Tensor first_tensor(R&& r) {
    if constexpr (std::is_same_v<std::decay_t<R>, Tensor>) return std::forward<R>(r);
    else return r.at(0);
}

std::string shorten(const std::string& text, std::size_t n) {
    const std::string line = text.substr(0, text.find('\n'));
    return line.size() <= n ? line : line.substr(0, n) + "...";
}

jit::options bench_options() {
    jit::options o = jit::default_options();
    o.num_threads = 1;
    return o;
}

// BENCH_PROGRAMS_DEBUG=1: print the scripts' debug_string() (plans, guards, fusion groups).
bool debug_output() {
    static const bool on = [] {
        const char* v = std::getenv("BENCH_PROGRAMS_DEBUG");
        return v != nullptr && *v != '\0' && *v != '0';
    }();
    return on;
}

// ------------------------------------------------------------------ 1. CNN (digits-like)

std::shared_ptr<nn::Module> make_cnn() {
    return std::make_shared<nn::Sequential>(
        std::make_shared<nn::Conv2d>(1, 16, 3, 1, 1), std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2),
        std::make_shared<nn::Conv2d>(16, 32, 3, 1, 1), std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2),
        std::make_shared<nn::Flatten>(), std::make_shared<nn::Dropout>(0.25), std::make_shared<nn::Linear>(32 * 2 * 2, 10));
}

// ------------------------------------------------------------------ 2. transformer block / char LM

// nanoGPT's CausalSelfAttention: one linear for q, k, v, heads by view + transpose, the causal
// mask a buffer made with tril, dropout on the attention weights and on the projection.
struct CausalSelfAttention : nn::Module {
    CausalSelfAttention(std::int64_t d, std::int64_t heads, std::int64_t block, double p)
        : Module("CausalSelfAttention"), n_embd(d), n_head(heads) {
        c_attn = register_module("c_attn", std::make_shared<nn::Linear>(d, 3 * d));
        c_proj = register_module("c_proj", std::make_shared<nn::Linear>(d, d));
        attn_dropout = register_module("attn_dropout", std::make_shared<nn::Dropout>(p));
        resid_dropout = register_module("resid_dropout", std::make_shared<nn::Dropout>(p));
        // True above the diagonal: the positions a token must not attend to.
        register_buffer("mask", tril(ones({block, block})).eq(0.0), /*persistent=*/false);
    }
    Tensor forward(const Tensor& x) override {
        const std::int64_t B = x.size(0), T = x.size(1), C = x.size(2), hd = C / n_head;
        const std::vector<Tensor> qkv = c_attn->forward(x).split(n_embd, 2);
        const Tensor q = qkv[0].view({B, T, n_head, hd}).transpose(1, 2);  // [B, H, T, hd]
        const Tensor k = qkv[1].view({B, T, n_head, hd}).transpose(1, 2);
        const Tensor v = qkv[2].view({B, T, n_head, hd}).transpose(1, 2);
        Tensor att = matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(hd)));
        const Tensor mask = get_buffer("mask").narrow(0, 0, T).narrow(1, 0, T);
        att = att.masked_fill(mask, -std::numeric_limits<double>::infinity());
        att = attn_dropout->forward(F::softmax(att, -1));
        const Tensor y = matmul(att, v).transpose(1, 2).contiguous().view({B, T, C});
        return resid_dropout->forward(c_proj->forward(y));
    }
    std::int64_t n_embd, n_head;
    std::shared_ptr<nn::Linear> c_attn, c_proj;
    std::shared_ptr<nn::Dropout> attn_dropout, resid_dropout;
};

struct MLP : nn::Module {
    MLP(std::int64_t d, double p) : Module("MLP") {
        c_fc = register_module("c_fc", std::make_shared<nn::Linear>(d, 4 * d));
        c_proj = register_module("c_proj", std::make_shared<nn::Linear>(4 * d, d));
        dropout = register_module("dropout", std::make_shared<nn::Dropout>(p));
    }
    Tensor forward(const Tensor& x) override { return dropout->forward(c_proj->forward(F::gelu(c_fc->forward(x)))); }
    std::shared_ptr<nn::Linear> c_fc, c_proj;
    std::shared_ptr<nn::Dropout> dropout;
};

// Token and position embeddings, one pre-LN block, the final LayerNorm and the head:
// idx [B, T] (int64) -> logits [B, T, vocab].
struct TinyLM : nn::Module {
    static constexpr std::int64_t vocab = 64, block = 64, n_embd = 128, n_head = 4;
    TinyLM() : Module("TinyLM") {
        wte = register_module("wte", std::make_shared<nn::Embedding>(vocab, n_embd));
        wpe = register_module("wpe", std::make_shared<nn::Embedding>(block, n_embd));
        drop = register_module("drop", std::make_shared<nn::Dropout>(0.1));
        ln_1 = register_module("ln_1", std::make_shared<nn::LayerNorm>(int_list{n_embd}));
        attn = register_module("attn", std::make_shared<CausalSelfAttention>(n_embd, n_head, block, 0.1));
        ln_2 = register_module("ln_2", std::make_shared<nn::LayerNorm>(int_list{n_embd}));
        mlp = register_module("mlp", std::make_shared<MLP>(n_embd, 0.1));
        ln_f = register_module("ln_f", std::make_shared<nn::LayerNorm>(int_list{n_embd}));
        lm_head = register_module("lm_head", std::make_shared<nn::Linear>(n_embd, vocab));
    }
    Tensor forward(const Tensor& idx) override {
        const std::int64_t T = idx.size(1);
        const Tensor pos = arange(0, T, 1, dtype::int64);
        Tensor x = drop->forward(wte->forward(idx) + wpe->forward(pos));
        x = x + attn->forward(ln_1->forward(x));
        x = x + mlp->forward(ln_2->forward(x));
        return lm_head->forward(ln_f->forward(x));
    }
    std::shared_ptr<nn::Embedding> wte, wpe;
    std::shared_ptr<nn::Dropout> drop;
    std::shared_ptr<nn::LayerNorm> ln_1, ln_2, ln_f;
    std::shared_ptr<CausalSelfAttention> attn;
    std::shared_ptr<MLP> mlp;
    std::shared_ptr<nn::Linear> lm_head;
};

// ------------------------------------------------------------------ 3. GRU regressor

// A GRU cell by hand (PyTorch's GRUCell equations and weight layout), unrolled over the
// sequence in a C++ loop, a linear head per step: x [T, B, 1] -> predictions [T, B, 1].
struct GRURegressor : nn::Module {
    GRURegressor(std::int64_t input, std::int64_t hidden) : Module("GRURegressor"), hidden_size(hidden) {
        ih = register_module("ih", std::make_shared<nn::Linear>(input, 3 * hidden));
        hh = register_module("hh", std::make_shared<nn::Linear>(hidden, 3 * hidden));
        head = register_module("head", std::make_shared<nn::Linear>(hidden, 1));
    }
    Tensor forward(const Tensor& x) override {
        const std::int64_t T = x.size(0), B = x.size(1);
        Tensor h = zeros({B, hidden_size});
        std::vector<Tensor> out;
        for (std::int64_t t = 0; t < T; ++t) {
            const std::vector<Tensor> gi = ih->forward(x[t]).chunk(3, 1);
            const std::vector<Tensor> gh = hh->forward(h).chunk(3, 1);
            const Tensor r = sigmoid(gi[0] + gh[0]);
            const Tensor z = sigmoid(gi[1] + gh[1]);
            const Tensor n = tanh(gi[2] + r * gh[2]);
            h = (1.0 - z) * n + z * h;
            out.push_back(head->forward(h));
        }
        return stack(out, 0);
    }
    std::int64_t hidden_size;
    std::shared_ptr<nn::Linear> ih, hh, head;
};

// ------------------------------------------------------------------ 4. VAE

// PyTorch's examples/vae with 64-dim inputs. forward(x) returns the loss (the VAE's target is
// its input): binary_cross_entropy_with_logits of the decoder's logits (the sigmoid inside the
// loss, as BCE(sigmoid(logits), x) computed stably) summed, plus the KL divergence.
struct VAE : nn::Module {
    VAE() : Module("VAE") {
        fc1 = register_module("fc1", std::make_shared<nn::Linear>(64, 128));
        fc21 = register_module("fc21", std::make_shared<nn::Linear>(128, 16));
        fc22 = register_module("fc22", std::make_shared<nn::Linear>(128, 16));
        fc3 = register_module("fc3", std::make_shared<nn::Linear>(16, 128));
        fc4 = register_module("fc4", std::make_shared<nn::Linear>(128, 64));
    }
    Tensor forward(const Tensor& x) override {
        const Tensor h1 = F::relu(fc1->forward(x));
        const Tensor mu = fc21->forward(h1), logvar = fc22->forward(h1);
        const Tensor z = mu + exp(0.5 * logvar) * randn_like(mu);  // reparameterize
        const Tensor logits = fc4->forward(F::relu(fc3->forward(z)));
        const Tensor bce = F::binary_cross_entropy_with_logits(logits, x, {}, F::reduction::sum);
        const Tensor kld = -0.5 * (1.0 + logvar - mu * mu - exp(logvar)).sum();
        return bce + kld;
    }
    std::shared_ptr<nn::Linear> fc1, fc21, fc22, fc3, fc4;
};

// ------------------------------------------------------------------ the programs

// The loss of one batch as a function of graph inputs {x, [target,] parameters...}: the
// module's parameters are passed in (nn::functional_call), so capture::aot can take them as
// inputs and Adam's in-place updates are seen by the next call (as examples/train_mlp.cpp).
struct loss_fn {
    nn::Module* model = nullptr;
    int kind = 0;  // 0: cross_entropy, 1: cross_entropy over [B*T, V], 2: mse_loss, 3: forward is the loss
    std::size_t n_data = 2;
    Tensor operator()(const std::vector<Tensor>& in) const {
        loss_calls.fetch_add(1, std::memory_order_relaxed);
        const std::span<const Tensor> ps(in.begin() + static_cast<std::ptrdiff_t>(n_data), in.end());
        const Tensor out = nn::functional_call(*model, ps, in[0]);
        switch (kind) {
            case 0: return F::cross_entropy(out, in[1]);
            case 1: return F::cross_entropy(out.reshape({-1, out.size(-1)}), in[1].reshape({-1}));
            case 2: return F::mse_loss(out, in[1]);
            default: return out;
        }
    }
};

struct program {
    std::string name;
    std::shared_ptr<nn::Module> model;
    loss_fn loss;
    std::function<std::vector<Tensor>(std::int64_t batch)> data;  // x [, target] for a batch size
    std::int64_t batch = 0;
};

program make_program(const std::string& name) {
    program p;
    p.name = name;
    manual_seed(1);
    if (name == "cnn") {
        p.model = make_cnn();
        p.loss = {p.model.get(), 0, 2};
        p.batch = 64;
        p.data = [](std::int64_t b) {
            return std::vector<Tensor>{rand({b, 1, 8, 8}), randint(0, 10, {b})};
        };
    } else if (name == "transformer") {
        p.model = std::make_shared<TinyLM>();
        p.loss = {p.model.get(), 1, 2};
        p.batch = 8;
        p.data = [](std::int64_t b) {
            return std::vector<Tensor>{randint(0, TinyLM::vocab, {b, TinyLM::block}),
                                       randint(0, TinyLM::vocab, {b, TinyLM::block})};
        };
    } else if (name == "gru" || name == "gru_views") {
        p.model = std::make_shared<GRURegressor>(1, 64);
        p.loss = {p.model.get(), 2, 2};
        p.batch = 32;
        const bool views = name == "gru_views";
        p.data = [views](std::int64_t b) {
            // Sine waves of random phase and frequency, 33 samples: the input is steps 0..31,
            // the target steps 1..32 (the next value). "gru" gives them as two tensors of their
            // own (what a data loader gives); "gru_views" as two overlapping views of the
            // samples, as PyTorch's time_sequence_prediction example slices its data
            // (input = data[:, :-1], target = data[:, 1:]): inputs that share memory.
            const Tensor phase = rand({1, b, 1}) * (2 * std::numbers::pi);
            const Tensor freq = rand({1, b, 1}) * 0.2 + 0.1;
            const Tensor t = arange(0, 33, 1, dtype::float32).reshape({33, 1, 1});
            const Tensor wave = sin(t * freq + phase);
            Tensor x = wave.narrow(0, 0, 32), y = wave.narrow(0, 1, 32);
            if (!views) {
                x = x.clone();
                y = y.clone();
            }
            return std::vector<Tensor>{x, y};
        };
    } else if (name == "vae") {
        p.model = std::make_shared<VAE>();
        p.loss = {p.model.get(), 3, 1};
        p.batch = 128;
        p.data = [](std::int64_t b) { return std::vector<Tensor>{rand({b, 64})}; };
    } else if (name == "mlp") {
        p.model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(64, 128), std::make_shared<nn::ReLU>(),
                                                   std::make_shared<nn::Linear>(128, 10));
        p.loss = {p.model.get(), 0, 2};
        p.batch = 32;
        p.data = [](std::int64_t b) { return std::vector<Tensor>{randn({b, 64}), randint(0, 10, {b})}; };
    }
    return p;
}

const std::vector<std::string> program_names{"cnn", "transformer", "gru", "vae", "gru_views"};

enum class path { eager, script, aot };
const char* path_name(path p) { return p == path::eager ? "eager" : p == path::script ? "script" : "aot"; }

// One program's training state for one path: model, Adam, inputs and the compiled loss.
struct trainer {
    program prog;
    std::vector<Tensor> params;
    optim::Adam opt;
    std::vector<Tensor> in;
    path how;
    std::optional<jit::script_function<loss_fn>> script;
    std::optional<capture::aot_function> aot;

    trainer(const std::string& name, path p, jit::options o = bench_options())
        : prog(make_program(name)), params(prog.model->parameters()), opt(params, 1e-3), how(p) {
        in = prog.data(prog.batch);
        in.insert(in.end(), params.begin(), params.end());
        if (how == path::script) script.emplace(prog.loss, std::move(o));
        if (how == path::aot) aot = capture::aot(prog.loss, in);
    }
    Tensor loss() {
        switch (how) {
            case path::eager: return prog.loss(in);
            case path::script: return first_tensor((*script)(in));
            default: return (*aot)(in).at(0);
        }
    }
    // One training step: zero_grad, forward + loss, backward, Adam.
    Tensor step() {
        opt.zero_grad();
        Tensor l = loss();
        l.backward();
        opt.step();
        return l;
    }
};

// ------------------------------------------------------------------ correctness, once per run

struct verdict {
    bool supported = true;
    std::string error;
    bool loss_ok = false, grads_ok = false, bitwise = false;
    double loss = 0, eager_loss = 0, max_grad_rel = 0;
    std::string plan;  // script: the plan kind
};
std::map<std::string, std::map<std::string, verdict>> verdicts;    // program -> path
std::map<std::string, std::map<std::string, std::string>> skipped;  // program -> path -> error in the timed run

// Loss and gradients of one path after manual_seed(seed), the parameters left as they are.
std::vector<Tensor> loss_and_grads(trainer& t, std::uint64_t seed) {
    t.opt.zero_grad();
    manual_seed(seed);
    const Tensor l = t.loss();
    l.backward();
    std::vector<Tensor> r{l.detach().clone()};
    for (const Tensor& p : t.params) r.push_back(p.grad().defined() ? p.grad().clone() : zeros_like(p));
    return r;
}

void check_program(const std::string& name) {
    std::printf("[check] %s\n", name.c_str());
    trainer eager(name, path::eager);
    const std::vector<Tensor> ref = loss_and_grads(eager, 1234);
    for (path p : {path::script, path::aot}) {
        verdict v;
        try {
            trainer t(name, p);  // the same seed: the same parameters and data
            for (int i = 0; i < 3; ++i) (void)loss_and_grads(t, 1000 + static_cast<std::uint64_t>(i));  // capture, profile, compile
            const std::vector<Tensor> got = loss_and_grads(t, 1234);
            v.eager_loss = ref[0].item<double>();
            v.loss = got[0].item<double>();
            v.loss_ok = allclose(got[0], ref[0], 1e-5, 0.0);
            v.bitwise = v.loss == v.eager_loss;
            v.grads_ok = true;
            for (std::size_t i = 1; i < ref.size(); ++i) {
                const double scale = std::max(ref[i].abs().max().item<double>(), 1e-30);
                v.max_grad_rel = std::max(v.max_grad_rel, (got[i] - ref[i]).abs().max().item<double>() / scale);
                v.grads_ok = v.grads_ok && allclose(got[i], ref[i], 1e-4, 1e-6);
            }
            if (p == path::script) {
                if (debug_output()) std::printf("%s\n", t.script->debug_string().c_str());
                const jit::debug_state st = t.script->debug_state();
                const auto& l0 = st.levels.at(0);
                if (l0.plan) {
                    v.plan = std::string(jit::to_string(l0.plan->kind)) + " plan, " +
                             std::to_string(l0.plan->fusion_groups) + " fusion groups";
                    if (!l0.plan->reason.empty()) v.plan += " (" + shorten(l0.plan->reason, 240) + ")";
                } else {
                    v.plan = "no optimized plan";
                }
            }
        } catch (const graft::error& e) {
            v.supported = false;
            v.error = e.what();
        }
        if (!v.supported)
            std::printf("  %-6s UNSUPPORTED: %s\n", path_name(p), v.error.c_str());
        else
            std::printf("  %-6s loss %.9g vs eager %.9g: %s%s; gradients %s (largest difference %.2e of the largest "
                        "gradient)%s%s\n",
                        path_name(p), v.loss, v.eager_loss, v.loss_ok ? "allclose (rtol 1e-5) OK" : "MISMATCH",
                        v.bitwise ? ", bitwise equal" : "", v.grads_ok ? "allclose OK" : "MISMATCH", v.max_grad_rel,
                        v.plan.empty() ? "" : "; ", v.plan.c_str());
        verdicts[name][path_name(p)] = v;
    }
}

// ------------------------------------------------------------------ DYNAMIC runs

struct dynamic_result {
    std::string name;
    std::vector<std::int64_t> batches;
    std::size_t compilations = 0;
    std::uint64_t guard_failures = 0, unoptimized = 0, first_capture_calls = 0, profiled = 0;
    std::uint64_t optimized = 0;  // calls that ran an optimized plan (plan hits, every level)
    std::uint64_t traces = 0;  // calls of f made by the script (captures and probes)
    std::size_t captures = 0;  // jit::debug_state::captures
    // The second round over the same batch sizes: calls that hit the first capture's plan, and
    // compilations and captures it made (one specialization serving every size: n, 0, 0).
    std::uint64_t second_round_hits = 0;
    std::size_t second_round_compilations = 0, second_round_captures = 0;
    bool losses_ok = true;
    std::string error;
    std::string levels;
};
std::vector<dynamic_result> dynamic_results;

void run_dynamic(const std::string& name, const std::vector<std::int64_t>& batches) {
    dynamic_result r;
    r.name = name;
    r.batches = batches;
    std::printf("[dynamic] %s, strategy [(DYNAMIC, 10)], batch sizes", name.c_str());
    for (auto b : batches) std::printf(" %lld", static_cast<long long>(b));
    std::printf("\n");
    try {
        jit::options o = bench_options();
        o.fusion = {{jit::fusion_behavior::dynamic_, 10}};
        program prog = make_program(name);
        std::vector<Tensor> params = prog.model->parameters();
        optim::Adam opt(params, 1e-3);
        jit::script_function<loss_fn> fn(prog.loss, o);
        std::uint64_t seed = 500;
        for (std::int64_t b : batches) {
            std::vector<Tensor> in = prog.data(b);
            in.insert(in.end(), params.begin(), params.end());
            manual_seed(++seed);
            const Tensor eager_loss = prog.loss(in).detach();
            opt.zero_grad();
            manual_seed(seed);
            const std::uint64_t before = loss_calls.load();
            const Tensor l = first_tensor(fn(in));
            const std::uint64_t traced = loss_calls.load() - before;
            r.traces += traced;
            const bool ok = allclose(l.detach(), eager_loss, 1e-5, 0.0);
            r.losses_ok = r.losses_ok && ok;
            l.backward();
            opt.step();
            std::printf("  batch %3lld: loss %.7g (eager %.7g%s)%s\n", static_cast<long long>(b), l.item<double>(),
                        eager_loss.item<double>(), ok ? "" : ", MISMATCH",
                        traced > 0 ? (" <- f traced " + std::to_string(traced) + " times: a capture").c_str() : "");
        }
        // Second round over the same batch sizes: one specialization must serve them all (no
        // capture, no compilation; each call a hit of the first capture's plan).
        {
            const jit::debug_state before = fn.debug_state();
            const std::uint64_t hits_before = before.levels.empty() || !before.levels[0].plan ? 0 : before.levels[0].plan->hits;
            for (std::int64_t b : batches) {
                std::vector<Tensor> in = prog.data(b);
                in.insert(in.end(), params.begin(), params.end());
                opt.zero_grad();
                first_tensor(fn(in)).backward();
                opt.step();
            }
            const jit::debug_state after = fn.debug_state();
            r.second_round_hits =
                (after.levels.empty() || !after.levels[0].plan ? 0 : after.levels[0].plan->hits) - hits_before;
            r.second_round_compilations = after.compilations - before.compilations;
            r.second_round_captures = after.captures - before.captures;
        }
        if (debug_output()) std::printf("%s\n", fn.debug_string().c_str());
        const jit::debug_state st = fn.debug_state();
        r.captures = st.captures;
        r.unoptimized += st.other_unoptimized_runs;
        r.compilations = st.compilations;
        r.guard_failures = st.total_guard_failures();
        for (std::size_t i = 0; i < st.levels.size(); ++i) {
            const auto& l = st.levels[i];
            r.unoptimized += l.unoptimized_runs;
            r.profiled += l.profiled_runs;
            if (l.plan) r.optimized += l.plan->hits;
            if (i == 0) r.first_capture_calls = l.profiled_runs + l.unoptimized_runs + (l.plan ? l.plan->hits + l.plan->guard_failures : 0);
            if (!l.plan && l.profiled_runs == 0 && l.unoptimized_runs == 0) continue;
            r.levels += "    level " + std::to_string(i) + ": " + std::to_string(l.profiled_runs) + " profiled, " +
                        std::to_string(l.unoptimized_runs) + " unoptimized";
            if (l.plan) {
                r.levels += std::string(", ") + jit::to_string(l.plan->behavior) + " " + jit::to_string(l.plan->kind) +
                            " plan: " + std::to_string(l.plan->hits) + " hits, " +
                            std::to_string(l.plan->guard_failures) + " guard failures" +
                            (l.plan->symbolic.empty() ? "" : "; " + shorten(l.plan->symbolic, 200));
                if (!l.plan->reason.empty()) r.levels += "; reason: " + shorten(l.plan->reason, 200);
            }
            r.levels += "\n";
        }
    } catch (const graft::error& e) {
        r.error = e.what();
    }
    if (!r.error.empty())
        std::printf("  UNSUPPORTED: %s\n", r.error.c_str());
    else
        std::printf("  compilations %zu, guard failures %llu, unoptimized runs %llu, profiled runs %llu, calls on an "
                    "optimized plan %llu; calls through the first capture %llu (of %zu per round, two rounds); f traced %llu times (3 or more "
                    "per capture); losses vs eager %s; captures %zu; second round: %llu of %zu calls hit one plan, "
                    "%zu compilations, %zu captures\n%s",
                    r.compilations, static_cast<unsigned long long>(r.guard_failures),
                    static_cast<unsigned long long>(r.unoptimized), static_cast<unsigned long long>(r.profiled),
                    static_cast<unsigned long long>(r.optimized),
                    static_cast<unsigned long long>(r.first_capture_calls), batches.size(),
                    static_cast<unsigned long long>(r.traces), r.losses_ok ? "allclose OK" : "MISMATCH", r.captures,
                    static_cast<unsigned long long>(r.second_round_hits), batches.size(), r.second_round_compilations,
                    r.second_round_captures, r.levels.c_str());
    dynamic_results.push_back(std::move(r));
}

// ------------------------------------------------------------------ the timed steps

// The timed loop's step, a function of its own so that a profiler can count it alone:
//   BENCH_PROGRAMS_SKIP_CHECKS=1 valgrind --tool=callgrind --collect-atstart=no
//     --toggle-collect='*timed_step*' bench_programs --benchmark_filter='^cnn/script$' --benchmark_min_time=1
// (instructions per step = the collected total / the iterations Google Benchmark reports).
[[gnu::noinline]] Tensor timed_step(trainer& t) { return t.step(); }

void bm_step(benchmark::State& s, const std::string& name, path p) {
    std::optional<trainer> t;
    try {
        t.emplace(name, p);
        for (int i = 0; i < 3; ++i) (void)t->step();  // capture, profile, compile
    } catch (const graft::error& e) {
        skipped[name][path_name(p)] = e.what();
        s.SkipWithError(e.what());
        return;
    }
    for (auto _ : s) {
        try {
            benchmark::DoNotOptimize(timed_step(*t));
        } catch (const graft::error& e) {
            skipped[name][path_name(p)] = e.what();
            s.SkipWithError(e.what());
            break;
        }
    }
    if (p == path::script) {
        const jit::debug_state st = t->script->debug_state();
        const auto& l0 = st.levels.at(0);
        s.counters["plan_hits"] = static_cast<double>(l0.plan ? l0.plan->hits : 0);
        s.counters["compilations"] = static_cast<double>(st.compilations);
    }
}

// ------------------------------------------------------------------ summary

class summary_reporter : public benchmark::ConsoleReporter {
public:
    summary_reporter() : ConsoleReporter(isatty(STDOUT_FILENO) ? OO_ColorTabular : OO_Tabular) {}
    void ReportRuns(const std::vector<Run>& runs) override {
        for (const Run& r : runs) {
            if (r.error_occurred) continue;
            const std::string key = r.run_name.function_name;
            const bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
            if (r.run_type == Run::RT_Aggregate && !median) continue;
            // Thread CPU time, in ms whatever the unit.
            if (median || !time_.count(key))
                time_[key] = r.GetAdjustedCPUTime() * 1e3 / benchmark::GetTimeUnitMultiplier(r.time_unit);
        }
        ConsoleReporter::ReportRuns(runs);
    }
    void Finalize() override {
        ConsoleReporter::Finalize();
        const auto t = [&](const std::string& k) { return time_.count(k) ? time_.at(k) : std::nan(""); };
        std::printf("\nsummary: ms per training step (thread CPU time; medians when repeated); floors: script >= 1.3x "
                    "eager, aot never slower than eager\n");
        std::printf("  %-12s %9s %9s %9s %13s %11s  %s\n", "program", "eager", "script", "aot", "eager/script",
                    "eager/aot", "correctness (script, aot vs eager)");
        for (const std::string& n : program_names) {
            const double e = t(n + "/eager"), sc = t(n + "/script"), a = t(n + "/aot");
            const auto v = [&](const char* p) -> std::string {
                if (!verdicts.count(n) || !verdicts[n].count(p)) return "not checked";
                const verdict& x = verdicts[n][p];
                if (!x.supported) return "unsupported";
                return std::string(x.loss_ok ? "loss OK" : "loss MISMATCH") + (x.bitwise ? " (bitwise)" : "") +
                       (x.grads_ok ? ", grads OK" : ", grads MISMATCH");
            };
            std::printf("  %-12s %9.3f %9.3f %9.3f %12.2fx%s %10.2fx%s  %s; %s\n", n.c_str(), e, sc, a, e / sc,
                        e / sc >= 1.3 ? " " : "*", e / a, e / a >= 1.0 ? " " : "*", v("script").c_str(), v("aot").c_str());
            for (const auto& [p, msg] : skipped[n]) std::printf("    %s unsupported: %s\n", p.c_str(), msg.c_str());
            if (verdicts.count(n) && verdicts[n].count("script") && !verdicts[n]["script"].plan.empty())
                std::printf("    script: %s\n", verdicts[n]["script"].plan.c_str());
        }
        std::printf("  (* = floor missed)\n");
        for (const dynamic_result& r : dynamic_results) {
            if (!r.error.empty()) {
                std::printf("  DYNAMIC %s: unsupported: %s\n", r.name.c_str(), r.error.c_str());
                continue;
            }
            std::string sizes;
            for (auto b : r.batches) {
                if (!sizes.empty()) sizes += ',';
                sizes += std::to_string(b);
            }
            const bool one_plan = r.second_round_hits == r.batches.size() && r.second_round_compilations == 0 &&
                                  r.second_round_captures == 0;
            std::printf("  DYNAMIC %-11s batches %-16s: %zu compilations (floor <= 2), %llu guard failures, %llu "
                        "unoptimized runs (floor 0), %zu captures (f traced %llu times), %llu of %zu calls (two "
                        "rounds) on the first capture's optimized plan; second round: %llu of %zu on one plan: floor %s\n",
                        r.name.c_str(), sizes.c_str(), r.compilations, static_cast<unsigned long long>(r.guard_failures),
                        static_cast<unsigned long long>(r.unoptimized), r.captures,
                        static_cast<unsigned long long>(r.traces), static_cast<unsigned long long>(r.optimized),
                        2 * r.batches.size(), static_cast<unsigned long long>(r.second_round_hits), r.batches.size(),
                        r.compilations <= 2 && r.unoptimized == 0 && one_plan ? "met" : "MISSED");
        }
    }

private:
    std::map<std::string, double> time_;
};

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::AddCustomContext("graft_simd_target", kernels::target_name(kernels::current_target()));

    // BENCH_PROGRAMS_SKIP_CHECKS=1: the timed steps only (for a profiler).
    const char* skip = std::getenv("BENCH_PROGRAMS_SKIP_CHECKS");
    if (skip == nullptr || *skip == '\0' || *skip == '0') {
    for (const std::string& n : program_names) check_program(n);
    const std::vector<std::int64_t> sizes{8, 16, 32, 5, 64, 128};
    run_dynamic("mlp", sizes);
    run_dynamic("cnn", sizes);
    run_dynamic("transformer", sizes);
    // The same two with batch sizes equal to no size of the model (8 is the images' height and
    // width, 16 and 32 channel counts and the head size, 64 the sequence length, 128 the width):
    // sizes that are equal at a capture are kept equal when it is probed at other sizes.
    const std::vector<std::int64_t> other_sizes{6, 12, 24, 5, 48, 96};
    run_dynamic("cnn", other_sizes);
    run_dynamic("transformer", other_sizes);
    }
    std::fflush(stdout);

    for (const std::string& n : program_names)
        for (path p : {path::eager, path::script, path::aot})
            benchmark::RegisterBenchmark((n + "/" + path_name(p)).c_str(), bm_step, n, p)->Unit(benchmark::kMillisecond);
    summary_reporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();
    return 0;
}
