// graft::nn::functional (issue 16): activations, linear and the losses against values worked
// out by hand from PyTorch's formulas and against scalar reference loops, every reduction,
// ignore_index, class weights, label smoothing and probability targets, gradcheck /
// gradgradcheck in float64, errors, and one capture::aot and jit::script round trip.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <graft/graft.hpp>

#include "grad_test_common.hpp"

using namespace graft;
using gt::leaf;
using gt::check_grads;
namespace F = graft::nn::functional;
using F::reduction;
using autograd::gradcheck;
using autograd::gradgradcheck;
using autograd::tensor_list;

namespace {

std::vector<double> dvec(const Tensor& t) { return t.to_vector<double>(); }
Tensor d64(std::initializer_list<double> v) { return tensor(v, {-1}, dtype::float64); }
Tensor i64(std::initializer_list<std::int64_t> v) { return tensor(v); }
double val(const Tensor& t) { return t.item<double>(); }

void check_error(const std::function<void()>& f, const std::string& part) {
    try {
        f();
        FAIL("no graft::error; expected one containing: " << part);
    } catch (const graft::error& e) {
        INFO(e.what());
        CHECK(std::string(e.what()).find(part) != std::string::npos);
    }
}

/// Scalar reference of nll_loss / cross_entropy with class indices over [N, C] rows `lp`
/// (log-probabilities), PyTorch's formulas: l_n = -w[t_n] lp[n][t_n] (0 if ignored),
/// smooth_n = -sum_c w_c lp[n][c] (0 if ignored), loss = (1 - eps) l + eps / C smooth, "mean"
/// divides both sums by sum of w[t_n] over counted n.
std::vector<double> ref_ce_rows(const std::vector<std::vector<double>>& lp, const std::vector<std::int64_t>& t,
                                const std::vector<double>& w, std::int64_t ignore, double eps, reduction how) {
    const std::size_t n = lp.size(), c = lp[0].size();
    std::vector<double> nll(n, 0.0), smooth(n, 0.0);
    double wsum = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        if (t[i] == ignore) continue;
        const auto k = static_cast<std::size_t>(t[i]);
        const double wk = w.empty() ? 1.0 : w[k];
        nll[i] = -wk * lp[i][k];
        for (std::size_t j = 0; j < c; ++j) smooth[i] -= (w.empty() ? 1.0 : w[j]) * lp[i][j];
        wsum += wk;
    }
    std::vector<double> out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = (1 - eps) * nll[i] + eps / static_cast<double>(c) * smooth[i];
    if (how == reduction::none) return out;
    double s = 0.0;
    for (double v : out) s += v;
    return {how == reduction::sum ? s : s / wsum};
}

std::vector<std::vector<double>> log_softmax_rows(const Tensor& x) {  // x [N, C], a scalar loop
    const auto v = dvec(x);
    const auto n = static_cast<std::size_t>(x.size(0)), c = static_cast<std::size_t>(x.size(1));
    std::vector<std::vector<double>> out(n, std::vector<double>(c));
    for (std::size_t i = 0; i < n; ++i) {
        double m = -INFINITY, s = 0.0;
        for (std::size_t j = 0; j < c; ++j) m = std::max(m, v[i * c + j]);
        for (std::size_t j = 0; j < c; ++j) s += std::exp(v[i * c + j] - m);
        for (std::size_t j = 0; j < c; ++j) out[i][j] = v[i * c + j] - m - std::log(s);
    }
    return out;
}

bool near(const std::vector<double>& a, const std::vector<double>& b, double tol = 1e-12) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::abs(a[i] - b[i]) > tol * (1 + std::abs(b[i]))) return false;
    return true;
}

}  // namespace

TEST_CASE("linear: x @ w^T + b with any leading dims", "[nn]") {
    const Tensor x = d64({1.0, 2.0, 3.0, -1.0, 0.0, 1.0}).view({2, 3});
    const Tensor w = d64({1.0, 0.0, 1.0, 0.5, -1.0, 2.0}).view({2, 3});
    const Tensor b = d64({10.0, 20.0});
    // row 0: [1+3, 0.5-2+6] = [4, 4.5]; row 1: [-1+1, -0.5+2] = [0, 1.5]
    CHECK(near(dvec(F::linear(x, w)), {4.0, 4.5, 0.0, 1.5}));
    CHECK(near(dvec(F::linear(x, w, b)), {14.0, 24.5, 10.0, 21.5}));
    const Tensor x3 = x.view({2, 1, 3}).expand({2, 2, 3}).contiguous();
    const Tensor y3 = F::linear(x3, w, b);
    CHECK(y3.sizes() == int_list{2, 2, 2});
    CHECK(near(dvec(y3), {14.0, 24.5, 14.0, 24.5, 10.0, 21.5, 10.0, 21.5}));
    check_error([&] { (void)F::linear(x, w.t()); }, "linear");
    check_error([&] { (void)F::linear(x, w, d64({1.0, 2.0, 3.0})); }, "bias");
    check_grads([](const tensor_list& in) { return tensor_list{F::linear(in[0], in[1], in[2])}; },
                {leaf({2, 3, 4}, 1), leaf({5, 4}, 2), leaf({5}, 3)});
}

TEST_CASE("activations: values from their formulas", "[nn]") {
    const std::vector<double> xs = {-30.0, -2.0, -0.5, 0.0, 0.25, 1.5, 30.0};
    const Tensor x = from_vector(xs);
    const auto silu = dvec(F::silu(x)), sp = dvec(F::softplus(x)), sp2 = dvec(F::softplus(x, 2.0, 1.0)),
               lr = dvec(F::leaky_relu(x)), lr2 = dvec(F::leaky_relu(x, 0.2));
    for (std::size_t i = 0; i < xs.size(); ++i) {
        const double v = xs[i];
        CHECK(silu[i] == Approx(v / (1 + std::exp(-v))).margin(1e-15));  // silu = x sigmoid(x)
        // softplus = log1p(exp(beta x)) / beta, x itself where beta x > threshold
        CHECK(sp[i] == Approx(v > 20 ? v : std::log1p(std::exp(v))).margin(1e-15));
        CHECK(sp2[i] == Approx(2 * v > 1 ? v : std::log1p(std::exp(2 * v)) / 2).margin(1e-15));
        CHECK(lr[i] == Approx(v > 0 ? v : 0.01 * v).margin(1e-15));
        CHECK(lr2[i] == Approx(v > 0 ? v : 0.2 * v).margin(1e-15));
    }
    CHECK(dvec(F::softplus(d64({1000.0, -1000.0})))[0] == 1000.0);  // no overflow
    CHECK(dvec(F::softplus(d64({-1000.0})))[0] == 0.0);
    CHECK(equal(F::relu(x), relu(x)));
    CHECK(equal(F::gelu(x, "tanh"), gelu(x, "tanh")));
    CHECK(equal(F::sigmoid(x), sigmoid(x)));
    CHECK(equal(F::tanh(x), tanh(x)));
    const Tensor m = x.view({1, 7});
    CHECK(equal(F::softmax(m, 1), softmax(m, 1)));
    CHECK(equal(F::log_softmax(m, -1), log_softmax(m, 1)));
    // softplus's gradient is sigmoid(beta x) (1 below the threshold's switch), also at 0
    Tensor z = d64({0.0, -3.0, 50.0}).requires_grad_();
    F::softplus(z).sum().backward();
    CHECK(near(dvec(z.grad()), {0.5, 1 / (1 + std::exp(3.0)), 1.0}));
    check_error([] { (void)F::softplus(i64({1, 2})); }, "floating");
}

TEST_CASE("activations: gradcheck and gradgradcheck in float64", "[nn]") {
    using fn = std::function<Tensor(const Tensor&)>;
    const std::vector<fn> fns = {
        [](const Tensor& t) { return F::relu(t); },
        [](const Tensor& t) { return F::gelu(t); },
        [](const Tensor& t) { return F::gelu(t, "tanh"); },
        [](const Tensor& t) { return F::silu(t); },
        [](const Tensor& t) { return F::softplus(t); },
        [](const Tensor& t) { return F::softplus(t, 2.0, 1.3); },
        [](const Tensor& t) { return F::leaky_relu(t, 0.1); },
        [](const Tensor& t) { return F::sigmoid(t); },
        [](const Tensor& t) { return F::tanh(t); },
        [](const Tensor& t) { return F::softmax(t, 1); },
        [](const Tensor& t) { return F::log_softmax(t, 0); },
    };
    std::uint64_t seed = 10;
    for (const auto& f : fns)
        check_grads([&](const tensor_list& in) { return tensor_list{f(in[0])}; }, {leaf({3, 4}, seed++)});
}

