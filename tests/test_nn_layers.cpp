// graft::nn's Conv2d, MaxPool2d, AvgPool2d, LayerNorm, Embedding and Dropout modules: their
// parameters and PyTorch's initializations (bounds from the fans, written here), forwards
// against the functions and hand formulas, gradients, modes and bad arguments.
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>

#include <graft/graft.hpp>

using namespace graft;
namespace F = graft::nn::functional;

TEST_CASE("nn::Conv2d: parameters, PyTorch's initialization bounds, forward, errors", "[nn]") {
    manual_seed(7);
    auto conv = std::make_shared<nn::Conv2d>(4, 6, nn::functional::int_pair{3, 2}, 1, 1, 1, 2);
    REQUIRE(conv->weight.sizes() == int_list{6, 2, 3, 2});
    REQUIRE(conv->bias.sizes() == int_list{6});
    const auto named = conv->named_parameters();
    REQUIRE(named.size() == 2);
    CHECK(named[0].first == "weight");
    CHECK(named[1].first == "bias");
    // kaiming_uniform_(a = sqrt(5)): bound = sqrt(6 / ((1 + a^2) fan_in)) = 1 / sqrt(fan_in);
    // the bias bound is the same 1 / sqrt(fan_in), fan_in = in / groups * kh * kw = 12.
    const double bound = 1.0 / std::sqrt(12.0);
    CHECK(conv->weight.abs().amax().item<double>() <= bound);
    CHECK(conv->weight.abs().amax().item<double>() > 0.5 * bound);  // spread over the range
    CHECK(conv->bias.abs().amax().item<double>() <= bound);
    const Tensor x = randn({2, 4, 5, 5});
    const Tensor y = (*conv)(x);
    CHECK(y.sizes() == int_list{2, 6, 5, 6});
    CHECK(allclose(y, F::conv2d(x, conv->weight, conv->bias, 1, 1, 1, 2)));
    y.sum().backward();
    CHECK(conv->weight.grad().sizes() == conv->weight.sizes());
    CHECK(conv->bias.grad().defined());
    // "same" keeps the size; no bias.
    auto same = std::make_shared<nn::Conv2d>(3, 2, 3, 1, "same", 1, 1, false);
    CHECK(!same->bias.defined());
    CHECK((*same)(randn({1, 3, 7, 4})).sizes() == int_list{1, 2, 7, 4});
    CHECK_THROWS_WITH(nn::Conv2d(3, 2, 3, 2, "same"), Catch::Contains("strided"));
    CHECK_THROWS_WITH(nn::Conv2d(3, 2, 3, 1, "full"), Catch::Contains("Invalid padding string"));
    CHECK_THROWS_WITH(nn::Conv2d(3, 4, 3, 1, 0, 1, 2), Catch::Contains("divisible by groups"));
    CHECK_THROWS_WITH(nn::Conv2d(0, 4, 3), Catch::Contains("in_channels"));
    CHECK_THROWS_WITH(nn::Conv2d(2, 4, 3, 1, 0, 1, 1, true, dtype::int64), Catch::Contains("floating-point"));
    CHECK_THROWS_AS((*conv)(randn({2, 3, 5, 5})), graft::error);  // wrong channel count
}

TEST_CASE("nn::MaxPool2d and AvgPool2d: stride defaults to the kernel, forwards as the functions", "[nn]") {
    const Tensor x = randn({2, 3, 6, 7});
    nn::MaxPool2d mp(2);
    CHECK(mp.stride.h == 2);
    CHECK(mp.stride.w == 2);
    CHECK(allclose(mp(x), F::max_pool2d(x, 2)));
    CHECK(mp(x).sizes() == int_list{2, 3, 3, 3});
    nn::MaxPool2d mp2(3, 1, 1, 1, true);
    CHECK(allclose(mp2(x), F::max_pool2d(x, 3, 1, 1, 1, true)));
    nn::AvgPool2d ap(F::int_pair{2, 3});
    // Window (0, 0) of channel (0, 0): the mean of x[0, 0, 0:2, 0:3], written out.
    double s = 0;
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j) s += x[0][0][i][j].item<double>();
    CHECK(ap(x)[0][0][0][0].item<double>() == Approx(s / 6).epsilon(1e-6));
    CHECK(ap(x).sizes() == int_list{2, 3, 3, 2});
}

