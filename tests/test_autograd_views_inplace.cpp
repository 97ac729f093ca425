// In-place operations on views with autograd (PyTorch's CopySlices / view rebase),
// checked against finite differences (gradcheck, float64), hand-computed
// gradients and PyTorch's documented behaviour and error texts.
#include <catch2/catch.hpp>

#include <any>
#include <functional>
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

Tensor leaf(std::initializer_list<double> v, int_list sizes = {-1}) {
    return tensor(v, std::move(sizes)).requires_grad_();
}
Tensor leaf64(const int_list& sizes, std::uint64_t seed, double lo = -1.5, double hi = 1.5) {
    generator g(seed);
    Tensor t = rand(sizes, dtype::float64, g) * (hi - lo) + lo;
    return t.detach().requires_grad_();
}
std::vector<float> vals(const Tensor& t) { return t.to_vector<float>(); }

struct counting_hooks {
    int packs = 0;
    autograd::pack_hook pack() {
        return [this](const Tensor& t) -> std::any {
            ++packs;
            return t;
        };
    }
    static autograd::unpack_hook unpack() {
        return [](const std::any& a) { return std::any_cast<Tensor>(a); };
    }
};

}  // namespace

TEST_CASE("in-place on a view rebases the base onto CopySlices, the view gets AsStridedBackward0",
          "[autograd][views][inplace]") {
    Tensor a = leaf({1, 2, 3, 4});
    Tensor b = a * 1.0;
    Tensor v = b[1];
    REQUIRE(v.is_view());
    REQUIRE(v.grad_fn()->name() == "SelectBackward0");
    v.mul_(3.0);
    // PyTorch 2.x (CPU): the base's grad_fn is CopySlices, the view's is regenerated as
    // AsStridedBackward0 pointing at it.
    REQUIRE(b.grad_fn()->name() == "CopySlices");
    REQUIRE(v.grad_fn()->name() == "AsStridedBackward0");
    REQUIRE(v.grad_fn()->next_functions()[0].function == b.grad_fn());
    REQUIRE(b.grad_fn()->next_functions()[0].function->name() == "MulBackward0");  // b = a * 1
    REQUIRE(vals(b) == std::vector<float>{1, 6, 3, 4});
    REQUIRE(vals(a) == std::vector<float>{1, 2, 3, 4});
    REQUIRE(b._version() == 1);
    REQUIRE(v._version() == 1);  // one counter for the base and its views
    (b * b).sum().backward();
    // d/da of sum(b^2) with b = a, b[1] = 3 a[1]: 2b, times 3 at index 1.
    REQUIRE(vals(a.grad()) == std::vector<float>{2, 36, 6, 8});
}

TEST_CASE("gradcheck: in-place ops on narrow, transposed, select and two-level views",
          "[autograd][views][inplace][gradcheck]") {
    using fn = std::function<tensor_list(const tensor_list&)>;
    const Tensor a4 = leaf64({4}, 1), w2 = leaf64({2}, 2);
    const Tensor a32 = leaf64({3, 2}, 3), w3 = leaf64({3}, 4), w1x3 = leaf64({1, 3}, 5);
    const Tensor a33 = leaf64({3, 3}, 6);
    const std::vector<std::pair<std::string, std::pair<fn, tensor_list>>> cases{
        {"narrow mul_", {[](const tensor_list& in) {
                             Tensor b = in[0] * 1.0;
                             b.narrow(0, 1, 2).mul_(in[1]);
                             return tensor_list{b};
                         },
                         {a4, w2}}},
        {"transposed narrow mul_", {[](const tensor_list& in) {
                                        Tensor b = in[0] * 1.0;  // 3x2
                                        b.t().narrow(0, 0, 1).mul_(in[1]);  // column 0, shape 1x3
                                        return tensor_list{b, b.sum()};
                                    },
                                    {a32, w1x3}}},
        {"select add_", {[](const tensor_list& in) {
                             Tensor b = in[0] * 2.0;
                             b.select(1, 1).add_(in[1]);
                             return tensor_list{b * b};
                         },
                         {a32, w3}}},
        {"two-level view div_", {[](const tensor_list& in) {
                                     Tensor b = in[0] * 1.0;  // 3x3
                                     b.narrow(0, 1, 2).select(1, 2).div_(in[1] + 3.0);
                                     return tensor_list{b};
                                 },
                                 {a33, w2}}},
        {"permute + unsqueeze + squeeze sub_", {[](const tensor_list& in) {
                                                   Tensor b = in[0] * 3.0;  // 3x2
                                                   b.permute({1, 0}).unsqueeze(0).squeeze(0)[1].sub_(in[1] * in[1]);
                                                   return tensor_list{b};
                                               },
                                               {a32, w3}}},
        {"view/reshape view mul_", {[](const tensor_list& in) {
                                       Tensor b = in[0] * 1.0;  // 3x3
                                       b.view({9}).narrow(0, 2, 3).mul_(in[1]);
                                       b.reshape({3, 3}).select(0, 2).mul_(in[1]);
                                       return tensor_list{b};
                                   },
                                   {a33, w3}}},
        {"slice with step", {[](const tensor_list& in) {
                                 Tensor b = in[0] * 1.0;  // 3x3
                                 b.slice(1, 0, 3, 2).mul_(in[1]);  // columns 0 and 2, shape 3x2
                                 return tensor_list{b};
                             },
                             {a33, leaf64({3, 2}, 7)}}},
    };
    for (const auto& [name, c] : cases) {
        INFO(name);
        REQUIRE(gradcheck(c.first, c.second));
    }
}

