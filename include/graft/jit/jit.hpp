#pragma once
// graft::jit: the profiling graph executor (executor over an IR graph,
// jit::script over a C++ function), its options and debug state.
#include "graft/jit/executor.hpp"
#include "graft/jit/options.hpp"
#include "graft/jit/plan.hpp"
#include "graft/jit/profile.hpp"
#include "graft/jit/script.hpp"
