#pragma once
// nn::parallel::DistributedDataParallel over graft::distributed (torch.nn.parallel.
// DistributedDataParallel): the module's parameters and buffers are broadcast from rank 0 at
// construction, its buffers (BatchNorm's running statistics) again before each training forward,
// and during backward their gradients are averaged across ranks in buckets (reverse
// registration order, bucket_cap_mb, PyTorch's 25 MB by default): each bucket's non-blocking
// all_reduce starts from the post-accumulate-grad hooks once it and every bucket before it are
// full (strictly in bucket order, so the k-th all_reduce of every rank is bucket k whatever order
// its backward produced the gradients in), so communication overlaps the rest of backward, and
// the last parameter's hook waits for every bucket, so the averaged gradients are in p.grad()
// when backward returns. Header-only, needs MPI.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "graft/distributed/process_group.hpp"
#include "graft/nn/module.hpp"

namespace graft::nn::parallel {

/// DistributedDataParallel's options.
struct ddp_options {
    double bucket_cap_mb = 25.0;  // PyTorch's default bucket size
    bool broadcast_parameters = true;  // from rank 0 at construction (PyTorch always does)
    /// Rank 0's buffers to every rank at construction and before each forward in training mode
    /// with grad enabled (PyTorch's broadcast_buffers): every rank then updates them from its own
    /// batch, and the next forward starts again from rank 0's.
    bool broadcast_buffers = true;
    /// Launch each bucket's all-reduce from the backward hooks as soon as its gradients are in
    /// (PyTorch's behaviour). false: launch every bucket after the last gradient arrived, so
    /// nothing overlaps with backward (for measuring what the overlap hides; bench/bench_ddp.cpp).
    bool overlap = true;
};

class DistributedDataParallel : public Module {
public:
    explicit DistributedDataParallel(std::shared_ptr<Module> module, ddp_options options = {});
    DistributedDataParallel(const DistributedDataParallel&) = delete;
    DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;
    ~DistributedDataParallel() override {
        for (auto& h : hooks_) h.remove();
    }

    /// The wrapped module's forward. A graft::error when the previous iteration's gradients were
    /// not all reduced (a parameter that took no part in the loss: graft does not search the
    /// graph for unused parameters, as find_unused_parameters=True would).
    Tensor forward(const Tensor& input) override;

    /// While the returned guard lives, backward accumulates gradients locally without
    /// communicating (torch's `with ddp.no_sync():`); the first backward after it averages the
    /// accumulated gradients.
    class no_sync_guard {
    public:
        explicit no_sync_guard(DistributedDataParallel& d) : d_(d), previous_(d.sync_) { d.sync_ = false; }
        ~no_sync_guard() { d_.sync_ = previous_; }
        no_sync_guard(const no_sync_guard&) = delete;
        no_sync_guard& operator=(const no_sync_guard&) = delete;

    private:
        DistributedDataParallel& d_;
        bool previous_;
    };
    [[nodiscard]] no_sync_guard no_sync() { return no_sync_guard(*this); }

    [[nodiscard]] Module& module() const { return *module_; }
    /// Parameter indices (into module().parameters()) per bucket, in the order buckets reduce.
    [[nodiscard]] std::vector<std::vector<std::size_t>> bucket_indices() const;

private:
    struct bucket {
        std::vector<std::size_t> params;  // indices into params_
        std::vector<std::int64_t> offsets;
        Tensor flat;                      // the bucket's gradients, contiguous
        std::size_t pending = 0;          // parameters whose gradient has not arrived this iteration
        distributed::work work;
        bool launched = false;
    };
    void on_grad(std::size_t param);
    void launch_ready();
    void launch(bucket& b);
    void finish();
    void reset();

