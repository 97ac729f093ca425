// argmax/argmin, max/min over a dim, logsumexp, var/std (var_mean, std_mean), gather,
// scatter_add and index_select (issue 16): values against hand computations and scalar
// reference loops, PyTorch's NaN and tie rules, errors naming the op, the index and the size,
// gradcheck / gradgradcheck in float64, and the graph layers against eager.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
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

std::vector<std::int64_t> ivec(const Tensor& t) { return t.to_vector<std::int64_t>(); }
std::vector<double> dvec(const Tensor& t) { return t.to_vector<double>(); }

bool close_with_nan(const std::vector<double>& a, const std::vector<double>& b, double tol = 1e-12) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (std::isnan(a[i]) || std::isnan(b[i])) {
            if (!(std::isnan(a[i]) && std::isnan(b[i]))) return false;
        } else if (std::isinf(a[i]) || std::isinf(b[i])) {
            if (a[i] != b[i]) return false;
        } else if (std::abs(a[i] - b[i]) > tol * (1.0 + std::abs(b[i]))) {
            return false;
        }
    }
    return true;
}

/// Reference argmax / argmin along dim 1 of a contiguous [a, b, c] tensor (NaN wins, first of ties).
std::vector<std::int64_t> arg_reference(const std::vector<double>& v, std::int64_t a, std::int64_t b, std::int64_t c,
                                        bool want_max) {
    std::vector<std::int64_t> out;
    for (std::int64_t i = 0; i < a; ++i)
        for (std::int64_t k = 0; k < c; ++k) {
            std::int64_t best = 0;
            for (std::int64_t j = 1; j < b; ++j) {
                const double cur = v[static_cast<std::size_t>((i * b + best) * c + k)];
                const double x = v[static_cast<std::size_t>((i * b + j) * c + k)];
                if (std::isnan(cur)) break;
                if (std::isnan(x) || (want_max ? x > cur : x < cur)) best = j;
            }
            out.push_back(best);
        }
    return out;
}

}  // namespace

// ---------------------------------------------------------------- argmax, argmin, max, min

TEST_CASE("argmax/argmin: hand values, dims, keepdim, the flattened tensor", "[ops][index_gather][argmax]") {
    const Tensor x = tensor({3.0, 7.0, 7.0, 1.0, -2.0, 9.0}).view({2, 3});
    CHECK(ivec(argmax(x)) == std::vector<std::int64_t>{5});
    CHECK(argmax(x).dim() == 0);
    CHECK(argmax(x).type() == dtype::int64);
    CHECK(ivec(argmin(x)) == std::vector<std::int64_t>{4});
    CHECK(ivec(argmax(x, 1)) == std::vector<std::int64_t>{1, 2});  // the first of the tied 7s
    CHECK(ivec(argmin(x, 0)) == std::vector<std::int64_t>{1, 1, 0});
    CHECK(argmax(x, 1, true).sizes() == int_list{2, 1});
    CHECK(argmax(x, std::nullopt, true).sizes() == int_list{1, 1});
    CHECK(ivec(x.argmax(-2)) == std::vector<std::int64_t>{0, 0, 1});
    CHECK(ivec(x.argmin()) == std::vector<std::int64_t>{4});
    CHECK(ivec(argmax(tensor({4, 9, 9, -1}))) == std::vector<std::int64_t>{1});  // int64 input
    CHECK(ivec(argmax(full({}, 2.5))) == std::vector<std::int64_t>{0});
    CHECK(ivec(argmax(full({}, 2.5), 0)) == std::vector<std::int64_t>{0});
    CHECK(argmax(full({}, 2.5), std::nullopt, true).dim() == 0);  // 0-dim stays 0-dim, as PyTorch
    CHECK(argmax(zeros({0, 3}), 1).sizes() == int_list{0});  // nothing to reduce in an empty output
}

