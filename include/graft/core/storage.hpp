#pragma once
// Reference-counted, 64-byte aligned byte buffers shared by a tensor and its views,
// with a small cache that reuses large freed buffers instead of returning them to the OS.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>

#include "graft/core/detail/pool.hpp"

namespace graft {

/// Alignment of every storage allocation: one cache line, enough for AVX-512 loads.
inline constexpr std::size_t storage_alignment = 64;

namespace detail {

/// Keeps freed buffers of at least `min_bytes` for reuse by the next allocation
/// of the same rounded size. Fresh multi-megabyte buffers come from the OS and
/// page-fault on first touch, which costs as much as an elementwise pass over
/// them; reuse avoids that (measured in bench/). Thread-safe.
class buffer_cache {
public:
    /// glibc serves requests from 128 KiB up with mmap (and unmaps them on free), so a
    /// fresh buffer of that size page-faults on every touch: those are worth keeping.
    static constexpr std::size_t min_bytes = std::size_t{128} << 10;

    static buffer_cache& instance() {
        static buffer_cache* cache = new buffer_cache;  // never destroyed: storages may outlive static teardown
        return *cache;
    }

    /// Rounds large sizes up so that similar requests share cached blocks.
    [[nodiscard]] static std::size_t round(std::size_t nbytes) noexcept {
        const std::size_t unit = nbytes >= (std::size_t{1} << 20) ? (std::size_t{1} << 16)
                                 : nbytes >= min_bytes           ? (std::size_t{1} << 12)
                                                                 : storage_alignment;
        const std::size_t r = (nbytes + unit - 1) / unit * unit;
        return r == 0 ? storage_alignment : r;
    }

    [[nodiscard]] void* allocate(std::size_t rounded) {
        if (rounded >= min_bytes) {
            std::lock_guard lock(mutex_);
            if (auto it = free_.find(rounded); it != free_.end()) {
                void* p = it->second;
                free_.erase(it);
                cached_ -= rounded;
                return p;
            }
        }
        return ::operator new(rounded, std::align_val_t{storage_alignment});
    }

    void release(void* p, std::size_t rounded) noexcept {
        if (rounded >= min_bytes) {
            std::lock_guard lock(mutex_);
            if (cached_ + rounded <= limit_) {
                free_.emplace(rounded, p);
                cached_ += rounded;
                return;
            }
        }
        ::operator delete(p, std::align_val_t{storage_alignment});
    }

    /// Returns every cached buffer to the system.
    void empty() noexcept {
        std::lock_guard lock(mutex_);
        for (auto& [size, p] : free_) ::operator delete(p, std::align_val_t{storage_alignment});
        free_.clear();
        cached_ = 0;
    }

    void set_limit(std::size_t bytes) noexcept {
        {
            std::lock_guard lock(mutex_);
            limit_ = bytes;
        }
        if (bytes == 0) empty();
    }
    [[nodiscard]] std::size_t limit() const noexcept {
        std::lock_guard lock(mutex_);
        return limit_;
    }
    [[nodiscard]] std::size_t cached_bytes() const noexcept {
        std::lock_guard lock(mutex_);
        return cached_;
    }

private:
    buffer_cache() {
#if defined(__SANITIZE_ADDRESS__)
        limit_ = 0;  // let AddressSanitizer see every use after free
#endif
        if (const char* env = std::getenv("GRAFT_BUFFER_CACHE_MB")) limit_ = std::strtoull(env, nullptr, 10) << 20;
    }

    mutable std::mutex mutex_;
    std::multimap<std::size_t, void*> free_;
    std::size_t cached_ = 0;
    std::size_t limit_ = std::size_t{1} << 30;
};

/// A block of raw memory, never null even when empty, plus the version counter
/// of the tensors viewing it. Buffers of up to 64 bytes live inside the object,
/// so a small tensor costs one allocation for its storage.
class storage {
public:
    static constexpr std::size_t inline_bytes = 64;

    explicit storage(std::size_t nbytes) : nbytes_(nbytes) {
        if (nbytes <= inline_bytes) {
            auto addr = reinterpret_cast<std::uintptr_t>(inline_);
            addr = (addr + storage_alignment - 1) / storage_alignment * storage_alignment;
            data_ = reinterpret_cast<void*>(addr);
        } else {
            capacity_ = buffer_cache::round(nbytes);
            data_ = buffer_cache::instance().allocate(capacity_);
        }
    }
    storage(const storage&) = delete;
    storage& operator=(const storage&) = delete;
    ~storage() {
        if (capacity_ != 0) buffer_cache::instance().release(data_, capacity_);
    }

    [[nodiscard]] void* data() const noexcept { return data_; }
    [[nodiscard]] std::size_t nbytes() const noexcept { return nbytes_; }
    /// Bumped by in-place writes through any tensor that shares this counter.
    [[nodiscard]] std::atomic<std::uint64_t>& version() noexcept { return version_; }

private:
    std::size_t nbytes_;
    std::size_t capacity_ = 0;  // 0: the inline buffer is used
    void* data_ = nullptr;
    std::atomic<std::uint64_t> version_{0};
    unsigned char inline_[inline_bytes + storage_alignment];
};

[[nodiscard]] inline std::shared_ptr<storage> make_storage(std::size_t nbytes) {
    return std::allocate_shared<storage>(pool_allocator<storage>{}, nbytes);
}

}  // namespace detail

/// Freed tensor buffers of 128 KiB and more are kept for reuse, up to this many
/// bytes in total (default 1 GiB, 0 under AddressSanitizer; the environment
/// variable GRAFT_BUFFER_CACHE_MB overrides). 0 disables the cache.
inline void set_buffer_cache_limit(std::size_t bytes) { detail::buffer_cache::instance().set_limit(bytes); }
/// Bytes currently held by the buffer cache, not in use by any tensor.
[[nodiscard]] inline std::size_t buffer_cache_size() { return detail::buffer_cache::instance().cached_bytes(); }
/// Returns all cached buffers to the system (like torch.cuda.empty_cache for CPU memory).
inline void empty_buffer_cache() { detail::buffer_cache::instance().empty(); }

}  // namespace graft
