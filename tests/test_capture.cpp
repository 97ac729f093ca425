// Graph capture (capture::trace) and ahead-of-time autograd (capture::aot):
// captured graphs, run by the interpreter, match eager graft, including input
// mutation, aliasing and gradients.
#include <catch2/catch.hpp>

#include <limits>
#include <memory>
#include <set>

#include <graft/capture/aot.hpp>
#include <graft/graft.hpp>
#include <graft/ir/ir.hpp>

using namespace graft;

namespace {

Tensor mlp(Tensor x, Tensor w, Tensor b) { return tanh(matmul(x, w) + b).sum(); }

Tensor cross_entropy(Tensor logits, Tensor onehot) {
    return -(log_softmax(logits, 1) * onehot).sum({1}, false).mean();
}

Tensor layer_norm(Tensor x, Tensor g, Tensor b) {
    Tensor mu = mean(x, {-1}, true);
    Tensor d = x - mu;
    Tensor var = mean(d * d, {-1}, true);
    return d / sqrt(var + 1e-5) * g + b;
}

Tensor onehot_rows(std::int64_t n, std::int64_t c, dtype t) {
    Tensor r = zeros({n, c}, t);
    for (std::int64_t i = 0; i < n; ++i) r.select(0, i).select(0, (i * 7 + 1) % c).fill_(1.0);
    return r;
}

/// New random values with the examples' shapes, dtypes and requires_grad (so a graph that
/// baked in the examples' values would fail), except for one-hot inputs kept as they are.
std::vector<Tensor> fresh_like(const std::vector<Tensor>& examples) {
    std::vector<Tensor> r;
    for (const Tensor& e : examples) {
        if (!e.requires_grad() && e.dim() == 2 && e.sum().item<double>() == static_cast<double>(e.size(0))) {
            r.push_back(e);  // one-hot targets
            continue;
        }
        Tensor t = randn(e.sizes(), e.type());
        if (e.requires_grad()) t.requires_grad_();
        r.push_back(t);
    }
    return r;
}

void check_grads_match(const std::function<Tensor(const std::vector<Tensor>&)>& eager,
                       const capture::aot_function& compiled, std::vector<Tensor> examples) {
    std::vector<Tensor> inputs = fresh_like(examples);
    // Compiled: one CompiledFunctionBackward node.
    Tensor out = compiled(inputs)[0];
    REQUIRE(out.grad_fn());
    CHECK(std::string(out.grad_fn()->name()) == "CompiledFunctionBackward");
    out.backward();
    std::vector<Tensor> got;
    for (auto& t : inputs) {
        got.push_back(t.grad());
        t.set_grad(Tensor{});
    }
    eager(inputs).backward();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        INFO("input " << i);
        if (!inputs[i].requires_grad()) continue;
        REQUIRE(got[i].defined());
        CHECK(allclose(got[i], inputs[i].grad(), 1e-9, 1e-9));
        inputs[i].set_grad(Tensor{});
    }
}

}  // namespace

TEST_CASE("capture: traced graphs match eager graft for a suite of functions", "[capture]") {
    manual_seed(11);
    const Tensor x = randn({5, 4}, dtype::float64), w = randn({4, 3}, dtype::float64), b = randn({3}, dtype::float64);
    auto cap = capture::trace(mlp, x, w, b);
    cap.graph().lint();
    CHECK(allclose(cap(x, w, b)[0], mlp(x, w, b)));
    // Another input of the same shape: the graph is not specialised to the example's values.
    const Tensor x2 = randn({5, 4}, dtype::float64);
    CHECK(allclose(cap(x2, w, b)[0], mlp(x2, w, b)));

    const Tensor logits = randn({6, 5}, dtype::float64), oh = onehot_rows(6, 5, dtype::float64);
    auto ce = capture::trace(cross_entropy, logits, oh);
    CHECK(allclose(ce(logits, oh)[0], cross_entropy(logits, oh)));

    const Tensor xs = randn({3, 8}, dtype::float64), g = randn({8}, dtype::float64), bb = randn({8}, dtype::float64);
    auto ln = capture::trace(layer_norm, xs, g, bb);
    CHECK(allclose(ln(xs, g, bb)[0], layer_norm(xs, g, bb)));
}

TEST_CASE("capture: the captured graph prints, parses back and exports DOT", "[capture]") {
    manual_seed(2);
    auto cap = capture::trace(mlp, randn({2, 3}), randn({3, 4}), randn({4}));
    const std::string text = ir::to_string(cap.graph());
    CHECK(text.find("matmul(%x0, %x1)") != std::string::npos);
    CHECK(text.find("tanh(") != std::string::npos);
    auto back = ir::parse(text);
    CHECK(ir::to_string(*back) == text);
    std::ostringstream dot;
    ir::to_dot(cap.graph(), dot);
    CHECK(dot.str().find("matmul") != std::string::npos);
    CHECK(cap.graph().inputs()[0]->type() == ir::Type::tensor_type(ir::TensorType{dtype::float32, {{2, 3}}, {}, {}}));
}

TEST_CASE("capture: in-place updates of an input are functionalized and written back", "[capture]") {
    const auto f = [](Tensor x, Tensor y) {
        x.mul_(2.0);
        x.add_(y);
        return x.sum();
    };
    manual_seed(5);
    const Tensor x = randn({3}), y = randn({3});
    auto cap = capture::trace(f, x, y);
    // The examples are not modified by tracing.
    CHECK(x._version() == 0);
    REQUIRE(cap.meta().mutated_inputs == std::vector<std::size_t>{0});
    CHECK(cap.graph().outputs().size() == 2);  // the sum, then x's new value
    // No in-place node remains in the graph: it is functional.
    for (const ir::Node* n : cap.graph().block()->nodes()) CHECK(n->kind().pure);

    Tensor xe = x.clone(), xc = x.clone();
    const Tensor expect = f(xe, y);
    const auto v0 = xc._version();
    const Tensor got = cap(xc, y)[0];
    CHECK(allclose(got, expect));
    CHECK(equal(xc, xe));             // the caller's tensor was updated like eager
    CHECK(xc._version() > v0);        // and its version counter moved
}

TEST_CASE("capture: writes through a view of an input become put into the input", "[capture]") {
    const auto f = [](Tensor x) {
        Tensor row = x.narrow(0, 1, 1);
        row.mul_(3.0);
        Tensor col = x.select(1, 0);  // read after the write: sees the new values
        return std::vector<Tensor>{col * 1.0, x.sum()};
    };
    manual_seed(8);
    const Tensor x = randn({3, 2});
    auto cap = capture::trace(f, x);
    CHECK(cap.meta().mutated_inputs == std::vector<std::size_t>{0});
    bool has_put = false;
    for (const ir::Node* n : cap.graph().block()->nodes()) has_put = has_put || n->is<ir::kinds::put>();
    CHECK(has_put);
    Tensor xe = x.clone(), xc = x.clone();
    const auto expect = f(xe);
    const auto got = cap(xc);
    CHECK(allclose(got[0], expect[0]));
    CHECK(allclose(got[1], expect[1]));
    CHECK(equal(xc, xe));
}