TEST_CASE("argmax/argmin: NaN counts as the extreme, first occurrence, a scalar reference", "[ops][index_gather][argmax]") {
    const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
    const Tensor x = tensor({1.0, nan, 5.0, nan, inf}).to(dtype::float64);
    CHECK(ivec(argmax(x)) == std::vector<std::int64_t>{1});
    CHECK(ivec(argmin(x)) == std::vector<std::int64_t>{1});
    CHECK(ivec(argmax(tensor({-inf, -inf}))) == std::vector<std::int64_t>{0});
    // Small integers make ties common; a few NaNs; every dim of a non-contiguous tensor.
    generator g(11);
    Tensor v = (rand({4, 5, 3}, dtype::float64, g) * 4.0).to(dtype::int64).to(dtype::float64);
    v = v.masked_fill(rand({4, 5, 3}, dtype::float64, g) > 0.9, nan);
    const Tensor vt = v.permute({1, 0, 2}).contiguous().permute({1, 0, 2});  // same values, other strides
    REQUIRE_FALSE(vt.is_contiguous());
    const auto vals = dvec(v);
    CHECK(ivec(argmax(vt, 1)) == arg_reference(vals, 4, 5, 3, true));
    CHECK(ivec(argmin(vt, 1)) == arg_reference(vals, 4, 5, 3, false));
    CHECK(ivec(argmax(vt, 0)) == arg_reference(vals, 1, 4, 15, true));
    CHECK(ivec(argmin(vt.to(dtype::float32), -1)) == arg_reference(vals, 20, 3, 1, false));
}

TEST_CASE("max/min over a dim: (values, indices), keepdim, the gradient at the index only", "[autograd][index_gather][argmax]") {
    const Tensor x = tensor({3.0, 7.0, 7.0, 1.0, -2.0, 9.0}).view({2, 3}).to(dtype::float64);
    auto [v, i] = max(x, 1);
    CHECK(dvec(v) == std::vector<double>{7.0, 9.0});
    CHECK(ivec(i) == std::vector<std::int64_t>{1, 2});
    auto [mv, mi] = x.min(0, true);
    CHECK(mv.sizes() == int_list{1, 3});
    CHECK(dvec(mv) == std::vector<double>{1.0, -2.0, 7.0});
    CHECK(ivec(mi) == std::vector<std::int64_t>{1, 1, 0});
    const double nan = std::nan("");
    auto [nv, ni] = max(tensor({1.0, nan, 3.0}), 0);
    CHECK(std::isnan(nv.item<double>()));
    CHECK(ni.item<std::int64_t>() == 1);
    // The gradient goes to the selected position only (the first of tied 7s), unlike amax.
    Tensor w = x.detach().requires_grad_();
    auto [wv, wi] = max(w, 1);
    CHECK(std::string(wv.grad_fn()->name()) == "MaxBackward0");
    CHECK_FALSE(wi.requires_grad());
    CHECK(dvec(autograd::grad({(wv * tensor({2.0, 3.0}).to(dtype::float64)).sum()}, {w})[0]) ==
          std::vector<double>{0, 2, 0, 0, 0, 3});
    CHECK(dvec(autograd::grad({std::get<0>(min(w, 0)).sum()}, {w})[0]) == std::vector<double>{0, 0, 1, 1, 1, 0});
    // 0-dim input.
    auto [sv, si] = max(full({}, 4.0, dtype::float64), 0);
    CHECK(sv.item<double>() == 4.0);
    CHECK(si.item<std::int64_t>() == 0);
}

TEST_CASE("max()/min() of every element: 0-dim values, NaN wins, ties share the gradient evenly",
          "[autograd][index_gather][argmax]") {
    const Tensor x = tensor({3.0, 7.0, 7.0, 1.0, -2.0, 9.0}).view({2, 3}).to(dtype::float64);
    CHECK(x.max().dim() == 0);
    CHECK(x.max().item<double>() == 9.0);
    CHECK(min(x).item<double>() == -2.0);
    CHECK(std::isnan(max(tensor({1.0, std::nan(""), 3.0})).item<double>()));
    // torch.max(t)'s backward divides the gradient among tied maxima (evenly_distribute_backward).
    Tensor w = tensor({7.0, 2.0, 7.0, 7.0}).to(dtype::float64).requires_grad_();
    CHECK(dvec(autograd::grad({w.max() * 3.0}, {w})[0]) == std::vector<double>{1.0, 0.0, 1.0, 1.0});
    CHECK(dvec(autograd::grad({w.min()}, {w})[0]) == std::vector<double>{0.0, 1.0, 0.0, 0.0});
    CHECK_THROWS_AS(zeros({0}).max(), graft::error);
}

// ---------------------------------------------------------------- logsumexp

