#pragma once
// Definitions for graft/core/error.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/core/error.hpp"

#include <string>

namespace graft::detail {

GRAFT_INLINE void fail(const std::string& message) { throw error(message); }

}  // namespace graft::detail
