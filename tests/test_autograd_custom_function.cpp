// Custom autograd Functions (autograd::Function<Derived>, issue 16): values and gradients
// against hand-written derivatives and finite differences (gradcheck / gradgradcheck),
// PyTorch's rules for mark_dirty, mark_non_differentiable, needs_input_grad and
// materialized gradients, outputs that are views (no in-place changes), once_differentiable,
// the node as a regular graph node, and the errors PyTorch raises.
#include <catch2/catch.hpp>

#include <any>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include <graft/graft.hpp>

#include "grad_test_common.hpp"

using namespace graft;
using gt::leaf;
using autograd::FunctionCtx;
using autograd::gradcheck;
using autograd::gradgradcheck;
using autograd::tensor_list;
using Catch::Matchers::Contains;

namespace {

std::vector<double> dvec(const Tensor& t) { return t.to_vector<double>(); }
bool close(const std::vector<double>& a, const std::vector<double>& b, double tol = 1e-12) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::abs(a[i] - b[i]) > tol * (1.0 + std::abs(b[i]))) return false;
    return true;
}

// exp, saving its output (the derivative reads y = exp(x)).
struct MyExp : autograd::Function<MyExp> {
    static Tensor forward(FunctionCtx& ctx, const Tensor& x) {
        Tensor y = exp(x);
        ctx.save_for_backward(y);
        return y;
    }
    static Tensor backward(FunctionCtx& ctx, const Tensor& g) { return g * ctx.get_saved_variables()[0]; }
};

// Two outputs and a number: (alpha * x * y, x - y).
struct ScaledProdDiff : autograd::Function<ScaledProdDiff> {
    static constexpr const char* name = "ScaledProdDiff";
    static std::tuple<Tensor, Tensor> forward(FunctionCtx& ctx, const Tensor& x, const Tensor& y, double alpha) {
        ctx.save_for_backward(x, y);
        ctx.saved_data["alpha"] = alpha;
        return {x * y * alpha, x - y};
    }
    static tensor_list backward(FunctionCtx& ctx, const Tensor& g0, const Tensor& g1) {
        const auto s = ctx.get_saved_variables();
        const double alpha = std::any_cast<double>(ctx.saved_data.at("alpha"));
        return {g0 * s[1] * alpha + g1, g0 * s[0] * alpha - g1, Tensor{}};
    }
};

// In place: x *= 2.
struct MulTwoInplace : autograd::Function<MulTwoInplace> {
    static Tensor forward(FunctionCtx& ctx, Tensor x) {
        x.mul_(2.0);
        ctx.mark_dirty(x);
        return x;
    }
    static Tensor backward(FunctionCtx&, const Tensor& g) { return g * 2.0; }
};

// (2x, a mask of x > 0 as float64): the mask is not differentiable.
struct DoubleAndMask : autograd::Function<DoubleAndMask> {
    static inline bool materialize = true;
    static inline std::vector<bool> g1_defined;
    static inline std::vector<double> g1_sum;
    static tensor_list forward(FunctionCtx& ctx, const Tensor& x) {
        Tensor mask = (x > 0.0).to(x.type());
        ctx.mark_non_differentiable(mask);
        ctx.set_materialize_grads(materialize);
        return {x * 2.0, mask};
    }
    static tensor_list backward(FunctionCtx&, const tensor_list& g) {
        g1_defined.push_back(g[1].defined());
        if (g[1].defined()) g1_sum.push_back(g[1].abs().sum().item<double>());
        return {g[0] * 2.0};
    }
};

// Records needs_input_grad for its three arguments.
struct Recorder : autograd::Function<Recorder> {
    static inline std::vector<bool> seen_forward, seen_backward;
    static Tensor forward(FunctionCtx& ctx, const Tensor& x, const Tensor& y, int k) {
        seen_forward = {ctx.needs_input_grad(0), ctx.needs_input_grad(1), ctx.needs_input_grad(2)};
        return x * y * static_cast<double>(k);
    }
    static tensor_list backward(FunctionCtx& ctx, const Tensor& g) {
        seen_backward = {ctx.needs_input_grad(0), ctx.needs_input_grad(1), ctx.needs_input_grad(2)};
        // A gradient for y although it needs none: dropped, as in PyTorch.
        return {g * 3.0, g * 100.0, Tensor{}};
    }
};

