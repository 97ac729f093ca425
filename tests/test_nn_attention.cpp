// graft's attention layers: functional::scaled_dot_product_attention, nn::MultiheadAttention,
// TransformerEncoderLayer / TransformerEncoder, TransformerDecoderLayer / TransformerDecoder.
// Checked against PyTorch 1.13's results (tests/fixtures/attention.txt, written by
// tests/fixtures/gen_attention.py: outputs, attention weights and the gradients of every input
// and parameter), hand-computed values, finite differences, and across eager, nn::script and
// nn::aot; bad input is a clear error.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
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

using fx::close_to;
using fx::formula;

struct attention_case {
    std::string name;
    std::vector<std::string> input_order;  // tensor inputs, in the order their formula counts them
    std::map<std::string, Tensor> inputs;  // tensor inputs (require grad) and masks
    std::map<std::string, Tensor> results;
};

std::vector<attention_case> read_fixture() {
    std::ifstream file(std::string(GRAFT_SOURCE_DIR) + "/tests/fixtures/attention.txt");
    REQUIRE(file.good());
    std::vector<attention_case> cases;
    std::string line;
    const auto read_sizes = [](std::istringstream& in) {
        std::int64_t rank = 0;
        in >> rank;
        int_list sizes(static_cast<std::size_t>(rank));
        for (auto& s : sizes) in >> s;
        return sizes;
    };
    while (std::getline(file, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream in(line);
        std::string tag, label;
        in >> tag;
        if (tag == "case") {
            cases.emplace_back();
            in >> cases.back().name;
            continue;
        }
        if (tag == "end") continue;
        in >> label;
        attention_case& c = cases.back();
        if (tag == "in") {
            const int_list sizes = read_sizes(in);
            const auto j = static_cast<double>(c.input_order.size());
            c.inputs[label] = formula(sizes, [j](std::int64_t i) { return std::sin(0.37 * i + 0.9 * j + 0.2); });
            c.input_order.push_back(label);
        } else if (tag == "mask") {
            std::string kind;
            in >> kind;
            const Tensor m = fx::read_tensor(in);
            c.inputs[label] = kind == "b" ? m.ne(0.0) : m;
        } else if (tag == "t") {
            c.results[label] = fx::read_tensor(in);
        }
    }
    REQUIRE(cases.size() == 17);
    return cases;
}

/// The case's module (float64, parameters by the fixture's formula) and a function computing
/// its results from the inputs.
struct built {
    std::shared_ptr<nn::Module> module;  // null for the functional cases
    std::function<std::vector<Tensor>(const std::map<std::string, Tensor>&)> run;
};

template <class M>
std::shared_ptr<M> with_formula_parameters(std::shared_ptr<M> m) {
    const autograd::no_grad guard;
    double k = 0;
    for (Tensor p : m->parameters()) {
        p.copy_(formula(p.sizes(), [k](std::int64_t i) { return 0.3 * std::sin(0.7 * i + 1.3 * k + 0.1); }));
        ++k;
    }
    return m;
}

built build(const std::string& name) {
    using In = std::map<std::string, Tensor>;
    using V = std::vector<Tensor>;
    const auto f64 = dtype::float64;
    const auto at = [](const In& in, const char* k) { return in.count(k) ? in.at(k) : Tensor{}; };
    if (name.rfind("sdpa", 0) == 0) {
        const bool causal = name.find("causal") != std::string::npos;
        const std::optional<double> scale = name.find("scale") != std::string::npos ? std::optional(0.3) : std::nullopt;
        return {nullptr, [=](const In& in) {
                    return V{F::scaled_dot_product_attention(in.at("q"), in.at("k"), in.at("v"), at(in, "mask"), 0.0,
                                                             causal, scale)};
                }};
    }
    if (name.rfind("mha", 0) == 0) {
        const bool batch_first = name.find("batch_first") != std::string::npos;
        const bool kv = name.find("kdim") != std::string::npos;
        const std::int64_t heads = name.find("bool_attn_mask") != std::string::npos ? 4 : 2;
        auto m = with_formula_parameters(std::make_shared<nn::MultiheadAttention>(
            8, heads, 0.0, !kv, false, false, kv ? std::optional<std::int64_t>(5) : std::nullopt,
            kv ? std::optional<std::int64_t>(3) : std::nullopt, batch_first, f64));
        const bool need = name.find("no_weights") == std::string::npos;
        const bool average = name.find("per_head") == std::string::npos;
        return {m, [=](const In& in) {
                    const Tensor q = in.at("query");
                    const Tensor k = in.count("key") ? in.at("key") : q, v = in.count("value") ? in.at("value") : q;
                    auto [o, w] = (*m)(q, k, v, at(in, "key_padding_mask"), need, at(in, "attn_mask"), average);
                    return need ? V{o, w} : V{o};
                }};
    }
    const nn::transformer_layer_options plain{.dim_feedforward = 6, .dropout = 0.0, .type = f64};
    const nn::transformer_layer_options variant{.dim_feedforward = 6, .dropout = 0.0, .activation = "gelu",
                                                .layer_norm_eps = 1e-3, .batch_first = true, .norm_first = true,
                                                .type = f64};
    if (name == "encoder_layer") {
        auto m = with_formula_parameters(std::make_shared<nn::TransformerEncoderLayer>(8, 2, plain));
        return {m, [=](const In& in) { return V{(*m)(in.at("src"), in.at("src_mask"), in.at("src_key_padding_mask"))}; }};
    }
    if (name == "encoder_layer_gelu_norm_first_batch_first") {
        auto m = with_formula_parameters(std::make_shared<nn::TransformerEncoderLayer>(8, 2, variant));
        return {m, [=](const In& in) { return V{(*m)(in.at("src"))}; }};
    }
    if (name == "encoder_two_layers_norm") {
        auto m = with_formula_parameters(std::make_shared<nn::TransformerEncoder>(
            nn::TransformerEncoderLayer(8, 2, plain), 2, std::make_shared<nn::LayerNorm>(8, 1e-5, true, true, f64)));
        return {m, [=](const In& in) { return V{(*m)(in.at("src"), in.at("mask"))}; }};
    }
    if (name == "decoder_layer") {
        auto m = with_formula_parameters(std::make_shared<nn::TransformerDecoderLayer>(8, 2, plain));
        return {m, [=](const In& in) {
                    return V{(*m)(in.at("tgt"), in.at("memory"), in.at("tgt_mask"), {}, {},
                                  in.at("memory_key_padding_mask"))};
                }};
    }
    if (name == "decoder_two_layers_norm_first_batch_first") {
        nn::transformer_layer_options o = variant;
        o.layer_norm_eps = 1e-5;
        auto m = with_formula_parameters(std::make_shared<nn::TransformerDecoder>(
            nn::TransformerDecoderLayer(8, 2, o), 2, std::make_shared<nn::LayerNorm>(8, 1e-5, true, true, f64)));
        return {m, [=](const In& in) { return V{(*m)(in.at("tgt"), in.at("memory"))}; }};
    }
    FAIL("no such case " << name);
    return {};
}

/// Every result of a case by the fixture's labels: out<r>, g_<input>, g.<parameter>.
std::map<std::string, Tensor> run_case(const attention_case& c, const built& b, bool through_script) {
    std::map<std::string, Tensor> in;
    for (const auto& [k, v] : c.inputs) in[k] = is_floating_point(v.type()) ? v.clone() : v;
    for (const auto& k : c.input_order) in[k].requires_grad_(true);
    std::vector<Tensor> outs;
    if (through_script) {
        // The case's tensors as the script's inputs.
        std::vector<std::string> keys;
        std::vector<Tensor> args;
        for (const auto& [k, v] : in) {
            keys.push_back(k);
            args.push_back(v);
        }
        // A lambda over the module: its parameters are lifted to graph inputs.
        auto s = jit::script([&](const std::vector<Tensor>& xs) {
            std::map<std::string, Tensor> named;
            for (std::size_t i = 0; i < keys.size(); ++i) named[keys[i]] = xs[i];
            return b.run(named);
        });
        for (int call = 0; call < 3; ++call) outs = s(args);  // profiled, then optimized plans
    } else {
        outs = b.run(in);
    }
    Tensor loss;
    for (std::size_t r = 0; r < outs.size(); ++r) {
        const auto rr = static_cast<double>(r);
        const Tensor g = formula(outs[r].sizes(), [rr](std::int64_t i) { return std::cos(0.23 * i + 0.5 * rr); });
        const Tensor term = (outs[r] * g).sum();
        loss = loss.defined() ? loss + term : term;
    }
    if (b.module) b.module->zero_grad();
    loss.backward();
    std::map<std::string, Tensor> r;
    for (std::size_t i = 0; i < outs.size(); ++i) r["out" + std::to_string(i)] = outs[i].detach();
    for (const auto& k : c.input_order) r["g_" + k] = in.at(k).grad();
    if (b.module)
        for (const auto& [k, p] : b.module->named_parameters()) r["g." + k] = p.grad();
    return r;
}

}  // namespace

