// The eager engine and the torch.autograd.graph surface, one behaviour per test,
// each asserting what PyTorch users observe (values, names, call counts, errors).
#include <catch2/catch.hpp>

#include <cmath>
#include <thread>
#include <vector>

#include <graft/graft.hpp>

using namespace graft;
using autograd::tensor_list;
using Catch::Matchers::Contains;

namespace {
Tensor leaf(std::initializer_list<double> v, int_list sizes = {-1}) {
    return tensor(v, std::move(sizes)).requires_grad_();
}
std::vector<float> vals(const Tensor& t) { return t.to_vector<float>(); }
}  // namespace

TEST_CASE("backward of the design-card chain matches the hand-derived gradient", "[autograd][engine]") {
    // loss = sum(tanh(x*w + 1) * sigmoid(x)); d/dw = (1 - t^2) * x * s, d/dx = (1 - t^2) * w * s + t * s * (1 - s).
    Tensor x = leaf({0.5, -1.0, 2.0}), w = leaf({1.5, 0.25, -0.5});
    Tensor loss = (tanh(x * w + 1.0) * sigmoid(x)).sum();
    REQUIRE(loss.grad_fn()->name() == "SumBackward0");
    loss.backward();
    const auto xv = x.to_vector<double>(), wv = w.to_vector<double>();
    for (std::size_t i = 0; i < 3; ++i) {
        const double t = std::tanh(xv[i] * wv[i] + 1.0), s = 1.0 / (1.0 + std::exp(-xv[i]));
        REQUIRE(x.grad().to_vector<double>()[i] == Approx((1 - t * t) * wv[i] * s + t * s * (1 - s)).epsilon(1e-5));
        REQUIRE(w.grad().to_vector<double>()[i] == Approx((1 - t * t) * xv[i] * s).epsilon(1e-5));
    }
}

TEST_CASE("graph structure: names, next_functions, leaves", "[autograd][graph]") {
    Tensor x = ones({5, 5}).requires_grad_(), y = ones({5, 5}).requires_grad_();
    Tensor a = x + y;
    REQUIRE(a.grad_fn()->name() == "AddBackward0");
    const auto& next = a.grad_fn()->next_functions();
    REQUIRE(next.size() == 2);
    REQUIRE(next[0].function->name() == "AccumulateGrad");
    REQUIRE(next[0].input_nr == 0);
    REQUIRE(next[0].function == autograd::get_gradient_edge(x).node);  // one accumulator per leaf
    REQUIRE(x.is_leaf());
    REQUIRE_FALSE(a.is_leaf());
    REQUIRE(a.requires_grad());
    REQUIRE(clone(x).grad_fn()->name() == "CloneBackward0");
    REQUIRE((x * 2.0).grad_fn()->name() == "MulBackward0");
    REQUIRE(x.t().grad_fn()->name() == "TBackward0");
    // An input that needs no grad has an invalid edge.
    Tensor c = ones({5, 5});
    const Tensor xc = x * c;  // keeps its node alive while we look at the edges
    const auto& e = xc.grad_fn()->next_functions();
    REQUIRE(e[0].valid());
    REQUIRE_FALSE(e[1].valid());
    // No graph without requires_grad.
    REQUIRE((c * c).grad_fn() == nullptr);
    REQUIRE_FALSE((c * c).requires_grad());
}

TEST_CASE("gradients accumulate into leaves across backward calls", "[autograd][engine]") {
    Tensor x = leaf({1.0, 2.0});
    (x * x).sum().backward();
    REQUIRE(vals(x.grad()) == std::vector<float>{2, 4});
    (x * 3.0).sum().backward();
    REQUIRE(vals(x.grad()) == std::vector<float>{5, 7});
    x.set_grad(Tensor{});
    REQUIRE_FALSE(x.grad().defined());
    // A non-leaf has no .grad unless it retains it.
    Tensor h = x * 3.0;
    (h * h).sum().backward();
    REQUIRE_FALSE(h.grad().defined());
}