TEST_CASE("gradcheck: every in-place op of graft on a view, also in succession on the same view",
          "[autograd][views][inplace][gradcheck]") {
    using op = std::function<void(Tensor&, const Tensor&)>;
    const std::vector<std::pair<std::string, op>> ops{
        {"add_", [](Tensor& v, const Tensor& w) { v.add_(w); }},
        {"add_ scalar", [](Tensor& v, const Tensor&) { v.add_(2.5); }},
        {"sub_", [](Tensor& v, const Tensor& w) { v.sub_(w); }},
        {"mul_", [](Tensor& v, const Tensor& w) { v.mul_(w); }},
        {"mul_ scalar", [](Tensor& v, const Tensor&) { v.mul_(-3.0); }},
        {"div_", [](Tensor& v, const Tensor& w) { v.div_(w * w + 1.0); }},
        {"div_ scalar", [](Tensor& v, const Tensor&) { v.div_(4.0); }},
        {"neg_", [](Tensor& v, const Tensor&) { v.neg_(); }},
        {"exp_", [](Tensor& v, const Tensor&) { v.exp_(); }},
        {"tanh_", [](Tensor& v, const Tensor&) { v.tanh_(); }},
        {"sigmoid_", [](Tensor& v, const Tensor&) { v.sigmoid_(); }},
        {"relu_", [](Tensor& v, const Tensor&) { v.relu_(); }},
        {"sin_", [](Tensor& v, const Tensor&) { v.sin_(); }},
        {"copy_", [](Tensor& v, const Tensor& w) { v.copy_(w * 2.0); }},
        {"fill_", [](Tensor& v, const Tensor&) { v.fill_(0.5); }},
        {"zero_", [](Tensor& v, const Tensor&) { v.zero_(); }},
    };
    // relu_ has a kink at 0: keep the values away from it.
    const Tensor a = leaf64({3, 4}, 11, 0.2, 1.5), w = leaf64({4}, 12, 0.2, 1.5);
    for (const auto& [name, f] : ops) {
        INFO(name);
        auto fn = [&f](const tensor_list& in) {
            Tensor b = in[0] * 1.0;
            Tensor v = b.select(0, 1);
            f(v, in[1]);
            return tensor_list{b * b, v};
        };
        REQUIRE(gradcheck(fn, {a, w}));
        // Several in-place ops in a row on one strided view, with one on the base in between.
        // (The op under test comes last: exp_, tanh_, ... save their result, and changing it
        // afterwards would fail the version check, as in PyTorch.)
        auto chain = [&f](const tensor_list& in) {
            Tensor b = in[0] * 1.0;
            Tensor v = b.t().select(0, 2);  // column 2, strided
            v.mul_(in[1].narrow(0, 1, 3));
            b.add_(1.0);
            v.add_(in[1].narrow(0, 0, 3));
            f(v, in[1].narrow(0, 0, 3));
            return tensor_list{b, v * 2.0};
        };
        REQUIRE(gradcheck(chain, {a, w}));
    }
}

