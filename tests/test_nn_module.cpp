// nn::Module and the layers of graft/nn/modules.hpp: registration and PyTorch's dotted names,
// traversal order and de-duplication, train/eval, zero_grad, to(dtype), state_dict and
// load_state_dict (in place, errors listing every problem), safetensors files, functional_call,
// Linear and the activations against reference loops, Sequential and ModuleList, misuse errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <graft/nn.hpp>

using namespace graft;
namespace fs = std::filesystem;

namespace {

void check_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
    try {
        f();
        FAIL("no graft::error; expected one containing: " << parts.front());
    } catch (const graft::error& e) {
        INFO(e.what());
        for (const auto& part : parts) CHECK(std::string(e.what()).find(part) != std::string::npos);
    }
}

std::vector<std::string> names_of(const nn::named_tensor_list& l) {
    std::vector<std::string> r;
    for (const auto& e : l) r.push_back(e.first);
    return r;
}

std::vector<float> fvec(const Tensor& t) { return t.contiguous().to_vector<float>(); }

/// A module with its own parameter, a buffer of each kind and two children, registered in a
/// mixed order (as a PyTorch __init__ would assign them).
struct Net : nn::Module {
    Net() : Module("Net") {
        fc1 = register_module("fc1", std::make_shared<nn::Linear>(3, 4));
        scale = &register_parameter("scale", ones({4}));
        register_buffer("running", zeros({4}));
        register_buffer("scratch", zeros({2}), /*persistent=*/false);
        fc2 = register_module("fc2", std::make_shared<nn::Linear>(4, 2, /*bias=*/false));
    }
    Tensor forward(const Tensor& x) override { return fc2->forward(graft::tanh(fc1->forward(x)) * *scale); }
    std::shared_ptr<nn::Linear> fc1, fc2;
    Tensor* scale = nullptr;
};

std::string temp_file(const std::string& name) {
    static const std::string run = std::to_string(std::random_device{}());  // concurrent runs apart
    return (fs::temp_directory_path() / ("graft_test_nn_module_" + run + "_" + name + ".safetensors")).string();
}

}  // namespace