TEST_CASE("retain_graph: a second backward through freed buffers throws, without saved values it does not", "[autograd][engine][errors]") {
    Tensor a = leaf({1.0, 2.0});
    Tensor b = a * a;  // saves a
    Tensor s = b.sum();
    s.backward();
    REQUIRE_THROWS_WITH(s.backward(), Contains("Trying to backward through the graph a second time"));
    REQUIRE(vals(a.grad()) == std::vector<float>{2, 4});  // state intact after the error
    Tensor c = (a + 1.0).sum();  // saves nothing
    c.backward();
    REQUIRE_NOTHROW(c.backward());
    Tensor d = (a * a).sum();
    d.backward({}, true);
    REQUIRE_NOTHROW(d.backward());
}

TEST_CASE("backward argument checks", "[autograd][engine][errors]") {
    Tensor x = leaf({1.0, 2.0});
    REQUIRE_THROWS_WITH((x * 2.0).backward(), Contains("grad can be implicitly created only for scalar outputs"));
    REQUIRE_THROWS_WITH(ones({2}).sum().backward(), Contains("does not require grad and does not have a grad_fn"));
    REQUIRE_THROWS_WITH((x * 2.0).backward(ones({3})), Contains("Mismatch in shape"));
    (x * 2.0).backward(tensor({1.0, 0.5}));
    REQUIRE(vals(x.grad()) == std::vector<float>{2, 1});
    REQUIRE_THROWS_WITH(ones({2}, dtype::int64).requires_grad_(), Contains("floating point"));
    REQUIRE_THROWS_WITH((x * 2.0).requires_grad_(false), Contains("leaf variables"));
}

TEST_CASE("autograd::grad: inputs, allow_unused, create_graph and double backward", "[autograd][grad]") {
    Tensor x = leaf({2.0}), y = leaf({3.0}), z = leaf({1.0});
    Tensor f = x * x * x + x * y;
    tensor_list g = autograd::grad({f}, {x, y}, {}, true, true);
    REQUIRE(vals(g[0]) == std::vector<float>{15});  // 3x^2 + y
    REQUIRE(vals(g[1]) == std::vector<float>{2});   // x
    REQUIRE_FALSE(x.grad().defined());               // grad() does not accumulate
    tensor_list gg = autograd::grad({g[0]}, {x});    // d/dx (3x^2 + y) = 6x
    REQUIRE(vals(gg[0]) == std::vector<float>{12});
    REQUIRE_THROWS_WITH(autograd::grad({(x * y).sum()}, {z}), Contains("not have been used in the graph"));
    tensor_list u = autograd::grad({(x * y).sum()}, {z, x}, {}, {}, false, true);
    REQUIRE_FALSE(u[0].defined());
    REQUIRE(vals(u[1]) == std::vector<float>{3});
    REQUIRE_THROWS_WITH(autograd::grad({(x * y).sum()}, {ones({1})}), Contains("does not require grad"));
}

TEST_CASE("backward(inputs=...) accumulates only into the given tensors", "[autograd][engine]") {
    Tensor a = leaf({1.0}), b = leaf({2.0});
    Tensor c = a * b;
    c.backward({}, false, false, {a});
    REQUIRE(vals(a.grad()) == std::vector<float>{2});
    REQUIRE_FALSE(b.grad().defined());
    // A non-leaf input gets its .grad.
    Tensor h = a * 3.0;
    (h * h).sum().backward({}, false, false, {h});
    REQUIRE(vals(h.grad()) == std::vector<float>{6});
    REQUIRE(vals(a.grad()) == std::vector<float>{2});  // unchanged
}