TEST_CASE("second derivatives through CopySlices (create_graph)", "[autograd][views][inplace][gradcheck]") {
    auto fn = [](const tensor_list& in) {
        Tensor b = in[0] * 1.0;
        b.narrow(0, 1, 2).mul_(in[1]);
        b.select(0, 0).exp_();
        return tensor_list{b * b};
    };
    REQUIRE(gradgradcheck(fn, {leaf64({4}, 21), leaf64({2}, 22)}));
}

TEST_CASE("a view used after its base was modified in place gets its grad_fn regenerated",
          "[autograd][views][inplace]") {
    Tensor a = leaf({1, 2, 3});
    Tensor b = a * 1.0;
    Tensor v = b.narrow(0, 0, 2);
    REQUIRE(v.grad_fn()->name() == "SliceBackward0");
    b.mul_(2.0);  // v now shows 2a[0:2]; its recorded history (SliceBackward0 -> a*1) is stale
    REQUIRE(v.grad_fn()->name() == "AsStridedBackward0");
    REQUIRE(v.grad_fn()->next_functions()[0].function == b.grad_fn());
    (v * v).sum().backward();
    // v = 2 a[0:2], sum(v^2) = 4 (a0^2 + a1^2): gradient 8a on the first two, 0 on the third.
    REQUIRE(vals(a.grad()) == std::vector<float>{8, 16, 0});

    // A sibling view: in-place through one view, read through another.
    Tensor c = leaf({1, 2, 3, 4});
    Tensor base = c * 1.0;
    Tensor left = base.narrow(0, 0, 3), right = base.narrow(0, 1, 3);
    left.mul_(10.0);
    REQUIRE(vals(right) == std::vector<float>{20, 30, 4});
    right.sum().backward();
    REQUIRE(vals(c.grad()) == std::vector<float>{0, 10, 10, 1});
}

TEST_CASE("a base that did not require grad starts requiring it through an in-place op on its view",
          "[autograd][views][inplace]") {
    Tensor w = leaf({5, 7});
    Tensor x = zeros({4});
    Tensor sibling = x.narrow(0, 2, 2);  // taken before x required grad
    REQUIRE_FALSE(sibling.requires_grad());
    x.narrow(0, 1, 2).copy_(w);
    REQUIRE(x.requires_grad());
    REQUIRE_FALSE(x.is_leaf());
    REQUIRE(x.grad_fn()->name() == "CopySlices");
    REQUIRE(vals(x) == std::vector<float>{0, 5, 7, 0});
    REQUIRE(sibling.requires_grad());  // its base requires grad now (as PyTorch)
    REQUIRE(sibling.grad_fn()->name() == "AsStridedBackward0");
    const Tensor coeff = tensor({1.0, 2.0, 3.0, 4.0});
    auto g = autograd::grad({(x * coeff).sum()}, {w}, {}, true);
    REQUIRE(vals(g[0]) == std::vector<float>{2, 3});
    g = autograd::grad({(sibling * sibling).sum()}, {w});
    REQUIRE(vals(g[0]) == std::vector<float>{0, 14});  // sibling = [w1, 0]

    // The same when the base itself is modified in place.
    Tensor y = zeros({3});
    Tensor vy = y.narrow(0, 0, 2);
    Tensor u = leaf({1, 2, 3});
    y.add_(u);
    REQUIRE(vy.requires_grad());
    g = autograd::grad({(vy * vy).sum()}, {u});
    REQUIRE(vals(g[0]) == std::vector<float>{2, 4, 0});
}

TEST_CASE("in-place on a view of a leaf that requires grad throws PyTorch's error, no_grad still works",
          "[autograd][views][inplace][errors]") {
    Tensor a = leaf({1, 2, 3});
    REQUIRE_THROWS_WITH(a[0].mul_(2.0),
                        Contains("a view of a leaf Variable that requires grad is being used in an in-place operation."));
    REQUIRE_THROWS_WITH(a.narrow(0, 0, 2).t().add_(tensor({1.0, 1.0})),
                        Contains("a view of a leaf Variable that requires grad is being used in an in-place operation."));
    REQUIRE(vals(a) == std::vector<float>{1, 2, 3});  // unchanged after the errors
    REQUIRE(a.is_leaf());
    {
        autograd::no_grad guard;  // e.g. an optimizer step
        a.narrow(0, 1, 2).mul_(10.0);
    }
    REQUIRE(vals(a) == std::vector<float>{1, 20, 30});
    REQUIRE(a.is_leaf());
    REQUIRE(a.grad_fn() == nullptr);
}