TEST_CASE("capture: outputs that alias inputs alias the caller's tensors", "[capture]") {
    const auto f = [](Tensor x, Tensor y) { return std::vector<Tensor>{x, x.transpose(0, 1), y + 1.0}; };
    manual_seed(9);
    const Tensor x = randn({2, 3}), y = randn({2, 3});
    auto cap = capture::trace(f, x, y);
    REQUIRE(cap.meta().outputs.size() == 3);
    CHECK(cap.meta().outputs[0].kind == capture::output_kind::alias_of_input);
    CHECK(cap.meta().outputs[1].kind == capture::output_kind::view_of_input);
    CHECK(cap.meta().outputs[2].kind == capture::output_kind::fresh);
    Tensor xc = x.clone();
    auto got = cap(xc, y);
    CHECK(got[0].impl_ptr() == xc.impl_ptr());
    CHECK(got[1].shares_storage_with(xc));
    xc.fill_(4.0);  // a write to the input is visible through the returned view
    CHECK(got[1].sum().item<float>() == Approx(24.0));
    std::ostringstream os;
    os << cap.meta();
    CHECK(os.str().find("view of input 0") != std::string::npos);
}

TEST_CASE("capture: what cannot be captured is a clear error, and state stays usable", "[capture]") {
    const Tensor x = ones({3});
    CHECK_THROWS_WITH(capture::trace([](Tensor t) { return t.sum().item<float>() > 0 ? t : -t; }, x),
                      Catch::Contains("item() reads the value of a traced tensor"));
    CHECK_THROWS_WITH(capture::trace([](Tensor a, Tensor b, Tensor c) { return a + b + c; }, x, x.clone()),
                      Catch::Contains("cannot be called with 2 tensors"));
    CHECK_THROWS_WITH(capture::trace([](Tensor a) { return capture::trace([](Tensor t) { return t; }, a).graph().inputs().size() ? a : a; }, x),
                      Catch::Contains("already tracing"));
    // After the failures, tracing and eager code work as usual.
    auto cap = capture::trace([](Tensor t) { return exp(t); }, x);
    CHECK(allclose(cap(x)[0], exp(x)));
    CHECK(graft::detail::tl_op_observer == nullptr);
}

TEST_CASE("capture::aot: forward and backward graphs give eager autograd's gradients", "[capture]") {
    manual_seed(21);
    SECTION("MLP layer") {
        const Tensor x = randn({5, 4}, dtype::float64), w = randn({4, 3}, dtype::float64).requires_grad_(),
                     b = randn({3}, dtype::float64).requires_grad_();
        for (auto policy : {capture::partition_policy::save_all, capture::partition_policy::recompute_elementwise}) {
            auto a = capture::aot(mlp, {x, w, b}, {policy, {}});
            CHECK(a.grad_inputs == std::vector<std::size_t>{1, 2});
            a.forward->lint();
            a.backward->lint();
            CHECK(a.backward->outputs().size() == 2);
            check_grads_match([](const std::vector<Tensor>& in) { return mlp(in[0], in[1], in[2]); }, a, {x, w, b});
            // gradcheck through the compiled function, in float64.
            CHECK(autograd::gradcheck(
                [&](const autograd::tensor_list& in) { return autograd::tensor_list{a({x, in[0], in[1]})[0]}; },
                {w, b}));
        }
    }
    SECTION("softmax cross-entropy") {
        const Tensor logits = randn({4, 5}, dtype::float64).requires_grad_(), oh = onehot_rows(4, 5, dtype::float64);
        auto a = capture::aot(cross_entropy, {logits, oh});
        check_grads_match([](const std::vector<Tensor>& in) { return cross_entropy(in[0], in[1]); }, a, {logits, oh});
    }
    SECTION("layer norm") {
        const Tensor x = randn({3, 6}, dtype::float64).requires_grad_(), g = randn({6}, dtype::float64).requires_grad_(),
                     b = randn({6}, dtype::float64).requires_grad_();
        const auto f = [](Tensor x, Tensor g, Tensor b) { return (layer_norm(x, g, b) * layer_norm(x, g, b)).sum(); };
        auto a = capture::aot(f, {x, g, b}, {capture::partition_policy::recompute_elementwise, {}});
        check_grads_match([&](const std::vector<Tensor>& in) { return f(in[0], in[1], in[2]); }, a, {x, g, b});
    }
    SECTION("two outputs of different shapes, only one differentiated") {
        // The other output's gradient is zeros of its own shape (the backward graph takes both).
        const auto f = [](Tensor x, Tensor w) { return std::vector<Tensor>{tanh(x * w), (x * w).sum({1})}; };
        const Tensor x = randn({3, 4}, dtype::float64).requires_grad_(), w = randn({3, 4}, dtype::float64).requires_grad_();
        auto a = capture::aot(f, {x, w});
        for (const std::size_t used : {0, 1}) {
            const auto outs = a({x, w});
            REQUIRE(outs.size() == 2);
            CHECK(outs[0].sizes() == int_list{3, 4});
            CHECK(outs[1].sizes() == int_list{3});
            const Tensor seed = randn(outs[used].sizes(), dtype::float64);
            const auto got = autograd::grad({outs[used]}, {x, w}, {seed});
            const auto want = autograd::grad({f(x, w)[used]}, {x, w}, {seed});
            for (std::size_t k = 0; k < 2; ++k) CHECK(allclose(got[k], want[k], 1e-12, 1e-12));
        }
    }
}

TEST_CASE("capture::aot: the recompute policy saves less than save_all", "[capture]") {
    manual_seed(4);
    const auto f = [](Tensor x) { return (tanh(sin(x) * 2.0) * exp(x)).sum(); };
    const Tensor x = randn({16}).requires_grad_();
    auto save = capture::aot(f, {x}, {capture::partition_policy::save_all, {}});
    auto recompute = capture::aot(f, {x}, {capture::partition_policy::recompute_elementwise, {}});
    CHECK(recompute.num_saved < save.num_saved);
    CHECK(recompute.num_saved == 1);  // only x: every elementwise value is recomputed from it
    const Tensor g1 = autograd::grad({save({x})[0]}, {x})[0];
    const Tensor g2 = autograd::grad({recompute({x})[0]}, {x})[0];
    const Tensor ge = autograd::grad({f(x)}, {x})[0];
    CHECK(allclose(g1, ge));
    CHECK(allclose(g2, ge));
}

TEST_CASE("capture::aot: saved values go through saved-tensor hooks, misuse is a clear error", "[capture]") {
    const Tensor x = randn({4}).requires_grad_();
    auto a = capture::aot([](Tensor t) { return (t * t).sum(); }, {x});
    int packed = 0;
    {
        autograd::saved_tensors_hooks hooks([&](const Tensor& t) -> std::any { ++packed; return t; },
                                            [](const std::any& a) { return std::any_cast<Tensor>(a); });
        Tensor y = a({x})[0];
        CHECK(packed == static_cast<int>(a.num_saved));
        y.backward();
    }
    CHECK(allclose(x.grad(), 2.0 * x.detach()));
    CHECK_THROWS_WITH(capture::aot([](Tensor t) { t.mul_(2.0); return t.sum(); }, {randn({2}).requires_grad_()}),
                      Catch::Contains("a leaf Variable that requires grad is being used in an in-place operation"));
    CHECK_THROWS_WITH(capture::aot([](Tensor t) { return t; }, {randn({2}).requires_grad_()}),
                      Catch::Contains("aliases input 0, which requires grad"));
    CHECK_THROWS_WITH(a({x, x}), Catch::Contains("takes 1 inputs, got 2"));
}

