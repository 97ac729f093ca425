// graft's first example: tensors, broadcasting, reductions, matmul, softmax and a
// backward pass, and which SIMD instruction set the kernels were dispatched to on this CPU.
#include <iostream>

#include <graft/graft.hpp>

int main() {
    using namespace graft;
    std::cout << "graft " << version_string << ", SIMD kernels: "
              << kernels::target_name(kernels::current_target()) << " (compiled and supported here:";
    for (auto t : kernels::available_targets()) std::cout << ' ' << kernels::target_name(t);
    std::cout << ")\n\n";

    manual_seed(0);
    Tensor x = arange(6).view({2, 3}).to(dtype::float32);   // [[0,1,2],[3,4,5]]
    Tensor bias = tensor({10.0, 20.0, 30.0});                 // broadcasts over rows
    std::cout << "x =\n" << x << "\n\nx + bias =\n" << x + bias << "\n\n";

    Tensor w = randn({3, 4});
    Tensor h = relu(matmul(x, w));
    std::cout << "relu(x @ w), w ~ N(0, 1) with seed 0 =\n" << h << "\n\n";

    std::cout << "sum over rows: " << h.sum({0}) << "\nmean: " << h.mean() << "\namax per row: " << h.amax({1})
              << "\n\n";
    std::cout << "softmax(x, dim=1) =\n" << softmax(x, 1) << "\n\n";
    std::cout << "gelu at -1, 0, 1: " << gelu(tensor({-1.0, 0.0, 1.0})) << "\n";
    std::cout << "x.t() is a view: " << std::boolalpha << x.t().shares_storage_with(x)
              << ", contiguous: " << x.t().is_contiguous() << "\n";

    // Autograd: loss = sum(tanh(x * w + 1) * sigmoid(x)), gradients for x and w.
    Tensor xs = randn({4}).requires_grad_(), ws = randn({4}).requires_grad_();
    Tensor loss = (tanh(xs * ws + 1.0) * sigmoid(xs)).sum();
    loss.backward();
    std::cout << "\nloss = " << loss.item<double>() << " (grad_fn " << loss.grad_fn()->name() << ")\n"
              << "d loss / d w = " << ws.grad() << "\n";

    // The same function, fused at compile time into one SIMD loop (forward + backward node).
    namespace ex = graft::expr;
    auto fused = ex::function(ex::trace<2>([](auto a, auto b) { return tanh(a * b + 1.0) * sigmoid(a); }));
    Tensor wf = ws.detach().requires_grad_();
    fused(xs.detach(), wf).sum().backward();
    std::cout << "fused: same d loss / d w = " << std::boolalpha << allclose(wf.grad(), ws.grad()) << "\n";

    // Captured ahead of time into a forward graph and a backward graph (graph IR).
    auto compiled = capture::aot([](Tensor a, Tensor b) { return (tanh(a * b + 1.0) * sigmoid(a)).sum(); },
                                 {xs.detach(), ws.detach().requires_grad_()});
    std::cout << "\ncaptured backward graph:\n" << *compiled.backward;

    try {
        (void)(x + ones({4}));
    } catch (const error& e) {
        std::cout << "\nshape errors are graft::error: " << e.what() << "\n";
    }
    return 0;
}
