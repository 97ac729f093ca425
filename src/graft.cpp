// The compiled part of graft (graft::compiled): graft's non-template functions other than
// the graph layers' (those are in src/graft_graph.cpp, compiled alongside).
#define GRAFT_IMPLEMENTATION_PART_CODE_BASE
#include <graft/graft.hpp>
