// Gradients at NaN and +-inf follow PyTorch's formulas (derivatives.yaml): maximum and
// minimum mask the losing operand instead of selecting the winner (so a NaN position passes
// the gradient to both), relu's backward is threshold_backward (`result <= 0 ? 0 : grad`,
// so relu(NaN) = NaN passes it). The op table holds each derivative once: eager autograd,
// capture::aot and the jit's differentiable plans give the same values.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include <graft/graft.hpp>

using namespace graft;

namespace {

constexpr double nan_v = std::numeric_limits<double>::quiet_NaN();
constexpr double inf_v = std::numeric_limits<double>::infinity();

/// Gradients of sum(f(a, b) * 1) with respect to a and b, eager.
std::vector<Tensor> grads_of(Tensor (*f)(const Tensor&, const Tensor&), const std::vector<double>& a,
                             const std::vector<double>& b) {
    const Tensor ta = from_vector(a, {-1}).requires_grad_(), tb = from_vector(b, {-1}).requires_grad_();
    return autograd::grad({f(ta, tb).sum()}, {ta, tb});
}

Tensor max_of(const Tensor& a, const Tensor& b) { return maximum(a, b); }
Tensor min_of(const Tensor& a, const Tensor& b) { return minimum(a, b); }

/// Element-wise equality that treats NaN as equal to NaN.
bool same_values(const Tensor& t, const std::vector<double>& want) {
    const std::vector<double> got = t.to(dtype::float64).to_vector<double>();
    if (got.size() != want.size()) return false;
    for (std::size_t i = 0; i < got.size(); ++i)
        if (!(got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i])))) return false;
    return true;
}

}  // namespace

TEST_CASE("autograd: maximum and minimum gradients at NaN and ties follow PyTorch's masks", "[autograd][nan]") {
    // PyTorch: maximum's self gradient is where(a == b, g/2, g) with 0 where a < b; other's 0 where
    // a > b. Comparisons with NaN are false: both operands get g at a NaN position.
    const std::vector<double> a{nan_v, 1.0, 2.0, 3.0, inf_v, -inf_v, nan_v};
    const std::vector<double> b{0.0, nan_v, 2.0, 1.0, inf_v, 5.0, nan_v};
    const auto gmax = grads_of(max_of, a, b);
    CHECK(same_values(gmax[0], {1.0, 1.0, 0.5, 1.0, 0.5, 0.0, 1.0}));
    CHECK(same_values(gmax[1], {1.0, 1.0, 0.5, 0.0, 0.5, 1.0, 1.0}));
    const auto gmin = grads_of(min_of, a, b);
    CHECK(same_values(gmin[0], {1.0, 1.0, 0.5, 0.0, 0.5, 1.0, 1.0}));
    CHECK(same_values(gmin[1], {1.0, 1.0, 0.5, 1.0, 0.5, 0.0, 1.0}));
    // The forward propagates NaN (PyTorch's maximum/minimum).
    CHECK(same_values(maximum(from_vector(a, {-1}), from_vector(b, {-1})), {nan_v, nan_v, 2.0, 3.0, inf_v, 5.0, nan_v}));
}

TEST_CASE("autograd: relu's gradient is threshold_backward: result <= 0 ? 0 : grad", "[autograd][nan]") {
    const Tensor x = from_vector(std::vector<double>{nan_v, -1.0, 0.0, -0.0, 2.0, inf_v, -inf_v}, {-1}).requires_grad_();
    const Tensor y = relu(x);
    CHECK(same_values(y.detach(), {nan_v, 0.0, 0.0, 0.0, 2.0, inf_v, 0.0}));
    const Tensor g = from_vector(std::vector<double>{3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0}, {-1});
    const auto gx = autograd::grad({y}, {x}, {g});
    CHECK(same_values(gx[0], {3.0, 0.0, 0.0, 0.0, 3.0, 3.0, 0.0}));
}

