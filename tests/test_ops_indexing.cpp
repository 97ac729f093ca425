// Full indexing (graft/autograd/indexing.hpp): t.index({...}) and t.index_put_({...}, v) with
// integers, Slice, None, Ellipsis, bools, int64 index tensors anywhere and bool masks, checked
// against PyTorch 1.13's results of the same expressions (tests/fixtures/indexing.txt, written by
// tests/fixtures/gen_indexing.py, which names them as this table does), views vs copies,
// gradients against finite differences, graph capture, and errors.
#include <catch2/catch.hpp>

#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <graft/graft.hpp>

#include "fixture_common.hpp"
#include "grad_test_common.hpp"

using namespace graft;
using namespace graft::indexing;

namespace {

std::map<std::string, Tensor> read_fixture() {
    std::ifstream file(std::string(GRAFT_SOURCE_DIR) + "/tests/fixtures/indexing.txt");
    REQUIRE(file.good());
    std::map<std::string, Tensor> r;
    std::string line;
    while (std::getline(file, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream in(line);
        std::string name;
        in >> name;
        r[name] = fx::read_tensor(in);
    }
    return r;
}

Tensor ints(std::vector<std::int64_t> v) { return from_vector(v); }

struct operands {
    Tensor x = arange(0, 120, 1, dtype::float64).reshape({2, 3, 4, 5});
    Tensor i = ints({0, 2, 1});
    Tensor j = ints({1, 0, 1, 1}).reshape({2, 2});
    Tensor k = ints({3, -1});
    Tensor b = ints({1, 0});
    Tensor mask = [] {  // x[0, :, :, 0] % 3 == 1: x[0, r, c, 0] = 20 r + 5 c
        std::vector<bool> m;
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 4; ++c) m.push_back((20 * r + 5 * c) % 3 == 1);
        return from_vector(m).reshape({3, 4});
    }();
    Tensor m1 = from_vector(std::vector<bool>{true, false, true});
};

using read_fn = std::function<Tensor(const operands&)>;

const std::map<std::string, read_fn>& reads() {
    static const std::map<std::string, read_fn> table{
        {"int", [](const operands& o) { return o.x.index({1}); }},
        {"int_neg", [](const operands& o) { return o.x.index({-1, -2}); }},
        {"slice", [](const operands& o) { return o.x.index({Slice(), Slice(1, 3)}); }},
        {"slice_step", [](const operands& o) { return o.x.index({Ellipsis, Slice(None, None, 2)}); }},
        {"slice_neg_bounds", [](const operands& o) { return o.x.index({Slice(), Slice(-2), Slice(1, -1)}); }},
        {"slice_clamped", [](const operands& o) { return o.x.index({Slice(), Slice(1, 100), Slice(-100, 2)}); }},
        {"slice_empty", [](const operands& o) { return o.x.index({Slice(), Slice(2, 1)}); }},
        {"none_front_back", [](const operands& o) { return o.x.index({None, 0, Ellipsis, None}); }},
        {"none_middle", [](const operands& o) { return o.x.index({Slice(), None, 1}); }},
        {"ellipsis_middle", [](const operands& o) { return o.x.index({0, Ellipsis, 2}); }},
        {"ellipsis_only", [](const operands& o) { return o.x.index({Ellipsis}); }},
        {"true", [](const operands& o) { return o.x.index({true}); }},
        {"false", [](const operands& o) { return o.x.index({false}); }},
        {"tensor_first", [](const operands& o) { return o.x.index({o.b}); }},
        {"tensor_second", [](const operands& o) { return o.x.index({Slice(), o.i}); }},
        {"tensor_2d", [](const operands& o) { return o.x.index({Slice(), Slice(), o.j}); }},
        {"tensor_negative", [](const operands& o) { return o.x.index({Ellipsis, o.k}); }},
        {"tensors_adjacent", [](const operands& o) { return o.x.index({Slice(), o.i, o.i}); }},
        {"tensors_adjacent_broadcast", [](const operands& o) { return o.x.index({Slice(), o.j, o.b}); }},
        {"tensors_separated", [](const operands& o) { return o.x.index({o.b, Slice(), o.k}); }},
        {"tensors_separated_by_ellipsis", [](const operands& o) { return o.x.index({o.b, Ellipsis, o.k}); }},
        {"tensor_and_int", [](const operands& o) { return o.x.index({o.b, 1, o.k}); }},
        {"tensor_int_slice", [](const operands& o) { return o.x.index({0, o.i, Slice(1, 3)}); }},
        {"tensor_with_none", [](const operands& o) { return o.x.index({None, o.b, Slice(), o.k}); }},
        {"mask_2d", [](const operands& o) { return o.x.index({0}).index({o.mask}); }},
        {"mask_2d_middle", [](const operands& o) { return o.x.index({Slice(), o.mask}); }},
        {"mask_1d", [](const operands& o) { return o.x.index({Slice(), o.m1}); }},
        {"mask_and_tensor", [](const operands& o) { return o.x.index({o.b, o.m1}); }},
        {"mask_0d_true", [](const operands& o) { return o.x.index({full({}, true, dtype::bool_)}); }},
        {"mask_and_slice",
         [](const operands& o) { return o.x.index({Ellipsis, Slice(1, 3)}).index({Slice(), o.m1, Slice(), 0}); }},
    };
    return table;
}

/// Each write applied to zeros; `v` is 1000 + arange over the shape the target expression reads.
using put_fn = std::function<void(const operands&, Tensor& y)>;
Tensor counting(const int_list& sizes) {
    std::int64_t n = 1;
    for (auto s : sizes) n *= s;
    return arange(0, n, 1, dtype::float64).reshape(sizes) + 1000.0;
}

const std::map<std::string, put_fn>& puts() {
    static const std::map<std::string, put_fn> table{
        {"put_int", [](const operands&, Tensor& y) { y.index_put_({1}, counting(y.index({1}).sizes())); }},
        {"put_slice_step",
         [](const operands&, Tensor& y) {
             const Slice s(None, None, 2);
             y.index_put_({Ellipsis, s}, counting(y.index({Ellipsis, s}).sizes()));
         }},
        {"put_scalar", [](const operands&, Tensor& y) { y.index_put_({Slice(), 1, Slice(1, 3)}, 7.5); }},
        {"put_broadcast_row",
         [](const operands&, Tensor& y) { y.index_put_({0}, arange(0, 5, 1, dtype::float64) + 1000.0); }},
        {"put_tensor_second",
         [](const operands& o, Tensor& y) { y.index_put_({Slice(), o.i}, counting(y.index({Slice(), o.i}).sizes())); }},
        {"put_tensors_separated",
         [](const operands& o, Tensor& y) {
             y.index_put_({o.b, Slice(), o.k}, counting(y.index({o.b, Slice(), o.k}).sizes()));
         }},
        {"put_tensors_adjacent",
         [](const operands& o, Tensor& y) {
             y.index_put_({Slice(), o.j, o.b}, counting(y.index({Slice(), o.j, o.b}).sizes()));
         }},
        {"put_mask",
         [](const operands& o, Tensor& y) { y.index_put_({Slice(), o.mask}, counting(y.index({Slice(), o.mask}).sizes())); }},
        {"put_mask_scalar", [](const operands& o, Tensor& y) { y.index_put_({0, o.mask}, -1.0); }},
        {"put_none_ellipsis",
         [](const operands&, Tensor& y) {
             y.index_put_({None, 1, Ellipsis, 0}, counting(y.index({None, 1, Ellipsis, 0}).sizes()));
         }},
        {"put_accumulate",
         [](const operands&, Tensor& y) {
             y.index_put_({ints({0, 1, 0}), ints({2, 2, 2})}, ones({3, 4, 5}, dtype::float64), true);
         }},
    };
    return table;
}

}  // namespace