TEST_CASE("logsumexp: hand values, stability, infinities and NaN, empty reductions", "[ops][index_gather][logsumexp]") {
    const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
    const Tensor x = tensor({1.0, 2.0, 3.0, 0.0}).view({2, 2}).to(dtype::float64);
    CHECK(close_with_nan(dvec(logsumexp(x, {1})), {std::log(std::exp(1.0) + std::exp(2.0)), std::log(std::exp(3.0) + 1.0)}));
    CHECK(close_with_nan(dvec(logsumexp(x, {})), {std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0) + 1.0)}));
    CHECK(logsumexp(x, {0}, true).sizes() == int_list{1, 2});
    CHECK(close_with_nan(dvec(x.logsumexp({-2})), {std::log(std::exp(1.0) + std::exp(3.0)), std::log(std::exp(2.0) + 1.0)}));
    // Large and very negative values: no overflow, no underflow to -inf.
    CHECK(close_with_nan(dvec(logsumexp(tensor({1000.0, 1000.0}).to(dtype::float64), {0})), {1000.0 + std::log(2.0)}));
    CHECK(close_with_nan(dvec(logsumexp(tensor({-1000.0, -1000.0}), {0})), {-1000.0 + std::log(2.0)}, 1e-6));
    // Infinite maxima are not shifted out; NaN propagates.
    CHECK(dvec(logsumexp(tensor({-inf, -inf}), {0})) == std::vector<double>{-inf});
    CHECK(dvec(logsumexp(tensor({1.0, inf}), {0})) == std::vector<double>{inf});
    CHECK(std::isnan(logsumexp(tensor({1.0, nan}), {0}).item<double>()));
    CHECK(dvec(logsumexp(zeros({2, 0}), {1})) == std::vector<double>{-inf, -inf});
    CHECK(logsumexp(tensor({1, 2}), {0}).type() == dtype::float32);
    // A scalar reference in double.
    generator g(12);
    const Tensor r = rand({3, 4, 5}, dtype::float64, g) * 6.0 - 3.0;
    const auto v = dvec(r);
    std::vector<double> want;
    for (std::int64_t i = 0; i < 3; ++i)
        for (std::int64_t k = 0; k < 5; ++k) {
            double s = 0.0;
            for (std::int64_t j = 0; j < 4; ++j) s += std::exp(v[static_cast<std::size_t>((i * 4 + j) * 5 + k)]);
            want.push_back(std::log(s));
        }
    CHECK(close_with_nan(dvec(logsumexp(r, {1})), want, 1e-14));
    CHECK(close_with_nan(dvec(logsumexp(r.to(dtype::float32), {1})), want, 1e-6));
}

// ---------------------------------------------------------------- var, std

TEST_CASE("var/std: hand values, correction, keepdim, N - correction <= 0, var_mean/std_mean", "[ops][index_gather][var]") {
    const Tensor x = tensor({1.0, 2.0, 3.0, 4.0}).to(dtype::float64);
    CHECK(close_with_nan(dvec(var(x)), {5.0 / 3.0}));
    CHECK(close_with_nan(dvec(var(x, {}, 0.0)), {1.25}));
    CHECK(close_with_nan(dvec(x.std({0}, 0.0)), {std::sqrt(1.25)}));
    CHECK(close_with_nan(dvec(var(x, {0}, 2.5)), {5.0 / 1.5}));  // a fractional correction
    const Tensor m = tensor({1.0, 3.0, 2.0, 2.0, 5.0, 8.0}).view({2, 3}).to(dtype::float64);
    CHECK(close_with_nan(dvec(var(m, {1})), {1.0, 9.0}));
    CHECK(close_with_nan(dvec(var(m, {0})), {0.5, 2.0, 18.0}));
    CHECK(var(m, {1}, 1.0, true).sizes() == int_list{2, 1});
    CHECK(close_with_nan(dvec(graft::std(m, {1})), {1.0, 3.0}));
    auto [vv, vm] = var_mean(m, {1});
    CHECK(close_with_nan(dvec(vv), {1.0, 9.0}));
    CHECK(close_with_nan(dvec(vm), {2.0, 5.0}));
    auto [sv, sm] = std_mean(m, {0}, 0.0, true);
    CHECK(sv.sizes() == int_list{1, 3});
    CHECK(close_with_nan(dvec(sv), {0.5, 1.0, 3.0}));
    CHECK(close_with_nan(dvec(sm), {1.5, 4.0, 5.0}));
    // N - correction <= 0: the sum of squares over 0 (inf), or 0 / 0 (NaN), as PyTorch.
    CHECK(std::isnan(var(tensor({2.0}), {0}).item<double>()));
    CHECK(dvec(var(tensor({1.0, 2.0}), {0}, 2.0)) == std::vector<double>{std::numeric_limits<double>::infinity()});
    CHECK(dvec(var(tensor({1.0, 2.0}), {0}, 5.0)) == std::vector<double>{std::numeric_limits<double>::infinity()});
    CHECK(std::isnan(var(zeros({0})).item<double>()));
    CHECK(var(x.to(dtype::float32)).type() == dtype::float32);
    // A scalar reference (two-pass in double).
    generator g(13);
    const Tensor r = rand({3, 6}, dtype::float64, g) * 10.0;
    const auto v = dvec(r);
    std::vector<double> want;
    for (std::int64_t i = 0; i < 3; ++i) {
        double mean = 0.0, ss = 0.0;
        for (std::int64_t j = 0; j < 6; ++j) mean += v[static_cast<std::size_t>(i * 6 + j)] / 6.0;
        for (std::int64_t j = 0; j < 6; ++j) ss += std::pow(v[static_cast<std::size_t>(i * 6 + j)] - mean, 2);
        want.push_back(ss / 5.0);
    }
    CHECK(close_with_nan(dvec(var(r, {1})), want, 1e-13));
    CHECK(close_with_nan(dvec(var(r.t(), {0})), want, 1e-13));
}

