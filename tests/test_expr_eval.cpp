// The fused evaluator (graft/expr/eval.hpp) and ex::function (graft/expr/function.hpp):
// results against the op table's scalar reference and eager graft on every compiled
// SIMD target, tails, broadcasting, strides, scalars, several outputs, static shapes,
// errors; gradients against eager autograd and finite differences.
#include <catch2/catch.hpp>

#include <graft/graft.hpp>
#include <graft/expr/eval.hpp>
#include <graft/expr/function.hpp>
#include <graft/expr/trace.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace ex = graft::expr;
namespace def = graft::ops::def;
using graft::Tensor;

namespace {

/// A hand-written graph with its literal values (what ex::trace produces).
template <class G, std::size_t Arity>
struct hand {
    using graph_type = G;
    static constexpr std::size_t arity = Arity;
    std::array<double, G::num_literals> literals{};
};

// tanh(x*w + #0) * sigmoid(x), and x > w as a second output.
using chain_g = ex::graph<ex::instrs<ex::input<0>, ex::input<1>, ex::apply<def::mul_op, 0, 1>, ex::literal<0>,
                                     ex::apply<def::add_op, 2, 3>, ex::apply<def::tanh_op, 4>,
                                     ex::apply<def::sigmoid_op, 0>, ex::apply<def::mul_op, 5, 6>>,
                          ex::outputs<7>, 1>;
using two_out_g = ex::graph<ex::instrs<ex::input<0>, ex::input<1>, ex::apply<def::mul_op, 0, 1>, ex::literal<0>,
                                       ex::apply<def::add_op, 2, 3>, ex::apply<def::tanh_op, 4>,
                                       ex::apply<def::sigmoid_op, 0>, ex::apply<def::mul_op, 5, 6>,
                                       ex::apply<def::gt_op, 0, 1>>,
                            ex::outputs<7, 8, 4>, 1>;
// where(x < 0.5, exp(x) - 1, relu(x) * w) with a compile-time constant.
using where_g = ex::graph<ex::instrs<ex::input<0>, ex::input<1>, ex::constant<0.5>, ex::apply<def::lt_op, 0, 2>,
                                     ex::apply<def::exp_op, 0>, ex::constant<1.0>, ex::apply<def::sub_op, 4, 5>,
                                     ex::apply<def::relu_op, 0>, ex::apply<def::mul_op, 7, 1>,
                                     ex::apply<def::where_op, 3, 6, 8>>,
                          ex::outputs<9>, 0>;

/// The graph evaluated element by element with the op table's scalar references.
template <class T, class G>
struct scalar_ref;
template <class T, class... Is, std::size_t... Os, std::size_t L>
struct scalar_ref<T, ex::graph<ex::instrs<Is...>, ex::outputs<Os...>, L>> {
    template <std::size_t K>
    static T one(ex::input<K>, const T* in, const double*, const T*) { return in[K]; }
    template <std::size_t K>
    static T one(ex::literal<K>, const T*, const double* lit, const T*) { return static_cast<T>(lit[K]); }
    template <double V>
    static T one(ex::constant<V>, const T*, const double*, const T*) { return static_cast<T>(V); }
    template <class Op, std::size_t... A>
    static T one(ex::apply<Op, A...>, const T*, const double*, const T* v) {
        if constexpr (Op::kind == graft::ops::op_kind::compare) return Op::scalar(v[A]...) ? T(1) : T(0);
        else if constexpr (Op::kind == graft::ops::op_kind::where) {
            constexpr std::size_t ids[] = {A...};
            return Op::scalar(v[ids[0]] != T(0), v[ids[1]], v[ids[2]]);
        } else return Op::scalar(v[A]...);
    }
    static std::array<T, sizeof...(Os)> eval(const T* in, const double* lit) {
        std::array<T, sizeof...(Is)> v{};
        std::size_t i = 0;
        ((v[i] = one(Is{}, in, lit, v.data()), ++i), ...);
        return {v[Os]...};
    }
};

/// Max |a - b| / (1 + |b|) over all elements (a, b of the same shape).
double max_rel_err(const Tensor& a, const Tensor& b) {
    REQUIRE(a.sizes() == b.sizes());
    const auto va = a.to(graft::dtype::float64).contiguous().to_vector<double>();
    const auto vb = b.to(graft::dtype::float64).contiguous().to_vector<double>();
    double m = 0;
    for (std::size_t i = 0; i < va.size(); ++i) {
        if (std::isnan(va[i]) && std::isnan(vb[i])) continue;
        m = std::max(m, std::fabs(va[i] - vb[i]) / (1.0 + std::fabs(vb[i])));
    }
    return m;
}

struct target_guard {
    graft::kernels::target saved = graft::kernels::current_target();
    ~target_guard() { graft::kernels::set_target(saved); }
};

template <class T>
constexpr double tol() {
    return sizeof(T) == 4 ? 2e-6 : 1e-14;
}

}  // namespace

