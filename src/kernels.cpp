// The compiled part of graft (graft::compiled): the SIMD kernels for every target.
#define GRAFT_IMPLEMENTATION_PART_KERNELS
#include <graft/graft.hpp>
