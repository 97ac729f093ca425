// bench/rnn/bench_rnn_torch.cpp: libtorch's side of bench/rnn (see bench/rnn/run.sh and
// bench/README.md, "Recurrent layers and BatchNorm against libtorch"). C++17: libtorch's
// headers are not C++20-clean, so this is its own program, built only when libtorch is found.
// One thread (torch::set_num_threads(1); run.sh also sets OMP_NUM_THREADS and
// OPENBLAS_NUM_THREADS to 1, so no BLAS worker thread escapes the thread CPU time), thread CPU
// time per training step (forward, sum, backward), repetitions of every row interleaved;
// prints "<row>/<tag> <median ms> <min ms>".
//   bench_rnn_torch [repetitions] [tag = torch]
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

namespace {

double thread_cpu_ms() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return 1e3 * static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_nsec);
}

struct row {
    std::string name;
    std::function<void()> step;
    std::vector<double> ms;
};

}  // namespace

int main(int argc, char** argv) {
    const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 15;
    const std::string tag = argc > 2 ? argv[2] : "torch";
    torch::set_num_threads(1);
    torch::manual_seed(0);
    std::vector<row> rows;
    // LSTM: seq 32, batch 16, input 64, hidden 128; the input is data (no gradient).
    for (int layers : {1, 2}) {
        auto lstm = torch::nn::LSTM(torch::nn::LSTMOptions(64, 128).num_layers(layers));
        const torch::Tensor x = torch::randn({32, 16, 64});
        rows.push_back({"lstm" + std::to_string(layers) + "/" + tag, [lstm, x]() mutable {
                            lstm->zero_grad();
                            std::get<0>(lstm->forward(x)).sum().backward();
                        }, {}});
    }
    // BatchNorm2d in training mode on [32, 64, 28, 28], the input requiring grad (a hidden layer).
    {
        auto bn = torch::nn::BatchNorm2d(64);
        const torch::Tensor x = torch::randn({32, 64, 28, 28}).requires_grad_(true);
        rows.push_back({"batchnorm2d/" + tag, [bn, x]() mutable {
                            bn->zero_grad();
                            x.mutable_grad() = torch::Tensor();
                            bn->forward(x).sum().backward();
                        }, {}});
    }
    for (auto& r : rows)
        for (int i = 0; i < 3; ++i) r.step();  // warm-up
    for (int i = 0; i < reps; ++i)
        for (auto& r : rows) {
            const double t0 = thread_cpu_ms();
            r.step();
            r.ms.push_back(thread_cpu_ms() - t0);
        }
    for (auto& r : rows) {
        std::sort(r.ms.begin(), r.ms.end());
        std::printf("%s %.4f %.4f\n", r.name.c_str(), r.ms[r.ms.size() / 2], r.ms.front());
    }
    return 0;
}
