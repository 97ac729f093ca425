#pragma once
// graft::expr: compile-time graphs. Trace a generic lambda into a graph type,
// optimize it with passes that are types, differentiate it at compile time.
#include "graft/expr/graph.hpp"
#include "graft/expr/program.hpp"
#include "graft/expr/passes.hpp"
#include "graft/expr/trace.hpp"
#include "graft/expr/print.hpp"
#include "graft/expr/grad.hpp"
#include "graft/expr/interpret.hpp"

// ---- expr-eval engineer's headers go here (fused evaluation, eager autograd node): ----
#include "graft/expr/eval.hpp"
#include "graft/expr/function.hpp"
