// graft::nn's normalization layers: BatchNorm1d/2d/3d, InstanceNorm1d/2d, GroupNorm and
// functional::batch_norm / instance_norm / group_norm. Checked against PyTorch 1.13's results
// (tests/fixtures/norms.txt, written by tests/fixtures/gen_norms.py: outputs, gradients and
// running statistics over training steps and an eval step), against hand-computed values,
// finite differences, and across eager, nn::script and nn::aot (the running statistics are
// graph inputs written back). Bad input leaves the layers' state untouched.
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

struct norm_case {
    std::string name;
    dtype type = dtype::float64;
    int steps = 0;
    std::map<std::string, Tensor> results;  // y0, gx0, gw0, gb0, ..., running_mean, running_var, eval_y
};

std::vector<norm_case> read_fixture() {
    const std::string path = std::string(GRAFT_SOURCE_DIR) + "/tests/fixtures/norms.txt";
    std::ifstream file(path);
    REQUIRE(file.good());
    std::vector<norm_case> cases;
    std::string line;
    while (std::getline(file, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream in(line);
        std::string tag;
        in >> tag;
        if (tag == "case") {
            norm_case c;
            std::string type;
            in >> c.name >> type >> c.steps;
            c.type = type == "float32" ? dtype::float32 : dtype::float64;
            cases.push_back(std::move(c));
        } else if (tag == "t") {
            std::string label;
            in >> label;
            const bool counter = label == "num_batches_tracked";
            cases.back().results[label] = fx::read_tensor(in).to(counter ? dtype::int64 : cases.back().type);
        }
    }
    REQUIRE(cases.size() == 24);
    return cases;
}

using fx::formula;  // the fixture's formulas (see gen_norms.py)
Tensor step_input(const int_list& sizes, int k, dtype type) {
    return formula(
        sizes, [k](std::int64_t i) { return std::sin(0.37 * i + 0.11 * k + 0.2) * (1 + 0.5 * k) + 0.25 * k; }, type);
}

struct layer_case {
    std::function<std::shared_ptr<nn::Module>(dtype)> make;
    int_list sizes;
};

const std::map<std::string, layer_case>& layer_cases() {
    using M = std::shared_ptr<nn::Module>;
    static const std::map<std::string, layer_case> cases{
        {"bn2d", {[](dtype t) -> M { return std::make_shared<nn::BatchNorm2d>(3, 1e-5, 0.1, true, true, t); }, {4, 3, 2, 2}}},
        {"bn2d_momentum_none",
         {[](dtype t) -> M { return std::make_shared<nn::BatchNorm2d>(3, 1e-5, std::nullopt, true, true, t); },
          {4, 3, 2, 2}}},
        {"bn2d_momentum_0.5_eps_0.1",
         {[](dtype t) -> M { return std::make_shared<nn::BatchNorm2d>(3, 0.1, 0.5, true, true, t); }, {2, 3, 3, 1}}},
        {"bn2d_no_tracking",
         {[](dtype t) -> M { return std::make_shared<nn::BatchNorm2d>(3, 1e-5, 0.1, true, false, t); }, {3, 3, 2, 2}}},
        {"bn1d_2d_input", {[](dtype t) -> M { return std::make_shared<nn::BatchNorm1d>(5, 1e-5, 0.1, true, true, t); }, {6, 5}}},
        {"bn1d_3d_input_no_affine",
         {[](dtype t) -> M { return std::make_shared<nn::BatchNorm1d>(3, 1e-5, 0.1, false, true, t); }, {2, 3, 4}}},
        {"in2d_affine_tracking",
         {[](dtype t) -> M { return std::make_shared<nn::InstanceNorm2d>(3, 1e-5, 0.1, true, true, t); }, {2, 3, 3, 2}}},
        {"in2d", {[](dtype t) -> M { return std::make_shared<nn::InstanceNorm2d>(3, 1e-5, 0.1, false, false, t); }, {2, 3, 2, 3}}},
        {"in1d_unbatched",
         {[](dtype t) -> M { return std::make_shared<nn::InstanceNorm1d>(3, 1e-5, 0.1, true, false, t); }, {3, 5}}},
        {"gn_2_4", {[](dtype t) -> M { return std::make_shared<nn::GroupNorm>(2, 4, 1e-5, true, t); }, {3, 4, 5}}},
        {"gn_1_6", {[](dtype t) -> M { return std::make_shared<nn::GroupNorm>(1, 6, 1e-5, true, t); }, {2, 6, 2, 2}}},
        {"gn_3_3_no_affine", {[](dtype t) -> M { return std::make_shared<nn::GroupNorm>(3, 3, 1e-5, false, t); }, {2, 3, 4}}},
    };
    return cases;
}

/// The module built and given the fixture's weight and bias.
std::shared_ptr<nn::Module> make_layer(const norm_case& c) {
    auto m = layer_cases().at(c.name).make(c.type);
    const autograd::no_grad guard;
    for (auto& [name, p] : m->named_parameters()) {
        Tensor t = p;
        const std::int64_t n = t.size(0);
        t.copy_(name == "weight" ? formula({n}, [](std::int64_t i) { return 0.5 + 0.25 * i; }, c.type)
                                 : formula({n}, [](std::int64_t i) { return 0.1 * i - 0.2; }, c.type));
    }
    return m;
}

enum class path { eager, script, aot };

/// Every result of the case's steps on `p`, by the fixture's labels.
std::map<std::string, Tensor> run_case(const norm_case& c, path p) {
    auto m = make_layer(c);
    const int_list sizes = layer_cases().at(c.name).sizes;
    std::optional<nn::scripted_module> scripted;
    std::optional<nn::aot_module> compiled;
    if (p == path::script) scripted.emplace(nn::script(m));
    const auto call = [&](const Tensor& x) -> Tensor {
        switch (p) {
            case path::eager: return (*m)(x);
            case path::script: return (*scripted)(x);
            case path::aot:
                if (!compiled) compiled.emplace(nn::aot(m, x));
                return (*compiled)(x);
        }
        return {};
    };
    const Tensor g = formula(sizes, [](std::int64_t i) { return std::cos(0.23 * i); }, c.type);
    std::map<std::string, Tensor> r;
    for (int k = 0; k <= c.steps; ++k) {
        Tensor x = step_input(sizes, k, c.type);
        if (k == c.steps) {
            m->eval();
            r["eval_y"] = call(x);
            break;
        }
        x.requires_grad_(true);
        const Tensor y = call(x);
        (y * g).sum().backward();
        const std::string s = std::to_string(k);
        r["y" + s] = y.detach();
        r["gx" + s] = x.grad();
        for (auto& [name, t] : m->named_parameters()) {
            r[(name == "weight" ? "gw" : "gb") + s] = t.grad();
            t.set_grad(Tensor());
        }
    }
    for (auto& [name, t] : m->named_buffers()) r[name] = t.clone();
    return r;
}

/// fx::close_to with equal dtypes.
bool close_to(const Tensor& a, const Tensor& b, double tol) {
    return a.defined() && a.type() == b.type() && fx::close_to(a, b, tol);
}

}  // namespace

