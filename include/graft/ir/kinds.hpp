#pragma once
// Node kinds. A kind is a type (ir::kinds::...): its name in the text form,
// its arity, whether it is pure and elementwise, and how the interpreter runs
// it with eager graft ops. The elementwise kinds are generated from the op
// table (graft::ops::all_elementwise_ops), so an op added there is an IR kind
// too. `kind_v<K>` is K's registry entry; nodes point to it.
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <variant>
#include <vector>

#include "graft/autograd/advanced_index.hpp"
#include "graft/autograd/conv.hpp"
#include "graft/autograd/functions.hpp"
#include "graft/autograd/index_reduce.hpp"
#include "graft/autograd/join_split.hpp"
#include "graft/autograd/rnn_cell.hpp"
#include "graft/autograd/tensor_methods.hpp"
#include "graft/core/error.hpp"
#include "graft/ops/table.hpp"

namespace graft::ir {

/// A value at run time: a tensor or a number.
using ivalue = std::variant<Tensor, double, std::int64_t, bool>;

/// A node attribute: int, float, bool, string, int list, float list or a constant tensor.
using attribute =
    std::variant<std::int64_t, double, bool, std::string, std::vector<std::int64_t>, std::vector<double>, Tensor>;
using attribute_map = std::map<std::string, attribute>;

/// What the registry knows about a kind.
struct kind_info {
    std::string_view name;
    int num_inputs = -1;   // -1: any number
    int num_outputs = 1;   // -1: any number
    int num_blocks = 0;
    bool pure = true;         // no side effects: dead-code and CSE passes may remove or merge it
    bool elementwise = false; // same-shape map over broadcast inputs (fusable)
    bool is_view = false;     // the output aliases the first input
    /// Runs the node on eager values (null for kinds the interpreter handles itself).
    std::vector<ivalue> (*run)(const attribute_map&, std::span<const ivalue>) = nullptr;
    /// Draws from graft::default_generator() each time it runs (not pure: never merged, folded
    /// or removed; random nodes run in graph order, so a graph draws what eager code draws).
    bool random = false;
};

namespace detail {

[[nodiscard]] GRAFT_INLINE const Tensor& tensor_arg(std::string_view op, std::span<const ivalue> in, std::size_t i);

[[nodiscard]] inline scalar number_arg(const ivalue& v) {
    if (const auto* d = std::get_if<double>(&v)) return *d;
    if (const auto* i = std::get_if<std::int64_t>(&v)) return *i;
    return std::get<bool>(v);
}

template <class T>
[[nodiscard]] const T& attr_of(std::string_view op, const attribute_map& a, const char* name) {
    auto it = a.find(name);
    graft::detail::check(it != a.end(), op, ": missing attribute '", name, "'");
    const T* p = std::get_if<T>(&it->second);
    graft::detail::check(p != nullptr, op, ": attribute '", name, "' has the wrong type");
    return *p;
}

template <class T>
[[nodiscard]] T attr_or(std::string_view op, const attribute_map& a, const char* name, T fallback) {
    return a.count(name) ? attr_of<T>(op, a, name) : fallback;
}

[[nodiscard]] GRAFT_INLINE int_list to_int_list(const std::vector<std::int64_t>& v);

/// Runs op-table entry Op on tensors and numbers.
template <class Op>
std::vector<ivalue> run_table_op(const attribute_map&, std::span<const ivalue> in) {
    graft::detail::check(in.size() == static_cast<std::size_t>(Op::arity), Op::name, ": expected ", Op::arity,
                         " inputs, got ", in.size());
    if constexpr (Op::arity == 1) {
        return {Op::call(tensor_arg(Op::name, in, 0))};
    } else if constexpr (Op::kind == ops::op_kind::where) {
        const Tensor& c = tensor_arg(Op::name, in, 0);
        const auto operand = [&](std::size_t i, const ivalue& other) -> Tensor {
            if (const auto* t = std::get_if<Tensor>(&in[i])) return *t;
            const scalar s = number_arg(in[i]);
            const auto* o = std::get_if<Tensor>(&other);
            return full({}, s, o ? result_type(*o, s) : (s.is_floating_point() ? default_float_dtype : s.kind()));
        };
        return {Op::call(c, operand(1, in[2]), operand(2, in[1]))};
    } else {
        const auto* a = std::get_if<Tensor>(&in[0]);
        const auto* b = std::get_if<Tensor>(&in[1]);
        graft::detail::check(a || b, Op::name, ": at least one input must be a tensor");
        if (a && b) return {Op::call(*a, *b)};
        if (a) return {Op::call(*a, number_arg(in[1]))};
        const scalar s = number_arg(in[0]);
        if constexpr (Op::kind == ops::op_kind::compare) return {Op::call(full({}, s, result_type(*b, s)), *b)};
        else return {Op::call(s, *b)};
    }
}

}  // namespace detail

/// Kinds that are not in the op table.
namespace kinds {

/// A constant: attribute `value` (tensor or number), no inputs.
struct constant {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue>);
    static constexpr kind_info info{"prim::Constant", 0, 1, 0, true, false, false, &run};
};

/// If(cond) with two blocks (then, else); the outputs are the taken block's outputs.
struct if_ {
    static constexpr kind_info info{"prim::If", 1, -1, 2, true, false, false, nullptr};
};

/// Loop(cond, carried...) with one block (graft::while_loop): while `cond` holds, the block
/// runs with the carried values as its inputs and returns (next cond, next carried...); the
/// outputs are the last carried values. `cond` is a number or a one-element bool tensor.
struct loop {
    static constexpr kind_info info{"prim::Loop", -1, -1, 1, true, false, false, nullptr};
};

/// Call(args...) of the graph held in its one block (block inputs = parameters,
/// block outputs = results); the inlining pass splices it into the caller.
struct call {
    static constexpr kind_info info{"prim::Call", -1, -1, 1, true, false, false, nullptr};
};

// One input count, one output; `run` (in graft/ir/impl/kinds.ipp) checks the inputs and runs the eager op.
#define GRAFT_DETAIL_IR_KIND(ident, text, n_in)                                              \
    struct ident {                                                                           \
        static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in); \
        static constexpr kind_info info{text, n_in, 1, 0, true, false, false, &run};         \
    };
