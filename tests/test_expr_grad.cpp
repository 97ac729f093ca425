// Compile-time gradients (grad, joint under every save policy) interpreted
// eagerly agree with eager autograd and with central finite differences (float64).
#include <catch2/catch.hpp>

#include <array>
#include <cstddef>
#include <vector>

#include <graft/graft.hpp>

using namespace graft;
namespace ex = graft::expr;

namespace {

Tensor input(const int_list& sizes, std::uint64_t seed, double lo = -1.5, double hi = 1.5) {
    generator g(seed);
    return (rand(sizes, dtype::float64, g) * (hi - lo) + lo).detach();
}

bool close(const Tensor& a, const Tensor& b, double tol = 1e-6) {
    return a.sizes() == b.sizes() && allclose(a, b, tol, tol);
}

// d(sum_j <out_j, gout_j>)/d(args[k]) by central differences.
template <class F, std::size_t N, std::size_t M>
Tensor finite_difference(const F& f, const std::array<Tensor, N>& args, const std::array<Tensor, M>& gouts,
                         std::size_t k) {
    const double h = 1e-6;
    Tensor at = args[k].clone().contiguous();
    Tensor grad = zeros(at.sizes(), dtype::float64);
    auto loss = [&](const Tensor& xk) {
        std::array<Tensor, N> a = args;
        a[k] = xk;
        auto outs = std::apply([&](const auto&... t) { return ex::interpret_all(ex::trace<N>(f), t...); }, a);
        double s = 0;
        for (std::size_t j = 0; j < M; ++j) s += sum(outs[j] * gouts[j]).template item<double>();
        return s;
    };
    double* p = at.data_ptr<double>();
    double* gp = grad.data_ptr<double>();
    for (std::int64_t i = 0; i < at.numel(); ++i) {
        const double old = p[i];
        p[i] = old + h;
        const double up = loss(at);
        p[i] = old - h;
        const double down = loss(at);
        p[i] = old;
        gp[i] = (up - down) / (2 * h);
    }
    return grad;
}

// Checks grad<0..N-1>, joint under three policies, eager autograd and finite differences.
template <std::size_t N, class F, std::size_t M>
void check_gradients(const F& f, const std::array<Tensor, N>& args, const std::array<Tensor, M>& gouts) {
    auto e = ex::trace<N>(f);
    auto gr = [&]<std::size_t... I>(std::index_sequence<I...>) { return ex::grad<I...>(e); }(
        std::make_index_sequence<N>{});

    // eager autograd on the same function
    std::array<Tensor, N> leaves;
    for (std::size_t k = 0; k < N; ++k) leaves[k] = args[k].clone().detach().requires_grad_();
    auto eager_outs = std::apply([&](const auto&... t) { return ex::interpret_all(e, t...); }, leaves);
    Tensor total = zeros({}, dtype::float64);
    for (std::size_t j = 0; j < M; ++j) total = total + sum(eager_outs[j] * gouts[j]);
    total.backward();

    auto expr_grads = std::apply(
        [&](const auto&... t) { return std::apply([&](const auto&... g) { return ex::interpret_all(gr, t..., g...); }, gouts); },
        args);

    auto check_joint = [&](auto policy) {
        auto j = ex::joint(e, policy);
        auto fwd = std::apply([&](const auto&... t) { return ex::interpret_all(j.forward, t...); }, args);
        REQUIRE(fwd.size() == M + j.num_saved);
        auto plain = std::apply([&](const auto&... t) { return ex::interpret_all(e, t...); }, args);
        for (std::size_t m = 0; m < M; ++m) CHECK(close(fwd[m], plain[m], 0));
        auto bwd = [&]<std::size_t... I, std::size_t... G, std::size_t... S>(
            std::index_sequence<I...>, std::index_sequence<G...>, std::index_sequence<S...>) {
            return ex::interpret_all(j.backward, args[I]..., gouts[G]..., fwd[M + S]...);
        }(std::make_index_sequence<N>{}, std::make_index_sequence<M>{}, std::make_index_sequence<j.num_saved>{});
        for (std::size_t k = 0; k < N; ++k) CHECK(close(ex::sum_to(bwd[k], args[k].sizes()), ex::sum_to(expr_grads[k], args[k].sizes()), 1e-12));
    };
    check_joint(ex::save_policy::save_all);
    check_joint(ex::save_policy::recompute);
    check_joint(ex::save_policy::recompute_cheap);

    for (std::size_t k = 0; k < N; ++k) {
        INFO("input " << k);
        const Tensor mine = ex::sum_to(expr_grads[k], args[k].sizes());
        const Tensor eager = leaves[k].grad().defined() ? leaves[k].grad() : zeros(args[k].sizes(), dtype::float64);
        CHECK(close(mine, eager, 1e-12));
        CHECK(close(mine, finite_difference(f, args, gouts, k), 1e-5));
    }
}

}  // namespace