TEST_CASE("mse, l1 and smooth_l1 losses: hand values, reductions, gradients", "[nn]") {
    const Tensor a = d64({1.0, 2.0, 0.5}), b = d64({3.0, 5.0, 1.0});
    // d = [-2, -3, -0.5]: squares 4, 9, 0.25; absolute 2, 3, 0.5
    CHECK(near(dvec(F::mse_loss(a, b, reduction::none)), {4.0, 9.0, 0.25}));
    CHECK(val(F::mse_loss(a, b)) == Approx(13.25 / 3));
    CHECK(val(F::mse_loss(a, b, reduction::sum)) == Approx(13.25));
    CHECK(near(dvec(F::l1_loss(a, b, reduction::none)), {2.0, 3.0, 0.5}));
    CHECK(val(F::l1_loss(a, b)) == Approx(5.5 / 3));
    CHECK(val(F::l1_loss(a, b, reduction::sum)) == Approx(5.5));
    // smooth_l1, beta 1: |d| - 0.5 for |d| >= 1, 0.5 d^2 below: 1.5, 2.5, 0.125
    CHECK(near(dvec(F::smooth_l1_loss(a, b, reduction::none)), {1.5, 2.5, 0.125}));
    CHECK(val(F::smooth_l1_loss(a, b)) == Approx(4.125 / 3));
    // beta 2.5: 0.5 * 4 / 2.5 = 0.8; 3 - 1.25 = 1.75; 0.5 * 0.25 / 2.5 = 0.05
    CHECK(near(dvec(F::smooth_l1_loss(a, b, reduction::none, 2.5)), {0.8, 1.75, 0.05}));
    CHECK(val(F::smooth_l1_loss(a, b, reduction::sum, 2.5)) == Approx(2.6));
    CHECK(equal(F::smooth_l1_loss(a, b, reduction::none, 0.0), F::l1_loss(a, b, reduction::none)));
    check_error([&] { (void)F::mse_loss(a, b.view({3, 1})); }, "same as input size");
    check_error([&] { (void)F::l1_loss(a, i64({1, 2, 3})); }, "floating");
    check_error([&] { (void)F::smooth_l1_loss(a, b, reduction::mean, -1.0); }, "negative values for beta");
    for (reduction how : {reduction::none, reduction::mean, reduction::sum}) {
        check_grads([&](const tensor_list& in) { return tensor_list{F::mse_loss(in[0], in[1], how)}; },
                    {leaf({3, 4}, 20), leaf({3, 4}, 21)});
        check_grads([&](const tensor_list& in) { return tensor_list{F::l1_loss(in[0], in[1], how)}; },
                    {leaf({3, 4}, 22), leaf({3, 4}, 23)});
        check_grads([&](const tensor_list& in) { return tensor_list{F::smooth_l1_loss(in[0], in[1], how, 0.7)}; },
                    {leaf({3, 4}, 24), leaf({3, 4}, 25)});
    }
}

TEST_CASE("binary_cross_entropy_with_logits: formula, weights, pos_weight, stability", "[nn]") {
    // loss = -w [p t log s(x) + (1 - t) log(1 - s(x))], s = sigmoid
    const std::vector<double> xs = {-2.0, 0.0, 0.7, 3.0}, ts = {0.0, 1.0, 0.3, 1.0}, ws = {1.0, 2.0, 0.5, 1.5};
    const std::vector<double> ps = {1.0, 3.0, 0.5, 2.0};
    const Tensor x = from_vector(xs).view({2, 2}), t = from_vector(ts).view({2, 2}), w = from_vector(ws).view({2, 2});
    const Tensor pw = d64({ps[0], ps[1]});  // along the last dim
    std::vector<double> plain, full;
    for (std::size_t i = 0; i < 4; ++i) {
        const double s = 1 / (1 + std::exp(-xs[i])), p = ps[i % 2];
        plain.push_back(-(ts[i] * std::log(s) + (1 - ts[i]) * std::log(1 - s)));
        full.push_back(-ws[i] * (p * ts[i] * std::log(s) + (1 - ts[i]) * std::log(1 - s)));
    }
    CHECK(near(dvec(F::binary_cross_entropy_with_logits(x, t, {}, reduction::none)), plain, 1e-14));
    CHECK(near(dvec(F::binary_cross_entropy_with_logits(x, t, w, reduction::none, pw)), full, 1e-14));
    double sum = 0;
    for (double v : full) sum += v;
    CHECK(val(F::binary_cross_entropy_with_logits(x, t, w, reduction::sum, pw)) == Approx(sum));
    CHECK(val(F::binary_cross_entropy_with_logits(x, t, w, reduction::mean, pw)) == Approx(sum / 4));
    // stable at large logits: x = +-800 gives log1p(exp(-800)) ~ 0, not inf or NaN
    const auto big = dvec(F::binary_cross_entropy_with_logits(d64({800.0, -800.0}), d64({1.0, 1.0}), {},
                                                              reduction::none));
    CHECK(big[0] == 0.0);
    CHECK(big[1] == 800.0);
    // the gradient in x is w (((p - 1) t + 1) s(x) - p t): at x = 0, t = 1, no weights, -0.5
    Tensor z = d64({0.0}).requires_grad_();
    F::binary_cross_entropy_with_logits(z, d64({1.0}), {}, reduction::sum).backward();
    CHECK(val(z.grad()) == Approx(-0.5));
    check_error([&] { (void)F::binary_cross_entropy_with_logits(x, t.view({4})); }, "same as input size");
    check_error([&] { (void)F::binary_cross_entropy_with_logits(x, t, d64({1.0, 2.0, 3.0})); },
                "weight of sizes [3] must broadcast");
    check_error([&] { (void)F::binary_cross_entropy_with_logits(x, t, {}, reduction::mean, d64({1.0, 2.0, 3.0})); },
                "pos_weight of sizes [3] must broadcast");
    for (reduction how : {reduction::none, reduction::mean, reduction::sum})
        check_grads(
            [&](const tensor_list& in) {
                return tensor_list{F::binary_cross_entropy_with_logits(in[0], in[1], in[2], how, in[3])};
            },
            {leaf({3, 4}, 30, -3, 3), leaf({3, 4}, 31, 0, 1), leaf({3, 4}, 32, 0.2, 2), leaf({4}, 33, 0.2, 3)});
}

TEST_CASE("binary_cross_entropy: PyTorch's formula, clamped logs, bounded gradient, errors", "[nn]") {
    // loss = -w (t max(log x, -100) + (1 - t) max(log(1 - x), -100)); PyTorch 1.13's values for
    // x = [1e-10, 0, 1, 0.5], t = [0, 0, 1, 0.3]: [log(1 - 1e-10) negated, 0, 0, 0.693...].
    const std::vector<double> xs = {1e-10, 0.0, 1.0, 0.5, 0.25, 0.9}, ts = {0.0, 0.0, 1.0, 0.3, 1.0, 0.0};
    std::vector<double> by_hand;
    for (std::size_t i = 0; i < xs.size(); ++i)
        by_hand.push_back(-(ts[i] * std::max(std::log(xs[i]), -100.0) + (1 - ts[i]) * std::max(std::log(1 - xs[i]), -100.0)));
    const Tensor x = from_vector(xs).requires_grad_(), t = from_vector(ts).requires_grad_();
    const auto loss = dvec(F::binary_cross_entropy(x, t, {}, reduction::none));
    CHECK(near(loss, by_hand, 1e-15));
    CHECK(loss[0] == 1.000000082790371e-10);  // PyTorch 1.13: log(1 - x), not log1p(-x)
    CHECK(by_hand[3] == Approx(0.5 * std::log(2.0) + 0.5 * std::log(2.0)).epsilon(1e-12));
    // Gradients: input g (x - t) / max(x (1 - x), 1e-12) (bounded at 0 and 1, where the clamped
    // logs would give 0 or inf); target -g logit(x) (PyTorch: x = 0 gives inf, x = 1 -inf).
    F::binary_cross_entropy(x, t, {}, reduction::sum).backward();
    const auto gx = dvec(x.grad()), gt_ = dvec(t.grad());
    for (std::size_t i = 0; i < xs.size(); ++i) {
        CHECK(gx[i] == Approx((xs[i] - ts[i]) / std::max(xs[i] * (1 - xs[i]), 1e-12)).epsilon(1e-14));
        if (xs[i] > 0 && xs[i] < 1) CHECK(gt_[i] == Approx(-std::log(xs[i] / (1 - xs[i]))).epsilon(1e-14));
    }
    CHECK(gx[0] == Approx(1.0));  // PyTorch 1.13 prints 1.0000
    CHECK(gt_[1] == std::numeric_limits<double>::infinity());
    CHECK(gt_[2] == -std::numeric_limits<double>::infinity());
    CHECK(x.grad_fn() == nullptr);
    CHECK(F::binary_cross_entropy(x, t, {}, reduction::none).grad_fn()->name() == std::string("BinaryCrossEntropyBackward0"));
    // Weight and reductions (PyTorch: 1.1247 for these three).
    const Tensor w = d64({2.0, 3.0});
    CHECK(val(F::binary_cross_entropy(d64({0.5, 0.25}), d64({1.0, 0.0}), w)) ==
          Approx((2.0 * std::log(2.0) - 3.0 * std::log(0.75)) / 2));
    CHECK(val(F::binary_cross_entropy(d64({0.5, 0.25}), d64({1.0, 0.0}), w, reduction::sum)) ==
          Approx(2.0 * std::log(2.0) - 3.0 * std::log(0.75)));
    CHECK(std::isnan(val(F::binary_cross_entropy(zeros({0}, dtype::float64), zeros({0}, dtype::float64)))));
    // Errors, PyTorch's: input outside [0, 1] or NaN, other sizes, other dtypes, a weight that
    // requires grad. The objects stay usable.
    check_error([] { (void)F::binary_cross_entropy(d64({1.5}), d64({0.5})); }, "between 0 and 1");
    check_error([] { (void)F::binary_cross_entropy(d64({std::nan("")}), d64({0.5})); }, "between 0 and 1");
    check_error([] { (void)F::binary_cross_entropy(d64({0.5, 0.2}), d64({0.5})); }, "same as input size");
    check_error([] { (void)F::binary_cross_entropy(d64({0.5}), d64({0.5}).to(dtype::float32)); }, "float");
    check_error([] { (void)F::binary_cross_entropy(d64({0.5}), d64({0.5}), d64({2.0}).requires_grad_()); },
                "not differentiable with respect to argument 'weight'");
    CHECK(val(F::binary_cross_entropy(d64({0.5}), d64({1.0}), {}, reduction::sum)) == Approx(std::log(2.0)));
    // First and second derivatives away from 0 and 1.
    for (reduction how : {reduction::none, reduction::mean, reduction::sum})
        check_grads([&](const tensor_list& in) { return tensor_list{F::binary_cross_entropy(in[0], in[1], {}, how)}; },
                    {leaf({3, 4}, 40, 0.05, 0.95), leaf({3, 4}, 41, 0, 1)});
}

