// The compiled part of graft (graft::compiled): graft's non-template functions.
#define GRAFT_IMPLEMENTATION_PART_CODE
#include <graft/graft.hpp>