TEST_CASE("normalization layers: eager results equal PyTorch 1.13's (outputs, gradients, running statistics)",
          "[nn][norm]") {
    for (const norm_case& c : read_fixture()) {
        INFO(c.name << " " << c.type);
        const auto r = run_case(c, path::eager);
        REQUIRE(r.size() == c.results.size());
        // float64: the formulas differ from PyTorch's kernels in rounding only; float32: PyTorch
        // accumulates its statistics in float64, graft in float32, and the input gradient's
        // terms cancel (3.8e-6 seen, relative to 1 + |value|).
        const double tol = c.type == dtype::float64 ? 1e-12 : 1e-5;
        for (const auto& [label, expected] : c.results) {
            INFO(label);
            REQUIRE(r.count(label) == 1);
            const bool ok = close_to(r.at(label), expected, tol);
            if (!ok && r.at(label).sizes() == expected.sizes())
                UNSCOPED_INFO("max error " << ((r.at(label).to(dtype::float64) - expected.to(dtype::float64)).abs() /
                                               (expected.to(dtype::float64).abs() + 1.0))
                                                  .amax()
                                                  .item<double>());
            CHECK(ok);
        }
    }
}

TEST_CASE("normalization layers: nn::script and nn::aot give eager's results and update the running statistics",
          "[nn][norm][jit][capture]") {
    for (const norm_case& c : read_fixture()) {
        INFO(c.name << " " << c.type);
        const auto eager = run_case(c, path::eager);
        for (const path p : {path::script, path::aot}) {
            INFO((p == path::script ? "nn::script" : "nn::aot"));
            const auto r = run_case(c, p);
            REQUIRE(r.size() == eager.size());
            for (const auto& [label, expected] : eager) {
                INFO(label);
                // The same ops in the same order: the running statistics and outputs bitwise; the
                // gradients may be summed in another order by the compiled backward.
                const bool exact = label.rfind("running", 0) == 0 || label == "num_batches_tracked" ||
                                   label[0] == 'y' || label == "eval_y";
                if (exact) CHECK(equal(r.at(label), expected));
                else CHECK(close_to(r.at(label), expected, c.type == dtype::float64 ? 1e-14 : 1e-6));
            }
        }
    }
}