TEST_CASE("indexing: reads give PyTorch's shapes and values", "[ops][indexing]") {
    const auto fixture = read_fixture();
    const operands o;
    REQUIRE(fixture.size() == reads().size() + puts().size());
    for (const auto& [name, f] : reads()) {
        INFO(name);
        REQUIRE(fixture.count(name) == 1);
        const Tensor got = f(o);
        CHECK(got.sizes() == fixture.at(name).sizes());
        CHECK(equal(got, fixture.at(name)));
    }
}

TEST_CASE("indexing: writes give PyTorch's results", "[ops][indexing]") {
    const auto fixture = read_fixture();
    const operands o;
    for (const auto& [name, f] : puts()) {
        INFO(name);
        Tensor y = zeros({2, 3, 4, 5}, dtype::float64);
        f(o, y);
        CHECK(equal(y, fixture.at(name)));
    }
}

TEST_CASE("indexing: basic indices make views, index tensors copies", "[ops][indexing]") {
    Tensor x = arange(0, 24, 1, dtype::float64).reshape({2, 3, 4});
    Tensor v = x.index({Slice(), 1, Slice(None, None, 2)});
    CHECK(v.shares_storage_with(x));
    v.fill_(-1.0);  // writes through to x
    CHECK(x.index({1, 1, 2}).item<double>() == -1.0);
    Tensor c = x.index({Slice(), ints({0, 2})});
    CHECK(!c.shares_storage_with(x));
    // t.index({Slice()}) and t.index({Ellipsis}) are the tensor's own view.
    CHECK(equal(x.index({Ellipsis}), x));
    // An index-tensor-only list matches the vector<Tensor> form.
    CHECK(equal(x.index({ints({1, 0}), ints({2, 2})}), x.index(std::vector<Tensor>{ints({1, 0}), ints({2, 2})})));
    // A programmatic index list.
    std::vector<TensorIndex> idx{Slice(), 2};
    CHECK(equal(x.index(idx), x.index({Slice(), 2})));
}

