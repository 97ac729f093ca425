// Modules under jit::script and capture::aot (graft/nn/script.hpp): the parameters are graph
// inputs, so scripted and eager forward passes agree, backward fills the module's p.grad(),
// and an optimizer's in-place update is seen by the next call. Also what a lambda that
// captures the module gives (parameters as graph constants).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <memory>
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

TEST_CASE("nn::script follows train/eval; nn::aot refuses a mode changed since its capture", "[nn][jit]") {
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
    try {
        (void)a(x);
        FAIL("no error");
    } catch (const graft::error& e) {
        CHECK(std::string(e.what()).find("nn::aot: the train/eval mode of Sequential") != std::string::npos);
    }
    model->train();
    CHECK(fn(x).to_vector<float>() == std::vector<float>{2, 4, 6});
    CHECK(a(x).to_vector<float>() == std::vector<float>{2, 4, 6});
}

TEST_CASE("nn::script captures again after a parameter was registered; nn::aot refuses the new count",
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
        CHECK(std::string(e.what()).find("takes 2 inputs, got 3") != std::string::npos);
    }
}