// ---------------------------------------------------------------- gather, scatter_add, index_select

TEST_CASE("gather/scatter_add/index_select: hand values, dims, repeated indices, dtypes", "[ops][index_gather][gather]") {
    const Tensor t = (arange(6).view({2, 3}) * 10).to(dtype::float32);  // [[0, 10, 20], [30, 40, 50]]
    const Tensor i1 = tensor({2, 0, 0, 1}).view({2, 2});
    CHECK(equal(gather(t, 1, i1), tensor({20.f, 0.f, 30.f, 40.f}).view({2, 2})));
    CHECK(equal(t.gather(0, tensor({1, 0, 1}).view({1, 3})), tensor({30.f, 10.f, 50.f}).view({1, 3})));
    CHECK(equal(gather(t, -1, tensor({1}).view({1, 1})), tensor({10.f}).view({1, 1})));
    CHECK(equal(gather(arange(6).view({2, 3}), 1, i1), tensor({2, 0, 3, 4}).view({2, 2})));  // int64 values
    CHECK(gather(t, 1, zeros({2, 0}, dtype::int64)).sizes() == int_list{2, 0});
    // scatter_add: repeated indices add up; src may be larger than the index.
    const Tensor base = ones({2, 3});
    const Tensor src = tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}).view({2, 3});
    const Tensor si = tensor({0, 0, 2, 1, 1, 1}).view({2, 3});
    CHECK(equal(scatter_add(base, 1, si, src), tensor({4.f, 1.f, 4.f, 1.f, 16.f, 1.f}).view({2, 3})));
    CHECK(equal(base.scatter_add(0, tensor({1, 0}).view({1, 2}), src), tensor({1.f, 3.f, 1.f, 2.f, 1.f, 1.f}).view({2, 3})));
    CHECK(equal(base, ones({2, 3})));  // not in place
    CHECK(equal(scatter_add(zeros({3}, dtype::int64), 0, tensor({2, 2, 0}), tensor({5, 6, 7})), tensor({7, 0, 11})));
    // index_select: slices along dim, repeats and any order.
    CHECK(equal(index_select(t, 1, tensor({2, 0, 2})), tensor({20.f, 0.f, 20.f, 50.f, 30.f, 50.f}).view({2, 3})));
    CHECK(equal(t.index_select(0, tensor({1})), tensor({30.f, 40.f, 50.f}).view({1, 3})));
    CHECK(index_select(t, 0, zeros({0}, dtype::int64)).sizes() == int_list{0, 3});
    CHECK(equal(index_select(tensor({true, false}), 0, tensor({1, 1, 0})), tensor({false, false, true})));
    CHECK(index_select(full({}, 3.0), 0, tensor({0})).item<double>() == 3.0);
    // A reference loop for gather on a non-contiguous tensor.
    generator g(14);
    const Tensor src3 = rand({4, 3, 5}, dtype::float64, g).transpose(0, 2);  // [5, 3, 4]
    const Tensor idx = (rand({5, 2, 4}, dtype::float64, g) * 3.0).to(dtype::int64);
    const auto sv = dvec(src3.contiguous());
    const auto iv = ivec(idx);
    std::vector<double> want;
    for (std::int64_t a = 0; a < 5; ++a)
        for (std::int64_t b = 0; b < 2; ++b)
            for (std::int64_t c = 0; c < 4; ++c)
                want.push_back(sv[static_cast<std::size_t>((a * 3 + iv[static_cast<std::size_t>((a * 2 + b) * 4 + c)]) * 4 + c)]);
    CHECK(dvec(gather(src3, 1, idx)) == want);
}

