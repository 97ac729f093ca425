// bench/rnn/bench_rnn_graft.cpp: graft's side of bench/rnn (see bench/rnn/run.sh and
// bench/README.md, "Recurrent layers and BatchNorm against libtorch"). One thread, thread CPU
// time per training step (forward, sum, backward), repetitions of every row interleaved;
// prints "<row> <median ms> <min ms>". Rows:
//   lstm<L>/eager            nn::LSTM, the fused cell op per step (the default)
//   lstm<L>/eager_composite  the same with the gate math as ordinary ops (nn::detail::fused_cells = false)
//   lstm<L>/script           nn::script of the loss (jit, one thread), fused cell ops
//   lstm<L>/script_composite the same with ordinary ops (fused by the executor where it can)
//   batchnorm2d/eager, batchnorm2d/script
//   bench_rnn_graft [repetitions]
#include <graft/graft.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <vector>

using graft::Tensor;
namespace nn = graft::nn;

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

graft::jit::options one_thread() {
    graft::jit::options o;
    o.num_threads = 1;
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 15;
    graft::manual_seed(0);
    std::vector<row> rows;
    for (int layers : {1, 2}) {
        const std::string tag = "lstm" + std::to_string(layers);
        auto lstm = std::make_shared<nn::LSTM>(64, 128, nn::rnn_options{.num_layers = layers});
        const Tensor x = graft::randn({32, 16, 64});
        const auto loss = [](nn::LSTM& m, const Tensor& in) { return m(in, {}).output.sum(); };
        for (const bool fused : {true, false}) {
            const std::string suffix = fused ? "" : "_composite";
            rows.push_back({tag + "/eager" + suffix, [lstm, x, fused] {
                                nn::detail::fused_cells = fused;
                                lstm->zero_grad();
                                (*lstm)(x, {}).output.sum().backward();
                                nn::detail::fused_cells = true;
                            }, {}});
            auto script = std::make_shared<decltype(nn::script(lstm, loss, one_thread()))>(
                nn::script(lstm, loss, one_thread()));
            rows.push_back({tag + "/script" + suffix, [lstm, x, fused, script] {
                                nn::detail::fused_cells = fused;  // read when the script captures
                                lstm->zero_grad();
                                (*script)(x).backward();
                                nn::detail::fused_cells = true;
                            }, {}});
        }
    }
    {
        auto bn = std::make_shared<nn::BatchNorm2d>(64);
        Tensor x = graft::randn({32, 64, 28, 28}).requires_grad_(true);
        rows.push_back({"batchnorm2d/eager", [bn, x]() mutable {
                            bn->zero_grad();
                            x.set_grad(Tensor());
                            (*bn)(x).sum().backward();
                        }, {}});
        auto script = std::make_shared<nn::scripted_module>(nn::script(std::shared_ptr<nn::Module>(bn), one_thread()));
        rows.push_back({"batchnorm2d/script", [bn, x, script]() mutable {
                            bn->zero_grad();
                            x.set_grad(Tensor());
                            (*script)(x).sum().backward();
                        }, {}});
    }
    for (auto& r : rows)
        for (int i = 0; i < 3; ++i) r.step();  // warm-up (the scripts profile and compile here)
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
