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
#include <filesystem>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <graft/graft.hpp>

using namespace graft;
namespace F = graft::nn::functional;

namespace {

constexpr const char* default_data = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
constexpr const char* model_file = "digits_cnn.safetensors";

struct digits {
    std::vector<float> pixels;         // n x 64, scaled to [0, 1]
    std::vector<std::int64_t> labels;  // n
};

/// Reads digits.csv.gz through `gzip -dc` (every Debian system has gzip).
bool read_digits(const std::string& path, digits& d) {
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
std::pair<Tensor, Tensor> batch(const digits& d, const std::vector<std::size_t>& idx, std::size_t begin,
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

std::shared_ptr<nn::Sequential> make_model() {
    return std::make_shared<nn::Sequential>(
        std::make_shared<nn::Conv2d>(1, 16, 3, 1, 1), std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2),
        std::make_shared<nn::Conv2d>(16, 32, 3, 1, 1), std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2),
        std::make_shared<nn::Flatten>(), std::make_shared<nn::Dropout>(0.2), std::make_shared<nn::Linear>(32 * 2 * 2, 10));
}

/// Test accuracy and the confusion matrix (rows: true digit, columns: predicted).
double evaluate(nn::Module& model, const digits& d, const std::vector<std::size_t>& test,
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

void print_confusion(const std::array<std::array<int, 10>, 10>& c) {
    std::printf("confusion matrix (rows: true digit, columns: predicted)\n     ");
    for (int j = 0; j < 10; ++j) std::printf("%4d", j);
    std::printf("\n");
    for (int i = 0; i < 10; ++i) {
        std::printf("  %d: ", i);
        for (int j = 0; j < 10; ++j) std::printf("%4d", c[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)]);
        std::printf("\n");
    }
}

}  // namespace

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
    // A fixed 80/20 split (the same in every run, so a second run tests the same images).
    std::vector<std::size_t> order(d.labels.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::shuffle(order.begin(), order.end(), std::mt19937(42));
    const std::size_t n_train = order.size() * 4 / 5;
    const std::vector<std::size_t> train(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n_train));
    const std::vector<std::size_t> test(order.begin() + static_cast<std::ptrdiff_t>(n_train), order.end());
    std::printf("digits: %zu images (%zu for training, %zu for testing)\n", order.size(), train.size(), test.size());

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
