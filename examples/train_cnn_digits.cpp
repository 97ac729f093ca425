// A small CNN on scikit-learn's handwritten digits (1,797 8x8 images of 0-9, the data set
// Debian's python3-sklearn ships as digits.csv.gz): Conv2d, MaxPool2d, Linear, cross_entropy
// and Adam, trained on 80% of the images and tested on the other 20%. A data::DataLoader over a
// data::TensorDataset of the training images shuffles them every epoch and collates batches of
// 32 on its worker thread; a data::progress bar per epoch shows the loss and accuracy so far.
// Prints the test accuracy and the confusion matrix, saves the model as a safetensors file and
// loads it back into a fresh model, whose accuracy must be the same.
//
//   train_cnn_digits [digits.csv.gz]          train, test, save digits_cnn.safetensors
//   train_cnn_digits --eval [digits.csv.gz]   a second run: load the saved model and test it
//
// The data: `apt-get install python3-sklearn` puts it at
// /usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz (the default path); each
// line is 64 pixel values (0-16) and the label. Without it the program says so and exits with
// 77 (CTest's "skipped").
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
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
    // The training images [n, 1, 8, 8] and labels [n], shuffled anew every epoch by randperm draws
    // from the default generator (manual_seed(0) above makes them reproducible).
    auto [images, labels] = batch(d, train, 0, train.size());
    data::DataLoader loader(data::TensorDataset(images, labels), {.batch_size = 32, .shuffle = true, .num_workers = 1});
    for (int epoch = 1; epoch <= epochs; ++epoch) {
        model->train();
        data::progress bar(std::cout, loader.size(), "epoch " + std::to_string(epoch) + "/" + std::to_string(epochs));
        double loss_sum = 0;
        std::int64_t right = 0, seen = 0;
        for (auto& b : loader) {
            const Tensor& x = b[0];
            const Tensor& y = b[1];
            opt.zero_grad();
            const Tensor logits = (*model)(x);
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