TEST_CASE("capture::aot: buffers updated in place and views of inputs behave as in eager code", "[capture]") {
    // A batch-norm-like step: the running mean (a buffer) is updated in place, the output
    // is differentiable in w, and a view of the buffer is returned too.
    const auto f = [](Tensor x, Tensor w, Tensor running) {
        Tensor m = mean(x, {0}, false);
        running.mul_(0.9);
        running.add_(m * 0.1);
        Tensor y = ((x - m) * w).sum();
        return std::vector<Tensor>{y, running.narrow(0, 1, 2)};
    };
    manual_seed(30);
    const Tensor x = randn({6, 4}, dtype::float64), w = randn({4}, dtype::float64).requires_grad_();
    const Tensor running0 = randn({4}, dtype::float64);
    auto a = capture::aot(f, {x, w, running0});
    REQUIRE(a.meta.mutated_inputs == std::vector<std::size_t>{2});
    CHECK(a.meta.outputs[1].kind == capture::output_kind::view_of_input);

    Tensor run_c = running0.clone(), run_e = running0.clone();
    const auto got = a({x, w, run_c});
    const auto expect = f(x, w, run_e);
    CHECK(allclose(got[0], expect[0]));
    CHECK(equal(run_c, run_e));                       // the buffer was written back
    CHECK(got[1].shares_storage_with(run_c));         // the returned view aliases the caller's buffer
    CHECK(equal(got[1], expect[1]));
    got[0].backward();
    const Tensor gw = w.grad();
    w.set_grad(Tensor{});
    Tensor run_e2 = running0.clone();
    f(x, w, run_e2)[0].backward();
    CHECK(allclose(gw, w.grad()));
    w.set_grad(Tensor{});
}

TEST_CASE("capture::aot: in-place ops on views inside the function (CopySlices) are captured, not baked in", "[capture]") {
    const auto f = [](Tensor x) {
        Tensor y = x * 2.0;
        Tensor v = y.narrow(0, 0, 1);
        v.mul_(x.narrow(0, 2, 1));  // in-place on a view of an intermediate: CopySlices in eager
        return (y * y).sum();
    };
    manual_seed(40);
    const Tensor example = randn({3, 2}, dtype::float64).requires_grad_();
    auto a = capture::aot(f, {example});
    // Every constant of the backward graph is an index or a number, never data of the example.
    for (const ir::Node* n : a.backward->block()->nodes()) {
        if (!n->is<ir::kinds::constant>()) continue;
        const auto* t = std::get_if<Tensor>(&n->attr("value"));
        if (t) CHECK((t->type() == dtype::int64 || t->sum().item<double>() == 0.0));
    }
    check_grads_match([&](const std::vector<Tensor>& in) { return f(in[0]); }, a, {example});
}

TEST_CASE("capture: memory filled outside graft's ops is refused, not baked in", "[capture]") {
    const Tensor x = ones({3});
    CHECK_THROWS_WITH(capture::trace(
                          [](Tensor t) {
                              Tensor b = empty({3});
                              for (int i = 0; i < 3; ++i) b.data_ptr<float>()[i] = 1.0f;
                              return t + b;
                          },
                          x),
                      Catch::Contains("filled by code graph capture cannot see"));
    // Factories and buffers written with graft ops are fine: factories become constants.
    auto cap = capture::trace(
        [](Tensor t) {
            Tensor b = empty({3});
            b.copy_(t * 2.0);
            return b + ones({3});
        },
        x);
    const Tensor y = tensor({1.0f, 2.0f, 3.0f});
    CHECK(allclose(cap(y)[0], y * 2.0 + 1.0));
}

// ---------------------------------------------------------------- inputs that share memory

namespace {

/// Writes into its first input and reads the others: aliasing changes the result.
Tensor add_then_read(Tensor a, Tensor b) {
    a.add_(b);
    return a * b + 1.0;
}

}  // namespace

TEST_CASE("capture: the same tensor in two slots is captured as one graph input and matches eager", "[capture]") {
    const Tensor x = arange(1.0, 5.0, 1.0, dtype::float64);
    const auto cap = capture::trace(add_then_read, std::vector<Tensor>{x, x});
    CHECK(allclose(x, arange(1.0, 5.0, 1.0, dtype::float64)));  // the examples are not modified
    REQUIRE(cap.meta().alias_groups.size() == 1);
    CHECK(cap.graph().inputs().size() == 1);
    CHECK(cap.meta().mutated_inputs == std::vector<std::size_t>{0});
    // Eager: a += a doubles x, then a * a + 1 = (2x)^2 + 1, and x is left doubled.
    Tensor run = arange(0.5, 2.5, 0.5, dtype::float64), eager = run.clone();
    const Tensor want = add_then_read(eager, eager);
    const Tensor got = cap(std::vector<Tensor>{run, run})[0];
    CHECK(allclose(got, want, 0, 0));
    CHECK(allclose(run, eager, 0, 0));
    std::ostringstream os;
    os << cap.meta();
    CHECK(os.str().find("alias group") != std::string::npos);
    // Called with distinct tensors, the graph captured for one memory would be wrong: refused.
    const Tensor a = ones({5}, dtype::float64), b = ones({5}, dtype::float64);
    CHECK_THROWS_WITH(cap(std::vector<Tensor>{a, b}), Catch::Contains("share memory differently") &&
                                                          Catch::Contains("inputs 0, 1 shared memory"));
    CHECK(allclose(a, ones({5}, dtype::float64)));  // nothing was written
}

TEST_CASE("capture: overlapping views are read and written through a synthetic base", "[capture]") {
    const auto f = [](Tensor a, Tensor b) {
        a.mul_(2.0);  // b's first two elements are a's last two
        return b + 1.0;
    };
    const Tensor base = arange(0.0, 6.0, 1.0, dtype::float64);
    const auto cap = capture::trace(f, std::vector<Tensor>{base.narrow(0, 0, 4), base.narrow(0, 2, 4)});
    REQUIRE(cap.meta().alias_groups.size() == 1);
    CHECK(cap.meta().alias_groups[0].numel == 6);
    CHECK(cap.meta().alias_groups[0].offsets == std::vector<std::int64_t>{0, 2});
    Tensor run = randn({8}, dtype::float64), eager = run.clone();
    const Tensor got = cap(std::vector<Tensor>{run.narrow(0, 1, 4), run.narrow(0, 3, 4)})[0];
    const Tensor want = f(eager.narrow(0, 1, 4), eager.narrow(0, 3, 4));
    CHECK(allclose(got, want, 0, 0));
    CHECK(allclose(run, eager, 0, 0));  // the write landed in the caller's memory, element 0 and 7 untouched
    // Another overlap (offset 1 instead of 2) is another aliasing pattern.
    CHECK_THROWS_WITH(cap(std::vector<Tensor>{run.narrow(0, 0, 4), run.narrow(0, 1, 4)}),
                      Catch::Contains("share memory differently"));
}

TEST_CASE("capture: a graph captured for distinct inputs refuses aliased ones only when it writes", "[capture]") {
    const auto writes = capture::trace(add_then_read, ones({3}), ones({3}));
    const Tensor x = full({3}, 2.0);
    CHECK_THROWS_WITH(writes(x, x), Catch::Contains("now: inputs 0 and 1 share memory"));
    CHECK(allclose(x, full({3}, 2.0)));
    // A graph that writes nothing computes the same for any aliasing: f(x, x) just works.
    const auto reads = capture::trace([](Tensor a, Tensor b) { return a * b + b; }, ones({3}), ones({3}));
    CHECK(allclose(reads(x, x)[0], x * x + x, 0, 0));
}

TEST_CASE("capture: gradients through a function captured with the same tensor twice", "[capture]") {
    const auto f = [](Tensor a, Tensor b) { return (a * b + a).sum(); };
    Tensor x = randn({4}, dtype::float64);
    x.requires_grad_();
    const auto cap = capture::trace(f, std::vector<Tensor>{x, x});
    REQUIRE(cap.meta().alias_groups.size() == 1);
    const Tensor y = cap(std::vector<Tensor>{x, x})[0];
    const auto got = autograd::grad({y}, {x});
    const auto want = autograd::grad({f(x, x)}, {x});
    CHECK(allclose(got[0], want[0], 1e-12, 1e-12));  // 2x + 1: both slots' paths reach x once each
    CHECK(allclose(got[0], 2.0 * x.detach() + 1.0, 1e-12, 1e-12));
}

