#pragma once
// graft/expr.hpp: graft/tensor.hpp plus compile-time graphs (graft::expr: traced
// expressions, passes as types, compile-time autodiff, fused SIMD evaluation,
// ex::function). Manual: docs/expr.md.
#include "graft/tensor.hpp"
#include "graft/expr/expr.hpp"
