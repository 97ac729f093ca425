#pragma once
// graft/expr/eval.hpp: the fused evaluator. ex::evaluate(e, args...) runs a traced
// expression (graft/expr/trace.hpp) on tensors and numbers in ONE pass over memory:
// every instruction of the graph is evaluated on one SIMD vector at a time, values stay
// in registers, every output is written in the same pass.
//
//   Tensor y = ex::evaluate(e, x, w);                       // one output
//   auto [a, b] = ex::evaluate_all(e2, x, 2.0);            // every output, std::array<Tensor, M>
//   Tensor z = ex::evaluate(ex::static_shape<1024>{}, e, x, w);  // compile-time bounds
//   Tensor s = ex::evaluate(ex::trace<2>([](auto x, auto w) { return sum(tanh(x * w)); }), x, w);  // 0-dim
//
// * Arguments: graft::Tensor or C++ numbers (broadcast scalars). The computation dtype
//   is graft's type promotion of all arguments (numbers do not raise float32 to
//   float64); it must be float32 or float64. int64/bool tensors are converted to it.
// * Shapes broadcast as in PyTorch; outputs are new contiguous tensors of the
//   broadcast shape (bool for comparison outputs).
// * Paths: all tensors of the output's shape and contiguous -> one flat vector loop;
//   otherwise (broadcasting, 0-dim tensors, non-contiguous views) the rows of the
//   broadcast iteration (graft::detail::for_each_row) run the same vector program with
//   broadcast / contiguous / gathered operands.
// * Reductions (sum/mean outputs) are 0-dim tensors. They sum over the broadcast shape
//   (the evaluation domain) in the same pass, per SIMD lane in float64 (float32 values are
//   widened first), then across lanes: the elementwise operand is never stored. The
//   summation order differs from eager sum(), so results agree to rounding, not bit for bit.
// * SIMD target: the instantiation of graft::kernels::current_target() (same lane math
//   as the eager kernels, graft/kernels/lanes-inl.hpp); see graft/expr/detail/fused.hpp.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "graft/core/error.hpp"
#include "graft/core/shape.hpp"
#include "graft/core/tensor.hpp"
#include "graft/expr/detail/fused.hpp"
#include "graft/expr/graph.hpp"
#include "graft/expr/print.hpp"
#include "graft/kernels/dispatch.hpp"
#include "graft/ops/elementwise.hpp"