TEST_CASE("Module: parameters, buffers and children in registration order with dotted names", "[nn][module]") {
    manual_seed(1);
    auto net = std::make_shared<Net>();
    // PyTorch's order: the module's own parameters, then each child's, in registration order.
    CHECK(names_of(net->named_parameters()) ==
          std::vector<std::string>{"scale", "fc1.weight", "fc1.bias", "fc2.weight"});
    CHECK(names_of(net->named_parameters(/*recurse=*/false)) == std::vector<std::string>{"scale"});
    const auto ps = net->parameters();
    REQUIRE(ps.size() == 4);
    CHECK(ps[0].is_same(*net->scale));
    CHECK(ps[1].is_same(net->fc1->weight));
    CHECK(ps[2].is_same(net->fc1->bias));
    CHECK(ps[3].is_same(net->fc2->weight));
    for (const Tensor& p : ps) {
        CHECK(p.is_leaf());
        CHECK(p.requires_grad());
    }
    CHECK(names_of(net->named_buffers()) == std::vector<std::string>{"running", "scratch"});
    CHECK(net->buffers().size() == 2);
    CHECK_FALSE(net->buffers()[0].requires_grad());
    // state_dict: parameters then persistent buffers, module by module.
    CHECK(names_of(net->state_dict()) ==
          std::vector<std::string>{"scale", "running", "fc1.weight", "fc1.bias", "fc2.weight"});

    const auto kids = net->named_children();
    REQUIRE(kids.size() == 2);
    CHECK(kids[0].first == "fc1");
    CHECK(kids[0].second == net->fc1);
    CHECK(kids[1].first == "fc2");
    CHECK(net->children().size() == 2);
    const auto mods = net->named_modules();
    REQUIRE(mods.size() == 3);
    CHECK(mods[0].first.empty());
    CHECK(mods[0].second == net.get());
    CHECK(mods[1].first == "fc1");
    CHECK(mods[2].second == net->fc2.get());
    CHECK(net->modules().size() == 3);

    CHECK(net->get_parameter("fc1.bias").is_same(net->fc1->bias));
    CHECK(net->get_parameter("scale").is_same(*net->scale));
    CHECK(net->get_buffer("running").sizes() == int_list{4});
    CHECK(net->get_submodule("fc2") == net->fc2);
    check_error([&] { (void)net->get_parameter("fc2.bias"); }, {"fc2.bias", "no parameter named 'bias'"});
    check_error([&] { (void)net->get_submodule("fc3"); }, {"no submodule named 'fc3'"});

    // Sequential names its children "0", "1", ...; parameterless layers add no names.
    nn::Sequential seq(std::make_shared<nn::Linear>(2, 3), std::make_shared<nn::ReLU>(),
                       std::make_shared<nn::Linear>(3, 1));
    CHECK(names_of(seq.named_parameters()) == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
}

TEST_CASE("Module: shared modules and tied parameters are listed once, state_dict keeps both names",
          "[nn][module]") {
    auto shared = std::make_shared<nn::Linear>(2, 2);
    nn::Sequential seq(shared, std::make_shared<nn::Tanh>(), shared);
    CHECK(names_of(seq.named_parameters()) == std::vector<std::string>{"0.weight", "0.bias"});
    CHECK(seq.modules().size() == 3);  // seq, the shared Linear once, Tanh
    CHECK(names_of(seq.state_dict()) == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});

    // Weight tying: the same leaf registered in two modules keeps its identity.
    struct Tied : nn::Module {
        Tied() : Module("Tied") {
            enc = register_module("enc", std::make_shared<nn::Linear>(3, 3, false));
            dec = register_module("dec", std::make_shared<nn::Module>("Dec"));
            dec->register_parameter("weight", enc->weight);
        }
        std::shared_ptr<nn::Linear> enc;
        std::shared_ptr<nn::Module> dec;
    } tied;
    CHECK(tied.dec->get_parameter("weight").is_same(tied.enc->weight));
    CHECK(names_of(tied.named_parameters()) == std::vector<std::string>{"enc.weight"});
    CHECK(names_of(tied.state_dict()) == std::vector<std::string>{"enc.weight", "dec.weight"});
    // functional_call by name replaces a tied tensor in every slot (PyTorch's tie_weights).
    const Tensor eye3 = from_vector(std::vector<float>{1, 0, 0, 0, 1, 0, 0, 0, 1}, {3, 3});
    const Tensor x = from_vector(std::vector<float>{1, 2, 3}, {1, 3});
    CHECK(fvec(nn::functional_call(*tied.enc, nn::named_tensor_list{{"weight", eye3}}, x)) ==
          std::vector<float>{1, 2, 3});
    struct Both : nn::Module {
        explicit Both(std::shared_ptr<nn::Module> t) : Module("Both") { inner = register_module("t", std::move(t)); }
        Tensor forward(const Tensor& x) override {
            return graft::matmul(x, inner->get_submodule("dec")->get_parameter("weight").t());
        }
        std::shared_ptr<nn::Module> inner;
    };
    auto tied_ptr = std::make_shared<Tied>();
    Both both(tied_ptr);
    // Only "t.enc.weight" is named (named_parameters lists the tied tensor once); "t.dec.weight" follows.
    CHECK(names_of(both.named_parameters()) == std::vector<std::string>{"t.enc.weight"});
    CHECK(fvec(nn::functional_call(both, nn::named_tensor_list{{"t.enc.weight", eye3}}, x)) ==
          std::vector<float>{1, 2, 3});
    CHECK(tied_ptr->dec->get_parameter("weight").is_same(tied_ptr->enc->weight));
}

