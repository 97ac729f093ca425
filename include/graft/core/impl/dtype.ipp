#pragma once
// Definitions for graft/core/dtype.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/core/dtype.hpp"

#include <ostream>

namespace graft {

GRAFT_INLINE std::ostream& operator<<(std::ostream& os, dtype t) { return os << name(t); }

}  // namespace graft
