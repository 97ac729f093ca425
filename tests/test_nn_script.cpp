// Modules under jit::script and capture::aot (graft/nn/script.hpp): the parameters are graph
// inputs, so scripted and eager forward passes agree, backward fills the module's p.grad(),
// and an optimizer's in-place update is seen by the next call. Also what a lambda that
// captures the module gives (parameters as graph constants).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <tuple>
#include <string>
#include <vector>

#include <graft/graft.hpp>

using namespace graft;

namespace {

std::shared_ptr<nn::Sequential> make_mlp(std::uint64_t seed) {
    generator g(seed);
    return std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(5, 16, true, dtype::float32, g),
                                            std::make_shared<nn::Tanh>(),
                                            std::make_shared<nn::Linear>(16, 3, true, dtype::float32, g));
}

/// max |a - b| / (1 + |b|) over the elements.
double rel_diff(const Tensor& a, const Tensor& b) {
    REQUIRE(a.sizes() == b.sizes());
    const auto x = a.to(dtype::float64).contiguous().to_vector<double>();
    const auto y = b.to(dtype::float64).contiguous().to_vector<double>();
    double m = 0;
    for (std::size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]) / (1.0 + std::abs(y[i])));
    return m;
}

/// Runs `compiled` and the eager twin (a copy of the model) over batches of several sizes with
/// an SGD step between calls, comparing outputs and every parameter's gradient. float32: the
/// compiled plans may fuse and reorder, so the tolerance is a few float32 ulps times the depth.
template <class Compiled>
void check_against_eager(Compiled& compiled, nn::Module& model, nn::Module& eager) {
    constexpr double tol = 2e-5;
    generator g(77);
    for (std::int64_t batch : {8, 16, 5, 32, 8}) {
        INFO("batch " << batch);
        const Tensor x = randn({batch, 5}, dtype::float32, g);
        model.zero_grad();
        eager.zero_grad();
        const Tensor y = compiled(x);
        const Tensor ye = eager.forward(x);
        CHECK(rel_diff(y, ye) < tol);
        (y * y).sum().backward();
        (ye * ye).sum().backward();
        const auto ps = model.named_parameters(), pe = eager.named_parameters();
        REQUIRE(ps.size() == 4);
        for (std::size_t i = 0; i < ps.size(); ++i) {
            INFO(ps[i].first);
            REQUIRE(ps[i].second.grad().defined());
            CHECK(rel_diff(ps[i].second.grad(), pe[i].second.grad()) < tol);
        }
        // One SGD step on both: the next call must see the new parameter values.
        autograd::no_grad guard;
        for (std::size_t i = 0; i < ps.size(); ++i) {
            Tensor p = ps[i].second, q = pe[i].second;
            p.sub_(p.grad() * 0.1);
            q.sub_(q.grad() * 0.1);
        }
    }
}

}  // namespace

TEST_CASE("nn::script: a scripted MLP matches eager outputs and parameter gradients over batch sizes",
          "[nn][jit]") {
    auto model = make_mlp(1);
    auto eager = make_mlp(1);
    auto fn = nn::script(model);
    check_against_eager(fn, *model, *eager);
    // The parameters were graph inputs: the graph takes the input and the 4 parameters, and
    // the executor compiled differentiable plans (forward and backward graphs) for them.
    REQUIRE(fn.function().graph() != nullptr);
    CHECK(fn.function().graph()->inputs().size() == 5);
    CHECK(fn.function().debug_string().find("differentiable plan") != std::string::npos);
    // The module's own tensors are in place after the calls (functional_call restored them).
    CHECK(model->parameters()[0].is_same((*model)[0]->get_parameter("weight")));
    CHECK(model->parameters()[0].is_leaf());
}