TEST_CASE("attention layers: results and gradients equal PyTorch 1.13's", "[nn][attention]") {
    for (const attention_case& c : read_fixture()) {
        INFO(c.name);
        const built b = build(c.name);
        const auto r = run_case(c, b, false);
        REQUIRE(r.size() == c.results.size());
        for (const auto& [label, expected] : c.results) {
            INFO(label);
            REQUIRE(r.count(label) == 1);
            CHECK(close_to(r.at(label), expected, 1e-12));
        }
    }
}

TEST_CASE("attention layers: jit::script gives eager's results and gradients", "[nn][attention][jit]") {
    for (const attention_case& c : read_fixture()) {
        INFO(c.name);
        const auto eager = run_case(c, build(c.name), false);
        const auto scripted = run_case(c, build(c.name), true);
        for (const auto& [label, expected] : eager) {
            INFO(label);
            // Outputs bitwise; gradients through the compiled backward may sum in another order.
            if (label.rfind("out", 0) == 0) CHECK(equal(scripted.at(label), expected));
            else CHECK(close_to(scripted.at(label), expected, 1e-13));
        }
    }
}

TEST_CASE("scaled_dot_product_attention: hand-computed values, masks, causal, dropout", "[nn][attention]") {
    // One query over two keys: scores q.k / sqrt(2) = {1, 0} -> softmax {e, 1} / (e + 1).
    const Tensor q = from_vector(std::vector<double>{std::sqrt(2.0), 0}).reshape({1, 2});
    const Tensor k = from_vector(std::vector<double>{1, 0, 0, 1}).reshape({2, 2});
    const Tensor v = from_vector(std::vector<double>{10, 20}).reshape({2, 1});
    const double e = std::exp(1.0);
    CHECK(F::scaled_dot_product_attention(q, k, v).item<double>() == Approx((10 * e + 20) / (e + 1)).epsilon(1e-15));
    // A bool mask: false keys take no part.
    const Tensor only_second = from_vector(std::vector<bool>{false, true}).reshape({1, 2});
    CHECK(F::scaled_dot_product_attention(q, k, v, only_second).item<double>() == 20.0);
    // A float mask is added: -1 on the first key's score cancels it.
    const Tensor minus = from_vector(std::vector<double>{-1, 0}).reshape({1, 2});
    CHECK(F::scaled_dot_product_attention(q, k, v, minus).item<double>() == Approx(15.0).epsilon(1e-15));
    // scale.
    CHECK(F::scaled_dot_product_attention(q, k, v, {}, 0.0, false, 0.0).item<double>() == Approx(15.0).epsilon(1e-15));
    // Causal: the first query sees the first key only.
    const Tensor qq = ones({2, 2}, dtype::float64);
    const Tensor c = F::scaled_dot_product_attention(qq, k, v, {}, 0.0, true);
    CHECK(c.to_vector<double>()[0] == 10.0);
    // A query whose keys are all masked gets NaN (PyTorch's math path).
    const Tensor none = from_vector(std::vector<bool>{false, false}).reshape({1, 2});
    CHECK(std::isnan(F::scaled_dot_product_attention(q, k, v, none).item<double>()));
    // Dropout: weights zeroed or scaled by 1 / (1 - p); with p near 1 most outputs are 0.
    manual_seed(5);
    const Tensor big_q = randn({64, 4}, dtype::float64), big_k = randn({8, 4}, dtype::float64);
    const Tensor ones_v = ones({8, 1}, dtype::float64);
    const Tensor d = F::scaled_dot_product_attention(big_q, big_k, ones_v, {}, 0.5);
    // Each output is sum(w * mask) / 0.5 with sum(w) = 1: its mean over rows is near 1.
    CHECK(d.mean().item<double>() == Approx(1.0).margin(0.15));
    CHECK(!allclose(d, ones({64, 1}, dtype::float64)));
}

