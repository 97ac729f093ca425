// graft/expr/detail/fused-inl.hpp: the fused evaluator's per-target loops. For a graph
// type G (graft/expr/graph.hpp) and an element type T, one pass over memory evaluates
// every instruction on one SIMD vector at a time (the SSA values live in registers),
// stores every elementwise output and accumulates every reduction output (sum/mean).
//
// No include guard: graft/expr/detail/fused.hpp includes this file once per SIMD target
// after setting HWY_TARGET and Highway's per-target macros (templates only, instantiated
// where an expression is evaluated, with this target's attributes); graft/expr/eval.hpp
// picks the instantiation of the current target at run time.
//
// Values are vectors of T; a comparison's mask is kept as a vector (VecFromMask), so
// the program is an array of one vector type (fine for x86 and NEON; sizeless SVE/RVV
// vectors would need a tuple instead). A reduction instruction's value is its operand's;
// the loops add the operand's lanes (masked in a tail) into float64 per-lane sums.

#ifndef GRAFT_EXPR_FUSED_PASS
#error "graft/expr/detail/fused-inl.hpp is included per target by graft/expr/detail/fused.hpp only"
#endif

HWY_BEFORE_NAMESPACE();
namespace graft {
namespace expr {
namespace detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
namespace lanes = graft::kernels::HWY_NAMESPACE;

/// Lanes of a vector of T on this target (used by tests to check which target ran).
template <class T>
HWY_NOINLINE std::size_t fused_lanes() {
    const hn::ScalableTag<T> d;
    return hn::Lanes(d);
}

// ---------------------------------------------------------------- one op on vectors

template <class D, class V, class Op>
HWY_INLINE V apply_unary(D d, Op, V x) {
    using kernels::unary_op;
    if constexpr (Op::name == std::string_view("sign")) {
        return lanes::u_sign{}(d, x);
    } else {
        constexpr unary_op k = Op::kernel;
        if constexpr (k == unary_op::neg) return lanes::u_neg{}(d, x);
        else if constexpr (k == unary_op::abs) return lanes::u_abs{}(d, x);
        else if constexpr (k == unary_op::exp) return lanes::u_exp{}(d, x);
        else if constexpr (k == unary_op::log) return lanes::u_log{}(d, x);
        else if constexpr (k == unary_op::sqrt) return lanes::u_sqrt{}(d, x);
        else if constexpr (k == unary_op::rsqrt) return lanes::u_rsqrt{}(d, x);
        else if constexpr (k == unary_op::tanh) return lanes::u_tanh{}(d, x);
        else if constexpr (k == unary_op::sigmoid) return lanes::u_sigmoid{}(d, x);
        else if constexpr (k == unary_op::relu) return lanes::u_relu{}(d, x);
        else if constexpr (k == unary_op::gelu_tanh) return lanes::u_gelu_tanh{}(d, x);
        else if constexpr (k == unary_op::sin) return lanes::u_sin{}(d, x);
        else if constexpr (k == unary_op::cos) return lanes::u_cos{}(d, x);
        else if constexpr (k == unary_op::log1p) return lanes::u_log1p{}(d, x);
        else if constexpr (k == unary_op::expm1) return lanes::u_expm1{}(d, x);
        else if constexpr (k == unary_op::gelu) {
            if constexpr (sizeof(hn::TFromD<D>) == 4) return lanes::u_gelu_f32{}(d, x);
            else return lanes::u_gelu_f64{}(d, x);
        } else if constexpr (k == unary_op::normal_cdf) {
            if constexpr (sizeof(hn::TFromD<D>) == 4) return lanes::u_normal_cdf_f32{}(d, x);
            else return lanes::u_normal_cdf_f64{}(d, x);
        }
    }
}

template <class D, class V, class Op>
HWY_INLINE V apply_binary(D d, Op, V a, V b) {
    using kernels::binary_op;
    constexpr binary_op k = Op::kernel;
    if constexpr (k == binary_op::add) return lanes::b_add{}(d, a, b);
    else if constexpr (k == binary_op::sub) return lanes::b_sub{}(d, a, b);
    else if constexpr (k == binary_op::mul) return lanes::b_mul{}(d, a, b);
    else if constexpr (k == binary_op::div) return lanes::b_div{}(d, a, b);
    else if constexpr (k == binary_op::pow) return lanes::b_pow{}(d, a, b);
    else if constexpr (k == binary_op::maximum) return lanes::b_max{}(d, a, b);
    else return lanes::b_min{}(d, a, b);
}

template <class D, class V, class Op>
HWY_INLINE auto apply_compare(D, Op, V a, V b) {
    using kernels::compare_op;
    constexpr compare_op k = Op::kernel;
    if constexpr (k == compare_op::eq) return lanes::c_eq{}(a, b);
    else if constexpr (k == compare_op::ne) return lanes::c_ne{}(a, b);
    else if constexpr (k == compare_op::lt) return lanes::c_lt{}(a, b);
    else if constexpr (k == compare_op::le) return lanes::c_le{}(a, b);
    else if constexpr (k == compare_op::gt) return lanes::c_gt{}(a, b);
    else return lanes::c_ge{}(a, b);
}

// ---------------------------------------------------------------- the program

// A value used as a condition: masks are all-ones/all-zeros vectors, other values
// (a bool tensor given as 0/1) are true where nonzero.
template <class G, std::size_t Id, class D, class V>
HWY_INLINE auto as_mask(D d, V v) {
    if constexpr (detail::is_mask_v<G, Id>) {
        (void)d;
        return hn::MaskFromVec(v);
    } else {
        return hn::Ne(v, hn::Zero(d));
    }
}

template <class G, class D, class V, std::size_t I>
HWY_INLINE V instr(D, expr::input<I>, const V* in, const V*, const V*) {
    return in[I];
}
template <class G, class D, class V, double C>
HWY_INLINE V instr(D d, expr::constant<C>, const V*, const V*, const V*) {
    return hn::Set(d, static_cast<hn::TFromD<D>>(C));
}
template <class G, class D, class V, std::size_t K>
HWY_INLINE V instr(D, expr::literal<K>, const V*, const V* lit, const V*) {
    return lit[K];
}
// The element count of the evaluation domain: the slot after the literals.
template <class G, class D, class V>
HWY_INLINE V instr(D, expr::numel, const V*, const V* lit, const V*) {
    return lit[G::num_literals];
}
template <class G, class D, class V, class Op, std::size_t... A>
HWY_INLINE V instr(D d, expr::apply<Op, A...>, const V*, const V*, const V* val) {
    if constexpr (reduction_op<Op>) {
        // The operand's value; the loops accumulate it (a reduction is only an output).
        constexpr std::size_t ids[] = {A...};
        return val[ids[0]];
    } else if constexpr (Op::kind == ops::op_kind::unary) {
        return apply_unary(d, Op{}, val[A]...);
    } else if constexpr (Op::kind == ops::op_kind::binary) {
        return apply_binary(d, Op{}, val[A]...);
    } else if constexpr (Op::kind == ops::op_kind::compare) {
        return hn::VecFromMask(d, apply_compare(d, Op{}, val[A]...));
    } else if constexpr (Op::kind == ops::op_kind::logical) {
        constexpr std::size_t ids[] = {A...};
        return hn::VecFromMask(d, hn::And(as_mask<G, ids[0]>(d, val[ids[0]]), as_mask<G, ids[1]>(d, val[ids[1]])));
    } else {
        static_assert(Op::kind == ops::op_kind::where, "graft::expr: op kind not supported by the fused evaluator");
        constexpr std::size_t ids[] = {A...};
        return hn::IfThenElse(as_mask<G, ids[0]>(d, val[ids[0]]), val[ids[1]], val[ids[2]]);
    }
}

template <class G, class D, class V, class... Is, std::size_t... Ks>
HWY_INLINE void run_program(D d, expr::instrs<Is...>, std::index_sequence<Ks...>, const V* in, const V* lit,
                            V* val) {
    ((val[Ks] = instr<G>(d, Is{}, in, lit, val)), ...);
}

// Evaluates every instruction of G on one vector of inputs.
template <class G, class D, class V>
HWY_INLINE void run(D d, const V* in, const V* lit, V* val) {
    using Instrs = typename G::instructions;
    run_program<G>(d, Instrs{}, std::make_index_sequence<Instrs::size>{}, in, lit, val);
}

// Storage for the program's values (at least one element).
template <class V, std::size_t N>
struct vec_array {
    V v[N > 0 ? N : 1];
};

// Mask -> 0/1 bytes, Lanes(d) of them (graft::kernels' layout of bool tensors).
template <class D, class V>
HWY_INLINE void store_bools(D d, V m, bool* out) {
    lanes::store_mask_bytes(d, hn::MaskFromVec(m), out);
}

// Stores the elementwise outputs (reductions are accumulated instead).
template <class G, class D, class V, std::size_t... Os>
HWY_INLINE void store_outputs(D d, const V* val, char* const* out, std::size_t i, std::index_sequence<Os...>) {
    using T = hn::TFromD<D>;
    using O = output_ids<typename G::results>;
    (
        [&] {
            constexpr std::size_t id = O::ids[Os];
            if constexpr (is_reduction_v<G, id>) {
                // accumulated by the loops
            } else if constexpr (is_mask_v<G, id>) {
                store_bools(d, val[id], reinterpret_cast<bool*>(out[Os]) + i);
            } else {
                hn::StoreU(val[id], d, reinterpret_cast<T*>(out[Os]) + i);
            }
        }(),
        ...);
}

// ---------------------------------------------------------------- reductions

// Per-lane float64 partial sums of every reduction output of G. float32 lanes are
// widened before they are added (two float64 vectors per float32 vector), so the only
// float32 rounding is the final one; the order of the float64 additions is per lane,
// then across lanes, which is why results differ from eager sum() in the last bits.
template <class G, class D>
struct reduction_sums {
    using T = hn::TFromD<D>;
    static constexpr bool kWiden = sizeof(T) == 4;
#if HWY_TARGET == HWY_SCALAR
    static constexpr bool kSplit = false;  // one lane: widen it directly
#else
    static constexpr bool kSplit = kWiden && hn::MaxLanes(D()) > 1;
#endif
    // float64 tag: the same vector size (two per float32 vector) or, on one-lane targets,
    // one float64 lane.
    using DW = std::conditional_t<!kWiden, D, std::conditional_t<kSplit, hn::Repartition<double, D>, hn::Rebind<double, D>>>;
    using VW = hn::Vec<DW>;
    static constexpr std::size_t kCount = reduction_slots<G>::count;
    vec_array<VW, kCount> lo, hi;