TEST_CASE("expr::evaluate matches the scalar reference on every SIMD target and tail", "[expr]") {
    target_guard guard;
    const hand<two_out_g, 2> e{{0.25}};
    for (auto t : graft::kernels::available_targets()) {
        graft::kernels::set_target(t);
        INFO("target " << graft::kernels::target_name(t));
        for (std::int64_t n : {0, 1, 7, 17, 1000, 1023}) {
            INFO("n = " << n);
            const Tensor x = graft::randn({n}), w = graft::randn({n});
            const auto out = ex::evaluate_all(e, x, w);
            REQUIRE(out[0].sizes() == graft::int_list{n});
            REQUIRE(out[1].type() == graft::dtype::bool_);
            const auto vx = x.to_vector<float>(), vw = w.to_vector<float>();
            const auto y = out[0].to_vector<float>(), a = out[2].to_vector<float>();
            const auto m = out[1].to_vector<bool>();
            double err = 0;
            for (std::size_t i = 0; i < vx.size(); ++i) {
                const float in[2] = {vx[i], vw[i]};
                const auto r = scalar_ref<float, two_out_g>::eval(in, e.literals.data());
                err = std::max(err, std::fabs(double(y[i]) - r[0]) / (1 + std::fabs(r[0])));
                err = std::max(err, std::fabs(double(a[i]) - r[2]) / (1 + std::fabs(r[2])));
                REQUIRE(m[i] == (r[1] != 0));
            }
            CHECK(err < 1e-6);
            // Same as eager graft (up to FMA contraction of x*w + c, one rounding).
            CHECK(max_rel_err(out[0], graft::tanh(x * w + 0.25) * graft::sigmoid(x)) < tol<float>());
        }
    }
}

TEST_CASE("expr::evaluate uses the current target's instantiation", "[expr]") {
    target_guard guard;
    std::vector<Tensor> results;
    const Tensor x = graft::randn({1000}, graft::dtype::float64), w = graft::randn({1000}, graft::dtype::float64);
    const hand<chain_g, 2> e{{-0.5}};
    for (auto t : graft::kernels::available_targets()) {
        graft::kernels::set_target(t);
        const std::size_t lanes = ex::detail::fused_vector_lanes<float>();
        if (t == graft::kernels::target::avx3) CHECK(lanes == 16);
        if (t == graft::kernels::target::avx2) CHECK(lanes == 8);
        if (t == graft::kernels::target::scalar) CHECK(lanes == 1);
        if (t == graft::kernels::target::emu128) CHECK(lanes == 4);  // only with HWY_BROKEN_EMU128=0
        results.push_back(ex::evaluate(e, x, w));
    }
    for (const Tensor& r : results) CHECK(max_rel_err(r, results.back()) < 1e-14);
}