#define GRAFT_DETAIL_IR_VIEW_KIND(ident, text, n_in)                                         \
    struct ident {                                                                           \
        static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in); \
        static constexpr kind_info info{text, n_in, 1, 0, true, false, true, &run};          \
    };

// Reductions: `dims` (ints; absent or empty: every dimension), `keepdim` (bool, default false).
GRAFT_DETAIL_IR_KIND(sum, "sum", 1)
GRAFT_DETAIL_IR_KIND(mean, "mean", 1)
GRAFT_DETAIL_IR_KIND(amax, "amax", 1)
GRAFT_DETAIL_IR_KIND(amin, "amin", 1)
GRAFT_DETAIL_IR_KIND(matmul, "matmul", 2)
GRAFT_DETAIL_IR_KIND(softmax, "softmax", 1)
GRAFT_DETAIL_IR_KIND(log_softmax, "log_softmax", 1)
GRAFT_DETAIL_IR_KIND(sum_to_size, "sum_to_size", 1)
GRAFT_DETAIL_IR_KIND(clone, "clone", 1)
GRAFT_DETAIL_IR_KIND(contiguous, "contiguous", 1)
GRAFT_DETAIL_IR_KIND(detach, "detach", 1)
GRAFT_DETAIL_IR_KIND(zeros_like, "zeros_like", 1)
GRAFT_DETAIL_IR_KIND(ones_like, "ones_like", 1)
GRAFT_DETAIL_IR_KIND(full_like, "full_like", 1)  // full_like[value](x): value an int, float or bool
GRAFT_DETAIL_IR_KIND(normal_cdf, "normal_cdf", 1)  // graft::normal_cdf (exact GELU's derivative)
GRAFT_DETAIL_IR_KIND(sign, "sign", 1)              // graft::sign (a zero gradient)
// binary_cross_entropy(input, target): per element, with PyTorch's backward (not a composite).
GRAFT_DETAIL_IR_KIND(binary_cross_entropy, "binary_cross_entropy", 2)
// The recurrent cells' gate math (graft/ops/rnn_cell.hpp): fused_lstm_cell(input_gates,
// hidden_gates, cx) -> (h', c') stacked [2, ..., H]; fused_lstm_cell_backward(grad,
// input_gates, hidden_gates, cx) -> [..., 5H]; fused_gru_cell(input_gates, hidden_gates, hx)
// -> h'; fused_gru_cell_backward(grad, input_gates, hidden_gates, hx) -> [..., 7H].
GRAFT_DETAIL_IR_KIND(fused_lstm_cell, "fused_lstm_cell", 3)
GRAFT_DETAIL_IR_KIND(fused_lstm_cell_backward, "fused_lstm_cell_backward", 4)
GRAFT_DETAIL_IR_KIND(fused_gru_cell, "fused_gru_cell", 3)
GRAFT_DETAIL_IR_KIND(fused_gru_cell_backward, "fused_gru_cell_backward", 4)
GRAFT_DETAIL_IR_KIND(logical_and, "logical_and", 2)  // of two bool tensors (pow's derivative)
// narrow_backward[sizes, dim, start, length](g): zeros of `sizes` with g at narrow(dim, start, length).
GRAFT_DETAIL_IR_KIND(narrow_backward, "narrow_backward", 1)

