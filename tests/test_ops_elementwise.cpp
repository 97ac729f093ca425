// Elementwise ops on tensors: broadcasting, type promotion, strided inputs,
// PyTorch's edge-value semantics, checked against std:: math in double.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>

#include <graft/graft.hpp>

using namespace graft;
using Catch::Matchers::Contains;

namespace {

/// The expected value of every element, from a scalar function applied in double.
std::vector<double> expected_unary(const Tensor& x, const std::function<double(double)>& f) {
    std::vector<double> out;
    for (double v : x.to_vector<double>()) out.push_back(f(v));
    return out;
}

void require_close(const Tensor& got, const std::vector<double>& want, double rtol, double atol) {
    const auto g = got.to_vector<double>();
    REQUIRE(g.size() == want.size());
    for (std::size_t i = 0; i < g.size(); ++i) {
        INFO("element " << i << ": got " << g[i] << ", want " << want[i]);
        if (std::isnan(want[i])) {
            REQUIRE(std::isnan(g[i]));
        } else if (std::isinf(want[i])) {
            REQUIRE(g[i] == want[i]);
        } else {
            REQUIRE(std::fabs(g[i] - want[i]) <= atol + rtol * std::fabs(want[i]));
        }
    }
}

double gelu_ref(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
double gelu_tanh_ref(double x) {
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

}  // namespace

TEST_CASE("unary ops match the scalar math on strided float32 and float64 views", "[ops][unary]") {
    manual_seed(3);
    for (dtype dt : {dtype::float32, dtype::float64}) {
        const double rtol = dt == dtype::float32 ? 2e-6 : 1e-13;
        const double atol = dt == dtype::float32 ? 1e-7 : 1e-15;
        // A transposed (non-contiguous) view with values in [-6, 6].
        Tensor x = (rand({37, 19}, dt) * 12.0 - 6.0).t();
        Tensor pos = rand({5, 41}, dt) * 20.0 + 0.001;
        INFO("dtype " << dt);
        require_close(neg(x), expected_unary(x, [](double v) { return -v; }), 0, 0);
        require_close(abs(x), expected_unary(x, [](double v) { return std::fabs(v); }), 0, 0);
        require_close(exp(x), expected_unary(x, [](double v) { return std::exp(v); }), rtol, atol);
        require_close(log(pos), expected_unary(pos, [](double v) { return std::log(v); }), rtol, atol);
        require_close(sqrt(pos), expected_unary(pos, [](double v) { return std::sqrt(v); }), rtol, atol);
        require_close(rsqrt(pos), expected_unary(pos, [](double v) { return 1.0 / std::sqrt(v); }), rtol, atol);
        require_close(tanh(x), expected_unary(x, [](double v) { return std::tanh(v); }), rtol, atol);
        require_close(sigmoid(x), expected_unary(x, [](double v) { return 1.0 / (1.0 + std::exp(-v)); }), rtol, atol);
        require_close(relu(x), expected_unary(x, [](double v) { return v > 0 ? v : 0.0; }), 0, 0);
        require_close(gelu(x), expected_unary(x, gelu_ref), rtol * 2, atol);
        require_close(gelu(x, "tanh"), expected_unary(x, gelu_tanh_ref), rtol * 2, atol);
        require_close(sin(x), expected_unary(x, [](double v) { return std::sin(v); }), rtol, atol * 4);
        require_close(cos(x), expected_unary(x, [](double v) { return std::cos(v); }), rtol, atol * 4);
        REQUIRE(exp(x).type() == dt);
    }
}

TEST_CASE("unary ops follow PyTorch at edge values", "[ops][unary][edge]") {
    const double inf = std::numeric_limits<double>::infinity();
    const Tensor e = tensor({-inf, -0.0, 0.0, inf, std::nan("")});
    require_close(exp(e), {0.0, 1.0, 1.0, inf, NAN}, 0, 0);
    require_close(log(tensor({0.0, -1.0, inf})), {-inf, NAN, inf}, 0, 0);
    require_close(sqrt(tensor({0.0, -1.0, inf})), {0.0, NAN, inf}, 0, 0);
    require_close(tanh(e), {-1.0, -0.0, 0.0, 1.0, NAN}, 0, 0);
    require_close(sigmoid(tensor({-200.0, 200.0})), {0.0, 1.0}, 0, 1e-30);
    require_close(exp(tensor({100.0})), {inf}, 0, 0);  // overflows to +inf in float32
    // relu(-0.0) is -0.0 and relu(NaN) is NaN, as in PyTorch.
    const auto r = relu(tensor({-0.0, std::nan("")})).to_vector<float>();
    REQUIRE(std::signbit(r[0]));
    REQUIRE(std::isnan(r[1]));
    REQUIRE_FALSE(std::signbit(abs(tensor({-0.0})).item<float>()));
    // Denormals are kept (no flush to zero).
    const float denorm = std::numeric_limits<float>::denorm_min() * 8;
    REQUIRE(abs(from_vector(std::vector<float>{-denorm})).item<float>() == denorm);
    REQUIRE(relu(from_vector(std::vector<float>{denorm})).item<float>() == denorm);
}

TEST_CASE("unary ops on integer and bool tensors", "[ops][unary][dtype]") {
    const Tensor i = tensor({-3, 0, 5});
    REQUIRE(neg(i).to_vector<std::int64_t>() == std::vector<std::int64_t>{3, 0, -5});
    REQUIRE(abs(i).type() == dtype::int64);
    REQUIRE(relu(i).to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 0, 5});
    REQUIRE(exp(i).type() == dtype::float32);  // floating math promotes integers to the default float
    REQUIRE(sqrt(tensor({4, 9})).to_vector<float>() == std::vector<float>{2.f, 3.f});
    REQUIRE_THROWS_WITH(neg(tensor({true})), Contains("bool") && Contains("logical_not"));
    REQUIRE_THROWS_WITH(gelu(i, "fast"), Contains("approximate"));
    REQUIRE_THROWS_WITH(exp(Tensor{}), Contains("exp") && Contains("undefined"));
}

TEST_CASE("binary ops broadcast like NumPy", "[ops][binary][broadcast]") {
    const Tensor col = tensor({1.0, 2.0, 3.0}, {3, 1});
    const Tensor row = tensor({10.0, 20.0}, {1, 2});
    Tensor s = col + row;
    REQUIRE(s.sizes() == int_list{3, 2});
    REQUIRE(s.to_vector<float>() == std::vector<float>{11, 21, 12, 22, 13, 23});
    REQUIRE((row - col).to_vector<float>() == std::vector<float>{9, 19, 8, 18, 7, 17});
    REQUIRE((col * row).to_vector<float>() == std::vector<float>{10, 20, 20, 40, 30, 60});
    REQUIRE((row / col).sizes() == int_list{3, 2});
    // 0-dim with n-dim, and 0-sized broadcasting.
    REQUIRE((scalar_tensor(2.0) * col).to_vector<float>() == std::vector<float>{2, 4, 6});
    REQUIRE((zeros({0, 1}) + ones({1, 4})).sizes() == int_list{0, 4});
    REQUIRE((scalar_tensor(1.5) + scalar_tensor(2.0)).dim() == 0);
    REQUIRE_THROWS_WITH(ones({2, 3}) + ones({3, 2}), Contains("add") && Contains("[2, 3]") && Contains("[3, 2]"));
    REQUIRE_THROWS_WITH(ones({2}) * Tensor{}, Contains("mul") && Contains("undefined"));
}

TEST_CASE("binary ops on strided and expanded views agree with contiguous copies", "[ops][binary][strided]") {
    manual_seed(11);
    for (dtype dt : {dtype::float32, dtype::float64}) {
        Tensor a = randn({7, 33}, dt);
        Tensor b = randn({33, 7}, dt).t();          // transposed
        Tensor c = randn({7, 66}, dt).slice(1, 0, 66, 2);  // stride 2 in the last dim
        Tensor d = randn({33}, dt);                 // broadcast over rows
        for (auto op : {std::function<Tensor(const Tensor&, const Tensor&)>(
                            [](const Tensor& x, const Tensor& y) { return x + y; }),
                        std::function<Tensor(const Tensor&, const Tensor&)>(
                            [](const Tensor& x, const Tensor& y) { return x * y; }),
                        std::function<Tensor(const Tensor&, const Tensor&)>(
                            [](const Tensor& x, const Tensor& y) { return maximum(x, y); })}) {
            REQUIRE(equal(op(a, b), op(a.contiguous(), b.contiguous())));
            REQUIRE(equal(op(b, c), op(b.contiguous(), c.contiguous())));
            REQUIRE(equal(op(c, d), op(c.contiguous(), d.expand({7, 33}).contiguous())));
        }
        // Scalar forms equal the tensor forms with a 0-dim operand.
        REQUIRE(equal(a * 3.0, a * scalar_tensor(3.0, dt)));
        REQUIRE(equal(2.0 - a, scalar_tensor(2.0, dt) - a));
    }
}

TEST_CASE("binary ops: type promotion and integer semantics", "[ops][binary][dtype]") {
    const Tensor i = tensor({1, 2, 3});
    const Tensor f = tensor({0.5, 0.5, 0.5});
    REQUIRE((i + f).type() == dtype::float32);
    REQUIRE((i + 1).type() == dtype::int64);
    REQUIRE((i * 2.5).type() == dtype::float32);
    REQUIRE((i * 2.5).to_vector<float>() == std::vector<float>{2.5f, 5.f, 7.5f});
    REQUIRE((i / 2).type() == dtype::float32);  // true division
    REQUIRE((i / 2).to_vector<float>() == std::vector<float>{0.5f, 1.f, 1.5f});
    REQUIRE((f + ones({3}, dtype::float64)).type() == dtype::float64);
    REQUIRE(pow(i, 2).to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 4, 9});
    REQUIRE(pow(2, i).to_vector<std::int64_t>() == std::vector<std::int64_t>{2, 4, 8});
    REQUIRE_THROWS_WITH(pow(i, -1), Contains("negative integer powers"));
    REQUIRE(maximum(i, tensor({3, 0, 3})).to_vector<std::int64_t>() == std::vector<std::int64_t>{3, 2, 3});
    const Tensor t = tensor({true, false}), u = tensor({true, true});
    REQUIRE((t + u).type() == dtype::bool_);
    REQUIRE((t * u).to_vector<bool>() == std::vector<bool>{true, false});
    REQUIRE_THROWS_WITH(t - u, Contains("bool"));
    REQUIRE((t + 1).to_vector<std::int64_t>() == std::vector<std::int64_t>{2, 1});
}

