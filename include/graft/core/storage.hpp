#pragma once
// Reference-counted, 64-byte aligned byte buffers shared by a tensor and its views.
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>

namespace graft {

/// Alignment of every storage allocation: one cache line, enough for AVX-512 loads.
inline constexpr std::size_t storage_alignment = 64;

namespace detail {

/// A block of raw memory owned by the storage; never null, even when empty.
class storage {
public:
    explicit storage(std::size_t nbytes) : nbytes_(nbytes) {
        const std::size_t rounded = (nbytes + storage_alignment - 1) / storage_alignment * storage_alignment;
        data_ = ::operator new(rounded == 0 ? storage_alignment : rounded, std::align_val_t{storage_alignment});
    }
    storage(const storage&) = delete;
    storage& operator=(const storage&) = delete;
    ~storage() { ::operator delete(data_, std::align_val_t{storage_alignment}); }

    [[nodiscard]] void* data() const noexcept { return data_; }
    [[nodiscard]] std::size_t nbytes() const noexcept { return nbytes_; }

private:
    void* data_;
    std::size_t nbytes_;
};

[[nodiscard]] inline std::shared_ptr<storage> make_storage(std::size_t nbytes) {
    return std::make_shared<storage>(nbytes);
}

}  // namespace detail
}  // namespace graft
