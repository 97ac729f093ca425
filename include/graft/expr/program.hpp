#pragma once
// A graph type's value form: `program`, a constexpr-friendly list of instructions
// (std::vector, usable in constant evaluation), and the two conversions
// graph type -> program (`encode<G>()`) and program -> graph type
// (`program_graph_t<Builder>`). Passes, differentiation and printing run as
// ordinary constexpr functions over programs; only their results become types.
// This keeps compile time linear and low (no recursive template rewriting) and
// lets users write passes as plain constexpr code (see `program_pass`).
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/expr/graph.hpp"
#include "graft/ops/table.hpp"

namespace graft::expr {

/// Every op a graph may apply, in a fixed order (an instruction stores its index).
using op_list = std::tuple<ops::def::neg_op, ops::def::abs_op, ops::def::exp_op, ops::def::log_op, ops::def::sqrt_op,
                           ops::def::rsqrt_op, ops::def::tanh_op, ops::def::sigmoid_op, ops::def::relu_op,
                           ops::def::sin_op, ops::def::cos_op, ops::def::log1p_op, ops::def::expm1_op,
                           ops::def::sign_op, ops::def::add_op, ops::def::sub_op, ops::def::mul_op, ops::def::div_op,
                           ops::def::pow_op, ops::def::maximum_op, ops::def::minimum_op, ops::def::eq_op, ops::def::ne_op,
                           ops::def::lt_op, ops::def::le_op, ops::def::gt_op, ops::def::ge_op, ops::def::where_op,
                           ops::def::logical_and_op, sum_op, mean_op>;

inline constexpr std::size_t num_ops = std::tuple_size_v<op_list>;

namespace detail {
template <class Op, class List>
struct op_index_impl;
template <class Op, class... Ops>
struct op_index_impl<Op, std::tuple<Ops...>> {
    static constexpr std::size_t value = [] {
        constexpr bool hits[] = {std::is_same_v<Op, Ops>...};
        for (std::size_t i = 0; i < sizeof...(Ops); ++i)
            if (hits[i]) return i;
        return sizeof...(Ops);
    }();
};
}  // namespace detail

/// Is `Op` an op of the table that graphs can apply (a member of op_list)?
template <class Op>
concept graph_op = detail::op_index_impl<Op, op_list>::value < num_ops;

/// Position of `Op` in op_list.
template <class Op>
inline constexpr std::size_t op_index_v = detail::op_index_impl<Op, op_list>::value;

/// The op at position I of op_list.
template <std::size_t I>
using op_at = std::tuple_element_t<I, op_list>;

/// Calls f(Op{}) for the op at runtime (or constexpr) index `i`.
template <class F>
constexpr void visit_op(std::size_t i, F&& f) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        ((i == I ? (f(op_at<I>{}), 0) : 0), ...);
    }(std::make_index_sequence<num_ops>{});
}

/// Instruction kinds of a program.
enum class instr_kind : unsigned char { input, constant, literal, apply, numel };

/// One instruction: input<index>, constant<value>, literal<index>, numel or apply<op_at<index>, args...>.
struct instr_data {
    instr_kind kind = instr_kind::constant;
    std::size_t index = 0;  // input number, literal number or op index
    double value = 0.0;     // constants
    std::size_t nargs = 0;
    std::array<std::size_t, 3> args{};

    [[nodiscard]] constexpr bool same_as(const instr_data& o) const {
        if (kind != o.kind || index != o.index || nargs != o.nargs) return false;
        if (kind == instr_kind::constant)
            return std::bit_cast<std::uint64_t>(value) == std::bit_cast<std::uint64_t>(o.value);
        for (std::size_t k = 0; k < nargs; ++k)
            if (args[k] != o.args[k]) return false;
        return true;
    }
};

[[nodiscard]] constexpr instr_data make_input(std::size_t i) { return {instr_kind::input, i, 0.0, 0, {}}; }
[[nodiscard]] constexpr instr_data make_constant(double v) { return {instr_kind::constant, 0, v, 0, {}}; }
[[nodiscard]] constexpr instr_data make_literal(std::size_t k) { return {instr_kind::literal, k, 0.0, 0, {}}; }
[[nodiscard]] constexpr instr_data make_numel() { return {instr_kind::numel, 0, 0.0, 0, {}}; }
[[nodiscard]] constexpr instr_data make_apply(std::size_t op, std::size_t a) { return {instr_kind::apply, op, 0.0, 1, {a, 0, 0}}; }
[[nodiscard]] constexpr instr_data make_apply(std::size_t op, std::size_t a, std::size_t b) {
    return {instr_kind::apply, op, 0.0, 2, {a, b, 0}};
}
[[nodiscard]] constexpr instr_data make_apply(std::size_t op, std::size_t a, std::size_t b, std::size_t c) {
    return {instr_kind::apply, op, 0.0, 3, {a, b, c}};
}