TEST_CASE("nn::aot: forward and backward graphs of a module, parameters as inputs", "[nn][capture]") {
    auto model = make_mlp(2);
    auto eager = make_mlp(2);
    generator g(3);
    auto compiled = nn::aot(model, randn({8, 5}, dtype::float32, g));
    CHECK(compiled.function().num_inputs == 5);
    CHECK(compiled.function().grad_inputs.size() == 4);  // the 4 parameters (the input does not require grad)
    check_against_eager(compiled, *model, *eager);
    CHECK(compiled.function().recaptures() >= 1);  // other batch sizes captured again
}

TEST_CASE("a lambda capturing a module: its parameters are lifted to graph inputs", "[nn][jit][capture]") {
    // Tensors that require grad and are not inputs (the parameters a lambda reads) become graph
    // inputs holding the module's own tensors (torch.compile lifts free tensors the same way):
    // the graph computes with their current values and gradients reach them, as eagerly.
    auto model = make_mlp(4);
    auto twin = make_mlp(4);
    generator g(5);
    const Tensor x = randn({4, 5}, dtype::float32, g);
    auto cap = capture::trace([&](const Tensor& in) { return model->forward(in); }, {x});
    CHECK(cap.graph().inputs().size() == 1 + model->parameters().size());
    CHECK(cap.meta().lifted.size() == model->parameters().size());
    CHECK(rel_diff(cap(x)[0], model->forward(x)) == 0.0);
    {
        autograd::no_grad guard;
        (*model)[0]->get_parameter("weight").add_(1.0);
        (*twin)[0]->get_parameter("weight").add_(1.0);
    }
    CHECK(rel_diff(cap(x)[0], model->forward(x)) == 0.0);  // the update is seen
    // Under jit::script, backward fills the parameters' grads as eager does.
    auto fn = jit::script([&](const Tensor& in) { return model->forward(in); });
    for (int step = 0; step < 3; ++step) {
        model->zero_grad();
        twin->zero_grad();
        (fn(x) * fn(x)).sum().backward();
        (twin->forward(x) * twin->forward(x)).sum().backward();
        const auto ps = model->parameters(), pt = twin->parameters();
        for (std::size_t i = 0; i < ps.size(); ++i) {
            REQUIRE(ps[i].grad().defined());
            CHECK(rel_diff(ps[i].grad(), pt[i].grad()) < 2e-5);
        }
    }
}

TEST_CASE("nn::script / nn::aot: misuse", "[nn][jit]") {
    try {
        (void)nn::script(std::shared_ptr<nn::Module>{});
        FAIL("no error");
    } catch (const graft::error& e) {
        CHECK(std::string(e.what()).find("nn::script: the module is null") != std::string::npos);
    }
    try {
        (void)nn::aot(std::shared_ptr<nn::Module>{}, zeros({1}));
        FAIL("no error");
    } catch (const graft::error& e) {
        CHECK(std::string(e.what()).find("nn::aot: the module is null") != std::string::npos);
    }
    // A wrong input size reaches Linear's check through the capture.
    auto model = make_mlp(6);
    auto fn = nn::script(model);
    try {
        (void)fn(zeros({2, 4}));
        FAIL("no error");
    } catch (const graft::error& e) {
        CHECK(std::string(e.what()).find("Linear(in_features=5, out_features=16)") != std::string::npos);
    }
    CHECK(model->parameters()[0].is_leaf());
    CHECK(fn(zeros({2, 5})).sizes() == int_list{2, 3});
}

