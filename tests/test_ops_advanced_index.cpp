// Advanced indexing with int64 index tensors (issue 16): index / operator[] / index_put /
// index_put_ against scalar reference loops, PyTorch's negative-index wrap and broadcasting
// of the index tensors, errors naming the op, gradcheck / gradgradcheck in float64, and the
// graph layers (capture::trace with IR print/parse round trip, capture::aot, jit::script).
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <graft/graft.hpp>

#include "grad_test_common.hpp"

using namespace graft;
using gt::leaf;
using autograd::gradcheck;
using autograd::gradgradcheck;
using autograd::tensor_list;
using Catch::Matchers::Contains;

namespace {

Tensor idx(std::vector<std::int64_t> v, int_list sizes = {-1}) { return from_vector(v, std::move(sizes)); }
std::vector<double> dvec(const Tensor& t) { return t.to_vector<double>(); }
bool close(const std::vector<double>& a, const std::vector<double>& b, double tol = 1e-12) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::abs(a[i] - b[i]) > tol * (1.0 + std::abs(b[i]))) return false;
    return true;
}
std::int64_t wrap(std::int64_t i, std::int64_t n) { return i < 0 ? i + n : i; }

}  // namespace

TEST_CASE("index: one index tensor, negative indices, operator[]", "[ops][advanced_index]") {
    const Tensor x = leaf({4, 3}, 1).detach();
    const std::vector<std::int64_t> iv{2, 0, -1, 2};
    const Tensor i = idx(iv);
    const Tensor y = index(x, {i});
    REQUIRE(y.sizes() == int_list{4, 3});
    const auto xv = dvec(x);
    std::vector<double> want;
    for (auto r : iv)
        for (std::int64_t c = 0; c < 3; ++c) want.push_back(xv[static_cast<std::size_t>(wrap(r, 4) * 3 + c)]);
    CHECK(dvec(y) == want);
    CHECK(dvec(x[i]) == want);
    CHECK(dvec(x.index({i})) == want);
    // A 2-D index: result [2, 2, 3]; a 0-dim index drops the dimension.
    const Tensor y2 = x[idx({3, 1, 1, 0}, {2, 2})];
    CHECK(y2.sizes() == int_list{2, 2, 3});
    CHECK(dvec(y2[1][1]) == dvec(x[0]));
    CHECK(x[from_vector(std::vector<std::int64_t>{-3}, {})].sizes() == int_list{3});
    // Non-contiguous input.
    const Tensor xt = x.t();  // [3, 4]
    CHECK(dvec(xt[idx({1})]) == dvec(x.select(1, 1)));
}

TEST_CASE("index: several index tensors broadcast together", "[ops][advanced_index]") {
    const Tensor x = leaf({3, 4, 2}, 2).detach();
    const std::vector<std::int64_t> a{2, -3}, b{0, 3, -1};
    const Tensor y = index(x, {idx(a, {2, 1}), idx(b, {3})});
    REQUIRE(y.sizes() == int_list{2, 3, 2});
    const auto xv = dvec(x);
    std::vector<double> want;
    for (std::int64_t p = 0; p < 2; ++p)
        for (std::int64_t q = 0; q < 3; ++q)
            for (std::int64_t r = 0; r < 2; ++r)
                want.push_back(xv[static_cast<std::size_t>((wrap(a[p], 3) * 4 + wrap(b[q], 4)) * 2 + r)]);
    CHECK(dvec(y) == want);
    // As many indices as dimensions: a gather of single elements.
    const Tensor z = index(x, {idx({0, 2}), idx({1, 3}), idx({1, 0})});
    CHECK(dvec(z) == std::vector<double>{xv[0 * 8 + 1 * 2 + 1], xv[2 * 8 + 3 * 2 + 0]});
}