TEST_CASE("autograd: capture::aot and jit differentiable plans give the same NaN gradients", "[autograd][nan]") {
    const auto f = [](Tensor a, Tensor b) { return relu(maximum(a, b) * 2.0) + minimum(a, b); };
    const std::vector<double> a{nan_v, 1.0, 2.0, -3.0, 0.5, -inf_v};
    const std::vector<double> b{0.0, nan_v, 2.0, 1.0, 0.5, -1.0};
    const Tensor seed = from_vector(std::vector<double>{1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, {-1});
    const auto eager = [&] {
        const Tensor ta = from_vector(a, {-1}).requires_grad_(), tb = from_vector(b, {-1}).requires_grad_();
        return autograd::grad({f(ta, tb)}, {ta, tb}, {seed});
    }();
    // By hand: m = maximum, relu(2m) passes where 2m > 0 or is NaN; minimum's masks as above.
    // pos0: m = NaN -> relu passes 2*1 to both of maximum's operands; minimum(NaN, 0) passes 1 to both.
    CHECK(same_values(eager[0], {3.0, 6.0, 3.0 * 0.5 * 2 + 3.0 * 0.5, 4.0, 5.0 * 0.5 * 2 + 5.0 * 0.5, 6.0}));
    CHECK(same_values(eager[1], {3.0, 6.0, 3.0 * 0.5 * 2 + 3.0 * 0.5, 4.0 * 2, 5.0 * 0.5 * 2 + 5.0 * 0.5, 0.0}));
    const Tensor ta = from_vector(a, {-1}).requires_grad_(), tb = from_vector(b, {-1}).requires_grad_();
    auto compiled = capture::aot(f, {ta, tb});
    const auto via_aot = autograd::grad({compiled({ta, tb})[0]}, {ta, tb}, {seed});
    CHECK(same_values(via_aot[0], eager[0].to_vector<double>()));
    CHECK(same_values(via_aot[1], eager[1].to_vector<double>()));
    auto fn = jit::script(f);
    for (int i = 0; i < 3; ++i) {  // profiling run, then the differentiable plan
        const auto via_jit = autograd::grad({fn(ta, tb)}, {ta, tb}, {seed});
        CHECK(same_values(via_jit[0], eager[0].to_vector<double>()));
        CHECK(same_values(via_jit[1], eager[1].to_vector<double>()));
    }
}

TEST_CASE("autograd: max(), sign, abs, div and smooth_l1 at NaN and inf: eager, aot and jit agree",
          "[autograd][nan]") {
    // PyTorch's formulas, written out: max(t) with a NaN result shares g among the NaN
    // elements (here 2 of 5: g/2 each); abs' = sign = 0 at NaN; d(a/b)/db = -g*((a/b)/b), so
    // 0 / 1e-300 gives -0 (not 0 * inf); smooth_l1 at an infinite difference is linear (g).
    const auto f = [](Tensor x, Tensor y) {
        return max(x) * 4.0 + (abs(x) * 2.0).sum() + (sign(x) * y).sum() + (y / x).sum() +
               nn::functional::smooth_l1_loss(y, x, nn::functional::reduction::sum);
    };
    const std::vector<double> xv{nan_v, 1e-300, -2.0, nan_v, inf_v};
    const std::vector<double> yv{1.0, 0.0, 3.0, -1.0, 0.5};
    const auto run_eager = [&] {
        const Tensor x = from_vector(xv, {-1}).requires_grad_(), y = from_vector(yv, {-1}).requires_grad_();
        return autograd::grad({f(x, y)}, {x, y});
    };
    const auto eager = run_eager();
    // d/dx: max: 4/2 at the NaNs; abs: 2*sign (0 at NaN); sign*y: 0; y/x: -y/x^2 as -(y/x)/x;
    // smooth_l1(y - x): at NaN its quadratic branch gives NaN.
    const std::vector<double> gx = eager[0].to_vector<double>();
    CHECK(std::isnan(gx[0]));  // smooth_l1's NaN, as PyTorch
    // abs 2, div -((0 / 1e-300) / 1e-300) = -0 (b * b would underflow: 0 * inf = NaN),
    // smooth_l1's quadratic branch -(y - x) = 1e-300, lost next to 2.
    CHECK(gx[1] == 2.0);
    CHECK(gx[2] == Approx(-2.0 - (3.0 / -2.0) / -2.0 - 1.0));           // abs -2, div, smooth_l1: d = 5 > 1 -> -1
    CHECK(std::isnan(gx[3]));
    // y: sign(x) + 1/x + smooth_l1' (NaN at NaN; at x = inf the linear branch: -1).
    const std::vector<double> gy = eager[1].to_vector<double>();
    CHECK(std::isnan(gy[0]));
    CHECK(gy[4] == 1.0 + 0.0 - 1.0);  // sign(inf) 1, 1/inf 0, smooth_l1 linear -1
    // The same through capture::aot and the jit's differentiable plan (bitwise, NaN = NaN).
    const Tensor x = from_vector(xv, {-1}).requires_grad_(), y = from_vector(yv, {-1}).requires_grad_();
    auto compiled = capture::aot(f, {x, y});
    const auto via_aot = autograd::grad({compiled({x, y})[0]}, {x, y});
    CHECK(same_values(via_aot[0], gx));
    CHECK(same_values(via_aot[1], gy));
    auto fn = jit::script(f);
    for (int i = 0; i < 3; ++i) {
        const auto via_jit = autograd::grad({fn(x, y)}, {x, y});
        CHECK(same_values(via_jit[0], gx));
        CHECK(same_values(via_jit[1], gy));
    }
    // max() alone: the NaN elements share the gradient.
    const Tensor m = from_vector(xv, {-1}).requires_grad_();
    CHECK(same_values(autograd::grad({max(m)}, {m})[0], {0.5, 0.0, 0.0, 0.5, 0.0}));
    CHECK(max(m).grad_fn()->name() == std::string("MaxBackward1"));
    CHECK(sign(m).grad_fn()->name() == std::string("SignBackward0"));
}
