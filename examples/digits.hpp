#pragma once
// The digits data set and the small CNN of examples/train_cnn_digits.cpp, shared with
// examples/distributed/train_cnn_digits_ddp.cpp: reading scikit-learn's digits.csv.gz, batches,
// the model, the test accuracy and the confusion matrix.
#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <graft/graft.hpp>

namespace digits_example {

using namespace graft;

inline constexpr const char* default_data = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
inline constexpr const char* model_file = "digits_cnn.safetensors";

struct digits {
    std::vector<float> pixels;         // n x 64, scaled to [0, 1]
    std::vector<std::int64_t> labels;  // n
};

/// Reads digits.csv.gz through `gzip -dc` (every Debian system has gzip).
inline bool read_digits(const std::string& path, digits& d) {
    if (!std::filesystem::exists(path)) return false;
    const std::string cmd = "gzip -dc '" + path + "'";
    FILE* pipe = popen(cmd.c_str(), "r");
    if (!pipe) return false;
    std::string text;
    std::array<char, 65536> buf{};
    for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0;) text.append(buf.data(), n);
    if (pclose(pipe) != 0) return false;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        if (line.empty()) continue;
        std::istringstream fields(line);
        std::string v;
        std::vector<double> row;
        while (std::getline(fields, v, ',')) row.push_back(std::stod(v));
        if (row.size() != 65) return false;
        for (int i = 0; i < 64; ++i) d.pixels.push_back(static_cast<float>(row[static_cast<std::size_t>(i)] / 16.0));
        d.labels.push_back(static_cast<std::int64_t>(row[64]));
    }
    return !d.labels.empty();
}

/// Images [n, 1, 8, 8] and labels [n] of the samples `idx`.
inline std::pair<Tensor, Tensor> batch(const digits& d, const std::vector<std::size_t>& idx, std::size_t begin,
                                std::size_t end) {
    std::vector<float> px;
    std::vector<std::int64_t> lb;
    for (std::size_t k = begin; k < end; ++k) {
        const std::size_t i = idx[k];
        px.insert(px.end(), d.pixels.begin() + static_cast<std::ptrdiff_t>(64 * i),
                  d.pixels.begin() + static_cast<std::ptrdiff_t>(64 * (i + 1)));
        lb.push_back(d.labels[i]);
    }
    const auto n = static_cast<std::int64_t>(end - begin);
    return {from_vector(px, {n, 1, 8, 8}), from_vector(lb, {n})};
}

inline std::shared_ptr<nn::Sequential> make_model() {
    return std::make_shared<nn::Sequential>(
        std::make_shared<nn::Conv2d>(1, 16, 3, 1, 1), std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2),
        std::make_shared<nn::Conv2d>(16, 32, 3, 1, 1), std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2),
        std::make_shared<nn::Flatten>(), std::make_shared<nn::Dropout>(0.2), std::make_shared<nn::Linear>(32 * 2 * 2, 10));
}

/// Test accuracy and the confusion matrix (rows: true digit, columns: predicted).
inline double evaluate(nn::Module& model, const digits& d, const std::vector<std::size_t>& test,
                std::array<std::array<int, 10>, 10>& confusion) {
    autograd::no_grad guard;
    model.eval();
    auto [x, y] = batch(d, test, 0, test.size());
    const Tensor pred = argmax(model(x), 1);
    confusion = {};
    int right = 0;
    for (std::size_t i = 0; i < test.size(); ++i) {
        const auto t = y[static_cast<std::int64_t>(i)].item<std::int64_t>();
        const auto p = pred[static_cast<std::int64_t>(i)].item<std::int64_t>();
        ++confusion[static_cast<std::size_t>(t)][static_cast<std::size_t>(p)];
        right += t == p;
    }
    return static_cast<double>(right) / static_cast<double>(test.size());
}

inline void print_confusion(const std::array<std::array<int, 10>, 10>& c) {
    std::printf("confusion matrix (rows: true digit, columns: predicted)\n     ");
    for (int j = 0; j < 10; ++j) std::printf("%4d", j);
    std::printf("\n");
    for (int i = 0; i < 10; ++i) {
        std::printf("  %d: ", i);
        for (int j = 0; j < 10; ++j) std::printf("%4d", c[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)]);
        std::printf("\n");
    }
}

/// A fixed 80/20 split of n samples (the same in every run and on every rank).
inline void split_80_20(std::size_t n, std::vector<std::size_t>& train, std::vector<std::size_t>& test) {
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::shuffle(order.begin(), order.end(), std::mt19937(42));
    const std::size_t n_train = n * 4 / 5;
    train.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n_train));
    test.assign(order.begin() + static_cast<std::ptrdiff_t>(n_train), order.end());
}

}  // namespace digits_example
