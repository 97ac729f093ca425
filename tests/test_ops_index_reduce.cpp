// tril, triu, masked_fill and outer (issue 16): values against hand computations and a scalar
// reference loop, dtypes, errors named as PyTorch names them, gradcheck / gradgradcheck in
// float64, in-place forms, and the graph layers (capture::trace, capture::aot, jit::script)
// against eager.
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
using autograd::gradcheck;
using autograd::gradgradcheck;
using autograd::tensor_list;

namespace {

/// Scalar reference for tril (lower) / triu over the last two dims of a contiguous tensor.
std::vector<double> triangle_reference(const Tensor& t, std::int64_t diagonal, bool lower) {
    auto v = t.contiguous().to_vector<double>();
    const std::int64_t rows = t.size(-2), cols = t.size(-1);
    for (std::size_t k = 0; k < v.size(); ++k) {
        const auto at = static_cast<std::int64_t>(k) % (rows * cols);
        const std::int64_t i = at / cols, j = at % cols;
        const bool keep = lower ? j - i <= diagonal : j - i >= diagonal;
        if (!keep) v[k] = 0.0;
    }
    return v;
}

bool same_with_nan(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
    return true;
}

}  // namespace

// ---------------------------------------------------------------- tril, triu

TEST_CASE("tril/triu: hand values, diagonals, batches, dtypes, non-contiguous input", "[ops][index_reduce][tril]") {
    const Tensor m = (arange(12).view({3, 4}) + 1).to(dtype::float32);
    CHECK(equal(tril(m), tensor({1.f, 0.f, 0.f, 0.f, 5.f, 6.f, 0.f, 0.f, 9.f, 10.f, 11.f, 0.f}).view({3, 4})));
    CHECK(equal(triu(m), tensor({1.f, 2.f, 3.f, 4.f, 0.f, 6.f, 7.f, 8.f, 0.f, 0.f, 11.f, 12.f}).view({3, 4})));
    CHECK(equal(tril(m, 1), tensor({1.f, 2.f, 0.f, 0.f, 5.f, 6.f, 7.f, 0.f, 9.f, 10.f, 11.f, 12.f}).view({3, 4})));
    CHECK(equal(triu(m, -1), tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 0.f, 10.f, 11.f, 12.f}).view({3, 4})));
    CHECK(equal(m.tril(-1), tensor({0.f, 0.f, 0.f, 0.f, 5.f, 0.f, 0.f, 0.f, 9.f, 10.f, 0.f, 0.f}).view({3, 4})));
    CHECK(equal(m.triu(2), tensor({0.f, 0.f, 3.f, 4.f, 0.f, 0.f, 0.f, 8.f, 0.f, 0.f, 0.f, 0.f}).view({3, 4})));
    // Diagonals beyond the matrix, including the extremes of int64.
    CHECK(equal(tril(m, 100), m));
    CHECK(equal(triu(m, -100), m));
    CHECK(equal(tril(m, INT64_MAX), m));
    CHECK(equal(triu(m, INT64_MIN), m));
    CHECK(equal(tril(m, INT64_MIN), zeros_like(m)));
    CHECK(equal(triu(m, INT64_MAX), zeros_like(m)));
    // Batches of matrices and every diagonal against the scalar reference; a transposed input.
    manual_seed(5);
    const Tensor b = randn({2, 3, 5, 4}, dtype::float64).transpose(2, 3);  // [2, 3, 4, 5], not contiguous
    REQUIRE_FALSE(b.is_contiguous());
    for (std::int64_t d = -6; d <= 6; ++d) {
        INFO("diagonal " << d);
        CHECK(tril(b, d).to_vector<double>() == triangle_reference(b, d, true));
        CHECK(triu(b, d).to_vector<double>() == triangle_reference(b, d, false));
    }
    // Every dtype keeps its type; NaN outside the triangle becomes 0, as PyTorch.
    CHECK(equal(tril(tensor({1, 2, 3, 4}).view({2, 2})), tensor({1, 0, 3, 4}).view({2, 2})));
    CHECK(equal(triu(tensor({true, true, true, true}).view({2, 2})), tensor({true, true, false, true}).view({2, 2})));
    const double nan = std::nan("");
    const auto t = tril(tensor({nan, nan, nan, nan}).view({2, 2})).to_vector<double>();
    CHECK(std::isnan(t[0]));
    CHECK(t[1] == 0.0);
    // Empty matrices and a new tensor every time.
    CHECK(tril(zeros({0, 3})).sizes() == int_list{0, 3});
    CHECK_FALSE(tril(m, 10).shares_storage_with(m));
}

