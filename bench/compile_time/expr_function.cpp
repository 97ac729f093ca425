// The same 10-op expression wrapped as an autograd node (ex::function), forward and backward.
#include <graft/graft.hpp>
namespace ex = graft::expr;
const auto e = ex::trace<2>([](auto x, auto w) { return tanh(x * w + 1.0) * sigmoid(x) + exp(-abs(x)) * 0.5 - relu(w); });
const auto f = ex::function(e);
int main() { graft::Tensor x = graft::ones({4}); x.requires_grad_(); graft::Tensor y = f(x, x); y.sum().backward(); return x.grad().sum().item<float>() > 0 ? 0 : 1; }
