// A small ResNet on scikit-learn's handwritten digits (1,797 8x8 images, the data set Debian's
// python3-sklearn ships): a Conv2d + BatchNorm2d stem, two residual blocks (conv-BN-ReLU-conv-BN
// plus the identity, or a strided 1x1 conv + BN shortcut when the shape changes), global average
// pooling and a Linear head, trained with SGD (momentum, weight decay) and a cosine schedule
// through data::DataLoader, under nn::script (the BatchNorm running statistics are graph
// inputs the compiled graph writes back). Prints a progress bar per epoch, then the test accuracy
// in eval mode (running statistics), and checks that the scripted model's eval predictions equal
// the eager model's.
//
//   resnet_digits [digits.csv.gz]
//
// Without the data (`apt-get install python3-sklearn`) the program says so and exits with 77
// (CTest's "skipped").
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <graft/graft.hpp>

#include "digits.hpp"

using namespace graft;
namespace F = graft::nn::functional;
using namespace digits_example;

namespace {

/// conv3x3-BN-ReLU-conv3x3-BN + shortcut, then ReLU (torchvision's BasicBlock).
struct BasicBlock : nn::Module {
    BasicBlock(std::int64_t in, std::int64_t out, std::int64_t stride)
        : Module("BasicBlock"),
          conv1(register_module("conv1", std::make_shared<nn::Conv2d>(in, out, 3, stride, 1, 1, 1, false))),
          bn1(register_module("bn1", std::make_shared<nn::BatchNorm2d>(out))),
          conv2(register_module("conv2", std::make_shared<nn::Conv2d>(out, out, 3, 1, 1, 1, 1, false))),
          bn2(register_module("bn2", std::make_shared<nn::BatchNorm2d>(out))) {
        if (stride != 1 || in != out)
            shortcut = register_module("shortcut", std::make_shared<nn::Sequential>(
                                                       std::make_shared<nn::Conv2d>(in, out, 1, stride, 0, 1, 1, false),
                                                       std::make_shared<nn::BatchNorm2d>(out)));
    }
    Tensor forward(const Tensor& x) override {
        const Tensor h = F::relu((*bn1)((*conv1)(x)));
        const Tensor y = (*bn2)((*conv2)(h));
        return F::relu(y + (shortcut ? (*shortcut)(x) : x));
    }
    std::shared_ptr<nn::Conv2d> conv1;
    std::shared_ptr<nn::BatchNorm2d> bn1;
    std::shared_ptr<nn::Conv2d> conv2;
    std::shared_ptr<nn::BatchNorm2d> bn2;
    std::shared_ptr<nn::Sequential> shortcut;
};

struct ResNet : nn::Module {
    ResNet()
        : Module("ResNet"),
          stem(register_module("stem", std::make_shared<nn::Sequential>(std::make_shared<nn::Conv2d>(1, 16, 3, 1, 1, 1, 1, false),
                                                                        std::make_shared<nn::BatchNorm2d>(16),
                                                                        std::make_shared<nn::ReLU>()))),
          layer1(register_module("layer1", std::make_shared<BasicBlock>(16, 16, 1))),
          layer2(register_module("layer2", std::make_shared<BasicBlock>(16, 32, 2))),
          fc(register_module("fc", std::make_shared<nn::Linear>(32, 10))) {}
    Tensor forward(const Tensor& x) override {
        const Tensor h = (*layer2)((*layer1)((*stem)(x)));  // [N, 32, 4, 4]
        return (*fc)(h.mean({2, 3}));                          // global average pooling
    }
    std::shared_ptr<nn::Sequential> stem;
    std::shared_ptr<BasicBlock> layer1, layer2;
    std::shared_ptr<nn::Linear> fc;
};

}  // namespace

int main(int argc, char** argv) {
    const std::string path = argc > 1 ? argv[1] : default_data;
    digits d;
    if (!read_digits(path, d)) {
        std::printf("digits data not found or unreadable at %s: install it with `apt-get install "
                    "python3-sklearn` or pass the path of digits.csv.gz\n",
                    path.c_str());
        return 77;
    }
    std::vector<std::size_t> train, test;
    split_80_20(d.labels.size(), train, test);
    std::printf("digits: %zu images (%zu for training, %zu for testing)\n", d.labels.size(), train.size(), test.size());

    manual_seed(0);
    auto model = std::make_shared<ResNet>();
    std::int64_t n_params = 0;
    for (const Tensor& p : model->parameters()) n_params += p.numel();
    std::printf("ResNet: %lld parameters, %zu buffers (BatchNorm running statistics)\n",
                static_cast<long long>(n_params), model->buffers().size());
    auto scripted = nn::script(model);  // train and eval modes each captured once
    const int epochs = 8;
    auto [images, labels] = batch(d, train, 0, train.size());
    data::DataLoader loader(data::TensorDataset(images, labels), {.batch_size = 32, .shuffle = true, .num_workers = 1});
    optim::SGD opt(model->parameters(), 0.05, 0.9, 0.0, 1e-4);
    optim::lr_scheduler::CosineAnnealingLR schedule(opt, epochs);
    for (int epoch = 1; epoch <= epochs; ++epoch) {
        model->train();
        data::progress bar(std::cout, loader.size(), "epoch " + std::to_string(epoch) + "/" + std::to_string(epochs));
        double loss_sum = 0;
        std::int64_t right = 0, seen = 0;
        for (auto& b : loader) {
            const Tensor& x = b[0];
            const Tensor& y = b[1];
            opt.zero_grad();
            const Tensor logits = scripted(x);
            const Tensor loss = F::cross_entropy(logits, y);
            loss.backward();
            opt.step();
            seen += x.size(0);
            loss_sum += loss.item<double>() * static_cast<double>(x.size(0));
            right += (argmax(logits, 1) == y).sum().item<std::int64_t>();
            char text[64];
            std::snprintf(text, sizeof text, "loss %.4f, train accuracy %.1f%%", loss_sum / static_cast<double>(seen),
                          100.0 * static_cast<double>(right) / static_cast<double>(seen));
            bar.set_postfix(text);
            bar.update();
        }
        schedule.step();
    }
    model->eval();
    auto [tx, ty] = batch(d, test, 0, test.size());
    const Tensor eager_logits = (*model)(tx);
    const Tensor scripted_logits = scripted(tx);
    const double acc = (argmax(eager_logits, 1) == ty).to(dtype::float64).mean().item<double>();
    const bool same = equal(eager_logits, scripted_logits);
    std::printf("test accuracy %.1f%% (eval mode: BatchNorm's running statistics, %lld batches counted)\n",
                100.0 * acc, static_cast<long long>(model->stem->at<nn::BatchNorm2d>(1)->num_batches_tracked.item<std::int64_t>()));
    std::printf("nn::script's eval logits %s the eager model's\n", same ? "equal" : "DIFFER FROM");
    return acc >= 0.95 && same ? 0 : 1;
}