TEST_CASE("Module: train and eval reach every descendant", "[nn][module]") {
    auto inner = std::make_shared<nn::Sequential>(std::make_shared<nn::ReLU>());
    nn::Sequential outer(std::make_shared<nn::Linear>(2, 2), inner);
    CHECK(outer.is_training());
    outer.eval();
    CHECK_FALSE(outer.is_training());
    CHECK_FALSE(inner->is_training());
    CHECK_FALSE((*inner)[0]->is_training());
    CHECK_FALSE(outer[0]->is_training());
    inner->train();  // only the subtree
    CHECK(inner->is_training());
    CHECK(inner->is_training());
    CHECK_FALSE(outer.is_training());
    outer.train(true);
    for (nn::Module* m : outer.modules()) CHECK(m->is_training());
}

TEST_CASE("Module: zero_grad sets grads to none or to zeros", "[nn][module]") {
    manual_seed(2);
    Net net;
    net.forward(randn({5, 3})).sum().backward();
    for (const Tensor& p : net.parameters()) REQUIRE(p.grad().defined());
    net.zero_grad(/*set_to_none=*/false);
    for (const Tensor& p : net.parameters()) {
        REQUIRE(p.grad().defined());
        CHECK(p.grad().sizes() == p.sizes());
        for (float v : fvec(p.grad())) CHECK(v == 0.0f);
    }
    net.zero_grad();
    for (const Tensor& p : net.parameters()) CHECK_FALSE(p.grad().defined());
}

TEST_CASE("Module: to(float64) converts parameters into leaves that require grad", "[nn][module]") {
    manual_seed(3);
    Net net;
    const Tensor x = randn({4, 3});
    net.forward(x).sum().backward();
    const auto before = net.state_dict();
    const std::vector<float> grad_before = fvec(net.fc1->weight.grad());
    const Tensor y32 = net.forward(x);
    net.to(dtype::float64);
    for (const auto& [name, p] : net.named_parameters()) {
        INFO(name);
        CHECK(p.type() == dtype::float64);
        CHECK(p.is_leaf());
        CHECK(p.requires_grad());
        CHECK(p.grad().type() == dtype::float64);
    }
    CHECK(net.get_buffer("running").type() == dtype::float64);
    // Members refer to the registry slots, so they see the converted tensors.
    CHECK(net.fc1->weight.type() == dtype::float64);
    CHECK(net.fc1->weight.is_same(net.parameters()[1]));
    // Values converted exactly (float32 -> float64).
    const auto after = net.state_dict();
    for (std::size_t i = 0; i < before.size(); ++i) {
        const auto a = before[i].second.to_vector<float>();
        const auto b = after[i].second.to_vector<double>();
        for (std::size_t k = 0; k < a.size(); ++k) CHECK(b[k] == static_cast<double>(a[k]));
    }
    const auto g = net.fc1->weight.grad().to_vector<double>();
    for (std::size_t k = 0; k < g.size(); ++k) CHECK(g[k] == static_cast<double>(grad_before[k]));
    const Tensor y64 = net.forward(x.to(dtype::float64));
    const auto a = fvec(y32);
    const auto b = y64.to_vector<double>();
    for (std::size_t k = 0; k < a.size(); ++k) CHECK(b[k] == Approx(a[k]).epsilon(1e-5));
    net.zero_grad();
    net.forward(x.to(dtype::float64)).sum().backward();  // gradients reach the new leaves
    CHECK(net.fc1->weight.grad().defined());
    check_error([&] { net.to(dtype::int64); }, {"Net.to", "floating-point"});
}

