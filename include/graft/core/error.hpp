#pragma once
// graft::error: the one exception type graft throws for bad input and API misuse.
#include "graft/config.hpp"

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace graft {

/// Thrown for bad input (shapes, dtypes, dims, views) and misuse of the API.
/// The message names the operation, what it got and what it expected.
class error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

namespace detail {

template <class... Parts>
[[nodiscard]] std::string concat(const Parts&... parts) {
    std::ostringstream os;
    (os << ... << parts);
    return os.str();
}

/// Throws graft::error built from `parts` (the cold half of check, kept out of line).
template <class... Parts>
[[noreturn, gnu::noinline, gnu::cold]] void fail_with(const Parts&... parts) {
    throw error(concat(parts...));
}

/// Throws graft::error built from `parts` when `ok` is false. Inlined to a test and a
/// branch: the message is only formatted on failure, in fail_with.
template <class... Parts>
[[gnu::always_inline]] inline void check(bool ok, const Parts&... parts) {
    if (!ok) [[unlikely]]
        fail_with(parts...);
}

[[noreturn]] GRAFT_INLINE void fail(const std::string& message);

}  // namespace detail
}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/core/impl/error.ipp"
#endif
