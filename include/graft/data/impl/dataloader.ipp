#pragma once
// Definitions for graft/data/dataloader.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/data/dataloader.hpp"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>
#include <utility>
#include <vector>

#include "graft/core/error.hpp"

namespace graft::data::detail {

GRAFT_INLINE void check_options(const DataLoaderOptions& options) {
    graft::detail::check(options.batch_size >= 1,
                         "data::DataLoader: batch_size should be a positive integer value, but got batch_size=",
                         options.batch_size);
    graft::detail::check(options.num_workers >= 0,
                         "data::DataLoader: num_workers option should be non-negative; use num_workers=0 to disable "
                         "the worker thread, got num_workers=",
                         options.num_workers);
    graft::detail::check(options.num_workers <= 1, "data::DataLoader: graft's DataLoader has at most one worker ",
                         "thread (no worker processes), got num_workers=", options.num_workers);
    graft::detail::check(options.prefetch_factor >= 1,
                         "data::DataLoader: prefetch_factor should be a positive integer value, but got prefetch_factor=",
                         options.prefetch_factor);
}

GRAFT_INLINE std::int64_t batch_count(std::int64_t size, const DataLoaderOptions& options) {
    const std::int64_t full = size / options.batch_size;
    return options.drop_last || size % options.batch_size == 0 ? full : full + 1;
}

GRAFT_INLINE std::vector<std::int64_t> epoch_order(std::int64_t size, const DataLoaderOptions& options) {
    std::vector<std::int64_t> order(static_cast<std::size_t>(size));
    if (!options.shuffle) {
        std::iota(order.begin(), order.end(), std::int64_t{0});
        return order;
    }
    const Tensor perm = randperm(size, dtype::int64, options.generator ? *options.generator : default_generator());
    const std::int64_t* p = perm.data_ptr<std::int64_t>();
    std::copy(p, p + size, order.begin());
    return order;
}

GRAFT_INLINE prefetch_thread::prefetch_thread(std::int64_t count, std::int64_t depth,
                                              std::function<void(std::int64_t)> produce)
    : count_(count), depth_(depth), produce_(std::move(produce)) {
    thread_ = std::thread([this] { run(); });
}

GRAFT_INLINE prefetch_thread::~prefetch_thread() { stop(); }

GRAFT_INLINE void prefetch_thread::run() noexcept {
    for (std::int64_t b = 0; b < count_; ++b) {
        {
            std::unique_lock lock(mutex_);
            changed_.wait(lock, [&] { return stopping_ || b - released_ < depth_; });
            if (stopping_) return;
        }
        try {
            produce_(b);
        } catch (...) {
            const std::lock_guard lock(mutex_);
            failure_ = std::current_exception();
            changed_.notify_all();
            return;
        }
        {
            const std::lock_guard lock(mutex_);
            produced_ = b + 1;
        }
        changed_.notify_all();
    }
}

GRAFT_INLINE void prefetch_thread::wait_for(std::int64_t b) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return produced_ > b || failure_ != nullptr || stopping_; });
    if (produced_ > b) return;
    if (failure_) std::rethrow_exception(failure_);
    graft::detail::fail(graft::detail::concat("data::DataLoader: batch ", b, " was asked for after the worker stopped"));
}

GRAFT_INLINE void prefetch_thread::release(std::int64_t b) {
    {
        const std::lock_guard lock(mutex_);
        released_ = b + 1;
    }
    changed_.notify_all();
}

GRAFT_INLINE void prefetch_thread::stop() noexcept {
    {
        const std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
}

}  // namespace graft::data::detail