// ---------------------------------------------------------------- gradients

TEST_CASE("index reductions and index ops: gradcheck and gradgradcheck in float64", "[autograd][gradcheck][index_gather]") {
    SECTION("max, min over a dim (distinct values)") {
        const Tensor x = leaf({3, 4}, 21);
        check_grads([](const tensor_list& in) { return tensor_list{std::get<0>(max(in[0], 1)) * 2.0}; }, {x});
        check_grads([](const tensor_list& in) { return tensor_list{std::get<0>(in[0].min(0, true)) * in[0]}; }, {x});
    }
    SECTION("logsumexp") {
        const Tensor x = leaf({3, 4}, 22);
        check_grads([](const tensor_list& in) { return tensor_list{logsumexp(in[0], {1})}; }, {x});
        check_grads([](const tensor_list& in) { return tensor_list{logsumexp(in[0] * 3.0, {0, 1}, true)}; }, {x});
        // The gradient is softmax times g.
        const Tensor gx = autograd::grad({logsumexp(x, {1}).sum()}, {x})[0];
        CHECK(allclose(gx, softmax(x, 1).detach(), 1e-12, 1e-12));
    }
    SECTION("var, std, var_mean, std_mean") {
        const Tensor x = leaf({3, 4}, 23);
        check_grads([](const tensor_list& in) { return tensor_list{var(in[0], {1})}; }, {x});
        check_grads([](const tensor_list& in) { return tensor_list{var(in[0], {}, 0.0, true)}; }, {x});
        check_grads([](const tensor_list& in) { return tensor_list{graft::std(in[0], {0})}; }, {x});
        check_grads([](const tensor_list& in) {
            auto [v, m] = var_mean(in[0], {1}, 2.0);
            auto [s, m2] = std_mean(in[0], {0});
            return tensor_list{v * m, s + m2};
        }, {x});
        // One node with two outputs, as PyTorch's; only one output used: the other's gradient
        // is missing and the node's backward takes the used one's alone.
        check_grads([](const tensor_list& in) { return tensor_list{std::get<0>(var_mean(in[0], {1}))}; }, {x});
        check_grads([](const tensor_list& in) { return tensor_list{std::get<1>(std_mean(in[0], {0}))}; }, {x});
        {
            auto [v, m] = var_mean(x, {1});
            CHECK(v.grad_fn() == m.grad_fn());
            CHECK(v.grad_fn()->name() == std::string("VarMeanBackward0"));
            CHECK(v.output_nr() == 0);
            CHECK(m.output_nr() == 1);
            auto [s, sm] = std_mean(x);
            CHECK(s.grad_fn()->name() == std::string("StdMeanBackward0"));
            CHECK(s.grad_fn() == sm.grad_fn());
            // The same values as var and mean recorded apart (the same expressions, summed).
            const Tensor g_pair = autograd::grad({(v * 3.0).sum() + (m * m.detach()).sum()}, {x})[0];
            const Tensor m_apart = mean(x, {1});
            const Tensor g_apart =
                autograd::grad({(var(x, {1}) * 3.0).sum() + (m_apart * m_apart.detach()).sum()}, {x})[0];
            CHECK(equal(g_pair, g_apart));
        }
        // std of constant values: a zero gradient, not NaN (PyTorch's masked std_backward).
        Tensor c = full({3}, 2.0, dtype::float64).requires_grad_();
        CHECK(dvec(autograd::grad({graft::std(c)}, {c})[0]) == std::vector<double>{0.0, 0.0, 0.0});
    }
    SECTION("gather, scatter_add, index_select with repeated indices") {
        const Tensor x = leaf({3, 4}, 24), s = leaf({2, 4}, 25), big = leaf({3, 5}, 26);
        const Tensor gi = tensor({2, 0, 0, 1, 1, 1, 2, 0}).view({2, 4});
        check_grads([&](const tensor_list& in) { return tensor_list{gather(in[0], 0, gi) * in[0].narrow(0, 0, 2)}; }, {x});
        check_grads([&](const tensor_list& in) { return tensor_list{scatter_add(in[0], 0, gi, in[1] * in[1])}; }, {x, s});
        // src larger than the index: the rest of src gets a zero gradient.
        const Tensor small = tensor({0, 3, 3, 1, 2, 2}).view({3, 2});
        check_grads([&](const tensor_list& in) { return tensor_list{scatter_add(in[0], 1, small, in[1])}; }, {x, big});
        check_grads([](const tensor_list& in) { return tensor_list{index_select(in[0], 1, tensor({3, 0, 3}))}; }, {x});
        check_grads([](const tensor_list& in) {
            return tensor_list{index_select(in[0] * in[0], 0, tensor({1, 1, 2, 0}))};
        }, {x});
        Tensor y = scatter_add(x, 1, small, big);
        CHECK(std::string(y.grad_fn()->name()) == "ScatterAddBackward0");
        CHECK(std::string(gather(x, 0, gi).grad_fn()->name()) == "GatherBackward0");
        CHECK(std::string(index_select(x, 0, tensor({0})).grad_fn()->name()) == "IndexSelectBackward0");
        // index_select's gradient adds up repeated positions.
        CHECK(dvec(autograd::grad({index_select(x, 0, tensor({1, 1, 2})).sum()}, {x})[0]) ==
              std::vector<double>{0, 0, 0, 0, 2, 2, 2, 2, 1, 1, 1, 1});
    }
}