TEST_CASE("nn::script follows train/eval, nn::aot captures each mode beside the first", "[nn][jit]") {
    // A layer that reads is_training() while traced, as Dropout will.
    struct TrainScale : nn::Module {
        TrainScale() : Module("TrainScale") { register_parameter("w", full({3}, 2.0f)); }
        Tensor forward(const Tensor& x) override {
            const Tensor& w = get_parameter("w");
            return is_training() ? x * w : x + w;
        }
    };
    auto model = std::make_shared<nn::Sequential>(std::make_shared<TrainScale>());
    const Tensor x = from_vector(std::vector<float>{1, 2, 3}, {1, 3});
    auto fn = nn::script(model);
    auto a = nn::aot(model, x);
    for (int i = 0; i < 3; ++i) CHECK(fn(x).to_vector<float>() == std::vector<float>{2, 4, 6});
    CHECK(a(x).to_vector<float>() == std::vector<float>{2, 4, 6});
    model->eval();
    for (int i = 0; i < 3; ++i) CHECK(fn(x).to_vector<float>() == std::vector<float>{3, 4, 5});
    CHECK(a(x).to_vector<float>() == std::vector<float>{3, 4, 5});
    const std::size_t eval_compilations = fn.function().debug_state().compilations;
    model->train();
    CHECK(fn(x).to_vector<float>() == std::vector<float>{2, 4, 6});
    CHECK(a(x).to_vector<float>() == std::vector<float>{2, 4, 6});
    // The usual "train an epoch, evaluate" loop: each mode keeps its plans, nothing is recaptured.
    const std::size_t train_compilations = fn.function().debug_state().compilations;
    for (int epoch = 0; epoch < 3; ++epoch) {
        model->train();
        CHECK(fn(x).to_vector<float>() == std::vector<float>{2, 4, 6});
        model->eval();
        CHECK(fn(x).to_vector<float>() == std::vector<float>{3, 4, 5});
        CHECK(a(x).to_vector<float>() == std::vector<float>{3, 4, 5});
    }
    CHECK(fn.num_modes() == 2);
    CHECK(a.num_modes() == 2);
    CHECK(fn.function().debug_state().compilations == eval_compilations);
    model->train();
    CHECK(fn.function().debug_state().compilations == train_compilations);
}

TEST_CASE("nn::script / nn::aot results are movable", "[nn][jit]") {
    auto model = make_mlp(8);
    const Tensor x = randn({4, 5});
    std::optional<nn::scripted_module> s;
    s.emplace(nn::script(model));
    const Tensor y = (*s)(x);
    nn::scripted_module moved = std::move(*s);
    CHECK(equal(moved(x), y));
    std::optional<nn::aot_module> a;
    a.emplace(nn::aot(model, x));
    nn::aot_module a2 = std::move(*a);
    CHECK(rel_diff(a2(x), y) < 1e-6);
    auto f = nn::script(model, [](nn::Sequential& m, const Tensor& in) { return m.forward(in); });
    auto f2 = std::move(f);
    CHECK(rel_diff(f2(x), y) < 1e-6);
}

namespace {
/// A VAE's shape: encode x to (mu, logvar), sample z with a noise input, decode; three outputs.
struct TinyVAE : nn::Module {
    std::shared_ptr<nn::Linear> enc, mu, logvar, dec;
    TinyVAE() : Module("TinyVAE") {
        generator g(12);
        enc = register_module("enc", std::make_shared<nn::Linear>(6, 8, true, dtype::float32, g));
        mu = register_module("mu", std::make_shared<nn::Linear>(8, 3, true, dtype::float32, g));
        logvar = register_module("logvar", std::make_shared<nn::Linear>(8, 3, true, dtype::float32, g));
        dec = register_module("dec", std::make_shared<nn::Linear>(3, 6, true, dtype::float32, g));
    }
    std::tuple<Tensor, Tensor, Tensor> run(const Tensor& x, const Tensor& noise) {
        const Tensor h = relu(enc->forward(x));
        const Tensor m = mu->forward(h), lv = logvar->forward(h);
        const Tensor z = m + exp(lv * 0.5) * noise;
        return {sigmoid(dec->forward(z)), m, lv};
    }
};
Tensor vae_loss(const Tensor& x, const std::tuple<Tensor, Tensor, Tensor>& r) {
    const auto& [recon, m, lv] = r;
    const Tensor bce = -(x * log(recon + 1e-6) + (1.0 - x) * log(1.0 - recon + 1e-6)).sum();
    const Tensor kl = ((m * m + exp(lv) - lv - 1.0) * 0.5).sum();
    return bce + kl;
}
}  // namespace

