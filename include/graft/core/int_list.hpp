#pragma once
// graft::int_list: sizes, strides and dimension lists. A vector of int64 that
// keeps up to six values inline, so tensors of rank <= 6 never allocate for them.
#include "graft/config.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <ostream>
#include <vector>

namespace graft {

class int_list {
public:
    using value_type = std::int64_t;
    using size_type = std::size_t;
    using iterator = std::int64_t*;
    using const_iterator = const std::int64_t*;
    static constexpr size_type inline_capacity = 6;

    int_list() noexcept = default;
    explicit int_list(size_type n, std::int64_t value = 0) { assign(n, value); }
    int_list(std::initializer_list<std::int64_t> values) { assign(values.begin(), values.end()); }
    template <std::input_iterator It>
    int_list(It first, It last) { assign(first, last); }
    int_list(const std::vector<std::int64_t>& v) { assign(v.begin(), v.end()); }  // NOLINT: implicit by design
    [[gnu::always_inline]] int_list(const int_list& other) { copy_from(other); }
    int_list(int_list&& other) noexcept { take(std::move(other)); }
    [[gnu::always_inline]] int_list& operator=(const int_list& other) {
        if (this != &other) copy_from(other);
        return *this;
    }
    int_list& operator=(int_list&& other) noexcept {
        if (this != &other) {
            heap_.reset();
            take(std::move(other));
        }
        return *this;
    }
    int_list& operator=(std::initializer_list<std::int64_t> values) {
        assign(values.begin(), values.end());
        return *this;
    }

    void assign(size_type n, std::int64_t value) {
        resize_uninit(n);
        std::fill(begin(), end(), value);
    }
    template <std::input_iterator It>
    void assign(It first, It last) {
        const auto n = static_cast<size_type>(std::distance(first, last));
        resize_uninit(n);
        std::copy(first, last, begin());
    }

    [[nodiscard]] size_type size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    [[nodiscard]] std::int64_t* data() noexcept { return heap_ ? heap_.get() : inline_; }
    [[nodiscard]] const std::int64_t* data() const noexcept { return heap_ ? heap_.get() : inline_; }
    [[nodiscard]] iterator begin() noexcept { return data(); }
    [[nodiscard]] iterator end() noexcept { return data() + size_; }
    [[nodiscard]] const_iterator begin() const noexcept { return data(); }
    [[nodiscard]] const_iterator end() const noexcept { return data() + size_; }
    [[nodiscard]] std::int64_t& operator[](size_type i) noexcept { return data()[i]; }
    [[nodiscard]] std::int64_t operator[](size_type i) const noexcept { return data()[i]; }
    [[nodiscard]] std::int64_t& back() noexcept { return data()[size_ - 1]; }
    [[nodiscard]] std::int64_t back() const noexcept { return data()[size_ - 1]; }
    [[nodiscard]] std::int64_t& front() noexcept { return data()[0]; }
    [[nodiscard]] std::int64_t front() const noexcept { return data()[0]; }

    void push_back(std::int64_t v) {
        reserve(size_ + 1);
        data()[size_++] = v;
    }
    iterator insert(const_iterator pos, std::int64_t v) { return insert(pos, {v}); }
    iterator insert(const_iterator pos, std::initializer_list<std::int64_t> values);
    iterator erase(const_iterator pos);
    void reserve(size_type n);
    /// Sets the size to n leaving the values unspecified: for callers that write every one.
    void resize_for_overwrite(size_type n) { resize_uninit(n); }
    [[nodiscard]] size_type capacity() const noexcept { return heap_ ? heap_capacity_ : inline_capacity; }

    /// A std::vector copy, for APIs that want one.
    [[nodiscard]] std::vector<std::int64_t> vec() const;

    friend bool operator==(const int_list& a, const int_list& b) noexcept {
        if (a.size_ != b.size_) return false;
        const std::int64_t *pa = a.data(), *pb = b.data();
        for (size_type i = 0; i < a.size_; ++i)  // ranks are small: no memcmp call
            if (pa[i] != pb[i]) return false;
        return true;
    }
    friend std::ostream& operator<<(std::ostream& os, const int_list& v) {
        os << '[';
        for (size_type i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
        return os << ']';
    }

private:
    void resize_uninit(size_type n) {
        if (n > capacity()) {
            heap_ = std::make_unique<std::int64_t[]>(n);
            heap_capacity_ = n;
        }
        size_ = n;
    }
    [[gnu::always_inline]] void take(int_list&& other) noexcept {
        size_ = other.size_;
        if (other.heap_) {
            heap_ = std::move(other.heap_);
            heap_capacity_ = other.heap_capacity_;
        } else {
            copy_inline(other);
        }
        other.size_ = 0;
    }
    [[gnu::always_inline]] void copy_from(const int_list& other) {
        if (other.size_ <= inline_capacity && !heap_) {
            copy_inline(other);
            size_ = other.size_;
        } else {
            assign(other.begin(), other.end());
        }
    }
    /// The whole inline array: a fixed-size copy the compiler inlines (no memmove call).
    void copy_inline(const int_list& other) noexcept {
        if (!other.heap_) {
            __builtin_memcpy(inline_, other.inline_, sizeof inline_);  // constant size: a few vector moves
        } else {
            std::copy(other.heap_.get(), other.heap_.get() + other.size_, inline_);
        }
    }

    std::int64_t inline_[inline_capacity]{};
    std::unique_ptr<std::int64_t[]> heap_;
    size_type heap_capacity_ = 0;
    size_type size_ = 0;
};

}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/core/impl/int_list.ipp"
#endif
