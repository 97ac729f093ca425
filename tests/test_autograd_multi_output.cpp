// unbind, split, split_with_sizes and chunk as one multi-output node (issue 35): the views of
// one call share one UnbindBackward0 / SplitBackward0 / SplitWithSizesBackward0 node (output_nr
// 0..n-1), its backward joins the gradients of all of them (zeros for the unused ones), the
// views refuse in-place writes while autograd records, and node hooks see every output's
// gradient. Expectations were checked against PyTorch 1.13.
#include <catch2/catch.hpp>

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <graft/graft.hpp>

using namespace graft;
using autograd::gradcheck;
using autograd::gradgradcheck;
using autograd::tensor_list;
using Catch::Matchers::Contains;

namespace {

/// 0, 1, 2, ... in float64, shaped `sizes`.
Tensor iota(const int_list& sizes) {
    std::int64_t n = 1;
    for (auto s : sizes) n *= s;
    return arange(0, n).to(dtype::float64).reshape(sizes);
}

Tensor leaf_iota(const int_list& sizes) { return iota(sizes).requires_grad_(); }

std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }

/// Every piece has the same grad_fn, named `name`, with output_nr i and one edge.
void check_shared_node(const std::vector<Tensor>& pieces, const std::string& name) {
    REQUIRE(!pieces.empty());
    const auto node = pieces[0].grad_fn();
    REQUIRE(node != nullptr);
    CHECK(node->name() == name);
    CHECK(node->num_outputs() == pieces.size());
    CHECK(node->next_functions().size() == 1);
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        INFO("piece " << i);
        CHECK(pieces[i].grad_fn() == node);
        CHECK(pieces[i].output_nr() == i);
        CHECK(pieces[i].requires_grad());
        CHECK(!pieces[i].is_leaf());
    }
}

const std::string modified_inplace = " is a view and is being modified inplace.";
const std::string base_modified = " is a view and its base or another view of its base has been modified inplace.";

}  // namespace

TEST_CASE("unbind, split, split_with_sizes, chunk: the views of one call share one node", "[autograd][multi_output]") {
    const Tensor x = leaf_iota({3, 4});
    const Tensor y = x.clone();
    SECTION("node names, identity and output_nr") {
        check_shared_node(y.unbind(0), "UnbindBackward0");
        check_shared_node(y.unbind(-1), "UnbindBackward0");
        check_shared_node(y.split(2), "SplitBackward0");
        check_shared_node(y.split(3, 1), "SplitBackward0");
        check_shared_node(split(y, int_list{1, 2}), "SplitWithSizesBackward0");
        check_shared_node(y.split_with_sizes({1, 0, 3}, -1), "SplitWithSizesBackward0");
        check_shared_node(y.chunk(2), "SplitBackward0");
        check_shared_node(chunk(y, 3, 1), "SplitBackward0");
        // One piece still gets the multi-output node.
        check_shared_node(y.chunk(1), "SplitBackward0");
        check_shared_node(y.split(5), "SplitBackward0");
    }
    SECTION("the node's edge is the input's history, and each call makes its own node") {
        const auto a = y.split(2), b = y.split(2);
        const auto& edge = a[0].grad_fn()->next_functions()[0];
        REQUIRE(edge.valid());
        CHECK(edge.function->name() == "CloneBackward0");
        CHECK(edge.function == y.grad_fn());
        CHECK(edge.input_nr == 0);
        CHECK(a[0].grad_fn() != b[0].grad_fn());
        // Of a leaf: the edge goes to its AccumulateGrad.
        const auto u = x.unbind(1);
        check_shared_node(u, "UnbindBackward0");
        CHECK(u[0].grad_fn()->next_functions()[0].function->name() == "AccumulateGrad");
    }
    SECTION("the outputs are still views of the input") {
        for (const auto& pieces : {y.unbind(0), y.split(2), y.chunk(2, 1), y.split(int_list{3, 1}, 1)})
            for (const Tensor& p : pieces) CHECK((p.is_view() && p.shares_storage_with(y)));
        CHECK(vals(y.unbind(1)[2]) == std::vector<double>{2, 6, 10});
        CHECK(vals(y.split(int_list{3, 1}, 1)[1]) == std::vector<double>{3, 7, 11});
    }
    SECTION("empty dimensions, as PyTorch") {
        const Tensor e = zeros({0, 3}, dtype::float64).requires_grad_();
        CHECK(e.unbind(0).empty());
        check_shared_node(e.split(2), "SplitBackward0");                // one empty piece
        const auto c = e.chunk(3);
        CHECK(c.size() == 3);
        check_shared_node(c, "SplitWithSizesBackward0");  // chunk of a size 0 is split_with_sizes
        const auto g = autograd::grad({c[1].sum()}, {e});
        CHECK(g[0].sizes() == int_list{0, 3});
    }
    SECTION("no node without grad") {
        for (const Tensor& p : iota({3, 4}).split(2)) CHECK(p.grad_fn() == nullptr);
        autograd::no_grad guard;
        // Views made under no_grad have no node, yet require grad as their base does (as PyTorch).
        for (const Tensor& p : y.unbind(0)) CHECK((p.grad_fn() == nullptr && p.requires_grad()));
    }
}