TEST_CASE("expr grad: the design chain, same shapes and broadcasting", "[expr]") {
    auto f = [](auto x, auto w) { return tanh(x * w + 1.0) * sigmoid(x); };
    check_gradients<2>(f, std::array{input({6}, 1), input({6}, 2)}, std::array{input({6}, 3)});
    check_gradients<2>(f, std::array{input({4, 1}, 4), input({3}, 5)}, std::array{input({4, 3}, 6)});
    check_gradients<2>(f, std::array{input({2, 3}, 7), input({}, 8)}, std::array{input({2, 3}, 9)});
}

TEST_CASE("expr grad: every differentiable unary op", "[expr]") {
    auto f = [](auto x) {
        return ex::outputs_of(exp(x) + sin(x) * cos(x), tanh(x) - sigmoid(x) * relu(x), -abs(x),
                              log(x * x + 1.0) * sqrt(x * x + 0.5) + rsqrt(x * x + 2.0));
    };
    check_gradients<1>(f, std::array{input({7}, 10)},
                       std::array{input({7}, 11), input({7}, 12), input({7}, 13), input({7}, 14)});
}

TEST_CASE("expr grad: every differentiable binary op and where", "[expr]") {
    auto f = [](auto x, auto y) {
        return ex::outputs_of(x / (y * y + 1.0) - x * y + (x - y), pow(x * x + 0.5, y),
                              maximum(x, y) * minimum(x, y), where(x > y, sin(x), cos(y)) + where(x < 0.0, y, 2.0));
    };
    check_gradients<2>(f, std::array{input({3, 4}, 15), input({4}, 16)},
                       std::array{input({3, 4}, 17), input({3, 4}, 18), input({3, 4}, 19), input({3, 4}, 20)});
}

TEST_CASE("expr grad: an input that does not reach the output has gradient 0", "[expr]") {
    auto f = [](auto x, auto y) { return ex::outputs_of(exp(x) * 2.0, x - (y > x)); };
    // y only reaches the output through a comparison: no gradient flows.
    auto e = ex::trace<2>(f);
    auto g = ex::grad<1>(e);
    CHECK(ex::to_string(g) == "0");
    const Tensor y = input({3}, 21);
    CHECK(close(ex::sum_to(ex::interpret_all(g, input({3}, 22), y, input({3}, 23), input({3}, 24))[0], y.sizes()),
                zeros({3}, dtype::float64), 0));
}

TEST_CASE("expr grad: joint save policies trade saved values for recomputation", "[expr]") {
    auto e = ex::trace<2>([](auto x, auto w) { return exp(x * w) * (x + w); });
    auto a = ex::joint(e, ex::save_policy::save_all);
    auto b = ex::joint(e, ex::save_policy::recompute);
    auto c = ex::joint(e, ex::save_policy::recompute_cheap);
    STATIC_REQUIRE(a.num_saved == 2);  // exp(x*w) and x+w (x*w is read only through exp's output)
    STATIC_REQUIRE(b.num_saved == 0);
    STATIC_REQUIRE(c.num_saved == 1);  // exp(x*w); x+w is recomputed
    CHECK(ex::to_string(c.forward) == "(mul(exp(mul(%0, %1)), add(%0, %1)), exp(mul(%0, %1)))");
}

TEST_CASE("expr grad: through sum and mean at the root", "[expr][reduce]") {
    // The output gradient of a reduction is 0-dim; it broadcasts over the domain.
    auto f = [](auto x, auto w) { return sum(tanh(x * w + 1.0) * sigmoid(x)); };
    check_gradients<2>(f, std::array{input({6}, 30), input({6}, 31)}, std::array{input({}, 32)});
    check_gradients<2>(f, std::array{input({4, 1}, 33), input({3}, 34)}, std::array{input({}, 35)});
    // mean divides by the domain's element count (numel), here 2*3.
    auto g = [](auto x, auto w) { return ex::outputs_of(mean(exp(x) * w), x - w, sum(w * w)); };
    check_gradients<2>(g, std::array{input({2, 3}, 36), input({}, 37)},
                       std::array{input({}, 38), input({2, 3}, 39), input({}, 40)});
    // mean of an argument alone: its gradient is g / numel broadcast to the argument.
    auto h = [](auto x) { return mean(x); };
    check_gradients<1>(h, std::array{input({5}, 41)}, std::array{input({}, 42)});
}
