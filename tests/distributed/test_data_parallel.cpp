// nn::parallel::DistributedDataParallel under mpirun (-np 2 and -np 3): gradients against one
// process on the concatenated batch (computed on every rank from the same data), parameters
// identical across ranks over 50 steps, no_sync accumulation, buckets, ranks whose backward
// produces the gradients in different orders, unused parameters, buffers broadcast from rank 0.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include <graft/distributed.hpp>
#include <graft/graft.hpp>

using namespace graft;
namespace dist = graft::distributed;
namespace F = graft::nn::functional;

namespace {
std::shared_ptr<nn::Sequential> mlp() {
    return std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(3, 5, true, dtype::float64),
                                            std::make_shared<nn::Tanh>(),
                                            std::make_shared<nn::Linear>(5, 2, true, dtype::float64));
}
/// The gradients of mean((model(x) - y)^2) on a model with the given parameters.
std::vector<Tensor> reference_grads(const std::vector<Tensor>& params, const std::vector<std::pair<Tensor, Tensor>>& batches) {
    auto ref = mlp();
    {
        autograd::no_grad guard;
        auto rp = ref->parameters();
        for (std::size_t i = 0; i < rp.size(); ++i) rp[i].copy_(params[i]);
    }
    for (const auto& [x, y] : batches) F::mse_loss((*ref)(x), y).backward();
    std::vector<Tensor> g;
    for (const Tensor& p : ref->parameters()) g.push_back(p.grad());
    return g;
}
}  // namespace

TEST_CASE("DDP: gradients equal one process's on the concatenated batch, any bucket size, with and without overlap",
          "[distributed]") {
    const int r = dist::get_rank(), p = dist::get_world_size();
    // One bucket, or one per parameter (each alone passes the cap); buckets launched from the
    // hooks during backward, or all after it.
    for (const auto& [cap_mb, overlap] : {std::pair{25.0, true}, std::pair{1e-6, true}, std::pair{1e-6, false}}) {
        CAPTURE(cap_mb, overlap);
        manual_seed(100 + static_cast<std::uint64_t>(r));  // different initial values per rank: DDP broadcasts rank 0's
        auto model = mlp();
        nn::parallel::DistributedDataParallel ddp(model, {.bucket_cap_mb = cap_mb, .overlap = overlap});
        const auto buckets = ddp.bucket_indices();
        CHECK(buckets.front().front() == model->parameters().size() - 1);  // reverse registration order
        CHECK(buckets.size() == (cap_mb > 1 ? 1u : model->parameters().size()));
        manual_seed(1);  // the same global batch everywhere
        const Tensor x = randn({4 * p, 3}, dtype::float64), y = randn({4 * p, 2}, dtype::float64);
        const Tensor xs = x.narrow(0, 4 * r, 4), ys = y.narrow(0, 4 * r, 4);
        F::mse_loss(ddp(xs), ys).backward();
        const auto ref = reference_grads(model->parameters(), {{x, y}});
        const auto params = model->parameters();
        for (std::size_t i = 0; i < params.size(); ++i) CHECK(allclose(params[i].grad(), ref[i], 1e-10, 1e-12));
    }
}

TEST_CASE("DDP: parameters stay identical across ranks over 50 SGD steps", "[distributed]") {
    const int r = dist::get_rank(), p = dist::get_world_size();
    manual_seed(7 + static_cast<std::uint64_t>(r));
    auto model = mlp();
    nn::parallel::DistributedDataParallel ddp(model);
    optim::SGD opt(model->parameters(), 0.05, 0.9);
    for (int step = 0; step < 50; ++step) {
        const Tensor x = randn({6, 3}, dtype::float64), y = randn({6, 2}, dtype::float64);  // each rank its own
        opt.zero_grad();
        F::mse_loss(ddp(x), y).backward();
        opt.step();
    }
    for (Tensor w : model->parameters()) {
        Tensor flat = w.detach().reshape({w.numel()}).clone();
        std::vector<Tensor> all;
        for (int i = 0; i < p; ++i) all.push_back(zeros({w.numel()}, dtype::float64));
        dist::all_gather(all, flat);
        for (int i = 0; i < p; ++i) CHECK(equal(all[static_cast<std::size_t>(i)], flat));
    }
}

