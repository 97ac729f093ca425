// The compiled part of graft (graft::compiled): the graph layers' (ir, capture, jit)
// non-template functions; the rest are in src/graft.cpp.
#define GRAFT_IMPLEMENTATION_PART_CODE_GRAPH
#include <graft/graft.hpp>
