#pragma once
// Definitions for graft/core/detail/op_observer.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/core/detail/op_observer.hpp"

namespace graft::detail {

GRAFT_INLINE void op_observer::on_alloc(const Tensor&, bool) {}

}  // namespace graft::detail