TEST_CASE("DDP: no_sync accumulates locally, the next backward averages the sum", "[distributed]") {
    const int r = dist::get_rank(), p = dist::get_world_size();
    manual_seed(3);
    auto model = mlp();
    nn::parallel::DistributedDataParallel ddp(model);
    manual_seed(4);
    const Tensor x1 = randn({2 * p, 3}, dtype::float64), y1 = randn({2 * p, 2}, dtype::float64);
    const Tensor x2 = randn({2 * p, 3}, dtype::float64), y2 = randn({2 * p, 2}, dtype::float64);
    {
        auto guard = ddp.no_sync();
        F::mse_loss(ddp(x1.narrow(0, 2 * r, 2)), y1.narrow(0, 2 * r, 2)).backward();
    }
    F::mse_loss(ddp(x2.narrow(0, 2 * r, 2)), y2.narrow(0, 2 * r, 2)).backward();
    // Two global micro-batches, each a mean over all ranks' rows: the gradients add up.
    const auto ref = reference_grads(model->parameters(), {{x1, y1}, {x2, y2}});
    const auto params = model->parameters();
    for (std::size_t i = 0; i < params.size(); ++i) CHECK(allclose(params[i].grad(), ref[i], 1e-10, 1e-12));
}

namespace {
/// Two sub-networks whose order in the loss depends on the rank: the forward computes the same
/// function everywhere, but backward reaches the sub-networks' gradient hooks in the opposite
/// order on odd ranks (the engine runs the later-created nodes first).
struct two_branch : nn::Module {
    explicit two_branch(bool flip) : Module("two_branch"), flip(flip) {
        a = register_module("a", mlp());
        b = register_module("b", mlp());
    }
    Tensor forward(const Tensor& x) override { return flip ? (*b)(x * x) + (*a)(x) : (*a)(x) + (*b)(x * x); }
    bool flip;
    std::shared_ptr<nn::Sequential> a, b;
};
}  // namespace

TEST_CASE("DDP: ranks whose backward reaches the hooks in different orders get the right gradients",
          "[distributed]") {
    const int r = dist::get_rank(), p = dist::get_world_size();
    // Each sub-network: weights 15 and 10, biases 5 and 2 (float64). Caps in bytes: everything;
    // one sub-network per bucket (2 x 256 B); 6 buckets of unequal sizes (12, 5, 15 elements,
    // twice); one bucket per parameter.
    struct config {
        double cap_bytes;
        std::size_t buckets;
    };
    for (const config c : {config{25.0 * 1024 * 1024, 1}, config{256, 2}, config{1, 8}, config{100, 6}}) {
        for (const bool overlap : {true, false}) {
            CAPTURE(c.cap_bytes, overlap);
            manual_seed(200 + static_cast<std::uint64_t>(r));  // DDP broadcasts rank 0's values
            auto model = std::make_shared<two_branch>(r % 2 == 1);
            nn::parallel::DistributedDataParallel ddp(model, {.bucket_cap_mb = c.cap_bytes / (1024.0 * 1024.0),
                                                              .overlap = overlap});
            REQUIRE(ddp.bucket_indices().size() == c.buckets);
            const auto params = model->parameters();
            // The order in which this rank's gradients arrive, to check the ranks really differ.
            std::vector<std::int64_t> order;
            std::vector<autograd::hook_handle> hooks;
            for (std::size_t k = 0; k < params.size(); ++k)
                hooks.push_back(params[k].register_post_accumulate_grad_hook(
                    [&order, k](const Tensor&) { order.push_back(static_cast<std::int64_t>(k)); }));
            auto reference = std::make_shared<two_branch>(false);
            {
                autograd::no_grad guard;
                const auto rp = reference->parameters();
                for (std::size_t k = 0; k < rp.size(); ++k) Tensor(rp[k]).copy_(params[k]);
            }
            manual_seed(5);  // the same global batches everywhere
            for (int step = 0; step < 2; ++step) {  // twice: the second backward starts from a reset state
                CAPTURE(step);
                const Tensor x = randn({3 * p, 3}, dtype::float64), y = randn({3 * p, 2}, dtype::float64);
                model->zero_grad();
                reference->zero_grad();
                order.clear();
                F::mse_loss(ddp(x.narrow(0, 3 * r, 3)), y.narrow(0, 3 * r, 3)).backward();
                // One process's gradients of the mean loss over every rank's rows.
                F::mse_loss((*reference)(x), y).backward();
                const auto ref = reference->parameters();
                for (std::size_t k = 0; k < params.size(); ++k) {
                    CAPTURE(k);
                    REQUIRE(params[k].grad().defined());
                    CHECK(allclose(params[k].grad(), ref[k].grad(), 1e-10, 1e-12));
                }
                // Ranks 0 and 1 produced their gradients in different orders.
                REQUIRE(order.size() == params.size());
                const Tensor mine = from_vector(order);
                std::vector<Tensor> all;
                for (int i = 0; i < p; ++i) all.push_back(zeros({mine.numel()}, dtype::int64));
                dist::all_gather(all, mine);
                CHECK_FALSE(equal(all[0], all[1]));
            }
            for (auto& h : hooks) h.remove();
        }
    }
}