TEST_CASE("capture::aot: aliased buffers are supported, aliased inputs that require grad are refused", "[capture]") {
    const auto step = [](Tensor w, Tensor buf, Tensor view) {
        buf.add_(1.0);  // `view` sees the write
        return (w * view).sum();
    };
    Tensor w = randn({3}, dtype::float64);
    w.requires_grad_();
    Tensor buf = zeros({4}, dtype::float64);
    const auto a = capture::aot(step, std::vector<Tensor>{w, buf, buf.narrow(0, 1, 3)});
    CHECK(allclose(buf, zeros({4}, dtype::float64)));
    Tensor b1 = arange(0.0, 4.0, 1.0, dtype::float64), b2 = b1.clone();
    const Tensor y = a(std::vector<Tensor>{w, b1, b1.narrow(0, 1, 3)})[0];
    const Tensor ye = step(w, b2, b2.narrow(0, 1, 3));
    CHECK(allclose(y, ye, 1e-12, 1e-12));
    CHECK(allclose(b1, b2, 0, 0));
    CHECK(allclose(autograd::grad({y}, {w})[0], autograd::grad({ye}, {w})[0], 1e-12, 1e-12));
    CHECK_THROWS_WITH(capture::aot([](Tensor p, Tensor q) { return (p * q).sum(); }, std::vector<Tensor>{w, w}),
                      Catch::Contains("aliased inputs that require grad are supported by jit::script"));
}

TEST_CASE("capture::aot: the joint graph is cleaned before partitioning, so equal values are saved once",
          "[capture]") {
    const auto f = [](Tensor p, Tensor y) { return ((p - y) * (p - y)).mean(); };
    Tensor p = randn({8, 1}, dtype::float64), y = randn({8, 1}, dtype::float64);
    p.requires_grad_();
    const auto a = capture::aot(f, p, y);
    const auto count = [](const ir::Graph& g, std::string_view kind) {
        std::size_t n = 0;
        for (const ir::Node* node : g.block()->nodes()) n += node->kind().name == kind;
        return n;
    };
    CHECK(count(*a.forward, "sub") == 1);  // traced twice, computed once
    CHECK(a.num_saved == 1);               // p - y, saved once (mul's backward reads it twice)
    for (const ir::Node* n : a.backward->block()->nodes())  // no reshape to the sizes a value already has
        if (n->kind().name == "reshape") CHECK(n->input(0)->type().tensor.sizes != n->output()->type().tensor.sizes);
    const Tensor got = autograd::grad({a(p, y)[0]}, {p})[0];
    const Tensor want = autograd::grad({f(p, y)}, {p})[0];
    CHECK(allclose(got, want, 1e-12, 1e-12));
}

TEST_CASE("capture::aot: a linear layer's gradients are plain tensors, clamps are lowered, masks recomputed",
          "[capture]") {
    // x @ w.t() + b, then a clamp and a relu-like mask: the weight gradient would be a transpose
    // and the bias gradient a reshape of a keepdim sum (views AccumulateGrad copies); the
    // backward instead computes both as plain results. clamp runs as maximum/minimum, and the
    // bool mask `h > 0` is recomputed in the backward from the saved h, not saved.
    const auto f = [](Tensor x, Tensor w, Tensor b) {
        const Tensor h = matmul(x, w.t()) + b;
        return (where(h > 0.0, h * h, h).clamp(-1.0, 2.0)).sum();
    };
    manual_seed(5);
    const Tensor x = randn({6, 3}, dtype::float64), w = randn({4, 3}, dtype::float64).requires_grad_(),
                 b = randn({4}, dtype::float64).requires_grad_();
    const auto a = capture::aot(f, {x, w, b});
    for (const ir::Value* v : a.backward->outputs()) {
        INFO(ir::to_string(*a.backward));
        REQUIRE(v->node() != nullptr);
        CHECK_FALSE(v->node()->kind().is_view);  // matmul and sum, not transpose and reshape
    }
    for (const ir::Graph* g : {a.forward.get(), a.backward.get()})
        for (const ir::Node* n : g->block()->nodes()) CHECK(n->kind().name != "clamp");
    for (const ir::Value* v : a.forward->outputs())  // the saved values hold no bool mask
        CHECK(v->type().tensor.scalar_type != std::optional<dtype>(dtype::bool_));
    // The gradients are eager autograd's, bit for bit (the same kernels in the same order), and
    // AccumulateGrad keeps the backward's tensors without a copy: contiguous, not views.
    Tensor w1 = w.detach().requires_grad_(), b1 = b.detach().requires_grad_();
    Tensor w2 = w.detach().requires_grad_(), b2 = b.detach().requires_grad_();
    a({x, w1, b1})[0].backward();
    f(x, w2, b2).backward();
    CHECK(equal(w1.grad(), w2.grad()));
    CHECK(equal(b1.grad(), b2.grad()));
    CHECK((w1.grad().is_contiguous() && !w1.grad().is_view() && !b1.grad().is_view()));
}

TEST_CASE("capture::aot: a call with another signature captures again (one capture per signature)",
          "[capture]") {
    const auto f = [](Tensor x, Tensor w) { return tanh(matmul(x, w)).mean(); };
    Tensor w = randn({3, 2}, dtype::float64);
    w.requires_grad_();
    const auto a = capture::aot(f, randn({8, 3}, dtype::float64), w);
    const auto check_call = [&](std::int64_t batch, bool x_grad) {
        Tensor x = randn({batch, 3}, dtype::float64);
        if (x_grad) x.requires_grad_();
        const Tensor y = a(x, w)[0], ye = f(x, w);
        CHECK(allclose(y, ye, 1e-12, 1e-12));
        std::vector<autograd::grad_input> wrt{w};
        if (x_grad) wrt.emplace_back(x);
        const auto got = autograd::grad({y}, wrt), want = autograd::grad({ye}, wrt);
        for (std::size_t k = 0; k < got.size(); ++k) CHECK(allclose(got[k], want[k], 1e-12, 1e-12));
    };
    check_call(8, false);
    CHECK(a.recaptures() == 0);
    check_call(5, false);  // another batch size: captured again (mean divides by 5, not 8)
    CHECK(a.recaptures() == 1);
    check_call(8, false);
    check_call(5, false);
    CHECK(a.recaptures() == 1);
    check_call(8, true);  // x requires grad now: the first capture has no gradient for it
    CHECK(a.recaptures() == 2);
    // A function that cannot be copied is not kept: a mismatch names both signatures.
    auto owned = std::make_unique<double>(2.0);
    const auto g = capture::aot([p = std::move(owned)](Tensor x) { return (x * *p).sum(); },
                                randn({4, 3}, dtype::float64));
    CHECK_THROWS_WITH(g(randn({5, 3}, dtype::float64)),
                      Catch::Contains("captured for (Double(4, 3)), got (Double(5, 3))"));
    CHECK(allclose(g(ones({4, 3}, dtype::float64))[0], full({}, 24.0, dtype::float64)));
}

TEST_CASE("ir::interpret: an input of another type is named in the message", "[capture]") {
    const auto cap = capture::trace([](Tensor x) { return x * 2.0; }, ones({8, 3}));
    CHECK_THROWS_WITH(ir::interpret(cap.graph(), std::vector<ir::ivalue>{ones({5, 3})}),
                      Catch::Contains("expects Float(8, 3), got Float(5, 3)"));
}

