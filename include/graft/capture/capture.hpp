#pragma once
// graft's graph capture: capture::trace (functionalized IR of eager code) and
// capture::aot (forward and backward graphs from one joint trace).
#include "graft/capture/aot.hpp"
#include "graft/capture/trace.hpp"
