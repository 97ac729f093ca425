// Full reductions (sum, mean) at the root of a traced expression: fused evaluation on
// every compiled SIMD target against a float64 reference and eager graft (with a
// tolerance: the fused pass sums in another order), broadcasting, strides, numbers,
// empty domains, static shapes, several outputs; gradients through ex::function and
// ex::value_and_grad against eager autograd and finite differences (gradcheck, float64).
#include <catch2/catch.hpp>

#include <graft/graft.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace ex = graft::expr;
using graft::Tensor;

namespace {

struct target_guard {
    graft::kernels::target saved = graft::kernels::current_target();
    ~target_guard() { graft::kernels::set_target(saved); }
};

Tensor leaf(const graft::int_list& sizes, std::uint64_t seed, graft::dtype t = graft::dtype::float64) {
    graft::generator gen(seed);
    Tensor x = graft::randn(sizes, t, gen);
    x.requires_grad_();
    return x;
}

Tensor fresh(const Tensor& t) {
    Tensor c = t.detach().clone();
    c.requires_grad_();
    return c;
}

double item(const Tensor& t) {
    REQUIRE(t.dim() == 0);
    return t.to(graft::dtype::float64).item<double>();
}

/// Max |a - b| / (1 + |b|) (same shapes).
double max_rel_err(const Tensor& a, const Tensor& b) {
    REQUIRE(a.sizes() == b.sizes());
    const auto va = a.to(graft::dtype::float64).contiguous().to_vector<double>();
    const auto vb = b.to(graft::dtype::float64).contiguous().to_vector<double>();
    double m = 0;
    for (std::size_t i = 0; i < va.size(); ++i) m = std::max(m, std::fabs(va[i] - vb[i]) / (1.0 + std::fabs(vb[i])));
    return m;
}

/// Sum and sum of magnitudes of a tensor's elements, in float64 (the reference).
struct ref_sum {
    double sum = 0, abs = 0;
};
ref_sum reference_sum(const Tensor& values) {
    ref_sum r;
    for (double v : values.to(graft::dtype::float64).contiguous().to_vector<double>()) {
        r.sum += v;
        r.abs += std::fabs(v);
    }
    return r;
}

const auto tanh_loss = ex::trace<2>([](auto x, auto w) { return sum(tanh(x * w)); });
const auto mean_loss = ex::trace<3>([](auto x, auto w, auto b) { return mean(sigmoid(x * w + b) * x); });

}  // namespace

TEST_CASE("expr reductions: sum and mean on every SIMD target, sizes and tails", "[expr][reduce]") {
    target_guard guard;
    CHECK(ex::to_string(tanh_loss) == "sum(tanh(mul(%0, %1)))");
    for (auto t : graft::kernels::available_targets()) {
        graft::kernels::set_target(t);
        INFO("target " << graft::kernels::target_name(t));
        for (std::int64_t n : {1, 7, 16, 17, 1000, 1023}) {
            INFO("n = " << n);
            for (graft::dtype dt : {graft::dtype::float32, graft::dtype::float64}) {
                const Tensor x = graft::randn({n}, dt), w = graft::randn({n}, dt), b = graft::randn({n}, dt);
                const Tensor s = ex::evaluate(tanh_loss, x, w);
                REQUIRE(s.dim() == 0);
                REQUIRE(s.type() == dt);
                // The elementwise values are eager graft's (same lane math), summed in float64.
                const ref_sum r = reference_sum(graft::tanh(x * w));
                const double eps = dt == graft::dtype::float32 ? 0x1p-23 : 0x1p-52;
                CHECK(std::fabs(item(s) - r.sum) <= eps * std::fabs(r.sum) + 1e-12 * r.abs);
                CHECK(std::fabs(item(s) - item(graft::tanh(x * w).sum())) <= 4 * eps * r.abs);
                const Tensor m = ex::evaluate(mean_loss, x, w, b);
                const Tensor eager = (graft::sigmoid(x * w + b) * x).mean();
                const ref_sum rm = reference_sum(graft::sigmoid(x * w + b) * x);
                // FMA contraction of x*w + b may differ from eager by one rounding per element.
                CHECK(std::fabs(item(m) - item(eager)) <= 4 * eps * rm.abs / static_cast<double>(n) + 1e-300);
            }
        }
    }
}