namespace {
struct half_used : nn::Module {
    half_used() : Module("half_used") {
        a = register_module("a", std::make_shared<nn::Linear>(3, 2, true, dtype::float64));
        b = register_module("b", std::make_shared<nn::Linear>(3, 2, true, dtype::float64));
    }
    Tensor forward(const Tensor& x) override { return (*a)(x); }  // b takes no part
    std::shared_ptr<nn::Linear> a, b;
};
}  // namespace

TEST_CASE("DDP: a parameter without gradient is refused at the next forward, on every rank", "[distributed]") {
    auto model = std::make_shared<half_used>();
    nn::parallel::DistributedDataParallel ddp(model);
    const Tensor x = randn({4, 3}, dtype::float64);
    ddp(x).sum().backward();
    CHECK_THROWS_WITH(ddp(x), Catch::Contains("received no gradient"));
    // The group and the wrapper stay usable.
    Tensor z = full({2}, 1.0);
    dist::all_reduce(z);
    CHECK(z[0].item<double>() == Approx(double(dist::get_world_size())));
    CHECK_THROWS_WITH(nn::parallel::DistributedDataParallel(nullptr), Catch::Contains("null"));
}

TEST_CASE("DDP: ranks whose models differ are refused at construction, on every rank", "[distributed]") {
    // Rank 0 has one more output feature: its buckets hold other element counts, so the
    // unchecked all-reduces of backward would read past the others' buffers.
    const int r = dist::get_rank();
    auto model = std::make_shared<nn::Linear>(3, r == 0 ? 3 : 2, true, dtype::float64);
    CHECK_THROWS_WITH(nn::parallel::DistributedDataParallel(model, {.broadcast_parameters = false}),
                      Catch::Contains("DistributedDataParallel") && Catch::Contains("disagree"));
    // The group stays usable.
    Tensor z = full({1}, 1.0);
    dist::all_reduce(z);
    CHECK(z.item<double>() == Approx(double(dist::get_world_size())));
}

TEST_CASE("DDP: rank 0's BatchNorm buffers are broadcast before each training forward, as PyTorch's broadcast_buffers",
          "[distributed][norm]") {
    const int r = dist::get_rank();
    auto bn = std::make_shared<nn::BatchNorm1d>(2, 1e-5, 0.1, true, true, dtype::float64);
    {
        autograd::no_grad guard;  // every rank starts from its own statistics
        bn->running_mean.fill_(static_cast<double>(r + 1));
        bn->num_batches_tracked.fill_(r * 10);
    }
    nn::parallel::DistributedDataParallel ddp(bn);
    CHECK(bn->running_mean.to_vector<double>() == std::vector<double>{1, 1});  // rank 0's
    CHECK(bn->num_batches_tracked.item<std::int64_t>() == 0);
    for (int step = 0; step < 3; ++step) {
        // Each rank its own batch; the statistics start from rank 0's, then move by this batch.
        const Tensor x = from_vector(std::vector<double>{1.0 + r + step, -1.0, 3.0 + 2 * r, 2.0 * step}).reshape({2, 2});
        Tensor start = bn->running_mean.clone();
        dist::broadcast(start, 0);
        ddp(x).sum().backward();
        const Tensor expected = start * 0.9 + x.mean({0}) * 0.1;
        CHECK(allclose(bn->running_mean, expected, 0.0, 1e-15));
        CHECK(bn->num_batches_tracked.item<std::int64_t>() == step + 1);
    }
    // eval: no broadcast, each rank keeps its own.
    bn->eval();
    Tensor before = bn->running_mean.clone();
    (void)ddp(zeros({2, 2}, dtype::float64));
    CHECK(equal(bn->running_mean, before));
}

int main(int argc, char** argv) {
    dist::init_process_group();
    const int result = Catch::Session().run(argc, argv);
    int worst = result;
    MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    dist::destroy_process_group();
    return worst;
}