struct WrongCount : autograd::Function<WrongCount> {
    static Tensor forward(FunctionCtx&, const Tensor& x) { return x * 1.0; }
    static tensor_list backward(FunctionCtx&, const Tensor& g) { return {g, g}; }
};
struct WrongShape : autograd::Function<WrongShape> {
    static Tensor forward(FunctionCtx&, const Tensor& x) { return x * 1.0; }
    static Tensor backward(FunctionCtx&, const Tensor&) { return ones({3}, dtype::float64); }
};
struct GradForNumber : autograd::Function<GradForNumber> {
    static Tensor forward(FunctionCtx&, const Tensor& x, double) { return x * 1.0; }
    static tensor_list backward(FunctionCtx&, const Tensor& g) { return {g, g}; }
};
struct Identity : autograd::Function<Identity> {
    static Tensor forward(FunctionCtx&, const Tensor& x) { return x; }
    static Tensor backward(FunctionCtx&, const Tensor& g) { return g * 5.0; }
};
// Returns a view it makes of its input (a transpose); backward transposes back, times 5.
struct TransposeFn : autograd::Function<TransposeFn> {
    static Tensor forward(FunctionCtx&, const Tensor& x) { return x.t(); }
    static Tensor backward(FunctionCtx&, const Tensor& g) { return g.t() * 5.0; }
};
// exp marked once differentiable: its backward (g * exp(x)) runs without recording, so a
// second derivative through it must be refused, not silently dropped.
struct OnceExp : autograd::Function<OnceExp> {
    static constexpr bool once_differentiable = true;
    static inline std::vector<bool> grad_mode_in_backward;
    static Tensor forward(FunctionCtx& ctx, const Tensor& x) {
        Tensor y = exp(x);
        ctx.save_for_backward(y);
        return y;
    }
    static Tensor backward(FunctionCtx& ctx, const Tensor& g) {
        grad_mode_in_backward.push_back(autograd::is_grad_enabled());
        return g * ctx.get_saved_variables()[0];
    }
};
struct DirtyNotReturned : autograd::Function<DirtyNotReturned> {
    static Tensor forward(FunctionCtx& ctx, Tensor x) {
        x.add_(1.0);
        ctx.mark_dirty(x);
        return x * 1.0;
    }
    static Tensor backward(FunctionCtx&, const Tensor& g) { return g; }
};

}  // namespace

TEST_CASE("custom Function: exp saving its output, gradient, node and double backward", "[autograd][custom_function]") {
    Tensor x = leaf({2, 3}, 1);
    Tensor y = MyExp::apply(x);
    CHECK(close(dvec(y), dvec(exp(x.detach()))));
    REQUIRE(y.grad_fn());
    CHECK(y.grad_fn()->name() == "MyExpBackward");
    REQUIRE(y.grad_fn()->next_functions().size() == 1);
    CHECK(y.grad_fn()->next_functions()[0].function->name() == "AccumulateGrad");
    CHECK(y.grad_fn()->describe_saved().size() == 1);
    const Tensor g = full({2, 3}, 0.5, dtype::float64);
    y.backward(g);
    std::vector<double> expect;
    for (double v : dvec(x.detach())) expect.push_back(0.5 * std::exp(v));
    CHECK(close(dvec(x.grad()), expect));

    // create_graph: d/dx (sum exp(x))' = exp(x), so the second derivative is exp(x) again.
    Tensor x2 = leaf({3}, 2);
    const auto gx = autograd::grad({MyExp::apply(x2).sum()}, {x2}, {}, true, true);
    REQUIRE(gx[0].requires_grad());
    const auto ggx = autograd::grad({gx[0].sum()}, {x2});
    std::vector<double> e2;
    for (double v : dvec(x2.detach())) e2.push_back(std::exp(v));
    CHECK(close(dvec(ggx[0]), e2));

    const auto f = [](const tensor_list& in) { return tensor_list{MyExp::apply(in[0])}; };
    CHECK(gradcheck(f, {leaf({4}, 3)}));
    CHECK(gradgradcheck(f, {leaf({4}, 4)}));
}

