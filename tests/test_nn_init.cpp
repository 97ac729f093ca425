// nn::init against PyTorch's formulas written here: calculate_gain, fan_in/fan_out, the bounds
// and standard deviations of xavier_* and kaiming_*, sample statistics within limits derived
// from the sample size, reproducibility with a seed, in-place under no_grad, errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <graft/nn.hpp>

using namespace graft;
namespace init = graft::nn::init;

namespace {

void check_error(const std::function<void()>& f, const std::string& part) {
    try {
        f();
        FAIL("no graft::error; expected one containing: " << part);
    } catch (const graft::error& e) {
        INFO(e.what());
        CHECK(std::string(e.what()).find(part) != std::string::npos);
    }
}

struct stats {
    double min, max, mean, var;
    std::size_t n;
};

stats stats_of(const Tensor& t) {
    const auto v = t.to(dtype::float64).contiguous().to_vector<double>();
    stats s{v[0], v[0], 0, 0, v.size()};
    for (double x : v) {
        s.min = std::min(s.min, x);
        s.max = std::max(s.max, x);
        s.mean += x;
    }
    s.mean /= double(v.size());
    for (double x : v) s.var += (x - s.mean) * (x - s.mean);
    s.var /= double(v.size() - 1);
    return s;
}

/// Samples of U(-a, a): inside the bounds, near both ends, mean and variance (a^2 / 3) within
/// 6 standard errors (the variance of the sample variance of U is (m4 - s^4) / n with
/// m4 = a^4 / 5).
void check_uniform(const Tensor& t, double lo, double hi) {
    const stats s = stats_of(t);
    const double n = double(s.n), w = hi - lo;
    CHECK(s.min >= lo);
    CHECK(s.max <= hi);
    CHECK(s.min < lo + 0.01 * w);
    CHECK(s.max > hi - 0.01 * w);
    const double var = w * w / 12.0;
    CHECK(std::abs(s.mean - (lo + hi) / 2) < 6.0 * std::sqrt(var / n));
    const double m4 = std::pow(w / 2, 4) / 5.0;
    CHECK(std::abs(s.var - var) < 6.0 * std::sqrt((m4 - var * var) / n));
}

/// Samples of N(mean, std^2): sample mean within 6 std / sqrt(n), sample variance within 6
/// standard errors (sqrt(2 / (n - 1)) std^2).
void check_normal(const Tensor& t, double mean, double std) {
    const stats s = stats_of(t);
    const double n = double(s.n);
    CHECK(std::abs(s.mean - mean) < 6.0 * std / std::sqrt(n));
    CHECK(std::abs(s.var - std * std) < 6.0 * std * std * std::sqrt(2.0 / (n - 1)));
}

}  // namespace

TEST_CASE("nn::init::calculate_gain and fans: PyTorch's table and rules", "[nn][init]") {
    CHECK(init::calculate_gain("linear") == 1.0);
    CHECK(init::calculate_gain("conv2d") == 1.0);
    CHECK(init::calculate_gain("conv_transpose3d") == 1.0);
    CHECK(init::calculate_gain("sigmoid") == 1.0);
    CHECK(init::calculate_gain("tanh") == Approx(5.0 / 3.0));
    CHECK(init::calculate_gain("relu") == Approx(std::sqrt(2.0)));
    CHECK(init::calculate_gain("selu") == Approx(0.75));
    CHECK(init::calculate_gain("leaky_relu") == Approx(std::sqrt(2.0 / (1.0 + 0.01 * 0.01))));
    CHECK(init::calculate_gain("leaky_relu", std::sqrt(5.0)) == Approx(std::sqrt(2.0 / 6.0)));
    check_error([] { (void)init::calculate_gain("swish"); }, "unsupported nonlinearity swish");

    CHECK(init::calculate_fan_in_and_fan_out(zeros({7, 5})) == std::pair<std::int64_t, std::int64_t>{5, 7});
    // A conv weight [out, in, kh, kw]: both fans times the receptive field kh * kw.
    CHECK(init::calculate_fan_in_and_fan_out(zeros({8, 3, 5, 2})) ==
          std::pair<std::int64_t, std::int64_t>{3 * 10, 8 * 10});
    check_error([] { (void)init::calculate_fan_in_and_fan_out(zeros({4})); }, "fewer than 2 dimensions");
}

TEST_CASE("nn::init::uniform_, normal_, constant_: in place, statistics, errors", "[nn][init]") {
    generator g(1);
    const Tensor u = zeros({200, 100}).requires_grad_();
    const Tensor r = init::uniform_(u, -2.0, 3.0, g);
    CHECK(r.is_same(u));
    CHECK(u.is_leaf());
    CHECK(u.grad_fn() == nullptr);
    CHECK(u.requires_grad());
    check_uniform(u, -2.0, 3.0);
    const Tensor d = zeros({100, 200}, dtype::float64);
    init::normal_(d, 0.5, 2.0, g);
    check_normal(d, 0.5, 2.0);
    // A strided view is filled in place, its base elsewhere untouched.
    const Tensor base = zeros({4, 6});
    init::constant_(base.narrow(1, 2, 3), 7.0);
    const auto bv = base.to_vector<float>();
    for (std::size_t k = 0; k < bv.size(); ++k) CHECK(bv[k] == ((k % 6 >= 2 && k % 6 < 5) ? 7.0f : 0.0f));
    init::ones_(base);
    for (float v : base.to_vector<float>()) CHECK(v == 1.0f);
    init::zeros_(base);
    for (float v : base.to_vector<float>()) CHECK(v == 0.0f);

    check_error([&] { init::uniform_(u, 1.0, 0.0); }, "from=1 > to=0");
    check_error([&] { init::normal_(u, 0.0, -1.0); }, "std >= 0.0");
    check_error([] { init::uniform_(zeros({2}, dtype::int64)); }, "floating-point");
    check_error([] { init::ones_(Tensor{}); }, "undefined");
}

