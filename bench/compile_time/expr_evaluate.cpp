// eager_autograd.cpp plus one 10-op expression traced and evaluated fused (ex::evaluate).
#include <graft/graft.hpp>
namespace ex = graft::expr;
const auto e = ex::trace<2>([](auto x, auto w) { return tanh(x * w + 1.0) * sigmoid(x) + exp(-abs(x)) * 0.5 - relu(w); });
int main() { graft::Tensor x = graft::ones({4}); x.requires_grad_(); graft::Tensor y = graft::tanh(x * x); y.sum().backward();
  graft::Tensor z = ex::evaluate(e, x.detach(), x.detach()); return x.grad().sum().item<float>() + z.sum().item<float>() > 0 ? 0 : 1; }