TEST_CASE("scatter_add_: in place, differentiable in self and src, refused indices leave self unchanged",
          "[autograd][index_gather][gather]") {
    Tensor t = zeros({2, 3});
    t.scatter_add_(1, tensor({2, 2, 0, 1}).view({2, 2}), ones({2, 2}));
    CHECK(equal(t, tensor({0.f, 0.f, 2.f, 1.f, 1.f, 0.f}).view({2, 3})));
    const auto v0 = t._version();
    CHECK_THROWS_WITH(t.scatter_add_(0, tensor({0, 2}).view({1, 2}), ones({1, 2})),
                      Catch::Contains("scatter_add: index 2 is out of bounds for dimension 0 with size 2"));
    CHECK(equal(t, tensor({0.f, 0.f, 2.f, 1.f, 1.f, 0.f}).view({2, 3})));
    CHECK(t._version() == v0);
    // Gradients: self gets g, src gets g at the index.
    Tensor x = leaf({2, 3}, 31), s = leaf({2, 2}, 32);
    Tensor y = x * 2.0;
    y.scatter_add_(1, tensor({2, 2, 0, 1}).view({2, 2}), s * s);
    CHECK(std::string(y.grad_fn()->name()) == "ScatterAddBackward0");
    const Tensor w = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}).view({2, 3}).to(dtype::float64);
    const auto g = autograd::grad({(y * w).sum()}, {x, s});
    CHECK(dvec(g[0]) == std::vector<double>{2, 4, 6, 8, 10, 12});
    const auto sv = dvec(s);
    CHECK(close_with_nan(dvec(g[1]), {2 * sv[0] * 3, 2 * sv[1] * 3, 2 * sv[2] * 4, 2 * sv[3] * 5}));
    check_grads([](const tensor_list& in) {
        Tensor z = in[0] * in[0];
        z.scatter_add_(0, tensor({1, 0, 1, 1}).view({1, 4}), in[1]);
        return tensor_list{z};
    }, {leaf({3, 4}, 33), leaf({2, 4}, 34)});
    Tensor leaf_x = zeros({2}, dtype::float64).requires_grad_();
    CHECK_THROWS_AS(leaf_x.scatter_add_(0, tensor({0}), ones({1}, dtype::float64)), graft::error);
}

// ---------------------------------------------------------------- errors