TEST_CASE("no_grad and enable_grad are thread-local scopes", "[autograd][grad_mode]") {
    Tensor x = leaf({1.0});
    {
        autograd::no_grad guard;
        REQUIRE_FALSE((x * 2.0).requires_grad());
        {
            autograd::enable_grad inner;
            REQUIRE((x * 2.0).requires_grad());
        }
        REQUIRE_FALSE(autograd::is_grad_enabled());
        x.mul_(2.0);  // in-place on a leaf is allowed without grad mode (optimizer steps)
    }
    REQUIRE(autograd::is_grad_enabled());
    REQUIRE(vals(x) == std::vector<float>{2});
    bool other_thread_enabled = false;
    {
        autograd::no_grad guard;
        std::thread t([&] { other_thread_enabled = autograd::is_grad_enabled(); });
        t.join();
    }
    REQUIRE(other_thread_enabled);
    // torch.no_grad's top-level spelling: graft::no_grad is the same guard.
    {
        graft::no_grad guard;
        REQUIRE_FALSE(graft::is_grad_enabled());
        REQUIRE_FALSE((x * 2.0).requires_grad());
        graft::set_grad_enabled(true);
        REQUIRE((x * 2.0).requires_grad());
    }
    REQUIRE(graft::is_grad_enabled());
}

TEST_CASE("tensor hooks: count, replacement, removal (B1-B5)", "[autograd][hooks]") {
    Tensor x = ones({5, 5}).requires_grad_(), y = (ones({5, 5}) * 4.0).requires_grad_();
    int counter = 0;
    Tensor z = x * x + x * 2.0 + x * y + y;
    x.register_hook([&](const Tensor&) { counter += 0; return Tensor{}; });
    auto h1 = z.register_hook([&](const Tensor& g) {
        REQUIRE(g.defined());
        counter += 1;
        return Tensor{};
    });
    z.backward(ones({5, 5}), true);
    REQUIRE(counter == 1);
    auto h2 = z.register_hook([&](const Tensor&) {
        counter += 2;
        return Tensor{};
    });
    z.backward(ones({5, 5}), true);
    REQUIRE(counter == 4);
    h2.remove();
    h2.remove();  // idempotent
    z.backward(ones({5, 5}), true);
    REQUIRE(counter == 5);
    // A hook's return value replaces the gradient; hooks compose.
    x.set_grad(Tensor{});
    y.set_grad(Tensor{});
    y.register_hook([](const Tensor& g) { return g * 2.0; });
    z.backward(ones({5, 5}), true);
    const auto yg = y.grad().to_vector<float>();
    REQUIRE(yg[0] == 2.0f * (1.0f + 1.0f));  // (x + 1) * 2 with x = 1
}