TEST_CASE("index / index_put: errors", "[ops][advanced_index][errors]") {
    const Tensor x = zeros({3, 2}, dtype::float64);
    REQUIRE_THROWS_WITH(x[idx({3})], Contains("index: index 3 is out of bounds for dimension 0 with size 3"));
    REQUIRE_THROWS_WITH(x[idx({-4})], Contains("index -4 is out of bounds for dimension 0 with size 3"));
    REQUIRE_THROWS_WITH(index(x, {idx({0}), idx({2})}), Contains("index 2 is out of bounds for dimension 1 with size 2"));
    REQUIRE_THROWS_WITH(x[tensor({0.0})], Contains("index: tensors used as indices must be int64, got float"));
    REQUIRE_THROWS_WITH(x[from_vector(std::vector<bool>{true, false, true}, {-1})],
                        Contains("boolean mask indices are not implemented"));
    REQUIRE_THROWS_WITH(index(x, {idx({0}), idx({0}), idx({0})}), Contains("too many indices for tensor of dimension 2"));
    REQUIRE_THROWS_WITH(index(x, {idx({0, 1}), idx({0, 1, 1})}),
                        Contains("indexing tensors could not be broadcast together"));
    REQUIRE_THROWS_WITH(index(x, {}), Contains("at least one index tensor"));
    REQUIRE_THROWS_WITH(index(x, {Tensor{}}), Contains("index tensor 0 is undefined"));
    REQUIRE_THROWS_WITH(index_put(x, {idx({0})}, ones({2}, dtype::float32)),
                        Contains("index_put: Index put requires the source and destination dtypes match"));
    REQUIRE_THROWS_WITH(index_put(x, {idx({0})}, ones({3}, dtype::float64)),
                        Contains("value tensor of shape [3] cannot be broadcast to indexing result of shape [1, 2]"));
    Tensor y = ones({3, 2}, dtype::float64);
    const auto v0 = y._version();
    REQUIRE_THROWS_WITH(y.index_put_({idx({0, 5})}, ones({2}, dtype::float64)), Contains("index 5 is out of bounds"));
    CHECK(dvec(y) == std::vector<double>(6, 1.0));  // nothing written: every index is checked first
    CHECK(y._version() == v0);
    // An empty index tensor selects nothing.
    CHECK(x[idx({})].sizes() == int_list{0, 2});
}

TEST_CASE("index_put: write, accumulate with duplicates, broadcast values, in place", "[ops][advanced_index]") {
    const Tensor x = leaf({4, 2}, 3).detach();
    const auto xv = dvec(x);
    const Tensor v = from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {3, 2});
    // accumulate: rows 1, 3, 1 get v's rows added (row 1 twice).
    const Tensor acc = index_put(x, {idx({1, 3, 1})}, v, true);
    std::vector<double> want = xv;
    const std::vector<std::int64_t> rows{1, 3, 1};
    for (std::size_t k = 0; k < 3; ++k)
        for (std::size_t c = 0; c < 2; ++c) want[static_cast<std::size_t>(rows[k]) * 2 + c] += dvec(v)[k * 2 + c];
    CHECK(close(dvec(acc), want));
    CHECK(dvec(x) == xv);  // out of place
    // write without duplicates; values broadcast (one number for every element, one row for every row).
    const Tensor w = index_put(x, {idx({0, -1})}, full({}, 7.0, dtype::float64));
    want = xv;
    want[0] = want[1] = want[6] = want[7] = 7.0;
    CHECK(dvec(w) == want);
    const Tensor r = x.index_put({idx({2}), idx({1})}, full({1}, -2.0, dtype::float64));
    want = xv;
    want[5] = -2.0;
    CHECK(dvec(r) == want);
    // In place: bumps the version, writes the tensor itself.
    Tensor y = x.clone();
    const auto v0 = y._version();
    y.index_put_({idx({3})}, from_vector(std::vector<double>{8, 9}, {2}));
    CHECK(y._version() == v0 + 1);
    want = xv;
    want[6] = 8;
    want[7] = 9;
    CHECK(dvec(y) == want);
    // Integer tensors too.
    Tensor iy = zeros({3}, dtype::int64);
    iy.index_put_({idx({0, 0, 2})}, idx({5, 6, 7}), true);
    CHECK(iy.to_vector<std::int64_t>() == std::vector<std::int64_t>{11, 0, 7});
    // int64 accumulation wraps around (two's complement), as PyTorch's, without undefined behaviour.
    Tensor big = from_vector(std::vector<std::int64_t>{INT64_MAX}, {1});
    big.index_put_({idx({0})}, idx({1}), true);
    CHECK(big.to_vector<std::int64_t>() == std::vector<std::int64_t>{INT64_MIN});
}

