#pragma once
// Reference-counted, 64-byte aligned byte buffers shared by a tensor and its views.
// Freed buffers are kept for reuse: large ones (128 KiB and more) in a process-wide
// cache, small ones in per-thread free lists.
#include "graft/config.hpp"

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <new>

#include "graft/core/detail/pool.hpp"

namespace graft {

/// Alignment of every storage allocation: one cache line, enough for AVX-512 loads.
inline constexpr std::size_t storage_alignment = 64;

namespace detail {

/// Tensor buffers below the buffer cache's threshold (65 B to 112 KiB): 64-byte
/// classes up to 1 KiB, then four classes per power of two (at most 25% rounding),
/// 64-byte aligned, up to 4 MiB kept per thread. Reusing them spares glibc's
/// aligned-allocation and consolidating free paths (hundreds of instructions for a
/// 4 KiB buffer), which dominate a small tensor's cost.
struct small_buffer_classes {
    static constexpr std::size_t granule = 64;
    static constexpr std::size_t linear_max = 1024;  // 64-byte steps up to here
    static constexpr std::size_t max_block = std::size_t{112} << 10;
    static constexpr std::size_t count = linear_max / granule + 7 * 4 - 1;  // 7 octaves from 1 KiB, to 112 KiB
    static constexpr std::size_t alignment = 64;
    static constexpr std::size_t max_bytes = std::size_t{4} << 20;

    /// Smallest class block >= n (n <= max_block).
    [[nodiscard]] static constexpr std::size_t round(std::size_t n) noexcept {
        if (n <= linear_max) return n == 0 ? granule : (n + granule - 1) / granule * granule;
        const std::size_t step = std::bit_floor(n - 1) / 4;
        return (n + step - 1) / step * step;
    }
    [[nodiscard]] static constexpr std::size_t class_of(std::size_t n) noexcept {
        if (n <= linear_max) return n == 0 ? 0 : (n - 1) / granule;
        const std::size_t octave = std::bit_floor(n - 1);  // n in (octave, 2 * octave]
        const std::size_t step = octave / 4;
        return linear_max / granule + (static_cast<std::size_t>(std::countr_zero(octave)) - 10) * 4 +
               (round(n) - octave) / step - 1;
    }
    [[nodiscard]] static constexpr std::size_t block_size(std::size_t c) noexcept {
        if (c < linear_max / granule) return (c + 1) * granule;
        const std::size_t k = c - linear_max / granule;
        const std::size_t octave = std::size_t{1} << (10 + k / 4);
        return octave + (k % 4 + 1) * (octave / 4);
    }
};

using small_buffer_pool = thread_free_lists<small_buffer_classes>;

/// Keeps freed buffers of at least `min_bytes` for reuse by the next allocation
/// of the same rounded size. Fresh multi-megabyte buffers come from the OS and
/// page-fault on first touch, which costs as much as an elementwise pass over
/// them; reuse avoids that (measured in bench/). Thread-safe.
class buffer_cache {
public:
    /// glibc serves requests from 128 KiB up with mmap (and unmaps them on free), so a
    /// fresh buffer of that size page-faults on every touch: those are worth keeping.
    static constexpr std::size_t min_bytes = std::size_t{128} << 10;

    static buffer_cache& instance();

    /// Rounds sizes up so that similar requests share cached blocks: small sizes to
    /// their small_buffer_classes block, large ones to 4 KiB (64 KiB from 1 MiB).
    [[nodiscard]] static std::size_t round(std::size_t nbytes) noexcept;

    [[nodiscard]] void* allocate(std::size_t rounded);
    void release(void* p, std::size_t rounded) noexcept;

    /// Returns every cached buffer to the system (and the calling thread's small ones).
    void empty() noexcept;

    void set_limit(std::size_t bytes) noexcept;
    [[nodiscard]] std::size_t limit() const noexcept {
        std::lock_guard lock(mutex_);
        return limit_;
    }
    [[nodiscard]] std::size_t cached_bytes() const noexcept {
        std::lock_guard lock(mutex_);
        return cached_;
    }

private:
    [[nodiscard]] void* allocate_large(std::size_t rounded);
    void release_large(void* p, std::size_t rounded) noexcept;
    void empty_large() noexcept;

    buffer_cache();

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

    explicit storage(std::size_t nbytes);
    storage(const storage&) = delete;
    storage& operator=(const storage&) = delete;
    ~storage();

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

[[nodiscard]] GRAFT_INLINE std::shared_ptr<storage> make_storage(std::size_t nbytes);

/// Throws graft::error ("out of memory allocating N bytes for <what>") when a request is
/// larger than the machine's physical memory: refused up front, since an overcommitting
/// kernel would accept it and kill the process on first touch, and sanitizers abort on it.
GRAFT_INLINE void check_allocation(std::size_t nbytes, const char* what);

}  // namespace detail

/// Freed tensor buffers of 128 KiB and more are kept for reuse, up to this many
/// bytes in total (default 1 GiB, 0 under AddressSanitizer; the environment
/// variable GRAFT_BUFFER_CACHE_MB overrides). 0 disables the cache. Smaller buffers
/// are kept per thread (at most 4 MiB a thread) and are not counted here.
inline void set_buffer_cache_limit(std::size_t bytes) { detail::buffer_cache::instance().set_limit(bytes); }
/// Bytes currently held by the buffer cache (buffers of 128 KiB and more), not in use.
[[nodiscard]] inline std::size_t buffer_cache_size() { return detail::buffer_cache::instance().cached_bytes(); }
/// Returns all cached buffers to the system (like torch.cuda.empty_cache for CPU
/// memory): the shared large ones and the calling thread's small ones.
inline void empty_buffer_cache() { detail::buffer_cache::instance().empty(); }

}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/core/impl/storage.ipp"
#endif