// Views: the output aliases the input's storage.
GRAFT_DETAIL_IR_VIEW_KIND(reshape, "reshape", 1)
GRAFT_DETAIL_IR_VIEW_KIND(expand, "expand", 1)
GRAFT_DETAIL_IR_VIEW_KIND(permute, "permute", 1)
GRAFT_DETAIL_IR_VIEW_KIND(transpose, "transpose", 1)
GRAFT_DETAIL_IR_VIEW_KIND(narrow, "narrow", 1)
GRAFT_DETAIL_IR_VIEW_KIND(select, "select", 1)
GRAFT_DETAIL_IR_VIEW_KIND(squeeze, "squeeze", 1)
GRAFT_DETAIL_IR_VIEW_KIND(unsqueeze, "unsqueeze", 1)
#undef GRAFT_DETAIL_IR_KIND
#undef GRAFT_DETAIL_IR_VIEW_KIND

/// cat[dim](x0, x1, ...): the inputs joined along dim (graft::cat; any number of inputs).
struct cat {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in);
    static constexpr kind_info info{"cat", -1, 1, 0, true, false, false, &run};
};

/// clamp[min=?, max=?](x): graft::clamp with number bounds (at least one attribute; an int
/// or float attribute, as the bound was written, since it takes part in type promotion).
struct clamp {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in);
    static constexpr kind_info info{"clamp", 1, 1, 0, true, true, false, &run};
};

/// tril[diagonal=0](x), triu[diagonal=0](x): graft::tril / graft::triu.
struct tril {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in);
    static constexpr kind_info info{"tril", 1, 1, 0, true, false, false, &run};
};
struct triu {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in);
    static constexpr kind_info info{"triu", 1, 1, 0, true, false, false, &run};
};

/// masked_fill[value](x, mask): graft::masked_fill with a number (an int, float or bool
/// attribute, as the value was written).
struct masked_fill {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in);
    static constexpr kind_info info{"masked_fill", 2, 1, 0, true, false, false, &run};
};

/// argmax[dim=?, keepdim=false](x), argmin[...](x): int64 positions (no attribute dim: the
/// flattened tensor).
struct argmax {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in);
    static constexpr kind_info info{"argmax", 1, 1, 0, true, false, false, &run};
};
struct argmin {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in);
    static constexpr kind_info info{"argmin", 1, 1, 0, true, false, false, &run};
};

/// logsumexp[dims, keepdim](x); var[dims, correction, keepdim](x); std[...](x).
struct logsumexp {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in);
    static constexpr kind_info info{"logsumexp", 1, 1, 0, true, false, false, &run};
};
struct var {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in);
    static constexpr kind_info info{"var", 1, 1, 0, true, false, false, &run};
};
struct std_ {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in);
    static constexpr kind_info info{"std", 1, 1, 0, true, false, false, &run};
};

