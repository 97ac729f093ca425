// graft's main example: train a small MLP with a jit-scripted training step.
//
// The data: two interleaved spirals of 2-D points that graft generates. The model:
// 2 -> 32 -> 32 -> 1 with tanh hidden layers and a logistic output, trained with
// binary cross-entropy and plain SGD in mini-batches. The loss function is
// jit::script'ed: its first call captures it into a graph and profiles it, the
// next calls run a specialized plan (a differentiable graph whose forward and
// backward are fused into SIMD tile loops). The last mini-batch of each epoch is
// smaller: its guard fails, a fallback executor specializes for that shape too.
// At the end the executor's debug state shows the plans, guards and counters.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <numbers>
#include <vector>

#include <graft/graft.hpp>

using namespace graft;

namespace {

/// n points on two spirals (label 0 and 1) with a little noise.
void make_spirals(std::int64_t n, Tensor& points, Tensor& labels) {
    points = empty({n, 2});
    labels = empty({n, 1});
    const Tensor noise = randn({n, 2}) * 0.05;
    for (std::int64_t i = 0; i < n; ++i) {
        const int label = static_cast<int>(i % 2);
        const double t = 0.1 + 0.9 * static_cast<double>(i / 2) / static_cast<double>(n / 2);  // radius
        const double angle = 1.5 * std::numbers::pi * t + (label ? std::numbers::pi : 0.0);     // 3/4 of a turn
        points.select(0, i).select(0, 0).fill_(t * std::cos(angle) + noise.select(0, i).select(0, 0).item<double>());
        points.select(0, i).select(0, 1).fill_(t * std::sin(angle) + noise.select(0, i).select(0, 1).item<double>());
        labels.select(0, i).select(0, 0).fill_(label);
    }
}

/// Binary cross-entropy of the MLP's output on a batch.
Tensor loss_fn(Tensor x, Tensor y, Tensor w1, Tensor b1, Tensor w2, Tensor b2, Tensor w3, Tensor b3) {
    Tensor h1 = tanh(matmul(x, w1) + b1);
    Tensor h2 = tanh(matmul(h1, w2) + b2);
    Tensor p = sigmoid(matmul(h2, w3) + b3);
    return -(y * log(p + 1e-7) + (1.0 - y) * log(1.0 - p + 1e-7)).mean();
}

double accuracy(const Tensor& x, const Tensor& y, const std::vector<Tensor>& params) {
    autograd::no_grad guard;
    Tensor h1 = tanh(matmul(x, params[0]) + params[1]);
    Tensor h2 = tanh(matmul(h1, params[2]) + params[3]);
    Tensor p = sigmoid(matmul(h2, params[4]) + params[5]);
    const Tensor right = eq(gt(p, 0.5), gt(y, 0.5));
    return right.to(dtype::float64).mean().item<double>();
}

}  // namespace

int main() {
    manual_seed(7);
    const std::int64_t n = 1000, batch = 128, epochs = 300;
    const double lr = 0.5;
    Tensor points, labels;
    make_spirals(n, points, labels);

    const auto init = [](std::int64_t in, std::int64_t out) {
        return (randn({in, out}) * (1.0 / std::sqrt(static_cast<double>(in)))).requires_grad_();
    };
    std::vector<Tensor> params{init(2, 32), zeros({32}).requires_grad_(), init(32, 32), zeros({32}).requires_grad_(),
                               init(32, 1),  zeros({1}).requires_grad_()};

    // The training step's loss, compiled by the profiling executor.
    auto step = jit::script(loss_fn, jit::fusion_strategy<jit::static_<2>, jit::dynamic_<10>>{});

    std::cout << "graft " << version_string << " (SIMD: " << kernels::target_name(kernels::current_target())
              << "): training a 2-32-32-1 MLP on " << n << " spiral points, batch " << batch << ", " << epochs
              << " epochs, jit-scripted loss\n";
    double last = 0;
    for (std::int64_t epoch = 1; epoch <= epochs; ++epoch) {
        double total = 0;
        for (std::int64_t start = 0; start < n; start += batch) {
            const std::int64_t len = std::min(batch, n - start);
            const Tensor x = points.narrow(0, start, len).contiguous();
            const Tensor y = labels.narrow(0, start, len).contiguous();
            Tensor loss = step(x, y, params[0], params[1], params[2], params[3], params[4], params[5]);
            loss.backward();
            {
                autograd::no_grad guard;
                for (Tensor& p : params) {
                    p.sub_(p.grad() * lr);
                    p.set_grad(Tensor{});
                }
            }
            total += loss.item<double>() * static_cast<double>(len);
        }
        last = total / static_cast<double>(n);
        if (epoch % 10 == 0 || epoch == 1) {
            std::printf("\repoch %4lld/%lld  loss %.4f  accuracy %.3f", static_cast<long long>(epoch),
                        static_cast<long long>(epochs), last, accuracy(points, labels, params));
            std::fflush(stdout);
        }
    }
    std::printf("\n");

    // The compiled step computes what the eager function computes.
    const Tensor x = points.narrow(0, 0, batch).contiguous(), y = labels.narrow(0, 0, batch).contiguous();
    const double eager = loss_fn(x, y, params[0], params[1], params[2], params[3], params[4], params[5]).item<double>();
    const double compiled = step(x, y, params[0], params[1], params[2], params[3], params[4], params[5]).item<double>();
    std::printf("final loss %.4f, accuracy %.3f; eager and jit loss on one batch: %.7f / %.7f\n\n", last,
                accuracy(points, labels, params), eager, compiled);
    // Time per training step (forward + backward), compiled vs eager, on full batches.
    const auto time_steps = [&](auto&& f) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < 200; ++i) {
            Tensor l = f(x, y, params[0], params[1], params[2], params[3], params[4], params[5]);
            l.backward();
            for (Tensor& p : params) p.set_grad(Tensor{});
        }
        return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 200;
    };
    const double t_jit = time_steps(step), t_eager = time_steps(loss_fn);
    std::printf("forward + backward per batch of %lld: jit %.1f us, eager %.1f us (jit %.2fx eager's speed)\n\n",
                static_cast<long long>(batch), t_jit, t_eager, t_eager / t_jit);
    std::cout << step.debug_string();
    if (!(last < 0.3) || std::abs(eager - compiled) > 1e-5 * std::max(1.0, std::abs(eager))) {
        std::cerr << "training did not converge or the compiled step disagrees with eager\n";
        return 1;
    }
    return 0;
}
