// An LSTM sequence model: predict the next value of noisy sine waves.
//
// The data: waves sin(w t + phi) of random frequency w and phase phi, sampled at 40 steps with
// a little noise, made by graft. The model: nn::LSTM(1, 32, 2 layers, batch_first) reading the
// wave, and an nn::Linear(32, 1) head predicting, at every step, the next sample, trained with
// mse_loss and optim::Adam, as one writes it with torch.nn. The training step runs through
// nn::script (the profiling executor over the captured graph: per step one matmul, one fused
// LSTM cell op, their backward). At the end the model is compared on fresh waves with the
// baseline that repeats the last sample: the model must be far better (the program fails
// otherwise, so the example checks that it learned).
#include <cmath>
#include <cstdio>
#include <memory>
#include <numbers>
#include <tuple>
#include <vector>

#include <graft/graft.hpp>

using namespace graft;

namespace {

constexpr std::int64_t steps = 40;

/// n noisy waves [n, steps + 1, 1]: inputs are samples 0..steps-1, targets 1..steps.
Tensor make_waves(std::int64_t n, generator& gen) {
    const Tensor w = rand({n, 1}, dtype::float32, gen) * 0.4 + 0.2;  // radians per step
    const Tensor phi = rand({n, 1}, dtype::float32, gen) * (2 * std::numbers::pi);
    const Tensor t = arange(0, steps + 1).to(dtype::float32).reshape({1, steps + 1});
    return (sin(w * t + phi) + randn({n, steps + 1}, dtype::float32, gen) * 0.05).reshape({n, steps + 1, 1});
}

/// The LSTM and its head: a prediction of the next sample at every step, [N, steps, 1].
struct Predictor : nn::Module {
    Predictor() : Module("Predictor") {
        lstm = register_module("lstm", std::make_shared<nn::LSTM>(1, 32, nn::rnn_options{.num_layers = 2, .batch_first = true}));
        head = register_module("head", std::make_shared<nn::Linear>(32, 1));
    }
    Tensor forward(const Tensor& x) override { return head->forward(lstm->forward(x)); }
    std::shared_ptr<nn::LSTM> lstm;
    std::shared_ptr<nn::Linear> head;
};

}  // namespace

int main() {
    manual_seed(3);
    generator data(11);
    const std::int64_t batch = 32, iterations = 250;
    auto model = std::make_shared<Predictor>();
    optim::Adam opt(model->parameters(), /*lr=*/0.01);
    // The loss of a batch under the profiling executor; backward() reaches the module's parameters.
    auto loss_of = nn::script(model, [](Predictor& m, const Tensor& x, const Tensor& y) {
        return nn::functional::mse_loss(m.forward(x), y);
    });

    std::printf("LSTM(1, 32, num_layers=2) + Linear(32, 1), next value of noisy sine waves (%lld steps), batch %lld\n",
                static_cast<long long>(steps), static_cast<long long>(batch));
    for (std::int64_t it = 1; it <= iterations; ++it) {
        const Tensor waves = make_waves(batch, data);
        const Tensor x = waves.narrow(1, 0, steps).contiguous(), y = waves.narrow(1, 1, steps).contiguous();
        opt.zero_grad();
        const Tensor loss = loss_of(x, y);
        loss.backward();
        opt.step();
        if (it % 50 == 0 || it == 1)
            std::printf("iteration %4lld  training mse %.5f\n", static_cast<long long>(it), loss.item<double>());
    }

    // Fresh waves: the model against repeating the last sample, over the second half of each
    // wave (where the model has seen enough of it to know its frequency).
    const autograd::no_grad guard;
    model->eval();
    const Tensor waves = make_waves(256, data);
    const Tensor x = waves.narrow(1, 0, steps).contiguous(), y = waves.narrow(1, 1, steps);
    const Tensor pred = model->forward(x);
    const auto half = [](const Tensor& t) { return t.narrow(1, steps / 2, steps / 2); };
    const double model_mse = nn::functional::mse_loss(half(pred), half(y)).item<double>();
    const double last_mse = nn::functional::mse_loss(half(x), half(y)).item<double>();
    std::printf("test mse over steps %lld..%lld: model %.5f, repeating the last sample %.5f (%.1fx better)\n",
                static_cast<long long>(steps / 2), static_cast<long long>(steps - 1), model_mse, last_mse,
                last_mse / model_mse);
    if (!(model_mse < 0.25 * last_mse)) {
        std::printf("FAILED: the model did not learn to predict the waves\n");
        return 1;
    }
    return 0;
}