TEST_CASE("binary_cross_entropy under capture::aot and jit::script: as eager, one op, checked each call",
          "[nn][capture][jit]") {
    const auto f = [](Tensor logits, Tensor t) {
        return F::binary_cross_entropy(sigmoid(logits), t, {}, reduction::sum);
    };
    // Saturated sigmoids (float32: sigmoid(-120) = 0, sigmoid(40) = 1) hit the bounded gradient.
    const Tensor logits = tensor({-120.0f, 40.0f, 0.5f, -1.0f}).requires_grad_();
    const Tensor t = tensor({0.0f, 1.0f, 0.25f, 1.0f});
    const Tensor eager_loss = f(logits, t);
    const Tensor eager_grad = autograd::grad({eager_loss}, {logits})[0];
    auto compiled = capture::aot(f, {logits, t});
    const Tensor aot_loss = compiled({logits, t})[0];
    CHECK(equal(aot_loss, eager_loss));
    CHECK(equal(autograd::grad({aot_loss}, {logits})[0], eager_grad));
    auto fn = jit::script(f);
    for (int i = 0; i < 3; ++i) {
        const Tensor l = fn(logits, t);
        CHECK(equal(l, eager_loss));
        CHECK(equal(autograd::grad({l}, {logits})[0], eager_grad));
    }
    const std::string text = ir::to_string(capture::trace(f, {logits, t}).graph());
    CHECK(text.find("binary_cross_entropy") != std::string::npos);
    // A probability outside [0, 1] fed to the compiled graph is refused, as eagerly.
    const auto g = [](Tensor p, Tensor q) { return F::binary_cross_entropy(p, q); };
    auto compiled_g = capture::aot(g, {tensor({0.5f}), tensor({1.0f})});
    CHECK_THROWS_AS(compiled_g({tensor({1.5f}), tensor({1.0f})}), graft::error);
}

TEST_CASE("nll_loss and cross_entropy with class indices: reference loop, weights, ignore_index, label_smoothing",
          "[nn]") {
    const Tensor logits = leaf({5, 4}, 40, -2, 2).detach();
    const Tensor target = i64({3, 0, -100, 1, 3});
    const Tensor w = d64({0.5, 2.0, 1.0, 1.5});
    const std::vector<double> wv = {0.5, 2.0, 1.0, 1.5};
    const auto lp = log_softmax_rows(logits);
    const std::vector<std::int64_t> tv = {3, 0, -100, 1, 3};
    for (reduction how : {reduction::none, reduction::mean, reduction::sum}) {
        for (bool weighted : {false, true}) {
            const Tensor wt = weighted ? w : Tensor{};
            const std::vector<double> wr = weighted ? wv : std::vector<double>{};
            CHECK(near(dvec(F::nll_loss(log_softmax(logits, 1), target, wt, -100, how)),
                       ref_ce_rows(lp, tv, wr, -100, 0.0, how)));
            for (double eps : {0.0, 0.1, 1.0}) {
                INFO("eps " << eps << " weighted " << weighted << " reduction " << static_cast<int>(how));
                CHECK(near(dvec(F::cross_entropy(logits, target, wt, -100, how, eps)),
                           ref_ce_rows(lp, tv, wr, -100, eps, how)));
            }
        }
    }
    // an ignore_index inside [0, C): those targets count for nothing
    CHECK(near(dvec(F::cross_entropy(logits, i64({3, 0, 0, 1, 3}), w, 3, reduction::mean, 0.2)),
               ref_ce_rows(lp, {3, 0, 0, 1, 3}, wv, 3, 0.2, reduction::mean)));
}

TEST_CASE("cross_entropy: hand values of PyTorch's formulas", "[nn]") {
    // logits [0, ln 3]: p = [1/4, 3/4], log p = [-ln 4, ln 3/4]
    const Tensor x = d64({0.0, std::log(3.0)});
    const Tensor t0 = scalar_tensor(std::int64_t{0});
    CHECK(val(F::cross_entropy(x, t0)) == Approx(std::log(4.0)));
    // label smoothing 0.2, C = 2: 0.8 nll + 0.2 / 2 (ln 4 - ln 3/4)
    CHECK(val(F::cross_entropy(x, t0, {}, -100, reduction::mean, 0.2)) ==
          Approx(0.8 * std::log(4.0) + 0.1 * (std::log(4.0) - std::log(0.75))));
    // probabilities y = [0.4, 0.6] smoothed by 0.2: y' = 0.8 y + 0.1 = [0.42, 0.58]
    const Tensor y = d64({0.4, 0.6});
    CHECK(val(F::cross_entropy(x, y)) == Approx(0.4 * std::log(4.0) - 0.6 * std::log(0.75)));
    CHECK(val(F::cross_entropy(x, y, {}, -100, reduction::mean, 0.2)) ==
          Approx(0.42 * std::log(4.0) - 0.58 * std::log(0.75)));
    // weights [2, 1]: -(2 * 0.4 log p0 + 1 * 0.6 log p1)
    CHECK(val(F::cross_entropy(x, y, d64({2.0, 1.0}))) == Approx(0.8 * std::log(4.0) - 0.6 * std::log(0.75)));
    // class-index mean with weights divides by the weights of the counted targets:
    // targets [1, 0] with w = [2, 1]: (1 * -log p1 + 2 * -log p0) / 3
    const Tensor xx = x.view({1, 2}).expand({2, 2}).contiguous();
    CHECK(val(F::cross_entropy(xx, i64({1, 0}), d64({2.0, 1.0}))) ==
          Approx((-std::log(0.75) + 2 * std::log(4.0)) / 3));
    // every target ignored: the mean is 0 / 0, NaN (as PyTorch)
    CHECK(std::isnan(val(F::cross_entropy(xx, i64({-100, -100})))));
}