TEST_CASE("hooks see and change gradients in PyTorch's order (C1, C2, C7, D6)", "[autograd][hooks]") {
    Tensor a = leaf({0.0, 0.0, 0.0});
    Tensor b = clone(a);
    auto h = b.grad_fn()->register_hook([](const tensor_list&, const tensor_list& gout) {
        return std::optional<tensor_list>(tensor_list{gout[0] * 2.0});
    });
    b.sum().backward({}, true);
    REQUIRE(vals(a.grad()) == std::vector<float>{2, 2, 2});
    h.remove();
    a.set_grad(Tensor{});
    b.sum().backward({}, true);
    REQUIRE(vals(a.grad()) == std::vector<float>{1, 1, 1});
    auto p = b.grad_fn()->register_prehook([](const tensor_list& gout) {
        return std::optional<tensor_list>(tensor_list{gout[0] * 2.0});
    });
    a.set_grad(Tensor{});
    b.sum().backward({}, true);
    REQUIRE(vals(a.grad()) == std::vector<float>{2, 2, 2});
    p.remove();

    // C7: tensor hooks run before the node's pre-hooks; same-kind hooks in registration order.
    Tensor x = leaf({1.0});
    Tensor y = clone(x);
    std::vector<int> log;
    y.grad_fn()->register_prehook([&](const tensor_list& g) { log.push_back(2); return std::optional<tensor_list>(tensor_list{g[0] * 2.0}); });
    y.register_hook([&](const Tensor& g) { log.push_back(1); return g * 3.0; });
    y.grad_fn()->register_prehook([&](const tensor_list& g) { log.push_back(2); return std::optional<tensor_list>(tensor_list{g[0] * 2.0}); });
    x.register_hook([&](const Tensor& g) { log.push_back(1); return g * 3.0; });
    autograd::get_gradient_edge(x).node->register_prehook([&](const tensor_list& g) { log.push_back(2); return std::optional<tensor_list>(tensor_list{g[0] * 2.0}); });
    x.register_hook([&](const Tensor& g) { log.push_back(1); return g * 3.0; });
    y.sum().backward({}, true);
    REQUIRE(log == std::vector<int>{1, 2, 2, 1, 1, 2});
    REQUIRE(vals(x.grad()) == std::vector<float>{3 * 2 * 2 * 3 * 3 * 2});

    // D6: tensor hook -> accumulator pre-hook -> post-accumulate hook -> accumulator post-hook.
    Tensor t = leaf({1.0});
    t.register_hook([](const Tensor& g) { return g - 2.0; });
    auto acc = autograd::get_gradient_edge(t).node;
    acc->register_prehook([](const tensor_list& g) { return std::optional<tensor_list>(tensor_list{g[0] / 5.0}); });
    t.register_post_accumulate_grad_hook([](const Tensor& tt) {
        Tensor g = tt.grad();
        g.add_(0.5);  // in place: like PyTorch, .grad is the very gradient the accumulator received
    });
    acc->register_hook([&t](const tensor_list& gin, const tensor_list& gout) {
        REQUIRE(gin.empty());
        t.set_grad(gout[0] * 10.0);
        return std::optional<tensor_list>{};
    });
    t.sum().backward();
    REQUIRE(t.grad().item<double>() == Approx(((1 - 2) / 5.0 + 0.5) * 10).epsilon(1e-6));
}

TEST_CASE("retain_grad keeps non-leaf gradients and sees every tensor hook (B14, B15)", "[autograd][hooks]") {
    Tensor input = leaf({1.0, 2.0});
    Tensor h1 = input * 3.0;
    h1.retain_grad();
    h1.retain_grad();
    REQUIRE(h1.retains_grad());
    Tensor out = (h1 * h1).sum();
    out.backward({}, true);
    REQUIRE(vals(h1.grad()) == vals(h1 * 2.0));
    out.backward({}, true);
    REQUIRE(vals(h1.grad()) == vals(h1 * 4.0));
    Tensor a = leaf({1.0});
    Tensor b = clone(a);
    b.register_hook([](const Tensor& g) { return g * 2.0; });
    b.retain_grad();
    b.register_hook([](const Tensor& g) { return g * 2.0; });
    clone(b).sum().backward();
    REQUIRE(b.grad().item<double>() == 4.0);
    REQUIRE_THROWS_WITH(ones({1}).retain_grad(), Contains("requires_grad=False"));
}

TEST_CASE("post-accumulate-grad hooks run on leaves only (D1, D2)", "[autograd][hooks]") {
    Tensor t = leaf({1.0, 2.0});
    REQUIRE_THROWS_WITH((t * 2.0).register_post_accumulate_grad_hook([](const Tensor&) {}),
                        Contains("cannot be registered on non-leaf tensors"));
    t.register_post_accumulate_grad_hook([](const Tensor& tt) {
        autograd::no_grad g;
        Tensor m = tt;
        m.sub_(tt.grad());
    });
    t.register_post_accumulate_grad_hook([](const Tensor& tt) {
        autograd::no_grad g;
        Tensor m = tt;
        m.mul_(4.0);
    });
    t.sum().backward();
    REQUIRE(vals(t) == std::vector<float>{0, 4});
}