TEST_CASE("capture::aot: dynamic_dims give one capture with symbolic sizes for every batch size", "[capture]") {
    const auto f = [](Tensor x, Tensor y, Tensor w) {
        const Tensor d = matmul(x, w) - y;
        return (d * d).mean();
    };
    Tensor w = randn({3, 2}, dtype::float64);
    w.requires_grad_();
    capture::aot_options o;
    o.dynamic_dims = {{0, 0}, {1, 0}};  // the batch dimension of x and y
    const auto a = capture::aot(f, {randn({8, 3}, dtype::float64), randn({8, 2}, dtype::float64), w}, o);
    REQUIRE(a.forward_sizes);
    REQUIRE(a.backward_sizes);
    CHECK(a.size_groups.size() == 1);  // x's and y's batch: one symbol
    CHECK(ir::to_string(*a.forward).find("Double(*, 3)") != std::string::npos);
    for (std::int64_t n : {8, 5, 13, 2, 1}) {
        Tensor x = randn({n, 3}, dtype::float64), y = randn({n, 2}, dtype::float64);
        x.requires_grad_();
        const Tensor loss = a(x, y, w)[0], want = f(x, y, w);
        CHECK(allclose(loss, want, 1e-12, 1e-12));
        const auto g = autograd::grad({loss}, {x, w}), ge = autograd::grad({want}, {x, w});
        CHECK(allclose(g[0], ge[0], 1e-12, 1e-12));  // the mean divides by 2n, computed per call
        CHECK(allclose(g[1], ge[1], 1e-12, 1e-12));
    }
    CHECK(a.recaptures() == 2);  // x requiring grad (not in the example), and then size 1 (specialized)
    // Bad requests are clear errors.
    CHECK_THROWS_WITH(capture::aot(f, {randn({1, 3}), randn({1, 2}), randn({3, 2})},
                                   capture::aot_options{capture::partition_policy::save_all, {{0, 0}}}),
                      Catch::Contains("sizes 0 and 1 are specialized"));
    CHECK_THROWS_WITH(capture::aot(f, {randn({4, 3}), randn({4, 2}), randn({3, 2})},
                                   capture::aot_options{capture::partition_policy::save_all, {{0, 2}}}),
                      Catch::Contains("dynamic dimension 2 of input 0 does not exist"));
}

// ---------------------------------------------------------------- SymInt: sizes as expressions

TEST_CASE("SymInt: outside capture a plain number, the _symint ops equal their int forms", "[capture]") {
    const Tensor x = randn({6, 4}, dtype::float64);
    const SymInt n = x.sym_size(0);
    CHECK_FALSE(n.is_symbolic());  // no capture running
    CHECK(n.value() == 6);
    CHECK(((n + 2) * 3 - n / 4 + n % 4).value() == (6 + 2) * 3 - 6 / 4 + 6 % 4);
    // Checked arithmetic (PyTorch raises): a zero divisor and int64 overflow are graft::error.
    CHECK_THROWS_WITH(SymInt(7) / SymInt(0), Catch::Contains("division by zero"));
    CHECK_THROWS_WITH(n % (n - n), Catch::Contains("division by zero"));
    CHECK_THROWS_WITH(x.narrow_symint(0, 0, n / (n - n)), Catch::Contains("division by zero"));
    constexpr std::int64_t big = std::numeric_limits<std::int64_t>::max();
    CHECK_THROWS_WITH(SymInt(big) + 1, Catch::Contains("overflows int64"));
    CHECK_THROWS_WITH(SymInt(-big) - 2, Catch::Contains("overflows int64"));
    CHECK_THROWS_WITH(SymInt(big / 2) * 3, Catch::Contains("overflows int64"));
    CHECK_THROWS_WITH(SymInt(-big - 1) / -1, Catch::Contains("overflows int64"));
    CHECK((SymInt(-big - 1) % -1).value() == 0);
    CHECK(x.sym_sizes() == sym_int_list{6, 4});
    CHECK(equal(x.reshape_symint({n / 2, -1}), x.reshape({3, 8})));
    CHECK(equal(x.view_symint({x.sym_size(1), n}), x.view({4, 6})));
    CHECK(equal(x.narrow_symint(0, 1, n - 2), x.narrow(0, 1, 4)));
    CHECK(equal(x.unsqueeze(0).expand_symint({2, n, -1}), x.unsqueeze(0).expand({2, 6, 4})));
    CHECK_THROWS_WITH(x.reshape_symint({n + 1, -1}), Catch::Contains("reshape"));
}

TEST_CASE("SymInt: capture records sizes as written (-1 kept) and the SymInt expressions", "[capture]") {
    bool symbolic_inside = false;
    const auto f = [&](Tensor x) {
        symbolic_inside = x.sym_size(0).is_symbolic();
        return x.reshape({-1, 2}).narrow_symint(0, 1, x.sym_size(0) * 2 - 3) * 2.0;
    };
    const auto cap = capture::trace(f, {randn({4, 4}, dtype::float64)});
    CHECK(symbolic_inside);
    const std::string text = ir::to_string(cap.graph());
    INFO(text);
    CHECK(text.find("sizes=[-1, 2]") != std::string::npos);  // -1 as written, inferred per call
    REQUIRE(cap.size_hints().size() == 1);
    const ir::size_hint& h = cap.size_hints()[0];
    REQUIRE(h.leaves.size() == 1);
    CHECK(h.leaves[0] == std::vector<std::int64_t>{4});
    ir::size_expr e;
    e.program = h.program;
    CHECK(e.eval(std::vector<std::int64_t>{4}) == 5);  // s0 * 2 - 3 at s0 = 4
    CHECK(e.eval(std::vector<std::int64_t>{10}) == 17);
    CHECK(e.str() == "s0 * 2 - 3");
    // The capture runs at its own sizes with the interpreter: -1 is inferred again.
    const Tensor x = randn({4, 4}, dtype::float64);
    CHECK(equal(cap(x)[0], f(x)));
}

TEST_CASE("SymInt: size expressions print with the parentheses they need", "[capture]") {
    using op = ir::size_term::op;
    ir::size_expr e;
    // (s0 - 1) / 2 + s1 % (s0 - s1)
    e.program = {{op::symbol, 0, 0}, {op::constant, 1, 0}, {op::sub, 0, 0}, {op::constant, 2, 0}, {op::div, 0, 0},
                 {op::symbol, 0, 1}, {op::symbol, 0, 0}, {op::symbol, 0, 1}, {op::sub, 0, 0}, {op::mod, 0, 0},
                 {op::add, 0, 0}};
    CHECK(e.str() == "(s0 - 1) / 2 + s1 % (s0 - s1)");
    CHECK(e.eval(std::vector<std::int64_t>{9, 4}) == (9 - 1) / 2 + 4 % (9 - 4));
    // % 0 is an error, as SymInt's (never a made-up size).
    CHECK_THROWS_WITH(e.eval(std::vector<std::int64_t>{4, 4}), Catch::Contains("divides by zero"));
}