TEST_CASE("attention: first and second derivatives against finite differences", "[nn][attention][gradcheck]") {
    using L = autograd::tensor_list;
    const Tensor q = gt::leaf({2, 3, 4}, 21), k = gt::leaf({2, 5, 4}, 22), v = gt::leaf({2, 5, 3}, 23);
    const Tensor fm = gt::leaf({3, 5}, 24).detach();
    gt::check_grads([&](const L& in) { return L{F::scaled_dot_product_attention(in[0], in[1], in[2], fm)}; }, {q, k, v});
    gt::check_grads([](const L& in) { return L{F::scaled_dot_product_attention(in[0], in[1], in[1], {}, 0.0, true)}; },
                    {gt::leaf({2, 4, 4}, 25), k});
    auto mha = std::make_shared<nn::MultiheadAttention>(4, 2, 0.0, true, false, false, std::nullopt, std::nullopt,
                                                        false, dtype::float64);
    const auto params = mha->parameters();
    gt::check_grads(
        [&](const L& in) {
            return L{nn::functional_call(*mha, std::span<const Tensor>(in).subspan(1), in[0])};
        },
        [&] {
            L in{gt::leaf({3, 2, 4}, 26)};
            for (const Tensor& p : params) in.push_back(p.detach().clone().requires_grad_());
            return in;
        }());
}