TEST_CASE("cross_entropy with probability targets and [N, C, d] inputs: reference loops", "[nn]") {
    const Tensor x = leaf({2, 3, 4}, 50, -2, 2).detach();  // N = 2, C = 3, d = 4
    const Tensor yraw = leaf({2, 3, 4}, 51, 0.1, 1).detach();
    const Tensor y = yraw / yraw.sum({1}, true);
    const Tensor w = d64({1.0, 0.5, 2.0});
    const Tensor idx = i64({0, 2, 1, -100, 2, 2, 0, 1}).view({2, 4});
    const auto xv = dvec(x), yv = dvec(y), wv = dvec(w);
    const auto iv = idx.to_vector<std::int64_t>();
    for (double eps : {0.0, 0.3}) {
        std::vector<double> per(8, 0.0), per_idx(8, 0.0);
        double wsum = 0;
        // probabilities: l = -sum_c w_c ((1 - eps) y_c + eps / C) log p_c; indices: (1 - eps) w_t (-log p_t)
        // + eps / C (-sum_c w_c log p_c), 0 where ignored
        for (std::size_t n = 0; n < 2; ++n)
            for (std::size_t d = 0; d < 4; ++d) {
                const auto at = [&](std::size_t c) { return n * 12 + c * 4 + d; };
                const std::size_t o = n * 4 + d;
                double m = -INFINITY, s = 0, smooth = 0;
                for (std::size_t c = 0; c < 3; ++c) m = std::max(m, xv[at(c)]);
                for (std::size_t c = 0; c < 3; ++c) s += std::exp(xv[at(c)] - m);
                for (std::size_t c = 0; c < 3; ++c) {
                    const double lpc = xv[at(c)] - m - std::log(s);
                    per[o] -= wv[c] * (yv[at(c)] * (1 - eps) + eps / 3) * lpc;
                    smooth -= wv[c] * lpc;
                    if (iv[o] == static_cast<std::int64_t>(c)) per_idx[o] -= (1 - eps) * wv[c] * lpc;
                }
                if (iv[o] != -100) {
                    per_idx[o] += eps / 3 * smooth;
                    wsum += wv[static_cast<std::size_t>(iv[o])];
                }
            }
        double total = 0, total_idx = 0;
        for (double v : per) total += v;
        for (double v : per_idx) total_idx += v;
        INFO("eps " << eps);
        CHECK(near(dvec(F::cross_entropy(x, y, w, -100, reduction::none, eps)), per));
        CHECK(val(F::cross_entropy(x, y, w, -100, reduction::sum, eps)) == Approx(total).epsilon(1e-12));
        CHECK(val(F::cross_entropy(x, y, w, -100, reduction::mean, eps)) == Approx(total / 8).epsilon(1e-12));
        CHECK(near(dvec(F::cross_entropy(x, idx, w, -100, reduction::none, eps)), per_idx));
        CHECK(val(F::cross_entropy(x, idx, w, -100, reduction::mean, eps)) == Approx(total_idx / wsum).epsilon(1e-12));
    }
}

TEST_CASE("nll_loss and cross_entropy: gradcheck and gradgradcheck in float64", "[nn]") {
    const Tensor target = i64({2, -100, 0, 1});
    const Tensor target_nd = i64({2, 1, 0, -100, 1, 1}).view({2, 3});
    for (reduction how : {reduction::none, reduction::mean, reduction::sum}) {
        check_grads([&](const tensor_list& in) { return tensor_list{F::nll_loss(in[0], target, in[1], -100, how)}; },
                    {leaf({4, 3}, 60), leaf({3}, 61, 0.2, 2)});
        check_grads(
            [&](const tensor_list& in) { return tensor_list{F::cross_entropy(in[0], target, in[1], -100, how, 0.15)}; },
            {leaf({4, 3}, 62), leaf({3}, 63, 0.2, 2)});
        check_grads(
            [&](const tensor_list& in) { return tensor_list{F::cross_entropy(in[0], target_nd, {}, -100, how, 0.1)}; },
            {leaf({2, 3, 3}, 64)});
        check_grads(
            [&](const tensor_list& in) { return tensor_list{F::cross_entropy(in[0], in[1], in[2], -100, how, 0.2)}; },
            {leaf({4, 3}, 65), leaf({4, 3}, 66, 0, 1), leaf({3}, 67, 0.2, 2)});
    }
}

TEST_CASE("nll_loss and cross_entropy: bad input gives graft::error and never reads out of bounds", "[nn]") {
    const Tensor x = leaf({3, 4}, 70).detach();
    check_error([&] { (void)F::cross_entropy(x, i64({0, 4, 1})); }, "Target 4 is out of bounds");
    check_error([&] { (void)F::nll_loss(x, i64({0, -1, 1})); }, "Target -1 is out of bounds");
    check_error([&] { (void)F::nll_loss(x, i64({0, 1000000000, 1})); }, "Target 1000000000");
    check_error([&] { (void)F::cross_entropy(x, i64({0, 3, 1}), {}, 3, reduction::mean, 0.0);
                      (void)F::cross_entropy(x, i64({0, -100, 1}), {}, 3); },
                "Target -100");
    check_error([&] { (void)F::cross_entropy(x, i64({0, 1})); }, "batch_size");
    check_error([&] { (void)F::cross_entropy(x, d64({0.0, 1.0, 2.0})); }, "int64");
    check_error([&] { (void)F::cross_entropy(x, d64({1.0, 2.0, 3.0}).view({3, 1})); }, "int64");
    check_error([&] { (void)F::cross_entropy(x, zeros({3, 4}, dtype::int64)); }, "floating-point target");
    check_error([&] { (void)F::cross_entropy(x, zeros({3, 4}, dtype::float64), {}, 0); }, "ignore_index");
    check_error([&] { (void)F::cross_entropy(x, i64({0, 1, 2}), d64({1.0, 2.0})); },
                "weight tensor should be defined");
    check_error([&] { (void)F::cross_entropy(x, i64({0, 1, 2}), {}, -100, reduction::mean, 1.5); },
                "label_smoothing");
    check_error([&] { (void)F::nll_loss(x.view({3, 2, 2}), i64({0, 1, 1})); }, "target size");
    check_error([&] { (void)F::nll_loss(i64({1, 2}).view({1, 2}), i64({0})); }, "floating");
    const Tensor zero_dim = scalar_tensor(1.0, dtype::float64);
    check_error([&] { (void)F::cross_entropy(zero_dim, scalar_tensor(std::int64_t{0})); }, "0-dim");
}

namespace {
Tensor classify(const Tensor& x, const Tensor& w, const Tensor& b) {
    const Tensor target = i64({2, 0, -100, 1, 2});
    const Tensor logits = F::gelu(F::linear(x, w, b), "tanh");
    return F::cross_entropy(logits, target, d64({1.0, 0.5, 2.0}), -100, reduction::mean, 0.1) +
           F::mse_loss(F::silu(x), F::softplus(x), reduction::sum) * 0.01;
}
}  // namespace

TEST_CASE("a linear + cross_entropy loss under capture::aot and jit::script: as eager", "[nn][capture][jit]") {
    const auto f = [](Tensor x, Tensor w, Tensor b) { return classify(x, w, b); };
    const Tensor x = leaf({5, 4}, 80), w = leaf({3, 4}, 81), b = leaf({3}, 82);
    auto a = capture::aot(f, {x, w, b});
    a.forward->lint();
    a.backward->lint();
    auto fn = jit::script(f);
    for (int i = 0; i < 4; ++i) {
        const std::uint64_t seed = 90 + 3 * static_cast<std::uint64_t>(i);
        Tensor x2 = leaf({5, 4}, seed), w2 = leaf({3, 4}, seed + 1), b2 = leaf({3}, seed + 2);
        Tensor eager = f(x2, w2, b2);
        const auto want = autograd::grad({eager}, {x2, w2, b2});
        Tensor out = a({x2, w2, b2})[0];
        CHECK(allclose(out.detach(), eager.detach(), 1e-12, 1e-12));
        const auto got = autograd::grad({out}, {x2, w2, b2});
        Tensor y = fn(x2, w2, b2);
        CHECK(allclose(y.detach(), eager.detach(), 1e-12, 1e-12));
        const auto jg = autograd::grad({y}, {x2, w2, b2});
        for (std::size_t k = 0; k < 3; ++k) {
            CHECK(allclose(got[k], want[k], 1e-12, 1e-12));
            CHECK(allclose(jg[k], want[k], 1e-12, 1e-12));
        }
    }
}

TEST_CASE("cross_entropy with targets as graph inputs: ignore_index and bad targets after capture",
          "[nn][capture][jit]") {
    // Target values are checked while tracing; later calls of the captured graph meet
    // gather's own bounds check (a graft::error, never an out-of-bounds read).
    const auto f = [](Tensor x, Tensor t) { return F::cross_entropy(x, t, {}, -100, reduction::mean, 0.1); };
    auto fn = jit::script(f);
    auto a = capture::aot(f, {leaf({3, 4}, 100), i64({0, 1, 2})});
    for (int i = 0; i < 6; ++i) {
        const Tensor x = leaf({3, 4}, 101 + static_cast<std::uint64_t>(i));
        const Tensor t = i == 4 ? i64({0, -100, 2}) : i64({0, 1, 3});
        const Tensor eager = f(x, t);
        CHECK(allclose(fn(x, t).detach(), eager.detach(), 1e-12, 1e-12));
        CHECK(allclose(a({x, t})[0].detach(), eager.detach(), 1e-12, 1e-12));
    }
    const Tensor x = leaf({3, 4}, 120), bad = i64({0, 7, 2});
    check_error([&] { (void)f(x, bad); }, "Target 7 is out of bounds");
    check_error([&] { (void)fn(x, bad); }, "index 7 is out of bounds");
    check_error([&] { (void)a({x, bad}); }, "index 7 is out of bounds");
}