TEST_CASE("expr::evaluate: float64, where and compile-time constants", "[expr]") {
    target_guard guard;
    const hand<where_g, 2> e{};
    for (auto t : graft::kernels::available_targets()) {
        graft::kernels::set_target(t);
        const Tensor x = graft::randn({257}, graft::dtype::float64), w = graft::randn({257}, graft::dtype::float64);
        const Tensor y = ex::evaluate(e, x, w);
        REQUIRE(y.type() == graft::dtype::float64);
        const Tensor ref = graft::where(x < 0.5, graft::exp(x) - 1.0, graft::relu(x) * w);
        CHECK(max_rel_err(y, ref) < tol<double>());
    }
}

TEST_CASE("expr::evaluate: broadcasting, strides, scalars and 0-dim tensors", "[expr]") {
    target_guard guard;
    const hand<chain_g, 2> e{{0.5}};
    const auto eager = [](const Tensor& x, const Tensor& w) { return graft::tanh(x * w + 0.5) * graft::sigmoid(x); };
    for (auto t : graft::kernels::available_targets()) {
        graft::kernels::set_target(t);
        INFO("target " << graft::kernels::target_name(t));
        const Tensor x = graft::randn({4, 37}), w = graft::randn({37}), col = graft::randn({4, 1});
        CHECK(max_rel_err(ex::evaluate(e, x, w), eager(x, w)) < tol<float>());
        CHECK(max_rel_err(ex::evaluate(e, col, w), eager(col, w)) < tol<float>());
        CHECK(ex::evaluate(e, col, w).sizes() == graft::int_list{4, 37});
        // Non-contiguous views (transpose, step slices).
        const Tensor xt = graft::randn({37, 4}).t();
        CHECK(max_rel_err(ex::evaluate(e, xt, x), eager(xt, x)) < tol<float>());
        const Tensor xs = graft::randn({100}).slice(0, 0, 100, 3), ws = graft::randn({34});
        CHECK(max_rel_err(ex::evaluate(e, xs, ws), eager(xs, ws)) < tol<float>());
        // Numbers and 0-dim tensors broadcast.
        CHECK(max_rel_err(ex::evaluate(e, x, 2.0), eager(x, graft::full({}, 2.0))) < tol<float>());
        CHECK(max_rel_err(ex::evaluate(e, 0.3, w), eager(graft::full({}, 0.3), w)) < tol<float>());
        const Tensor s = graft::full({}, -1.5);
        CHECK(max_rel_err(ex::evaluate(e, x, s), eager(x, s)) < tol<float>());
        const Tensor both = ex::evaluate(e, 1.0, 2.0);
        CHECK(both.dim() == 0);
        CHECK(both.item<double>() == Approx(std::tanh(2.5f) / (1 + std::exp(-1.0))).epsilon(1e-6));
        // Empty broadcast result.
        CHECK(ex::evaluate(e, graft::randn({0, 3}), graft::randn({3})).sizes() == graft::int_list{0, 3});
    }
}

TEST_CASE("expr::evaluate: type promotion", "[expr]") {
    const hand<chain_g, 2> e{{0.5}};
    const Tensor x32 = graft::randn({10}), x64 = graft::randn({10}, graft::dtype::float64);
    CHECK(ex::evaluate(e, x32, 2.0).type() == graft::dtype::float32);  // numbers do not promote
    CHECK(ex::evaluate(e, x32, x64).type() == graft::dtype::float64);
    CHECK(ex::evaluate(e, x32, graft::full({}, 2.0, graft::dtype::float64)).type() == graft::dtype::float32);
    const Tensor i64 = graft::arange(10);
    CHECK(ex::evaluate(e, i64, x32).type() == graft::dtype::float32);
    CHECK(max_rel_err(ex::evaluate(e, i64, x32),
                      graft::tanh(i64.to(graft::dtype::float32) * x32 + 0.5) *
                          graft::sigmoid(i64.to(graft::dtype::float32))) < tol<float>());
}

