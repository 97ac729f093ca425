#pragma once
// graft/jit.hpp: the profiling graph executor (graft::jit) with everything it builds on
// (tensors, autograd, ir, capture). Compile-time expressions (graft::expr, for jit::to_ir)
// come with graft/expr.hpp, which this header does not include: it would add Highway's
// per-target pass and Boost.Hana to every TU that only scripts functions. Manual: docs/jit.md.
#include "graft/capture.hpp"
#include "graft/jit/jit.hpp"