/// gather[dim](x, index), scatter_add[dim](x, index, src), index_select[dim](x, index), and
/// their gradients gather_backward[sizes, dim](g, index), index_select_backward[sizes, dim](g, index)
/// (zeros of `sizes` with g added at the index).
struct gather {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in);
    static constexpr kind_info info{"gather", 2, 1, 0, true, false, false, &run};
};
struct scatter_add {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in);
    static constexpr kind_info info{"scatter_add", 3, 1, 0, true, false, false, &run};
};
struct index_select {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in);
    static constexpr kind_info info{"index_select", 2, 1, 0, true, false, false, &run};
};
struct gather_backward {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in);
    static constexpr kind_info info{"gather_backward", 2, 1, 0, true, false, false, &run};
};
struct index_select_backward {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in);
    static constexpr kind_info info{"index_select_backward", 2, 1, 0, true, false, false, &run};
};

/// im2col[kernel_size, dilation, padding, stride](x) and col2im[output_size, kernel_size,
/// dilation, padding, stride](cols): torch.nn.functional.unfold / fold (each a 2-entry list).
struct im2col {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in);
    static constexpr kind_info info{"im2col", 1, 1, 0, true, false, false, &run};
};
struct col2im {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in);
    static constexpr kind_info info{"col2im", 1, 1, 0, true, false, false, &run};
};

/// Advanced indexing (graft/autograd/advanced_index.hpp): index(x, i0, ..., ik-1);
/// index_put[accumulate](x, values, i0, ...); index_backward[sizes](g, i0, ...), index's
/// gradient (zeros of `sizes` with g added at the indices).
struct index {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in);
    static constexpr kind_info info{"index", -1, 1, 0, true, false, false, &run};
};
struct index_put {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in);
    static constexpr kind_info info{"index_put", -1, 1, 0, true, false, false, &run};
};
struct index_backward {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in);
    static constexpr kind_info info{"index_backward", -1, 1, 0, true, false, false, &run};
};

/// Random ops (graft/core/factories.hpp), drawing from graft::default_generator() when the node
/// runs: rand[sizes, dtype](), randn[sizes, dtype](), randint[low, high, sizes, dtype](),
/// randperm[n, dtype](), rand_like(x), randn_like(x), randint_like[low, high](x) (x's sizes and dtype),
/// bernoulli(p),
/// bernoulli_p[p](x).
#define GRAFT_DETAIL_IR_RANDOM_KIND(ident, text, n_in)                                       \
    struct ident {                                                                           \
        static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in); \
        static constexpr kind_info info{text, n_in, 1, 0, false, false, false, &run, true};  \
    };
GRAFT_DETAIL_IR_RANDOM_KIND(rand, "rand", 0)
GRAFT_DETAIL_IR_RANDOM_KIND(randn, "randn", 0)
GRAFT_DETAIL_IR_RANDOM_KIND(randint, "randint", 0)
GRAFT_DETAIL_IR_RANDOM_KIND(randperm, "randperm", 0)
GRAFT_DETAIL_IR_RANDOM_KIND(rand_like, "rand_like", 1)
GRAFT_DETAIL_IR_RANDOM_KIND(randn_like, "randn_like", 1)
GRAFT_DETAIL_IR_RANDOM_KIND(randint_like, "randint_like", 1)
GRAFT_DETAIL_IR_RANDOM_KIND(bernoulli, "bernoulli", 1)
GRAFT_DETAIL_IR_RANDOM_KIND(bernoulli_p, "bernoulli_p", 1)
#undef GRAFT_DETAIL_IR_RANDOM_KIND

/// to[dtype="float64"](x): x converted to another dtype (graft's dtype names).
struct to {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in);
    static constexpr kind_info info{"to", 1, 1, 0, true, false, false, &run};
};

/// gelu[approximate="none"|"tanh"](x).
struct gelu {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in);
    static constexpr kind_info info{"gelu", 1, 1, 0, true, true, false, &run};
};

namespace index_detail {

/// Flat contiguous copy of t (no autograd).
[[nodiscard]] GRAFT_INLINE Tensor flat_values(const Tensor& t);

GRAFT_INLINE void check_index(std::string_view op, const Tensor& idx, std::int64_t n);

/// out = base.flatten()[idx] (shape of idx).
[[nodiscard]] GRAFT_INLINE Tensor take_values(const Tensor& base, const Tensor& idx);

/// out = base with out.flatten()[idx] = src (src broadcast to idx's shape, in base's dtype);
/// with `accumulate`, out.flatten()[idx] += src instead.
[[nodiscard]] GRAFT_INLINE Tensor put_values(const Tensor& base, const Tensor& idx, const Tensor& src, bool accumulate);

}  // namespace index_detail