TEST_CASE("tril_/triu_: in place, differentiable", "[autograd][index_reduce][tril]") {
    Tensor a = ones({3, 3});
    a.tril_();
    CHECK(equal(a, tensor({1.f, 0.f, 0.f, 1.f, 1.f, 0.f, 1.f, 1.f, 1.f}).view({3, 3})));
    a.triu_(1);
    CHECK(equal(a, zeros({3, 3})));
    Tensor x = leaf({3, 3}, 7);
    Tensor y = x * 2.0;
    y.triu_();
    CHECK(std::string(y.grad_fn()->name()) == "TriuBackward0");
    y.sum().backward();
    CHECK(x.grad().to_vector<double>() == std::vector<double>{2, 2, 2, 0, 2, 2, 0, 0, 2});
    Tensor leaf_x = ones({2, 2}, dtype::float64).requires_grad_();
    CHECK_THROWS_AS(leaf_x.tril_(), graft::error);
}

// ---------------------------------------------------------------- masked_fill

TEST_CASE("masked_fill: hand values, broadcasting, dtype kept, NaN and inf values", "[ops][index_reduce][masked_fill]") {
    const Tensor x = arange(6).view({2, 3}).to(dtype::float32);
    const Tensor mask = tensor({true, false, true, false, false, true}).view({2, 3});
    CHECK(equal(masked_fill(x, mask, -1.0), tensor({-1.f, 1.f, -1.f, 3.f, 4.f, -1.f}).view({2, 3})));
    // A mask that broadcasts over rows.
    const Tensor row = tensor({false, true, false}).view({1, 3});
    CHECK(equal(x.masked_fill(row, 9), tensor({0.f, 9.f, 2.f, 3.f, 9.f, 5.f}).view({2, 3})));
    // The tensor broadcasts to the mask's shape too (out of place, as PyTorch).
    const Tensor r = masked_fill(tensor({1.0, 2.0, 3.0}), mask, 0.0);
    CHECK(r.sizes() == int_list{2, 3});
    CHECK(equal(r, tensor({0.f, 2.f, 0.f, 1.f, 2.f, 0.f}).view({2, 3})));
    // The value takes the tensor's dtype: int64 stays int64 (2.7 truncates), bool stays bool.
    const Tensor i = masked_fill(arange(3), tensor({false, true, false}), 2.7);
    CHECK(i.type() == dtype::int64);
    CHECK(equal(i, tensor({0, 2, 2})));
    CHECK(equal(masked_fill(tensor({true, false}), tensor({true, true}), 0), tensor({false, false})));
    CHECK(masked_fill(x.to(dtype::float64), mask, 1).type() == dtype::float64);
    const double inf = INFINITY, nan = std::nan("");
    CHECK(same_with_nan(masked_fill(x, mask, nan).to_vector<double>(), {nan, 1, nan, 3, 4, nan}));
    CHECK(masked_fill(x, mask, -inf).to_vector<double>() == std::vector<double>{-inf, 1, -inf, 3, 4, -inf});
    // Scalar reference on a non-contiguous input and mask.
    manual_seed(8);
    const Tensor big = randn({5, 4}, dtype::float64).t();
    const Tensor bm = (randn({5, 4}) > 0.0).t();
    const auto xv = big.to_vector<double>();
    const auto mv = bm.to_vector<std::int64_t>();
    std::vector<double> want(xv.size());
    for (std::size_t k = 0; k < xv.size(); ++k) want[k] = mv[k] ? 0.5 : xv[k];
    CHECK(masked_fill(big, bm, 0.5).to_vector<double>() == want);
}