TEST_CASE("index reductions and index ops: bad input is a graft::error naming the op, index and size",
          "[ops][index_gather][bad_input]") {
    const Tensor t = arange(6).view({2, 3}).to(dtype::float32);
    CHECK_THROWS_WITH(gather(t, 1, tensor({3}).view({1, 1})),
                      Catch::Contains("gather: index 3 is out of bounds for dimension 1 with size 3"));
    CHECK_THROWS_WITH(gather(t, 0, tensor({-1}).view({1, 1})),
                      Catch::Contains("gather: index -1 is out of bounds for dimension 0 with size 2"));
    CHECK_THROWS_WITH(gather(t, 0, tensor({0.5f}).view({1, 1})), Catch::Contains("gather") && Catch::Contains("int64"));
    CHECK_THROWS_WITH(gather(t, 0, tensor({0})), Catch::Contains("same number of dimensions"));
    CHECK_THROWS_WITH(gather(t, 0, zeros({1, 4}, dtype::int64)), Catch::Contains("Size does not match at dimension 1"));
    CHECK_THROWS_WITH(gather(t, 2, zeros({1, 1}, dtype::int64)), Catch::Contains("gather: dimension out of range"));
    Tensor base = zeros({3});
    CHECK_THROWS_WITH(scatter_add(base, 0, tensor({1, 7}), ones({2})),
                      Catch::Contains("scatter_add: index 7 is out of bounds for dimension 0 with size 3"));
    CHECK(equal(base, zeros({3})));
    CHECK_THROWS_WITH(scatter_add(base, 0, tensor({0, 1}), ones({1})), Catch::Contains("smaller than src"));
    CHECK_THROWS_WITH(scatter_add(base, 0, tensor({0}), ones({1}, dtype::float64)),
                      Catch::Contains("scatter_add") && Catch::Contains("dtype"));
    CHECK_THROWS_WITH(index_select(t, 1, tensor({0, 5})),
                      Catch::Contains("index_select: index 5 is out of range for dimension 1 with size 3"));
    CHECK_THROWS_WITH(index_select(t, 0, tensor({-1})), Catch::Contains("index -1 is out of range"));
    CHECK_THROWS_WITH(index_select(t, 0, zeros({1, 1}, dtype::int64)), Catch::Contains("Index is supposed to be a vector"));
    CHECK_THROWS_WITH(index_select(full({}, 1.0), 0, tensor({0, 0})), Catch::Contains("Index to scalar can have only 1 value"));
    CHECK_THROWS_WITH(argmax(zeros({0})), Catch::Contains("argmax") && Catch::Contains("numel() == 0"));
    CHECK_THROWS_WITH(argmin(zeros({2, 0}), 1), Catch::Contains("argmin: Expected reduction dim 1 to have non-zero size"));
    CHECK_THROWS_WITH(argmax(tensor({true})), Catch::Contains("argmax: not implemented for 'Bool'"));
    CHECK_THROWS_WITH(max(zeros({0, 2}), 0), Catch::Contains("max: Expected reduction dim 0 to have non-zero size"));
    CHECK_THROWS_WITH(min(t, 2), Catch::Contains("min: dimension out of range"));
    CHECK_THROWS_WITH(var(tensor({1, 2})), Catch::Contains("var") && Catch::Contains("floating point"));
    CHECK_THROWS_WITH(graft::std(t, {3}), Catch::Contains("std: dimension out of range"));
    CHECK_THROWS_WITH(logsumexp(t, {0, 0}), Catch::Contains("logsumexp: dim 0 appears multiple times"));
    CHECK(equal(t, arange(6).view({2, 3}).to(dtype::float32)));
    CHECK(equal(gather(t, 1, tensor({2}).view({1, 1})), tensor({2.f}).view({1, 1})));  // still usable
}

// ---------------------------------------------------------------- graph layers

namespace {

/// A function using the ops of this file (fixed index tensors are constants of the graph).
Tensor indexer(Tensor x, Tensor w) {
    const Tensor rows = tensor({2, 0, 1, 1});
    const Tensor picked = index_select(x, 0, rows);                         // [4, n]
    const Tensor idx = argmax(picked, 1, true);                             // [4, 1]
    const Tensor top = gather(picked, 1, idx);                              // [4, 1]
    auto [mx, mi] = max(x * w, 1);
    const Tensor spread = scatter_add(zeros_like(x), 0, tensor({0, 1, 2, 0}).view({4, 1}).expand({4, x.size(1)}).contiguous(), picked);
    auto [v, m] = var_mean(x, {1});
    return top.sum() + mx.sum() + logsumexp(spread * w, {1}).sum() + (v * m).sum() + graft::std(x * w, {0}).sum() +
           argmin(x, 0).to(dtype::float64).sum() * 0.0 + mi.to(dtype::float64).sum();
}

}  // namespace

