#pragma once
// graft/expr/detail/fused.hpp: compiles the fused evaluator's loops
// (graft/expr/detail/fused-inl.hpp) once per SIMD target, from the expr layer.
//
// Why not a second hwy/foreach_target.h pass: Highway 1.0.3's foreach_target.h has an
// include guard and its toggle is one global parity, so a translation unit gets exactly
// one pass, which graft/kernels/dispatch.hpp uses for the kernels. That pass has already
// defined Highway's ops (hwy::N_<TARGET>) and graft's lane functors
// (graft::kernels::N_<TARGET>) for every compiled target. fused-inl.hpp only adds
// templates on top of them, so each target needs only Highway's per-target macros
// (HWY_NAMESPACE, HWY_BEFORE_NAMESPACE, HWY_ATTR, ...), which hwy/ops/set_macros-inl.h
// (re)defines for the current HWY_TARGET every time it is included. Below, for every
// target the kernels pass compiled (the same condition foreach_target.h uses), HWY_TARGET
// is set, the macros are set, and fused-inl.hpp is included; the static target comes
// last, so the macros end as they were.
//
// Include at file scope, outside any per-target region (as graft/kernels/dispatch.hpp).
// In the single header (scripts/amalgamate.py), GRAFT_EXPR_FUSED_INL names the single
// header itself, which then emits only fused-inl.hpp's body (GRAFT_EXPR_FUSED_PASS).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>

#include "graft/expr/graph.hpp"
#include "graft/kernels/dispatch.hpp"
// The TU's Highway pass (lane functors for every target), also in compiled mode.
#define GRAFT_KERNELS_SIMD_PASS
#include "graft/kernels/simd.hpp"

#include <hwy/highway.h>

#if HWY_TARGET != HWY_STATIC_TARGET
#error "graft/expr/detail/fused.hpp must be included outside per-target code (HWY_TARGET is not the static target)"
#endif

// ---------------------------------------------------------------- target-independent facts

namespace graft::expr::detail {

/// Does op `Op` produce a bool (a mask in the fused program)?
template <class Op>
inline constexpr bool op_yields_bool = [] {
    if constexpr (reduction_op<Op>) return false;
    else return Op::kind == ops::op_kind::compare || Op::kind == ops::op_kind::logical;
}();

/// Does instruction `Instr` produce a bool (a mask in the fused program)?
template <class Instr>
struct yields_mask : std::false_type {};
template <class Op, std::size_t... A>
struct yields_mask<expr::apply<Op, A...>> : std::bool_constant<op_yields_bool<Op>> {};

/// Is instruction `Instr` a reduction (its value in the program is its operand's)?
template <class Instr>
struct is_reduction_instr : std::false_type {};
template <class Op, std::size_t A>
struct is_reduction_instr<expr::apply<Op, A>> : std::bool_constant<reduction_op<Op>> {};

template <class Instrs, std::size_t Id>
struct instr_at;
template <class I0, class... Is>
struct instr_at<expr::instrs<I0, Is...>, 0> {
    using type = I0;
};
template <class I0, class... Is, std::size_t Id>
struct instr_at<expr::instrs<I0, Is...>, Id> : instr_at<expr::instrs<Is...>, Id - 1> {};

/// Is value `Id` of graph G a bool (mask)?
template <class G, std::size_t Id>
inline constexpr bool is_mask_v = yields_mask<typename instr_at<typename G::instructions, Id>::type>::value;

/// Is value `Id` of graph G a reduction (sum/mean over the evaluation domain)?
template <class G, std::size_t Id>
inline constexpr bool is_reduction_v = is_reduction_instr<typename instr_at<typename G::instructions, Id>::type>::value;

template <class Outputs>
struct output_ids;
template <std::size_t... Ids>
struct output_ids<expr::outputs<Ids...>> {
    static constexpr std::size_t size = sizeof...(Ids);
    static constexpr std::size_t ids[sizeof...(Ids) > 0 ? sizeof...(Ids) : 1] = {Ids...};
};

/// Which outputs of G are reductions: `count` of them; output j accumulates into
/// slot `slot[j]` (outputs that are not reductions have slot == count).
template <class G>
struct reduction_slots {
    using O = output_ids<typename G::results>;
    static constexpr std::size_t count = [] {
        std::size_t c = 0;
        [&]<std::size_t... J>(std::index_sequence<J...>) {
            ((c += is_reduction_v<G, O::ids[J]> ? 1 : 0), ...);
        }(std::make_index_sequence<O::size>{});
        return c;
    }();
    static constexpr auto slot = [] {
        std::array<std::size_t, O::size> s{};
        std::size_t c = 0;
        [&]<std::size_t... J>(std::index_sequence<J...>) {
            ((s[J] = is_reduction_v<G, O::ids[J]> ? c++ : count), ...);
        }(std::make_index_sequence<O::size>{});
        return s;
    }();
};

}  // namespace graft::expr::detail