TEST_CASE("SymInt: capture::aot with dynamic_dims makes SymInt sizes symbolic in forward and backward",
          "[capture]") {
    // The interior of each row: a length no product of sizes explains (s1 - 2).
    const auto f = [](Tensor x, Tensor w) {
        const Tensor inner = x.narrow_symint(1, 1, x.sym_size(1) - 2);
        return (tanh(inner * w.narrow_symint(0, 1, w.sym_size(0) - 2)) * inner).sum();
    };
    capture::aot_options o;
    o.dynamic_dims = {{0, 1}, {1, 0}};  // x's columns and w's length: one symbol (duck sizing)
    Tensor w0 = randn({6}, dtype::float64);
    w0.requires_grad_();
    Tensor x0 = randn({3, 6}, dtype::float64);
    x0.requires_grad_();
    const auto a = capture::aot(f, {x0, w0}, o);
    REQUIRE(a.forward_sizes);
    REQUIRE(a.backward_sizes);
    INFO(a.forward_sizes->describe(*a.forward));
    CHECK(a.forward_sizes->describe(*a.forward).find("s0 - 2") != std::string::npos);
    for (std::int64_t n : {6, 9, 4, 17}) {
        Tensor x = randn({3, n}, dtype::float64), w = randn({n}, dtype::float64);
        x.requires_grad_();
        w.requires_grad_();
        const Tensor y = a(x, w)[0], want = f(x, w);
        CHECK(allclose(y, want, 1e-12, 1e-12));
        const auto g = autograd::grad({y}, {x, w}), ge = autograd::grad({want}, {x, w});
        CHECK(allclose(g[0], ge[0], 1e-12, 1e-12));
        CHECK(allclose(g[1], ge[1], 1e-12, 1e-12));
    }
    CHECK(a.recaptures() == 0);  // one capture for every width
    // Written with size(), s1 - 2 is found too (a * s + b fits the traces); the first half
    // rounded up, (s1 + 1) / 2, is no such function: with size() dynamic_dims are refused with
    // the reason, with sym_size() the graph computes it.
    const auto g = [](Tensor x, Tensor w) {
        const Tensor inner = x.narrow(1, 1, x.size(1) - 2);
        return (tanh(inner * w.narrow(0, 1, w.size(0) - 2)) * inner).sum();
    };
    CHECK(capture::aot(g, {x0, w0}, o).forward_sizes);
    const auto half_sym = [](Tensor x) { return (x.narrow_symint(1, 0, (x.sym_size(1) + 1) / 2) * 2.0).sum(); };
    const auto half_int = [](Tensor x) { return (x.narrow(1, 0, (x.size(1) + 1) / 2) * 2.0).sum(); };
    capture::aot_options oh;
    oh.dynamic_dims = {{0, 1}};
    CHECK_THROWS_WITH(capture::aot(half_int, {x0}, oh), Catch::Contains("not a function of input sizes graft can infer"));
    const auto ah = capture::aot(half_sym, {x0}, oh);
    REQUIRE(ah.backward_sizes);
    for (std::int64_t n : {6, 7, 2, 13}) {
        Tensor x = randn({3, n}, dtype::float64);
        x.requires_grad_();
        const Tensor y = ah(x)[0], want = half_sym(x);
        CHECK(allclose(y, want, 1e-12, 1e-12));
        CHECK(allclose(autograd::grad({y}, {x})[0], autograd::grad({want}, {x})[0], 1e-12, 1e-12));
    }
    CHECK(ah.recaptures() == 0);
}

// ---------------------------------------------------------------- control flow: graft::cond

namespace {

Tensor branchy(Tensor x, Tensor w) {
    return cond(
        (x * w).sum() > 0.0, [](Tensor a, Tensor b) { return tanh(a * b) + a; },
        [](Tensor a, Tensor b) { return a * a - b * 2.0; }, x, w);
}

Tensor branchy_reference(const Tensor& x, const Tensor& w) {
    return (x * w).sum().item<double>() > 0 ? tanh(x * w) + x : x * x - w * 2.0;
}

}  // namespace

TEST_CASE("cond: eager calls run the branch the predicate selects, autograd records through it", "[capture]") {
    for (double sign : {1.0, -1.0}) {
        Tensor x = randn({5}, dtype::float64).abs() * sign, w = randn({5}, dtype::float64).abs();
        x.requires_grad_();
        const Tensor y = branchy(x, w);
        const Tensor want = branchy_reference(x, w);
        CHECK(allclose(y, want, 0, 0));
        const auto g = autograd::grad({y.sum()}, {x}), ge = autograd::grad({want.sum()}, {x});
        CHECK(allclose(g[0], ge[0], 0, 0));
    }
    // A C++ bool picks the branch directly; a predicate that is not a one-element bool is refused.
    CHECK(allclose(cond(true, [](Tensor a) { return a + 1.0; }, [](Tensor a) { return a; }, ones({2})),
                   full({2}, 2.0)));
    CHECK_THROWS_WITH((void)cond(ones({2}) > 0.0, [](Tensor a) { return a; }, [](Tensor a) { return a; }, ones({2})),
                      Catch::Contains("one-element bool tensor"));
    CHECK_THROWS_WITH((void)cond(ones({}), [](Tensor a) { return a; }, [](Tensor a) { return a; }, ones({2})),
                      Catch::Contains("one-element bool tensor, got float32"));
}

TEST_CASE("cond: capture::trace records both branches as a prim::If on the predicate's value", "[capture]") {
    const Tensor x = ones({4}, dtype::float64), w = full({4}, 0.5, dtype::float64);
    const auto cap = capture::trace(branchy, x, w);
    std::size_t ifs = 0;
    for (const ir::Node* n : cap.graph().block()->nodes())
        if (n->is<ir::kinds::if_>()) {
            ++ifs;
            CHECK(n->blocks().size() == 2);
            CHECK(n->input(0)->type().tensor.scalar_type == dtype::bool_);
        }
    CHECK(ifs == 1);
    // The graph takes the branch each call's data selects (the example took the true branch).
    for (double sign : {1.0, -1.0, 1.0}) {
        const Tensor xs = randn({4}, dtype::float64).abs() * sign, ws = randn({4}, dtype::float64).abs();
        CHECK(allclose(cap(xs, ws)[0], branchy_reference(xs, ws), 0, 0));
    }
    // The text form parses back and runs the same.
    const auto parsed = ir::parse(ir::to_string(cap.graph()));
    const Tensor xn = -ones({4}, dtype::float64);
    CHECK(allclose(ir::interpret(*parsed, std::vector<Tensor>{xn, w})[0], branchy_reference(xn, w), 0, 0));
    // A branch that writes into a tensor is refused under capture (branches must be functional).
    const auto writes = [](Tensor a) {
        return cond(a.sum() > 0.0, [](Tensor t) { return t.mul_(2.0); }, [](Tensor t) { return t; }, a);
    };
    CHECK_THROWS_WITH(capture::trace(writes, x), Catch::Contains("branch writes into a tensor"));
    CHECK(graft::detail::tl_op_observer == nullptr);
}

TEST_CASE("cond: capture::aot differentiates each run's branch (the backward is a prim::If too)", "[capture]") {
    Tensor xg = ones({4}, dtype::float64), w = full({4}, 0.5, dtype::float64);
    xg.requires_grad_();
    const auto a = capture::aot(branchy, xg, w);
    const auto count_ifs = [](const ir::Graph& g) {
        std::size_t n = 0;
        for (const ir::Node* m : g.block()->nodes()) n += m->is<ir::kinds::if_>();
        return n;
    };
    CHECK(count_ifs(*a.forward) == 1);
    CHECK(count_ifs(*a.backward) == 1);
    for (double sign : {1.0, -1.0, 1.0, -1.0}) {
        Tensor x = randn({4}, dtype::float64).abs() * sign;
        x.requires_grad_();
        const Tensor ws = randn({4}, dtype::float64).abs();
        const Tensor y = a(x, ws)[0], want = branchy_reference(x, ws);
        CHECK(allclose(y, want, 1e-12, 1e-12));
        const Tensor g = autograd::grad({y.sum()}, {x})[0];
        CHECK(allclose(g, autograd::grad({want.sum()}, {x})[0], 1e-12, 1e-12));
        for (std::int64_t j : {0, 3}) {  // finite differences
            const double h = 1e-6;
            Tensor p = x.detach().clone(), m = x.detach().clone();
            p.select(0, j).add_(h);
            m.select(0, j).sub_(h);
            const double fd =
                (branchy_reference(p, ws).sum().item<double>() - branchy_reference(m, ws).sum().item<double>()) / (2 * h);
            CHECK(g.select(0, j).item<double>() == Approx(fd).epsilon(1e-6));
        }
    }
}