TEST_CASE("custom Function: two outputs and a non-tensor argument", "[autograd][custom_function]") {
    Tensor x = leaf({3}, 5), y = leaf({3}, 6);
    auto [p, d] = ScaledProdDiff::apply(x, y, 1.5);
    CHECK(close(dvec(p), dvec(x.detach() * y.detach() * 1.5)));
    CHECK(close(dvec(d), dvec(x.detach() - y.detach())));
    REQUIRE(p.grad_fn() == d.grad_fn());
    CHECK(p.grad_fn()->name() == "ScaledProdDiffBackward");
    CHECK(p.grad_fn()->num_outputs() == 2);
    CHECK(p.grad_fn()->next_functions().size() == 2);  // one per tensor argument
    // loss = sum(2 p + 3 d): dx = 2 * 1.5 * y + 3, dy = 2 * 1.5 * x - 3.
    (p * 2.0 + d * 3.0).sum().backward();
    CHECK(close(dvec(x.grad()), dvec(y.detach() * 3.0 + 3.0)));
    CHECK(close(dvec(y.grad()), dvec(x.detach() * 3.0 - 3.0)));

    // Only the first output used: the second one's gradient is materialized as zeros.
    Tensor a = leaf({2}, 7), b = leaf({2}, 8);
    const auto ga = autograd::grad({std::get<0>(ScaledProdDiff::apply(a, b, 2.0)).sum()}, {a, b});
    CHECK(close(dvec(ga[0]), dvec(b.detach() * 2.0)));
    CHECK(close(dvec(ga[1]), dvec(a.detach() * 2.0)));

    const auto f = [](const tensor_list& in) {
        auto [u, v] = ScaledProdDiff::apply(in[0], in[1], 0.75);
        return tensor_list{u, v};
    };
    CHECK(gradcheck(f, {leaf({2, 2}, 9), leaf({2, 2}, 10)}));
    CHECK(gradgradcheck(f, {leaf({2, 2}, 11), leaf({2, 2}, 12)}));
}

TEST_CASE("custom Function: mark_dirty for an in-place forward", "[autograd][custom_function]") {
    Tensor a = leaf({3}, 13);
    Tensor b = a * 1.0;
    const auto v0 = b._version();
    Tensor c = MulTwoInplace::apply(b);
    CHECK(c.impl_ptr() == b.impl_ptr());  // the very input, modified
    CHECK(b._version() > v0);
    REQUIRE(b.grad_fn());
    CHECK(b.grad_fn()->name() == "MulTwoInplaceBackward");
    CHECK(b.grad_fn()->next_functions()[0].function->name() == "MulBackward0");
    CHECK(close(dvec(b), dvec(a.detach() * 2.0)));
    (c * c).sum().backward();  // d/da (2a)^2 = 8a
    CHECK(close(dvec(a.grad()), dvec(a.detach() * 8.0)));

    // A leaf that requires grad can't be modified in place.
    Tensor l = leaf({2}, 14);
    REQUIRE_THROWS_WITH(MulTwoInplace::apply(l), Contains("a leaf Variable that requires grad"));
    // Dirty inputs must be returned.
    Tensor m = leaf({2}, 15) * 1.0;
    REQUIRE_THROWS_WITH(DirtyNotReturned::apply(m), Contains("marked as dirty") && Contains("not returned as output"));

    // A tensor saved by another node and then changed by the in-place Function: the usual error.
    Tensor s = leaf({2}, 16);
    Tensor t = s * 1.0;
    Tensor u = t * t;  // saves t
    (void)MulTwoInplace::apply(t);
    REQUIRE_THROWS_WITH(u.sum().backward(), Contains("modified by an inplace operation"));
}