TEST_CASE("masked_fill: gradient zero where the mask is set, summed over broadcasting, in place",
          "[autograd][index_reduce][masked_fill]") {
    Tensor x = tensor({1.0, 2.0, 3.0}).to(dtype::float64).requires_grad_();
    const Tensor mask = tensor({true, false, false, false, false, true}).view({2, 3});
    const Tensor y = masked_fill(x, mask, 5.0);
    CHECK(std::string(y.grad_fn()->name()) == "MaskedFillBackward0");
    CHECK(autograd::grad({y.sum()}, {x})[0].to_vector<double>() == std::vector<double>{1.0, 2.0, 1.0});
    // In place on a non-leaf.
    Tensor z = x * 3.0;
    z.masked_fill_(tensor({false, true, false}), -1.0);
    CHECK(z.to_vector<double>() == std::vector<double>{3.0, -1.0, 9.0});
    CHECK(std::string(z.grad_fn()->name()) == "MaskedFillBackward0");
    CHECK(autograd::grad({z.sum()}, {x})[0].to_vector<double>() == std::vector<double>{3.0, 0.0, 3.0});
    // In place with a broadcast mask on a view.
    Tensor w = x.detach().expand({2, 3}).clone();
    w.narrow(0, 1, 1).masked_fill_(tensor({true, false, true}), 0);
    CHECK(w.to_vector<double>() == std::vector<double>{1, 2, 3, 0, 2, 0});
}

// ---------------------------------------------------------------- outer

TEST_CASE("outer: hand values, dtype promotion, method form", "[ops][index_reduce][outer]") {
    const Tensor a = tensor({1.0, 2.0, 3.0}), b = tensor({10.0, -1.0});
    CHECK(equal(outer(a, b), tensor({10.f, -1.f, 20.f, -2.f, 30.f, -3.f}).view({3, 2})));
    CHECK(equal(a.outer(b), outer(a, b)));
    CHECK(equal(outer(tensor({1, 2}), tensor({3, 4})), tensor({3, 4, 6, 8}).view({2, 2})));
    CHECK(outer(tensor({1, 2}), tensor({0.5})).type() == dtype::float32);
    CHECK(outer(zeros({0}), ones({4})).sizes() == int_list{0, 4});
}

// ---------------------------------------------------------------- gradients

TEST_CASE("tril/triu/masked_fill/outer: gradcheck and gradgradcheck in float64", "[autograd][gradcheck][index_reduce]") {
    const Tensor a = leaf({3, 4}, 1), batch = leaf({2, 3, 3}, 2);
    SECTION("tril, triu") {
        for (std::int64_t d : {-1, 0, 2}) {
            check_grads([d](const tensor_list& in) { return tensor_list{tril(in[0], d) * in[0]}; }, {a});
            check_grads([d](const tensor_list& in) { return tensor_list{in[0].triu(d) * in[0]}; }, {batch});
        }
        check_grads([](const tensor_list& in) {
            Tensor y = in[0] * in[0];
            y.tril_(1);
            y.triu_(-1);
            return tensor_list{y};
        }, {a});
    }
    SECTION("masked_fill, out of place with broadcasting, and in place") {
        const Tensor mask = tensor({true, false, false, true, false, true, true, false, false, false, true, false}).view({3, 4});
        const Tensor col = tensor({false, true, false}).view({3, 1});
        check_grads([&](const tensor_list& in) { return tensor_list{masked_fill(in[0] * in[0], mask, 2.0)}; }, {a});
        const Tensor v = leaf({4}, 3);
        check_grads([&](const tensor_list& in) { return tensor_list{masked_fill(in[0] * in[0], mask, -1.0)}; }, {v});
        check_grads([&](const tensor_list& in) {
            Tensor y = in[0] * in[0];
            y.masked_fill_(col, 0.0);
            return tensor_list{y};
        }, {a});
    }
    SECTION("outer") {
        const Tensor u = leaf({3}, 4), w = leaf({5}, 5);
        check_grads([](const tensor_list& in) { return tensor_list{outer(in[0], in[1])}; }, {u, w});
        check_grads([](const tensor_list& in) { return tensor_list{outer(in[0], in[0] * in[1].sum())}; }, {u, w});
    }
}