TEST_CASE("no-grad in-place on a view of a tensor in the graph is not recorded",
          "[autograd][views][inplace]") {
    Tensor a = leaf({1, 2, 3});
    Tensor b = a * 2.0;
    {
        autograd::no_grad guard;
        b.narrow(0, 0, 2).mul_(10.0);
    }
    REQUIRE(vals(b) == std::vector<float>{20, 40, 6});
    REQUIRE(b.grad_fn()->name() == "MulBackward0");  // not CopySlices: the write was not recorded
    b.sum().backward();
    REQUIRE(vals(a.grad()) == std::vector<float>{2, 2, 2});
}

TEST_CASE("views made in no_grad mode can't be modified in place with grad mode on (PyTorch's error)",
          "[autograd][views][inplace][errors]") {
    Tensor a = leaf({1, 2, 3});
    Tensor b = a * 1.0;
    Tensor v, v2;
    {
        autograd::no_grad guard;
        v = b.narrow(0, 0, 2);
        v2 = b[2];
    }
    // As PyTorch, a view made in no_grad mode reports its base's requires_grad but has no grad_fn.
    REQUIRE(v.requires_grad());
    REQUIRE(v.grad_fn() == nullptr);
    REQUIRE_THROWS_WITH(v.mul_(2.0),
                        Contains("A view was created in no_grad mode and is being modified inplace with grad mode "
                                 "enabled"));
    REQUIRE(vals(b) == std::vector<float>{1, 2, 3});
    // A view of such a view inherits the restriction.
    REQUIRE_THROWS_WITH(v.narrow(0, 1, 1).add_(1.0), Contains("created in no_grad mode"));
    // Indirect: the base is modified in place with grad mode on; the view can't be rebased.
    b.mul_(2.0);
    REQUIRE_THROWS_WITH(v2.grad_fn(), Contains("A view was created in no_grad mode and its base or another view of "
                                               "its base has been modified inplace with grad mode enabled"));
    // Views and in-place ops both inside no_grad are fine.
    {
        autograd::no_grad guard;
        Tensor w = b.narrow(0, 1, 2);
        w.add_(1.0);
    }
    REQUIRE(vals(b) == std::vector<float>{2, 5, 7});
}

TEST_CASE("saved tensors: the view and its base share one version counter", "[autograd][views][inplace][saved]") {
    Tensor a = leaf({1, 2, 3});
    Tensor b = a * 1.0;
    Tensor c = b * b;  // saves b
    b[0].mul_(2.0);
    REQUIRE(b._version() == 1);
    REQUIRE_THROWS_WITH(c.sum().backward(),
                        Contains("modified by an inplace operation") && Contains("is at version 1; expected version 0"));
    // The output an in-place op saved on a view is checked too.
    Tensor d = a * 1.0;
    Tensor v = d.narrow(0, 0, 2);
    v.exp_();  // saves its result
    d[1].add_(1.0);  // changes it
    REQUIRE_THROWS_WITH(d.sum().backward(), Contains("modified by an inplace operation"));
    // Saving a view and modifying the base in place is caught as well.
    Tensor e = a * 1.0;
    Tensor f = sin(e.narrow(0, 1, 2));  // saves the view
    e.add_(1.0);
    REQUIRE_THROWS_WITH(f.sum().backward(), Contains("modified by an inplace operation"));
}

TEST_CASE("retain_grad and tensor hooks across an in-place op on a view (B9)", "[autograd][views][inplace][hooks]") {
    Tensor a = leaf({1, 2});
    Tensor b = a * 1.0;
    b.retain_grad();
    b[0].mul_(3.0);
    (b * 1.0).sum().backward();
    // .grad is the gradient of the current b, filled once (by CopySlices, not by the old node too).
    REQUIRE(vals(b.grad()) == std::vector<float>{1, 1});
    REQUIRE(vals(a.grad()) == std::vector<float>{3, 1});

    Tensor x = leaf({1.0});
    Tensor base = x.clone();
    Tensor view = base.narrow(0, 0, 1), view2 = base.narrow(0, 0, 1);
    int old_calls = 0, new_calls = 0;
    std::vector<float> seen;
    view.register_hook([&](const Tensor& g) { ++old_calls; return g; });
    view2.register_hook([&](const Tensor& g) { ++old_calls; return g; });
    view.mul_(2.0);
    (void)view2.grad_fn();
    view2.register_hook([&](const Tensor& g) {
        ++new_calls;
        seen = vals(g);
        return g;
    });
    (view + view2).sum().backward();
    REQUIRE(old_calls == 0);  // hooks stay with the old grad_fns, no longer on the path
    REQUIRE(new_calls == 1);
    REQUIRE(seen == std::vector<float>{1});
    REQUIRE(vals(x.grad()) == std::vector<float>{4});  // view = view2 = 2x
}