TEST_CASE("custom Function: a saved tensor modified in place before backward", "[autograd][custom_function]") {
    Tensor x = leaf({3}, 17);
    Tensor y = MyExp::apply(x);
    Tensor z = y * 1.0;
    y.mul_(2.0);  // y is saved by MyExpBackward
    REQUIRE_THROWS_WITH(z.sum().backward(), Contains("modified by an inplace operation") &&
                                                Contains("output 0 of MyExpBackward") && Contains("is at version 1"));
}

TEST_CASE("custom Function: mark_non_differentiable and set_materialize_grads", "[autograd][custom_function]") {
    for (bool materialize : {true, false}) {
        DoubleAndMask::materialize = materialize;
        DoubleAndMask::g1_defined.clear();
        DoubleAndMask::g1_sum.clear();
        Tensor x = leaf({4}, 18);
        const auto out = DoubleAndMask::apply(x);
        REQUIRE(out.size() == 2);
        CHECK(out[0].requires_grad());
        CHECK_FALSE(out[1].requires_grad());
        CHECK_FALSE(out[1].grad_fn());
        std::vector<double> mask;
        for (double v : dvec(x.detach())) mask.push_back(v > 0 ? 1.0 : 0.0);
        CHECK(dvec(out[1]) == mask);
        out[0].sum().backward();
        CHECK(close(dvec(x.grad()), {2.0, 2.0, 2.0, 2.0}));
        REQUIRE(DoubleAndMask::g1_defined.size() == 1);
        CHECK(DoubleAndMask::g1_defined[0] == materialize);
        if (materialize) CHECK(DoubleAndMask::g1_sum[0] == 0.0);
    }
    DoubleAndMask::materialize = true;
}

TEST_CASE("custom Function: needs_input_grad per forward argument", "[autograd][custom_function]") {
    Tensor x = leaf({2}, 19);
    Tensor y = ones({2}, dtype::float64);  // does not require grad
    Tensor z = Recorder::apply(x, y, 3);
    CHECK(Recorder::seen_forward == std::vector<bool>{true, false, false});
    z.sum().backward();
    CHECK(Recorder::seen_backward == std::vector<bool>{true, false, false});
    CHECK(close(dvec(x.grad()), {3.0, 3.0}));
    CHECK_FALSE(y.grad().defined());
    REQUIRE(z.grad_fn()->next_functions().size() == 2);
    CHECK_FALSE(z.grad_fn()->next_functions()[1].valid());

    // No input requires grad, or grad mode is off: forward runs, nothing is recorded.
    Tensor w = Recorder::apply(y, y, 2);
    CHECK(Recorder::seen_forward == std::vector<bool>{false, false, false});
    CHECK_FALSE(w.requires_grad());
    {
        // As Python's ctx.needs_input_grad, which holds each tensor argument's requires_grad
        // whatever the grad mode (torch/csrc/autograd/python_function.cpp, unpack_input):
        // true for x under no_grad, although nothing is recorded.
        autograd::no_grad guard;
        Tensor q = Recorder::apply(x, y, 2);
        CHECK(Recorder::seen_forward == std::vector<bool>{true, false, false});
        CHECK_FALSE(q.requires_grad());
        CHECK_FALSE(q.grad_fn());
    }
}

