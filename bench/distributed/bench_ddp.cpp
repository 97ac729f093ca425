// DistributedDataParallel's cost per training step (issue 17): the CNN of
// examples/train_cnn_digits_ddp.cpp at its global batch of 32 images split across the ranks,
// Adam, run under mpirun with 1 and 2 ranks (bench/distributed/run_ddp.sh runs both). In one
// process it measures, per step (zero_grad, forward, backward, Adam step; wall time, median of
// all timed steps over interleaved rounds):
//   local          the same step without DDP (computation only, each rank alone)
//   ddp ... on     DDP, all-reduces launched from the backward hooks (the default)
//   ddp ... off    the same buckets launched after backward (ddp_options::overlap = false)
//   all-reduce     the buckets' non-blocking all-reduces alone, launched together and waited for
// and the share of the all-reduce time that overlapping hides: (off - on) / allreduce.
// The default bucket cap (25 MB) puts this model's 6,090 parameters (24 KB) in one bucket, which
// can only start when backward has finished: nothing to hide by construction. A cap of 5 KB
// gives 4 buckets (the Linear layer, conv2's bias, conv2's weight, conv1), whose
// all-reduces can overlap the convolutions' backward. Inputs are random images of the digits' shape (the timing does not depend on
// the values).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <graft/distributed.hpp>
#include <graft/graft.hpp>

#include "../../examples/digits.hpp"

using namespace graft;
namespace F = graft::nn::functional;
namespace dist = graft::distributed;

namespace {

using clock_type = std::chrono::steady_clock;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

std::string load_average() {
    std::ifstream f("/proc/loadavg");
    std::string a, b, c;
    f >> a >> b >> c;
    return a + " " + b + " " + c;
}

struct config {
    std::string name;
    bool ddp = false;
    double cap_mb = 25.0;
    bool overlap = true;
    std::vector<double> samples;  // microseconds per step
};

}  // namespace

int main(int argc, char** argv) {
    dist::init_process_group();
    const int rank = dist::get_rank(), world = dist::get_world_size();
    const int rounds = argc > 1 ? std::atoi(argv[1]) : 20, steps = argc > 2 ? std::atoi(argv[2]) : 50;
    const std::int64_t local_batch = (32 + world - 1) / world;

    manual_seed(1 + static_cast<std::uint64_t>(rank));
    auto model = digits_example::make_model();
    optim::Adam opt(model->parameters(), 3e-3);
    const Tensor x = randn({local_batch, 1, 8, 8});
    std::vector<std::int64_t> labels(static_cast<std::size_t>(local_batch));
    for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int64_t>((i * 7 + static_cast<std::size_t>(rank)) % 10);
    const Tensor y = from_vector(labels, {local_batch});

    std::vector<config> configs{{"local", false, 25.0, true, {}},
                                {"ddp 25 MB cap, overlap on", true, 25.0, true, {}},
                                {"ddp 25 MB cap, overlap off", true, 25.0, false, {}},
                                {"ddp 5 KB cap, overlap on", true, 0.005, true, {}},
                                {"ddp 5 KB cap, overlap off", true, 0.005, false, {}}};
    std::vector<std::size_t> buckets_of_cap[2];  // element counts per bucket, 25 MB and 5 KB
    std::vector<double> allreduce_samples[2];

    const auto step = [&](nn::Module& m) {
        opt.zero_grad();
        F::cross_entropy(m(x), y).backward();
        opt.step();
    };
    for (int round = 0; round < rounds; ++round) {
        for (config& c : configs) {
            std::unique_ptr<nn::parallel::DistributedDataParallel> ddp;
            if (c.ddp) ddp = std::make_unique<nn::parallel::DistributedDataParallel>(
                           model, nn::parallel::ddp_options{.bucket_cap_mb = c.cap_mb, .overlap = c.overlap});
            nn::Module& m = ddp ? static_cast<nn::Module&>(*ddp) : *model;
            if (ddp && round == 0) {
                std::vector<std::size_t> sizes;
                const auto params = model->parameters();
                for (const auto& b : ddp->bucket_indices()) {
                    std::size_t n = 0;
                    for (std::size_t k : b) n += static_cast<std::size_t>(params[k].numel());
                    sizes.push_back(n);
                }
                buckets_of_cap[c.cap_mb > 1 ? 0 : 1] = sizes;
            }
            for (int i = 0; i < 5; ++i) step(m);  // warm up
            dist::barrier();
            for (int i = 0; i < steps; ++i) {
                const auto t0 = clock_type::now();
                step(m);
                c.samples.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
            }
            dist::barrier();
        }
        // The same buckets' all-reduces alone: launched together, then waited for (what the
        // no-overlap configuration adds to a step at best).
        for (int k = 0; k < 2; ++k) {
            std::vector<Tensor> flats;
            for (std::size_t n : buckets_of_cap[k]) flats.push_back(randn({static_cast<std::int64_t>(n)}));
            dist::barrier();
            for (int i = 0; i < steps; ++i) {
                const auto t0 = clock_type::now();
                std::vector<dist::work> works;
                for (Tensor& f : flats) works.push_back(dist::all_reduce(f, dist::reduce_op::avg, true));
                for (dist::work& w : works) w.wait();
                allreduce_samples[k].push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
            }
        }
    }

    if (rank == 0) {
        std::printf("DDP step of the digits CNN, global batch 32 (%lld per rank), %d ranks, %d rounds x %d steps, "
                    "median wall time per step; load average %s\n",
                    static_cast<long long>(local_batch), world, rounds, steps, load_average().c_str());
        const double local = median(configs[0].samples);
        for (const config& c : configs)
            std::printf("  %-28s %9.1f us  (%.2fx local)\n", c.name.c_str(), median(c.samples), median(c.samples) / local);
        for (int k = 0; k < 2; ++k) {
            const double ar = median(allreduce_samples[k]);
            const double on = median(configs[1 + 2 * k].samples), off = median(configs[2 + 2 * k].samples);
            std::printf("  %s cap: %zu bucket(s); their all-reduces alone %.1f us; hidden by overlap: "
                        "(off - on) / all-reduce = %.0f%%\n",
                        k == 0 ? "25 MB" : "5 KB", buckets_of_cap[k].size(), ar, ar > 0 ? 100.0 * (off - on) / ar : 0.0);
        }
    }
    dist::destroy_process_group();
    return 0;
}
