// A TU using all five layers: tensors, backward, an ex::function, capture::aot, jit::script.
#include <graft/graft.hpp>
namespace ex = graft::expr;
using graft::Tensor;
int main() {
    Tensor x = graft::randn({8}).requires_grad_(), w = graft::randn({8}).requires_grad_();
    (graft::tanh(x * w) + 1.0).sum().backward();  // eager autograd
    static const auto e = ex::trace<2>([](auto a, auto b) { return tanh(a * b + 1.0) * sigmoid(a); });
    const auto f = ex::function(e);  // compile-time graph as one autograd node
    f(x, w).sum().backward();
    auto loss = [](Tensor a, Tensor b) { return (graft::tanh(a * b + 1.0) * graft::sigmoid(a)).sum(); };
    auto compiled = graft::capture::aot(loss, {x, w});  // AOT forward/backward graphs
    compiled({x, w})[0].backward();
    auto step = graft::jit::script(loss);  // profiling executor
    for (int i = 0; i < 3; ++i) step(x, w).backward();
    return x.grad().sum().item<float>() != 0 ? 0 : 1;
}