TEST_CASE("expr::evaluate: static shapes", "[expr]") {
    target_guard guard;
    const hand<two_out_g, 2> e{{0.5}};
    for (auto t : graft::kernels::available_targets()) {
        graft::kernels::set_target(t);
        const Tensor x = graft::randn({1024}), w = graft::randn({1024});
        const auto a = ex::evaluate_all(ex::static_shape<1024>{}, e, x, w);
        const auto b = ex::evaluate_all(e, x, w);
        for (std::size_t j = 0; j < 3; ++j) CHECK(max_rel_err(a[j], b[j]) == 0);
        // Not a multiple of the vector length, 2-d, a number argument.
        const Tensor x2 = graft::randn({3, 7}), w2 = graft::randn({3, 7}).t().contiguous().t();
        const auto c = ex::evaluate_all(ex::static_shape<3, 7>{}, e, x2, w2);
        const auto d = ex::evaluate_all(e, x2, w2);
        for (std::size_t j = 0; j < 3; ++j) CHECK(max_rel_err(c[j], d[j]) == 0);
        CHECK(max_rel_err(ex::evaluate(ex::static_shape<3, 7>{}, hand<chain_g, 2>{{0.5}}, x2, 3.0),
                          ex::evaluate(hand<chain_g, 2>{{0.5}}, x2, 3.0)) == 0);
        CHECK_THROWS_WITH(ex::evaluate(ex::static_shape<1024>{}, hand<chain_g, 2>{{0.5}}, x2, w2),
                          Catch::Contains("expected exactly [1024]") && Catch::Contains("argument 0"));
    }
}

TEST_CASE("expr::evaluate: errors name the expression", "[expr]") {
    const hand<chain_g, 2> e{{0.5}};
    CHECK_THROWS_WITH(ex::evaluate(e, graft::randn({3}), graft::randn({4})),
                      Catch::Contains("expr::evaluate(mul(tanh(add(mul(%0, %1), #0)), sigmoid(%0)))") &&
                          Catch::Contains("argument 1 of shape [4] does not broadcast"));
    CHECK_THROWS_WITH(ex::evaluate(e, Tensor{}, graft::randn({4})),
                      Catch::Contains("argument 0 is an undefined tensor"));
    CHECK_THROWS_WITH(ex::evaluate(e, graft::arange(3), 2),
                      Catch::Contains("promote to int64") && Catch::Contains("float32 or float64"));
}

TEST_CASE("expr::evaluate on traced expressions", "[expr]") {
    target_guard guard;
    const auto e = ex::trace<3>([](auto x, auto w, auto b) { return tanh(x * w + b) * sigmoid(x); });
    const auto m = ex::trace<2>([](auto x, auto y) {
        const auto d = x - y;
        return ex::outputs_of(maximum(x, y) * 2.0, where(d > 0.0, d, -d), d < ex::c<0.0>, abs(d) + sqrt(exp(y)));
    });
    for (auto t : graft::kernels::available_targets()) {
        graft::kernels::set_target(t);
        INFO("target " << graft::kernels::target_name(t));
        const Tensor x = graft::randn({3, 33}), w = graft::randn({33}), b = graft::randn({3, 1});
        CHECK(max_rel_err(ex::evaluate(e, x, w, b), graft::tanh(x * w + b) * graft::sigmoid(x)) < tol<float>());
        CHECK(max_rel_err(ex::evaluate(e, x, w, 0.5), graft::tanh(x * w + 0.5) * graft::sigmoid(x)) < tol<float>());
        const auto o = ex::evaluate_all(m, x, w);
        const Tensor d = x - w;
        CHECK(max_rel_err(o[0], graft::maximum(x, w) * 2.0) == 0);
        CHECK(max_rel_err(o[1], graft::abs(d)) == 0);
        CHECK(o[2].type() == graft::dtype::bool_);
        CHECK(o[2].to_vector<bool>() == (d < 0.0).to_vector<bool>());
        CHECK(max_rel_err(o[3], graft::abs(d) + graft::sqrt(graft::exp(w))) < tol<float>());
    }
}

