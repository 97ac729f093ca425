// graft::nn::functional (issue 16): activations, linear and the losses against values worked
// out by hand from PyTorch's formulas and against scalar reference loops, every reduction,
// ignore_index, class weights, label smoothing and probability targets, gradcheck /
// gradgradcheck in float64, errors, and one capture::aot and jit::script round trip.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
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