TEST_CASE("saved tensors check their version (G1-G3)", "[autograd][saved][errors]") {
    Tensor a = leaf({1.0, 2.0});
    Tensor b = a * 2.0;
    Tensor c = b * b;  // saves b
    b.add_(1.0);
    REQUIRE(b._version() == 1);
    REQUIRE_THROWS_WITH(c.sum().backward(),
                        Contains("modified by an inplace operation") && Contains("is at version 1; expected version 0"));
    // Mutating a tensor that no node saved is fine, and gradients flow through the in-place op.
    Tensor d = a * 2.0;
    Tensor e = d + 1.0;  // saves nothing
    d.mul_(3.0);
    REQUIRE(d.grad_fn()->name() == "MulBackward0");
    (e.sum() + d.sum()).backward();
    REQUIRE(vals(a.grad()) == std::vector<float>{8, 8});  // 2 (through e) + 6 (through d)
    REQUIRE_THROWS_WITH(a.add_(1.0), Contains("a leaf Variable that requires grad is being used in an in-place operation"));
    REQUIRE(vals(a) == std::vector<float>{1, 2});  // unchanged after the error
    Tensor v = (a * 1.0).narrow(0, 0, 1);
    v.mul_(2.0);  // in-place on a view is differentiable (tests/test_autograd_views_inplace.cpp)
    REQUIRE(v.grad_fn()->name() == "AsStridedBackward0");
}

TEST_CASE("get_gradient_edge works as an input of autograd::grad (E1, E2)", "[autograd][graph]") {
    REQUIRE_THROWS_WITH(autograd::get_gradient_edge(ones({2})), Contains("does not require gradients"));
    Tensor x = leaf({1.0, 2.0});
    Tensor mid = x * 3.0;
    Tensor out = clone(mid * mid);
    const auto by_tensor = autograd::grad({out.sum()}, {mid}, {}, true);
    const auto by_edge = autograd::grad({out.sum()}, {autograd::get_gradient_edge(mid)}, {}, true);
    REQUIRE(vals(by_tensor[0]) == vals(by_edge[0]));
    REQUIRE(vals(by_edge[0]) == std::vector<float>{6, 12});
    const auto leaf_edge = autograd::grad({out.sum()}, {autograd::get_gradient_edge(x)});
    REQUIRE(vals(leaf_edge[0]) == std::vector<float>{18, 36});
}

TEST_CASE("node metadata is a per-node map users write", "[autograd][graph]") {
    Tensor x = leaf({1.0});
    Tensor y = x * 2.0;
    y.grad_fn()->metadata()["tag"] = std::string("scale");
    REQUIRE(std::any_cast<std::string>(y.grad_fn()->metadata().at("tag")) == "scale");
}

TEST_CASE("maximum splits tied gradients evenly, amax among ties, relu'(0) = 0, sqrt'(0) = inf", "[autograd][semantics]") {
    Tensor a = leaf({1.0, 2.0, 3.0}), b = leaf({1.0, 1.0, 4.0});
    maximum(a, b).sum().backward();
    REQUIRE(vals(a.grad()) == std::vector<float>{0.5f, 1, 0});
    REQUIRE(vals(b.grad()) == std::vector<float>{0.5f, 0, 1});
    Tensor c = leaf({2.0, 5.0, 5.0, 1.0});
    c.amax().backward();
    REQUIRE(vals(c.grad()) == std::vector<float>{0, 0.5f, 0.5f, 0});
    Tensor r = leaf({0.0, -1.0, 1.0});
    relu(r).sum().backward();
    REQUIRE(vals(r.grad()) == std::vector<float>{0, 0, 1});
    Tensor s = leaf({0.0});
    sqrt(s).sum().backward();
    REQUIRE(std::isinf(s.grad().item<double>()));
    Tensor z = leaf({0.0});
    abs(z).sum().backward();
    REQUIRE(z.grad().item<double>() == 0.0);
}

