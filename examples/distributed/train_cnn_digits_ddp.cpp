// examples/train_cnn_digits.cpp's CNN trained data-parallel over MPI: every rank takes its
// shard of each epoch's training images (distributed::DistributedSampler), the gradients are
// averaged across ranks during backward (nn::parallel::DistributedDataParallel), so every rank
// takes the same Adam step and holds the same model. The global batch is 32 images, as in the
// one-process example, split across the ranks; the test accuracy should be the same (~98%).
//
//   mpirun -np 2 ./train_cnn_digits_ddp [digits.csv.gz]
//
// As root Open MPI needs --allow-run-as-root; more ranks than cores need --oversubscribe.
#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include <graft/distributed.hpp>
#include <graft/graft.hpp>

#include "../digits.hpp"

using namespace graft;
using namespace digits_example;
namespace F = graft::nn::functional;
namespace dist = graft::distributed;

int main(int argc, char** argv) {
    dist::init_process_group();
    const int rank = dist::get_rank(), world = dist::get_world_size();
    const std::string path = argc > 1 ? argv[1] : default_data;
    digits d;
    if (!read_digits(path, d)) {
        if (rank == 0)
            std::printf("digits data not found at %s: apt-get install python3-sklearn, or pass its path\n",
                        path.c_str());
        dist::destroy_process_group();
        return 77;
    }
    std::vector<std::size_t> train, test;
    split_80_20(d.labels.size(), train, test);

    manual_seed(static_cast<std::uint64_t>(rank));  // different initial values: DDP broadcasts rank 0's
    auto model = make_model();
    auto ddp = std::make_shared<nn::parallel::DistributedDataParallel>(model);
    optim::Adam opt(model->parameters(), 3e-3);
    dist::DistributedSampler sampler(static_cast<std::int64_t>(train.size()), std::nullopt, std::nullopt, true, 1);
    const int epochs = 15;
    const std::size_t global_batch = 32;
    const std::size_t local_batch = (global_batch + static_cast<std::size_t>(world) - 1) / static_cast<std::size_t>(world);
    if (rank == 0)
        std::printf("digits on %d ranks: %zu training images, %zu per rank per step, %zu for testing\n", world,
                    train.size(), local_batch, test.size());
    for (int epoch = 1; epoch <= epochs; ++epoch) {
        ddp->train();
        sampler.set_epoch(epoch);
        std::vector<std::size_t> mine;
        for (std::int64_t i : sampler.indices()) mine.push_back(train[static_cast<std::size_t>(i)]);
        double loss_sum = 0;
        for (std::size_t b = 0; b < mine.size(); b += local_batch) {  // every rank takes as many steps
            const std::size_t e = std::min(b + local_batch, mine.size());
            auto [x, y] = batch(d, mine, b, e);
            opt.zero_grad();
            const Tensor loss = F::cross_entropy((*ddp)(x), y);
            loss.backward();
            opt.step();
            loss_sum += loss.item<double>() * static_cast<double>(e - b);
        }
        Tensor total = full({1}, loss_sum / static_cast<double>(mine.size()), dtype::float64);
        dist::all_reduce(total, dist::reduce_op::avg);
        const int filled = 20 * epoch / epochs;
        if (rank == 0)
            std::printf("epoch %2d/%d [%s%s] loss %.4f\n", epoch, epochs,
                        std::string(static_cast<std::size_t>(filled), '#').c_str(),
                        std::string(static_cast<std::size_t>(20 - filled), '.').c_str(), total.item<double>());
    }
    std::array<std::array<int, 10>, 10> confusion{};
    const double acc = evaluate(*model, d, test, confusion);
    // Every rank holds the same model: the accuracies agree.
    Tensor accs = full({1}, acc, dtype::float64);
    dist::all_reduce(accs, dist::reduce_op::avg);
    if (rank == 0) {
        print_confusion(confusion);
        std::printf("test accuracy %.1f%% on rank 0, %.1f%% averaged over the %d ranks\n", 100.0 * acc,
                    100.0 * accs.item<double>(), world);
    }
    const bool ok = acc >= 0.95 && accs.item<double>() == acc;
    dist::destroy_process_group();
    return ok ? 0 : 1;
}