    std::shared_ptr<Module> module_;
    std::vector<Tensor> params_;
    std::vector<std::size_t> bucket_of_;  // per parameter
    std::vector<bucket> buckets_;
    std::vector<bool> ready_;
    std::size_t arrived_ = 0;  // parameters ready this iteration
    std::size_t next_bucket_ = 0;  // the next bucket to launch: buckets launch in index order
    bool sync_ = true;
    bool reducing_ = false;  // an iteration started reducing (some gradients arrived)
    bool overlap_ = true;
    bool broadcast_buffers_ = true;
    std::vector<autograd::hook_handle> hooks_;
};


inline DistributedDataParallel::DistributedDataParallel(std::shared_ptr<Module> module, ddp_options options)
    : Module("DistributedDataParallel"), module_(std::move(module)) {
    constexpr const char* name = "nn::parallel::DistributedDataParallel";
    graft::detail::check(module_ != nullptr, name, ": the module is null");
    graft::detail::check(distributed::is_initialized(), name,
                         ": the default process group has not been initialized; call "
                         "distributed::init_process_group() first");
    graft::detail::check(options.bucket_cap_mb > 0, name, ": bucket_cap_mb must be positive");
    register_module("module", module_);
    overlap_ = options.overlap;
    broadcast_buffers_ = options.broadcast_buffers;
    params_ = module_->parameters();
    for (const Tensor& p : params_)
        graft::detail::check(p.requires_grad() && p.is_leaf(), name, ": every parameter must be a leaf that requires grad");
    if (options.broadcast_parameters) {
        autograd::no_grad guard;
        for (Tensor& p : params_) {
            Tensor t = p;
            distributed::broadcast(t, 0);
        }
    }
    // Buckets in reverse registration order (about the order backward produces gradients), one
    // dtype per bucket, closed when the next parameter would pass the cap.
    const auto cap = static_cast<std::int64_t>(options.bucket_cap_mb * 1024.0 * 1024.0);
    bucket_of_.assign(params_.size(), 0);
    for (std::size_t k = params_.size(); k-- > 0;) {
        const Tensor& p = params_[k];
        const std::int64_t bytes = p.numel() * static_cast<std::int64_t>(p.element_size());
        bool fresh = buckets_.empty();
        if (!fresh) {
            const bucket& b = buckets_.back();
            const Tensor& first = params_[b.params.front()];
            const std::int64_t used = b.offsets.back() * static_cast<std::int64_t>(first.element_size());
            fresh = first.type() != p.type() || used + bytes > cap;
        }
        if (fresh) buckets_.push_back(bucket{{}, {0}, {}, 0, {}, false});
        bucket& b = buckets_.back();
        b.params.push_back(k);
        b.offsets.push_back(b.offsets.back() + p.numel());
        bucket_of_[k] = buckets_.size() - 1;
    }
    for (bucket& b : buckets_) b.flat = zeros({b.offsets.back()}, params_[b.params.front()].type());
    // Every rank must build the same buckets (the same parameters' sizes and dtypes): checked
    // here once, so the backward hooks can start the buckets' all-reduces without the
    // per-call agreement check, which would wait for the slowest rank in every hook. With the
    // buckets launched in index order on every rank, MPI (which pairs collectives by call
    // order) pairs bucket k with bucket k, so paired buckets cannot differ in size or dtype.
    // A collective interleaved in a rank-dependent order (another DDP's buckets, a user's call
    // from a hook) is the caller's error, as in MPI; MPI's errors then come back as graft::error.
    std::uint64_t layout = 1469598103934665603ull;  // FNV-1a over the buckets' element counts and dtypes
    std::int64_t total = 0;
    for (const bucket& b : buckets_) {
        for (const std::uint64_t v : {static_cast<std::uint64_t>(b.offsets.back()),
                                      static_cast<std::uint64_t>(b.flat.type())})
            layout = (layout ^ v) * 1099511628211ull;
        total += b.offsets.back();
    }
    // The buffers too: every rank broadcasts them in the same order (a count that differs
    // would leave a rank waiting for a broadcast the others never start).
    for (const Tensor& b : module_->buffers())
        for (const std::uint64_t v : {static_cast<std::uint64_t>(b.numel()), static_cast<std::uint64_t>(b.type())})
            layout = (layout ^ v) * 1099511628211ull;
    distributed::detail::check_same_everywhere(name, total, params_.empty() ? dtype::float32 : params_[0].type(),
                                               static_cast<std::int64_t>(layout >> 1));
    if (broadcast_buffers_) {
        autograd::no_grad guard;
        for (Tensor b : module_->buffers()) distributed::broadcast(b, 0);
    }
    reset();
    for (std::size_t k = 0; k < params_.size(); ++k)
        hooks_.push_back(params_[k].register_post_accumulate_grad_hook([this, k](Tensor&) { on_grad(k); }));
}

inline Tensor DistributedDataParallel::forward(const Tensor& input) {
    if (reducing_) {
        std::string missing;
        for (std::size_t k = 0; k < params_.size(); ++k)
            if (!ready_[k]) missing += (missing.empty() ? "" : ", ") + std::to_string(k);
        // Buckets already started complete on every rank (all ranks started the same ones).
        for (bucket& b : buckets_)
            if (b.launched) b.work.wait();
        reset();
        graft::detail::fail_with(
            "nn::parallel::DistributedDataParallel: Expected to have finished reduction in the prior iteration "
            "before starting a new one: parameters with indices ", missing,
            " received no gradient (they took no part in the loss). graft's DistributedDataParallel needs every "
            "parameter to get a gradient in every synchronized backward; the previous step's gradients were not "
            "averaged.");
    }
    if (broadcast_buffers_ && module_->is_training() && autograd::is_grad_enabled()) {
        autograd::no_grad guard;
        for (Tensor b : module_->buffers()) distributed::broadcast(b, 0);
    }
    return (*module_)(input);
}

inline std::vector<std::vector<std::size_t>> DistributedDataParallel::bucket_indices() const {
    std::vector<std::vector<std::size_t>> r;
    for (const bucket& b : buckets_) r.push_back(b.params);
    return r;
}

inline void DistributedDataParallel::reset() {
    ready_.assign(params_.size(), false);
    arrived_ = 0;
    next_bucket_ = 0;
    reducing_ = false;
    for (bucket& b : buckets_) {
        b.pending = b.params.size();
        b.launched = false;
    }
}

inline void DistributedDataParallel::on_grad(std::size_t k) {
    if (!sync_) return;  // no_sync: gradients accumulate locally
    graft::detail::check(!ready_[k], "nn::parallel::DistributedDataParallel: parameter ", k,
                         " received a gradient twice in one backward (a reentrant backward is not supported)");
    reducing_ = true;
    ready_[k] = true;
    ++arrived_;
    bucket& b = buckets_[bucket_of_[k]];
    if (--b.pending == 0 && overlap_) launch_ready();
    // MPI moves a non-blocking collective's data only inside MPI calls (Open MPI has no progress
    // thread over shared memory): testing the buckets in flight at each gradient lets their
    // reduction advance while backward computes the next ones.
    if (overlap_)
        for (bucket& other : buckets_)
            if (other.launched) (void)other.work.is_completed();
    if (arrived_ == params_.size()) finish();
}

/// Launches the full buckets from next_bucket_ on, stopping at the first one still waiting for a
/// gradient: a bucket whose gradients arrived early waits for the buckets before it.
inline void DistributedDataParallel::launch_ready() {
    for (; next_bucket_ < buckets_.size() && buckets_[next_bucket_].pending == 0; ++next_bucket_)
        launch(buckets_[next_bucket_]);
}

inline void DistributedDataParallel::launch(bucket& b) {
    autograd::no_grad guard;
    for (std::size_t i = 0; i < b.params.size(); ++i) {
        const Tensor g = params_[b.params[i]].grad();
        b.flat.narrow(0, b.offsets[i], g.numel()).copy_(g.reshape({g.numel()}));
    }
    b.work = distributed::detail::start_all_reduce("nn::parallel::DistributedDataParallel",
                                                   distributed::detail::checked_group("nn::parallel::DistributedDataParallel"),
                                                   b.flat, distributed::reduce_op::avg, /*async_op=*/true);
    b.launched = true;
}

inline void DistributedDataParallel::finish() {
    autograd::no_grad guard;
    launch_ready();  // every bucket is full: launches the rest (all of them without overlap)
    for (bucket& b : buckets_) {
        b.work.wait();
        for (std::size_t i = 0; i < b.params.size(); ++i) {
            Tensor g = params_[b.params[i]].grad();
            g.copy_(b.flat.narrow(0, b.offsets[i], g.numel()).view(g.sizes()));
        }
    }
    reset();
}

}  // namespace graft::nn::parallel