TEST_CASE("custom Function: hooks, next_functions and returned inputs", "[autograd][custom_function]") {
    Tensor x = leaf({2}, 20);
    Tensor y = MyExp::apply(x);
    int pre = 0, post = 0;
    auto h1 = y.grad_fn()->register_prehook([&](const tensor_list& go) -> std::optional<tensor_list> {
        ++pre;
        return tensor_list{go[0] * 10.0};
    });
    auto h2 = y.grad_fn()->register_hook([&](const tensor_list&, const tensor_list&) -> std::optional<tensor_list> {
        ++post;
        return std::nullopt;
    });
    y.sum().backward();
    CHECK(pre == 1);
    CHECK(post == 1);
    CHECK(close(dvec(x.grad()), dvec(exp(x.detach()) * 10.0)));

    // forward returning its input: the output is a new tensor of the same memory with the history.
    Tensor a = leaf({2}, 21);
    Tensor b = a * 1.0;
    Tensor c = Identity::apply(b);
    CHECK(c.impl_ptr() != b.impl_ptr());
    CHECK(c.grad_fn()->name() == "IdentityBackward");
    CHECK(b.grad_fn()->name() == "MulBackward0");
    c.sum().backward();
    CHECK(close(dvec(a.grad()), {5.0, 5.0}));
}

TEST_CASE("custom Function: errors", "[autograd][custom_function][errors]") {
    Tensor x = leaf({2}, 22);
    REQUIRE_THROWS_WITH(WrongCount::apply(x).sum().backward(),
                        Contains("WrongCountBackward returned an incorrect number of gradients (expected 1, got 2)"));
    REQUIRE_THROWS_WITH(WrongShape::apply(x).sum().backward(),
                        Contains("WrongShapeBackward returned an invalid gradient at index 0 - got [3]") &&
                            Contains("expected shape compatible with [2]"));
    REQUIRE_THROWS_WITH(GradForNumber::apply(x, 2.0).sum().backward(),
                        Contains("at position 2, but the corresponding forward input was not a Tensor"));
    // Backward twice: the saved output was freed by the first.
    Tensor y = MyExp::apply(x).sum();
    y.backward();
    REQUIRE_THROWS_WITH(y.backward(), Contains("Trying to backward through the graph a second time"));
    Tensor r = MyExp::apply(x).sum();
    x.set_grad(Tensor{});
    r.backward({}, true);
    r.backward();
    CHECK(close(dvec(x.grad()), dvec(exp(x.detach()) * 2.0)));
    // needs_input_grad out of range names the node.
    struct BadIndex : autograd::Function<BadIndex> {
        static Tensor forward(FunctionCtx& ctx, const Tensor& t) {
            (void)ctx.needs_input_grad(1);
            return t;
        }
        static Tensor backward(FunctionCtx&, const Tensor& g) { return g; }
    };
    REQUIRE_THROWS_WITH(BadIndex::apply(x), Contains("BadIndexBackward: needs_input_grad(1)"));
    // The state stays usable after errors.
    CHECK(close(dvec(MyExp::apply(x)), dvec(exp(x.detach()))));
}

TEST_CASE("custom Function: saved tensors go through saved_tensors_hooks", "[autograd][custom_function][saved_hooks]") {
    int packs = 0, unpacks = 0;
    Tensor x = leaf({3}, 23);
    Tensor y;
    {
        autograd::saved_tensors_hooks guard(
            [&](const Tensor& t) -> std::any {
                ++packs;
                return t.clone();
            },
            [&](const std::any& a) {
                ++unpacks;
                return std::any_cast<Tensor>(a);
            });
        y = MyExp::apply(x);
    }
    CHECK(packs == 1);
    y.sum().backward();
    CHECK(unpacks == 1);
    CHECK(close(dvec(x.grad()), dvec(exp(x.detach()))));
}

TEST_CASE("saved_tensors_hooks: a pack hook modifying its input in place is an error", "[autograd][saved_hooks][errors]") {
    Tensor x = leaf({3}, 24);
    Tensor a = x * 1.0;
    autograd::saved_tensors_hooks guard(
        [](const Tensor& t) -> std::any {
            Tensor same = t;  // a handle to the very tensor being saved
            same.mul_(2.0);
            return t;
        },
        [](const std::any& p) { return std::any_cast<Tensor>(p); });
    REQUIRE_THROWS_WITH(a * a, Contains("A saved tensor pack hook is modifying its input in place."));
    REQUIRE_THROWS_WITH(MyExp::apply(x), Contains("A saved tensor pack hook is modifying its input in place."));
}

