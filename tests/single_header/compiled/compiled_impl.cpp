// The one TU of the compiled-mode single-header program (see compiled_main.cpp) that
// compiles graft's non-template code and SIMD kernels, as docs/build.md prescribes.
#define GRAFT_IMPLEMENTATION
#include <graft/graft.hpp>

static_assert(GRAFT_HAS_CODE && GRAFT_HAS_GRAPH_CODE && GRAFT_HAS_KERNELS);

// d tanh(v) / dv, computed by graft's autograd in this TU.
double impl_tu_tanh_grad(double v) {
    graft::Tensor x = graft::tensor({v}, {1}, graft::dtype::float64).requires_grad_();
    graft::tanh(x).sum().backward();
    return x.grad()[0].item<double>();
}
graft::kernels::target impl_tu_target() { return graft::kernels::current_target(); }