TEST_CASE("index: gradients by hand, gradcheck and gradgradcheck", "[ops][advanced_index][autograd]") {
    Tensor x = leaf({4, 2}, 4);
    Tensor y = x[idx({1, 3, 1, -4})];
    REQUIRE(y.grad_fn());
    CHECK(y.grad_fn()->name() == "IndexBackward0");
    y.sum().backward();
    // Each row gets the number of times it was read: row 0 once (as -4), row 1 twice, row 3 once.
    CHECK(dvec(x.grad()) == std::vector<double>{1, 1, 2, 2, 0, 0, 1, 1});

    const auto f1 = [](const tensor_list& in) { return tensor_list{in[0][idx({2, 0, 2, -1}, {2, 2})]}; };
    CHECK(gradcheck(f1, {leaf({3, 2}, 5)}));
    CHECK(gradgradcheck(f1, {leaf({3, 2}, 6)}));
    const auto f2 = [](const tensor_list& in) {
        return tensor_list{index(in[0] * in[0], {idx({0, 1, 1}, {3, 1}), idx({2, 0}, {2})})};
    };
    CHECK(gradcheck(f2, {leaf({2, 3, 2}, 7)}));
    CHECK(gradgradcheck(f2, {leaf({2, 3, 2}, 8)}));
}

TEST_CASE("index_put: gradients by hand, gradcheck and gradgradcheck", "[ops][advanced_index][autograd]") {
    Tensor x = leaf({3, 2}, 9), v = leaf({2, 2}, 10);
    // Without accumulate: self's gradient is zero at the written rows, values get g's rows.
    Tensor y = index_put(x, {idx({2, 0})}, v);
    CHECK(y.grad_fn()->name() == "IndexPutBackward0");
    const Tensor g = from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {3, 2});
    y.backward(g);
    CHECK(dvec(x.grad()) == std::vector<double>{0, 0, 3, 4, 0, 0});
    CHECK(dvec(v.grad()) == std::vector<double>{5, 6, 1, 2});
    // With accumulate and a broadcast value row: self gets g, values get g's rows summed.
    Tensor x2 = leaf({3, 2}, 11), v2 = leaf({2}, 12);
    index_put(x2, {idx({1, 1, 2})}, v2, true).backward(g);
    CHECK(dvec(x2.grad()) == dvec(g));
    CHECK(dvec(v2.grad()) == std::vector<double>{3 + 3 + 5, 4 + 4 + 6});

    const auto f = [](const tensor_list& in) {
        return tensor_list{index_put(in[0] * 2.0, {idx({0, 2}), idx({1, -1})}, in[1] * in[1])};
    };
    CHECK(gradcheck(f, {leaf({3, 3}, 13), leaf({2}, 14)}));
    CHECK(gradgradcheck(f, {leaf({3, 3}, 15), leaf({2}, 16)}));
    const auto fa = [](const tensor_list& in) {
        return tensor_list{index_put(in[0], {idx({1, 0, 1})}, in[1] * in[0].sum(), true)};
    };
    CHECK(gradcheck(fa, {leaf({2, 2}, 17), leaf({3, 2}, 18)}));
    CHECK(gradgradcheck(fa, {leaf({2, 2}, 19), leaf({3, 2}, 20)}));
    // In place on a non-leaf.
    const auto fi = [](const tensor_list& in) {
        Tensor t = in[0] * 1.0;
        t.index_put_({idx({1})}, in[1] * 3.0);
        return tensor_list{t * t};
    };
    CHECK(gradcheck(fi, {leaf({2, 3}, 21), leaf({3}, 22)}));
    CHECK(gradgradcheck(fi, {leaf({2, 3}, 23), leaf({3}, 24)}));
    Tensor l = leaf({2}, 25);
    REQUIRE_THROWS_WITH(l.index_put_({idx({0})}, full({}, 1.0, dtype::float64)),
                        Contains("a leaf Variable that requires grad"));
}