/// A graph as a value: instructions in SSA order, output ids, number of runtime literals.
struct program {
    std::vector<instr_data> nodes;
    std::vector<std::size_t> outs;
    std::size_t num_literals = 0;

    constexpr std::size_t push(const instr_data& d) {
        nodes.push_back(d);
        return nodes.size() - 1;
    }
    /// Number of graph arguments: one more than the largest input index (0 if none).
    [[nodiscard]] constexpr std::size_t num_inputs() const {
        std::size_t n = 0;
        for (const auto& d : nodes)
            if (d.kind == instr_kind::input && d.index + 1 > n) n = d.index + 1;
        return n;
    }
    [[nodiscard]] constexpr std::string_view op_name(std::size_t id) const {
        std::string_view r;
        visit_op(nodes[id].index, [&](auto op) { r = decltype(op)::name; });
        return r;
    }
    /// The op kind of apply instruction `id` (reductions: unary, their one operand).
    [[nodiscard]] constexpr ops::op_kind op_kind(std::size_t id) const {
        ops::op_kind r{};
        visit_op(nodes[id].index, [&](auto op) {
            if constexpr (reduction_op<decltype(op)>) r = ops::op_kind::unary;
            else r = decltype(op)::kind;
        });
        return r;
    }
    /// Is instruction `id` a reduction (sum, mean)?
    [[nodiscard]] constexpr bool is_reduction(std::size_t id) const {
        if (!is_apply(id)) return false;
        bool r = false;
        visit_op(nodes[id].index, [&](auto op) { r = reduction_op<decltype(op)>; });
        return r;
    }
    [[nodiscard]] constexpr bool is_apply(std::size_t id) const { return nodes[id].kind == instr_kind::apply; }
    [[nodiscard]] constexpr bool is_op(std::size_t id, std::size_t op) const {
        return nodes[id].kind == instr_kind::apply && nodes[id].index == op;
    }
    [[nodiscard]] constexpr bool is_constant(std::size_t id, double v) const {
        return nodes[id].kind == instr_kind::constant &&
               std::bit_cast<std::uint64_t>(nodes[id].value) == std::bit_cast<std::uint64_t>(v);
    }
    /// Does instruction `id` produce a bool (a comparison or logical result)?
    [[nodiscard]] constexpr bool is_bool(std::size_t id) const {
        if (!is_apply(id) || is_reduction(id)) return false;
        const auto k = op_kind(id);
        return k == ops::op_kind::compare || k == ops::op_kind::logical;
    }
};

/// Keeps instruction i where redirect[i] == i and drops the others, after
/// replacing every use of i by redirect[i] (which must be an earlier or kept id
/// whose own redirect is final). Relative order is preserved.
[[nodiscard]] constexpr program compact(const program& p, const std::vector<std::size_t>& redirect) {
    program r;
    r.num_literals = p.num_literals;
    std::vector<std::size_t> new_id(p.nodes.size(), 0);
    for (std::size_t i = 0; i < p.nodes.size(); ++i) {
        if (redirect[i] != i) {
            new_id[i] = new_id[redirect[i]];
            continue;
        }
        instr_data d = p.nodes[i];
        for (std::size_t k = 0; k < d.nargs; ++k) d.args[k] = new_id[d.args[k]];
        new_id[i] = r.push(d);
    }
    for (std::size_t o : p.outs) r.outs.push_back(new_id[o]);
    return r;
}

// ---------------------------------------------------------------- graph type -> program

