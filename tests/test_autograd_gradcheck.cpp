// Every differentiable op against finite differences (gradcheck) in float64,
// and second derivatives (gradgradcheck) for the smooth ones.
#include <catch2/catch.hpp>

#include <functional>

#include <graft/graft.hpp>

using namespace graft;
using autograd::gradcheck;
using autograd::gradgradcheck;
using autograd::tensor_list;

namespace {

Tensor leaf(const int_list& sizes, double lo = -1.5, double hi = 1.5, std::uint64_t seed = 1) {
    generator g(seed);
    Tensor t = rand(sizes, dtype::float64, g) * (hi - lo) + lo;
    return t.detach().requires_grad_();
}

using unary_fn = std::function<Tensor(const Tensor&)>;
using binary_fn = std::function<Tensor(const Tensor&, const Tensor&)>;

void check_unary(const unary_fn& f, const Tensor& x, bool second = true) {
    auto wrapped = [&](const tensor_list& in) { return tensor_list{f(in[0])}; };
    REQUIRE(gradcheck(wrapped, {x}));
    if (second) REQUIRE(gradgradcheck(wrapped, {x}));
}

void check_binary(const binary_fn& f, const Tensor& a, const Tensor& b, bool second = true) {
    auto wrapped = [&](const tensor_list& in) { return tensor_list{f(in[0], in[1])}; };
    REQUIRE(gradcheck(wrapped, {a, b}));
    if (second) REQUIRE(gradgradcheck(wrapped, {a, b}));
}

}  // namespace

TEST_CASE("gradcheck: unary ops, contiguous and non-contiguous, 0-dim", "[autograd][gradcheck]") {
    const Tensor x = leaf({3, 4});
    const Tensor xt = leaf({4, 3}, -1.5, 1.5, 2);  // used transposed: a non-contiguous input
    const Tensor pos = leaf({2, 3}, 0.2, 3.0, 3);
    const Tensor s = leaf({}, -1.0, 1.0, 4);
    for (const auto& [name, f, domain_pos] :
         std::vector<std::tuple<std::string, unary_fn, bool>>{
             {"neg", [](const Tensor& t) { return -t; }, false},
             {"exp", [](const Tensor& t) { return exp(t); }, false},
             {"log", [](const Tensor& t) { return log(t); }, true},
             {"sqrt", [](const Tensor& t) { return sqrt(t); }, true},
             {"rsqrt", [](const Tensor& t) { return rsqrt(t); }, true},
             {"tanh", [](const Tensor& t) { return tanh(t); }, false},
             {"sigmoid", [](const Tensor& t) { return sigmoid(t); }, false},
             {"gelu", [](const Tensor& t) { return gelu(t); }, false},
             {"gelu_tanh", [](const Tensor& t) { return gelu(t, "tanh"); }, false},
             {"sin", [](const Tensor& t) { return sin(t); }, false},
             {"cos", [](const Tensor& t) { return cos(t); }, false},
             {"log1p", [](const Tensor& t) { return log1p(t); }, true},
             {"expm1", [](const Tensor& t) { return expm1(t); }, false},
             {"pow_scalar", [](const Tensor& t) { return pow(t, 3.0); }, false},
             {"scalar_pow", [](const Tensor& t) { return pow(2.0, t); }, false},
             {"rsub", [](const Tensor& t) { return 1.0 - t; }, false},
             {"rdiv", [](const Tensor& t) { return 2.0 / t; }, true},
             {"softmax", [](const Tensor& t) { return softmax(t, -1); }, false},
             {"log_softmax", [](const Tensor& t) { return log_softmax(t, 0); }, false},
         }) {
        INFO(name);
        check_unary(f, domain_pos ? pos : x);
        if (!domain_pos) {
            check_unary([&f](const Tensor& t) { return f(t.t()); }, xt);
            check_unary(f, s);
        }
    }
    // log1p on (-1, 0) too, its derivative 1/(1+x) growing toward -1.
    check_unary([](const Tensor& t) { return log1p(t); }, leaf({2, 3}, -0.8, 1.5, 11));
    check_unary([](const Tensor& t) { return log1p(t.t()); }, leaf({3, 2}, -0.8, 1.5, 12));
    // Piecewise ops: first derivatives away from the kinks.
    check_unary([](const Tensor& t) { return abs(t); }, leaf({5}, 0.1, 2.0, 5) * 1.0 - 1.05, false);
    check_unary([](const Tensor& t) { return relu(t); }, leaf({2, 3}, 0.1, 1.0, 6), false);
}

