// graft's main example: train a small MLP with nn modules, Adam and a jit-scripted loss.
//
// The data: two interleaved spirals of 2-D points that graft generates. The model: an
// nn::Sequential 2 -> 32 -> 32 -> 1 with tanh hidden layers and one logit out, trained with
// binary_cross_entropy_with_logits and optim::Adam in mini-batches that a data::DataLoader
// prepares on its worker thread, as one writes it with torch.nn, torch.optim and
// torch.utils.data; a data::progress bar follows the epochs. The loss is jit::script'ed over nn::functional_call, with the
// parameters as graph inputs: the first call captures it into a graph and profiles it, the
// next calls run a specialized plan (a differentiable graph whose forward and backward are
// fused into SIMD tile loops) and backward() fills every parameter's grad as eager autograd
// would. The last mini-batch of each epoch is smaller: its guard fails, a fallback executor
// specializes for that shape too. At the end the executor's debug state shows the plans,
// guards and counters.
#include <algorithm>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <numbers>
#include <vector>

#include <graft/graft.hpp>

using namespace graft;

namespace {

/// n points on two spirals (label 0 and 1) with a little noise.
void make_spirals(std::int64_t n, Tensor& points, Tensor& labels) {
    std::vector<float> xy(static_cast<std::size_t>(2 * n)), lab(static_cast<std::size_t>(n));
    const Tensor noise = (randn({n, 2}) * 0.05).contiguous();
    const float* e = noise.data_ptr<float>();
    for (std::int64_t i = 0; i < n; ++i) {
        const int label = static_cast<int>(i % 2);
        const double t = 0.1 + 0.9 * static_cast<double>(i / 2) / static_cast<double>(n / 2);  // radius
        const double angle = 1.5 * std::numbers::pi * t + (label ? std::numbers::pi : 0.0);     // 3/4 of a turn
        xy[2 * i] = static_cast<float>(t * std::cos(angle) + e[2 * i]);
        xy[2 * i + 1] = static_cast<float>(t * std::sin(angle) + e[2 * i + 1]);
        lab[i] = static_cast<float>(label);
    }
    points = from_vector(xy, {n, 2});
    labels = from_vector(lab, {n, 1});
}

double accuracy(nn::Module& model, const Tensor& x, const Tensor& y) {
    autograd::no_grad guard;
    const Tensor right = eq(gt(model.forward(x), 0.0), gt(y, 0.5));  // logit > 0 <=> p > 0.5
    return right.to(dtype::float64).mean().item<double>();
}

}  // namespace