TEST_CASE("binary ops follow IEEE and PyTorch at edge values", "[ops][binary][edge]") {
    const double inf = std::numeric_limits<double>::infinity();
    require_close(tensor({1.0, -1.0, 0.0}) / tensor({0.0, 0.0, 0.0}), {inf, -inf, NAN}, 0, 0);
    // maximum/minimum propagate NaN from either side.
    const Tensor n = tensor({std::nan(""), 1.0, 2.0});
    const Tensor m = tensor({0.0, std::nan(""), 3.0});
    require_close(maximum(n, m), {NAN, NAN, 3.0}, 0, 0);
    require_close(minimum(n, m), {NAN, NAN, 2.0}, 0, 0);
    require_close(pow(tensor({-2.0, 0.0, 2.0, 4.0, -8.0}), tensor({3.0, 0.0, -1.0, 0.5, 1.0 / 3.0})),
                  {-8.0, 1.0, 0.5, 2.0, NAN}, 1e-6, 0);
    require_close(pow(tensor({0.0}), -1.0), {inf}, 0, 0);
}

TEST_CASE("comparisons return bool tensors", "[ops][compare]") {
    const Tensor a = tensor({1.0, 2.0, std::nan("")});
    const Tensor b = tensor({2.0, 2.0, 2.0});
    REQUIRE((a < b).type() == dtype::bool_);
    REQUIRE((a < b).to_vector<bool>() == std::vector<bool>{true, false, false});
    REQUIRE((a <= b).to_vector<bool>() == std::vector<bool>{true, true, false});
    REQUIRE((a == b).to_vector<bool>() == std::vector<bool>{false, true, false});
    REQUIRE((a != b).to_vector<bool>() == std::vector<bool>{true, false, true});  // NaN != x
    REQUIRE((a > 1.5).to_vector<bool>() == std::vector<bool>{false, true, false});
    REQUIRE(ge(tensor({1, 5}), tensor({2, 5})).to_vector<bool>() == std::vector<bool>{false, true});
    REQUIRE((tensor({1, 2}) == 2.0).to_vector<bool>() == std::vector<bool>{false, true});
    REQUIRE((tensor({1.0, 2.0}, {2, 1}) > tensor({1.5, 0.5})).sizes() == int_list{2, 2});
}