TEST_CASE("index ops under capture::trace: one node each, same values as eager", "[capture][index_gather]") {
    manual_seed(51);
    const Tensor x = randn({3, 5}, dtype::float64), w = randn({1, 5}, dtype::float64);
    auto cap = capture::trace(indexer, x, w);
    cap.graph().lint();
    const std::string text = ir::to_string(cap.graph());
    for (const char* kind : {"index_select[dim=0]", "argmax[dim=1, keepdim=true]", "gather[dim=1]", "scatter_add[dim=0]",
                             "logsumexp[", "var[", "std[", "argmin["})
        CHECK(text.find(kind) != std::string::npos);
    auto back = ir::parse(text);
    CHECK(ir::to_string(*back) == text);
    for (int i = 0; i < 3; ++i) {
        const Tensor x2 = randn({3, 5}, dtype::float64), w2 = randn({1, 5}, dtype::float64);
        CHECK(allclose(cap(x2, w2)[0], indexer(x2, w2), 1e-12, 1e-12));
        CHECK(allclose(std::get<Tensor>(ir::interpret(*back, std::vector<ir::ivalue>{x2, w2})[0]), indexer(x2, w2),
                       1e-12, 1e-12));
    }
}

TEST_CASE("index ops under capture::aot and jit::script: gradients as eager autograd", "[capture][jit][index_gather]") {
    manual_seed(52);
    const Tensor x = randn({3, 5}, dtype::float64).requires_grad_(), w = randn({1, 5}, dtype::float64).requires_grad_();
    auto a = capture::aot(indexer, {x, w});
    a.forward->lint();
    a.backward->lint();
    auto fn = jit::script(indexer);
    for (int i = 0; i < 4; ++i) {
        Tensor x2 = randn({3, 5}, dtype::float64).requires_grad_(), w2 = randn({1, 5}, dtype::float64).requires_grad_();
        Tensor eager = indexer(x2, w2);
        const auto want = autograd::grad({eager}, {x2, w2});
        Tensor out = a({x2, w2})[0];
        CHECK(allclose(out.detach(), eager.detach(), 1e-12, 1e-12));
        const auto got = autograd::grad({out}, {x2, w2});
        CHECK(allclose(got[0], want[0], 1e-12, 1e-12));
        CHECK(allclose(got[1], want[1], 1e-12, 1e-12));
        Tensor y = fn(x2, w2);
        CHECK(allclose(y.detach(), eager.detach(), 1e-12, 1e-12));
        const auto jg = autograd::grad({y}, {x2, w2});
        CHECK(allclose(jg[0], want[0], 1e-12, 1e-12));
        CHECK(allclose(jg[1], want[1], 1e-12, 1e-12));
    }
    CHECK(gradcheck([&](const tensor_list& in) { return tensor_list{a({in[0], in[1]})[0]}; }, {x, w}));
}

TEST_CASE("max, logsumexp, std and index_select under jit::script: one plan for many sizes, gradients as eager",
          "[jit][index_gather]") {
    // The gradients' zero-filled scatters record their sizes as attributes, which the dynamic
    // plan computes from each call's size.
    const auto f = [](Tensor x, Tensor w) {
        auto [v, i] = max(x * w, 1);
        return v.sum() + logsumexp(x, {0}).sum() + graft::std(x, {1}).sum() +
               index_select(x, 1, tensor({0, 0, 2})).sum() * 2.0;
    };
    auto fn = jit::script(f);
    manual_seed(53);
    for (std::int64_t n : {4, 6, 7, 9, 12, 15, 4, 6}) {
        INFO("n = " << n);
        Tensor x = randn({n, 3}, dtype::float64).requires_grad_(), w = randn({n, 3}, dtype::float64).requires_grad_();
        Tensor y = fn(x, w), e = f(x, w);
        CHECK(allclose(y.detach(), e.detach(), 1e-12, 1e-12));
        const auto got = autograd::grad({y}, {x, w});
        const auto want = autograd::grad({e}, {x, w});
        CHECK(allclose(got[0], want[0], 1e-12, 1e-12));
        CHECK(allclose(got[1], want[1], 1e-12, 1e-12));
    }
    CHECK(fn.debug_state().compilations <= 2);
}