TEST_CASE("gradcheck: binary ops with broadcasting and number operands", "[autograd][gradcheck]") {
    const Tensor a = leaf({3, 1, 4}, -1.5, 1.5, 7), b = leaf({2, 4}, -1.5, 1.5, 8);
    const Tensor pa = leaf({3, 1, 4}, 0.5, 2.0, 9), pb = leaf({2, 4}, 0.5, 2.0, 10);
    check_binary([](const Tensor& x, const Tensor& y) { return x + y; }, a, b);
    check_binary([](const Tensor& x, const Tensor& y) { return x - y; }, a, b);
    check_binary([](const Tensor& x, const Tensor& y) { return x * y; }, a, b);
    check_binary([](const Tensor& x, const Tensor& y) { return x / y; }, a, pb);
    check_binary([](const Tensor& x, const Tensor& y) { return pow(x, y); }, pa, b);
    check_binary([](const Tensor& x, const Tensor& y) { return maximum(x, y); }, a, b, false);
    check_binary([](const Tensor& x, const Tensor& y) { return minimum(x, y); }, a, b, false);
    const Tensor c = leaf({3, 4}, -1, 1, 11), d = leaf({3, 4}, -1, 1, 12);
    const Tensor mask = rand({3, 4}, dtype::float64) > 0.5;
    check_binary([&](const Tensor& x, const Tensor& y) { return where(mask, x, y); }, c, d);
    check_unary([](const Tensor& x) { return x * 3.0 + 1.0; }, c);
    // A 0-dim tensor broadcasting against a matrix.
    check_binary([](const Tensor& x, const Tensor& y) { return x * y + y; }, leaf({}, -1, 1, 13), c);
}

TEST_CASE("gradcheck: reductions, matmul and views", "[autograd][gradcheck]") {
    const Tensor x = leaf({2, 3, 4}, -1, 1, 14);
    check_unary([](const Tensor& t) { return t.sum(); }, x);
    check_unary([](const Tensor& t) { return t.sum({1}); }, x);
    check_unary([](const Tensor& t) { return t.sum({0, 2}, true); }, x);
    check_unary([](const Tensor& t) { return t.mean({-1}); }, x);
    check_unary([](const Tensor& t) { return t.amax({1}); }, x, false);
    check_unary([](const Tensor& t) { return t.amin(); }, x, false);
    check_unary([](const Tensor& t) { return t.transpose(0, 2) * 2.0; }, x);
    check_unary([](const Tensor& t) { return t.permute({2, 0, 1}).reshape({4, 6}); }, x);
    check_unary([](const Tensor& t) { return t.view({6, 4}).t().contiguous(); }, x);
    check_unary([](const Tensor& t) { return t.narrow(2, 1, 2) * t.narrow(2, 0, 2); }, x);
    check_unary([](const Tensor& t) { return t.slice(1, 0, 3, 2) + 0.0; }, x);
    check_unary([](const Tensor& t) { return t.select(0, 1) * t.select(0, 0); }, x);
    check_unary([](const Tensor& t) { return t.unsqueeze(1).squeeze(1).squeeze(); }, x);
    check_unary([](const Tensor& t) { return t.select(2, 0).unsqueeze(-1).expand({2, 3, 5}); }, x);
    check_unary([](const Tensor& t) { return t.clone() * t.contiguous(); }, x);
    const Tensor a = leaf({2, 3, 4}, -1, 1, 15), m = leaf({4, 5}, -1, 1, 16), v = leaf({4}, -1, 1, 17);
    check_binary([](const Tensor& p, const Tensor& q) { return matmul(p, q); }, a, m);
    check_binary([](const Tensor& p, const Tensor& q) { return matmul(p, q); }, a, v);
    check_binary([](const Tensor& p, const Tensor& q) { return matmul(q, p.transpose(-1, -2)); }, a, v);
    check_binary([](const Tensor& p, const Tensor& q) { return matmul(p, q); }, v, v);
}

TEST_CASE("gradcheck: in-place ops", "[autograd][gradcheck]") {
    const Tensor x = leaf({3, 2}, -1, 1, 18), y = leaf({3, 2}, 0.5, 1.5, 19);
    check_binary([](const Tensor& p, const Tensor& q) {
        Tensor t = p * 1.0;  // a non-leaf to modify in place
        t.mul_(q);
        t.add_(q);
        t.div_(q * 2.0);
        return t;
    }, x, y, false);
    check_unary([](const Tensor& p) {
        Tensor t = p * 1.0;
        t.exp_();
        Tensor u = t * 0.5;  // tanh_ on t itself would overwrite exp_'s saved output (an error, as in PyTorch)
        u.tanh_();
        Tensor w = u + p;
        w.sigmoid_();
        Tensor r = w - 0.5;
        r.relu_();
        return r;
    }, x, false);
    check_binary([](const Tensor& p, const Tensor& q) {
        Tensor t = zeros({3, 2}, dtype::float64);
        t.copy_(q);
        return t * p;
    }, x, y, false);
}

