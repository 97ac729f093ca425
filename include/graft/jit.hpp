#pragma once
// graft/jit.hpp: the profiling graph executor (graft::jit) with everything it builds on
// (tensors, autograd, expr, ir, capture). Manual: docs/jit.md.
#include "graft/expr.hpp"
#include "graft/capture.hpp"
#include "graft/jit/jit.hpp"