TEST_CASE("nn::init::xavier_* and kaiming_*: PyTorch's bounds and standard deviations", "[nn][init]") {
    generator g(2);
    const std::int64_t out = 96, in = 64, k = 3;  // a conv weight: fans times 9
    const double fan_in = double(in * k * k), fan_out = double(out * k * k);
    const Tensor w = empty({out, in, k, k});

    init::xavier_uniform_(w, 2.0, g);
    const double xa = 2.0 * std::sqrt(6.0 / (fan_in + fan_out));
    check_uniform(w, -xa, xa);
    init::xavier_normal_(w, 0.5, g);
    check_normal(w, 0.0, 0.5 * std::sqrt(2.0 / (fan_in + fan_out)));

    // kaiming_uniform_: bound = gain * sqrt(3 / fan), gain from (nonlinearity, a).
    init::kaiming_uniform_(w, 0.0, "fan_in", "relu", g);
    check_uniform(w, -std::sqrt(2.0) * std::sqrt(3.0 / fan_in), std::sqrt(2.0) * std::sqrt(3.0 / fan_in));
    init::kaiming_uniform_(w, 0.3, "fan_out", "leaky_relu", g);
    const double gl = std::sqrt(2.0 / (1.0 + 0.09));
    check_uniform(w, -gl * std::sqrt(3.0 / fan_out), gl * std::sqrt(3.0 / fan_out));
    init::kaiming_uniform_(w, 0.0, "fan_in", "leaky_relu", g);  // the defaults: a = 0 gives sqrt(2)
    check_uniform(w, -std::sqrt(6.0 / fan_in), std::sqrt(6.0 / fan_in));
    // kaiming_normal_: std = gain / sqrt(fan).
    init::kaiming_normal_(w, 0.0, "fan_out", "relu", g);
    check_normal(w, 0.0, std::sqrt(2.0) / std::sqrt(fan_out));
    init::kaiming_normal_(w, 0.0, "fan_in", "tanh", g);
    check_normal(w, 0.0, (5.0 / 3.0) / std::sqrt(fan_in));

    // Linear's reset_parameters: kaiming_uniform_(a = sqrt(5)) is U(+-1/sqrt(fan_in)).
    generator gl1(3);
    nn::Linear lin(400, 300, true, dtype::float32, gl1);
    check_uniform(lin.weight, -1.0 / std::sqrt(400.0), 1.0 / std::sqrt(400.0));
    const stats bs = stats_of(lin.bias);
    CHECK(bs.min >= -1.0 / std::sqrt(400.0));
    CHECK(bs.max <= 1.0 / std::sqrt(400.0));

    init::kaiming_uniform_(zeros({0, 4}));  // empty: nothing to do (PyTorch warns)
    check_error([] { init::kaiming_uniform_(zeros({4, 4}), 0.0, "fan_avg"); }, "mode fan_avg not supported");
    check_error([] { init::kaiming_normal_(zeros({4, 4}), 0.0, "fan_in", "swish"); }, "unsupported nonlinearity");
    check_error([] { init::xavier_uniform_(zeros({4})); }, "fewer than 2 dimensions");
}

TEST_CASE("nn::init: a seed reproduces the values, in float32 and float64 alike", "[nn][init]") {
    const auto draw = [](std::uint64_t seed, dtype type) {
        generator g(seed);
        Tensor t = empty({8, 5}, type);
        init::xavier_normal_(t, 1.0, g);
        return t.to(dtype::float64).to_vector<double>();
    };
    CHECK(draw(5, dtype::float64) == draw(5, dtype::float64));
    CHECK(draw(5, dtype::float64) != draw(6, dtype::float64));
    // float32 holds the float64 draw rounded.
    const auto d = draw(5, dtype::float64), f = draw(5, dtype::float32);
    for (std::size_t i = 0; i < d.size(); ++i) CHECK(f[i] == double(static_cast<float>(d[i])));
    // The default generator through manual_seed.
    manual_seed(9);
    const Tensor a = init::uniform_(empty({10}));
    manual_seed(9);
    const Tensor b = init::uniform_(empty({10}));
    CHECK(a.to_vector<float>() == b.to_vector<float>());
    manual_seed(9);
    nn::Linear l1(6, 3);
    manual_seed(9);
    nn::Linear l2(6, 3);
    CHECK(l1.weight.to_vector<float>() == l2.weight.to_vector<float>());
    CHECK(l1.bias.to_vector<float>() == l2.bias.to_vector<float>());
}