TEST_CASE("CopySlices: second backward without retain_graph, autograd::grad w.r.t. the other operand",
          "[autograd][views][inplace]") {
    Tensor a = leaf({1, 2, 3}), w = leaf({4, 5});
    Tensor b = a * 1.0;
    b.narrow(0, 1, 2).add_(w);
    Tensor loss = (b * b).sum();
    auto g = autograd::grad({loss}, {w}, {}, true);
    REQUIRE(vals(g[0]) == std::vector<float>{12, 16});  // 2 (a + w) on indices 1, 2
    loss.backward();
    REQUIRE(vals(a.grad()) == std::vector<float>{2, 12, 16});
    REQUIRE_THROWS_WITH(loss.backward(), Contains("Trying to backward through the graph a second time"));
}

TEST_CASE("expanded views: a stale one regenerates a summing grad_fn, writing to one with grad throws",
          "[autograd][views][inplace]") {
    Tensor a = leaf({1, 2, 3});
    Tensor b = a * 1.0;
    Tensor e = b.unsqueeze(0).expand({2, 3});
    b.mul_(2.0);
    REQUIRE(e.grad_fn()->name() == "AsStridedBackward0");
    (e * e).sum().backward();
    // e = 2a in both rows: sum(e^2) = 8 a^2, gradient 16 a.
    REQUIRE(vals(a.grad()) == std::vector<float>{16, 32, 48});
    Tensor c = a * 1.0;
    REQUIRE_THROWS_WITH(c.unsqueeze(0).expand({2, 3}).add_(1.0),
                        Contains("more than one element of the written-to view refers to a single memory location"));
    REQUIRE(vals(c) == std::vector<float>{1, 2, 3});
}

TEST_CASE("as_strided is differentiable (dense input, view within it), also with overlap",
          "[autograd][views][gradcheck]") {
    Tensor x = leaf({0, 1, 2, 3, 4, 5});
    Tensor y = x.as_strided({2, 2}, {1, 2}, 1);  // [[x1, x3], [x2, x4]]
    REQUIRE(vals(y) == std::vector<float>{1, 3, 2, 4});
    REQUIRE(y.grad_fn()->name() == "AsStridedBackward0");
    (y * tensor({1.0, 2.0, 3.0, 4.0}, {2, 2})).sum().backward();
    REQUIRE(vals(x.grad()) == std::vector<float>{0, 1, 3, 2, 4, 0});
    x.set_grad(Tensor{});
    x.as_strided({2, 2}, {1, 1}, 0).sum().backward();  // [[x0, x1], [x1, x2]]
    REQUIRE(vals(x.grad()) == std::vector<float>{1, 2, 1, 0, 0, 0});
    auto fn = [](const tensor_list& in) {
        Tensor b = in[0] * 1.0;
        b.as_strided({2, 2}, {3, 1}, 1).mul_(in[1]);
        return tensor_list{b, in[0].as_strided({3, 2}, {1, 1}, 0) * 2.0};
    };
    REQUIRE(gradcheck(fn, {leaf64({6}, 31), leaf64({2, 2}, 32)}));
    REQUIRE(gradgradcheck([](const tensor_list& in) { return tensor_list{in[0].as_strided({2, 2}, {1, 1}, 1).exp()}; },
                          {leaf64({4}, 33)}));
    // A view reaching outside a non-dense input is refused when grad is needed.
    Tensor z = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
    REQUIRE_THROWS_WITH(z.narrow(1, 0, 2).as_strided({3}, {1}, 1), Contains("as_strided: differentiable only"));
}

TEST_CASE("in-place on a view whose base is not dense is refused with grad", "[autograd][views][inplace][errors]") {
    Tensor a = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor holes = (a * 1.0).narrow(1, 0, 2).detach();  // not a tracked view: a base with gaps
    Tensor w = leaf({1, 1});
    REQUIRE_THROWS_WITH(holes.select(0, 0).mul_(w), Contains("base is not dense"));
    REQUIRE(vals(holes) == std::vector<float>{1, 2, 4, 5});
}