TEST_CASE("register_multi_grad_hook: mode::any skips tensors that don't require grad", "[autograd][multi_grad]") {
    Tensor a = leaf({2}, 25);
    Tensor c = ones({2}, dtype::float64);  // no grad
    int calls = 0;
    Tensor seen;
    auto h = autograd::register_multi_grad_hook(
        {c, a}, std::function<void(const Tensor&)>([&](const Tensor& g) {
            ++calls;
            seen = g;
        }),
        autograd::mode::any);
    (a * 3.0).sum().backward();
    CHECK(calls == 1);
    CHECK(close(dvec(seen), {3.0, 3.0}));
    h.remove();
    (a * 3.0).sum().backward();
    CHECK(calls == 1);
    // Only such tensors: the hook can never run, registration still succeeds (as PyTorch).
    auto h2 = autograd::register_multi_grad_hook({c}, std::function<void(const Tensor&)>([&](const Tensor&) { ++calls; }),
                                                 autograd::mode::any);
    h2.remove();
    // mode::all waits for every tensor's gradient: one that can't get one is refused.
    REQUIRE_THROWS_WITH(autograd::register_multi_grad_hook({a, c}, [](const tensor_list&) {}),
                        Contains("tensor 1 does not require grad"));
}

TEST_CASE("custom Function: graph capture refuses it with a clear error", "[autograd][custom_function][capture]") {
    const auto f = [](Tensor a) { return MyExp::apply(a).sum(); };
    Tensor x = leaf({3}, 26);
    REQUIRE_THROWS_WITH(capture::aot(f, {x}), Contains("MyExpBackward") && Contains("can't be captured"));
    REQUIRE_THROWS_WITH(capture::trace(f, {x}), Contains("can't be captured"));
    auto fn = jit::script(f);
    REQUIRE_THROWS_WITH(fn(x), Contains("can't be captured"));
    // Eager use is unaffected.
    CHECK(close(dvec(f(x)), {exp(x.detach()).sum().item<double>()}));
}

TEST_CASE("custom Function: an output that is a returned input or a view can't be modified in place",
          "[autograd][custom_function][errors]") {
    // PyTorch: "Output 0 of IdentityBackward is a view and is being modified inplace. This view
    // was created inside a custom Function (or because an input was returned as-is) ...". Without
    // the check, y.mul_(3) rewrote b's memory while b kept its old history, so b's gradients
    // were silently wrong afterwards.
    Tensor a = leaf({2}, 27);
    Tensor b = a * 1.0;
    Tensor y = Identity::apply(b);
    const std::vector<double> before = dvec(b);
    REQUIRE_THROWS_WITH(y.mul_(3.0), Contains("Output 0 of IdentityBackward is a view and is being modified inplace") &&
                                         Contains("the custom Function Identity") && Contains("clone"));
    // Nothing was written and the graph is intact: the custom backward (times 5) still runs.
    CHECK(dvec(b) == before);
    CHECK(dvec(y) == before);
    REQUIRE(y.grad_fn());
    CHECK(y.grad_fn()->name() == "IdentityBackward");
    y.sum().backward();
    CHECK(close(dvec(a.grad()), {5.0, 5.0}));

    // PyTorch's remedy, a clone: d/da sum(3 * Identity(a * 1)) = 3 * 5.
    a.set_grad(Tensor{});
    Tensor c = Identity::apply(b).clone();
    c.mul_(3.0);
    c.sum().backward();
    CHECK(close(dvec(a.grad()), {15.0, 15.0}));

    // A view made inside forward is refused alike (it was refused before with the message for
    // views made under no_grad, which forward runs in).
    Tensor m = leaf({2, 3}, 28) * 1.0;
    Tensor t = TransposeFn::apply(m);
    CHECK(t.grad_fn()->name() == "TransposeFnBackward");
    REQUIRE_THROWS_WITH(t.add_(1.0), Contains("Output 0 of TransposeFnBackward is a view and is being modified inplace") &&
                                         Contains("custom Function TransposeFn"));

    // The input modified in place after the Function returned it: the output's history can't be
    // rebuilt without bypassing the custom backward, so using it is refused (PyTorch: the same
    // error, raised when the view's grad_fn is next used).
    Tensor b2 = a * 1.0;
    Tensor y2 = Identity::apply(b2);
    b2.mul_(2.0);
    REQUIRE_THROWS_WITH(y2 * 2.0, Contains("its base or another view of its base has been modified") &&
                                      Contains("custom Function Identity"));

    // Under no_grad the in-place op is not recorded, so it is allowed (as PyTorch).
    Tensor b3 = a * 1.0;
    Tensor y3 = Identity::apply(b3);
    {
        autograd::no_grad guard;
        y3.mul_(3.0);
    }
    CHECK(close(dvec(b3), dvec(a.detach() * 3.0)));

    // Under no_grad nothing is recorded and an input returned as-is comes back detached (PyTorch
    // returns x.detach() for an input that requires grad): not the input itself.
    {
        autograd::no_grad guard;
        Tensor z = Identity::apply(a);
        CHECK(z.impl_ptr() != a.impl_ptr());
        CHECK_FALSE(z.requires_grad());
        CHECK(dvec(z) == dvec(a.detach()));
    }
}

