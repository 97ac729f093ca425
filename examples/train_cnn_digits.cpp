// A small CNN on scikit-learn's handwritten digits (1,797 8x8 images of 0-9, the data set
// Debian's python3-sklearn ships as digits.csv.gz): Conv2d, MaxPool2d, Linear, cross_entropy
// and Adam, trained on 80% of the images and tested on the other 20%. Prints a progress bar per
// epoch, the test accuracy and the confusion matrix, saves the model as a safetensors file and
// loads it back into a fresh model, whose accuracy must be the same.
//
//   train_cnn_digits [digits.csv.gz]          train, test, save digits_cnn.safetensors
//   train_cnn_digits --eval [digits.csv.gz]   a second run: load the saved model and test it
//
// The data: `apt-get install python3-sklearn` puts it at
// /usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz (the default path); each
// line is 64 pixel values (0-16) and the label. Without it the program says so and exits with
// 77 (CTest's "skipped").
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <graft/graft.hpp>

#include "digits.hpp"

using namespace graft;
namespace F = graft::nn::functional;

using namespace digits_example;

int main(int argc, char** argv) {
    bool eval_only = false;
    std::string path = default_data;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--eval") == 0) eval_only = true;
        else path = argv[i];
    }
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

    std::array<std::array<int, 10>, 10> confusion{};
    if (eval_only) {
        auto model = make_model();
        nn::load_state_dict(*model, model_file);
        const double acc = evaluate(*model, d, test, confusion);
        print_confusion(confusion);
        std::printf("loaded %s: test accuracy %.1f%%\n", model_file, 100.0 * acc);
        return acc >= 0.95 ? 0 : 1;
    }

    manual_seed(0);
    auto model = make_model();
    optim::Adam opt(model->parameters(), 3e-3);
    const int epochs = 15;
    const std::size_t batch_size = 32;
    std::mt19937 rng(1);
    std::vector<std::size_t> shuffled = train;
    for (int epoch = 1; epoch <= epochs; ++epoch) {
        model->train();
        std::shuffle(shuffled.begin(), shuffled.end(), rng);
        double loss_sum = 0;
        int right = 0;
        for (std::size_t b = 0; b < shuffled.size(); b += batch_size) {
            const std::size_t e = std::min(b + batch_size, shuffled.size());
            auto [x, y] = batch(d, shuffled, b, e);
            opt.zero_grad();
            const Tensor logits = (*model)(x);
            const Tensor loss = F::cross_entropy(logits, y);
            loss.backward();
            opt.step();
            loss_sum += loss.item<double>() * static_cast<double>(e - b);
            right += static_cast<int>((argmax(logits, 1) == y).sum().item<std::int64_t>());
        }
        const int filled = 20 * epoch / epochs;
        std::printf("epoch %2d/%d [%s%s] loss %.4f, train accuracy %.1f%%\n", epoch, epochs,
                    std::string(static_cast<std::size_t>(filled), '#').c_str(),
                    std::string(static_cast<std::size_t>(20 - filled), '.').c_str(),
                    loss_sum / static_cast<double>(train.size()),
                    100.0 * right / static_cast<double>(train.size()));
    }
    const double acc = evaluate(*model, d, test, confusion);
    print_confusion(confusion);
    std::printf("test accuracy %.1f%%\n", 100.0 * acc);

    // Save, then load into a fresh model (another initialization): the same predictions.
    nn::save_state_dict(*model, model_file);
    manual_seed(123);
    auto reloaded = make_model();
    nn::load_state_dict(*reloaded, model_file);
    std::array<std::array<int, 10>, 10> confusion2{};
    const double acc2 = evaluate(*reloaded, d, test, confusion2);
    std::printf("saved %s and loaded it into a fresh model: test accuracy %.1f%%%s\n", model_file, 100.0 * acc2,
                acc2 == acc ? " (the same)" : " (DIFFERENT)");
    return acc >= 0.95 && acc2 == acc ? 0 : 1;
}