TEST_CASE("Module: state_dict is detached and shares memory, load_state_dict copies in place", "[nn][module]") {
    manual_seed(4);
    Net a;
    manual_seed(5);
    Net b;
    const auto sd = a.state_dict();
    for (const auto& [name, t] : sd) CHECK_FALSE(t.requires_grad());
    CHECK(sd[0].second.shares_storage_with(*a.scale));

    const auto held = b.parameters();  // what an optimizer holds
    const auto result = b.load_state_dict(sd);
    CHECK(result.missing_keys.empty());
    CHECK(result.unexpected_keys.empty());
    const auto held_after = b.parameters();
    for (std::size_t i = 0; i < held.size(); ++i) {
        CHECK(held[i].is_same(held_after[i]));  // same leaves, new values
        CHECK(held[i].is_leaf());
        CHECK(held[i].requires_grad());
        CHECK(fvec(held[i]) == fvec(a.parameters()[i]));
    }
    const Tensor x = randn({3, 3});
    CHECK(fvec(a.forward(x)) == fvec(b.forward(x)));
    // Copies, not aliases: changing a afterwards leaves b alone.
    {
        autograd::no_grad g;
        a.fc1->weight.add_(1.0);
    }
    CHECK(fvec(a.fc1->weight) != fvec(b.fc1->weight));
    // The map form (what io::load_file returns) works the same.
    std::map<std::string, Tensor> as_map;
    for (const auto& [n, t] : a.state_dict()) as_map[n] = t;
    b.load_state_dict(as_map);
    CHECK(fvec(a.fc1->weight) == fvec(b.fc1->weight));
}

TEST_CASE("Module: load_state_dict lists missing, unexpected, size and dtype problems and changes nothing",
          "[nn][module]") {
    manual_seed(6);
    Net net;
    const auto before = net.state_dict();
    std::vector<std::vector<float>> values;
    for (const auto& e : before) values.push_back(fvec(e.second));

    nn::named_tensor_list bad;
    for (const auto& [n, t] : before) {
        if (n == "fc1.bias") continue;                                                // missing
        if (n == "fc2.weight") bad.emplace_back(n, zeros({3, 4}));                   // wrong shape
        else if (n == "scale") bad.emplace_back(n, zeros({4}, dtype::int64));        // wrong dtype category
        else bad.emplace_back(n, zeros_like(t));
    }
    bad.emplace_back("fc3.weight", zeros({1}));  // unexpected
    check_error([&] { net.load_state_dict(bad); },
                {"Error(s) in loading state_dict for Net", "Missing key(s) in state_dict: \"fc1.bias\"",
                 "Unexpected key(s) in state_dict: \"fc3.weight\"",
                 "size mismatch for fc2.weight: copying a param with shape [3, 4] from checkpoint, the shape in "
                 "current model is [2, 4]",
                 "dtype mismatch for scale"});
    const auto after = net.state_dict();
    for (std::size_t i = 0; i < after.size(); ++i) CHECK(fvec(after[i].second) == values[i]);

    // Within a category the values convert, as PyTorch's copy_: float16 and float64 into the
    // float32 parameters (0.1 in float16 is 0.0999755859375, exact in float32).
    {
        nn::named_tensor_list converted;
        for (const auto& [n, t] : before)
            converted.emplace_back(n, full(t.sizes(), 0.1, n == "scale" ? dtype::float64 : dtype::float16));
        net.load_state_dict(converted);
        CHECK(net.scale->type() == dtype::float32);
        CHECK(fvec(*net.scale) == std::vector<float>(4, 0.1f));
        CHECK(fvec(net.fc1->weight)[0] == 0.0999755859375f);
    }

    // strict = false: missing and unexpected keys are reported, the rest is loaded.
    nn::named_tensor_list partial{{"scale", full({4}, 2.0f)}, {"extra", zeros({1})}};
    const auto r = net.load_state_dict(partial, /*strict=*/false);
    CHECK(r.missing_keys == std::vector<std::string>{"running", "fc1.weight", "fc1.bias", "fc2.weight"});
    CHECK(r.unexpected_keys == std::vector<std::string>{"extra"});
    CHECK(fvec(*net.scale) == std::vector<float>(4, 2.0f));
    // Shape errors are errors even when not strict; so are undefined values and repeated keys.
    check_error([&] { net.load_state_dict(nn::named_tensor_list{{"scale", zeros({5})}}, false); }, {"size mismatch for scale"});
    check_error([&] { net.load_state_dict(nn::named_tensor_list{{"scale", Tensor{}}}, false); }, {"scale", "undefined"});
    check_error([&] { net.load_state_dict(nn::named_tensor_list{{"scale", ones({4})}, {"scale", ones({4})}}, false); },
                {"\"scale\" appears twice"});
    CHECK(fvec(*net.scale) == std::vector<float>(4, 2.0f));
}

