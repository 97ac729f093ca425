// The minimal TU: graft.hpp, one op, one backward (compile-time floors, measure.sh).
#include <graft/graft.hpp>
int main() {
    graft::Tensor x = graft::ones({4});
    x.requires_grad_();
    graft::Tensor y = graft::tanh(x * x);
    y.sum().backward();
    return x.grad().sum().item<float>() > 0 ? 0 : 1;
}
