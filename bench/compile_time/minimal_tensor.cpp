// minimal.cpp through the per-layer header graft/tensor.hpp (eager tensors and autograd only).
#include <graft/tensor.hpp>
int main() {
    graft::Tensor x = graft::ones({4});
    x.requires_grad_();
    graft::Tensor y = graft::tanh(x * x);
    y.sum().backward();
    return x.grad().sum().item<float>() > 0 ? 0 : 1;
}