TEST_CASE("nn::script(model, fn) / nn::aot(model, fn, ...): several inputs and outputs, grads to the parameters",
          "[nn][jit][capture]") {
    auto model = std::make_shared<TinyVAE>();
    auto twin = std::make_shared<TinyVAE>();
    const auto run = [](TinyVAE& m, const Tensor& x, const Tensor& noise) { return m.run(x, noise); };
    auto s = nn::script(model, run);
    generator g(4);
    const Tensor x0 = rand({5, 6}, dtype::float32, g), n0 = randn({5, 3}, dtype::float32, g);
    auto a = nn::aot(model, run, x0, n0);
    for (int step = 0; step < 4; ++step) {
        INFO("step " << step);
        const Tensor x = rand({5, 6}, dtype::float32, g), noise = randn({5, 3}, dtype::float32, g);
        for (int path = 0; path < 2; ++path) {
            model->zero_grad();
            twin->zero_grad();
            const std::tuple<Tensor, Tensor, Tensor> r = path == 0 ? s(x, noise) : a(x, noise);
            const auto re = twin->run(x, noise);
            CHECK(rel_diff(std::get<0>(r), std::get<0>(re)) < 1e-5);
            CHECK(rel_diff(std::get<2>(r), std::get<2>(re)) < 1e-5);
            vae_loss(x, r).backward();
            vae_loss(x, re).backward();
            const auto ps = model->parameters(), pt = twin->parameters();
            REQUIRE(ps.size() == 8);
            for (std::size_t i = 0; i < ps.size(); ++i) {
                REQUIRE(ps[i].grad().defined());
                CHECK(rel_diff(ps[i].grad(), pt[i].grad()) < 1e-4);
            }
        }
        // An SGD step on both: the next call sees the new values.
        autograd::no_grad ng;
        const auto ps = model->parameters(), pt = twin->parameters();
        for (std::size_t i = 0; i < ps.size(); ++i) {
            Tensor p = ps[i], q = pt[i];
            p.sub_(p.grad() * 0.05);
            q.sub_(q.grad() * 0.05);
        }
    }
}

TEST_CASE("jit::script's result follows f's return type for a list of inputs", "[jit]") {
    const auto f = [](const std::vector<Tensor>& in) { return in[0] * in[1]; };
    auto fn = jit::script(f);
    const Tensor a = randn({3}), b = randn({3});
    const Tensor y = fn(std::vector<Tensor>{a, b});  // a Tensor, not a vector
    CHECK(equal(y, a * b));
    const auto g = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + 1.0, in[0] * 2.0}; };
    auto gn = jit::script(g);
    const std::vector<Tensor> r = gn(std::vector<Tensor>{a});
    CHECK(r.size() == 2);
}

TEST_CASE("nn::script captures again after a parameter was registered, nn::aot refuses the new count",
          "[nn][jit][capture]") {
    auto lin = std::make_shared<nn::Linear>(2, 1, false);
    {
        autograd::no_grad guard;
        lin->weight.copy_(from_vector(std::vector<float>{1, 2}, {1, 2}));
    }
    auto model = std::make_shared<nn::Sequential>(lin);
    const Tensor x = from_vector(std::vector<float>{3, 4}, {1, 2});
    auto fn = nn::script(model);
    auto a = nn::aot(model, x);
    for (int i = 0; i < 3; ++i) CHECK(fn(x).to_vector<float>() == std::vector<float>{11});
    model->register_parameter("unused", ones({1}));
    CHECK(fn(x).to_vector<float>() == std::vector<float>{11});
    CHECK(fn.function().graph()->inputs().size() == 3);
    try {
        (void)a(x);
        FAIL("no error");
    } catch (const graft::error& e) {
        CHECK(std::string(e.what()).find("captured with 1 parameter and buffer tensors and has 2 now") != std::string::npos);
    }
}
