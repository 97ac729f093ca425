#pragma once
// graft/ir.hpp: graft/tensor.hpp plus the runtime graph IR (graft::ir: graphs, text
// form and parser, lint, DOT, passes, interpreter). Manual: docs/ir.md.
#include "graft/tensor.hpp"
#include "graft/ir/ir.hpp"
