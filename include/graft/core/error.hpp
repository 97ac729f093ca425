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

/// Throws graft::error built from `parts` when `ok` is false.
template <class... Parts>
void check(bool ok, const Parts&... parts) {
    if (!ok) throw error(concat(parts...));
}

[[noreturn]] GRAFT_INLINE void fail(const std::string& message);

}  // namespace detail
}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/core/impl/error.ipp"
#endif
