// graft/kernels/all-inl.hpp: the per-target umbrella. graft/kernels/dispatch.hpp sets
// HWY_TARGET_INCLUDE to this file, so hwy/foreach_target.h re-includes it once per
// compiled SIMD target; each pass defines graft::kernels::N_<TARGET>::table.
// Add new kernel -inl.hpp files here. Only Highway/graft -inl includes below the
// api include: no std or third-party headers inside the per-target region.

#include "graft/kernels/api.hpp"

#include <hwy/highway.h>

// Lane functors (templates only): in every pass, also in compiled mode, so that
// code built on the kernels in upper layers (the fused expression evaluator, which
// compiles its own per-target loops from graft/expr) can instantiate them.
#include "graft/kernels/lanes-inl.hpp"

// In compiled mode the kernels are compiled only in the graft library (GRAFT_HAS_KERNELS,
// graft/config.hpp).
#if GRAFT_HAS_KERNELS
#include "graft/kernels/elementwise-inl.hpp"
#include "graft/kernels/reduce-inl.hpp"
#include "graft/kernels/matmul-inl.hpp"
#include "graft/kernels/program-inl.hpp"
#include "graft/kernels/optim-inl.hpp"
#endif

// graft-amalgamate: per-target
#if defined(GRAFT_KERNELS_ALL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GRAFT_KERNELS_ALL_INL_H_
#undef GRAFT_KERNELS_ALL_INL_H_
#else
#define GRAFT_KERNELS_ALL_INL_H_
#endif

#if GRAFT_HAS_KERNELS
namespace graft {
namespace kernels {
namespace HWY_NAMESPACE {

/// This target's entry points, picked up by graft/kernels/dispatch.hpp.
inline constexpr detail::kernel_table table = {
    &unary_f32,   &unary_f64,   &binary_f32,  &binary_f64, &compare_f32, &compare_f64, &where_f32,
    &where_f64,   &reduce_f32,  &reduce_f64,  &matmul_f32, &matmul_f64,  &softmax_f32, &softmax_f64,
    &run_program_f32, &run_program_f64,
    &sgd_f32,     &sgd_f64,     &adam_f32,    &adam_f64,
    &sum_block_f32, &sum_block_f64,
};

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace graft
#endif  // kernels compiled in this TU

#endif  // toggle guard