TEST_CASE("expr reductions: float32 at 1M elements is within a few ULPs of a float64 reference", "[expr][reduce]") {
    target_guard guard;
    graft::generator gen(42);
    const std::int64_t n = 1 << 20;
    const Tensor x = graft::randn({n}, graft::dtype::float32, gen), w = graft::randn({n}, graft::dtype::float32, gen);
    // Reference: tanh(x*w) in float64 from the same float32 inputs, summed in float64.
    const ref_sum r = reference_sum(graft::tanh(x.to(graft::dtype::float64) * w.to(graft::dtype::float64)));

    const auto sig = ex::trace<1>([](auto v) { return mean(sigmoid(v)); });  // no cancellation
    double sig_ref = 0;
    for (double v : graft::sigmoid(x.to(graft::dtype::float64)).to_vector<double>()) sig_ref += v;
    sig_ref /= static_cast<double>(n);
    for (auto t : graft::kernels::available_targets()) {
        graft::kernels::set_target(t);
        INFO("target " << graft::kernels::target_name(t));
        const double s = item(ex::evaluate(tanh_loss, x, w));
        // Each float32 tanh is within a few ULPs of the exact value, so the sum is within a
        // few ULPs of the magnitudes' sum; the float64 accumulation adds nothing visible.
        CHECK(std::fabs(s - r.sum) <= 4 * 0x1p-24 * r.abs);
        // The accumulation itself loses nothing but the final rounding to float32: against
        // the float32 values the fused pass adds (eager graft's lane math on this target),
        // summed in float64.
        const ref_sum r32 = reference_sum(graft::tanh(x * w));
        CHECK(std::fabs(s - r32.sum) <= 0x1p-24 * std::fabs(r32.sum) + 1e-12 * r32.abs);
        const double m = item(ex::evaluate(sig, x));
        CHECK(std::fabs(m - sig_ref) <= 4 * 0x1p-24 * std::fabs(sig_ref));
        // Eager sum() in float32 for comparison: same order of error, different bits.
        CHECK(std::fabs(s - item(graft::tanh(x * w).sum())) <= 64 * 0x1p-24 * r.abs);
    }
}

TEST_CASE("expr reductions: broadcasting, strides, numbers, 0-dim and empty domains", "[expr][reduce]") {
    target_guard guard;
    for (auto t : graft::kernels::available_targets()) {
        graft::kernels::set_target(t);
        INFO("target " << graft::kernels::target_name(t));
        const Tensor x = graft::randn({4, 37}), w = graft::randn({37}), col = graft::randn({4, 1});
        const auto close = [](const Tensor& fused, const Tensor& elementwise) {
            const ref_sum r = reference_sum(elementwise);
            return std::fabs(item(fused) - r.sum) <= 0x1p-23 * std::fabs(r.sum) + 1e-12 * r.abs;
        };
        // General broadcasting: the domain is the broadcast shape [4, 37].
        CHECK(close(ex::evaluate(tanh_loss, x, w), graft::tanh(x * w)));
        CHECK(close(ex::evaluate(tanh_loss, col, w), graft::tanh(col * w)));
        // Non-contiguous views.
        const Tensor xt = graft::randn({37, 4}).t();
        CHECK(close(ex::evaluate(tanh_loss, xt, x), graft::tanh(xt * x)));
        const Tensor xs = graft::randn({100}).slice(0, 0, 100, 3), ws = graft::randn({34});
        CHECK(close(ex::evaluate(tanh_loss, xs, ws), graft::tanh(xs * ws)));
        // Numbers and 0-dim tensors broadcast; only numbers: a one-element domain.
        CHECK(close(ex::evaluate(tanh_loss, x, 0.5), graft::tanh(x * 0.5)));
        CHECK(close(ex::evaluate(tanh_loss, graft::full({}, -0.25), w), graft::tanh(w * -0.25)));
        CHECK(item(ex::evaluate(tanh_loss, 1.0, 2.0)) == Approx(std::tanh(2.0f)).epsilon(1e-6));
        // The domain includes arguments the reduction does not read, as for elementwise outputs.
        const auto only_x = ex::trace<2>([](auto a, auto) { return sum(a); });
        {
            // 37 copies of each of col's values, summed in float32: the error is bounded by
            // n * eps * sum |x| (a relative bound fails when the sum cancels to near zero).
            double want = 0, abs = 0;
            for (std::int64_t i = 0; i < 4; ++i) {
                const double v = col.select(0, i).select(0, 0).item<float>();
                want += 37 * v;
                abs += 37 * std::fabs(v);
            }
            CHECK(std::fabs(item(ex::evaluate(only_x, col, w)) - want) <= 148 * 0x1p-23 * abs);
        }
        // Empty domain: sum is 0, mean is NaN (as eager graft).
        CHECK(item(ex::evaluate(tanh_loss, graft::randn({0, 3}), graft::randn({3}))) == 0.0);
        CHECK(std::isnan(item(ex::evaluate(mean_loss, graft::randn({0}), 1.0, 2.0))));
        CHECK(std::isnan(item(graft::randn({0}).mean())));
        // NaN and infinity propagate.
        const Tensor with_nan = graft::from_vector<float>({1.f, std::numeric_limits<float>::quiet_NaN(), 2.f});
        CHECK(std::isnan(item(ex::evaluate(tanh_loss, with_nan, 1.0))));
        const auto sum_exp = ex::trace<1>([](auto a) { return sum(exp(a)); });
        CHECK(std::isinf(item(ex::evaluate(sum_exp, graft::from_vector<float>({1.f, 1000.f})))));
    }
}

