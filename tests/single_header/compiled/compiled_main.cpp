// Single header in compiled mode (issue 34), as docs/build.md tells a user without CMake to
// use it: GRAFT_COMPILED_LIB in every TU, GRAFT_IMPLEMENTATION in exactly one
// (compiled_impl.cpp). This TU sees declarations only: it must compile (every header's
// declarations outside the single header's GRAFT_HAS_CODE regions), link against the other
// TU's definitions (each defined once), and compute the right values.
//
// Build by hand (from the repository root, after `python3 scripts/amalgamate.py`):
//   g++ -std=c++20 -O0 -DGRAFT_COMPILED_LIB -Isingle_include tests/single_header/compiled/*.cpp
//       -o /tmp/graft_single_header_compiled && /tmp/graft_single_header_compiled
#include <graft/graft.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

// The test is only meaningful if this TU really is a declarations-only TU.
static_assert(!GRAFT_HAS_CODE && !GRAFT_HAS_GRAPH_CODE && !GRAFT_HAS_KERNELS,
              "compiled_main.cpp must be built with GRAFT_COMPILED_LIB and without GRAFT_IMPLEMENTATION");

// Defined in compiled_impl.cpp (the TU that holds graft's code).
double impl_tu_tanh_grad(double v);
graft::kernels::target impl_tu_target();

int main() {
    using namespace graft;
    int failures = 0;
    auto check = [&](bool ok, const char* what) {
        if (!ok) {
            std::printf("FAILED: %s\n", what);
            ++failures;
        }
    };
    auto near = [](double a, double b) { return std::fabs(a - b) < 1e-6; };

    // Eager autograd: graft::tanh (autograd/functions.hpp, the header of issue 34), backward.
    Tensor x = tensor({0.5, -1.0}, {2}, dtype::float64).requires_grad_();
    Tensor loss = (tanh(x) * 2.0).sum();
    loss.backward();
    const double t0 = std::tanh(0.5), t1 = std::tanh(-1.0);
    check(near(loss.item<double>(), 2 * (t0 + t1)), "tanh forward");
    check(near(x.grad()[0].item<double>(), 2 * (1 - t0 * t0)) && near(x.grad()[1].item<double>(), 2 * (1 - t1 * t1)),
          "tanh backward");
    check(near(impl_tu_tanh_grad(0.5), 1 - t0 * t0), "autograd in the implementation TU");

    // Join/split (autograd/join_split.hpp).
    Tensor c = cat({ones({2}), full({3}, 4.0)});
    check(c.numel() == 5 && c.sum().item<double>() == 14.0, "cat");
    check(split(c, 2).size() == 3, "split");

    // In-place on a view rebases the base's history (autograd/view_tracking.hpp,
    // autograd/tensor_methods.hpp).
    Tensor a = ones({4}, dtype::float64).requires_grad_();
    Tensor b = a * 1.0;
    b.narrow(0, 1, 2).mul_(3.0);
    b.sum().backward();
    const std::vector<double> want{1, 3, 3, 1};
    bool ok = true;
    for (std::int64_t i = 0; i < 4; ++i) ok = ok && a.grad()[i].item<double>() == want[static_cast<std::size_t>(i)];
    check(ok, "in-place mul_ on a narrow view: gradient");

    // nn and the graph layers (GRAFT_HAS_GRAPH_CODE definitions): a Linear layer, traced.
    manual_seed(3);
    nn::Linear lin(3, 2);
    Tensor in = randn({4, 3});
    auto cap = capture::trace([&](Tensor v) { return lin(v); }, in);
    check(allclose(cap(in)[0], lin(in)), "traced nn::Linear matches eager");

    // One kernel dispatch state, shared with the implementation TU.
    for (kernels::target t : kernels::available_targets()) {
        kernels::set_target(t);
        check(impl_tu_target() == t, "both TUs share one dispatch state");
    }

    std::printf(failures == 0 ? "single header, compiled mode: all passed\n"
                              : "single header, compiled mode: %d failures\n", failures);
    return failures == 0 ? 0 : 1;
}