TEST_CASE("sin_ is differentiable (saves the overwritten input)", "[autograd][inplace][gradcheck]") {
    Tensor a = leaf({0.5, 1.0});
    Tensor b = a * 1.0;
    b.sin_();
    REQUIRE(b.grad_fn()->name() == "SinBackward0");
    b.sum().backward();
    REQUIRE(a.grad().to_vector<double>()[0] == Approx(std::cos(0.5)));
    REQUIRE(a.grad().to_vector<double>()[1] == Approx(std::cos(1.0)));
    auto fn = [](const tensor_list& in) {
        Tensor b = in[0] * 1.0;
        b.sin_();
        return tensor_list{b};
    };
    REQUIRE(gradcheck(fn, {leaf64({3}, 41)}));
    REQUIRE(gradgradcheck(fn, {leaf64({3}, 41)}));
}

TEST_CASE("mul and div save only the operands their needed derivatives read (F3)", "[autograd][saved_hooks]") {
    const auto packs = [](const std::function<Tensor()>& f) {
        counting_hooks h;
        autograd::saved_tensors_hooks guard(h.pack(), counting_hooks::unpack());
        (void)f();
        return h.packs;
    };
    Tensor x = leaf({1, 2}), y = leaf({3, 4});
    const Tensor c = tensor({5.0, 6.0});
    REQUIRE(packs([&] { return x * c; }) == 1);  // only c, for x's gradient
    REQUIRE(packs([&] { return c * y; }) == 1);
    REQUIRE(packs([&] { return x * y; }) == 2);
    REQUIRE(packs([&] { return x / c; }) == 1);  // d/dx = 1/c
    REQUIRE(packs([&] { return c / y; }) == 2);  // d/dy = -c/y^2
    // The gradients are unchanged.
    (x * c).sum().backward();
    REQUIRE(vals(x.grad()) == std::vector<float>{5, 6});
    (c * y).sum().backward();
    REQUIRE(vals(y.grad()) == std::vector<float>{5, 6});
    x.set_grad(Tensor{});
    (x / c).sum().backward();
    REQUIRE(x.grad().to_vector<double>()[0] == Approx(0.2));
    // In place: mul_ by a constant saves only the constant, never a clone of self.
    Tensor b = x * 1.0;
    REQUIRE(packs([&] { return b.mul_(c); }) == 1);
    Tensor d = c.clone();
    REQUIRE(packs([&] { return d.mul_(y); }) == 1);  // only the pre-write clone of d
}

TEST_CASE("PyTorch's example: b = a.clone(), v = b[0], v.mul_(2)", "[autograd][views][inplace]") {
    Tensor a = leaf({1, 2, 3});
    Tensor b = a.clone();
    Tensor v = b[0];
    v.mul_(2.0);
    REQUIRE(b.grad_fn()->name() == "CopySlices");
    REQUIRE(b.grad_fn()->next_functions()[0].function->name() == "CloneBackward0");
    REQUIRE(v.grad_fn()->name() == "AsStridedBackward0");
    b.sum().backward();
    REQUIRE(vals(a.grad()) == std::vector<float>{2, 1, 1});
}

TEST_CASE("in-place between two views of the same base (b[0] *= b[1])", "[autograd][views][inplace]") {
    Tensor a = leaf({2, 3});
    Tensor b = a * 1.0;
    // mul_ saves its other operand b[1], which shares b's version counter: the write
    // invalidates it, and backward reports it (as PyTorch does).
    b[0].mul_(b[1]);
    REQUIRE(vals(b) == std::vector<float>{6, 3});
    REQUIRE_THROWS_WITH(b.sum().backward(), Contains("modified by an inplace operation"));
    // With a copy of the operand it works: b0 = a0 a1, b1 = a1.
    Tensor c = a * 1.0;
    c[0].mul_(c[1].clone());
    c.sum().backward();
    REQUIRE(vals(a.grad()) == std::vector<float>{3, 3});
    auto fn = [](const tensor_list& in) {
        Tensor d = in[0] * 1.0;
        d.narrow(0, 0, 2).mul_(d.narrow(0, 2, 2).clone());
        return tensor_list{d};
    };
    REQUIRE(gradcheck(fn, {leaf64({4}, 51)}));
}
