// cat, stack, split, chunk, unbind, flatten, clamp and square (issue 16): values against hand
// computations and a scalar reference loop, views, dtype promotion, errors named as PyTorch
// names them, gradcheck / gradgradcheck in float64, and the graph layers (capture::trace,
// capture::aot, jit::script) against eager.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <graft/graft.hpp>

#include "grad_test_common.hpp"

using namespace graft;
using gt::leaf;
using autograd::gradcheck;
using autograd::gradgradcheck;
using autograd::tensor_list;

namespace {

/// Row-major sizes -> strides of a contiguous tensor.
std::vector<std::int64_t> contiguous_strides(const int_list& s) {
    std::vector<std::int64_t> st(s.size(), 1);
    for (std::size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
    return st;
}

/// Scalar reference for cat along d: every output element looked up in the input it comes from.
std::vector<double> cat_reference(const std::vector<Tensor>& ts, std::size_t d) {
    int_list out_sizes = ts[0].sizes();
    out_sizes[d] = 0;
    for (const Tensor& t : ts) out_sizes[d] += t.sizes()[d];
    const auto ost = contiguous_strides(out_sizes);
    std::int64_t total = 1;
    for (auto s : out_sizes) total *= s;
    std::vector<double> out(static_cast<std::size_t>(total));
    for (std::int64_t flat = 0; flat < total; ++flat) {
        std::vector<std::int64_t> idx(out_sizes.size());
        std::int64_t rest = flat;
        for (std::size_t k = 0; k < idx.size(); ++k) {
            idx[k] = rest / ost[k];
            rest %= ost[k];
        }
        std::size_t m = 0;
        while (idx[d] >= ts[m].sizes()[d]) idx[d] -= ts[m++].sizes()[d];
        const auto v = ts[m].to_vector<double>();
        const auto ist = contiguous_strides(ts[m].sizes());
        std::int64_t at = 0;
        for (std::size_t k = 0; k < idx.size(); ++k) at += idx[k] * ist[k];
        out[static_cast<std::size_t>(flat)] = v[static_cast<std::size_t>(at)];
    }
    return out;
}

std::vector<std::int64_t> sizes_along(const std::vector<Tensor>& pieces, std::int64_t d) {
    std::vector<std::int64_t> r;
    for (const Tensor& p : pieces) r.push_back(p.size(d));
    return r;
}

/// graft still works after a refused call.
void still_usable(const Tensor& t) {
    const Tensor c = cat({t, t}, 0);
    CHECK(c.size(0) == 2 * t.size(0));
    CHECK(equal(c.narrow(0, t.size(0), t.size(0)), t));
}

}  // namespace

// ---------------------------------------------------------------- cat and stack

TEST_CASE("cat: hand values, negative dims, the scalar reference, non-contiguous inputs", "[ops][join_split]") {
    const Tensor a = arange(6).view({2, 3}).to(dtype::float32);
    const Tensor b = (arange(3).view({1, 3}) + 10).to(dtype::float32);
    CHECK(equal(cat({a, b}), tensor({0.f, 1.f, 2.f, 3.f, 4.f, 5.f, 10.f, 11.f, 12.f}).view({3, 3})));
    const Tensor c = (arange(4).view({2, 2}) + 20).to(dtype::float32);
    CHECK(equal(cat({a, c}, -1), tensor({0.f, 1.f, 2.f, 20.f, 21.f, 3.f, 4.f, 5.f, 22.f, 23.f}).view({2, 5})));
    CHECK(equal(cat({a}, 1), a));
    CHECK_FALSE(cat({a}, 1).shares_storage_with(a));  // always a new tensor

    // Every dim of 3-D tensors, positive and negative, one input transposed (non-contiguous).
    manual_seed(3);
    for (std::int64_t d = -3; d < 3; ++d) {
        const std::size_t k = static_cast<std::size_t>(d < 0 ? d + 3 : d);
        int_list s0{2, 3, 4}, s1{2, 3, 4}, s2{2, 3, 4};
        s1[k] = 1;
        s2[k] = 5;
        const Tensor x = randn(s0, dtype::float64), y = randn(s1, dtype::float64);
        int_list s2t = s2;
        std::swap(s2t[0], s2t[2]);
        const Tensor z = randn(s2t, dtype::float64).transpose(0, 2);  // sizes s2, strides not row-major
        REQUIRE_FALSE(z.is_contiguous());
        const Tensor r = cat({x, y, z}, d);
        int_list want = s0;
        want[k] = s0[k] + s1[k] + s2[k];
        CHECK(r.sizes() == want);
        CHECK(r.to_vector<double>() == cat_reference({x, y, z}, k));
    }
}

TEST_CASE("cat: dtype promotion, integers, PyTorch's legacy empty 1-D tensors", "[ops][join_split]") {
    const Tensor i = tensor({1, 2});
    const Tensor f = tensor({0.5f});
    const Tensor dd = tensor({0.25}).to(dtype::float64);
    const Tensor bo = tensor({true, false});
    CHECK(cat({i, i}).type() == dtype::int64);
    CHECK(equal(cat({i, i}), tensor({1, 2, 1, 2})));
    CHECK(cat({i, f}).type() == dtype::float32);
    CHECK(equal(cat({i, f}), tensor({1.f, 2.f, 0.5f})));
    CHECK(cat({f, dd}).type() == dtype::float64);
    CHECK(cat({bo, i}).type() == dtype::int64);
    CHECK(equal(cat({bo, i}), tensor({1, 0, 1, 2})));
    CHECK(cat({bo, bo}).type() == dtype::bool_);
    // A 1-D tensor of size 0 is skipped whatever the others' rank (torch.cat's legacy rule).
    const Tensor m = arange(6).view({2, 3});
    const Tensor e = zeros({0}, dtype::float32);
    const Tensor r = cat({e, m, e}, 1);
    CHECK(r.sizes() == int_list{2, 3});
    CHECK(r.type() == dtype::float32);  // it still takes part in type promotion
    CHECK(equal(r, m.to(dtype::float32)));
    CHECK(cat({e, e}).sizes() == int_list{0});
    // Empty pieces of the right rank are joined (size 0 along the dim).
    CHECK(equal(cat({m, zeros({2, 0}, dtype::int64)}, 1), m));
}

TEST_CASE("stack: a new dimension at every position", "[ops][join_split]") {
    const Tensor a = arange(6).view({2, 3}).to(dtype::float64), b = a + 100.0;
    const Tensor s0 = stack({a, b});
    CHECK(s0.sizes() == int_list{2, 2, 3});
    CHECK(equal(s0.select(0, 0), a));
    CHECK(equal(s0.select(0, 1), b));
    const Tensor s1 = stack({a, b}, 1);
    CHECK(s1.sizes() == int_list{2, 2, 3});
    CHECK(equal(s1.select(1, 1), b));
    const Tensor sl = stack({a, b, a}, -1);
    CHECK(sl.sizes() == int_list{2, 3, 3});
    for (std::int64_t i = 0; i < 2; ++i)
        for (std::int64_t j = 0; j < 3; ++j) {
            const double v = static_cast<double>(i * 3 + j);
            CHECK(sl.select(0, i).select(0, j).to_vector<double>() == std::vector<double>{v, v + 100, v});
        }
    CHECK(stack({a, b}, -3).sizes() == int_list{2, 2, 3});  // -(rank + 1) is the first position
    // 0-dim tensors stack into a 1-D tensor; dtypes promote as in cat.
    CHECK(equal(stack({full({}, 1.0), full({}, 2.0)}), tensor({1.0f, 2.0f})));
    CHECK(stack({tensor({1}), tensor({2.5})}).type() == dtype::float32);
}

// ---------------------------------------------------------------- split, chunk, unbind

TEST_CASE("split: pieces of split_size, and of given sizes, views of the input", "[ops][join_split]") {
    const Tensor t = arange(10).view({5, 2});
    const auto p = t.split(2);
    REQUIRE(p.size() == 3);
    CHECK(sizes_along(p, 0) == std::vector<std::int64_t>{2, 2, 1});
    CHECK(equal(p[2], tensor({8, 9}).view({1, 2})));
    CHECK(sizes_along(split(t, 5), 0) == std::vector<std::int64_t>{5});
    CHECK(sizes_along(split(t, 7), 0) == std::vector<std::int64_t>{5});  // larger than the size: one piece
    CHECK(sizes_along(split(t, 1, -1), 1) == std::vector<std::int64_t>{1, 1});
    CHECK(equal(split(t, 1, -1)[1], tensor({1, 3, 5, 7, 9}).view({5, 1})));
    // A dimension of size 0: one empty piece; split_size 0 is allowed there only.
    CHECK(split(zeros({0, 3}), 2).size() == 1);
    CHECK(split(zeros({0, 3}), 0).size() == 1);
    // Sizes given as a list (torch.split with a list, split_with_sizes).
    const auto q = t.split(int_list{1, 0, 4});
    REQUIRE(q.size() == 3);
    CHECK(sizes_along(q, 0) == std::vector<std::int64_t>{1, 0, 4});
    CHECK(equal(q[2], arange(2, 10).view({4, 2})));
    CHECK(sizes_along(split(t, {1, 1}, 1), 1) == std::vector<std::int64_t>{1, 1});
    CHECK(sizes_along(t.split_with_sizes({3, 2}), 0) == std::vector<std::int64_t>{3, 2});
    // Views: storage shared, writes visible in the input.
    Tensor base = zeros({6});
    auto v = base.split(4);
    for (const Tensor& piece : v) CHECK((piece.is_view() && piece.shares_storage_with(base)));
    v[1].fill_(7.0);
    CHECK(equal(base, tensor({0.f, 0.f, 0.f, 0.f, 7.f, 7.f})));
}

TEST_CASE("chunk: ceil(size / chunks) per piece, possibly fewer pieces", "[ops][join_split]") {
    // torch.chunk's documented examples.
    CHECK(sizes_along(arange(11).chunk(6), 0) == std::vector<std::int64_t>{2, 2, 2, 2, 2, 1});
    CHECK(sizes_along(arange(12).chunk(6), 0) == std::vector<std::int64_t>{2, 2, 2, 2, 2, 2});
    CHECK(sizes_along(arange(13).chunk(6), 0) == std::vector<std::int64_t>{3, 3, 3, 3, 1});
    CHECK(sizes_along(arange(5).chunk(4), 0) == std::vector<std::int64_t>{2, 2, 1});
    CHECK(sizes_along(arange(3).chunk(8), 0) == std::vector<std::int64_t>{1, 1, 1});
    // For every size and chunk count: pieces of ceil(n/c) but the last, and they cover the input.
    for (std::int64_t n = 1; n <= 12; ++n)
        for (std::int64_t c = 1; c <= 7; ++c) {
            const auto pieces = chunk(arange(n), c);
            const std::int64_t step = (n + c - 1) / c;
            REQUIRE(static_cast<std::int64_t>(pieces.size()) == (n + step - 1) / step);
            std::vector<std::int64_t> seen;
            for (std::size_t i = 0; i < pieces.size(); ++i) {
                if (i + 1 < pieces.size()) CHECK(pieces[i].size(0) == step);
                for (auto v : pieces[i].to_vector<std::int64_t>()) seen.push_back(v);
            }
            CHECK(seen == arange(n).to_vector<std::int64_t>());
        }
    // A size of 0 gives `chunks` empty pieces.
    const auto e = chunk(zeros({2, 0}), 3, 1);
    REQUIRE(e.size() == 3);
    for (const Tensor& p : e) CHECK(p.sizes() == int_list{2, 0});
    const Tensor m = arange(12).view({3, 4});
    const auto cm = m.chunk(2, -1);
    REQUIRE(cm.size() == 2);
    CHECK(equal(cm[1], tensor({2, 3, 6, 7, 10, 11}).view({3, 2})));
    CHECK(cm[1].shares_storage_with(m));
}

TEST_CASE("unbind: the slices along a dimension, as views", "[ops][join_split]") {
    const Tensor m = arange(6).view({2, 3});
    const auto rows = m.unbind();
    REQUIRE(rows.size() == 2);
    CHECK(equal(rows[1], tensor({3, 4, 5})));
    const auto cols = unbind(m, -1);
    REQUIRE(cols.size() == 3);
    CHECK(equal(cols[2], tensor({2, 5})));
    CHECK(cols[2].shares_storage_with(m));
    CHECK(unbind(zeros({0, 4})).empty());
    CHECK(unbind(tensor({7.0}))[0].dim() == 0);
    // stack inverts unbind.
    CHECK(equal(stack(unbind(m, 1), 1), m));
}

TEST_CASE("flatten: merged dimensions, views when possible, 0-dim to 1-D", "[ops][join_split]") {
    const Tensor t = arange(24).view({2, 3, 4});
    CHECK(t.flatten().sizes() == int_list{24});
    CHECK(flatten(t, 1).sizes() == int_list{2, 12});
    CHECK(flatten(t, 0, 1).sizes() == int_list{6, 4});
    CHECK(flatten(t, -2, -1).sizes() == int_list{2, 12});
    CHECK(flatten(t, 1, 1).is_same(t));  // nothing to merge: the tensor itself, as PyTorch
    CHECK(flatten(t, 1).shares_storage_with(t));
    CHECK(equal(flatten(t, 1), arange(24).view({2, 12})));
    const Tensor tt = t.transpose(0, 2);  // not viewable: a copy in row-major order of tt
    const Tensor ft = tt.flatten();
    CHECK_FALSE(ft.shares_storage_with(t));
    CHECK(ft.to_vector<std::int64_t>() == tt.contiguous().view({24}).to_vector<std::int64_t>());
    const Tensor s = full({}, 3.0);
    CHECK(s.flatten().sizes() == int_list{1});
    CHECK(flatten(s, -1, 0).sizes() == int_list{1});
}

// ---------------------------------------------------------------- clamp and square

TEST_CASE("clamp: NaN, min > max, dtypes, against a scalar reference", "[ops][join_split][clamp]") {
    const double nan = std::nan("");
    const Tensor x = tensor({-2.0, -0.5, 0.0, 0.5, 1.0, 3.0, nan}).to(dtype::float64);
    const auto ref = [](double v, std::optional<double> lo, std::optional<double> hi) {
        if (std::isnan(v)) return v;
        if (lo && (std::isnan(*lo) || v < *lo)) v = *lo;
        if (hi && (std::isnan(*hi) || v > *hi)) v = *hi;
        return v;
    };
    const auto same = [](const std::vector<double>& a, const std::vector<double>& b) {
        if (a.size() != b.size()) return false;
        for (std::size_t i = 0; i < a.size(); ++i)
            if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
        return true;
    };
    const std::vector<std::pair<std::optional<double>, std::optional<double>>> bounds{
        {-1.0, 1.0}, {0.0, std::nullopt}, {std::nullopt, 0.5}, {2.0, -1.0}, {0.0, 0.0}};
    for (const auto& [lo, hi] : bounds) {
        INFO("min " << (lo ? *lo : 999) << " max " << (hi ? *hi : 999));
        std::vector<double> want;
        for (double v : x.to_vector<double>()) want.push_back(ref(v, lo, hi));
        std::optional<scalar> slo, shi;
        if (lo) slo = *lo;
        if (hi) shi = *hi;
        CHECK(same(clamp(x, slo, shi).to_vector<double>(), want));
        CHECK(same(x.to(dtype::float32).clamp(slo, shi).to_vector<double>(), want));  // float32 is exact here
    }
    // min > max: every element is max (PyTorch).
    CHECK(equal(clamp(tensor({-5.0, 0.0, 5.0}), 2.0, 1.0), tensor({1.f, 1.f, 1.f})));
    // A NaN bound gives NaN everywhere it takes part.
    for (double v : clamp(tensor({-1.0, 0.0, 1.0}), nan, std::nullopt).to_vector<double>()) CHECK(std::isnan(v));
    CHECK(equal(clamp_min(x, 0.0).narrow(0, 0, 6), tensor({0.0, 0.0, 0.0, 0.5, 1.0, 3.0}).to(dtype::float64)));
    CHECK(equal(clamp_max(x, 0.0).narrow(0, 0, 6), tensor({-2.0, -0.5, 0.0, 0.0, 0.0, 0.0}).to(dtype::float64)));
    // Integer tensors stay integer with integer bounds and promote with floating ones.
    CHECK(equal(clamp(tensor({1, 5, 9}), 2, 7), tensor({2, 5, 7})));
    CHECK(clamp(tensor({1, 5, 9}), 2, 7.5).type() == dtype::float32);
    CHECK(clamp(tensor({true, false}), 0, 1).type() == dtype::int64);
    CHECK(clamp(x, 0, 1).type() == dtype::float64);
    CHECK(x.clamp(0.0).to_vector<double>()[1] == 0.0);
}

TEST_CASE("clamp: gradient passes where min <= x <= max, 0 at NaN, node names", "[autograd][join_split][clamp]") {
    const double nan = std::nan("");
    Tensor x = tensor({-1.0, 0.0, 0.5, 1.0, 2.0, nan}).to(dtype::float64).requires_grad_();
    const Tensor y = clamp(x, 0.0, 1.0);
    CHECK(std::string(y.grad_fn()->name()) == "ClampBackward1");
    CHECK(std::string(clamp_min(x, 0.0).grad_fn()->name()) == "ClampMinBackward0");
    CHECK(std::string(x.clamp_max(0.0).grad_fn()->name()) == "ClampMaxBackward0");
    const Tensor g = autograd::grad({y}, {x}, {full({6}, 3.0, dtype::float64)})[0];
    CHECK(g.to_vector<double>() == std::vector<double>{0, 3, 3, 3, 0, 0});
    CHECK(autograd::grad({clamp_min(x, 0.0).sum()}, {x})[0].to_vector<double>() ==
          std::vector<double>{0, 1, 1, 1, 1, 0});
    CHECK(autograd::grad({clamp_max(x, 0.5).sum()}, {x})[0].to_vector<double>() ==
          std::vector<double>{1, 1, 1, 0, 0, 0});
    // min > max: the result is constant, no gradient.
    CHECK(autograd::grad({clamp(x, 2.0, 1.0).sum()}, {x})[0].to_vector<double>() ==
          std::vector<double>{0, 0, 0, 0, 0, 0});
}

TEST_CASE("square: values, dtypes, gradient", "[ops][join_split][clamp]") {
    CHECK(equal(square(tensor({-3, 0, 4})), tensor({9, 0, 16})));
    CHECK(equal(square(tensor({true, false})), tensor({1, 0})));  // bool squares to int64, as torch.square
    Tensor x = tensor({-1.5, 2.0}).to(dtype::float64).requires_grad_();
    CHECK(autograd::grad({x.square().sum()}, {x})[0].to_vector<double>() == std::vector<double>{-3.0, 4.0});
}

TEST_CASE("clamp_, clamp_min_, clamp_max_, square_: in place, differentiable, dtype kept", "[autograd][join_split][clamp]") {
    Tensor a = tensor({-2.0, 0.5, 3.0});
    const auto v0 = a._version();
    a.clamp_(-1.0, 1.0);
    CHECK(a._version() > v0);
    CHECK(equal(a, tensor({-1.f, 0.5f, 1.f})));
    a.clamp_min_(0.0);
    CHECK(equal(a, tensor({0.f, 0.5f, 1.f})));
    a.clamp_max_(0.75);
    CHECK(equal(a, tensor({0.f, 0.5f, 0.75f})));
    a.square_();
    CHECK(equal(a, tensor({0.f, 0.25f, 0.5625f})));
    // Integer tensors: integer bounds in place; a floating bound cannot be written back.
    Tensor i = tensor({1, 5, 9});
    i.clamp_(2, 7);
    CHECK(equal(i, tensor({2, 5, 7})));
    CHECK_THROWS_AS(i.clamp_(0.5, 1.5), graft::error);
    CHECK(equal(i, tensor({2, 5, 7})));  // untouched
    // Gradients through the in-place ops on a non-leaf (the overwritten input is saved).
    Tensor x = tensor({-2.0, 0.5, 3.0}).to(dtype::float64).requires_grad_();
    Tensor y = x * 1.0;
    y.clamp_(-1.0, 1.0);
    y.square_();
    CHECK(std::string(y.grad_fn()->name()) == "PowBackward0");
    y.sum().backward();
    CHECK(x.grad().to_vector<double>() == std::vector<double>{0.0, 1.0, 0.0});
    // A leaf that requires grad cannot be modified in place.
    Tensor leaf_x = tensor({1.0}).requires_grad_();
    CHECK_THROWS_AS(leaf_x.clamp_(0.0, 0.5), graft::error);
    CHECK_THROWS_AS(leaf_x.square_(), graft::error);
}

// ---------------------------------------------------------------- gradients

TEST_CASE("join/split ops: gradcheck and gradgradcheck in float64", "[autograd][gradcheck][join_split]") {
    const Tensor a = leaf({2, 3}, 1), b = leaf({2, 1}, 2), c = leaf({4, 2}, 3);  // c used transposed
    const auto check = [](const std::function<tensor_list(const tensor_list&)>& f, const tensor_list& in) {
        REQUIRE(gradcheck(f, in));
        REQUIRE(gradgradcheck(f, in));
    };
    SECTION("cat") {
        check([](const tensor_list& in) { return tensor_list{cat({in[0], in[1], in[2].t()}, -1)}; }, {a, b, c});
        // A float32 input promoted to float64: its gradient comes back as float32.
        Tensor f32 = tensor({1.0f, 2.0f}).requires_grad_();
        Tensor f64 = tensor({3.0}).to(dtype::float64).requires_grad_();
        const Tensor y = cat({f32, f64});
        CHECK(y.type() == dtype::float64);
        const auto g = autograd::grad({(y * tensor({1.0, 2.0, 3.0}).to(dtype::float64)).sum()}, {f32, f64});
        CHECK(g[0].type() == dtype::float32);
        CHECK(g[0].to_vector<double>() == std::vector<double>{1.0, 2.0});
        CHECK(g[1].to_vector<double>() == std::vector<double>{3.0});
    }
    SECTION("cat with inputs that do not require grad and a legacy empty tensor") {
        const Tensor fixed = ones({2, 2}, dtype::float64);
        const Tensor e = zeros({0}, dtype::float64).requires_grad_();
        check([&](const tensor_list& in) { return tensor_list{cat({fixed, in[0], in[1]}, 1)}; }, {a, e});
        Tensor y = cat({fixed, a}, 1);
        CHECK(std::string(y.grad_fn()->name()) == "CatBackward0");
        CHECK(y.grad_fn()->next_functions().size() == 2);
    }
    SECTION("stack") {
        const Tensor d = leaf({2, 3}, 4);
        for (std::int64_t dim : {0, 1, 2, -1})
            check([dim](const tensor_list& in) { return tensor_list{stack({in[0], in[1]}, dim)}; }, {a, d});
    }
    SECTION("split, split_with_sizes, chunk, unbind: every piece an output") {
        const Tensor t = leaf({5, 3}, 5);
        check([](const tensor_list& in) { return split(in[0], 2); }, {t});
        check([](const tensor_list& in) { return split(in[0], int_list{1, 2}, 1); }, {t});
        check([](const tensor_list& in) { return chunk(in[0], 3, 0); }, {t});
        check([](const tensor_list& in) { return unbind(in[0], -1); }, {t});
        // Pieces used unevenly: the gradient is assembled from every piece.
        check([](const tensor_list& in) {
            const auto p = in[0].chunk(2);
            return tensor_list{(p[0] * p[0]).sum() + (p[1] * 3.0).sum()};
        }, {t});
    }
    SECTION("flatten") {
        const Tensor t = leaf({2, 3, 2}, 6);
        check([](const tensor_list& in) { return tensor_list{flatten(in[0], 1)}; }, {t});
        check([](const tensor_list& in) { return tensor_list{in[0].transpose(0, 2).flatten()}; }, {t});
    }
    SECTION("clamp, clamp_min, clamp_max, square, and in place, away from the kinks") {
        // Values at least 0.1 away from the bounds: finite differences do not cross a kink.
        const Tensor x = tensor({-1.7, -0.6, 0.2, 0.75, 1.3, 2.4}).to(dtype::float64).requires_grad_();
        check([](const tensor_list& in) { return tensor_list{clamp(in[0], -0.5, 1.0)}; }, {x});
        check([](const tensor_list& in) { return tensor_list{clamp_min(in[0], 0.0) * in[0]}; }, {x});
        check([](const tensor_list& in) { return tensor_list{in[0].clamp_max(0.5) * in[0]}; }, {x});
        check([](const tensor_list& in) { return tensor_list{square(in[0])}; }, {x});
        check([](const tensor_list& in) {
            Tensor y = in[0] * 2.0;
            y.clamp_(-1.0, 2.0);
            y.square_();
            return tensor_list{y};
        }, {x});
    }
}

TEST_CASE("split pieces share one node and refuse in-place writes with grad, narrow views rebase the base",
          "[autograd][join_split]") {
    Tensor x = tensor({1.0, 2.0, 3.0, 4.0, 5.0}).to(dtype::float64).requires_grad_();
    Tensor y = x * 1.0;
    auto pieces = y.split(2);
    // As PyTorch: the outputs of one split share SplitBackward0, which can't be rebased for one
    // of them (tests/test_autograd_multi_output.cpp has the rest of this rule).
    CHECK_THROWS_WITH(pieces[0].mul_(3.0), Catch::Contains("Output 0 of SplitBackward0 is a view"));
    CHECK(y.to_vector<double>() == std::vector<double>{1.0, 2.0, 3.0, 4.0, 5.0});
    // The same regions as single narrow views: in-place writes go through CopySlices into y.
    y.narrow(0, 0, 2).mul_(3.0);
    y.narrow(0, 4, 1).clamp_(0.0, 1.0);
    CHECK(y.to_vector<double>() == std::vector<double>{3.0, 6.0, 3.0, 4.0, 1.0});
    y.sum().backward();
    CHECK(x.grad().to_vector<double>() == std::vector<double>{3.0, 3.0, 1.0, 1.0, 0.0});
    // Without grad, unbind's views (like split's) may be written in place.
    Tensor z = x.detach().view({5, 1}) * 1.0;
    z.unbind(0)[1].fill_(0.0);
    CHECK(z.flatten().to_vector<double>() == std::vector<double>{1.0, 0.0, 3.0, 4.0, 5.0});
}

// ---------------------------------------------------------------- errors

TEST_CASE("join/split ops: bad input is a graft::error naming the op, and graft stays usable",
          "[ops][join_split][bad_input]") {
    const Tensor m = arange(6).view({2, 3}).to(dtype::float32);
    CHECK_THROWS_WITH(cat({}), Catch::Contains("cat") && Catch::Contains("non-empty list"));
    CHECK_THROWS_WITH(cat({m, arange(4).view({2, 2})}, 0),
                      Catch::Contains("Sizes of tensors must match except in dimension 0") &&
                          Catch::Contains("Expected size 3 but got size 2 for tensor number 1"));
    CHECK_THROWS_WITH(cat({m, arange(3)}), Catch::Contains("same number of dimensions: got 2 and 1"));
    CHECK_THROWS_WITH(cat({m, m}, 2), Catch::Contains("cat: dimension out of range"));
    CHECK_THROWS_WITH(cat({full({}, 1.0), full({}, 2.0)}), Catch::Contains("zero-dimensional tensor (at position 0)"));
    CHECK_THROWS_WITH(cat({m, Tensor{}}), Catch::Contains("tensor 1 in the list is undefined"));
    CHECK_THROWS_WITH(stack({}), Catch::Contains("stack") && Catch::Contains("non-empty"));
    CHECK_THROWS_WITH(stack({m, m.t()}), Catch::Contains("equal size, but got [2, 3] at entry 0 and [3, 2] at entry 1"));
    CHECK_THROWS_WITH(stack({m, m}, 3), Catch::Contains("stack: dimension out of range"));
    CHECK_THROWS_WITH(split(m, -1), Catch::Contains("split_size be non-negative"));
    CHECK_THROWS_WITH(split(m, 0), Catch::Contains("split_size can only be 0 if dimension size is 0"));
    CHECK_THROWS_WITH(split(m, 1, 2), Catch::Contains("split: dimension out of range"));
    CHECK_THROWS_WITH(split(full({}, 1.0), 1), Catch::Contains("at least a 1-dimensional tensor"));
    CHECK_THROWS_WITH(split(m, int_list{1, 2}), Catch::Contains("split_sizes to sum exactly to 2") &&
                                                    Catch::Contains("split_sizes=[1, 2]"));
    CHECK_THROWS_WITH(m.split_with_sizes({3, -1}, 1), Catch::Contains("only non-negative entries"));
    CHECK_THROWS_WITH(chunk(m, 0), Catch::Contains("chunk: expects `chunks` to be greater than 0, got: 0"));
    CHECK_THROWS_WITH(m.chunk(-2), Catch::Contains("greater than 0"));
    CHECK_THROWS_WITH(chunk(m, 2, -3), Catch::Contains("chunk: dimension out of range"));
    CHECK_THROWS_WITH(unbind(full({}, 1.0)), Catch::Contains("tensor has no dimensions"));
    CHECK_THROWS_WITH(unbind(m, 2), Catch::Contains("unbind: dimension out of range"));
    CHECK_THROWS_WITH(flatten(arange(24).view({2, 3, 4}), 2, 1), Catch::Contains("start_dim cannot come after end_dim"));
    CHECK_THROWS_WITH(flatten(m, 0, 2), Catch::Contains("flatten: dimension out of range"));
    CHECK_THROWS_WITH(clamp(m, std::nullopt, std::nullopt), Catch::Contains("At least one of 'min' or 'max' must not be None"));
    Tensor writable = m.clone();
    CHECK_THROWS_WITH(writable.clamp_(std::nullopt), Catch::Contains("At least one of 'min' or 'max'"));
    CHECK(equal(writable, m));
    CHECK_THROWS_WITH(clamp(tensor({true}), true, std::nullopt), Catch::Contains("clamp") && Catch::Contains("Bool"));
    CHECK_THROWS_AS(clamp(Tensor{}, 0.0, 1.0), graft::error);
    // The inputs are unchanged and graft keeps working.
    CHECK(equal(m, arange(6).view({2, 3}).to(dtype::float32)));
    still_usable(m);
}

// ---------------------------------------------------------------- graph layers

namespace {

/// A small function using every op of this file.
Tensor mixer(Tensor x, Tensor w) {
    const auto halves = x.chunk(2, 1);                         // two views of x
    Tensor h = cat({halves[1], halves[0] * 2.0, w}, 1);        // [n, 6]
    Tensor s = stack({h, square(h)}, 0);                       // [2, n, 6]
    const auto rows = unbind(s.flatten(1), 0);                 // two [n * 6]
    const auto parts = rows[1].split(int_list{2, rows[1].size(0) - 2});
    return clamp(rows[0], -0.5, 0.75).sum() + parts[1].clamp_min(0.1).sum() + split(parts[0], 1)[1].clamp_max(0.2).sum();
}

}  // namespace

TEST_CASE("join/split ops under capture::trace: one cat / clamp node each, same values as eager", "[capture][join_split]") {
    manual_seed(31);
    const Tensor x = randn({3, 4}, dtype::float64), w = randn({3, 2}, dtype::float64);
    auto cap = capture::trace(mixer, x, w);
    cap.graph().lint();
    const std::string text = ir::to_string(cap.graph());
    CHECK(text.find(" = cat[dim=1](") != std::string::npos);
    CHECK(text.find(" = cat[dim=0](") != std::string::npos);  // stack
    CHECK(text.find("clamp[max=0.75, min=-0.5]") != std::string::npos);
    CHECK(text.find("clamp[min=0.1]") != std::string::npos);
    CHECK(text.find("narrow[") != std::string::npos);
    CHECK(text.find("select[") != std::string::npos);
    // The text form parses back to the same graph, and runs.
    auto back = ir::parse(text);
    CHECK(ir::to_string(*back) == text);
    for (int i = 0; i < 3; ++i) {
        const Tensor x2 = randn({3, 4}, dtype::float64), w2 = randn({3, 2}, dtype::float64);
        CHECK(allclose(cap(x2, w2)[0], mixer(x2, w2), 1e-12, 1e-12));
        CHECK(allclose(std::get<Tensor>(ir::interpret(*back, std::vector<ir::ivalue>{x2, w2})[0]), mixer(x2, w2), 1e-12, 1e-12));
    }
}

TEST_CASE("join/split ops under capture::aot: gradients as eager autograd", "[capture][join_split]") {
    manual_seed(32);
    const Tensor x = randn({3, 4}, dtype::float64).requires_grad_(), w = randn({3, 2}, dtype::float64).requires_grad_();
    auto a = capture::aot(mixer, {x, w});
    a.forward->lint();
    a.backward->lint();
    CHECK(a.grad_inputs == std::vector<std::size_t>{0, 1});
    for (int i = 0; i < 2; ++i) {
        Tensor x2 = randn({3, 4}, dtype::float64).requires_grad_(), w2 = randn({3, 2}, dtype::float64).requires_grad_();
        Tensor out = a({x2, w2})[0];
        CHECK(std::string(out.grad_fn()->name()) == "CompiledFunctionBackward");
        const auto got = autograd::grad({out}, {x2, w2});
        Tensor eager = mixer(x2, w2);
        CHECK(allclose(out.detach(), eager.detach(), 1e-12, 1e-12));
        const auto want = autograd::grad({eager}, {x2, w2});
        CHECK(allclose(got[0], want[0], 1e-12, 1e-12));
        CHECK(allclose(got[1], want[1], 1e-12, 1e-12));
    }
    // The compiled function against finite differences.
    CHECK(gradcheck([&](const tensor_list& in) { return tensor_list{a({in[0], in[1]})[0]}; }, {x, w}));
}

TEST_CASE("join/split ops under jit::script: profiled, optimized and differentiable runs match eager",
          "[jit][join_split]") {
    manual_seed(33);
    auto fn = jit::script(mixer);
    for (int i = 0; i < 4; ++i) {
        const bool grad = i >= 2;
        Tensor x = randn({3, 4}, dtype::float64), w = randn({3, 2}, dtype::float64);
        if (grad) {
            x.requires_grad_();
            w.requires_grad_();
        }
        Tensor y = fn(x, w);
        Tensor eager = mixer(x, w);
        CHECK(allclose(y.detach(), eager.detach(), 1e-12, 1e-12));
        if (grad) {
            REQUIRE(y.requires_grad());
            if (i == 3) CHECK(std::string(y.grad_fn()->name()) == "DifferentiableGraphBackward");
            const auto got = autograd::grad({y}, {x, w});
            const auto want = autograd::grad({eager}, {x, w});
            CHECK(allclose(got[0], want[0], 1e-12, 1e-12));
            CHECK(allclose(got[1], want[1], 1e-12, 1e-12));
        }
    }
    // The gradients above came from a differentiable plan, not from a fallback to eager code.
    const jit::debug_state d = fn.debug_state();
    bool differentiable = false;
    for (const auto& level : d.levels)
        differentiable = differentiable ||
                         (level.plan && level.plan->kind == jit::plan_kind::differentiable && level.plan->hits >= 1);
    CHECK(differentiable);
    CHECK(d.graph.find("cat[dim=1]") != std::string::npos);
    // Another size: the graph is not baked to the first one (chunk's and split's pieces follow it).
    const Tensor x = randn({5, 6}, dtype::float64), w = randn({5, 2}, dtype::float64);
    CHECK(allclose(fn(x, w), mixer(x, w), 1e-12, 1e-12));
}

TEST_CASE("chunk and flatten under jit::script: sizes as expressions, one dynamic plan for every size",
          "[jit][join_split]") {
    // chunk's ceil(n / chunks) and flatten's product are SymInt expressions under capture, so
    // the dynamic plan computes the narrows' starts and lengths for each call's size.
    const auto f = [](Tensor x) {
        const auto p = x.chunk(2, 0);
        return cat({p[1], p[0]}, 0).flatten().clamp(-0.5, 0.5) * 2.0;
    };
    auto fn = jit::script(f);
    manual_seed(34);
    for (std::int64_t n : {4, 6, 7, 9, 12, 15}) {
        const Tensor x = randn({n, 3});
        CHECK(equal(fn(x), f(x)));
    }
    const jit::debug_state d = fn.debug_state();
    CHECK(d.symbolic.find("narrow.start") != std::string::npos);
    CHECK(d.symbolic.find("reshape.sizes") != std::string::npos);
    CHECK(d.compilations <= 2);  // the odd sizes did not each need a plan of their own
}

TEST_CASE("broadcast_tensors: views expanded to the common shape, gradients summed back, errors",
          "[ops][join_split]") {
    // torch.broadcast_tensors(torch.ones(3), torch.ones(2, 1))[0].shape == (2, 3)
    const Tensor a = tensor({1.0, 2.0, 3.0}), b = tensor({10.0, 20.0}, {2, 1}), c = scalar_tensor(5.0, dtype::float64);
    const auto out = broadcast_tensors({a, b, c});
    REQUIRE(out.size() == 3);
    for (const Tensor& t : out) CHECK(t.sizes() == int_list{2, 3});
    CHECK(out[0].to_vector<double>() == std::vector<double>{1, 2, 3, 1, 2, 3});
    CHECK(out[1].to_vector<double>() == std::vector<double>{10, 10, 10, 20, 20, 20});
    CHECK(out[2].to_vector<double>() == std::vector<double>(6, 5.0));
    // views: stride 0 along the stretched dimensions, the same storage
    CHECK(out[0].strides() == int_list{0, 1});
    CHECK(out[1].strides() == int_list{1, 0});
    CHECK(out[0].data_ptr<float>() == a.data_ptr<float>());  // tensor({1.0, ...}) is float32
    // an already broadcast shape, dtypes kept, an empty list
    const auto same_shape = broadcast_tensors({a, arange(4, 7)});
    CHECK(same_shape[0].sizes() == int_list{3});
    CHECK(same_shape[1].type() == dtype::int64);
    CHECK(broadcast_tensors({}).empty());
    // gradients: each input gets the gradient summed over its stretched dimensions
    const Tensor x = tensor({1.0, 2.0, 3.0}, {3}, dtype::float64).requires_grad_();
    const Tensor y = tensor({1.0, 2.0}, {2, 1}, dtype::float64).requires_grad_();
    const auto xy = broadcast_tensors({x, y});
    const Tensor w = arange(6).to(dtype::float64).view({2, 3});
    const auto g = autograd::grad({(xy[0] * w).sum() + (xy[1] * w * 2.0).sum()}, {x, y});
    CHECK(g[0].to_vector<double>() == std::vector<double>{3, 5, 7});      // w.sum(0)
    CHECK(g[1].to_vector<double>() == std::vector<double>{6, 24});        // 2 * w.sum(1)
    CHECK(gradcheck([](const tensor_list& in) { return broadcast_tensors(in); }, {leaf({4}, 81), leaf({3, 1}, 82)}));
    CHECK(gradgradcheck([](const tensor_list& in) { return broadcast_tensors(in); }, {leaf({4}, 83), leaf({3, 1}, 84)}));
    // errors: PyTorch "The size of tensor a (3) must match the size of tensor b (2) ..."
    try {
        (void)broadcast_tensors({ones({3}), ones({2})});
        FAIL("no graft::error");
    } catch (const graft::error& e) {
        CHECK(std::string(e.what()).find("broadcast_tensors: the sizes [2] of tensor 1 do not broadcast") !=
              std::string::npos);
    }
    CHECK_THROWS_AS(broadcast_tensors({ones({3}), Tensor{}}), graft::error);
    // under capture::aot: expand views in the graph, gradients as eager
    const auto f = [](const std::vector<Tensor>& in) {
        const auto b2 = broadcast_tensors(in);
        return std::vector<Tensor>{b2[0] * b2[1]};
    };
    auto compiled = capture::aot(f, {x, y});
    const Tensor got = compiled({x, y})[0];
    const Tensor want = f({x, y})[0];
    CHECK(equal(got.detach(), want.detach()));
    const auto gg = autograd::grad({got.sum()}, {x, y});
    const auto gw = autograd::grad({want.sum()}, {x, y});
    CHECK(equal(gg[0], gw[0]));
    CHECK(equal(gg[1], gw[1]));
}