TEST_CASE("nn::save_state_dict / load_state_dict: safetensors round trip, wrong shapes refused", "[nn][module][io]") {
    manual_seed(7);
    nn::Sequential a(std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::GELU>(),
                     std::make_shared<nn::Linear>(3, 2));
    const std::string path = temp_file("roundtrip");
    nn::save_state_dict(a, path);
    // The file holds the state_dict under PyTorch's names, as io reads it.
    const auto raw = io::load_file(path);
    CHECK(raw.size() == 4);
    CHECK(raw.at("2.weight").sizes() == int_list{2, 3});
    CHECK(io::safe_open(path).metadata().at("format") == "pt");

    manual_seed(8);
    nn::Sequential b(std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::GELU>(),
                     std::make_shared<nn::Linear>(3, 2));
    CHECK(fvec(a[0]->get_parameter("weight")) != fvec(b[0]->get_parameter("weight")));
    const auto r = nn::load_state_dict(b, path);
    CHECK(r.missing_keys.empty());
    for (std::size_t i = 0; i < 4; ++i) CHECK(fvec(a.parameters()[i]) == fvec(b.parameters()[i]));  // bitwise
    const Tensor x = randn({2, 4});
    CHECK(fvec(a.forward(x)) == fvec(b.forward(x)));

    // A model with other sizes refuses the file and keeps its values.
    nn::Sequential c(std::make_shared<nn::Linear>(5, 3), std::make_shared<nn::GELU>(),
                     std::make_shared<nn::Linear>(3, 2));
    const auto c_before = fvec(c[0]->get_parameter("weight"));
    check_error([&] { nn::load_state_dict(c, path); },
                {"size mismatch for 0.weight", "[3, 4] from checkpoint", "current model is [3, 5]"});
    CHECK(fvec(c[0]->get_parameter("weight")) == c_before);
    check_error([&] { nn::load_state_dict(c, temp_file("does_not_exist")); }, {"does_not_exist"});
    fs::remove(path);
}

TEST_CASE("Linear: x W^T + b against a reference loop, default init bounds, wrong sizes", "[nn][module]") {
    manual_seed(9);
    nn::Linear lin(3, 2);
    CHECK(lin.weight.sizes() == int_list{2, 3});
    CHECK(lin.bias.sizes() == int_list{2});
    // PyTorch's reset_parameters: both bounded by 1/sqrt(in_features).
    const double bound = 1.0 / std::sqrt(3.0);
    for (float v : fvec(lin.weight)) CHECK(std::abs(v) <= bound);
    for (float v : fvec(lin.bias)) CHECK(std::abs(v) <= bound);

    const Tensor x = randn({2, 2, 3});  // leading dims are kept
    const Tensor y = lin(x);
    REQUIRE(y.sizes() == int_list{2, 2, 2});
    const auto xv = fvec(x), wv = fvec(lin.weight), bv = fvec(lin.bias), yv = fvec(y);
    for (int r = 0; r < 4; ++r)
        for (int o = 0; o < 2; ++o) {
            double s = bv[static_cast<std::size_t>(o)];
            for (int i = 0; i < 3; ++i) s += double(xv[static_cast<std::size_t>(r * 3 + i)]) * wv[static_cast<std::size_t>(o * 3 + i)];
            CHECK(yv[static_cast<std::size_t>(r * 2 + o)] == Approx(s).epsilon(1e-5));
        }
    nn::Linear nob(3, 2, /*bias=*/false);
    CHECK_FALSE(nob.bias.defined());
    CHECK(nob.parameters().size() == 1);
    CHECK(names_of(nob.state_dict()) == std::vector<std::string>{"weight"});
    CHECK(nob.to_string() == "Linear(in_features=3, out_features=2, bias=False)");

    check_error([&] { (void)lin(zeros({2, 4})); },
                {"Linear(in_features=3, out_features=2)", "last dimension is 3", "[2, 4]"});
    check_error([&] { (void)lin(Tensor{}); }, {"Linear", "undefined"});
    check_error([&] { nn::Linear(-1, 2); }, {"Linear", "in_features"});
    check_error([&] { nn::Linear(2, 2, true, dtype::int64); }, {"Linear", "floating-point"});
    nn::Linear d(3, 2, true, dtype::float64);
    CHECK(d.weight.type() == dtype::float64);
    CHECK(d(zeros({1, 3}, dtype::float64)).type() == dtype::float64);
    // The same generator seed gives the same weights.
    generator g1(42), g2(42);
    nn::Linear l1(5, 4, true, dtype::float32, g1), l2(5, 4, true, dtype::float32, g2);
    CHECK(fvec(l1.weight) == fvec(l2.weight));
    CHECK(fvec(l1.bias) == fvec(l2.bias));
}