TEST_CASE("indexing: gradients (reads and writes) against finite differences", "[ops][indexing][gradcheck]") {
    using L = autograd::tensor_list;
    const Tensor i = ints({2, 0, 2}), k = ints({1, -1});
    gt::check_grads([&](const L& in) { return L{in[0].index({Slice(), i, Slice(1, 3)})}; }, {gt::leaf({2, 3, 4}, 31)});
    gt::check_grads([&](const L& in) { return L{in[0].index({k, None, Ellipsis, ints({2, 0})})}; }, {gt::leaf({2, 3, 3}, 32)});
    const Tensor mask = from_vector(std::vector<bool>{true, false, true, true, false, true}).reshape({2, 3});
    gt::check_grads([&](const L& in) { return L{in[0].index({mask, Slice(0, 2)})}; }, {gt::leaf({2, 3, 4}, 33)});
    // A write into a copy: the gradient of the kept elements and of the written values
    // (distinct positions: with a repeated one, PyTorch gives every duplicate the gradient).
    const Tensor distinct = ints({2, 0});
    gt::check_grads(
        [&](const L& in) {
            Tensor y = in[0] * 1.0;
            y.index_put_({Slice(), distinct}, in[1]);
            y.index_put_({0, Slice(), 1}, in[2], true);
            return L{y};
        },
        {gt::leaf({2, 3, 4}, 34), gt::leaf({2, 2, 4}, 35), gt::leaf({3}, 36)});
}

TEST_CASE("indexing: captured by jit::script, a mask is refused under capture", "[ops][indexing][jit]") {
    const Tensor i = ints({2, 0});
    auto f = jit::script([&](const Tensor& x) { return x.index({Slice(), i, None, Slice(1)}) * 2.0; });
    for (int n : {3, 3, 3}) {
        const Tensor x = randn({n, 4, 5});
        CHECK(equal(f(x), x.index({Slice(), i, None, Slice(1)}) * 2.0));
    }
    auto g = jit::script([](const Tensor& x) { return x.index({x.gt(0.0)}); });
    CHECK_THROWS_WITH(g(randn({3})), Catch::Contains("nonzero"));
    // nonzero itself.
    const Tensor m = from_vector(std::vector<double>{0, 1, 0, 2, 3, 0}).reshape({2, 3});
    CHECK(nonzero(m).to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 1, 1, 0, 1, 1});
    CHECK(nonzero(m).sizes() == int_list{3, 2});
    CHECK(nonzero(zeros({2, 2})).sizes() == int_list{0, 2});
    CHECK(nonzero(full({}, 5.0)).sizes() == int_list{1, 0});
}

TEST_CASE("indexing: bad indices are clear errors and leave the tensor as it was", "[ops][indexing][errors]") {
    Tensor x = zeros({2, 3, 4});
    CHECK_THROWS_WITH(x.index({0, 0, 0, 0}), Catch::Contains("too many indices for tensor of dimension 3"));
    CHECK_THROWS_WITH(x.index({Ellipsis, 0, Ellipsis}), Catch::Contains("single ellipsis"));
    CHECK_THROWS_WITH(x.index({2}), Catch::Contains("index 2 is out of bounds for dimension 0 with size 2"));
    CHECK_THROWS_WITH(x.index({Slice(), -4}), Catch::Contains("out of bounds"));
    CHECK_THROWS_WITH(x.index({Slice(0, 2, 0)}), Catch::Contains("step must be greater than zero"));
    CHECK_THROWS_WITH(x.index({Slice(0, 2, -1)}), Catch::Contains("step must be greater than zero"));
    CHECK_THROWS_WITH(x.index({ones({2, 2}, dtype::bool_)}), Catch::Contains("shape of the mask"));
    CHECK_THROWS_WITH(x.index({ones({2}, dtype::float32)}), Catch::Contains("int64 or bool"));
    CHECK_THROWS_WITH(x.index({ints({0, 5})}), Catch::Contains("out of bounds"));
    CHECK_THROWS_WITH(x.index({ints({0, 1}), ints({0, 1, 2})}), Catch::Contains("broadcast"));
    CHECK_THROWS_WITH(x.index({Tensor()}), Catch::Contains("undefined"));
    // Writes: every index checked, shapes checked, nothing written on an error.
    CHECK_THROWS_WITH(x.index_put_({Slice(), ints({0, 3})}, ones({2, 2, 4})), Catch::Contains("out of bounds"));
    CHECK_THROWS(x.index_put_({Slice(), 1}, ones({3})));
    CHECK_THROWS(x.index_put_({Slice(), ints({0, 1})}, ones({3, 3})));
    CHECK(x.abs().sum().item<double>() == 0.0);
    // A leaf that requires grad refuses an in-place write, as PyTorch.
    Tensor w = zeros({3}).requires_grad_();
    CHECK_THROWS_WITH(w.index_put_({0}, 1.0), Catch::Contains("leaf"));
}