TEST_CASE("batch_norm: hand-computed values, running statistics and the cumulative average", "[nn][norm]") {
    // x = [1, 3] in one channel: mean 2, biased variance 1, unbiased 2.
    auto bn = std::make_shared<nn::BatchNorm1d>(1, 1e-5, 0.1, true, true, dtype::float64);
    const Tensor x = from_vector(std::vector<double>{1, 3}).reshape({2, 1});
    const Tensor y = (*bn)(x);
    const double s = 1.0 / std::sqrt(1.0 + 1e-5);
    CHECK(y.reshape({2}).to_vector<double>() == std::vector<double>{-s, s});
    CHECK(bn->running_mean.item<double>() == Approx(0.9 * 0.0 + 0.1 * 2.0).epsilon(1e-15));
    CHECK(bn->running_var.item<double>() == Approx(0.9 * 1.0 + 0.1 * 2.0).epsilon(1e-15));
    CHECK(bn->num_batches_tracked.item<std::int64_t>() == 1);
    // Eval: (x - running_mean) / sqrt(running_var + eps).
    bn->eval();
    const Tensor e = (*bn)(x);
    CHECK(e.reshape({2}).to_vector<double>()[1] == Approx((3.0 - 0.2) / std::sqrt(1.1 + 1e-5)).epsilon(1e-15));
    CHECK(bn->num_batches_tracked.item<std::int64_t>() == 1);  // eval counts nothing

    // momentum = None: batches [1, 3] then [5, 9] average to mean 4.5 and variance (2 + 8) / 2.
    auto avg = std::make_shared<nn::BatchNorm1d>(1, 1e-5, std::nullopt, true, true, dtype::float64);
    (void)(*avg)(x);
    CHECK(avg->running_mean.item<double>() == 2.0);
    CHECK(avg->running_var.item<double>() == 2.0);
    (void)(*avg)(from_vector(std::vector<double>{5, 9}).reshape({2, 1}));
    CHECK(avg->running_mean.item<double>() == Approx(4.5).epsilon(1e-15));
    CHECK(avg->running_var.item<double>() == Approx(5.0).epsilon(1e-15));
    CHECK(avg->num_batches_tracked.item<std::int64_t>() == 2);

    // reset_running_stats / reset_parameters.
    avg->reset_running_stats();
    CHECK(avg->running_mean.item<double>() == 0.0);
    CHECK(avg->running_var.item<double>() == 1.0);
    CHECK(avg->num_batches_tracked.item<std::int64_t>() == 0);

    // The functional form with its own buffers.
    Tensor rm = zeros({1}, dtype::float64), rv = ones({1}, dtype::float64);
    (void)F::batch_norm(x, rm, rv, {}, {}, true, 0.5);
    CHECK(rm.item<double>() == 1.0);
    CHECK(rv.item<double>() == 1.5);
    (void)F::batch_norm(x, rm, rv);  // eval: nothing moves
    CHECK(rm.item<double>() == 1.0);
}