TEST_CASE("where selects with broadcasting and promotion", "[ops][where]") {
    const Tensor c = tensor({true, false, true});
    REQUIRE(where(c, tensor({1.0, 2.0, 3.0}), tensor({-1.0, -2.0, -3.0})).to_vector<float>() ==
            std::vector<float>{1, -2, 3});
    REQUIRE(where(c, tensor({1, 2, 3}), 0.5).to_vector<float>() == std::vector<float>{1, 0.5f, 3});
    REQUIRE(where(c.view({3, 1}), ones({1, 2}), zeros({1})).to_vector<float>() == std::vector<float>{1, 1, 0, 0, 1, 1});
    REQUIRE(where(c, tensor({1, 2, 3}), tensor({4, 5, 6})).type() == dtype::int64);
    REQUIRE_THROWS_WITH(where(ones({3}), ones({3}), ones({3})), Contains("bool"));
    // The NaN rows of a float tensor can be masked out.
    const Tensor x = tensor({1.0, std::nan(""), 3.0});
    REQUIRE(where(x != x, 0.0, x).to_vector<float>() == std::vector<float>{1, 0, 3});
}

TEST_CASE("log1p and expm1: accurate where log(1+x) and exp(x)-1 cancel, PyTorch's dtypes and backward nodes",
          "[ops][log1p]") {
    for (dtype t : {dtype::float32, dtype::float64}) {
        INFO(t);
        const double tiny = t == dtype::float32 ? 1e-10 : 1e-17;  // 1 + tiny rounds to 1
        const Tensor x = tensor({tiny, -tiny, 0.0, -0.0, -1.0, -2.0}).to(t);
        const auto l = log1p(x).to(dtype::float64).to_vector<double>();
        const auto e = expm1(x).to(dtype::float64).to_vector<double>();
        CHECK(log(x + 1.0).to(dtype::float64).to_vector<double>()[0] == 0.0);  // the cancellation
        CHECK(l[0] == static_cast<double>(x.to(dtype::float64).to_vector<double>()[0]));
        CHECK(e[0] == l[0]);
        CHECK(l[1] == -l[0]);
        CHECK(e[1] == -e[0]);
        CHECK((l[2] == 0.0 && !std::signbit(l[2]) && std::signbit(l[3]) && l[3] == 0.0));
        CHECK((e[2] == 0.0 && !std::signbit(e[2]) && std::signbit(e[3]) && e[3] == 0.0));
        CHECK(l[4] == -std::numeric_limits<double>::infinity());
        CHECK(std::isnan(l[5]));
        CHECK(e[4] == Approx(std::expm1(-1.0)).epsilon(1e-6));
        CHECK(log1p(x).type() == t);
    }
    // Integer tensors promote to the default float dtype, as torch.log1p / torch.expm1.
    const Tensor i = tensor({0, 1, 2});
    CHECK(log1p(i).type() == dtype::float32);
    CHECK(expm1(i).type() == dtype::float32);
    CHECK(log1p(i).to_vector<float>()[1] == static_cast<float>(std::log1p(1.0)));
    // Backward nodes and their formulas: grad / (self + 1), grad * (result + 1).
    const Tensor a = tensor({0.5, -0.5, 2.0}, {3}).to(dtype::float64).requires_grad_();
    const Tensor yl = log1p(a), ye = expm1(a);
    REQUIRE(yl.grad_fn());
    REQUIRE(ye.grad_fn());
    CHECK(yl.grad_fn()->name() == "Log1PBackward0");
    CHECK(ye.grad_fn()->name() == "Expm1Backward0");
    const auto gl = autograd::grad({yl.sum()}, {a})[0].to_vector<double>();
    const auto ge = autograd::grad({ye.sum()}, {a})[0].to_vector<double>();
    const auto av = a.detach().to_vector<double>();
    for (std::size_t k = 0; k < av.size(); ++k) {
        CHECK(gl[k] == Approx(1.0 / (1.0 + av[k])).epsilon(1e-15));
        CHECK(ge[k] == Approx(std::exp(av[k])).epsilon(1e-15));
    }
}