TEST_CASE("activation modules: values from their formulas", "[nn][module]") {
    const std::vector<float> xs{-3.0f, -0.5f, 0.0f, 0.25f, 2.0f, 30.0f};
    const Tensor x = from_vector(xs, {2, 3});
    const auto check_fn = [&](nn::Module& m, const std::function<double(double)>& f) {
        INFO(m.type_name());
        const auto y = fvec(m(x));
        for (std::size_t i = 0; i < xs.size(); ++i) CHECK(y[i] == Approx(f(xs[i])).epsilon(1e-5).margin(1e-6));
    };
    nn::ReLU relu;
    check_fn(relu, [](double v) { return v > 0 ? v : 0.0; });
    nn::Sigmoid sig;
    check_fn(sig, [](double v) { return 1.0 / (1.0 + std::exp(-v)); });
    nn::Tanh th;
    check_fn(th, [](double v) { return std::tanh(v); });
    nn::SiLU silu;
    check_fn(silu, [](double v) { return v / (1.0 + std::exp(-v)); });
    nn::GELU gelu;
    check_fn(gelu, [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); });
    nn::GELU gelu_tanh("tanh");
    check_fn(gelu_tanh, [](double v) {
        return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
    });
    nn::Softplus sp(2.0, 10.0);
    check_fn(sp, [](double v) { return 2.0 * v > 10.0 ? v : std::log1p(std::exp(2.0 * v)) / 2.0; });
    nn::LeakyReLU lr(0.2);
    check_fn(lr, [](double v) { return v > 0 ? v : 0.2 * v; });
    nn::LeakyReLU lr_default;
    CHECK(lr_default.negative_slope == 0.01);

    // Softmax / LogSoftmax along dim 1: reference rows.
    const Tensor z = from_vector(std::vector<float>{1, 2, 3, -1, 0, 4}, {2, 3});
    nn::Softmax sm(1);
    nn::LogSoftmax lsm(-1);
    const auto s = fvec(sm(z)), ls = fvec(lsm(z)), zv = fvec(z);
    for (int r = 0; r < 2; ++r) {
        double den = 0;
        for (int c = 0; c < 3; ++c) den += std::exp(double(zv[static_cast<std::size_t>(r * 3 + c)]));
        for (int c = 0; c < 3; ++c) {
            const auto k = static_cast<std::size_t>(r * 3 + c);
            CHECK(s[k] == Approx(std::exp(double(zv[k])) / den).epsilon(1e-5));
            CHECK(ls[k] == Approx(double(zv[k]) - std::log(den)).epsilon(1e-5));
        }
    }
    check_error([] { nn::GELU bad("fast"); }, {"GELU", "\"fast\""});

    nn::Identity id;
    CHECK(id(x).is_same(x));
    nn::Flatten fl;
    CHECK(fl(zeros({2, 3, 4, 5})).sizes() == int_list{2, 60});
    nn::Flatten fl2(0, 1);
    CHECK(fl2(zeros({2, 3, 4})).sizes() == int_list{6, 4});
    CHECK(fl.to_string() == "Flatten(start_dim=1, end_dim=-1)");
}