TEST_CASE("group_norm and instance_norm: hand-computed values", "[nn][norm]") {
    // One sample, two channels [1, 3] and [5, 9]; two groups normalize each channel alone.
    const Tensor x = from_vector(std::vector<double>{1, 3, 5, 9}).reshape({1, 2, 2});
    const double eps = 1e-5;
    const std::vector<double> expected{-1 / std::sqrt(1 + eps), 1 / std::sqrt(1 + eps), -2 / std::sqrt(4 + eps),
                                       2 / std::sqrt(4 + eps)};
    const auto near = [](const std::vector<double>& a, const std::vector<double>& b) {
        for (std::size_t i = 0; i < a.size(); ++i)
            if (std::abs(a[i] - b[i]) > 1e-15) return false;
        return a.size() == b.size();
    };
    CHECK(near(F::group_norm(x, 2).reshape({4}).to_vector<double>(), expected));
    CHECK(near(F::instance_norm(x).reshape({4}).to_vector<double>(), expected));
    // One group: mean 4.5 and biased variance 8.75 over all four values.
    const std::vector<double> one = F::group_norm(x, 1).reshape({4}).to_vector<double>();
    CHECK(one[0] == Approx((1 - 4.5) / std::sqrt(8.75 + eps)).epsilon(1e-14));
    // Weight and bias per channel.
    const Tensor w = from_vector(std::vector<double>{2, 3}), b = from_vector(std::vector<double>{0.5, -1});
    const std::vector<double> affine = F::group_norm(x, 2, w, b).reshape({4}).to_vector<double>();
    CHECK(affine[3] == Approx(3 * expected[3] - 1).epsilon(1e-14));
    // instance_norm's running statistics: the mean over the batch of each sample's statistics.
    Tensor rm = zeros({2}, dtype::float64), rv = ones({2}, dtype::float64);
    (void)F::instance_norm(x, rm, rv, {}, {}, true, 1.0);
    CHECK(rm.to_vector<double>() == std::vector<double>{2, 7});
    CHECK(rv.to_vector<double>() == std::vector<double>{2, 8});
}

TEST_CASE("batch_norm, instance_norm and group_norm: first and second derivatives against finite differences",
          "[nn][norm][gradcheck]") {
    const Tensor x = gt::leaf({3, 2, 2, 2}, 11);
    const Tensor w = gt::leaf({2}, 12, 0.5, 1.5), b = gt::leaf({2}, 13);
    using L = autograd::tensor_list;
    gt::check_grads([](const L& in) { return L{F::batch_norm(in[0], {}, {}, in[1], in[2], true)}; }, {x, w, b});
    gt::check_grads([](const L& in) { return L{F::batch_norm(in[0], {}, {}, {}, {}, true, 0.1, 0.3)}; }, {x});
    const Tensor rm = gt::leaf({2}, 14).detach(), rv = gt::leaf({2}, 15, 0.5, 2.0).detach();
    gt::check_grads([&](const L& in) { return L{F::batch_norm(in[0], rm, rv, in[1], in[2], false)}; }, {x, w, b});
    gt::check_grads([](const L& in) { return L{F::instance_norm(in[0], {}, {}, in[1], in[2])}; }, {x, w, b});
    const Tensor x4 = gt::leaf({2, 4, 3}, 16);
    const Tensor w4 = gt::leaf({4}, 17, 0.5, 1.5), b4 = gt::leaf({4}, 18);
    gt::check_grads([](const L& in) { return L{F::group_norm(in[0], 2, in[1], in[2])}; }, {x4, w4, b4});
    gt::check_grads([](const L& in) { return L{F::group_norm(in[0], 4)}; }, {x4});
}