TEST_CASE("expr::evaluate: log1p and expm1 are the eager kernels' values, special values included", "[expr]") {
    target_guard guard;
    const double inf = std::numeric_limits<double>::infinity();
    const auto e = ex::trace<1>([](auto x) { return ex::outputs_of(log1p(x), expm1(x), log1p(x) * expm1(x)); });
    // The same values, the sign of a zero included (NaN matches NaN).
    const auto same = [](const Tensor& a, const Tensor& b) {
        const auto va = a.to(graft::dtype::float64).contiguous().to_vector<double>();
        const auto vb = b.to(graft::dtype::float64).contiguous().to_vector<double>();
        for (std::size_t i = 0; i < va.size(); ++i) {
            if (std::isnan(va[i]) && std::isnan(vb[i])) continue;
            if (!(va[i] == vb[i] && std::signbit(va[i]) == std::signbit(vb[i]))) return false;
        }
        return va.size() == vb.size();
    };
    for (auto t : graft::kernels::available_targets()) {
        graft::kernels::set_target(t);
        for (graft::dtype dt : {graft::dtype::float32, graft::dtype::float64}) {
            INFO("target " << graft::kernels::target_name(t) << ", " << dt);
            Tensor x = graft::linspace(-0.999, 100.0, 1001, dt);
            x = graft::cat(std::vector<Tensor>{
                x, graft::tensor({0.0, -0.0, -1.0, -2.0, 1e-30, -1e-30, 1e-8, 800.0, inf, -inf, std::nan("")}).to(dt)});
            const auto o = ex::evaluate_all(e, x);
            CHECK(same(o[0], graft::log1p(x)));
            CHECK(same(o[1], graft::expm1(x)));
            CHECK(same(o[2], graft::log1p(x) * graft::expm1(x)));
        }
    }
}

// ---------------------------------------------------------------- ex::function

namespace {

Tensor leaf(const graft::int_list& sizes, std::uint64_t seed, graft::dtype t = graft::dtype::float64) {
    graft::generator gen(seed);
    Tensor x = graft::randn(sizes, t, gen);
    x.requires_grad_();
    return x;
}

const auto chain3 = ex::trace<3>([](auto x, auto w, auto b) { return tanh(x * w + b) * sigmoid(x); });
Tensor chain3_eager(const Tensor& x, const Tensor& w, const Tensor& b) {
    return graft::tanh(x * w + b) * graft::sigmoid(x);
}

}  // namespace

TEST_CASE("expr::function: one FusedBackward node, gradients equal eager autograd", "[expr]") {
    target_guard guard;
    for (auto t : graft::kernels::available_targets()) {
        graft::kernels::set_target(t);
        INFO("target " << graft::kernels::target_name(t));
        const auto run = [&](auto policy) {
            const auto f = ex::function(chain3, policy);
            const Tensor x = leaf({4, 9}, 1), w = leaf({9}, 2), b = leaf({4, 1}, 3);
            const Tensor y = f(x, w, b);
            REQUIRE(y.grad_fn() != nullptr);
            CHECK(y.grad_fn()->name() == "FusedBackward");
            CHECK(y.grad_fn()->next_functions().size() == 3);
            const Tensor gy = graft::randn({4, 9}, graft::dtype::float64);
            y.backward(gy);
            Tensor x2 = x.detach(), w2 = w.detach(), b2 = b.detach();
            x2.requires_grad_();
            w2.requires_grad_();
            b2.requires_grad_();
            const Tensor y2 = chain3_eager(x2, w2, b2);
            CHECK(max_rel_err(y, y2) < tol<double>());
            y2.backward(gy);
            CHECK(max_rel_err(x.grad(), x2.grad()) < tol<double>());
            CHECK(max_rel_err(w.grad(), w2.grad()) < tol<double>());
            CHECK(max_rel_err(b.grad(), b2.grad()) < tol<double>());
            CHECK(w.grad().sizes() == graft::int_list{9});
            CHECK(b.grad().sizes() == graft::int_list{4, 1});
        };
        run(ex::save_policy::save_all);
        run(ex::save_policy::recompute);
        run(ex::save_policy::recompute_cheap);
    }
}

