#pragma once
// Definitions for graft/core/storage.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/core/storage.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>
#include <new>

#include "graft/core/error.hpp"

namespace graft::detail {

GRAFT_INLINE buffer_cache& buffer_cache::instance() {
    static buffer_cache* cache = new buffer_cache;  // never destroyed: storages may outlive static teardown
    return *cache;
}

GRAFT_INLINE std::size_t buffer_cache::round(std::size_t nbytes) noexcept {
    if (nbytes <= small_buffer_classes::max_block) return small_buffer_classes::round(nbytes);
    const std::size_t unit = nbytes >= (std::size_t{1} << 20) ? (std::size_t{1} << 16) : (std::size_t{1} << 12);
    return (nbytes + unit - 1) / unit * unit;
}

GRAFT_INLINE void* buffer_cache::allocate(std::size_t rounded) {
    if (rounded < min_bytes) return small_buffer_pool::allocate(rounded);
    return allocate_large(rounded);
}

GRAFT_INLINE void buffer_cache::release(void* p, std::size_t rounded) noexcept {
    if (rounded < min_bytes) small_buffer_pool::deallocate(p, rounded);
    else release_large(p, rounded);
}

GRAFT_INLINE void buffer_cache::empty() noexcept {
    small_buffer_pool::release_local();
    empty_large();
}

GRAFT_INLINE void buffer_cache::set_limit(std::size_t bytes) noexcept {
    {
        std::lock_guard lock(mutex_);
        limit_ = bytes;
    }
    if (bytes == 0) empty_large();
}

GRAFT_INLINE void* buffer_cache::allocate_large(std::size_t rounded) {
    {
        std::lock_guard lock(mutex_);
        if (auto it = free_.find(rounded); it != free_.end()) {
            void* p = it->second;
            free_.erase(it);
            cached_ -= rounded;
            return p;
        }
    }
    check_allocation(rounded, "a tensor");
    const auto out_of_memory = [rounded](const char* why) {
        fail(concat("out of memory allocating ", rounded, " bytes for a tensor (", why, ")"));
    };
    try {
        return ::operator new(rounded, std::align_val_t{storage_alignment});
    } catch (const std::bad_alloc&) {
    }
    empty_large();  // cached buffers may be what is missing
    try {
        return ::operator new(rounded, std::align_val_t{storage_alignment});
    } catch (const std::bad_alloc&) {
        out_of_memory("the system refused");
    }
    return nullptr;
}

GRAFT_INLINE void buffer_cache::release_large(void* p, std::size_t rounded) noexcept {
    {
        std::lock_guard lock(mutex_);
        if (cached_ + rounded <= limit_) {
            free_.emplace(rounded, p);
            cached_ += rounded;
            return;
        }
    }
    ::operator delete(p, std::align_val_t{storage_alignment});
}

GRAFT_INLINE void buffer_cache::empty_large() noexcept {
    std::lock_guard lock(mutex_);
    for (auto& [size, p] : free_) ::operator delete(p, std::align_val_t{storage_alignment});
    free_.clear();
    cached_ = 0;
}

GRAFT_INLINE buffer_cache::buffer_cache() {
    // Let AddressSanitizer see every use after free. Clang does not define
    // __SANITIZE_ADDRESS__ (GCC does); it has __has_feature(address_sanitizer).
#if defined(__SANITIZE_ADDRESS__)
    limit_ = 0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    limit_ = 0;
#endif
#endif
    if (const char* env = std::getenv("GRAFT_BUFFER_CACHE_MB")) limit_ = std::strtoull(env, nullptr, 10) << 20;
}

GRAFT_INLINE storage::storage(std::size_t nbytes) : nbytes_(nbytes) {
    if (nbytes <= inline_bytes) {
        auto addr = reinterpret_cast<std::uintptr_t>(inline_);
        addr = (addr + storage_alignment - 1) / storage_alignment * storage_alignment;
        data_ = reinterpret_cast<void*>(addr);
    } else {
        capacity_ = buffer_cache::round(nbytes);
        data_ = buffer_cache::instance().allocate(capacity_);
    }
}

GRAFT_INLINE storage::~storage() {
    if (capacity_ != 0) buffer_cache::instance().release(data_, capacity_);
}

GRAFT_INLINE void check_allocation(std::size_t nbytes, const char* what) {
    static const std::size_t physical = [] {
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
        const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
        if (pages > 0 && page > 0) return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page);
#endif
        return std::numeric_limits<std::size_t>::max();
    }();
    if (nbytes > physical)
        fail(concat("out of memory allocating ", nbytes, " bytes for ", what, " (the machine has ", physical, " bytes)"));
}

GRAFT_INLINE std::shared_ptr<storage> make_storage(std::size_t nbytes) {
    return std::allocate_shared<storage>(pool_allocator<storage>{}, nbytes);
}

}  // namespace graft::detail
