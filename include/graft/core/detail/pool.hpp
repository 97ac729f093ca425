#pragma once
// Per-thread free lists for the small objects every recorded op allocates
// (tensor_impl, storage, autograd_meta, backward node) and, with other size classes,
// for small tensor buffers (graft/core/storage.hpp). A 100-op graph frees hundreds of
// such blocks at once; glibc keeps only 7 per size in its thread cache and sends the
// rest through its slow consolidating free path.
#include <cstddef>
#include <cstdint>
#include <new>

namespace graft::detail {

// Off under ASan/TSan so they see every allocation and free (predefine to override).
#ifndef GRAFT_DETAIL_POOL_ENABLED
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GRAFT_DETAIL_POOL_ENABLED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GRAFT_DETAIL_POOL_ENABLED 0
#endif
#endif
#endif
#ifndef GRAFT_DETAIL_POOL_ENABLED
#define GRAFT_DETAIL_POOL_ENABLED 1
#endif

/// Per-thread free lists of blocks in size classes. `Classes` describes them:
/// `count`, `class_of(n)` (n <= max_block), `block_size(c)`, `max_block`, `alignment`
/// and `max_bytes`, the most a thread keeps. Each thread keeps freed blocks for reuse
/// and returns them to the system when it exits. A block freed on another thread than
/// the one that allocated it joins the freeing thread's lists. Larger requests, and
/// every request when the pool is disabled, go straight to ::operator new.
template <class Classes>
class thread_free_lists {
public:
    static constexpr std::size_t max_block = Classes::max_block;

    [[nodiscard]] static void* allocate(std::size_t n) {
        if constexpr (GRAFT_DETAIL_POOL_ENABLED) {
            if (n <= max_block) {
                const std::size_t c = Classes::class_of(n);
                lists& l = local();
                if (free_block* b = l.head[c]) {
                    l.head[c] = b->next;
                    l.bytes -= Classes::block_size(c);
                    return b;
                }
                return system_new(Classes::block_size(c));
            }
        }
        return system_new(n);
    }

    static void deallocate(void* p, std::size_t n) noexcept {
        if constexpr (GRAFT_DETAIL_POOL_ENABLED) {
            if (n <= max_block) {
                const std::size_t c = Classes::class_of(n);
                lists& l = local();
                if (l.state == state_t::fresh) register_drain(l);
                if (l.state == state_t::active && l.bytes + Classes::block_size(c) <= Classes::max_bytes) {
                    auto* b = static_cast<free_block*>(p);
                    b->next = l.head[c];
                    l.head[c] = b;
                    l.bytes += Classes::block_size(c);
                    return;
                }
                system_delete(p, Classes::block_size(c));
                return;
            }
        }
        system_delete(p, n);
    }

    /// Returns the calling thread's cached blocks to the system.
    static void release_local() noexcept {
        if constexpr (GRAFT_DETAIL_POOL_ENABLED) drain_lists(local());
    }

    /// Bytes the calling thread keeps for reuse.
    [[nodiscard]] static std::size_t local_bytes() noexcept { return local().bytes; }

private:
    struct free_block {
        free_block* next;
    };
    enum class state_t : std::uint8_t { fresh, active, exited };
    // Trivially destructible, so it stays usable during and after thread exit.
    struct lists {
        free_block* head[Classes::count];
        std::size_t bytes;
        state_t state;
    };
    /// Returns a thread's cached blocks to the system at thread exit.
    struct drain {
        lists* l;
        ~drain() {
            drain_lists(*l);
            l->state = state_t::exited;  // later frees on this thread go straight to the system
        }
    };

    static void drain_lists(lists& l) noexcept {
        for (std::size_t c = 0; c < Classes::count; ++c)
            while (free_block* b = l.head[c]) {
                l.head[c] = b->next;
                system_delete(b, Classes::block_size(c));
            }
        l.bytes = 0;
    }

    [[nodiscard]] static void* system_new(std::size_t n) {
        if constexpr (Classes::alignment > __STDCPP_DEFAULT_NEW_ALIGNMENT__)
            return ::operator new(n, std::align_val_t{Classes::alignment});
        else
            return ::operator new(n);
    }
    static void system_delete(void* p, std::size_t n) noexcept {
#if defined(__cpp_sized_deallocation)
        if constexpr (Classes::alignment > __STDCPP_DEFAULT_NEW_ALIGNMENT__)
            ::operator delete(p, n, std::align_val_t{Classes::alignment});
        else
            ::operator delete(p, n);
#else
        // Sized deallocation is off (clang before 19, Apple clang, -fno-sized-deallocation):
        // libstdc++ then does not declare the sized operator delete.
        (void)n;
        if constexpr (Classes::alignment > __STDCPP_DEFAULT_NEW_ALIGNMENT__)
            ::operator delete(p, std::align_val_t{Classes::alignment});
        else
            ::operator delete(p);
#endif
    }

    [[nodiscard]] static lists& local() noexcept {
        thread_local constinit lists l{};
        return l;
    }
    static void register_drain(lists& l) noexcept {
        thread_local drain d{&l};  // constructed once per thread; its destructor runs at thread exit
        (void)d;
        l.state = state_t::active;
    }
};

/// Small objects: blocks of up to 1 KiB in 64-byte classes, new's alignment, up to
/// 2 MiB per thread.
struct small_object_classes {
    static constexpr std::size_t granule = 64;
    static constexpr std::size_t count = 16;
    static constexpr std::size_t max_block = granule * count;
    static constexpr std::size_t alignment = __STDCPP_DEFAULT_NEW_ALIGNMENT__;
    static constexpr std::size_t max_bytes = std::size_t{2} << 20;
    [[nodiscard]] static constexpr std::size_t class_of(std::size_t n) noexcept {
        return n == 0 ? 0 : (n - 1) / granule;
    }
    [[nodiscard]] static constexpr std::size_t block_size(std::size_t c) noexcept { return (c + 1) * granule; }
};

using block_pool = thread_free_lists<small_object_classes>;

/// An allocator over block_pool, for std::allocate_shared of graft's small objects.
template <class T>
struct pool_allocator {
    using value_type = T;
    pool_allocator() noexcept = default;
    template <class U>
    pool_allocator(const pool_allocator<U>&) noexcept {}  // NOLINT: rebinding is implicit by design

    [[nodiscard]] T* allocate(std::size_t n) {
        static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "block_pool blocks have new's alignment");
        return static_cast<T*>(block_pool::allocate(n * sizeof(T)));
    }
    void deallocate(T* p, std::size_t n) noexcept { block_pool::deallocate(p, n * sizeof(T)); }

    template <class U>
    bool operator==(const pool_allocator<U>&) const noexcept { return true; }
};

}  // namespace graft::detail