// ---------------------------------------------------------------- control flow: while_loop, fori_loop

namespace {

/// Halves x until its norm is below 1; counts the steps: a trip count that depends on the data.
std::vector<Tensor> shrink(Tensor x, Tensor steps) {
    return while_loop([](Tensor v, Tensor) { return (v * v).sum() > 1.0; },
                      [](Tensor v, Tensor n) { return std::vector<Tensor>{v * 0.5, n + 1.0}; }, x, steps);
}

std::vector<Tensor> shrink_reference(Tensor x) {
    double n = 0;
    while ((x * x).sum().item<double>() > 1.0) {
        x = x * 0.5;
        n += 1;
    }
    return {x, full({}, n, dtype::float64)};
}

}  // namespace

TEST_CASE("capture::aot differentiates while_loop: data-dependent trip counts, closed-over weights", "[capture]") {
    // The trip count depends on x and w; the body reads w, which requires grad, from outside.
    const auto f = [](Tensor x, Tensor w) {
        const Tensor r = while_loop([](Tensor v) { return (v * v).sum() > 1.0; },
                                    [&w](Tensor v) { return v * 0.6 + sin(v * w) * 0.1; }, x);
        return (r * w).sum() + (r * r).sum();
    };
    const auto trips = [](const Tensor& x, const Tensor& w) {
        Tensor v = x.detach();
        int n = 0;
        for (; (v * v).sum().item<double>() > 1.0; ++n) v = v * 0.6 + sin(v * w.detach()) * 0.1;
        return n;
    };
    Tensor w = randn({4}, dtype::float64);
    w.requires_grad_();
    Tensor x0 = randn({4}, dtype::float64) * 3.0;
    x0.requires_grad_();
    const auto a = capture::aot(f, {x0, w});
    CHECK(ir::to_string(*a.backward).find("prim::Loop") != std::string::npos);  // the backward loops too
    std::set<int> seen;
    for (double scale : {3.0, 10.0, 0.2, 30.0}) {
        Tensor x = randn({4}, dtype::float64) * scale;
        x.requires_grad_();
        seen.insert(trips(x, w));
        const Tensor y = a(x, w)[0], want = f(x, w);
        CHECK(allclose(y, want, 1e-12, 1e-12));
        const auto g = autograd::grad({y}, {x, w}), ge = autograd::grad({want}, {x, w});
        CHECK(allclose(g[0], ge[0], 1e-10, 1e-12));
        CHECK(allclose(g[1], ge[1], 1e-10, 1e-12));
        // Finite differences through the compiled function (the trip count stays put nearby).
        CHECK(autograd::gradcheck([&](const autograd::tensor_list& in) { return a(in[0], in[1]); }, {x, w}));
    }
    CHECK(seen.size() >= 3);  // the one capture served several trip counts, 0 included
    CHECK(seen.count(0) == 1);
    // A tensor the loop reads, written after the loop: its gradient would read the new
    // contents, so aot refuses it instead.
    const auto h = [](Tensor x, Tensor wt) {
        Tensor b = wt * 1.0;
        const Tensor r = while_loop([](Tensor v) { return (v * v).sum() > 1.0; },
                                    [&b](Tensor v) { return v * 0.5 + b * 0.01; }, x);
        b.mul_(2.0);
        return (r * b).sum();
    };
    CHECK_THROWS_WITH(capture::aot(h, {x0, w}), Catch::Contains("writes into a tensor that a while_loop reads"));
}

TEST_CASE("capture::aot differentiates fori_loop (a recurrent cell) and cond reading closed-over weights",
          "[capture]") {
    // h = tanh(W h + u) five times: W and u are read from outside the loop.
    const auto rnn = [](Tensor h, Tensor wm, Tensor u) {
        const Tensor r = fori_loop(0, 5, [&](Tensor, Tensor hh) { return tanh(matmul(wm, hh) + u); }, h);
        return (r * r).sum();
    };
    Tensor h = randn({3}, dtype::float64), wm = randn({3, 3}, dtype::float64) * 0.5, u = randn({3}, dtype::float64);
    h.requires_grad_();
    wm.requires_grad_();
    u.requires_grad_();
    const auto a = capture::aot(rnn, {h, wm, u});
    for (int k = 0; k < 3; ++k) {
        Tensor hk = randn({3}, dtype::float64), wk = randn({3, 3}, dtype::float64) * 0.5;
        hk.requires_grad_();
        wk.requires_grad_();
        const Tensor y = a(hk, wk, u)[0], want = rnn(hk, wk, u);
        CHECK(allclose(y, want, 1e-12, 1e-12));
        const auto g = autograd::grad({y}, {hk, wk, u}), ge = autograd::grad({want}, {hk, wk, u});
        for (std::size_t i = 0; i < 3; ++i) CHECK(allclose(g[i], ge[i], 1e-10, 1e-12));
    }
    // cond whose branches read w from outside (not an operand): w gets its gradient.
    const auto c = [](Tensor x, Tensor wt) {
        return cond(x.sum() > 0.0, [&](Tensor v) { return v * wt; }, [&](Tensor v) { return v - wt * wt; }, x).sum();
    };
    Tensor x = randn({4}, dtype::float64).abs(), wt = randn({4}, dtype::float64);
    x.requires_grad_();
    wt.requires_grad_();
    const auto ac = capture::aot(c, {x, wt});
    for (double sign : {1.0, -1.0}) {
        Tensor xs = (x.detach() * sign);
        xs.requires_grad_();
        const Tensor y = ac(xs, wt)[0], want = c(xs, wt);
        CHECK(allclose(y, want, 1e-12, 1e-12));
        const auto g = autograd::grad({y}, {xs, wt}), ge = autograd::grad({want}, {xs, wt});
        CHECK(allclose(g[0], ge[0], 1e-12, 1e-12));
        CHECK(allclose(g[1], ge[1], 1e-12, 1e-12));  // was zero before: the branch's w was a constant
    }
}

