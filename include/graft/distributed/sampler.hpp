#pragma once
// distributed::DistributedSampler (torch.utils.data.distributed.DistributedSampler): which
// samples of a data set of `size` items this rank takes. Every rank draws the same permutation
// (seed + epoch: call set_epoch at each epoch) and takes every num_replicas-th index from its
// rank on, so the ranks' shards are disjoint and equally long: without drop_last the list is
// padded with its own first indices to a multiple of num_replicas (so a few samples are seen
// twice per epoch), with drop_last the tail is dropped.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <random>
#include <vector>

#include "graft/distributed/process_group.hpp"

namespace graft::distributed {

class DistributedSampler {
public:
    /// num_replicas and rank default to the default process group's world size and rank.
    explicit DistributedSampler(std::int64_t size, std::optional<int> num_replicas = std::nullopt,
                                std::optional<int> rank = std::nullopt, bool shuffle = true, std::uint64_t seed = 0,
                                bool drop_last = false)
        : size_(size),
          replicas_(num_replicas ? *num_replicas : get_world_size()),
          rank_(rank ? *rank : get_rank()),
          shuffle_(shuffle),
          seed_(seed),
          drop_last_(drop_last) {
        graft::detail::check(size >= 0, "distributed::DistributedSampler: the data set size must be non-negative, got ",
                             size);
        graft::detail::check(replicas_ > 0, "distributed::DistributedSampler: num_replicas must be positive, got ",
                             replicas_);
        graft::detail::check(rank_ >= 0 && rank_ < replicas_, "distributed::DistributedSampler: Invalid rank ", rank_,
                             ", rank should be in the interval [0, ", replicas_ - 1, "]");
    }

    /// The epoch the next indices() shuffles for (PyTorch's set_epoch).
    void set_epoch(std::int64_t epoch) noexcept { epoch_ = epoch; }

    /// Samples per rank (PyTorch's num_samples).
    [[nodiscard]] std::int64_t num_samples() const noexcept {
        return drop_last_ ? size_ / replicas_ : (size_ + replicas_ - 1) / replicas_;
    }

    /// This rank's indices for the current epoch.
    [[nodiscard]] std::vector<std::int64_t> indices() const {
        std::vector<std::int64_t> all(static_cast<std::size_t>(size_));
        std::iota(all.begin(), all.end(), std::int64_t{0});
        if (shuffle_) {
            std::mt19937_64 rng(seed_ + static_cast<std::uint64_t>(epoch_));
            // Fisher-Yates with the generator's own draws (std::shuffle's use of the generator is
            // implementation-defined, so every rank and every build draws the same permutation).
            for (std::size_t i = all.size(); i > 1; --i) {
                const std::size_t j = static_cast<std::size_t>(rng() % i);
                std::swap(all[i - 1], all[j]);
            }
        }
        const auto total = static_cast<std::size_t>(num_samples() * replicas_);
        if (all.size() > total) {
            all.resize(total);  // drop_last
        } else if (!all.empty()) {
            for (std::size_t k = 0; all.size() < total; ++k) all.push_back(all[k]);  // pad from the start
        }
        std::vector<std::int64_t> mine;
        for (std::size_t k = static_cast<std::size_t>(rank_); k < all.size(); k += static_cast<std::size_t>(replicas_))
            mine.push_back(all[k]);
        return mine;
    }

private:
    std::int64_t size_;
    int replicas_;
    int rank_;
    bool shuffle_;
    std::uint64_t seed_;
    bool drop_last_;
    std::int64_t epoch_ = 0;
};

}  // namespace graft::distributed