namespace {
Tensor indexing_fn(Tensor x, Tensor w) {
    const Tensor rows = tensor({2, 0, 2, 1}), cols = tensor({1, 1, 0, 2});
    Tensor picked = x[rows] * w;                                 // [4, 3]
    Tensor pts = index(x, {rows, cols});                         // [4]
    Tensor put = index_put(x, {tensor({1}), tensor({2})}, pts.sum().reshape({1}));
    Tensor acc = index_put(zeros_like(x), {rows}, picked, true);
    return picked.sum() + (put * put).sum() + (acc * x).sum();
}
}  // namespace

TEST_CASE("index ops under capture::trace, capture::aot and jit::script", "[capture][jit][advanced_index]") {
    manual_seed(61);
    const Tensor x = randn({3, 3}, dtype::float64), w = randn({1, 3}, dtype::float64);
    auto cap = capture::trace(indexing_fn, x, w);
    cap.graph().lint();
    const std::string text = ir::to_string(cap.graph());
    for (const char* kind : {"= index(", "index_put[accumulate=false]", "index_put[accumulate=true]"})
        CHECK(text.find(kind) != std::string::npos);
    auto back = ir::parse(text);
    CHECK(ir::to_string(*back) == text);
    const Tensor x2 = randn({3, 3}, dtype::float64), w2 = randn({1, 3}, dtype::float64);
    CHECK(allclose(cap(x2, w2)[0], indexing_fn(x2, w2), 1e-12, 1e-12));
    CHECK(allclose(std::get<Tensor>(ir::interpret(*back, std::vector<ir::ivalue>{x2, w2})[0]), indexing_fn(x2, w2),
                   1e-12, 1e-12));

    const Tensor xg = randn({3, 3}, dtype::float64).requires_grad_(), wg = randn({1, 3}, dtype::float64).requires_grad_();
    auto a = capture::aot(indexing_fn, {xg, wg});
    a.forward->lint();
    a.backward->lint();
    CHECK(ir::to_string(*a.backward).find("index_backward[") != std::string::npos);
    auto fn = jit::script(indexing_fn);
    for (int i = 0; i < 3; ++i) {
        Tensor x3 = randn({3, 3}, dtype::float64).requires_grad_(), w3 = randn({1, 3}, dtype::float64).requires_grad_();
        Tensor eager = indexing_fn(x3, w3);
        const auto want = autograd::grad({eager}, {x3, w3});
        Tensor out = a({x3, w3})[0];
        CHECK(allclose(out.detach(), eager.detach(), 1e-12, 1e-12));
        const auto got = autograd::grad({out}, {x3, w3});
        CHECK(allclose(got[0], want[0], 1e-12, 1e-12));
        CHECK(allclose(got[1], want[1], 1e-12, 1e-12));
        Tensor y = fn(x3, w3);
        CHECK(allclose(y.detach(), eager.detach(), 1e-12, 1e-12));
        const auto jg = autograd::grad({y}, {x3, w3});
        CHECK(allclose(jg[0], want[0], 1e-12, 1e-12));
        CHECK(allclose(jg[1], want[1], 1e-12, 1e-12));
    }
}