int main() {
    manual_seed(7);
    const std::int64_t n = 1000, batch = 128, epochs = 150;
    Tensor points, labels;
    make_spirals(n, points, labels);

    auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(2, 32), std::make_shared<nn::Tanh>(),
                                                  std::make_shared<nn::Linear>(32, 32), std::make_shared<nn::Tanh>(),
                                                  std::make_shared<nn::Linear>(32, 1));
    std::vector<Tensor> params = model->parameters();  // handles sharing the module's tensors
    optim::Adam opt(params, /*lr=*/0.02);

    // The loss of a batch, eager: {x, y, parameters...} -> loss.
    const auto loss_fn = [&model](const std::vector<Tensor>& in) {
        const std::span<const Tensor> ps(in.begin() + 2, in.end());
        return nn::functional::binary_cross_entropy_with_logits(nn::functional_call(*model, ps, in[0]), in[1]);
    };
    // The same loss compiled by the profiling executor; the parameters are graph inputs, so
    // Adam's in-place updates are seen by the next call and backward() reaches them.
    auto scripted = jit::script(loss_fn, jit::fusion_strategy<jit::static_<2>, jit::dynamic_<10>>{});
    const auto inputs = [&params](const Tensor& x, const Tensor& y) {
        std::vector<Tensor> in{x, y};
        in.insert(in.end(), params.begin(), params.end());
        return in;
    };

    // The batches, in order (no shuffle): rows start .. start+127 of both tensors, stacked.
    data::DataLoader loader(data::TensorDataset(points, labels), {.batch_size = batch, .num_workers = 1});

    std::cout << "graft " << version_string << " (SIMD: " << kernels::target_name(kernels::current_target())
              << "): training a 2-32-32-1 MLP (nn::Sequential, Adam) on " << n << " spiral points, batch " << batch
              << ", " << epochs << " epochs, jit-scripted loss\n";
    double last = 0;
    {
        // Redrawn every epoch on a terminal; one line at the end in a log.
        data::progress bar(std::cout, epochs, "epochs");
        for (std::int64_t epoch = 1; epoch <= epochs; ++epoch) {
            double total = 0;
            for (auto& b : loader) {
                const Tensor& x = b[0];
                const Tensor& y = b[1];
                opt.zero_grad();
                Tensor loss = scripted(inputs(x, y));
                loss.backward();
                opt.step();
                total += loss.item<double>() * static_cast<double>(x.size(0));
            }
            last = total / static_cast<double>(n);
            if (epoch % 10 == 0 || epoch == 1) {
                char text[64];
                std::snprintf(text, sizeof text, "loss %.4f  accuracy %.3f", last, accuracy(*model, points, labels));
                bar.set_postfix(text);
            }
            bar.update();
        }
    }
    const double acc = accuracy(*model, points, labels);

    // The compiled loss computes what the eager function computes, and the same gradients.
    const Tensor x = points.narrow(0, 0, batch).contiguous(), y = labels.narrow(0, 0, batch).contiguous();
    const auto loss_and_grads = [&](auto&& f) {
        opt.zero_grad();
        Tensor l = f(inputs(x, y));
        l.backward();
        std::vector<Tensor> g{l.detach()};
        for (const Tensor& p : params) g.push_back(p.grad().clone());
        return g;
    };
    const std::vector<Tensor> eager = loss_and_grads(loss_fn);
    const std::vector<Tensor> compiled = loss_and_grads([&](const std::vector<Tensor>& in) { return scripted(in); });
    double max_diff = 0;
    for (std::size_t i = 0; i < eager.size(); ++i)
        max_diff = std::max(max_diff, (eager[i] - compiled[i]).abs().max().item<double>());
    std::printf("final loss %.4f, accuracy %.3f; eager and jit on one batch: loss %.7f / %.7f, "
                "largest difference of loss and gradients %.2e\n\n",
                last, acc, eager[0].item<double>(), compiled[0].item<double>(), max_diff);

    // Time per training step (zero_grad, forward, backward, Adam step) and per forward +
    // backward alone, compiled vs eager, on full batches: rounds of 100 calls, jit and eager
    // alternating, the median round of each, in processor time (std::clock: a shared
    // machine's other load moves wall time a lot).
    // The parameters are restored after the timed Adam steps.
    const auto compare = [](auto&& jit_body, auto&& eager_body) {
        const auto round = [](auto& body) {
            const std::clock_t t0 = std::clock();
            for (int i = 0; i < 100; ++i) body();
            return 1e6 * static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC / 100;
        };
        std::vector<double> tj, te;
        for (int r = 0; r < 15; ++r) {
            tj.push_back(round(jit_body));
            te.push_back(round(eager_body));
        }
        std::sort(tj.begin(), tj.end());
        std::sort(te.begin(), te.end());
        return std::pair{tj[tj.size() / 2], te[te.size() / 2]};
    };
    const std::vector<Tensor> in = inputs(x, y);
    const auto eager_loss = [&](const std::vector<Tensor>& v) { return loss_fn(v); };
    const auto jit_loss = [&](const std::vector<Tensor>& v) { return scripted(v); };
    const auto fwd_bwd = [&](auto f) {
        return [&, f] {
            for (const Tensor& p : params) p.set_grad(Tensor{});
            f(in).backward();
        };
    };
    const auto [fb_jit, fb_eager] = compare(fwd_bwd(jit_loss), fwd_bwd(eager_loss));
    std::vector<Tensor> trained;  // the trained values: the timed steps change them
    for (const Tensor& p : params) trained.push_back(p.detach().clone());
    const auto train_step = [&](auto f) {
        return [&, f] {
            opt.zero_grad();
            f(in).backward();
            opt.step();
        };
    };
    const auto [st_jit, st_eager] = compare(train_step(jit_loss), train_step(eager_loss));
    {
        autograd::no_grad guard;
        for (std::size_t i = 0; i < params.size(); ++i) params[i].copy_(trained[i]);
    }
    std::printf("per batch of %lld: forward + backward jit %.1f us, eager %.1f us (jit %.2fx eager's speed, CPU time); "
                "training step with Adam jit %.1f us, eager %.1f us (%.2fx)\n\n",
                static_cast<long long>(batch), fb_jit, fb_eager, fb_eager / fb_jit, st_jit, st_eager,
                st_eager / st_jit);
    std::cout << scripted.debug_string();
    if (!(acc > 0.97) || max_diff > 1e-5) {
        std::cerr << "training did not converge or the compiled loss disagrees with eager\n";
        return 1;
    }
    return 0;
}