/// take(base, idx): the elements of base (in row-major order) at the positions in
/// idx, shaped like idx. Graph capture reads views of mutated tensors with it.
struct take {
    static std::vector<ivalue> run(const attribute_map&, std::span<const ivalue> in);
    static constexpr kind_info info{"take", 2, 1, 0, true, false, false, &run};
};

/// put[accumulate=false](base, idx, src): a copy of base whose elements at the positions
/// in idx are src (broadcast to idx's shape), or have src added with accumulate=true
/// (repeated positions add up). Graph capture writes into views with it.
struct put {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in);
    static constexpr kind_info info{"put", 3, 1, 0, true, false, false, &run};
};

/// copy_(dst, src): writes src into dst (a mutation: not pure); the output is dst.
struct copy_ {
    static std::vector<ivalue> run(const attribute_map&, std::span<const ivalue> in);
    static constexpr kind_info info{"copy_", 2, 1, 0, false, false, true, &run};
};

}  // namespace kinds

/// An op-table entry as an IR kind.
template <class Op>
struct table_kind {
    static constexpr kind_info info{Op::name, Op::arity, 1, 0, true, true, false, &detail::run_table_op<Op>};
};

namespace detail {
template <class T>
struct table_kinds;
template <class... Ops>
struct table_kinds<std::tuple<Ops...>> {
    using type = std::tuple<table_kind<Ops>...>;
};
}  // namespace detail

/// Every kind the IR knows: the op table's elementwise ops, then the others.
using all_kinds = decltype(std::tuple_cat(
    std::declval<typename detail::table_kinds<ops::all_elementwise_ops>::type>(),
    std::declval<std::tuple<kinds::constant, kinds::if_, kinds::loop, kinds::call, kinds::sum, kinds::mean, kinds::amax, kinds::amin,
                            kinds::matmul, kinds::softmax, kinds::log_softmax, kinds::sum_to_size, kinds::clone,
                            kinds::contiguous, kinds::detach, kinds::zeros_like, kinds::ones_like, kinds::full_like, kinds::normal_cdf, kinds::sign, kinds::binary_cross_entropy, kinds::fused_lstm_cell, kinds::fused_lstm_cell_backward, kinds::fused_gru_cell, kinds::fused_gru_cell_backward, kinds::logical_and, kinds::narrow_backward, kinds::reshape,
                            kinds::expand, kinds::permute, kinds::transpose, kinds::narrow, kinds::select,
                            kinds::squeeze, kinds::unsqueeze, kinds::copy_, kinds::to, kinds::gelu, kinds::take,
                            kinds::put, kinds::cat, kinds::clamp, kinds::tril, kinds::triu,
                            kinds::masked_fill, kinds::argmax, kinds::argmin, kinds::logsumexp, kinds::var,
                            kinds::std_, kinds::gather, kinds::scatter_add, kinds::index_select,
                            kinds::gather_backward, kinds::index_select_backward, kinds::im2col,
                            kinds::col2im, kinds::index, kinds::index_put, kinds::index_backward, kinds::rand,
                            kinds::randn, kinds::randint, kinds::randperm, kinds::rand_like, kinds::randn_like,
                            kinds::randint_like, kinds::bernoulli,
                            kinds::bernoulli_p>>()));

/// A kind type's registry entry: nodes of kind K point here.
template <class K>
inline constexpr const kind_info& kind_v = K::info;

/// The table kind for op-table entry Op.
template <class Op>
inline constexpr const kind_info& op_kind_v = table_kind<Op>::info;

namespace detail {
template <class T>
struct registry;
template <class... Ks>
struct registry<std::tuple<Ks...>> {
    static constexpr std::array<const kind_info*, sizeof...(Ks)> entries{&Ks::info...};
};
}  // namespace detail

/// Every registered kind, for lookup by name (the parser).
[[nodiscard]] GRAFT_INLINE std::span<const kind_info* const> registered_kinds();

/// The kind named `name`, or null.
[[nodiscard]] GRAFT_INLINE const kind_info* find_kind(std::string_view name);

}  // namespace graft::ir

#if GRAFT_HAS_GRAPH_CODE
#include "graft/ir/impl/kinds.ipp"
#endif