TEST_CASE("MultiheadAttention and transformer layers: parameters, state_dict keys, initialization, modules",
          "[nn][attention]") {
    nn::MultiheadAttention mha(8, 2);
    std::vector<std::string> keys;
    for (const auto& [k, v] : mha.state_dict()) keys.push_back(k);
    CHECK(keys == std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"});
    CHECK(mha.in_proj_bias.abs().sum().item<double>() == 0.0);  // zeros, as PyTorch
    CHECK(mha.out_proj->bias.abs().sum().item<double>() == 0.0);
    // xavier_uniform_ on [24, 8]: bound sqrt(6 / (8 + 24)).
    CHECK(mha.in_proj_weight.abs().amax().item<double>() <= std::sqrt(6.0 / 32.0));
    nn::MultiheadAttention separate(8, 2, 0.0, true, false, false, 5, 3);
    keys.clear();
    for (const auto& [k, v] : separate.state_dict()) keys.push_back(k);
    CHECK(keys == std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias",
                                           "out_proj.weight", "out_proj.bias"});
    CHECK(separate.k_proj_weight.sizes() == int_list{8, 5});

    nn::TransformerEncoderLayer layer(8, 2, {.dim_feedforward = 16});
    keys.clear();
    for (const auto& [k, v] : layer.state_dict()) keys.push_back(k);
    CHECK(keys == std::vector<std::string>{"self_attn.in_proj_weight", "self_attn.in_proj_bias",
                                           "self_attn.out_proj.weight", "self_attn.out_proj.bias", "linear1.weight",
                                           "linear1.bias", "linear2.weight", "linear2.bias", "norm1.weight",
                                           "norm1.bias", "norm2.weight", "norm2.bias"});
    // The stack's layers start as copies of the given layer (PyTorch deep-copies it).
    nn::TransformerEncoder enc(layer, 3);
    CHECK(enc.state_dict().size() == 3 * 12);
    CHECK(equal(enc.layers->at<nn::TransformerEncoderLayer>(2)->linear1->weight, layer.linear1->weight));
    CHECK(!enc.layers->at<nn::TransformerEncoderLayer>(2)->linear1->weight.is_same(layer.linear1->weight));
    // Dropout layers follow train() / eval().
    enc.eval();
    CHECK(!enc.layers->at<nn::TransformerEncoderLayer>(0)->dropout->is_training());
    // forward(x) is self-attention / the layer without masks, so the layers sit in a Sequential.
    manual_seed(2);
    const Tensor x = randn({4, 2, 8});
    CHECK(equal(enc.forward(x), enc(x, Tensor{})));
    CHECK(equal(mha.forward(x), mha(x, x, x, {}, false).first));
    // A float key_padding_mask and a float attn_mask add up (PyTorch 2; torch 1.13 dropped the
    // former in this combination): the same as one 3D mask holding their sum.
    const Tensor am = randn({4, 4}), kpm = randn({2, 4});
    const Tensor merged = (am.reshape({1, 1, 4, 4}) + kpm.reshape({2, 1, 1, 4})).expand({2, 2, 4, 4}).reshape({4, 4, 4});
    CHECK(allclose(mha(x, x, x, kpm, true, am).first, mha(x, x, x, {}, true, merged).first, 1e-6, 1e-6));
    // The causal mask.
    const Tensor m = nn::generate_square_subsequent_mask(3);
    const auto mv = m.to_vector<float>();
    CHECK(mv[0] == 0.0f);
    CHECK(mv[1] == -std::numeric_limits<float>::infinity());
    CHECK(mv[3] == 0.0f);
    CHECK(mv[5] == -std::numeric_limits<float>::infinity());
}