TEST_CASE("multi-output views: the backward joins every output's gradient, zeros for unused ones",
          "[autograd][multi_output]") {
    SECTION("unbind: one output used") {
        const Tensor x = leaf_iota({3, 4});
        const auto r = x.unbind(0);
        (r[1] * 2.0).sum().backward();
        CHECK(vals(x.grad()) == std::vector<double>{0, 0, 0, 0, 2, 2, 2, 2, 0, 0, 0, 0});
    }
    SECTION("unbind along the last dimension, two outputs used") {
        const Tensor x = leaf_iota({2, 3});  // [[0, 1, 2], [3, 4, 5]]
        const auto c = x.unbind(-1);
        (c[0] * c[2]).sum().backward();  // d/dc0 = c2, d/dc2 = c0
        CHECK(vals(x.grad()) == std::vector<double>{2, 0, 0, 5, 0, 3});
    }
    SECTION("split with an int: only the middle piece used") {
        const Tensor x = leaf_iota({5, 2});
        const auto p = x.split(2);
        REQUIRE(p.size() == 3);
        (p[1] * 3.0).sum().backward();
        CHECK(vals(x.grad()) == std::vector<double>{0, 0, 0, 0, 3, 3, 3, 3, 0, 0});
    }
    SECTION("split with sizes along dim 1: a square and a scaled piece, an empty piece in between") {
        const Tensor x = leaf_iota({2, 4});  // [[0, 1, 2, 3], [4, 5, 6, 7]]
        const auto p = split(x, int_list{1, 0, 3}, 1);
        ((p[0] * 3.0).sum() + (p[2] * p[2]).sum()).backward();
        CHECK(vals(x.grad()) == std::vector<double>{3, 2, 4, 6, 3, 10, 12, 14});
    }
    SECTION("chunk: the last, shorter chunk only") {
        const Tensor x = leaf_iota({5});
        const auto c = x.chunk(2);  // sizes 3 and 2
        (c[1] * c[1]).sum().backward();
        CHECK(vals(x.grad()) == std::vector<double>{0, 0, 0, 6, 8});
    }
    SECTION("autograd::grad with given output gradients for some outputs") {
        const Tensor x = leaf_iota({3, 2});
        const auto r = x.unbind(0);
        const auto g = autograd::grad({r[0], r[2]}, {x}, {tensor({1.0, 2.0}).to(dtype::float64),
                                                           tensor({5.0, 6.0}).to(dtype::float64)});
        CHECK(vals(g[0]) == std::vector<double>{1, 2, 0, 0, 5, 6});
    }
    SECTION("outputs used through further views, a float32 input") {
        const Tensor x = tensor({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, {2, 3}).requires_grad_();
        const auto p = x.split(2, 1);  // [2, 2] and [2, 1]
        (p[0].t().select(0, 1) * 10.0f).sum().backward();  // column 1 of x
        CHECK(x.grad().type() == dtype::float32);
        CHECK(x.grad().to_vector<float>() == std::vector<float>{0, 10, 0, 0, 10, 0});
    }
}

TEST_CASE("multi-output views: in-place writes are refused while autograd records", "[autograd][multi_output][errors]") {
    const Tensor x = leaf_iota({3, 4});
    SECTION("split: the error names the output and node, the tensors stay as they were and usable") {
        const Tensor y = x.clone();
        auto p = y.split(2);
        const auto version = y._version();
        CHECK_THROWS_WITH(p[0].add_(1.0), Contains("Output 0 of SplitBackward0" + modified_inplace) &&
                                                  Contains("multiple views") && Contains("out-of-place"));
        CHECK(y._version() == version);
        CHECK(vals(y) == vals(iota({3, 4})));
        CHECK(p[0].grad_fn()->name() == "SplitBackward0");
        (p[0] * 2.0).sum().backward();
        CHECK(vals(x.grad()) == std::vector<double>{2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0});
    }
    SECTION("unbind, split_with_sizes, chunk, and a view of an output") {
        const Tensor y = x.clone();
        auto u = y.unbind(0);
        CHECK_THROWS_WITH(u[1].mul_(2.0), Contains("Output 1 of UnbindBackward0" + modified_inplace));
        auto s = y.split_with_sizes({1, 2});
        CHECK_THROWS_WITH(s[1].zero_(), Contains("Output 1 of SplitWithSizesBackward0" + modified_inplace));
        auto c = y.chunk(2, 1);
        CHECK_THROWS_WITH(c[1].fill_(0.0), Contains("Output 1 of SplitBackward0" + modified_inplace));
        // A view of an output inherits the rule (PyTorch names the view's own node).
        Tensor row = c[0].select(0, 1);
        CHECK_THROWS_WITH(row.add_(1.0), Contains("Output 0 of SelectBackward0" + modified_inplace) &&
                                             Contains("multiple views"));
        CHECK(vals(y) == vals(iota({3, 4})));
    }
    SECTION("outputs of a leaf: the multi-output rule is reported first") {
        auto p = x.split(2);
        CHECK_THROWS_WITH(p[1].add_(1.0), Contains("Output 1 of SplitBackward0" + modified_inplace));
    }
    SECTION("the base modified in place: using an output afterwards is refused") {
        Tensor y = x.clone();
        const auto p = y.split(2);
        y.add_(1.0);  // y is no multi-output view: allowed
        CHECK_THROWS_WITH(p[0] * 2.0, Contains("Output 0 of SplitBackward0" + base_modified));
        CHECK(vals(y)[0] == 1.0);
    }
    SECTION("an input that does not require grad, written with one that does") {
        const Tensor z = zeros({4}, dtype::float64);
        auto p = z.split(2);
        CHECK_THROWS_WITH(p[0].add_(tensor({1.0, 1.0}).to(dtype::float64).requires_grad_()),
                          Contains("multiple views"));
        CHECK(vals(z) == std::vector<double>{0, 0, 0, 0});
    }
}

TEST_CASE("multi-output views: in-place writes are allowed when autograd does not record", "[autograd][multi_output]") {
    SECTION("nothing requires grad") {
        const Tensor z = zeros({4}, dtype::float64);
        auto p = z.split(2);
        p[1].add_(1.0);
        z.unbind(0)[0].fill_(7.0);
        CHECK(vals(z) == std::vector<double>{7, 0, 1, 1});
    }
    SECTION("made and written under no_grad") {
        const Tensor x = leaf_iota({2, 2});
        const Tensor y = x.clone();
        {
            autograd::no_grad guard;
            auto p = y.unbind(0);
            p[1].mul_(10.0);
        }
        CHECK(vals(y) == std::vector<double>{0, 1, 20, 30});
    }
    SECTION("written under no_grad after being made with grad: allowed, but the view is stale afterwards") {
        const Tensor x = leaf_iota({2, 2});
        const Tensor y = x.clone();
        auto p = y.chunk(2);
        {
            autograd::no_grad guard;
            p[0].add_(1.0);
        }
        CHECK(vals(y) == std::vector<double>{1, 2, 2, 3});
        CHECK_THROWS_WITH(p[0].sum(), Contains("Output 0 of SplitBackward0" + base_modified));
        // Its sibling was not written but shares the base: PyTorch refuses it as well.
        CHECK_THROWS_WITH(p[1].sum(), Contains("Output 1 of SplitBackward0" + base_modified));
    }
    SECTION("made under no_grad, written with grad: the no_grad rule") {
        const Tensor x = leaf_iota({2, 2});
        const Tensor y = x.clone();
        std::vector<Tensor> p;
        {
            autograd::no_grad guard;
            p = y.split(1);
        }
        CHECK_THROWS_WITH(p[0].add_(1.0), Contains("created in no_grad mode"));
    }
}

TEST_CASE("multi-output views: node hooks see every output's gradient, tensor hooks one", "[autograd][multi_output][hooks]") {
    const Tensor x = leaf_iota({3, 4});
    const Tensor y = x.clone();
    auto p = y.split(2);  // [2, 4] and [1, 4]
    const auto node = p[0].grad_fn();
    SECTION("pre-hook and post-hook: undefined for the unused output") {
        std::vector<bool> pre_defined, post_defined;
        std::vector<int_list> post_inputs;
        int pre_calls = 0, post_calls = 0;
        auto h1 = node->register_prehook([&](const tensor_list& go) -> std::optional<tensor_list> {
            ++pre_calls;
            for (const Tensor& g : go) pre_defined.push_back(g.defined());
            return std::nullopt;
        });
        auto h2 = node->register_hook([&](const tensor_list& gi, const tensor_list& go) -> std::optional<tensor_list> {
            ++post_calls;
            for (const Tensor& g : go) post_defined.push_back(g.defined());
            for (const Tensor& g : gi) post_inputs.push_back(g.sizes());
            return std::nullopt;
        });
        p[1].sum().backward();
        CHECK(pre_calls == 1);
        CHECK(post_calls == 1);
        CHECK(pre_defined == std::vector<bool>{false, true});
        CHECK(post_defined == std::vector<bool>{false, true});
        CHECK(post_inputs == std::vector<int_list>{{3, 4}});
        CHECK(vals(x.grad()) == std::vector<double>{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1});
    }
    SECTION("a pre-hook replaces the gradient it got") {
        auto h = node->register_prehook([](const tensor_list& go) -> std::optional<tensor_list> {
            return tensor_list{go[0].defined() ? go[0] * 2.0 : Tensor{}, go[1] * 3.0};
        });
        (p[0].sum() + p[1].sum()).backward();
        CHECK(vals(x.grad()) == std::vector<double>{2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3});
    }
    SECTION("a tensor hook on one output changes that output's gradient only") {
        int calls = 0;
        auto h = p[1].register_hook([&](const Tensor& g) {
            ++calls;
            return g * 10.0;
        });
        (p[0].sum() + p[1].sum()).backward();
        CHECK(calls == 1);
        CHECK(vals(x.grad()) == std::vector<double>{1, 1, 1, 1, 1, 1, 1, 1, 10, 10, 10, 10});
    }
    SECTION("retain_grad on both outputs, one used") {
        p[0].retain_grad();
        p[1].retain_grad();
        (p[1] * 4.0).sum().backward();
        CHECK(!p[0].grad().defined());
        CHECK(vals(p[1].grad()) == std::vector<double>{4, 4, 4, 4});
    }
}

TEST_CASE("multi-output views: gradcheck and gradgradcheck of functions using several outputs",
          "[autograd][multi_output][gradcheck]") {
    manual_seed(35);
    const Tensor x = randn({4, 3}, dtype::float64).requires_grad_();
    const Tensor w = randn({4, 3}, dtype::float64).requires_grad_();
    const auto f = [](const tensor_list& in) {
        const auto s = (in[0] * in[1]).split(2);           // SplitBackward0
        const auto u = in[0].unbind(1);                      // UnbindBackward0, u[1] unused
        const auto c = in[1].chunk(3, 1);                    // SplitBackward0, c[2] unused
        const auto q = in[0].split_with_sizes({1, 2}, -1);   // SplitWithSizesBackward0
        return tensor_list{(s[0] * s[1]).sum({0}), u[0] * u[2] * u[0], (c[0] * c[1]).squeeze(1),
                           q[1].sum({1}) * q[0].squeeze(1)};
    };
    CHECK(gradcheck(f, {x, w}));
    CHECK(gradgradcheck(f, {x, w}));
    // Every piece an output of its own.
    CHECK(gradcheck([](const tensor_list& in) { return in[0].unbind(0); }, {x}));
    CHECK(gradgradcheck([](const tensor_list& in) { return in[0].chunk(2, 1); }, {x}));
}

namespace {

/// Uses several outputs of each of split, chunk, unbind and split_with_sizes.
Tensor pieces_mixer(Tensor x, Tensor w) {
    const auto s = (x * w).split(2);
    const auto c = x.chunk(3, 1);
    const auto u = w.unbind(0);
    const auto q = split(x, int_list{1, 3});
    return (s[0] * s[1]).sum() + (c[0] * c[2]).sum() + (u[1] * u[3]).sum() + (q[1].sum({0}) * q[0].squeeze(0)).sum();
}

}  // namespace

TEST_CASE("multi-output views under capture::aot and jit::script: eager's values and gradients",
          "[capture][jit][autograd][multi_output]") {
    manual_seed(36);
    SECTION("capture::aot") {
        const Tensor x = randn({4, 3}, dtype::float64).requires_grad_(), w = randn({4, 3}, dtype::float64).requires_grad_();
        auto a = capture::aot(pieces_mixer, {x, w});
        a.forward->lint();
        a.backward->lint();
        CHECK(a.grad_inputs == std::vector<std::size_t>{0, 1});
        for (int i = 0; i < 2; ++i) {
            const Tensor x2 = randn({4, 3}, dtype::float64).requires_grad_();
            const Tensor w2 = randn({4, 3}, dtype::float64).requires_grad_();
            const Tensor out = a({x2, w2})[0];
            const Tensor eager = pieces_mixer(x2, w2);
            CHECK(allclose(out.detach(), eager.detach(), 1e-12, 1e-12));
            const auto got = autograd::grad({out}, {x2, w2});
            const auto want = autograd::grad({eager}, {x2, w2});
            CHECK(allclose(got[0], want[0], 1e-12, 1e-12));
            CHECK(allclose(got[1], want[1], 1e-12, 1e-12));
        }
        CHECK(gradcheck([&](const tensor_list& in) { return tensor_list{a({in[0], in[1]})[0]}; }, {x, w}));
    }
    SECTION("jit::script") {
        auto fn = jit::script(pieces_mixer);
        for (int i = 0; i < 5; ++i) {
            const bool grad = i >= 2;
            Tensor x = randn({4, 3}, dtype::float64), w = randn({4, 3}, dtype::float64);
            if (grad) {
                x.requires_grad_();
                w.requires_grad_();
            }
            const Tensor out = fn(x, w);
            const Tensor eager = pieces_mixer(x, w);
            CHECK(allclose(out.detach(), eager.detach(), 1e-12, 1e-12));
            if (!grad) continue;
            REQUIRE(out.requires_grad());
            const auto got = autograd::grad({out}, {x, w});
            const auto want = autograd::grad({eager}, {x, w});
            CHECK(allclose(got[0], want[0], 1e-12, 1e-12));
            CHECK(allclose(got[1], want[1], 1e-12, 1e-12));
        }
        bool differentiable = false;
        for (const auto& level : fn.debug_state().levels)
            differentiable = differentiable || (level.plan && level.plan->kind == jit::plan_kind::differentiable &&
                                                level.plan->hits >= 1);
        CHECK(differentiable);
    }
    SECTION("capture::trace records the views they are made of") {
        const Tensor x = randn({4, 3}, dtype::float64), w = randn({4, 3}, dtype::float64);
        auto cap = capture::trace(pieces_mixer, x, w);
        cap.graph().lint();
        const std::string text = ir::to_string(cap.graph());
        CHECK(text.find("narrow[") != std::string::npos);
        CHECK(text.find("select[") != std::string::npos);
        CHECK(text.find("Backward") == std::string::npos);
        const Tensor x2 = randn({4, 3}, dtype::float64), w2 = randn({4, 3}, dtype::float64);
        CHECK(allclose(cap(x2, w2)[0], pieces_mixer(x2, w2), 1e-12, 1e-12));
    }
}
