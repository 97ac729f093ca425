// Traced graphs evaluated by the eager interpreter: same values as eager graft,
// and every pass keeps them bit for bit.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include <graft/graft.hpp>

using namespace graft;
namespace ex = graft::expr;

namespace {

Tensor input(const int_list& sizes, std::uint64_t seed, dtype t = dtype::float64) {
    generator g(seed);
    return (rand(sizes, t, g) * 3.0 - 1.5).detach();
}

// Bitwise equality (NaN == NaN, +0 != -0).
bool same_bits(const Tensor& a, const Tensor& b) {
    if (a.sizes() != b.sizes() || a.type() != b.type()) return false;
    const auto va = a.to(dtype::float64).to_vector<double>();
    const auto vb = b.to(dtype::float64).to_vector<double>();
    for (std::size_t i = 0; i < va.size(); ++i) {
        if (std::isnan(va[i]) && std::isnan(vb[i])) continue;
        if (va[i] != vb[i] || std::signbit(va[i]) != std::signbit(vb[i])) return false;
    }
    return true;
}

}  // namespace

TEST_CASE("expr: trace and interpret equal eager graft", "[expr]") {
    auto f = [](auto x, auto w) { return tanh(x * w + 1.0) * sigmoid(x); };
    auto e = ex::trace<2>(f);
    CHECK(e.literals[0] == 1.0);
    CHECK(ex::to_string(e) == "mul(tanh(add(mul(%0, %1), #0)), sigmoid(%0))");
    for (dtype t : {dtype::float32, dtype::float64}) {
        const Tensor x = input({5, 3}, 1, t), w = input({3}, 2, t);  // broadcasting
        CHECK(same_bits(ex::interpret(e, x, w), f(x, w)));
    }
}

TEST_CASE("expr: runtime numbers are literals, captured values too", "[expr]") {
    const double alpha = 0.25;
    auto f = [alpha](auto x) { return x * alpha + 2.0; };
    auto e = ex::trace<1>(f);
    REQUIRE(e.literals.size() == 2);
    CHECK(e.literals[0] == 0.25);
    CHECK(e.literals[1] == 2.0);
    const Tensor x = input({7}, 3);
    CHECK(same_bits(ex::interpret(e, x), f(x)));
    CHECK(same_bits(ex::interpret(e, 1.5), full({}, 1.5 * 0.25 + 2.0, default_float_dtype)));
}

TEST_CASE("expr: multiple outputs share subexpressions", "[expr]") {
    auto f = [](auto x, auto y) {
        auto h = exp(x - y);
        return ex::outputs_of(h * h, where(x > y, h, -h), maximum(x, y) / minimum(x, y));
    };
    auto e = ex::trace<2>(f);
    using G = decltype(e)::graph_type;
    static_assert(G::results::size == 3);
    const Tensor x = input({4, 4}, 4), y = input({4}, 5);
    auto outs = ex::interpret_all(e, x, y);
    const Tensor h = exp(x - y);
    CHECK(same_bits(outs[0], h * h));
    CHECK(same_bits(outs[1], where(x > y, h, -h)));
    CHECK(same_bits(outs[2], maximum(x, y) / minimum(x, y)));
}

TEST_CASE("expr: every op of the table through the interpreter", "[expr]") {
    auto f = [](auto x, auto y) {
        return ex::outputs_of(neg(abs(exp(log(sqrt(rsqrt(tanh(sigmoid(relu(sin(cos(sign(x)))))))))))),
                              pow(abs(x) + 0.5, y) - x / y, where(logical_and(x < y, x != y), x, y),
                              where(x <= y, x, y) + where(x >= y, x, y) + where(x == y, x, y),
                              log1p(abs(x)) * expm1(y));
    };
    auto e = ex::trace<2>(f);
    const Tensor x = input({9}, 6), y = input({9}, 7);
    auto outs = ex::interpret_all(e, x, y);
    CHECK(same_bits(outs[0], neg(abs(exp(log(sqrt(rsqrt(tanh(sigmoid(relu(sin(cos(sign(x))))))))))))));
    CHECK(same_bits(outs[1], pow(abs(x) + 0.5, y) - x / y));
    CHECK(same_bits(outs[2], where(logical_and(x < y, x != y), x, y)));
    CHECK(same_bits(outs[3], where(x <= y, x, y) + where(x >= y, x, y) + where(x == y, x, y)));
    CHECK(same_bits(outs[4], log1p(abs(x)) * expm1(y)));
}

TEST_CASE("expr: passes keep values bit for bit, signed zeros and NaN included", "[expr]") {
    auto f = [](auto x, auto y) {
        return ex::outputs_of(-(-(x * ex::c<1.0>)) + ex::c<2.0> * ex::c<3.0>,
                              (x + ex::c<-0.0>) / ex::c<1.0> - ex::c<0.0>,
                              x + ex::c<0.0>,                                        // not simplified
                              where(x > y, y, y) * (ex::c<1.0> / ex::c<3.0>) + 0.5,  // 1/3 folded
                              maximum(x, x) * ex::c<0.0>);
    };
    auto e = ex::trace<2>(f);
    auto o = ex::optimize<ex::default_pipeline>(e);
    CHECK(o.literals == e.literals);
    CHECK(ex::to_string(o) ==
          "(add(%0, 6), %0, add(%0, 0), add(mul(%1, 0.3333333333333333), #0), mul(%0, 0))");
    const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    for (dtype t : {dtype::float32, dtype::float64}) {
        const Tensor x = tensor<double>({0.0, -0.0, 1.5, -inf, inf, nan, 3.0}).to(t);
        const Tensor y = tensor<double>({-0.0, 0.0, 2.0, 1.0, -1.0, 0.0, 1e30}).to(t);
        auto a = ex::interpret_all(e, x, y);
        auto b = ex::interpret_all(o, x, y);
        for (std::size_t i = 0; i < a.size(); ++i) {
            INFO("output " << i << " float64 " << (t == dtype::float64));
            CHECK(same_bits(a[i], b[i]));
        }
    }
}

struct drop_second_output {
    template <class G>
    struct impl;
    template <class I, std::size_t A, std::size_t B, std::size_t L>
    struct impl<ex::graph<I, ex::outputs<A, B>, L>> {
        using type = ex::graph<I, ex::outputs<A>, L>;
    };
    template <class G>
    using apply = typename impl<G>::type;
};
TEST_CASE("expr: a user-written pass in a pipeline", "[expr]") {
    auto e = ex::trace<1>([](auto x) { return ex::outputs_of(exp(x) * 2.0, log(x)); });
    auto o = ex::optimize<ex::pipeline<drop_second_output, ex::dce>>(e);
    CHECK(ex::to_string(o) == "mul(exp(%0), #0)");
    const Tensor x = input({3}, 8).abs();
    CHECK(same_bits(ex::interpret(o, x), exp(x) * 2.0));
}