namespace detail {
template <class I>
struct instr_encode {
    static_assert(sizeof(I) == 0,
                  "graft::expr: a graph instruction must be input<I>, constant<V>, literal<K>, numel or "
                  "apply<Op, ids...>");
};
template <std::size_t I>
struct instr_encode<input<I>> {
    static constexpr instr_data value = make_input(I);
};
template <double V>
struct instr_encode<constant<V>> {
    static constexpr instr_data value = make_constant(V);
};
template <std::size_t K>
struct instr_encode<literal<K>> {
    static constexpr instr_data value = make_literal(K);
};
template <>
struct instr_encode<numel> {
    static constexpr instr_data value = make_numel();
};
template <class Op, std::size_t... A>
struct instr_encode<apply<Op, A...>> {
    static_assert(graph_op<Op>, "graft::expr: apply<Op, ...>: Op is not an op of graft::expr::op_list (the op table)");
    static_assert(sizeof...(A) == static_cast<std::size_t>(Op::arity),
                  "graft::expr: apply<Op, ids...>: the number of operand ids must equal Op::arity");
    static constexpr instr_data value{instr_kind::apply, op_index_v<Op>, 0.0, sizeof...(A),
                                      [] {
                                          std::array<std::size_t, 3> a{};
                                          std::size_t k = 0;
                                          ((a[k++] = A), ...);
                                          return a;
                                      }()};
};

template <class G>
struct graph_encode {
    static_assert(sizeof(G) == 0, "graft::expr: expected a graph<instrs<...>, outputs<...>, NumLiterals> type");
};
template <class... Is, std::size_t... O, std::size_t L>
struct graph_encode<graph<instrs<Is...>, outputs<O...>, L>> {
    static constexpr program make() {
        program p;
        p.nodes = {instr_encode<Is>::value...};
        p.outs = {O...};
        p.num_literals = L;
        return p;
    }
    static constexpr bool well_formed = [] {
        const program p = make();
        for (std::size_t i = 0; i < p.nodes.size(); ++i)
            for (std::size_t k = 0; k < p.nodes[i].nargs; ++k)
                if (p.nodes[i].args[k] >= i) return false;
        for (std::size_t o : p.outs)
            if (o >= p.nodes.size()) return false;
        for (const auto& d : p.nodes)
            if (d.kind == instr_kind::literal && d.index >= L) return false;
        return true;
    }();
    static_assert(well_formed, "graft::expr: graph is not in SSA order (an operand or output id is not an earlier "
                               "instruction) or uses literal<K> with K >= NumLiterals");
    static constexpr bool reductions_at_root = [] {
        const program p = make();
        for (std::size_t i = 0; i < p.nodes.size(); ++i)
            for (std::size_t k = 0; k < p.nodes[i].nargs; ++k)
                if (p.nodes[i].args[k] < i && p.is_reduction(p.nodes[i].args[k])) return false;
        return true;
    }();
    static_assert(reductions_at_root, "graft::expr: a reduction (sum/mean) may only be an output of a graph; no "
                                      "instruction may read its result");
    static constexpr bool reductions_of_numbers = [] {
        const program p = make();
        for (std::size_t i = 0; i < p.nodes.size(); ++i)
            if (p.is_reduction(i) && p.nodes[i].args[0] < i && p.is_bool(p.nodes[i].args[0])) return false;
        return true;
    }();
    static_assert(reductions_of_numbers, "graft::expr: sum/mean of a comparison or logical (bool) value is not "
                                         "supported; sum where(c, 1.0, 0.0) instead");
};
}  // namespace detail

/// Is G a graft::expr::graph<instrs<...>, outputs<...>, L> type?
template <class G>
struct is_graph : std::false_type {};
template <class... Is, std::size_t... O, std::size_t L>
struct is_graph<graph<instrs<Is...>, outputs<O...>, L>> : std::true_type {};
template <class G>
concept graph_type = is_graph<G>::value;

/// The program of graph type G.
template <class G>
[[nodiscard]] constexpr program encode() {
    return detail::graph_encode<G>::make();
}

// ---------------------------------------------------------------- program -> graph type

/// Fixed-size copy of a program (a constant expression that can outlive constant evaluation).
template <std::size_t N, std::size_t M>
struct fixed_program {
    std::array<instr_data, N> nodes{};
    std::array<std::size_t, M> outs{};
    std::size_t num_literals = 0;
};

namespace detail {
template <instr_data D>
consteval auto instr_type() {
    if constexpr (D.kind == instr_kind::input) return std::type_identity<input<D.index>>{};
    else if constexpr (D.kind == instr_kind::constant) return std::type_identity<constant<D.value>>{};
    else if constexpr (D.kind == instr_kind::literal) return std::type_identity<literal<D.index>>{};
    else if constexpr (D.kind == instr_kind::numel) return std::type_identity<numel>{};
    else if constexpr (D.nargs == 1) return std::type_identity<apply<op_at<D.index>, D.args[0]>>{};
    else if constexpr (D.nargs == 2) return std::type_identity<apply<op_at<D.index>, D.args[0], D.args[1]>>{};
    else return std::type_identity<apply<op_at<D.index>, D.args[0], D.args[1], D.args[2]>>{};
}

template <const auto& F, std::size_t... I, std::size_t... O>
auto decode(std::index_sequence<I...>, std::index_sequence<O...>)
    -> graph<instrs<typename decltype(instr_type<F.nodes[I]>())::type...>, outputs<F.outs[O]...>, F.num_literals>;

template <class Builder>
struct materialize {
    static constexpr auto sizes = [] {
        const program p = Builder::build();
        return std::array<std::size_t, 2>{p.nodes.size(), p.outs.size()};
    }();
    static constexpr fixed_program<sizes[0], sizes[1]> fixed = [] {
        const program p = Builder::build();
        fixed_program<sizes[0], sizes[1]> f;
        for (std::size_t i = 0; i < sizes[0]; ++i) f.nodes[i] = p.nodes[i];
        for (std::size_t i = 0; i < sizes[1]; ++i) f.outs[i] = p.outs[i];
        f.num_literals = p.num_literals;
        return f;
    }();
    using type = decltype(decode<fixed>(std::make_index_sequence<sizes[0]>{}, std::make_index_sequence<sizes[1]>{}));
};
}  // namespace detail

/// The graph type of the program returned by `Builder::build()` (a static constexpr function).
template <class Builder>
using program_graph_t = typename detail::materialize<Builder>::type;

}  // namespace graft::expr