TEST_CASE("nn::LayerNorm: ones and zeros, the normalization written out, no affine", "[nn]") {
    nn::LayerNorm ln({4});
    CHECK(allclose(ln.weight, ones({4})));
    CHECK(allclose(ln.bias, zeros({4})));
    const Tensor x = tensor<float>({1, 2, 3, 4, -1, 0, 1, 5}, {2, 4});
    const Tensor y = ln(x);
    // Row 0: mean 2.5, biased variance 1.25.
    CHECK(y[0][0].item<double>() == Approx((1 - 2.5) / std::sqrt(1.25 + 1e-5)).epsilon(1e-5));
    CHECK(y[1][3].item<double>() == Approx((5 - 1.25) / std::sqrt(5.1875 + 1e-5)).epsilon(1e-5));
    nn::LayerNorm plain({4}, 1e-5, false);
    CHECK(!plain.weight.defined());
    CHECK(plain.parameters().empty());
    CHECK(allclose(plain(x), y));
    CHECK_THROWS_AS(nn::LayerNorm({0}), graft::error);
    CHECK_THROWS_AS(ln(randn({2, 5})), graft::error);
    // nn.LayerNorm(4): an integer is one normalized dimension, also through make_shared.
    const auto from_int = std::make_shared<nn::LayerNorm>(4);
    CHECK(from_int->normalized_shape == int_list{4});
    CHECK(allclose((*from_int)(x), y));
    CHECK_THROWS_AS(nn::LayerNorm(0), graft::error);
}

TEST_CASE("nn::Embedding: N(0, 1) rows, a zero padding row without gradient, errors", "[nn]") {
    manual_seed(3);
    nn::Embedding emb(50, 40, -1);
    REQUIRE(emb.padding_idx);
    CHECK(*emb.padding_idx == 49);
    CHECK(emb.weight[49].abs().sum().item<double>() == 0.0);
    // 49 * 40 draws of N(0, 1): the sample mean within 6 standard errors of 0.
    const double mean = emb.weight.narrow(0, 0, 49).mean().item<double>();
    CHECK(std::abs(mean) < 6.0 / std::sqrt(49.0 * 40.0));
    const Tensor idx = tensor<std::int64_t>({0, 49, 3, 49}, {2, 2}, dtype::int64);
    const Tensor y = emb(idx);
    CHECK(y.sizes() == int_list{2, 2, 40});
    CHECK(allclose(y[0][0], emb.weight[0]));
    y.sum().backward();
    CHECK(emb.weight.grad()[49].abs().sum().item<double>() == 0.0);
    CHECK(emb.weight.grad()[0].sum().item<double>() == Approx(40.0));
    CHECK_THROWS_WITH(nn::Embedding(5, 2, 5), Catch::Contains("Padding_idx"));
    CHECK_THROWS_WITH(nn::Embedding(5, 2, -6), Catch::Contains("Padding_idx"));
    CHECK_THROWS_AS(emb(tensor<std::int64_t>({50}, {1}, dtype::int64)), graft::error);
}

TEST_CASE("nn::Dropout: train zeroes and rescales, eval is the identity, p checked", "[nn]") {
    manual_seed(11);
    auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Dropout>(0.25));
    const Tensor x = ones({4000});
    const Tensor y = (*model)(x);
    // Kept elements are 1 / (1 - p); the kept fraction is within 6 binomial standard deviations.
    const double kept = (y > 0.0).to(dtype::float64).mean().item<double>();
    CHECK(std::abs(kept - 0.75) < 6.0 * std::sqrt(0.75 * 0.25 / 4000.0));
    CHECK(y.amax().item<double>() == Approx(1.0 / 0.75));
    model->eval();
    CHECK(allclose((*model)(x), x));
    CHECK_THROWS_WITH(nn::Dropout(1.5), Catch::Contains("between 0 and 1"));
}

TEST_CASE("nn layers: a small CNN trains one step and prints as PyTorch", "[nn]") {
    manual_seed(5);
    auto cnn = std::make_shared<nn::Sequential>(
        std::make_shared<nn::Conv2d>(1, 4, 3, 1, 1), std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2),
        std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(4 * 4 * 4, 10));
    const auto sd = cnn->state_dict();
    REQUIRE(sd.size() == 4);
    CHECK(sd[0].first == "0.weight");
    CHECK(sd[3].first == "4.bias");
    const Tensor x = randn({8, 1, 8, 8});
    const Tensor target = tensor<std::int64_t>({0, 1, 2, 3, 4, 5, 6, 7}, {8}, dtype::int64);
    optim::SGD opt(cnn->parameters(), 0.1);
    const double before = F::cross_entropy((*cnn)(x), target).item<double>();
    for (int i = 0; i < 20; ++i) {
        opt.zero_grad();
        F::cross_entropy((*cnn)(x), target).backward();
        opt.step();
    }
    CHECK(F::cross_entropy((*cnn)(x), target).item<double>() < before);
}