TEST_CASE("while_loop: eager, captured as prim::Loop, data-dependent trip counts, gradients", "[capture]") {
    for (double scale : {0.1, 3.0, 40.0}) {
        const Tensor x = randn({3}, dtype::float64) * scale;
        const auto got = shrink(x, zeros({}, dtype::float64));
        const auto want = shrink_reference(x);
        CHECK(allclose(got[0], want[0], 0, 0));
        CHECK(allclose(got[1], want[1], 0, 0));
    }
    // Captured once (the example loops twice); each run loops as its data says.
    const auto cap = capture::trace(shrink, full({3}, 1.5, dtype::float64), zeros({}, dtype::float64));
    std::size_t loops = 0;
    for (const ir::Node* n : cap.graph().block()->nodes()) loops += n->is<ir::kinds::loop>();
    CHECK(loops == 1);
    for (double scale : {0.1, 3.0, 40.0}) {
        const Tensor x = randn({3}, dtype::float64) * scale;
        const auto got = cap(x, zeros({}, dtype::float64));
        const auto want = shrink_reference(x);
        CHECK(allclose(got[0], want[0], 0, 0));
        CHECK(allclose(got[1], want[1], 0, 0));
    }
    const auto parsed = ir::parse(ir::to_string(cap.graph()));  // the text form round-trips
    const Tensor x40 = full({3}, 40.0, dtype::float64);
    CHECK(allclose(ir::interpret(*parsed, std::vector<Tensor>{x40, zeros({}, dtype::float64)})[0],
                   shrink_reference(x40)[0], 0, 0));
    // Gradients through the eager loop: d/dx of 0.5^k x is 0.5^k (k fixed by the data).
    Tensor xg = full({3}, 5.0, dtype::float64);
    xg.requires_grad_();
    const Tensor y = shrink(xg, zeros({}, dtype::float64))[0].sum();
    const double k = shrink_reference(xg.detach())[1].item<double>();
    CHECK(allclose(autograd::grad({y}, {xg})[0], full({3}, std::pow(0.5, k), dtype::float64), 1e-15, 0));
    // Misuse is a clear error.
    CHECK_THROWS_WITH((void)while_loop([](Tensor v) { return v; }, [](Tensor v) { return v; }, ones({2})),
                      Catch::Contains("one one-element bool tensor"));
    CHECK_THROWS_WITH((void)while_loop([](Tensor v) { return v.sum() < 3.0; }, [](Tensor v) { return v.to(dtype::float64); },
                                       ones({2})),
                      Catch::Contains("carried value 0 of float32"));
}

TEST_CASE("fori_loop: a counted loop, eager and captured", "[capture]") {
    const auto f = [](Tensor x) {
        return fori_loop(0, 4, [](Tensor i, Tensor acc) { return acc * 2.0 + i.to(dtype::float64); }, x);
    };
    const Tensor x = randn({3}, dtype::float64);
    Tensor want = x.clone();
    for (int i = 0; i < 4; ++i) want = want * 2.0 + static_cast<double>(i);
    CHECK(allclose(f(x), want, 0, 0));
    const auto cap = capture::trace(f, x);
    const Tensor x2 = randn({3}, dtype::float64);
    Tensor want2 = x2.clone();
    for (int i = 0; i < 4; ++i) want2 = want2 * 2.0 + static_cast<double>(i);
    CHECK(allclose(cap(x2)[0], want2, 0, 0));
}

TEST_CASE("capture: detach() stops gradients in captured graphs as in eager", "[capture]") {
    // d/dx sum(x * detach(x)) = detach(x) = x, not 2x; the second function reads the detached
    // alias after a write to its memory, and through a view of it.
    const auto f = [](Tensor x) { return (x * x.detach()).sum(); };
    const auto g = [](Tensor x, Tensor w) {
        Tensor y = x * w;  // y's memory is fresh: write into it, then read it detached
        Tensor d = y.detach();
        y.mul_(2.0);
        return (y * d.narrow(0, 0, 3).sum() + d * w).sum();
    };
    const Tensor x0 = randn({5}, dtype::float64), w0 = randn({5}, dtype::float64);
    Tensor xf = x0.clone().requires_grad_();
    const std::vector<Tensor> ref_f = autograd::grad({f(xf)}, {xf});
    CHECK(allclose(ref_f[0], x0));  // the hand derivative
    auto graph = capture::trace(f, {x0});
    CHECK(ir::to_string(graph.graph()).find("detach") != std::string::npos);
    auto aot_f = capture::aot(f, {x0});
    auto sf = jit::script(f);
    for (int i = 0; i < 3; ++i) {
        Tensor xa = x0.clone().requires_grad_(), xj = x0.clone().requires_grad_();
        CHECK(allclose(autograd::grad({aot_f({xa})[0]}, {xa})[0], ref_f[0]));
        CHECK(allclose(autograd::grad({sf(xj)}, {xj})[0], ref_f[0]));
    }
    Tensor xg = x0.clone().requires_grad_(), wg = w0.clone().requires_grad_();
    const std::vector<Tensor> ref_g = autograd::grad({g(xg, wg)}, {xg, wg});
    auto sg = jit::script(g);
    for (int i = 0; i < 3; ++i) {
        Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_();
        const auto gr = autograd::grad({sg(x, w)}, {x, w});
        CHECK(allclose(gr[0], ref_g[0]));
        CHECK(allclose(gr[1], ref_g[1]));
    }
}

TEST_CASE("capture::aot: saved strided views of a computed tensor are read back as reshapes, narrows and permutes",
          "[capture]") {
    // Attention's q/k/v: one product split in three, each viewed to heads and transposed, saved
    // by matmul for the backward. The backward reads them from the product: an index constant
    // (`take`) would tie the graph to the batch size; views keep sizes a symbolic graph computes.
    const auto count = [](const ir::Graph& g, std::string_view kind) {
        int n = 0;
        for (const ir::Node* node : g.block()->nodes()) n += node->kind().name == kind;
        return n;
    };
    manual_seed(11);
    const Tensor x = randn({3, 4, 24}, dtype::float64), g = randn({24}, dtype::float64).requires_grad_();
    const auto attention = [](Tensor x, Tensor g) {
        const std::vector<Tensor> qkv = (x * g).split(8, 2);
        const Tensor q = qkv[0].view({3, 4, 2, 4}).transpose(1, 2), k = qkv[1].view({3, 4, 2, 4}).transpose(1, 2),
                     v = qkv[2].view({3, 4, 2, 4}).transpose(1, 2);
        return matmul(matmul(q, k.transpose(-2, -1)), v).sum();
    };
    // Other boxes: a column block seen transposed, every other row pair, a view of the middle.
    const auto boxes = [](Tensor x, Tensor g) {
        const Tensor m = (x * g).view({12, 24});
        const Tensor a = m.narrow(1, 5, 7).t();                         // [7, 12], strides [1, 24]
        const Tensor b = m.view({6, 2, 24}).narrow(1, 1, 1).squeeze(1);  // rows 1, 3, ..., 11
        const Tensor c = m.narrow(0, 2, 6).view({3, 2, 24}).permute({2, 0, 1});
        const Tensor d = m.select(1, 3);  // one column: stride 24, a fixed index in the last dimension
        return (a * a).sum() + (matmul(b, b.t()) * 0.5).sum() + (c * c).sum() + (d * d * d).sum();
    };
    for (const auto& [name, f] : std::vector<std::pair<std::string, std::function<Tensor(Tensor, Tensor)>>>{
             {"attention", attention}, {"boxes", boxes}}) {
        INFO(name);
        const auto a = capture::aot(f, {x, g});
        INFO(ir::to_string(*a.backward));
        CHECK(count(*a.forward, "take") + count(*a.backward, "take") == 0);
        Tensor g1 = g.detach().requires_grad_(), g2 = g.detach().requires_grad_();
        const Tensor l1 = a({x, g1})[0], l2 = f(x, g2);
        l1.backward();
        l2.backward();
        CHECK(equal(l1, l2));
        CHECK(equal(g1.grad(), g2.grad()));
    }
    // A view that is no box of its base (stride 0 from expand, overlapping windows) still reads
    // through an index constant, and gives eager's results.
    const auto overlapping = [](Tensor x, Tensor g) {
        const Tensor m = (x * g).view({288});
        const Tensor w = m.as_strided({10, 8}, {3, 1}, 0);  // windows of 8, every 3 elements: overlapping
        return (w * w).sum();
    };
    const auto a = capture::aot(overlapping, {x, g});
    Tensor g1 = g.detach().requires_grad_(), g2 = g.detach().requires_grad_();
    a({x, g1})[0].backward();
    overlapping(x, g2).backward();
    CHECK(allclose(g1.grad(), g2.grad(), 1e-12, 1e-12));
}