// ---------------------------------------------------------------- one instantiation per target

// graft-amalgamate: per-target-file graft/expr/detail/fused-inl.hpp
#ifndef GRAFT_EXPR_FUSED_INL
#define GRAFT_EXPR_FUSED_INL "graft/expr/detail/fused-inl.hpp"
#endif
#define GRAFT_EXPR_FUSED_PASS

// The targets the fused evaluator supports (fixed-size vectors; see fused-inl.hpp), when
// the kernels pass compiled them. Order does not matter; the static target comes last.
#if (HWY_TARGETS & HWY_AVX3_DL) && (HWY_STATIC_TARGET != HWY_AVX3_DL)
#undef HWY_TARGET
#define HWY_TARGET HWY_AVX3_DL
#include <hwy/ops/set_macros-inl.h>
#include GRAFT_EXPR_FUSED_INL
#endif
#if (HWY_TARGETS & HWY_AVX3) && (HWY_STATIC_TARGET != HWY_AVX3)
#undef HWY_TARGET
#define HWY_TARGET HWY_AVX3
#include <hwy/ops/set_macros-inl.h>
#include GRAFT_EXPR_FUSED_INL
#endif
#if (HWY_TARGETS & HWY_AVX2) && (HWY_STATIC_TARGET != HWY_AVX2)
#undef HWY_TARGET
#define HWY_TARGET HWY_AVX2
#include <hwy/ops/set_macros-inl.h>
#include GRAFT_EXPR_FUSED_INL
#endif
#if (HWY_TARGETS & HWY_SSE4) && (HWY_STATIC_TARGET != HWY_SSE4)
#undef HWY_TARGET
#define HWY_TARGET HWY_SSE4
#include <hwy/ops/set_macros-inl.h>
#include GRAFT_EXPR_FUSED_INL
#endif
#if (HWY_TARGETS & HWY_SSSE3) && (HWY_STATIC_TARGET != HWY_SSSE3)
#undef HWY_TARGET
#define HWY_TARGET HWY_SSSE3
#include <hwy/ops/set_macros-inl.h>
#include GRAFT_EXPR_FUSED_INL
#endif
#if (HWY_TARGETS & HWY_NEON) && (HWY_STATIC_TARGET != HWY_NEON)
#undef HWY_TARGET
#define HWY_TARGET HWY_NEON
#include <hwy/ops/set_macros-inl.h>
#include GRAFT_EXPR_FUSED_INL
#endif
#if (HWY_TARGETS & HWY_EMU128) && (HWY_STATIC_TARGET != HWY_EMU128)
#undef HWY_TARGET
#define HWY_TARGET HWY_EMU128
#include <hwy/ops/set_macros-inl.h>
#include GRAFT_EXPR_FUSED_INL
#endif
#if (HWY_TARGETS & HWY_SCALAR) && (HWY_STATIC_TARGET != HWY_SCALAR)
#undef HWY_TARGET
#define HWY_TARGET HWY_SCALAR
#include <hwy/ops/set_macros-inl.h>
#include GRAFT_EXPR_FUSED_INL
#endif
// The static target last: HWY_TARGET and Highway's macros are restored.
#undef HWY_TARGET
#define HWY_TARGET HWY_STATIC_TARGET
#include <hwy/ops/set_macros-inl.h>
#include GRAFT_EXPR_FUSED_INL

#undef GRAFT_EXPR_FUSED_PASS