// ---------------------------------------------------------------- errors

TEST_CASE("tril/triu/masked_fill/outer: bad input is a graft::error naming the op, inputs unchanged",
          "[ops][index_reduce][bad_input]") {
    const Tensor v = tensor({1.0, 2.0, 3.0});
    CHECK_THROWS_WITH(tril(v), Catch::Contains("tril: input tensor must have at least 2 dimensions"));
    CHECK_THROWS_WITH(triu(full({}, 1.0)), Catch::Contains("triu: input tensor must have at least 2 dimensions"));
    CHECK_THROWS_AS(tril(Tensor{}), graft::error);
    const Tensor m = arange(6).view({2, 3}).to(dtype::float32);
    CHECK_THROWS_WITH(masked_fill(m, tensor({1, 0, 1}), 0.0),
                      Catch::Contains("masked_fill") && Catch::Contains("boolean masks") && Catch::Contains("int64"));
    CHECK_THROWS_WITH(masked_fill(m, tensor({true, false}), 0.0), Catch::Contains("[2, 3]") && Catch::Contains("[2]"));
    CHECK_THROWS_AS(masked_fill(m, Tensor{}, 0.0), graft::error);
    Tensor w = tensor({1.0, 2.0, 3.0});
    // In place, the mask may not broadcast the tensor to a larger shape.
    CHECK_THROWS_WITH(w.masked_fill_(tensor({true, false, true, false, true, false}).view({2, 3}), 0.0),
                      Catch::Contains("masked_fill_") && Catch::Contains("[3]") && Catch::Contains("[2, 3]"));
    CHECK(equal(w, tensor({1.0, 2.0, 3.0})));
    Tensor wi = arange(3);
    CHECK_THROWS_WITH(wi.tril_(), Catch::Contains("tril: input tensor must have at least 2 dimensions"));
    CHECK(equal(wi, arange(3)));
    CHECK_THROWS_WITH(outer(m, v), Catch::Contains("outer: expected 1-D argument self, but got 2-D"));
    CHECK_THROWS_WITH(outer(v, full({}, 1.0)), Catch::Contains("outer: expected 1-D argument vec2, but got 0-D"));
    CHECK(equal(m, arange(6).view({2, 3}).to(dtype::float32)));
    CHECK(equal(tril(m), tensor({0.f, 0.f, 0.f, 3.f, 4.f, 0.f}).view({2, 3})));  // still usable
}

// ---------------------------------------------------------------- graph layers

namespace {

/// A small function using tril, triu, masked_fill and outer.
Tensor masker(Tensor x, Tensor w) {
    const Tensor p = outer(w, w);                       // [n, n]
    const Tensor lower = tril(x * p, -1) + triu(x, 1) * 0.5;
    const Tensor masked = lower.masked_fill(x > 0.5, -2.0);
    return (masked * masked).sum() + masked_fill(x, x < -1.0, 0.25).sum();
}

}  // namespace