TEST_CASE("expr::function: gradcheck and gradgradcheck (float64)", "[expr]") {
    const auto f = ex::function(chain3);
    const auto wrapped = [&](const graft::autograd::tensor_list& in) -> graft::autograd::tensor_list {
        return {f(in[0], in[1], in[2])};
    };
    CHECK(graft::autograd::gradcheck(wrapped, {leaf({3, 5}, 4), leaf({5}, 5), leaf({}, 6)}));
    CHECK(graft::autograd::gradgradcheck(wrapped, {leaf({3, 5}, 7), leaf({5}, 8), leaf({3, 1}, 9)}));
    const auto g = ex::function(ex::trace<2>([](auto x, auto y) {
        return ex::outputs_of(where(x > y, x * y, exp(-x)), maximum(x, y) / (abs(y) + 1.0));
    }));
    const auto wrapped2 = [&](const graft::autograd::tensor_list& in) -> graft::autograd::tensor_list {
        const auto o = g(in[0], in[1]);
        return {o[0], o[1]};
    };
    CHECK(graft::autograd::gradcheck(wrapped2, {leaf({6}, 10), leaf({6}, 11)}));
    // log1p (on (-1, inf): |x| of a normal sample) and expm1: Log1PBackward0's and
    // Expm1Backward0's formulas inside the fused backward.
    const auto h = ex::function(ex::trace<2>([](auto x, auto y) { return log1p(abs(x)) * expm1(y); }));
    const auto wrapped3 = [&](const graft::autograd::tensor_list& in) -> graft::autograd::tensor_list {
        return {h(in[0], in[1])};
    };
    CHECK(graft::autograd::gradcheck(wrapped3, {leaf({7}, 14), leaf({7}, 15)}));
    CHECK(graft::autograd::gradgradcheck(wrapped3, {leaf({7}, 16), leaf({7}, 17)}));
}

TEST_CASE("expr::function: numbers, no-grad, unused outputs, mixed with eager code", "[expr]") {
    const auto f = ex::function(chain3);
    const Tensor x = leaf({8}, 12), w = leaf({8}, 13);
    // A number argument: no edge needed for it, still one node.
    const Tensor y = f(x, w, 0.25);
    CHECK(y.grad_fn()->name() == "FusedBackward");
    (y * y).sum().backward();
    Tensor x2 = x.detach(), w2 = w.detach();
    x2.requires_grad_();
    w2.requires_grad_();
    const Tensor y2 = graft::tanh(x2 * w2 + 0.25) * graft::sigmoid(x2);
    (y2 * y2).sum().backward();
    CHECK(max_rel_err(x.grad(), x2.grad()) < tol<double>());
    CHECK(max_rel_err(w.grad(), w2.grad()) < tol<double>());
    // No tensor requires grad / grad mode off: no node.
    CHECK(f(x.detach(), w.detach(), 1.0).grad_fn() == nullptr);
    {
        graft::autograd::no_grad ng;
        CHECK(f(x, w, 1.0).grad_fn() == nullptr);
    }
    // Only one of two outputs reaches the loss.
    const auto g = ex::function(ex::trace<1>([](auto a) { return ex::outputs_of(sin(a), cos(a)); }));
    const Tensor a = leaf({5}, 14);
    const auto o = g(a);
    o[1].sum().backward();
    CHECK(max_rel_err(a.grad(), -graft::sin(a.detach())) < tol<double>());
}