TEST_CASE("normalization layers: state_dict keys as PyTorch's, printing, dtype conversion, modes", "[nn][norm]") {
    auto bn = std::make_shared<nn::BatchNorm2d>(4);
    std::vector<std::string> keys;
    for (const auto& [k, v] : bn->state_dict()) keys.push_back(k);
    CHECK(keys == std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"});
    CHECK(bn->parameters().size() == 2);
    CHECK(bn->num_batches_tracked.dim() == 0);
    CHECK(bn->num_batches_tracked.type() == dtype::int64);
    CHECK(bn->to_string() == "BatchNorm2d(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
    CHECK(nn::BatchNorm1d(3, 1e-3, std::nullopt, false, false).to_string() ==
          "BatchNorm1d(3, eps=0.001, momentum=None, affine=False, track_running_stats=False)");
    CHECK(nn::BatchNorm1d(3, 1e-3, std::nullopt, false, false).state_dict().empty());
    CHECK(nn::GroupNorm(2, 4).to_string() == "GroupNorm(2, 4, eps=1e-05, affine=True)");
    CHECK(nn::InstanceNorm2d(3).to_string() ==
          "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, track_running_stats=False)");
    std::vector<std::string> in_keys;
    for (const auto& [k, v] : nn::InstanceNorm2d(3, 1e-5, 0.1, true, true).state_dict()) in_keys.push_back(k);
    CHECK(in_keys == std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"});

    // A PyTorch state_dict loads into it (and the counter stays int64 through to()).
    nn::named_tensor_list sd{{"weight", full({4}, 2.0)},         {"bias", full({4}, 0.5)},
                             {"running_mean", full({4}, 1.0)},   {"running_var", full({4}, 4.0)},
                             {"num_batches_tracked", full({}, 7, dtype::int64)}};
    (void)bn->load_state_dict(sd);
    bn->to(dtype::float64);
    CHECK(bn->running_var.type() == dtype::float64);
    CHECK(bn->num_batches_tracked.type() == dtype::int64);
    CHECK(bn->num_batches_tracked.item<std::int64_t>() == 7);
    bn->eval();
    const Tensor y = (*bn)(full({1, 4, 1, 1}, 3.0, dtype::float64));
    CHECK(y.sum().item<double>() == Approx(4 * (2.0 * (3.0 - 1.0) / std::sqrt(4.0 + 1e-5) + 0.5)).epsilon(1e-14));

    // track_running_stats = false normalizes with the batch's statistics in eval mode too.
    auto free = std::make_shared<nn::BatchNorm1d>(2, 1e-5, 0.1, false, false, dtype::float64);
    free->eval();
    const Tensor x = from_vector(std::vector<double>{1, 10, 3, 30}).reshape({2, 2});
    CHECK(allclose((*free)(x), F::batch_norm(x, {}, {}, {}, {}, true)));
}

TEST_CASE("normalization layers: bad input is a clear error and leaves the state untouched", "[nn][norm][errors]") {
    auto bn = std::make_shared<nn::BatchNorm2d>(3);
    const auto untouched = [&] {
        return bn->num_batches_tracked.item<std::int64_t>() == 0 && bn->running_mean.abs().sum().item<double>() == 0.0 &&
               bn->running_var.eq(1.0).to(dtype::float64).sum().item<double>() == 3.0;
    };
    CHECK_THROWS_WITH((*bn)(randn({2, 3, 4})), Catch::Contains("expected 4D input (got 3D input)"));
    CHECK_THROWS_WITH((*bn)(randn({2, 4, 2, 2})), Catch::Contains("3 channels"));
    CHECK_THROWS_WITH((*bn)(randn({1, 3, 1, 1})), Catch::Contains("Expected more than 1 value per channel"));
    CHECK_THROWS_WITH((*bn)(randn({2, 3, 2, 2}, dtype::float64)), Catch::Contains("dtype"));
    CHECK_THROWS_WITH((*bn)(ones({2, 3, 2, 2}, dtype::int64)), Catch::Contains("floating"));
    CHECK(untouched());
    (void)(*bn)(randn({2, 3, 2, 2}));  // still usable
    CHECK(bn->num_batches_tracked.item<std::int64_t>() == 1);
    CHECK_THROWS_WITH(nn::BatchNorm1d(1)(randn({1, 1})), Catch::Contains("more than 1 value per channel"));
    CHECK_THROWS_WITH(nn::BatchNorm1d(0), Catch::Contains("num_features must be positive"));
    CHECK_THROWS_WITH(nn::BatchNorm1d(2, -1.0), Catch::Contains("eps"));
    CHECK_THROWS_WITH(nn::BatchNorm1d(2, 1e-5, 0.1, true, true, dtype::int64), Catch::Contains("floating"));
    CHECK_THROWS_WITH(nn::InstanceNorm2d(3)(randn({3, 4})), Catch::Contains("expected 3D or 4D input"));
    CHECK_THROWS_WITH(nn::InstanceNorm2d(3)(randn({1, 3, 1, 1})), Catch::Contains("more than 1 spatial element"));
    CHECK_THROWS_WITH(nn::GroupNorm(3, 4), Catch::Contains("divisible"));
    CHECK_THROWS_WITH(nn::GroupNorm(2, 4)(randn({2, 5, 3})), Catch::Contains("divisible by num_groups"));
    CHECK_THROWS_WITH(F::group_norm(randn({2, 4}), 0), Catch::Contains("num_groups must be positive"));
    CHECK_THROWS_WITH(F::group_norm(randn({2, 4}), 2, ones({3})), Catch::Contains("weight should contain 4"));
    CHECK_THROWS_WITH(F::batch_norm(randn({2, 3}), {}, {}), Catch::Contains("required"));
    CHECK_THROWS_WITH(F::batch_norm(randn({2, 3}), zeros({3}), {}, {}, {}, true),
                      Catch::Contains("both defined or both undefined"));
    CHECK_THROWS_WITH(F::batch_norm(randn({2, 3}), zeros({4}), ones({4})), Catch::Contains("running_mean should contain 3"));
    CHECK_THROWS_WITH(F::batch_norm(randn({3}), {}, {}, {}, {}, true), Catch::Contains("at least 2 dimensions"));
    CHECK_THROWS_WITH(F::batch_norm(Tensor(), {}, {}, {}, {}, true), Catch::Contains("undefined"));
    CHECK_THROWS_WITH(F::batch_norm(randn({2, 3}), {}, {}, {}, {}, true, 0.1, std::nan("")), Catch::Contains("eps"));
    // An empty batch normalizes nothing and moves nothing (PyTorch).
    Tensor rm = zeros({3}), rv = ones({3});
    CHECK(F::batch_norm(randn({0, 3}), rm, rv, ones({3}), zeros({3}), true).sizes() == int_list{0, 3});
    CHECK(rm.abs().sum().item<double>() == 0.0);
}

TEST_CASE("capture: a function writing into a closed-over tensor is refused before the write", "[capture][norm]") {
    Tensor rm = zeros({3}), rv = ones({3});
    const Tensor x = randn({4, 3});
    const auto f = [&](const Tensor& a) { return F::batch_norm(a, rm, rv, {}, {}, true); };
    CHECK_THROWS_WITH(capture::trace(f, x), Catch::Contains("neither one of its inputs nor made by it"));
    CHECK_THROWS_WITH(jit::script(f)(x), Catch::Contains("neither one of its inputs nor made by it"));
    CHECK(rm.abs().sum().item<double>() == 0.0);  // refused before anything was written
    Tensor counter = zeros({}, dtype::int64);
    CHECK_THROWS_WITH(capture::trace([&](const Tensor& a) { counter.add_(1); return a * 2.0; }, x),
                      Catch::Contains("closed-over"));
    CHECK(counter.item<std::int64_t>() == 0);
    // Passed as inputs, the running statistics are written back on every call, as eagerly.
    Tensor rm2 = zeros({3}), rv2 = ones({3});
    auto g = capture::trace([](const Tensor& a, Tensor m, Tensor v) { return F::batch_norm(a, m, v, {}, {}, true); },
                            x, rm2, rv2);
    for (int i = 0; i < 3; ++i) (void)g(x, rm2, rv2);
    for (int i = 0; i < 3; ++i) (void)F::batch_norm(x, rm, rv, {}, {}, true);
    CHECK(equal(rm2, rm));
    CHECK(equal(rv2, rv));
    // Memory the function makes itself may be written.
    auto h = capture::trace([](const Tensor& a) {
        Tensor acc = zeros({3});
        acc.add_(a.sum({0}));
        return acc;
    }, x);
    CHECK(allclose(h(x)[0], x.sum({0})));
}

TEST_CASE("BatchNorm under nn::script: one capture serves every batch size, running statistics as eager",
          "[nn][norm][jit]") {
    manual_seed(3);
    auto scripted = std::make_shared<nn::BatchNorm1d>(3);
    auto eager = std::make_shared<nn::BatchNorm1d>(3);
    auto s = nn::script(scripted);
    for (const std::int64_t n : {4, 6, 5, 7, 2, 9}) {
        const Tensor x = randn({n, 3});
        CHECK(equal(s(x), (*eager)(x)));
        CHECK(equal(scripted->running_var, eager->running_var));  // n / (n - 1) of each batch
    }
    CHECK(scripted->num_batches_tracked.item<std::int64_t>() == 6);
    // Eval mode reads the statistics training left.
    scripted->eval();
    eager->eval();
    const Tensor x = randn({3, 3});
    CHECK(equal(s(x), (*eager)(x)));
    CHECK(s.num_modes() == 2);
}