TEST_CASE("tril/triu/masked_fill/outer under capture::trace: one node each, same values as eager", "[capture][index_reduce]") {
    manual_seed(41);
    const Tensor x = randn({4, 4}, dtype::float64), w = randn({4}, dtype::float64);
    auto cap = capture::trace(masker, x, w);
    cap.graph().lint();
    const std::string text = ir::to_string(cap.graph());
    CHECK(text.find("tril[diagonal=-1]") != std::string::npos);
    CHECK(text.find("triu[diagonal=1]") != std::string::npos);
    CHECK(text.find("masked_fill[value=-2.]") != std::string::npos);
    CHECK(text.find("masked_fill[value=0.25]") != std::string::npos);
    auto back = ir::parse(text);
    CHECK(ir::to_string(*back) == text);
    for (int i = 0; i < 3; ++i) {
        const Tensor x2 = randn({4, 4}, dtype::float64), w2 = randn({4}, dtype::float64);
        CHECK(allclose(cap(x2, w2)[0], masker(x2, w2), 1e-12, 1e-12));
        CHECK(allclose(std::get<Tensor>(ir::interpret(*back, std::vector<ir::ivalue>{x2, w2})[0]), masker(x2, w2),
                       1e-12, 1e-12));
    }
}

TEST_CASE("tril/triu/masked_fill/outer under capture::aot: gradients as eager autograd", "[capture][index_reduce]") {
    manual_seed(42);
    const Tensor x = randn({4, 4}, dtype::float64).requires_grad_(), w = randn({4}, dtype::float64).requires_grad_();
    auto a = capture::aot(masker, {x, w});
    a.forward->lint();
    a.backward->lint();
    for (int i = 0; i < 2; ++i) {
        Tensor x2 = randn({4, 4}, dtype::float64).requires_grad_(), w2 = randn({4}, dtype::float64).requires_grad_();
        Tensor out = a({x2, w2})[0];
        const auto got = autograd::grad({out}, {x2, w2});
        Tensor eager = masker(x2, w2);
        CHECK(allclose(out.detach(), eager.detach(), 1e-12, 1e-12));
        const auto want = autograd::grad({eager}, {x2, w2});
        CHECK(allclose(got[0], want[0], 1e-12, 1e-12));
        CHECK(allclose(got[1], want[1], 1e-12, 1e-12));
    }
    CHECK(gradcheck([&](const tensor_list& in) { return tensor_list{a({in[0], in[1]})[0]}; }, {x, w}));
}

TEST_CASE("tril/triu/masked_fill/outer under jit::script: profiled and differentiable runs match eager",
          "[jit][index_reduce]") {
    manual_seed(43);
    auto fn = jit::script(masker);
    for (int i = 0; i < 4; ++i) {
        const bool grad = i >= 2;
        Tensor x = randn({4, 4}, dtype::float64), w = randn({4}, dtype::float64);
        if (grad) {
            x.requires_grad_();
            w.requires_grad_();
        }
        Tensor y = fn(x, w);
        Tensor eager = masker(x, w);
        CHECK(allclose(y.detach(), eager.detach(), 1e-12, 1e-12));
        if (grad) {
            REQUIRE(y.requires_grad());
            const auto got = autograd::grad({y}, {x, w});
            const auto want = autograd::grad({eager}, {x, w});
            CHECK(allclose(got[0], want[0], 1e-12, 1e-12));
            CHECK(allclose(got[1], want[1], 1e-12, 1e-12));
        }
    }
    const jit::debug_state d = fn.debug_state();
    bool differentiable = false;
    for (const auto& level : d.levels)
        differentiable = differentiable ||
                         (level.plan && level.plan->kind == jit::plan_kind::differentiable && level.plan->hits >= 1);
    CHECK(differentiable);
    CHECK(d.graph.find("masked_fill[") != std::string::npos);
    const Tensor x = randn({6, 6}, dtype::float64), w = randn({6}, dtype::float64);
    CHECK(allclose(fn(x, w), masker(x, w), 1e-12, 1e-12));
}