TEST_CASE("independent backward passes on two threads", "[autograd][threads]") {
    auto work = [](double seed, std::vector<float>& out) {
        for (int i = 0; i < 50; ++i) {
            Tensor x = full({16}, seed).requires_grad_();
            Tensor y = (tanh(x * x) * 3.0).sum();
            y.backward();
            out = x.grad().to_vector<float>();
        }
    };
    std::vector<float> g1, g2;
    std::thread t1(work, 0.5, std::ref(g1)), t2(work, 1.5, std::ref(g2));
    t1.join();
    t2.join();
    const double d1 = 3 * 2 * 0.5 * (1 - std::pow(std::tanh(0.25), 2)), d2 = 3 * 2 * 1.5 * (1 - std::pow(std::tanh(2.25), 2));
    REQUIRE(g1[0] == Approx(d1).epsilon(1e-5));
    REQUIRE(g2[15] == Approx(d2).epsilon(1e-5));
}

TEST_CASE("which hooks fire depends on grad() vs backward() and inputs (C13)", "[autograd][hooks]") {
    struct counts {
        int tensor = 0, pre = 0, post = 0;
    };
    auto run = [](int which) {
        counts c;
        Tensor a = leaf({1.0});
        Tensor b = a * 2.0;
        Tensor out = b * 2.0;
        a.register_hook([&](const Tensor&) { ++c.tensor; return Tensor{}; });
        b.register_hook([&](const Tensor&) { ++c.tensor; return Tensor{}; });
        auto pre = [&](const tensor_list&) { ++c.pre; return std::optional<tensor_list>{}; };
        auto post = [&](const tensor_list&, const tensor_list&) { ++c.post; return std::optional<tensor_list>{}; };
        b.grad_fn()->register_prehook(pre);
        b.grad_fn()->register_hook(post);
        auto acc = autograd::get_gradient_edge(a).node;
        acc->register_prehook(pre);
        acc->register_hook(post);
        if (which == 0) (void)autograd::grad({out}, {b});
        if (which == 1) (void)autograd::grad({out}, {a, b});
        if (which == 2) out.backward();
        if (which == 3) out.backward({}, false, false, {a, b});
        return c;
    };
    const counts g1 = run(0), g2 = run(1), b1 = run(2), b2 = run(3);
    REQUIRE((g1.tensor == 1 && g1.post == 0 && g1.pre == 0));
    REQUIRE((g2.tensor == 2 && g2.post == 1 && g2.pre == 1));
    REQUIRE((b1.tensor == 2 && b1.post == 2 && b1.pre == 2));
    REQUIRE((b2.tensor == 2 && b2.post == 2 && b2.pre == 2));
}

TEST_CASE("hooks as C++ callers write them: void tensor hooks, post-accumulate hooks that update the tensor",
          "[autograd][hooks]") {
    // A tensor hook that returns nothing observes the gradient (PyTorch's hook returning None).
    Tensor w = tensor({1.0, 2.0});
    w.requires_grad_();
    Tensor seen;
    w.register_hook([&seen](const Tensor& g) { seen = g.clone(); });
    (w * w).sum().backward();
    CHECK(equal(seen, tensor({2.0, 4.0})));
    CHECK(equal(w.grad(), tensor({2.0, 4.0})));  // unchanged by the observing hook
    // A post-accumulate-grad hook gets the tensor itself: an SGD step in the hook.
    Tensor p = tensor({1.0, -1.0});
    p.requires_grad_();
    p.register_post_accumulate_grad_hook([](Tensor& t) {
        autograd::no_grad guard;
        t.sub_(t.grad() * 0.5);
    });
    (p * 3.0).sum().backward();
    CHECK(equal(p.detach(), tensor({1.0 - 1.5, -1.0 - 1.5})));
}

