#pragma once
// graft/capture.hpp: graft/ir.hpp plus graph capture (graft::capture: tracing eager code
// into the IR, functionalization, AOT forward/backward partition). Manual: docs/capture.md.
#include "graft/ir.hpp"
#include "graft/capture/capture.hpp"