TEST_CASE("gradcheck reports a wrong derivative", "[autograd][gradcheck][errors]") {
    // A function whose recorded gradient is deliberately wrong: x.detach() * x
    // has derivative x (not 2x) through autograd.
    const Tensor x = leaf({3}, 0.5, 1.0, 20);
    auto wrong = [](const tensor_list& in) { return tensor_list{in[0].detach() * in[0]}; };
    REQUIRE_THROWS_WITH(gradcheck(wrong, {x}), Catch::Matchers::Contains("Jacobian mismatch"));
    autograd::gradcheck_options quiet;
    quiet.raise = false;
    REQUIRE_FALSE(gradcheck(wrong, {x}, quiet));
    REQUIRE_THROWS_WITH(gradcheck(wrong, {x.detach()}), Catch::Matchers::Contains("at least one input"));
}

TEST_CASE("to(dtype) passes gradients back in the source dtype", "[autograd][gradcheck]") {
    Tensor x = ones({3}, dtype::float64).requires_grad_();
    (x.to(dtype::float32) * 3.0).sum().backward();
    REQUIRE(x.grad().type() == dtype::float64);
    REQUIRE(x.grad().to_vector<double>() == std::vector<double>{3, 3, 3});
    REQUIRE(x.to(dtype::float32).grad_fn()->name() == "ToCopyBackward0");
}

TEST_CASE("square and clamp: values as PyTorch, gradcheck and gradgradcheck", "[autograd][gradcheck][clamp]") {
    const Tensor x = tensor({-2.0, -0.5, 0.25, 0.9, 3.0}).to(dtype::float64);
    CHECK(equal(x.square(), x * x));
    CHECK(allclose(square(x), tensor({4.0, 0.25, 0.0625, 0.81, 9.0}).to(dtype::float64), 1e-6, 1e-7));
    CHECK(equal(clamp(x, -1.0, 1.0), tensor({-1.0, -0.5, 0.25, 0.9, 1.0}).to(dtype::float64)));
    CHECK(equal(x.clamp_min(0.0), tensor({0.0, 0.0, 0.25, 0.9, 3.0}).to(dtype::float64)));
    CHECK(equal(x.clamp_max(0.0), tensor({-2.0, -0.5, 0.0, 0.0, 0.0}).to(dtype::float64)));
    CHECK(equal(x.clamp({}, 0.5), x.clamp_max(0.5)));
    CHECK(equal(x.clamp(tensor({0.0}).to(dtype::float64), tensor({1.0}).to(dtype::float64)), clamp(x, 0.0, 1.0)));
    CHECK_THROWS_WITH(clamp(x, std::nullopt, std::nullopt), Catch::Contains("At least one of 'min' or 'max'"));
    // NaN stays NaN; a floating bound promotes an integer tensor, as PyTorch's type promotion.
    const Tensor n = clamp(tensor({std::nan(""), 5.0}), 0.0, 1.0);
    CHECK(std::isnan(n.to_vector<double>()[0]));
    const Tensor ic = clamp(tensor({1, 2, 3}), 1.5, std::nullopt);
    CHECK(ic.type() == dtype::float32);
    CHECK(equal(ic, tensor({1.5f, 2.0f, 3.0f})));
    CHECK(equal(clamp(tensor({1, 5, 9}), 2, 7), tensor({2, 5, 7})));  // integer bounds keep int64
    // The gradient flows inside the bounds, bounds included (PyTorch's clamp_backward).
    Tensor b = tensor({-1.0, 0.0, 0.5, 1.0, 2.0}).to(dtype::float64);
    b.requires_grad_();
    const Tensor g = autograd::grad({clamp(b, 0.0, 1.0).sum()}, {b})[0];
    CHECK(equal(g, tensor({0.0, 1.0, 1.0, 1.0, 0.0}).to(dtype::float64)));
    // Finite differences away from the kinks, first and second order.
    Tensor v = tensor({-1.7, -0.3, 0.4, 0.8, 2.2}).to(dtype::float64);
    v.requires_grad_();
    const auto f = [](const autograd::tensor_list& in) {
        return autograd::tensor_list{(clamp(in[0], -1.0, 1.0) * in[0].square()).sum()};
    };
    CHECK(autograd::gradcheck(f, {v}));
    CHECK(autograd::gradgradcheck(f, {v}));
}