TEST_CASE("expr reductions: several outputs, static shapes, evaluate_into, errors", "[expr][reduce]") {
    target_guard guard;
    const auto multi = ex::trace<2>([](auto x, auto w) {
        const auto h = x * w + ex::c<0.5>;
        return ex::outputs_of(h, sum(h), mean(exp(h)), h > 0.0);
    });
    for (auto t : graft::kernels::available_targets()) {
        graft::kernels::set_target(t);
        INFO("target " << graft::kernels::target_name(t));
        const Tensor x = graft::randn({5, 33}), w = graft::randn({33});
        const auto o = ex::evaluate_all(multi, x, w);
        const Tensor h = x * w + 0.5;
        CHECK(o[0].sizes() == graft::int_list{5, 33});
        CHECK(max_rel_err(o[0], h) < 2e-6);
        CHECK(o[1].dim() == 0);
        CHECK(o[2].dim() == 0);
        CHECK(item(o[1]) == Approx(reference_sum(o[0]).sum).epsilon(1e-6).margin(1e-5));
        CHECK(item(o[2]) == Approx(item(graft::exp(o[0]).mean())).epsilon(1e-6));
        CHECK(o[3].to_vector<bool>() == (o[0] > 0.0).to_vector<bool>());
        // Static shapes: same loops with a compile-time trip count.
        const Tensor xs = graft::randn({3, 7}), ws = graft::randn({3, 7});
        const auto a = ex::evaluate_all(ex::static_shape<3, 7>{}, multi, xs, ws);
        const auto b = ex::evaluate_all(multi, xs, ws);
        CHECK(item(a[1]) == Approx(item(b[1])).epsilon(1e-6).margin(1e-6));
        CHECK(item(a[2]) == Approx(item(b[2])).epsilon(1e-6));
        const Tensor x1k = graft::randn({1024}), w1k = graft::randn({1024});
        CHECK(item(ex::evaluate(ex::static_shape<1024>{}, tanh_loss, x1k, w1k)) ==
              Approx(item(ex::evaluate(tanh_loss, x1k, w1k))).epsilon(1e-6).margin(1e-5));
    }
    // evaluate_into: a reduction's output is a 0-dim tensor of the result dtype.
    const Tensor x = graft::randn({6}, graft::dtype::float64), w = graft::randn({6}, graft::dtype::float64);
    const Tensor s = graft::empty({}, graft::dtype::float64);
    ex::evaluate_into(s, tanh_loss, x, w);
    CHECK(item(s) == Approx(item(graft::tanh(x * w).sum())).epsilon(1e-12));
    CHECK_THROWS_WITH(ex::evaluate_into(graft::empty({6}, graft::dtype::float64), tanh_loss, x, w),
                      Catch::Contains("output 0 must be a float64 tensor of shape []"));
    CHECK_THROWS_WITH(ex::evaluate(tanh_loss, graft::randn({3}), graft::randn({4})),
                      Catch::Contains("expr::evaluate(sum(tanh(mul(%0, %1))))"));
}