    HWY_INLINE reduction_sums() {
        const DW dw;
        for (std::size_t r = 0; r < kCount; ++r) lo.v[r] = hi.v[r] = hn::Zero(dw);
    }

    // Adds v (all lanes) into slot r.
    template <class V>
    HWY_INLINE void add(std::size_t r, V v) {
        const DW dw;
        if constexpr (!kWiden) {
            lo.v[r] = hn::Add(lo.v[r], v);
        } else if constexpr (!kSplit) {
            lo.v[r] = hn::Add(lo.v[r], hn::PromoteTo(dw, v));
        } else {
#if HWY_TARGET != HWY_SCALAR
            const hn::Half<D> dh;
            lo.v[r] = hn::Add(lo.v[r], hn::PromoteTo(dw, hn::LowerHalf(dh, v)));
            hi.v[r] = hn::Add(hi.v[r], hn::PromoteTo(dw, hn::UpperHalf(dh, v)));
#endif
        }
    }

    // Adds the lanes of value `val[id]` of every reduction output into its slot;
    // only the first `valid` lanes when valid < Lanes(d) (a tail).
    template <class V, std::size_t... Os>
    HWY_INLINE void accumulate(D d, const V* val, std::size_t valid, std::index_sequence<Os...>) {
        using O = output_ids<typename G::results>;
        const bool full = valid >= hn::Lanes(d);
        (
            [&] {
                constexpr std::size_t id = O::ids[Os];
                if constexpr (is_reduction_v<G, id>) {
                    constexpr std::size_t slot = reduction_slots<G>::slot[Os];
                    add(slot, full ? val[id] : hn::IfThenElseZero(hn::FirstN(d, valid), val[id]));
                }
            }(),
            ...);
    }