TEST_CASE("custom Function: once_differentiable refuses a double backward", "[autograd][custom_function][errors]") {
    // Single backward: d/dx sum(exp(x)) = exp(x), with backward run in no_grad mode.
    OnceExp::grad_mode_in_backward.clear();
    Tensor x = leaf({3}, 29);
    OnceExp::apply(x).sum().backward();
    CHECK(close(dvec(x.grad()), dvec(exp(x.detach()))));
    CHECK(OnceExp::grad_mode_in_backward == std::vector<bool>{false});
    CHECK(gradcheck([](const tensor_list& in) { return tensor_list{OnceExp::apply(in[0])}; }, {leaf({4}, 30)}));

    // create_graph: the first backward works (and still runs backward in no_grad mode) ...
    OnceExp::grad_mode_in_backward.clear();
    Tensor y = OnceExp::apply(x);
    const auto gx = autograd::grad({(y * y).sum()}, {x}, {}, true, true);
    CHECK(OnceExp::grad_mode_in_backward == std::vector<bool>{false});
    CHECK(close(dvec(gx[0]), dvec(exp(x.detach() * 2.0) * 2.0)));  // d/dx exp(x)^2 = 2 exp(2x)
    REQUIRE(gx[0].requires_grad());
    // ... and differentiating its result again is PyTorch's error, naming the Function.
    REQUIRE_THROWS_WITH(autograd::grad({gx[0].sum()}, {x}),
                        Contains("OnceExpBackward") &&
                            Contains("trying to differentiate twice a function that was marked with once_differentiable"));
    REQUIRE_THROWS_WITH(gx[0].sum().backward(), Contains("trying to differentiate twice"));
    // Also when the incoming gradient does not require grad (PyTorch then returns a gradient
    // that does not require grad, silently dropping the second-order term; graft refuses).
    const auto gx2 = autograd::grad({OnceExp::apply(x).sum()}, {x}, {}, true, true);
    REQUIRE(gx2[0].requires_grad());
    REQUIRE_THROWS_WITH(autograd::grad({gx2[0].sum()}, {x}, {}, false, false, true),
                        Contains("trying to differentiate twice"));

    // The error leaves everything usable: a fresh single backward works.
    x.set_grad(Tensor{});
    OnceExp::apply(x).sum().backward();
    CHECK(close(dvec(x.grad()), dvec(exp(x.detach()))));
}