TEST_CASE("losses in float32 agree with float64", "[nn]") {
    const Tensor x = leaf({4, 5}, 130).detach(), y = leaf({4, 5}, 131, 0, 1).detach();
    const Tensor t = i64({4, 0, -100, 2});
    const auto f32 = [](const Tensor& v) { return v.to(dtype::float32); };
    const auto same = [](const Tensor& a32, const Tensor& a64) {
        CHECK(a32.type() == dtype::float32);
        CHECK(allclose(a32.to(dtype::float64), a64, 1e-5, 1e-6));
    };
    same(F::cross_entropy(f32(x), t, {}, -100, reduction::none, 0.2),
         F::cross_entropy(x, t, {}, -100, reduction::none, 0.2));
    same(F::cross_entropy(f32(x), f32(y)), F::cross_entropy(x, y));
    same(F::binary_cross_entropy_with_logits(f32(x), f32(y)), F::binary_cross_entropy_with_logits(x, y));
    same(F::smooth_l1_loss(f32(x), f32(y), reduction::sum), F::smooth_l1_loss(x, y, reduction::sum));
    same(F::softplus(f32(x) * 30.0), F::softplus(x * 30.0));
    same(F::linear(f32(x), f32(y)), F::linear(x, y));
}

// ---------------------------------------------------------------- huber_loss, kl_div, cosine_similarity,
// normalize, pad: expected values computed with PyTorch 1.13 (float64; the torch expression is
// next to each), including the gradients at 0, NaN and inf.

namespace {

const double nan_ = std::numeric_limits<double>::quiet_NaN();
const double inf_ = std::numeric_limits<double>::infinity();

/// a and b agree elementwise: NaN where b is NaN, the same infinity, else within tol (relative).
bool same(const Tensor& t, const std::vector<double>& b, double tol = 1e-13) {
    const auto a = t.detach().to(dtype::float64).contiguous().to_vector<double>();
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (std::isnan(b[i]) != std::isnan(a[i])) return false;
        if (std::isnan(b[i])) continue;
        if (std::isinf(b[i]) || std::isinf(a[i])) {
            if (a[i] != b[i]) return false;
            continue;
        }
        if (std::abs(a[i] - b[i]) > tol * (1 + std::abs(b[i]))) return false;
    }
    return true;
}

Tensor d64m(std::initializer_list<double> v, int_list sizes) { return tensor(v, std::move(sizes), dtype::float64); }

}  // namespace

TEST_CASE("huber_loss: PyTorch's values, reductions, gradients at 0, NaN and inf, errors", "[nn]") {
    const Tensor a = d64({1.0, 2.0, 0.5, -1.0, 0.0}), b = d64({3.0, 5.0, 1.0, 1.5, 0.0});
    // F.huber_loss(a, b, reduction='none') (delta 1)
    CHECK(same(F::huber_loss(a, b, reduction::none), {1.5, 2.5, 0.125, 2.0, 0.0}));
    CHECK(same(F::huber_loss(a, b), {1.225}));                   // F.huber_loss(a, b)
    CHECK(same(F::huber_loss(a, b, reduction::sum), {6.125}));   // reduction='sum'
    // F.huber_loss(a, b, reduction='none', delta=2.5); delta=0.3
    CHECK(same(F::huber_loss(a, b, reduction::none, 2.5), {2.0, 4.375, 0.125, 3.125, 0.0}));
    CHECK(same(F::huber_loss(a, b, reduction::none, 0.3), {0.555, 0.855, 0.105, 0.705, 0.0}));
    CHECK(same(F::huber_loss(a, b, reduction::mean, 0.3), {0.444}));  // F.huber_loss(a, b, delta=0.3)
    // x = [0, nan, inf, -inf, 1, -1, 2], t = zeros(7): F.huber_loss(x, t, reduction='none') and
    // torch.autograd.grad(l.sum(), [x, t]): [0, nan, 1, -1, 1, -1, 1] and its negation.
    const Tensor x = d64({0.0, nan_, inf_, -inf_, 1.0, -1.0, 2.0}).requires_grad_();
    const Tensor t = zeros({7}, dtype::float64).requires_grad_();
    const Tensor l = F::huber_loss(x, t, reduction::none);
    CHECK(same(l, {0.0, nan_, inf_, inf_, 0.5, 0.5, 1.5}));
    const auto g = autograd::grad({l.sum()}, {x, t});
    CHECK(same(g[0], {0.0, nan_, 1.0, -1.0, 1.0, -1.0, 1.0}));
    CHECK(same(g[1], {0.0, nan_, -1.0, 1.0, -1.0, 1.0, -1.0}));
    // PyTorch: "huber_loss does not support non-positive values for delta."
    check_error([&] { (void)F::huber_loss(a, b, reduction::mean, 0.0); }, "non-positive values for delta");
    check_error([&] { (void)F::huber_loss(a, b, reduction::mean, -1.0); }, "non-positive values for delta");
    check_error([&] { (void)F::huber_loss(a, b, reduction::mean, nan_); }, "non-positive values for delta");
    check_error([&] { (void)F::huber_loss(a, b.view({5, 1})); }, "same as input size");
    check_error([&] { (void)F::huber_loss(i64({1, 2}), i64({1, 2})); }, "floating");
    check_error([&] { (void)F::huber_loss(a, Tensor{}); }, "undefined");
    check_error([&] { (void)F::huber_loss(a, b, reduction::batchmean); }, "batchmean is only valid for kl_div");
    for (reduction how : {reduction::none, reduction::mean, reduction::sum})
        check_grads([&](const tensor_list& in) { return tensor_list{F::huber_loss(in[0], in[1], how, 0.7)}; },
                    {leaf({3, 4}, 60), leaf({3, 4}, 61)});
}

TEST_CASE("kl_div: PyTorch's values, batchmean, log_target, xlogy at 0, special values, errors", "[nn]") {
    const Tensor inp = d64m({-1.0, -0.5, -2.0, -0.3, -1.2, -0.1}, {2, 3}).requires_grad_();
    const Tensor tg = d64m({0.2, 0.0, 0.8, 0.5, 0.25, 0.25}, {2, 3}).requires_grad_();
    // F.kl_div(inp, tg, reduction='none'): 0 where tg = 0 (xlogy(0, 0) = 0)
    CHECK(same(F::kl_div(inp, tg, reduction::none),
               {-0.12188758248682008, 0.0, 1.4214851589486324, -0.19657359027997265, -0.046573590279972654,
                -0.3215735902799726}));
    CHECK(same(F::kl_div(inp, tg), {0.12247946760364904}));                          // reduction='mean'
    CHECK(same(F::kl_div(inp, tg, reduction::sum), {0.7348768056218943}));           // 'sum'
    CHECK(same(F::kl_div(inp, tg, reduction::batchmean), {0.36743840281094714}));    // 'batchmean'
    // 'batchmean' of [1, 2, 3] divides by 1: F.kl_div(inp.view(1,2,3), tg.view(1,2,3), reduction='batchmean')
    CHECK(same(F::kl_div(inp.view({1, 2, 3}), tg.view({1, 2, 3}), reduction::batchmean), {0.7348768056218943}));
    // 0-dim: the sum. F.kl_div(torch.tensor(-1.), torch.tensor(0.5), reduction='batchmean')
    CHECK(same(F::kl_div(scalar_tensor(-1.0, dtype::float64), scalar_tensor(0.5, dtype::float64), reduction::batchmean),
               {0.15342640972002736}));
    // empty: 0 / 0 (PyTorch: nan)
    CHECK(std::isnan(val(F::kl_div(zeros({0, 3}, dtype::float64), zeros({0, 3}, dtype::float64), reduction::batchmean))));
    // torch.autograd.grad(F.kl_div(inp, tg, reduction='sum'), [inp, tg]): the target's gradient
    // is NaN at tg = 0 (xlogy's t / t in PyTorch 1.13's composite)
    auto g = autograd::grad({F::kl_div(inp, tg, reduction::sum)}, {inp, tg});
    CHECK(same(g[0], {-0.2, -0.0, -0.8, -0.5, -0.25, -0.25}));
    CHECK(same(g[1], {0.3905620875658997, nan_, 2.7768564486857903, 0.6068528194400546, 0.8137056388801094,
                      -0.2862943611198906}));
    // log_target: lt = [[-1.6, -inf, -0.2], [0, -1, 2]]; F.kl_div(inp, lt, reduction='none', log_target=True)
    const Tensor lt = d64m({-1.6, -inf_, -0.2, 0.0, -1.0, 2.0}, {2, 3}).requires_grad_();
    const Tensor l = F::kl_div(inp, lt, reduction::none, true);
    CHECK(same(l, {-0.12113791079679324, nan_, 1.4737153555403673, 0.3, 0.07357588823428846, 15.517017807754366}));
    g = autograd::grad({l.sum()}, {inp, lt});
    CHECK(same(g[0], {-0.20189651799465538, -0.0, -0.8187307530779818, -1.0, -0.36787944117144233, -7.38905609893065}));
    CHECK(same(g[1], {0.08075860719786214, nan_, 2.292446108618349, 1.3, 0.4414553294057308, 22.906073906685016}));
    // F.kl_div(inp, lt.clamp_min(-5), reduction='batchmean', log_target=True)
    CHECK(same(F::kl_div(inp, clamp_min(lt, -5.0), reduction::batchmean, true), {8.606425189618172}));
    // x = [0, nan, inf, -inf, -1, -1, -1, -inf, 0], t = [0, .5, .5, .5, nan, inf, -.5, 0, 0]:
    // F.kl_div(x, t, reduction='none') and the gradients of its sum
    const Tensor xs = d64({0.0, nan_, inf_, -inf_, -1.0, -1.0, -1.0, -inf_, 0.0}).requires_grad_();
    const Tensor ts = d64({0.0, 0.5, 0.5, 0.5, nan_, inf_, -0.5, 0.0, 0.0}).requires_grad_();
    const Tensor ls = F::kl_div(xs, ts, reduction::none);
    CHECK(same(ls, {0.0, nan_, -inf_, inf_, nan_, inf_, nan_, nan_, 0.0}));
    g = autograd::grad({ls.sum()}, {xs, ts});
    CHECK(same(g[0], {-0.0, -0.5, -0.5, -0.5, nan_, -inf_, 0.5, -0.0, -0.0}));
    CHECK(same(g[1], {nan_, nan_, -inf_, inf_, nan_, nan_, nan_, nan_, nan_}));
    // errors: shapes (PyTorch broadcasts; graft refuses, as for its other losses), dtypes, undefined
    check_error([&] { (void)F::kl_div(inp, tg[0]); }, "same as input size");
    check_error([&] { (void)F::kl_div(i64({1, 2}), i64({1, 2})); }, "floating");
    check_error([&] { (void)F::kl_div(Tensor{}, tg); }, "undefined");
    // batchmean is kl_div's only (PyTorch: "batchmean is not a valid value for reduction")
    check_error([&] { (void)F::mse_loss(inp, tg, reduction::batchmean); }, "batchmean is only valid for kl_div");
    check_error([&] { (void)F::nll_loss(inp, i64({0, 1}), {}, -100, reduction::batchmean); }, "batchmean");
    check_error([&] { (void)F::cross_entropy(inp, i64({0, 1}), {}, -100, reduction::batchmean); }, "batchmean");
    check_error([&] { (void)F::binary_cross_entropy_with_logits(inp, tg, {}, reduction::batchmean); }, "batchmean");
    for (reduction how : {reduction::none, reduction::mean, reduction::sum, reduction::batchmean}) {
        check_grads([&](const tensor_list& in) { return tensor_list{F::kl_div(in[0], in[1], how)}; },
                    {leaf({3, 4}, 62, -3, 0), leaf({3, 4}, 63, 0.05, 1)});
        check_grads([&](const tensor_list& in) { return tensor_list{F::kl_div(in[0], in[1], how, true)}; },
                    {leaf({3, 4}, 64, -3, 0), leaf({3, 4}, 65, -3, 0)});
    }
}

