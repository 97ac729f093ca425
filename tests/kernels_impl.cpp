// The one translation unit of graft_tests that compiles graft's SIMD kernels
// (extern-kernels mode: every other test TU is built with GRAFT_KERNELS_EXTERN).
#define GRAFT_KERNELS_IMPLEMENTATION
#include <graft/graft.hpp>
