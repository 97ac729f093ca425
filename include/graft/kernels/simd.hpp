// graft/kernels/simd.hpp: the one Highway foreach_target pass of a translation unit.
// hwy/foreach_target.h re-includes graft/kernels/all-inl.hpp once per compiled SIMD
// target; that pass defines the lane functors (templates, needed by graft/expr's fused
// loops) and, where the kernels are compiled in this TU (GRAFT_HAS_KERNELS), the kernels
// and each target's kernel table.
//
// No include guard: the pass runs at most once per TU, the first time this header is
// included where it is needed: by graft/kernels/dispatch.hpp when the TU compiles the
// kernels, or by graft/expr (which defines GRAFT_KERNELS_SIMD_PASS first) for its loops.
// In compiled mode a TU that uses neither includes no Highway header at all.
// graft-amalgamate: skip-begin
#include "graft/kernels/config.hpp"
#include "graft/kernels/api.hpp"
#if !defined(GRAFT_KERNELS_SIMD_PASS_DONE_) && (GRAFT_HAS_KERNELS || defined(GRAFT_KERNELS_SIMD_PASS))
#define GRAFT_KERNELS_SIMD_PASS_DONE_
// graft-amalgamate: skip-end
// graft-amalgamate: foreach-target-begin
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "graft/kernels/all-inl.hpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include "graft/kernels/all-inl.hpp"
// graft-amalgamate: foreach-target-end
// graft-amalgamate: skip-begin
#endif
// graft-amalgamate: skip-end