TEST_CASE("cosine_similarity: PyTorch 1.13's squared-norm clamp, broadcasting, special values, errors", "[nn]") {
    const Tensor a = d64m({1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1e-5, 0.0, 0.0, -1.0, 0.5, 2.0}, {4, 3}).requires_grad_();
    const Tensor b = d64m({4.0, -5.0, 6.0, 1.0, 2.0, 3.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {4, 3}).requires_grad_();
    const Tensor c = F::cosine_similarity(a, b);
    CHECK(same(c, {0.36548694232390355, 0.0, 1.0, 0.0}));  // F.cosine_similarity(a, b)
    // torch.autograd.grad(c.sum(), [a, b]): a zero vector gets the other's unit vector / eps
    const auto g = autograd::grad({c.sum()}, {a, b});
    CHECK(same(g[0], {0.09572277060864141, -0.2044986463002794, 0.10442484066397245, 26726124.191242438,
                      53452248.382484876, 80178372.57372732, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
               1e-12));
    CHECK(same(g[1], {0.011470910527481826, 0.08464740872003827, 0.0628922335817107, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                      -43643578.047198474, 21821789.023599237, 87287156.09439695},
               1e-12));
    CHECK(same(F::cosine_similarity(a, b, 1, 1e-3), {0.36548694232390355, 0.0, 0.01, 0.0}));  // eps=1e-3
    CHECK(same(F::cosine_similarity(a, b, 0), {0.6666683333166668, -0.9007546982220901, 0.7442084075352507}));
    // a norm below eps: the value uses eps, the gradient is sqrt(s)'s at s = eps^2 (PyTorch
    // clamps the squared norm in place under no_grad). x1 = [[3e-9, 4e-9]], x2 = [[1., 0.]]:
    // 0.3, grads [9.1e7, -1.2e7] and [0, 0.4] (a true clamp would give [1e8, 0]).
    const Tensor t1 = d64m({3e-9, 4e-9}, {1, 2}).requires_grad_(), t2 = d64m({1.0, 0.0}, {1, 2}).requires_grad_();
    const Tensor tc = F::cosine_similarity(t1, t2);
    CHECK(same(tc, {0.3}));
    const auto tg = autograd::grad({tc.sum()}, {t1, t2});
    CHECK(same(tg[0], {91000000.0, -12000000.0}, 1e-9));
    CHECK(same(tg[1], {0.0, 0.4}, 1e-9));
    // broadcasting: m [2, 2] against v [2] along -1, and against [[1], [2]] along 0
    const Tensor m = d64m({1.0, 2.0, 3.0, -1.0}, {2, 2}).requires_grad_(), v = d64({1.0, -0.5}).requires_grad_();
    const Tensor bc = F::cosine_similarity(m, v, -1);
    CHECK(same(bc, {0.0, 0.9899494936611666}));  // F.cosine_similarity(m, v, dim=-1)
    const auto bg = autograd::grad({bc.sum()}, {m, v});
    CHECK(same(bg[0], {0.39999999999999997, -0.19999999999999998, -0.0141421356237309, -0.04242640687119287}));
    CHECK(same(bg[1], {0.4565685424949237, 0.9131370849898475}));
    CHECK(same(F::cosine_similarity(m, d64m({1.0, 2.0}, {2, 1}), 0), {0.9899494936611666, 0.0}));
    CHECK(same(F::cosine_similarity(d64({1.0, 2.0}), d64({3.0, 1.0}), 0), {0.7071067811865475}));  // 1-D
    const Tensor s0 = F::cosine_similarity(scalar_tensor(1.0, dtype::float64), scalar_tensor(2.0, dtype::float64), 0);
    CHECK(s0.dim() == 0);
    CHECK(val(s0) == 1.0);  // F.cosine_similarity(torch.tensor(1.), torch.tensor(2.), dim=0)
    // float32 and float64 promote: F.cosine_similarity(torch.ones(2, 3), torch.ones(2, 3, dtype=float64))
    const Tensor mixed = F::cosine_similarity(ones({2, 3}, dtype::float32), ones({2, 3}, dtype::float64));
    CHECK(mixed.type() == dtype::float64);
    CHECK(same(mixed, {1.0000000000000002, 1.0000000000000002}, 0.0));
    // float32: F.cosine_similarity(torch.tensor([[1., 2., 3.]]), torch.tensor([[4., -5., 6.]]))
    CHECK(same(F::cosine_similarity(tensor({1.0f, 2.0f, 3.0f}, {1, 3}), tensor({4.0f, -5.0f, 6.0f}, {1, 3})),
               {0.36548689007759094}, 1e-7));
    // eps = 0 and a zero vector: 0 / 0 (PyTorch: nan)
    CHECK(std::isnan(dvec(F::cosine_similarity(zeros({1, 3}, dtype::float64), ones({1, 3}, dtype::float64), 1, 0.0))[0]));
    // NaN and inf: x = [[0, nan], [inf, 1], [0, 0], [1, 0]], y = [[1, 1], [1, 1], [0, 0], [inf, 1]]
    const Tensor x = d64m({0.0, nan_, inf_, 1.0, 0.0, 0.0, 1.0, 0.0}, {4, 2}).requires_grad_();
    const Tensor y = d64m({1.0, 1.0, 1.0, 1.0, 0.0, 0.0, inf_, 1.0}, {4, 2}).requires_grad_();
    const Tensor cs = F::cosine_similarity(x, y);
    CHECK(same(cs, {nan_, nan_, 0.0, nan_}));
    const auto sg = autograd::grad({cs.sum()}, {x, y});
    CHECK(same(sg[0], {nan_, nan_, nan_, nan_, 0.0, 0.0, nan_, nan_}));
    CHECK(same(sg[1], {nan_, nan_, nan_, nan_, 0.0, 0.0, nan_, nan_}));
    // errors (PyTorch's messages where it has them)
    check_error([&] { (void)F::cosine_similarity(ones({2, 3}), ones({2, 4})); }, "do not broadcast");
    check_error([&] { (void)F::cosine_similarity(ones({2, 3}), ones({2, 3}), 2); }, "Dimension out of range");
    check_error([&] { (void)F::cosine_similarity(ones({2, 3}), ones({2, 3}), -3); }, "Dimension out of range");
    check_error([&] { (void)F::cosine_similarity(i64({1, 2}), i64({1, 2}), 0); }, "floating");
    check_error([&] { (void)F::cosine_similarity(ones({2, 3}), Tensor{}); }, "undefined");
    check_error([&] { (void)F::cosine_similarity(ones({2, 3}), ones({2, 3}), 1, -1.0); }, "eps must be non-negative");
    check_grads([](const tensor_list& in) { return tensor_list{F::cosine_similarity(in[0], in[1])}; },
                {leaf({3, 4}, 66), leaf({3, 4}, 67)});
    check_grads([](const tensor_list& in) { return tensor_list{F::cosine_similarity(in[0], in[1], 0)}; },
                {leaf({3, 4}, 68), leaf({4}, 69)});
}

TEST_CASE("normalize: PyTorch's values and norm gradients for p = 2, 1, 3, 0.5, inf, zero vectors, errors", "[nn]") {
    const Tensor x = d64m({3.0, 4.0, 0.0, 0.0, 0.0, 0.0, 1e-13, 0.0, 0.0, -1.0, 2.0, -2.0}, {4, 3}).requires_grad_();
    // w = torch.arange(12.).view(4, 3) / 7 - 0.5; y = F.normalize(x, p=p);
    // torch.autograd.grad((y * w).sum(), [x]): the zero row and the row below eps get w / eps
    const Tensor w = arange(12).to(dtype::float64).view({4, 3}) / 7.0 - 0.5;
    struct row {
        double p;
        std::vector<double> value, grad;
    };
    const std::vector<row> rows = {
        {2.0,
         {0.6, 0.8, 0.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.0, -0.3333333333333333, 0.6666666666666666, -0.6666666666666666},
         {-0.02971428571428572, 0.022285714285714298, -0.04285714285714286, -71428571428.57146, 71428571428.5714,
          214285714285.7143, 357142857142.8571, 500000000000.0, 642857142857.1428, 0.22222222222222224,
          0.3888888888888889, 0.2777777777777778}},
        {1.0,
         {0.42857142857142855, 0.5714285714285714, 0.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.0, -0.2, 0.4, -0.4},
         {-0.011661807580174925, 0.008746355685131192, -0.030612244897959186, -71428571428.57146, 71428571428.5714,
          214285714285.7143, 357142857142.8571, 500000000000.0, 642857142857.1428, 0.11428571428571431,
          0.2285714285714286, 0.17142857142857143}},
        {3.0,
         {0.6669717773118556, 0.8892957030824742, 0.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.0, -0.3889111187328203,
          0.7778222374656406, -0.7778222374656406},
         {-0.04676829835677061, 0.03507622376757798, -0.04764084123656112, -71428571428.57146, 71428571428.5714,
          214285714285.7143, 357142857142.8571, 500000000000.0, 642857142857.1428, 0.28106181689934917,
          0.4591765729576576, 0.318645664507983}},
        {0.5,
         {0.2153903091734725, 0.2871870788979633, 0.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.0, -0.06822746429607389,
          0.13645492859214778, -0.13645492859214778},
         {-0.0033707451378836226, 0.0025280588534127256, -0.015385022083819463, -71428571428.57146, 71428571428.5714,
          214285714285.7143, 357142857142.8571, 500000000000.0, 642857142857.1428, 0.03451306689003861,
          0.07685573101858353, 0.05959919757356424}},
        {inf_,
         {0.75, 1.0, 0.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.0, -0.5, 1.0, -1.0},
         {-0.125, 0.09375000000000001, -0.053571428571428575, -71428571428.57146, 71428571428.5714, 214285714285.7143,
          357142857142.8571, 500000000000.0, 642857142857.1428, 0.3928571428571429, 0.5982142857142857,
          0.4017857142857143}},
    };
    for (const row& r : rows) {
        INFO("p = " << r.p);
        const Tensor y = F::normalize(x, r.p);
        CHECK(same(y, r.value, 1e-12));
        CHECK(same(autograd::grad({(y * w).sum()}, {x})[0], r.grad, 1e-12));
    }
    // F.normalize(x, dim=0)
    const Tensor y0 = F::normalize(x, 2.0, 0);
    CHECK(same(y0, {0.9486832980505138, 0.8944271909999159, 0.0, 0.0, 0.0, 0.0, 3.162277660168379e-14, 0.0, 0.0,
                    -0.31622776601683794, 0.4472135954999579, -1.0}));
    CHECK(same(autograd::grad({(y0 * w).sum()}, {x})[0],
               {0.05872801368883793, -0.09902586757499068, -0.10714285714285715, -0.022587697572631286,
                0.01597191412499849, 0.10714285714285715, 0.11293848786316361, 0.11180339887498948, 0.3214285714285714,
                0.17618404106652513, 0.19805173514998137, 0.0}));
    // p = inf with ties shares the gradient: t = [[2, -2, 1], [1, 1, .5]], F.normalize(t, p=inf),
    // grad of (y * [1, 2, 3]).sum()
    const Tensor tie = d64m({2.0, -2.0, 1.0, 1.0, 1.0, 0.5}, {2, 3}).requires_grad_();
    const Tensor yt = F::normalize(tie, inf_);
    CHECK(same(yt, {1.0, -1.0, 0.5, 1.0, 1.0, 0.5}));
    CHECK(same(autograd::grad({(yt * d64({1.0, 2.0, 3.0})).sum()}, {tie})[0], {0.375, 1.125, 1.5, -1.25, -0.25, 3.0}));
    // 1-D and 0-dim: F.normalize(torch.tensor([3., 4., 0.]), dim=0); F.normalize(torch.tensor(3.), dim=0)
    CHECK(same(F::normalize(d64({3.0, 4.0, 0.0}), 2.0, 0), {0.6, 0.8, 0.0}));
    CHECK(same(F::normalize(scalar_tensor(3.0, dtype::float64), 2.0, 0), {1.0}));
    // NaN and inf: s = [[nan, 1], [inf, 1], [-inf, inf], [0, 0]]; grad of (y * [1, 2]).sum()
    const Tensor s = d64m({nan_, 1.0, inf_, 1.0, -inf_, inf_, 0.0, 0.0}, {4, 2}).requires_grad_();
    for (double p : {2.0, 1.0, 3.0}) {
        INFO("p = " << p);
        const Tensor ys = F::normalize(s, p);
        CHECK(same(ys, {nan_, nan_, nan_, 0.0, nan_, nan_, 0.0, 0.0}));
        CHECK(same(autograd::grad({(ys * d64({1.0, 2.0})).sum()}, {s})[0],
                   {nan_, nan_, nan_, nan_, nan_, nan_, 1e12, 2e12}));
    }
    check_error([&] { (void)F::normalize(x, 2.0, 2); }, "Dimension out of range");
    check_error([&] { (void)F::normalize(x, 0.0); }, "p must be positive");
    check_error([&] { (void)F::normalize(x, -1.0); }, "p must be positive");
    check_error([&] { (void)F::normalize(x, nan_); }, "p must be positive");
    check_error([&] { (void)F::normalize(x, 2.0, 1, -1.0); }, "eps must be non-negative");
    check_error([&] { (void)F::normalize(i64({1, 2}), 2.0, 0); }, "floating");
    check_error([&] { (void)F::normalize(Tensor{}); }, "undefined");
    for (double p : {2.0, 1.0, 3.0, 0.5, 1.5, inf_}) {
        INFO("p = " << p);
        check_grads([&](const tensor_list& in) { return tensor_list{F::normalize(in[0], p)}; }, {leaf({3, 4}, 70)});
    }
    check_grads([](const tensor_list& in) { return tensor_list{F::normalize(in[0], 2.0, 0)}; }, {leaf({3, 4}, 71)});
}

TEST_CASE("pad: constant mode from the last dimension, negative pads crop, gradients, errors", "[nn]") {
    const Tensor x = arange(6).to(dtype::float64).view({2, 3});
    CHECK(same(F::pad(x, {1, 2}), {0, 0, 1, 2, 0, 0, 0, 3, 4, 5, 0, 0}));  // F.pad(x, (1, 2))
    // F.pad(x, (1, 0, 0, 1), value=-1.5)
    const Tensor p2 = F::pad(x, {1, 0, 0, 1}, "constant", -1.5);
    CHECK(p2.sizes() == int_list{3, 4});
    CHECK(same(p2, {-1.5, 0, 1, 2, -1.5, 3, 4, 5, -1.5, -1.5, -1.5, -1.5}));
    CHECK(same(F::pad(x, {-1, 1, 1, -1}), {0, 0, 0, 1, 2, 0}));  // F.pad(x, (-1, 1, 1, -1))
    CHECK(F::pad(x.view({1, 2, 3}), {0, 0, 0, 0, 1, 1}).sizes() == int_list{3, 2, 3});
    CHECK(F::pad(x, {-3, 0}).sizes() == int_list{2, 0});
    const Tensor ints = F::pad(arange(3), {1, 1}, "constant", 7);  // F.pad(torch.arange(3), (1, 1), value=7)
    CHECK(ints.type() == dtype::int64);
    CHECK(ints.to_vector<std::int64_t>() == std::vector<std::int64_t>{7, 0, 1, 2, 7});
    // a copy even with nothing to pad (PyTorch returns a new tensor)
    const Tensor same_size = F::pad(x, {0, 0});
    CHECK(equal(same_size, x));
    CHECK(same_size.data_ptr<double>() != x.data_ptr<double>());
    // gradient: y = F.pad(x, (-1, 2, 1, 0), value=0.5), grad of (y * arange(12).view(3, 4)).sum()
    const Tensor xg = x.clone().requires_grad_();
    const Tensor y = F::pad(xg, {-1, 2, 1, 0}, "constant", 0.5);
    CHECK(same(y, {0.5, 0.5, 0.5, 0.5, 1.0, 2.0, 0.5, 0.5, 4.0, 5.0, 0.5, 0.5}));
    CHECK(same(autograd::grad({(y * arange(12).to(dtype::float64).view({3, 4})).sum()}, {xg})[0],
               {0.0, 4.0, 5.0, 0.0, 8.0, 9.0}));
    // errors: PyTorch's messages
    check_error([&] { (void)F::pad(x, {1}); }, "Padding length must be divisible by 2");
    check_error([&] { (void)F::pad(x, {1, 1, 1, 1, 1, 1}); }, "Padding length too large");
    check_error([&] { (void)F::pad(x, {-4, 0}); }, "negative output size");
    check_error([&] { (void)F::pad(x, {-2, -2}); }, "negative output size");
    check_error([&] { (void)F::pad(x, {1, 1}, "foo"); }, "Unrecognised padding mode");
    check_error([&] { (void)F::pad(Tensor{}, {1, 1}); }, "undefined");
    check_grads([](const tensor_list& in) { return tensor_list{F::pad(in[0], {2, -1, -1, 1, 1, 0}, "constant", 0.3)}; },
                {leaf({2, 3, 4}, 72)});
}

TEST_CASE("cosine_similarity, normalize and kl_div under capture::aot and jit::script: special points as eager",
          "[nn][capture][jit]") {
    // The norm below eps (cosine_similarity's detach), a zero row (normalize's where cuts) and
    // a zero target (kl_div's xlogy) take the same values and gradients in the compiled graphs.
    const auto f = [](Tensor a, Tensor b, Tensor lp, Tensor t) {
        return F::cosine_similarity(a, b).sum() + (F::normalize(a) * b).sum() +
               F::kl_div(lp, t, reduction::batchmean);
    };
    const Tensor a = d64m({3e-9, 4e-9, 0.0, 0.0, 1.0, -2.0}, {3, 2}).requires_grad_();
    const Tensor b = d64m({1.0, 0.0, 0.5, 2.0, 0.0, 0.0}, {3, 2}).requires_grad_();
    const Tensor lp = d64m({-1.0, -0.5, -2.0, -0.3, -1.2, -0.1}, {3, 2}).requires_grad_();
    const Tensor t = d64m({0.2, 0.8, 0.5, 0.5, 1.0, 0.0}, {3, 2});
    const Tensor want = f(a, b, lp, t);
    const auto want_g = autograd::grad({want}, {a, b, lp});
    const auto matches = [&](const Tensor& got) {
        CHECK(same(got, dvec(want), 1e-14));
        const auto g = autograd::grad({got}, {a, b, lp});
        for (std::size_t i = 0; i < g.size(); ++i) CHECK(same(g[i], dvec(want_g[i]), 1e-14));
    };
    auto compiled = capture::aot(f, {a, b, lp, t});
    matches(compiled({a, b, lp, t})[0]);
    auto fn = jit::script(f);
    for (int i = 0; i < 3; ++i) matches(fn(a, b, lp, t));
}

TEST_CASE("pad: reflect, replicate and circular modes as PyTorch's, gradients, errors", "[nn]") {
    struct row {
        std::string mode;
        int_list sizes, pad, out_sizes;
        std::vector<double> value, grad;
    };
    // x = torch.arange(n, dtype=float64).view(sizes); y = F.pad(x, pad, mode=mode);
    // grad of (y * torch.arange(y.numel()).view(y.shape)).sum()
    const std::vector<row> rows = {
        {"reflect", {1, 2, 3}, {2, 1}, {1, 2, 6},
         {2, 1, 0, 1, 2, 1, 5, 4, 3, 4, 5, 4}, {2, 9, 4, 8, 27, 16}},
        {"replicate", {1, 2, 3}, {3, 1}, {1, 2, 7},
         {0, 0, 0, 0, 1, 2, 2, 3, 3, 3, 3, 4, 5, 5}, {6, 4, 11, 34, 11, 25}},
        {"circular", {1, 2, 3}, {-1, 2}, {1, 2, 4}, {1, 2, 1, 2, 4, 5, 4, 5}, {0, 2, 4, 0, 10, 12}},
        {"reflect", {1, 1, 2, 3}, {1, 2, 1, 0}, {1, 1, 3, 6},
         {4, 3, 4, 5, 4, 3, 1, 0, 1, 2, 1, 0, 4, 3, 4, 5, 4, 3}, {18, 24, 9, 36, 48, 18}},
        {"circular", {1, 1, 2, 3}, {1, 2, 1, 0}, {1, 1, 3, 6},
         {5, 3, 4, 5, 3, 4, 2, 0, 1, 2, 0, 1, 5, 3, 4, 5, 3, 4}, {17, 19, 15, 34, 38, 30}},
        {"replicate", {2, 3}, {-1, 2}, {2, 4}, {1, 2, 2, 2, 4, 5, 5, 5}, {0, 0, 6, 0, 4, 18}},
    };
    for (const row& r : rows) {
        INFO(r.mode << " " << r.sizes << " " << r.pad);
        std::int64_t n = 1;
        for (auto v : r.sizes) n *= v;
        const Tensor x = arange(n).to(dtype::float64).view(r.sizes).requires_grad_();
        const Tensor y = F::pad(x, r.pad, r.mode);
        REQUIRE(y.sizes() == r.out_sizes);
        CHECK(same(y, r.value, 0.0));
        const Tensor w = arange(y.numel()).to(dtype::float64).view(y.sizes());
        CHECK(same(autograd::grad({(y * w).sum()}, {x})[0], r.grad, 0.0));
    }
    const Tensor x = arange(6).to(dtype::float64).view({1, 2, 3});
    // F.pad(x, (2, 1), mode='replicate') of a NaN: the NaN is repeated
    const Tensor xn = d64m({nan_, 1.0}, {1, 1, 2});
    CHECK(same(F::pad(xn, {2, 1}, "replicate"), {nan_, nan_, nan_, 1.0, 1.0}));
    // errors, PyTorch's messages
    check_error([&] { (void)F::pad(x, {3, 0}, "reflect"); }, "Padding size should be less than");
    check_error([&] { (void)F::pad(x, {4, 0}, "circular"); }, "wrapping around more than once");
    check_error([&] { (void)F::pad(x.view({2, 3}), {1, 1}, "circular"); }, "Invalid padding size, expected 0 but got 2");
    check_error([&] { (void)F::pad(x, {1, 1, 1, 0}, "circular"); }, "Invalid padding size, expected 2 but got 4");
    check_error([&] { (void)F::pad(x.view({6}), {1, 1}, "reflect"); }, "Only 2D, 3D, 4D, 5D padding");
    check_error([&] { (void)F::pad(x, {1, 1, 1, 1, 1, 1}, "replicate"); }, "Only 2D, 3D, 4D, 5D padding");
    check_error([&] { (void)F::pad(x, {1, 1}, "reflect", 2.0); }, "doesn't take in value argument");
    check_error([&] { (void)F::pad(zeros({1, 2, 0}, dtype::float64), {1, 1}, "replicate"); }, "non-empty");
    check_error([&] { (void)F::pad(zeros({1, 2, 0}, dtype::float64), {1, 1}, "circular"); }, "wrapping around");
    for (const char* mode : {"reflect", "replicate", "circular"}) {
        INFO(mode);
        const int_list p = std::string(mode) == "circular" ? int_list{2, -1} : int_list{2, -1, 1, 2};
        check_grads([&](const tensor_list& in) { return tensor_list{F::pad(in[0], p, mode)}; }, {leaf({2, 3, 4}, 73)});
    }
}