TEST_CASE("expr reductions: ex::function gives a 0-dim output and one FusedBackward node", "[expr][reduce]") {
    target_guard guard;
    for (auto t : graft::kernels::available_targets()) {
        graft::kernels::set_target(t);
        INFO("target " << graft::kernels::target_name(t));
        const auto run = [&](auto policy) {
            const auto f = ex::function(mean_loss, policy);
            // Broadcasting: x [4, 9], w [9], b [4, 1].
            const Tensor x = leaf({4, 9}, 1), w = leaf({9}, 2), b = leaf({4, 1}, 3);
            const Tensor y = f(x, w, b);
            REQUIRE(y.dim() == 0);
            REQUIRE(y.grad_fn() != nullptr);
            CHECK(y.grad_fn()->name() == "FusedBackward");
            CHECK(y.grad_fn()->next_functions().size() == 3);
            (y * 3.0).backward();
            const Tensor x2 = fresh(x), w2 = fresh(w), b2 = fresh(b);
            const Tensor y2 = (graft::sigmoid(x2 * w2 + b2) * x2).mean();
            CHECK(std::fabs(item(y) - item(y2)) < 1e-14);
            (y2 * 3.0).backward();
            CHECK(max_rel_err(x.grad(), x2.grad()) < 1e-14);
            CHECK(max_rel_err(w.grad(), w2.grad()) < 1e-14);
            CHECK(max_rel_err(b.grad(), b2.grad()) < 1e-14);
            CHECK(b.grad().sizes() == graft::int_list{4, 1});
        };
        run(ex::save_policy::save_all);
        run(ex::save_policy::recompute);
        run(ex::save_policy::recompute_cheap);
        // d sum(x)/dx = 1 everywhere: the backward reads no argument, only the domain.
        const auto sum_x = ex::function(ex::trace<2>([](auto a, auto) { return sum(a); }));
        const Tensor a = leaf({3, 1}, 4), c = leaf({5}, 5);
        sum_x(a, c).backward();
        CHECK(max_rel_err(a.grad(), graft::full({3, 1}, 5.0, graft::dtype::float64)) == 0);
        CHECK(max_rel_err(c.grad(), graft::zeros({5}, graft::dtype::float64)) == 0);
    }
}

TEST_CASE("expr reductions: gradcheck and gradgradcheck through ex::function (float64)", "[expr][reduce]") {
    const auto f = ex::function(mean_loss);
    const auto wrapped = [&](const graft::autograd::tensor_list& in) -> graft::autograd::tensor_list {
        return {f(in[0], in[1], in[2])};
    };
    CHECK(graft::autograd::gradcheck(wrapped, {leaf({3, 5}, 6), leaf({5}, 7), leaf({}, 8)}));
    CHECK(graft::autograd::gradgradcheck(wrapped, {leaf({3, 5}, 9), leaf({5}, 10), leaf({3, 1}, 11)}));
    // Several outputs: an elementwise one and two reductions of it; a number argument.
    const auto g = ex::function(ex::trace<3>([](auto x, auto y, auto s) {
        const auto h = where(x > y, x * y, exp(-x)) * s;
        return ex::outputs_of(h, sum(h * h), mean(tanh(y)));
    }));
    const auto wrapped2 = [&](const graft::autograd::tensor_list& in) -> graft::autograd::tensor_list {
        const auto o = g(in[0], in[1], 0.75);
        return {o[0], o[1], o[2]};
    };
    CHECK(graft::autograd::gradcheck(wrapped2, {leaf({2, 6}, 12), leaf({6}, 13)}));
}

TEST_CASE("expr reductions: value_and_grad in one fused pass", "[expr][reduce]") {
    target_guard guard;
    const auto vg = ex::value_and_grad<0, 1, 2>(mean_loss);
    CHECK(ex::to_string(vg).rfind("(mean(mul(sigmoid(add(mul(%0, %1), %2)), %0)), ", 0) == 0);
    for (auto t : graft::kernels::available_targets()) {
        graft::kernels::set_target(t);
        INFO("target " << graft::kernels::target_name(t));
        const Tensor x = leaf({5, 8}, 14), w = leaf({8}, 15), b = leaf({5, 1}, 16);
        const Tensor gy = graft::full({}, 2.0, graft::dtype::float64);  // d(loss)/d(mean)
        const auto r = ex::evaluate_all(vg, x.detach(), w.detach(), b.detach(), gy);
        const Tensor y = (graft::sigmoid(x * w + b) * x).mean();
        y.backward(gy);
        CHECK(std::fabs(item(r[0]) - item(y)) < 1e-14);
        CHECK(max_rel_err(r[1], x.grad()) < 1e-14);
        CHECK(max_rel_err(graft::sum_to_size(r[2], {8}), w.grad()) < 1e-13);
        CHECK(max_rel_err(graft::sum_to_size(r[3], {5, 1}), b.grad()) < 1e-13);
    }
}