TEST_CASE("expr::function: tensor hooks, node hooks and saved-tensor hooks apply", "[expr]") {
    const auto f = ex::function(chain3);
    const Tensor x = leaf({6}, 15), w = leaf({6}, 16), b = leaf({6}, 17);
    int packs = 0, unpacks = 0;
    Tensor y;
    {
        graft::autograd::saved_tensors_hooks hooks(
            [&](const Tensor& t) -> std::any {
                ++packs;
                return t;
            },
            [&](const std::any& a) -> Tensor {
                ++unpacks;
                return std::any_cast<Tensor>(a);
            });
        y = f(x, w, b);
    }
    CHECK(packs > 0);
    int tensor_hook = 0, node_hook = 0;
    y.register_hook([&](const Tensor& g) {
        ++tensor_hook;
        return g * 2.0;  // doubles every gradient below
    });
    y.grad_fn()->register_hook([&](const graft::autograd::tensor_list& gin, const graft::autograd::tensor_list&)
                                   -> std::optional<graft::autograd::tensor_list> {
        ++node_hook;
        CHECK(gin.size() == 3);
        return std::nullopt;
    });
    (y * 3.0).sum().backward();
    CHECK(tensor_hook == 1);
    CHECK(node_hook == 1);
    CHECK(unpacks == packs);
    Tensor x2 = x.detach(), w2 = w.detach(), b2 = b.detach();
    x2.requires_grad_();
    w2.requires_grad_();
    b2.requires_grad_();
    (chain3_eager(x2, w2, b2) * 6.0).sum().backward();
    CHECK(max_rel_err(x.grad(), x2.grad()) < tol<double>());
    CHECK(max_rel_err(b.grad(), b2.grad()) < tol<double>());
    // Saved tensors are released after backward without retain_graph.
    CHECK_THROWS_AS(y.sum().backward(), graft::error);
}

TEST_CASE("expr::evaluate_into and value_and_grad", "[expr]") {
    const hand<two_out_g, 2> e{{0.5}};
    const Tensor x = graft::randn({5, 8}), w = graft::randn({8});
    const auto ref = ex::evaluate_all(e, x, w);
    const std::array<Tensor, 3> out{graft::empty({8, 5}).t(), graft::empty({5, 8}, graft::dtype::bool_),
                                    graft::empty({5, 8})};
    const auto v = out[0]._version();
    ex::evaluate_into(out, e, x, w);
    CHECK(out[0]._version() > v);
    for (std::size_t j = 0; j < 3; ++j) CHECK(max_rel_err(out[j], ref[j]) == 0);
    CHECK_THROWS_WITH(ex::evaluate_into(std::array<Tensor, 3>{graft::empty({5, 8}), graft::empty({5, 8}), out[2]}, e, x, w),
                      Catch::Contains("output 1 must be a bool tensor of shape [5, 8]"));
    // In place: y = f(y, w) on a same-shape contiguous tensor.
    Tensor y = x.clone();
    ex::evaluate_into(y, chain3, y, x, 0.5);
    CHECK(max_rel_err(y, chain3_eager(x, x, graft::full({}, 0.5))) < tol<float>());
    // value_and_grad: outputs then gradients in one pass.
    const auto vg = ex::value_and_grad<0, 1, 2>(chain3);
    const Tensor b = graft::randn({5, 1}), g = graft::randn({5, 8});
    const auto r = ex::evaluate_all(vg, x, w, b, g);
    Tensor x2 = x.detach(), w2 = w.detach(), b2 = b.detach();
    x2.requires_grad_();
    w2.requires_grad_();
    b2.requires_grad_();
    const Tensor y2 = chain3_eager(x2, w2, b2);
    y2.backward(g);
    CHECK(max_rel_err(r[0], y2) < tol<float>());
    CHECK(max_rel_err(r[1], x2.grad()) < 1e-5);
    CHECK(max_rel_err(graft::sum_to_size(r[2], {8}), w2.grad()) < 1e-5);
    CHECK(max_rel_err(graft::sum_to_size(r[3], {5, 1}), b2.grad()) < 1e-5);
}