TEST_CASE("attention layers under nn::script and nn::aot: eager's results", "[nn][attention][jit][capture]") {
    manual_seed(9);
    auto enc = std::make_shared<nn::TransformerEncoder>(
        nn::TransformerEncoderLayer(8, 2, {.dim_feedforward = 16, .dropout = 0.0, .batch_first = true}), 2);
    const Tensor x = randn({3, 5, 8});
    const Tensor eager = (*enc)(x);
    auto s = nn::script(enc);
    for (int i = 0; i < 3; ++i) CHECK(equal(s(x), eager));
    auto a = nn::aot(enc, x);
    CHECK(allclose(a(x), eager, 1e-6, 1e-6));
    // With a mask through nn::script(model, fn).
    const Tensor mask = nn::generate_square_subsequent_mask(5);
    auto masked = nn::script(enc, [](nn::TransformerEncoder& m, const Tensor& src, const Tensor& msk) {
        return m(src, msk);
    });
    for (int i = 0; i < 3; ++i) CHECK(equal(masked(x, mask), (*enc)(x, mask)));
    // Dropout in training draws the same masks as eager after the same seed.
    auto drop = std::make_shared<nn::TransformerEncoderLayer>(8, 2, nn::transformer_layer_options{.dim_feedforward = 16});
    auto ds = nn::script(drop);
    manual_seed(4);
    const Tensor e1 = (*drop)(x);
    manual_seed(4);
    const Tensor s1 = ds(x);
    CHECK(equal(e1, s1));
}

TEST_CASE("attention layers: bad input is a clear error", "[nn][attention][errors]") {
    CHECK_THROWS_WITH(nn::MultiheadAttention(8, 3), Catch::Contains("divisible by num_heads"));
    CHECK_THROWS_WITH(nn::MultiheadAttention(8, 2, 0.0, true, true), Catch::Contains("not implemented"));
    CHECK_THROWS_WITH(nn::TransformerEncoderLayer(8, 2, {.activation = "tanh"}), Catch::Contains("relu/gelu"));
    nn::MultiheadAttention mha(8, 2);
    const Tensor x = randn({4, 2, 8});
    CHECK_THROWS_WITH(mha(randn({4, 2, 7}), x, x), Catch::Contains("embedding dimension of 8"));
    CHECK_THROWS_WITH(mha(x, randn({5, 3, 8}), randn({5, 3, 8})), Catch::Contains("batch"));
    CHECK_THROWS_WITH(mha(x, x, x, {}, true, ones({3, 4}, dtype::bool_)), Catch::Contains("2D attn_mask"));
    CHECK_THROWS_WITH(mha(x, x, x, ones({2, 5}, dtype::bool_)), Catch::Contains("key_padding_mask shape"));
    CHECK_THROWS_WITH(mha(x, x, x, ones({2, 4}, dtype::int64)), Catch::Contains("must be bool"));
    CHECK_THROWS_WITH(mha(x.to(dtype::float64), x, x), Catch::Contains("dtype"));
    CHECK_THROWS_WITH(mha(randn({2, 2, 2, 8}), x, x), Catch::Contains("unbatched 2D or batched 3D"));
    const Tensor q = randn({3, 4});
    CHECK_THROWS_WITH(F::scaled_dot_product_attention(q, randn({5, 3}), randn({5, 2})), Catch::Contains("last size"));
    CHECK_THROWS_WITH(F::scaled_dot_product_attention(q, q, randn({2, 4})), Catch::Contains("positions"));
    CHECK_THROWS_WITH(F::scaled_dot_product_attention(q, q, q, ones({3, 3}, dtype::bool_), 0.0, true),
                      Catch::Contains("is_causal"));
    CHECK_THROWS_WITH(F::scaled_dot_product_attention(q, q, q, {}, 1.0), Catch::Contains("dropout_p"));
    CHECK_THROWS_WITH(F::scaled_dot_product_attention(q, q, q, ones({2, 3})), Catch::Contains("broadcast"));
    nn::TransformerDecoderLayer dec(8, 2);
    CHECK_THROWS_WITH(dec.forward(x), Catch::Contains("memory"));
    CHECK_THROWS_WITH(nn::TransformerEncoder(nn::TransformerEncoderLayer(8, 2), 0), Catch::Contains("num_layers"));
}