namespace graft::expr {

/// Static-shape tag: ex::evaluate(ex::static_shape<1024>{}, e, args...) checks that
/// every tensor argument has exactly this shape and runs a loop with compile-time bounds.
template <std::int64_t... Dims>
struct static_shape {
    static constexpr std::size_t numel = (std::size_t{1} * ... * static_cast<std::size_t>(Dims));
    [[nodiscard]] static int_list sizes() { return int_list{Dims...}; }
};

namespace detail {

// ---------------------------------------------------------------- graph facts

template <class G>
struct graph_facts;
template <class... Is, std::size_t... Os, std::size_t L>
struct graph_facts<graph<instrs<Is...>, outputs<Os...>, L>> {
    template <class I>
    static constexpr std::size_t input_count(I) {
        return 0;
    }
    template <std::size_t K>
    static constexpr std::size_t input_count(input<K>) {
        return K + 1;
    }
    /// Max input index + 1 (the arguments the graph reads).
    static constexpr std::size_t num_inputs = [] {
        std::size_t n = 0;
        ((n = input_count(Is{}) > n ? input_count(Is{}) : n), ...);
        return n;
    }();
    static constexpr std::size_t num_outputs = sizeof...(Os);
    static constexpr std::array<std::size_t, sizeof...(Os)> output_ids{Os...};
};

template <class G, std::size_t J>
inline constexpr bool output_is_bool = is_mask_v<G, graph_facts<G>::output_ids[J]>;

/// Is output J of G a reduction (a 0-dim result)?
template <class G, std::size_t J>
inline constexpr bool output_is_reduction = is_reduction_v<G, graph_facts<G>::output_ids[J]>;

/// Does output J of G divide its sum by the element count (mean)?
template <class G, std::size_t J>
inline constexpr bool output_is_mean = [] {
    if constexpr (output_is_reduction<G, J>) {
        using I = typename instr_at<typename G::instructions, graph_facts<G>::output_ids[J]>::type;
        return I::op::divides_by_numel;
    } else {
        return false;
    }
}();

/// The shape of output J for the evaluation domain `shape`.
template <class G, std::size_t J>
[[nodiscard]] int_list output_shape(const int_list& shape) {
    if constexpr (output_is_reduction<G, J>) return {};
    else return shape;
}

/// The graph's printed form, for error messages.
template <class G>
[[nodiscard]] constexpr std::string_view expr_name() {
    return name_v<G>;
}

// ---------------------------------------------------------------- per-target selection

using contig_fn = void (*)(const void* const*, char* const*, std::size_t, const double*, double*);
using strided_fn = void (*)(const char* const*, const std::int64_t*, char* const*, const std::int64_t*, std::size_t,
                            const double*, double*);

struct fused_fns {
    contig_fn contig;
    strided_fn strided;
};

#define GRAFT_EXPR_DETAIL_FNS(ns) \
    fused_fns { &ns::fused_contig<G, T, NumIn, Bcast, StaticN>, &ns::fused_strided<G, T, NumIn> }

/// The loops of graph G for element type T, compiled for the current SIMD target.
template <class G, class T, std::size_t NumIn, std::uint64_t Bcast, std::size_t StaticN>
[[nodiscard]] fused_fns select_fused() {
    switch (kernels::current_target()) {
#if HWY_TARGETS & HWY_AVX3_DL
        case kernels::target::avx3_dl: return GRAFT_EXPR_DETAIL_FNS(N_AVX3_DL);
#endif
#if HWY_TARGETS & HWY_AVX3
        case kernels::target::avx3: return GRAFT_EXPR_DETAIL_FNS(N_AVX3);
#endif
#if HWY_TARGETS & HWY_AVX2
        case kernels::target::avx2: return GRAFT_EXPR_DETAIL_FNS(N_AVX2);
#endif
#if HWY_TARGETS & HWY_SSE4
        case kernels::target::sse4: return GRAFT_EXPR_DETAIL_FNS(N_SSE4);
#endif
#if HWY_TARGETS & HWY_SSSE3
        case kernels::target::ssse3: return GRAFT_EXPR_DETAIL_FNS(N_SSSE3);
#endif
#if HWY_TARGETS & HWY_NEON
        case kernels::target::neon: return GRAFT_EXPR_DETAIL_FNS(N_NEON);
#endif
#if HWY_TARGETS & HWY_EMU128
        case kernels::target::emu128: return GRAFT_EXPR_DETAIL_FNS(N_EMU128);
#endif
#if HWY_TARGETS & HWY_SCALAR
        case kernels::target::scalar: return GRAFT_EXPR_DETAIL_FNS(N_SCALAR);
#endif
        default: break;
    }
    return GRAFT_EXPR_DETAIL_FNS(HWY_NAMESPACE);  // the static (baseline) target
}
#undef GRAFT_EXPR_DETAIL_FNS

/// Lanes of a T vector in the fused loops of the current target (for tests).
template <class T>
[[nodiscard]] std::size_t fused_vector_lanes() {
    // The same cases as select_fused (the default is only right for the static target).
    switch (kernels::current_target()) {
#if HWY_TARGETS & HWY_AVX3_DL
        case kernels::target::avx3_dl: return N_AVX3_DL::fused_lanes<T>();
#endif
#if HWY_TARGETS & HWY_AVX3
        case kernels::target::avx3: return N_AVX3::fused_lanes<T>();
#endif
#if HWY_TARGETS & HWY_AVX2
        case kernels::target::avx2: return N_AVX2::fused_lanes<T>();
#endif
#if HWY_TARGETS & HWY_SSE4
        case kernels::target::sse4: return N_SSE4::fused_lanes<T>();
#endif
#if HWY_TARGETS & HWY_SSSE3
        case kernels::target::ssse3: return N_SSSE3::fused_lanes<T>();
#endif
#if HWY_TARGETS & HWY_NEON
        case kernels::target::neon: return N_NEON::fused_lanes<T>();
#endif
#if HWY_TARGETS & HWY_EMU128
        case kernels::target::emu128: return N_EMU128::fused_lanes<T>();
#endif
#if HWY_TARGETS & HWY_SCALAR
        case kernels::target::scalar: return N_SCALAR::fused_lanes<T>();
#endif
        default: break;
    }
    return HWY_NAMESPACE::fused_lanes<T>();
}

// ---------------------------------------------------------------- arguments

template <class A>
inline constexpr bool is_number_v = std::is_arithmetic_v<std::remove_cvref_t<A>>;

template <class A>
concept argument = is_number_v<A> || std::is_same_v<std::remove_cvref_t<A>, Tensor>;

template <class... Args>
[[nodiscard]] constexpr std::uint64_t number_mask() {
    std::uint64_t m = 0;
    std::size_t k = 0;
    ((m |= (is_number_v<Args> ? std::uint64_t{1} << k : 0), ++k), ...);
    return m;
}

inline void add_promotion(graft::detail::promotion_state& s, const Tensor& t) { s.add(t); }
template <class A>
    requires is_number_v<A>
void add_promotion(graft::detail::promotion_state& s, const A& v) {
    s.add(scalar(v));
}

/// One argument prepared for the loops: a tensor of dtype T, or a number (as T).
template <class T>
struct prepared {
    Tensor t;       // undefined for numbers
    T value{};      // numbers
};

template <class G, class... Args>
[[nodiscard]] dtype compute_type(const Args&... args) {
    std::size_t k = 0;
    (
        [&] {
            if constexpr (!is_number_v<Args>) {
                graft::detail::check(args.defined(), "expr::evaluate(", expr_name<G>(), "): argument ", k,
                                     " is an undefined tensor");
            }
            ++k;
        }(),
        ...);
    graft::detail::promotion_state s;
    (add_promotion(s, args), ...);
    const dtype t = s.result();
    graft::detail::check(t == dtype::float32 || t == dtype::float64, "expr::evaluate(", expr_name<G>(),
                         "): the arguments promote to ", name(t),
                         "; the fused evaluator computes in float32 or float64 (convert an argument with .to())");
    return t;
}

/// The graph's literals followed by the domain's element count (the `numel` slot).
template <class G>
[[nodiscard]] std::array<double, G::num_literals + 1> literals_and_numel(const double* lits, std::size_t n) {
    std::array<double, G::num_literals + 1> a{};
    for (std::size_t k = 0; k < G::num_literals; ++k) a[k] = lits[k];
    a[G::num_literals] = static_cast<double>(n);
    return a;
}

/// Writes the reduction outputs from their float64 sums over n elements.
template <class G, class T, std::size_t M>
void write_reductions(const std::array<Tensor, M>& out, const double* sums, std::size_t n) {
    [&]<std::size_t... Js>(std::index_sequence<Js...>) {
        (
            [&] {
                if constexpr (output_is_reduction<G, Js>) {
                    double v = sums[reduction_slots<G>::slot[Js]];
                    if constexpr (output_is_mean<G, Js>) v /= static_cast<double>(n);  // 0/0: NaN
                    *static_cast<T*>(out[Js].raw_data()) = static_cast<T>(v);
                }
            }(),
            ...);
    }(std::make_index_sequence<M>{});
}

/// New output tensors; outputs that name the same value share one tensor.
template <class G, class T, std::size_t M>
[[nodiscard]] std::array<Tensor, M> allocate_outputs(const int_list& shape) {
    constexpr auto ids = graph_facts<G>::output_ids;
    std::array<Tensor, M> out;
    [&]<std::size_t... Js>(std::index_sequence<Js...>) {
        (
            [&] {
                for (std::size_t q = 0; q < Js; ++q)
                    if (ids[q] == ids[Js]) {
                        out[Js] = out[q];
                        return;
                    }
                out[Js] = empty(output_shape<G, Js>(shape), output_is_bool<G, Js> ? dtype::bool_ : dtype_of_v<T>);
            }(),
            ...);
    }(std::make_index_sequence<M>{});
    return out;
}

/// Caller-provided outputs: defined, of the broadcast shape (0-dim for reductions) and
/// the result dtype.
template <class G, class T, std::size_t M>
[[nodiscard]] std::array<Tensor, M> check_outputs(const std::array<Tensor, M>& out, const int_list& shape) {
    [&]<std::size_t... Js>(std::index_sequence<Js...>) {
        (
            [&] {
                const dtype want = output_is_bool<G, Js> ? dtype::bool_ : dtype_of_v<T>;
                const int_list want_shape = output_shape<G, Js>(shape);
                if (!(out[Js].defined() && out[Js].sizes() == want_shape && out[Js].type() == want))
                    graft::detail::fail(graft::detail::concat(
                        "expr::evaluate_into(", expr_name<G>(), "): output ", Js, " must be a ", name(want),
                        " tensor of shape ", want_shape, ", got ",
                        out[Js].defined() ? graft::detail::concat(name(out[Js].type()), out[Js].sizes())
                                          : std::string("an undefined tensor")));
            }(),
            ...);
    }(std::make_index_sequence<M>{});
    return out;
}

/// The fused loops over the domain `shape` (n > 0 elements).
/// Argument k is a number when bit k of `Numbers` is set.
template <class G, class T, std::uint64_t Numbers, std::size_t M, std::size_t NumIn>
void run_loops(const double* lits, double* sums, std::array<prepared<T>, NumIn>& in,
               const std::array<Tensor, M>& out, const int_list& shape, std::size_t n) {
    std::array<char*, M> optr{};
    for (std::size_t j = 0; j < M; ++j) optr[j] = static_cast<char*>(out[j].raw_data());
    bool flat = true;
    for (std::size_t k = 0; k < NumIn; ++k)
        if (in[k].t.defined()) flat = flat && in[k].t.sizes() == shape && in[k].t.is_contiguous();
    for (std::size_t j = 0; j < M; ++j) flat = flat && out[j].is_contiguous();
    if (flat) {
        const fused_fns f = select_fused<G, T, NumIn, Numbers, 0>();
        std::array<const void*, NumIn + 1> iptr{};
        for (std::size_t k = 0; k < NumIn; ++k)
            iptr[k] = in[k].t.defined() ? in[k].t.raw_data() : static_cast<const void*>(&in[k].value);
        f.contig(iptr.data(), optr.data(), n, lits, sums);
        return;
    }
    // General case: rows of the broadcast iteration, operands with byte strides.
    const fused_fns f = select_fused<G, T, NumIn, 0, 0>();
    std::array<int_list, M + NumIn> strides;
    std::array<char*, M + NumIn> ptrs{};
    std::array<const int_list*, M + NumIn> sp{};
    [&]<std::size_t... Js>(std::index_sequence<Js...>) {
        (
            [&] {
                // A reduction's 0-dim output is not indexed by the loops: stride 0.
                if constexpr (output_is_reduction<G, Js>) strides[Js] = int_list(shape.size(), 0);
                else strides[Js] = graft::detail::byte_strides(out[Js]);
                ptrs[Js] = optr[Js];
            }(),
            ...);
    }(std::make_index_sequence<M>{});
    for (std::size_t k = 0; k < NumIn; ++k) {
        if (in[k].t.defined()) {
            const Tensor e = graft::detail::raw::expand(in[k].t, shape);
            strides[M + k] = graft::detail::byte_strides(e);
            ptrs[M + k] = static_cast<char*>(e.raw_data());
        } else {
            strides[M + k] = int_list(shape.size(), 0);
            ptrs[M + k] = reinterpret_cast<char*>(&in[k].value);
        }
    }
    for (std::size_t q = 0; q < M + NumIn; ++q) sp[q] = &strides[q];
    graft::detail::for_each_row<M + NumIn>(
        shape, sp, ptrs, [&](std::array<char*, M + NumIn> p, std::array<std::int64_t, M + NumIn> st, std::int64_t len) {
            std::array<const char*, NumIn + 1> ip{};
            std::array<std::int64_t, NumIn + 1> is{};
            for (std::size_t k = 0; k < NumIn; ++k) {
                ip[k] = p[M + k];
                is[k] = st[M + k];
            }
            f.strided(ip.data(), is.data(), p.data(), st.data(), static_cast<std::size_t>(len), lits, sums);
        });
}

/// Is `t` of dtype `type`, of sizes `shape` and contiguous? (the flat path's test)
[[nodiscard]] inline bool fits_flat(const Tensor& t, dtype type, const int_list& shape) noexcept {
    if (t.type() != type) return false;
    const int_list& sizes = t.sizes();
    const std::size_t rank = sizes.size();
    if (rank != shape.size()) return false;
    for (std::size_t i = 0; i < rank; ++i)
        if (sizes[i] != shape[i]) return false;
    return rank <= 1 ? (rank == 0 || t.strides()[0] == 1 || sizes[0] <= 1) : t.is_contiguous();
}

/// Caller-provided outputs that the flat path can write: exactly the result dtype and
/// shape, contiguous (anything else goes down the general path, which reports mismatches).
template <class G, class T, std::size_t M>
[[nodiscard]] bool outputs_fit_flat(const std::array<Tensor, M>& out, const int_list& shape) {
    static const int_list scalar_shape{};
    bool ok = true;
    [&]<std::size_t... Js>(std::index_sequence<Js...>) {
        ((ok = ok && out[Js].defined() &&
               fits_flat(out[Js], output_is_bool<G, Js> ? dtype::bool_ : dtype_of_v<T>,
                         output_is_reduction<G, Js> ? scalar_shape : shape)),
         ...);
    }(std::make_index_sequence<M>{});
    return ok;
}

/// The common case, without copies of the arguments or broadcasting: every tensor
/// argument of dtype T, contiguous and of one shape (equal to `*domain` when given).
/// Writes into `*into` when given,
/// else allocates `*result`. Returns false, having done nothing, when the call needs
/// the general path.
template <class G, class T, std::size_t M, class... Args>
[[nodiscard]] bool run_graph_flat(const double* lits, const std::array<Tensor, M>* into,
                                  std::array<Tensor, M>* result, const int_list* domain, const Args&... args) {
    constexpr std::size_t NumIn = sizeof...(Args);
    constexpr std::uint64_t Numbers = number_mask<Args...>();
    const int_list* shape = nullptr;
    bool ok = true;
    std::array<T, NumIn + 1> values{};
    std::array<const void*, NumIn + 1> iptr{};
    std::size_t k = 0;
    (
        [&] {
            if constexpr (is_number_v<Args>) {
                values[k] = static_cast<T>(args);
                iptr[k] = &values[k];
            } else {
                if (shape == nullptr) {
                    shape = &args.sizes();
                    ok = args.type() == dtype_of_v<T> && args.is_contiguous();
                } else {
                    ok = ok && fits_flat(args, dtype_of_v<T>, *shape);
                }
                iptr[k] = args.raw_data();
            }
            ++k;
        }(),
        ...);
    if (!ok || shape == nullptr || (domain != nullptr && !(*domain == *shape))) return false;
    if (into != nullptr && !outputs_fit_flat<G, T, M>(*into, *shape)) return false;
    const std::array<Tensor, M>& out = into != nullptr ? *into : (*result = allocate_outputs<G, T, M>(*shape));
    const auto n = static_cast<std::size_t>(graft::detail::checked_numel("ex::evaluate", *shape));
    const auto lit = literals_and_numel<G>(lits, n);
    std::array<double, reduction_slots<G>::count + 1> sums{};
    if (n > 0) {
        std::array<char*, M> optr{};
        for (std::size_t j = 0; j < M; ++j) optr[j] = static_cast<char*>(out[j].raw_data());
        select_fused<G, T, NumIn, Numbers, 0>().contig(iptr.data(), optr.data(), n, lit.data(), sums.data());
    }
    write_reductions<G, T, M>(out, sums.data(), n);
    return true;
}

/// Evaluates G on args. `domain` (optional) is a shape the arguments' shapes are
/// broadcast with: the evaluation domain of a backward graph is its forward's, even when
/// it reads none of the arguments that have that shape.
template <class G, class T, std::size_t M, class... Args>
[[nodiscard]] std::array<Tensor, M> run_graph(const double* lits, const std::array<Tensor, M>* into,
                                              const int_list* domain, const Args&... args) {
    constexpr std::size_t NumIn = sizeof...(Args);
    constexpr std::uint64_t Numbers = number_mask<Args...>();
    static_assert(NumIn <= 64, "graft::expr::evaluate: at most 64 arguments");
    {
        std::array<Tensor, M> out;
        if (run_graph_flat<G, T, M>(lits, into, &out, domain, args...)) return into != nullptr ? *into : out;
    }
    std::array<prepared<T>, NumIn> in{};
    {
        std::size_t k = 0;
        (
            [&] {
                if constexpr (is_number_v<Args>) {
                    in[k].value = static_cast<T>(args);
                } else {
                    in[k].t = args.type() == dtype_of_v<T> ? args : graft::detail::raw::to(args, dtype_of_v<T>);
                }
                ++k;
            }(),
            ...);
    }
    // The broadcast shape of the tensor arguments.
    int_list shape;
    bool first = true;
    if (domain != nullptr) {
        shape = *domain;
        first = false;
    }
    for (std::size_t k = 0; k < NumIn; ++k) {
        if (!in[k].t.defined()) continue;
        if (first) {
            shape = in[k].t.sizes();
            first = false;
            continue;
        }
        try {
            shape = broadcast_shapes(shape, in[k].t.sizes());
        } catch (const error&) {
            graft::detail::fail(graft::detail::concat("expr::evaluate(", expr_name<G>(), "): argument ", k,
                                                      " of shape ", in[k].t.sizes(),
                                                      " does not broadcast with the shape ", shape,
                                                      " of the arguments before it"));
        }
    }
    std::array<Tensor, M> out = into ? check_outputs<G, T, M>(*into, shape) : allocate_outputs<G, T, M>(shape);
    const auto n = static_cast<std::size_t>(graft::detail::checked_numel("ex::evaluate", shape));
    const auto lit = literals_and_numel<G>(lits, n);
    std::array<double, reduction_slots<G>::count + 1> sums{};
    if (n > 0) run_loops<G, T, Numbers>(lit.data(), sums.data(), in, out, shape, n);
    write_reductions<G, T, M>(out, sums.data(), n);
    return out;
}

template <class G, class Shape, class T, std::size_t M, class... Args>
[[nodiscard]] std::array<Tensor, M> run_graph_static(const double* lits, const Args&... args) {
    constexpr std::size_t NumIn = sizeof...(Args);
    constexpr std::uint64_t Numbers = number_mask<Args...>();
    const int_list shape = Shape::sizes();
    std::array<Tensor, NumIn> ts;
    std::array<T, NumIn + 1> values{};
    std::array<const void*, NumIn + 1> iptr{};
    std::size_t k = 0;
    (
        [&] {
            if constexpr (is_number_v<Args>) {
                values[k] = static_cast<T>(args);
                iptr[k] = &values[k];
            } else {
                graft::detail::check(args.sizes() == shape, "expr::evaluate(static_shape", shape, ", ",
                                     expr_name<G>(), "): argument ", k, " has shape ", args.sizes(),
                                     ", expected exactly ", shape);
                Tensor t = args.type() == dtype_of_v<T> ? args : graft::detail::raw::to(args, dtype_of_v<T>);
                ts[k] = t.is_contiguous() ? t : graft::detail::raw::contiguous(t);
                iptr[k] = ts[k].raw_data();
            }
            ++k;
        }(),
        ...);
    std::array<Tensor, M> out = allocate_outputs<G, T, M>(shape);
    std::array<char*, M> optr{};
    for (std::size_t j = 0; j < M; ++j) optr[j] = static_cast<char*>(out[j].raw_data());
    const auto lit = literals_and_numel<G>(lits, Shape::numel);
    std::array<double, reduction_slots<G>::count + 1> sums{};
    if constexpr (Shape::numel > 0) {
        const fused_fns f = select_fused<G, T, NumIn, Numbers, Shape::numel>();
        f.contig(iptr.data(), optr.data(), Shape::numel, lit.data(), sums.data());
    }
    write_reductions<G, T, M>(out, sums.data(), Shape::numel);
    return out;
}

/// The dtype every tensor argument shares, when they are all defined and of one
/// floating type (numbers then never change the promoted type); false otherwise.
template <class... Args>
[[nodiscard]] bool uniform_float_type(dtype& t, const Args&... args) {
    bool any = false, ok = true;
    (
        [&] {
            if constexpr (!is_number_v<Args>) {
                if (!args.defined()) {
                    ok = false;
                } else if (!any) {
                    t = args.type();
                    any = true;
                } else {
                    ok = ok && args.type() == t;
                }
            }
        }(),
        ...);
    return ok && any && (t == dtype::float32 || t == dtype::float64);
}

template <class G, std::size_t M, class... Args>
[[nodiscard]] std::array<Tensor, M> evaluate_graph(const double* lits, const std::array<Tensor, M>* into,
                                                   const int_list* domain, const Args&... args) {
    dtype uniform{};
    if (uniform_float_type(uniform, args...)) {
        if (uniform == dtype::float32) return run_graph<G, float, M>(lits, into, domain, args...);
        return run_graph<G, double, M>(lits, into, domain, args...);
    }
    if (compute_type<G>(args...) == dtype::float32) return run_graph<G, float, M>(lits, into, domain, args...);
    return run_graph<G, double, M>(lits, into, domain, args...);
}

template <class G, class Shape, std::size_t M, class... Args>
[[nodiscard]] std::array<Tensor, M> evaluate_graph_static(const double* lits, const Args&... args) {
    if (compute_type<G>(args...) == dtype::float32) return run_graph_static<G, Shape, float, M>(lits, args...);
    return run_graph_static<G, Shape, double, M>(lits, args...);
}

/// The graph and literal values of a traced expression (ex::traced<G> or anything
/// with graph_type and a `literals` array).
template <class E>
concept traced_expression = requires(const E& e) {
    typename E::graph_type;
    { e.literals.data() } -> std::convertible_to<const double*>;
};

/// Traced graphs keep every input (dce never removes one), so the arity is the
/// highest input index + 1.
template <class E, std::size_t NArgs>
constexpr void check_arity() {
    constexpr std::size_t arity = [] {
        if constexpr (requires { E::arity; }) return static_cast<std::size_t>(E::arity);
        else return graph_facts<typename E::graph_type>::num_inputs;
    }();
    static_assert(NArgs == arity,
                  "graft::expr::evaluate(e, args...): the number of arguments must equal the expression's arity "
                  "(the N of ex::trace<N>)");
}

}  // namespace detail

/// Every output of `e` evaluated in one fused pass: std::array<Tensor, M>.
template <detail::traced_expression E, detail::argument... Args>
[[nodiscard]] auto evaluate_all(const E& e, const Args&... args) {
    using G = typename E::graph_type;
    detail::check_arity<E, sizeof...(Args)>();
    return detail::evaluate_graph<G, G::results::size>(e.literals.data(), nullptr, nullptr, args...);
}

/// Every output, with compile-time shape `Shape` (every tensor argument must have it).
template <std::int64_t... Dims, detail::traced_expression E, detail::argument... Args>
[[nodiscard]] auto evaluate_all(static_shape<Dims...>, const E& e, const Args&... args) {
    using G = typename E::graph_type;
    detail::check_arity<E, sizeof...(Args)>();
    return detail::evaluate_graph_static<G, static_shape<Dims...>, G::results::size>(e.literals.data(), args...);
}

/// Every output of `e` written into caller-provided tensors `out` (each of the broadcast
/// shape and the result dtype; any strides). No allocation. An output may be an input
/// tensor itself (in place) only when that input has the output's shape and layout.
template <std::size_t M, detail::traced_expression E, detail::argument... Args>
void evaluate_into(const std::array<Tensor, M>& out, const E& e, const Args&... args) {
    using G = typename E::graph_type;
    static_assert(M == G::results::size,
                  "graft::expr::evaluate_into(out, e, args...): out must hold one tensor per output of e");
    detail::check_arity<E, sizeof...(Args)>();
    dtype uniform{};
    const bool flat = detail::uniform_float_type(uniform, args...) &&
                      (uniform == dtype::float32
                           ? detail::run_graph_flat<G, float, M>(e.literals.data(), &out, nullptr, nullptr, args...)
                           : detail::run_graph_flat<G, double, M>(e.literals.data(), &out, nullptr, nullptr, args...));
    if (!flat) (void)detail::evaluate_graph<G, M>(e.literals.data(), &out, nullptr, args...);
    for (const Tensor& t : out) t.bump_version();
}

/// The single output of `e` written into `out` (see evaluate_into above).
template <detail::traced_expression E, detail::argument... Args>
void evaluate_into(const Tensor& out, const E& e, const Args&... args) {
    evaluate_into(std::array<Tensor, 1>{out}, e, args...);
}

/// The single output of `e` evaluated in one fused pass.
template <detail::traced_expression E, detail::argument... Args>
[[nodiscard]] Tensor evaluate(const E& e, const Args&... args) {
    using G = typename E::graph_type;
    static_assert(G::results::size == 1,
                  "graft::expr::evaluate(e, args...): the expression has several outputs; use ex::evaluate_all");
    return evaluate_all(e, args...)[0];
}

/// The single output of `e`, with compile-time shape `Shape`.
template <std::int64_t... Dims, detail::traced_expression E, detail::argument... Args>
[[nodiscard]] Tensor evaluate(static_shape<Dims...> s, const E& e, const Args&... args) {
    using G = typename E::graph_type;
    static_assert(G::results::size == 1,
                  "graft::expr::evaluate(e, args...): the expression has several outputs; use ex::evaluate_all");
    return evaluate_all(s, e, args...)[0];
}

}  // namespace graft::expr