TEST_CASE("Sequential and ModuleList: construction, push_back, indexing, iteration, forward, printing",
          "[nn][module]") {
    manual_seed(10);
    auto l1 = std::make_shared<nn::Linear>(3, 4);
    auto l2 = std::make_shared<nn::Linear>(4, 2);
    auto seq = std::make_shared<nn::Sequential>(l1, std::make_shared<nn::ReLU>());
    seq->push_back(l2);
    REQUIRE(seq->size() == 3);
    CHECK((*seq)[0] == l1);
    CHECK((*seq)[-1] == l2);
    CHECK(seq->at<nn::Linear>(2) == l2);
    check_error([&] { (void)seq->at<nn::Linear>(1); }, {"Sequential::at(1)", "ReLU"});
    check_error([&] { (void)(*seq)[3]; }, {"Sequential", "index 3 is out of range for 3 modules"});
    check_error([&] { (void)(*seq)[-4]; }, {"index -4"});
    check_error([&] { seq->push_back(nullptr); }, {"Sequential::push_back", "null"});
    std::vector<std::string> kinds;
    for (const auto& m : *seq) kinds.push_back(m->type_name());
    CHECK(kinds == std::vector<std::string>{"Linear", "ReLU", "Linear"});

    const Tensor x = randn({5, 3});
    CHECK(fvec((*seq)(x)) == fvec(l2->forward(graft::relu(l1->forward(x)))));
    nn::Sequential empty;
    CHECK((empty)(x).is_same(x));

    CHECK(seq->to_string() ==
          "Sequential(\n"
          "  (0): Linear(in_features=3, out_features=4, bias=True)\n"
          "  (1): ReLU()\n"
          "  (2): Linear(in_features=4, out_features=2, bias=True)\n"
          ")");
    nn::Sequential outer(seq, std::make_shared<nn::Softmax>(1));
    std::ostringstream os;
    os << outer;
    CHECK(os.str() ==
          "Sequential(\n"
          "  (0): Sequential(\n"
          "    (0): Linear(in_features=3, out_features=4, bias=True)\n"
          "    (1): ReLU()\n"
          "    (2): Linear(in_features=4, out_features=2, bias=True)\n"
          "  )\n"
          "  (1): Softmax(dim=1)\n"
          ")");
    CHECK(names_of(outer.named_parameters()) ==
          std::vector<std::string>{"0.0.weight", "0.0.bias", "0.2.weight", "0.2.bias"});

    nn::ModuleList list({std::make_shared<nn::Linear>(2, 2), std::make_shared<nn::Tanh>()});
    list.extend({std::make_shared<nn::Linear>(2, 1, false)});
    CHECK(list.size() == 3);
    CHECK(names_of(list.named_parameters()) == std::vector<std::string>{"0.weight", "0.bias", "2.weight"});
    check_error([&] { (void)list(x); }, {"ModuleList.forward", "not implemented"});
    Tensor h = randn({1, 2});
    for (const auto& m : list) h = m->forward(h);  // a ModuleList is applied by hand
    CHECK(h.sizes() == int_list{1, 1});
}

