#pragma once
// operator<< for tensors, formatted as PyTorch prints them: tensor([[1., 2.], ...]).
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "graft/core/tensor.hpp"

namespace graft {
namespace detail {

/// One element as printed: integer dtypes keep their exact value (a double holds integers
/// exactly only up to 2^53), floating and bool ones their value as double.
struct print_value {
    double real = 0.0;
    std::int64_t integer = 0;
};

/// Reads element `t` (a 0-d tensor) as print_value for its dtype.
GRAFT_INLINE print_value read_print_value(const Tensor& t);

/// Formats every element to the same width, choosing integer, fixed or
/// scientific notation from the values shown (PyTorch's _Formatter).
class element_formatter {
public:
    element_formatter(dtype type, const std::vector<print_value>& shown);

    [[nodiscard]] std::string format(const print_value& v) const;
    [[nodiscard]] std::size_t width() const noexcept { return width_; }

private:
    [[nodiscard]] std::string format_raw(const print_value& v) const;

    dtype type_;
    bool int_mode_ = true;
    bool sci_ = false;
    std::size_t width_ = 1;
};

struct print_options {
    std::int64_t threshold = 1000;  // summarize above this many elements
    std::int64_t edgeitems = 3;
    std::int64_t linewidth = 80;
};

GRAFT_INLINE void collect_shown(const Tensor& t, bool summarize, const print_options& o, std::vector<print_value>& out);

GRAFT_INLINE std::string format_tensor(const Tensor& t, const element_formatter& f, std::size_t indent, bool summarize,
                                       const print_options& o);

}  // namespace detail

/// Prints like PyTorch: `tensor([1.5000, 2.0000])`, with `dtype=` for float64.
GRAFT_INLINE std::ostream& operator<<(std::ostream& os, const Tensor& t);

}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/core/impl/print.ipp"
#endif