TEST_CASE("expr::evaluate: the flat path and the general path agree bit for bit", "[expr]") {
    // Same-shape contiguous arguments of one dtype take the flat path; a transposed
    // output, a non-contiguous input or a second dtype sends the same call down the
    // general path. Both run the same per-element program.
    const auto e = ex::trace<3>([](auto x, auto w, auto b) { return std::make_tuple(tanh(x * w + b), sum(x * w)); });
    const Tensor x = graft::randn({6, 7}), w = graft::randn({6, 7}), b = graft::randn({6, 7});
    const auto flat = ex::evaluate_all(e, x, w, b);
    const auto ref = ex::interpret_all(e, x, w, b);
    CHECK(max_rel_err(flat[0], ref[0]) < tol<float>());
    CHECK(std::fabs(flat[1].item<double>() - ref[1].item<double>()) < 1e-4 * (1 + std::fabs(ref[1].item<double>())));
    // Non-contiguous input with the same values: the general (strided) path.
    const Tensor wt = w.t().contiguous().t();
    REQUIRE_FALSE(wt.is_contiguous());
    const auto general = ex::evaluate_all(e, x, wt, b);
    CHECK(graft::equal(general[0], flat[0]));
    CHECK(std::fabs(general[1].item<double>() - flat[1].item<double>()) < 1e-5 * (1 + std::fabs(flat[1].item<double>())));
    // Into contiguous outputs (flat) and into a transposed output (general).
    const std::array<Tensor, 2> into_flat{graft::empty({6, 7}), graft::empty({})};
    ex::evaluate_into(into_flat, e, x, w, b);
    CHECK(graft::equal(into_flat[0], flat[0]));
    CHECK(into_flat[1].item<double>() == flat[1].item<double>());
    const std::array<Tensor, 2> into_t{graft::empty({7, 6}).t(), graft::empty({})};
    ex::evaluate_into(into_t, e, x, w, b);
    CHECK(graft::equal(into_t[0], flat[0]));
    // A float64 argument promotes the whole call (general dtype path); numbers do not.
    const auto promoted = ex::evaluate_all(e, x, w.to(graft::dtype::float64), b);
    CHECK(promoted[0].type() == graft::dtype::float64);
    const auto e2 = ex::trace<2>([](auto x, auto s) { return x * s; });
    CHECK(ex::evaluate(e2, x, 2.0).type() == graft::dtype::float32);
    CHECK(graft::equal(ex::evaluate(e2, x, 2.0), x * 2.0));
    // Outputs the flat path cannot take are reported by the general path, unchanged.
    CHECK_THROWS_WITH(ex::evaluate_into(std::array<Tensor, 2>{graft::empty({6, 7}, graft::dtype::float64), graft::empty({})},
                                        e, x, w, b),
                      Catch::Contains("output 0 must be a float32 tensor of shape [6, 7]"));
    CHECK_THROWS_WITH(ex::evaluate_into(std::array<Tensor, 2>{graft::empty({6, 7}), graft::empty({1})}, e, x, w, b),
                      Catch::Contains("output 1 must be a float32 tensor of shape []"));
    CHECK_THROWS_WITH(ex::evaluate(e2, Tensor{}, 1.0), Catch::Contains("argument 0 is an undefined tensor"));
    // Empty tensors: nothing to compute; the sum of nothing is 0.
    const auto none = ex::evaluate_all(e, graft::empty({0, 7}), graft::empty({0, 7}), graft::empty({0, 7}));
    CHECK(none[0].sizes() == graft::int_list{0, 7});
    CHECK(none[1].item<double>() == 0.0);
}
