#pragma once
// Definitions for graft/core/int_list.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/core/int_list.hpp"

#include <algorithm>
#include <memory>

namespace graft {

GRAFT_INLINE int_list::iterator int_list::insert(const_iterator pos, std::initializer_list<std::int64_t> values) {
    const auto at = static_cast<size_type>(pos - begin());
    const size_type n = values.size();
    reserve(size_ + n);
    std::int64_t* p = data();
    std::move_backward(p + at, p + size_, p + size_ + n);
    std::copy(values.begin(), values.end(), p + at);
    size_ += n;
    return p + at;
}

GRAFT_INLINE int_list::iterator int_list::erase(const_iterator pos) {
    const auto at = static_cast<size_type>(pos - begin());
    std::int64_t* p = data();
    std::move(p + at + 1, p + size_, p + at);
    --size_;
    return p + at;
}

GRAFT_INLINE void int_list::reserve(size_type n) {
    if (n <= capacity()) return;
    const size_type cap = std::max(n, 2 * capacity());
    auto fresh = std::make_unique<std::int64_t[]>(cap);
    std::copy(begin(), end(), fresh.get());
    heap_ = std::move(fresh);
    heap_capacity_ = cap;
}

GRAFT_INLINE std::vector<std::int64_t> int_list::vec() const { return {begin(), end()}; }

}  // namespace graft