    // Adds every slot's lanes into sums[slot].
    HWY_INLINE void flush(double* sums) const {
        const DW dw;
        HWY_ALIGN double buf[lanes::kMaxLanes<double>];
        for (std::size_t r = 0; r < kCount; ++r) {
            hn::Store(kSplit ? hn::Add(lo.v[r], hi.v[r]) : lo.v[r], dw, buf);
            double s = 0;
            for (std::size_t j = 0; j < hn::Lanes(dw); ++j) s += buf[j];
            sums[r] += s;
        }
    }
};

// ---------------------------------------------------------------- loops

/// Every operand is contiguous or a broadcast scalar: input k is broadcast when bit k
/// of `Bcast` is set (then in[k] points to one T), else contiguous over n elements.
/// `out[j]` are contiguous outputs of n elements (T, or bool for comparisons; unused
/// for reductions). `literals` holds G's literals then the element count n (numel).
/// Reduction output j adds its sum into sums[reduction_slots<G>::slot[j]].
/// `StaticN` > 0: n == StaticN is a compile-time bound (unrolled, no tail if divisible).
template <class G, class T, std::size_t NumIn, std::uint64_t Bcast, std::size_t StaticN = 0>
HWY_NOINLINE void fused_contig(const void* const* in_ptr, char* const* out, std::size_t n_runtime,
                               const double* literals, double* sums) {
    const hn::ScalableTag<T> d;
    using V = hn::Vec<decltype(d)>;
    constexpr std::size_t NumLit = G::num_literals + 1;
    constexpr std::size_t NumInstr = G::instructions::size;
    constexpr std::size_t NumOut = G::results::size;
    constexpr bool HasRed = reduction_slots<G>::count > 0;
    const std::size_t n = StaticN > 0 ? StaticN : n_runtime;
    const T* in[NumIn > 0 ? NumIn : 1];
    vec_array<V, NumIn> bc;
    for (std::size_t k = 0; k < NumIn; ++k) {
        in[k] = static_cast<const T*>(in_ptr[k]);
        if ((Bcast >> k) & 1U) bc.v[k] = hn::Set(d, in[k][0]);
    }
    vec_array<V, NumLit> lit;
    for (std::size_t k = 0; k < NumLit; ++k) lit.v[k] = hn::Set(d, static_cast<T>(literals[k]));
    reduction_sums<G, decltype(d)> acc;
    constexpr std::size_t L = hn::MaxLanes(d);
    const std::size_t N = hn::Lanes(d);
    std::size_t i = 0;
    const auto body = [&](std::size_t at) HWY_ATTR {
        vec_array<V, NumIn> x;
        [&]<std::size_t... Ks>(std::index_sequence<Ks...>) HWY_ATTR {
            ((x.v[Ks] = ((Bcast >> Ks) & 1U) ? bc.v[Ks] : hn::LoadU(d, in[Ks] + at)), ...);
        }(std::make_index_sequence<NumIn>{});
        vec_array<V, NumInstr> val;
        run<G>(d, x.v, lit.v, val.v);
        store_outputs<G>(d, val.v, out, at, std::make_index_sequence<NumOut>{});
        if constexpr (HasRed) acc.accumulate(d, val.v, N, std::make_index_sequence<NumOut>{});
    };
    const auto finish = [&]() HWY_ATTR {
        if constexpr (HasRed) acc.flush(sums);
    };
    if constexpr (StaticN > 0) {
        constexpr std::size_t full = StaticN / L * L;
#pragma GCC unroll 4
        for (std::size_t j = 0; j < full; j += L) body(j);
        i = full;
        if constexpr (full == StaticN) {
            finish();
            return;
        }
    } else {
        for (; i + N <= n; i += N) body(i);
    }
    if (i == n) {
        finish();
        return;
    }
    // Tail: through aligned buffers padded with 1 (same vector code as full vectors).
    const std::size_t r = n - i;
    HWY_ALIGN T buf[NumIn > 0 ? NumIn : 1][lanes::kMaxLanes<T>] = {};
    vec_array<V, NumIn> x;
    for (std::size_t k = 0; k < NumIn; ++k) {
        if ((Bcast >> k) & 1U) {
            x.v[k] = bc.v[k];
        } else {
            for (std::size_t j = 0; j < N; ++j) buf[k][j] = j < r ? in[k][i + j] : T(1);
            x.v[k] = hn::Load(d, buf[k]);
        }
    }
    vec_array<V, NumInstr> val;
    run<G>(d, x.v, lit.v, val.v);
    if constexpr (HasRed) acc.accumulate(d, val.v, r, std::make_index_sequence<NumOut>{});
    finish();
    // Zeroed: GCC cannot see that the vector store fills the lanes read below.
    HWY_ALIGN T obuf[NumOut > 0 ? NumOut : 1][lanes::kMaxLanes<T>] = {};
    HWY_ALIGN bool bbuf[NumOut > 0 ? NumOut : 1][lanes::kMaxLanes<T>] = {};
    char* tmp[NumOut > 0 ? NumOut : 1];
    [&]<std::size_t... Os>(std::index_sequence<Os...>) HWY_ATTR {
        using O = output_ids<typename G::results>;
        ((tmp[Os] = is_mask_v<G, O::ids[Os]> ? reinterpret_cast<char*>(bbuf[Os]) : reinterpret_cast<char*>(obuf[Os])),
         ...);
        store_outputs<G>(d, val.v, tmp, 0, std::index_sequence<Os...>{});
        (
            [&] {
                if constexpr (is_reduction_v<G, O::ids[Os]>) {
                    // accumulated above
                } else if constexpr (is_mask_v<G, O::ids[Os]>) {
                    for (std::size_t j = 0; j < r; ++j) reinterpret_cast<bool*>(out[Os])[i + j] = bbuf[Os][j];
                } else {
                    for (std::size_t j = 0; j < r; ++j) reinterpret_cast<T*>(out[Os])[i + j] = obuf[Os][j];
                }
            }(),
            ...);
    }(std::make_index_sequence<NumOut>{});
}

/// One row of the general (broadcast / strided) case: input k at in[k] with byte
/// stride in_stride[k] (0: broadcast, sizeof(T): contiguous, other: gathered);
/// output j at out[j] with byte stride out_stride[j] (unused for reductions).
/// `literals` and `sums` as for fused_contig (sums accumulate over the rows).
template <class G, class T, std::size_t NumIn>
HWY_NOINLINE void fused_strided(const char* const* in, const std::int64_t* in_stride, char* const* out,
                                const std::int64_t* out_stride, std::size_t n, const double* literals,
                                double* sums) {
    const hn::ScalableTag<T> d;
    using V = hn::Vec<decltype(d)>;
    constexpr std::size_t NumLit = G::num_literals + 1;
    constexpr std::size_t NumInstr = G::instructions::size;
    constexpr std::size_t NumOut = G::results::size;
    constexpr bool HasRed = reduction_slots<G>::count > 0;
    using O = output_ids<typename G::results>;
    const std::size_t N = hn::Lanes(d);
    vec_array<V, NumLit> lit;
    for (std::size_t k = 0; k < NumLit; ++k) lit.v[k] = hn::Set(d, static_cast<T>(literals[k]));
    reduction_sums<G, decltype(d)> acc;
    constexpr std::int64_t es = sizeof(T);
    // Outputs are usually fresh contiguous tensors: store whole vectors directly.
    bool out_contig = true;
    [&]<std::size_t... Os>(std::index_sequence<Os...>) {
        ((out_contig = out_contig && (is_reduction_v<G, O::ids[Os]> ||
                                      out_stride[Os] == (is_mask_v<G, O::ids[Os]> ? 1 : es))),
         ...);
    }(std::make_index_sequence<NumOut>{});
    HWY_ALIGN T buf[lanes::kMaxLanes<T>] = {};
    HWY_ALIGN T obuf[NumOut > 0 ? NumOut : 1][lanes::kMaxLanes<T>] = {};
    HWY_ALIGN bool bbuf[NumOut > 0 ? NumOut : 1][lanes::kMaxLanes<T>] = {};
    for (std::size_t i = 0; i < n; i += N) {
        const std::size_t r = n - i < N ? n - i : N;
        vec_array<V, NumIn> x;
        for (std::size_t k = 0; k < NumIn; ++k) {
            const std::int64_t s = in_stride[k];
            const char* p = in[k] + static_cast<std::int64_t>(i) * s;
            if (s == 0) {
                x.v[k] = hn::Set(d, *reinterpret_cast<const T*>(p));
            } else if (s == es && r == N) {
                x.v[k] = hn::LoadU(d, reinterpret_cast<const T*>(p));
            } else {
                for (std::size_t j = 0; j < N; ++j)
                    buf[j] = j < r ? *reinterpret_cast<const T*>(p + static_cast<std::int64_t>(j) * s) : T(1);
                x.v[k] = hn::Load(d, buf);
            }
        }
        vec_array<V, NumInstr> val;
        run<G>(d, x.v, lit.v, val.v);
        if constexpr (HasRed) acc.accumulate(d, val.v, r, std::make_index_sequence<NumOut>{});
        if (out_contig && r == N) {
            char* o[NumOut > 0 ? NumOut : 1];
            for (std::size_t j = 0; j < NumOut; ++j) o[j] = out[j];
            store_outputs<G>(d, val.v, o, i, std::make_index_sequence<NumOut>{});
            continue;
        }
        char* tmp[NumOut > 0 ? NumOut : 1];
        [&]<std::size_t... Os>(std::index_sequence<Os...>) HWY_ATTR {
            ((tmp[Os] = is_mask_v<G, O::ids[Os]> ? reinterpret_cast<char*>(bbuf[Os])
                                                 : reinterpret_cast<char*>(obuf[Os])),
             ...);
            store_outputs<G>(d, val.v, tmp, 0, std::index_sequence<Os...>{});
            (
                [&] {
                    char* o = out[Os] + static_cast<std::int64_t>(i) * out_stride[Os];
                    if constexpr (is_reduction_v<G, O::ids[Os]>) {
                        (void)o;  // accumulated above
                    } else if constexpr (is_mask_v<G, O::ids[Os]>) {
                        for (std::size_t j = 0; j < r; ++j)
                            *reinterpret_cast<bool*>(o + static_cast<std::int64_t>(j) * out_stride[Os]) = bbuf[Os][j];
                    } else {
                        for (std::size_t j = 0; j < r; ++j)
                            *reinterpret_cast<T*>(o + static_cast<std::int64_t>(j) * out_stride[Os]) = obuf[Os][j];
                    }
                }(),
                ...);
        }(std::make_index_sequence<NumOut>{});
    }
    if constexpr (HasRed) acc.flush(sums);
}

}  // namespace HWY_NAMESPACE
}  // namespace detail
}  // namespace expr
}  // namespace graft
HWY_AFTER_NAMESPACE();
