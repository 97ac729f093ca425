#pragma once
// graft's runtime graph IR: types, graphs, kinds, text form, DOT, interpreter.
#include "graft/ir/graph.hpp"
#include "graft/ir/interpreter.hpp"
#include "graft/ir/kinds.hpp"
#include "graft/ir/parse.hpp"
#include "graft/ir/passes.hpp"
#include "graft/ir/print.hpp"
#include "graft/ir/symbolic.hpp"
#include "graft/ir/type.hpp"