TEST_CASE("method forms and compound assignment match the free functions (PyTorch's Tensor methods)", "[ops][methods]") {
    const Tensor x = randn({3, 4}, dtype::float64), y = randn({3, 4}, dtype::float64);
    CHECK(equal(x.add(y), x + y));
    CHECK(allclose(x.add(y, 2.5), x + y * 2.5, 0, 0));  // torch.add's alpha
    CHECK(equal(x.add(2.0), x + 2.0));
    CHECK(equal(x.sub(y), x - y));
    CHECK(allclose(x.sub(y, -3), x + y * 3.0, 0, 0));
    CHECK(equal(x.mul(2), x * 2));
    CHECK(equal(x.mul(y), x * y));
    CHECK(equal(x.div(y), x / y));
    CHECK(equal(x.div(4.0), x / 4.0));
    CHECK(equal(x.sin(), sin(x)));
    CHECK(equal(x.cos(), cos(x)));
    CHECK(equal(x.abs().log1p(), log1p(abs(x))));
    CHECK(equal(x.expm1(), expm1(x)));
    CHECK(equal(x.abs().rsqrt(), rsqrt(abs(x))));
    CHECK(equal(x.sign(), sign(x)));
    CHECK(equal(x.maximum(y), maximum(x, y)));
    CHECK(equal(x.minimum(y), minimum(x, y)));
    CHECK(equal(x.gt(y), x > y));
    CHECK(equal(x.le(0.0), x <= 0.0));
    CHECK(equal(x.eq(x), ones({3, 4}, dtype::bool_)));
    CHECK(equal(x.ne(x), zeros({3, 4}, dtype::bool_)));
    CHECK(equal(x.lt(y), y > x));
    CHECK(equal(x.ge(y), y <= x));
    // Integer alpha keeps an int64 tensor int64, as PyTorch.
    const Tensor i = tensor({1, 2, 3});
    CHECK(i.add(2, 3).type() == dtype::int64);
    CHECK(equal(i.add(2, 3), tensor({7, 8, 9})));
    // += -= *= /= are add_ sub_ mul_ div_: in place, same storage, version bumped.
    Tensor z = x.clone();
    const auto v0 = z._version();
    const void* data = z.raw_data();
    z += y;
    z *= 2.0;
    z -= 1.0;
    z /= y;
    CHECK(z.raw_data() == data);
    CHECK(z._version() == v0 + 4);
    CHECK(allclose(z, ((x + y) * 2.0 - 1.0) / y, 0, 0));
    Tensor k = tensor({4, 6});
    CHECK_THROWS_WITH(k *= 0.5, Catch::Contains("can't be cast"));  // in-place keeps the dtype, as PyTorch
    k *= 3;
    CHECK(equal(k, tensor({12, 18})));
}