TEST_CASE("Module: misuse gives graft::error and leaves the module usable", "[nn][module]") {
    Net net;
    check_error([&] { net.register_parameter("scale", zeros({1})); },
                {"Net.register_parameter(\"scale\")", "attribute 'scale' already exists"});
    check_error([&] { net.register_buffer("fc1", zeros({1})); }, {"attribute 'fc1' already exists"});
    check_error([&] { net.register_module("running", std::make_shared<nn::ReLU>()); },
                {"attribute 'running' already exists"});
    check_error([&] { net.register_parameter("a.b", zeros({1})); }, {"parameter name can't contain \".\""});
    check_error([&] { net.register_buffer("", zeros({1})); }, {"buffer name can't be empty"});
    check_error([&] { net.register_module("m", std::shared_ptr<nn::Module>{}); }, {"register_module", "null"});
    check_error([&] { net.register_parameter("idx", zeros({2}, dtype::int64)); },
                {"only tensors of floating point dtype can require gradients"});
    auto a = std::make_shared<nn::Sequential>();
    auto b = std::make_shared<nn::Sequential>(a);
    check_error([&] { a->push_back(b); }, {"cannot be its own descendant"});
    check_error([&] { a->register_module("self", a); }, {"cannot be its own descendant"});
    CHECK(a->size() == 0);
    // An int64 parameter that does not require grad, and an absent one, are allowed.
    net.register_parameter("steps", zeros({1}, dtype::int64), /*requires_grad=*/false);
    net.register_parameter("absent", Tensor{});
    CHECK(names_of(net.named_parameters(false)) == std::vector<std::string>{"scale", "steps"});
    // Registration while functional_call has swapped the module's tensors is refused.
    struct Grower : nn::Module {
        Grower() : Module("Grower") { register_parameter("w", ones({1})); }
        Tensor forward(const Tensor& x) override {
            register_parameter("late", ones({1}));
            return x;
        }
    } grower;
    check_error([&] { (void)nn::functional_call(grower, nn::named_tensor_list{}, ones({1})); },
                {"cannot register while functional_call"});
    (void)grower(ones({1}));  // eager registration in forward is allowed, as in PyTorch
    CHECK(grower.parameters().size() == 2);
    // The module still works after all these errors.
    manual_seed(11);
    CHECK(net.forward(randn({2, 3})).sizes() == int_list{2, 2});
    nn::Module base;
    check_error([&] { (void)base(ones({1})); }, {"Module.forward", "not implemented"});
}

TEST_CASE("functional_call: forward with other tensors, module restored (also on errors)", "[nn][module]") {
    manual_seed(12);
    nn::Linear lin(2, 2);
    const auto w0 = fvec(lin.weight), b0 = fvec(lin.bias);
    const Tensor w = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
    const Tensor b = from_vector(std::vector<float>{10, 20});
    const Tensor x = from_vector(std::vector<float>{1, -1}, {1, 2});
    // By name: [1*1 + 2*-1 + 10, 3*1 + 4*-1 + 20] = [9, 19].
    CHECK(fvec(nn::functional_call(lin, {{"weight", w}, {"bias", b}}, x)) == std::vector<float>{9, 19});
    CHECK(fvec(lin.weight) == w0);
    CHECK(fvec(lin.bias) == b0);
    // A subset: the module's own bias.
    const auto y = fvec(nn::functional_call(lin, {{"weight", w}}, x));
    CHECK(y[0] == Approx(-1.0 + b0[0]));
    // By position, in parameters() order.
    const std::vector<Tensor> ps{w, b};
    CHECK(fvec(nn::functional_call(lin, ps, x)) == std::vector<float>{9, 19});
    CHECK(lin.weight.is_same(lin.parameters()[0]));
    check_error([&] { (void)nn::functional_call(lin, std::vector<Tensor>{w}, x); },
                {"functional_call", "2 parameters, got 1"});
    check_error([&] { (void)nn::functional_call(lin, {{"wieght", w}}, x); }, {"no parameter or buffer named \"wieght\""});
    // forward throws (wrong weight shape): the module's tensors are restored.
    check_error([&] { (void)nn::functional_call(lin, {{"weight", zeros({2, 3})}}, x); }, {"linear"});
    CHECK(fvec(lin.weight) == w0);
    CHECK(lin.parameters()[0].requires_grad());
    // Gradients flow to the tensors passed in.
    const Tensor wl = w.detach().requires_grad_();
    nn::functional_call(lin, {{"weight", wl}}, x).sum().backward();
    CHECK(fvec(wl.grad()) == std::vector<float>{1, -1, 1, -1});
    CHECK_FALSE(lin.weight.grad().defined());
}
