#pragma once
// graft::jit: the profiling graph executor (executor over an IR graph,
// jit::script over a C++ function, jit::make_executor over a compile-time
// expression), its options and debug state.
#include "graft/jit/executor.hpp"
#include "graft/jit/from_expr.hpp"
#include "graft/jit/options.hpp"
#include "graft/jit/plan.hpp"
#include "graft/jit/profile.hpp"
#include "graft/jit/script.hpp"