TEST_CASE("function_node: undefined saves keep their positions, both backward forms give the same gradients",
          "[autograd][engine]") {
    Tensor x = leaf({1.0, 2.0}), w = leaf({3.0, -4.0});
    for (const bool appending : {false, true}) {
        auto node = autograd::detail::make_node("TestBackward", x, w);
        REQUIRE(node);
        node->save(Tensor{});  // position 0: nothing
        node->save(w);         // position 1
        node->save(Tensor{});  // position 2: trailing, no storage
        CHECK_FALSE(node->saved(0).defined());
        CHECK(vals(node->saved(1)) == vals(w));
        CHECK_FALSE(node->saved(2).defined());
        CHECK_THROWS_AS(node->saved(3), graft::error);
        Tensor y = ops::mul(x, w);  // raw forward; the node below is its grad_fn
        autograd::detail::set_history(y, node);
        // d(sum(x*w))/dx = w, d/dw = x, read from the saved w and a captured x.
        if (appending)
            node->backward = [xc = x.detach()](autograd::function_node& n, const tensor_list& g, tensor_list& out) {
                out.push_back(ops::mul(g[0], n.saved(1).detach()));
                out.push_back(ops::mul(g[0], xc));
            };
        else
            node->backward = [xc = x.detach()](autograd::function_node& n, const tensor_list& g) -> tensor_list {
                return {ops::mul(g[0], n.saved(1).detach()), ops::mul(g[0], xc)};
            };
        CHECK(node->backward.fills() == appending);
        const tensor_list grads = autograd::grad({y.sum()}, {x, w}, {}, /*retain_graph=*/true);
        CHECK(vals(grads[0]) == vals(w));
        CHECK(vals(grads[1]) == vals(x));
        // Called directly, the appending form returns the same list.
        const tensor_list direct = node->backward(*node, {ones({2})});
        REQUIRE(direct.size() == 2);
        CHECK(vals(direct[0]) == vals(w));
    }
}

TEST_CASE("autograd::grad runs only the nodes on a path to its inputs", "[autograd][grad]") {
    // loss = a*b + c*d: grad w.r.t. a must not run the c*d branch (will_engine_execute_node).
    Tensor a = leaf({2.0}), b = leaf({3.0}), c = leaf({5.0}), d = leaf({7.0});
    Tensor ab = a * b, cd = c * d;
    bool ab_ran = false, cd_ran = false;
    ab.grad_fn()->register_prehook([&](const tensor_list&) -> std::optional<tensor_list> {
        ab_ran = autograd::will_engine_execute_node(*ab.grad_fn());
        return std::nullopt;
    });
    cd.grad_fn()->register_prehook([&](const tensor_list&) -> std::optional<tensor_list> {
        cd_ran = true;
        return std::nullopt;
    });
    const tensor_list g = autograd::grad({ab + cd}, {a});
    CHECK(vals(g[0]) == std::vector<float>{3.0f});
    CHECK(ab_ran);
    CHECK_FALSE(cd_ran);
    // Both branches when both are asked for; a shared input gets both contributions.
    const tensor_list g2 = autograd::grad({a * b + a * d}, {a, d});
    CHECK(vals(g2[0]) == std::vector<float>{10.0f});  // b + d
    CHECK(vals(g2[1]) == std::vector<float>{2.0f});   // a
}

TEST_CASE("backward through hundreds of nodes, then through a few, on one thread's reused node table",
          "[autograd]") {
    // The engine's per-pass node table starts at 64 slots and grows; the next pass on the
    // thread reuses its arrays. Each step y -> 0.5 * (1.01 * y) + 0.5 * (1.01 * y) is four
    // nodes with two paths, so dy/dx = 1.01^steps.
    for (const int steps : {200, 3, 120, 1}) {
        Tensor x = full({4}, 0.5, dtype::float64).requires_grad_();
        Tensor y = x;
        for (int k = 0; k < steps; ++k) {
            const Tensor z = y * 1.01;
            y = z * 0.5 + z * 0.5;
        }
        y.sum().backward();
        const double want = std::pow(1.01, steps);
        for (const double g : x.grad().to_vector<double>()) CHECK(g == Approx(want).epsilon(1e-12));
        const auto again = autograd::grad({(x * 3.0).sum()}, {x});
        CHECK(again[0].to_vector<double>() == std::vector<double>(4, 3.0));
    }
}
