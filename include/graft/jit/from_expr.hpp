#pragma once
// A compile-time expression (graft::expr) as an IR graph, so the profiling
// executor can run it: jit::executor ex(jit::to_ir(e)). The expression's ops
// are op-table entries, which are IR kinds, so the lowering is one node per
// instruction; compile-time constants and runtime literals become constants.
#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <vector>

#include "graft/expr/graph.hpp"
#include "graft/ir/graph.hpp"
#include "graft/ir/kinds.hpp"
#include "graft/jit/executor.hpp"

namespace graft::jit {
namespace detail {

template <class I>
struct max_input {
    static constexpr std::size_t value = 0;
};
template <std::size_t I>
struct max_input<expr::input<I>> {
    static constexpr std::size_t value = I + 1;
};

template <class Instrs>
struct num_inputs_of;
template <class... Is>
struct num_inputs_of<expr::instrs<Is...>> {
    static constexpr std::size_t value = std::max({std::size_t{0}, max_input<Is>::value...});
};

/// One node of kind `kind` reading `inputs`, with one output.
[[nodiscard]] GRAFT_INLINE ir::Value* lower_op(ir::Graph& g, const ir::kind_info& kind,
                                               std::initializer_list<ir::Value*> inputs);
/// A float constant.
[[nodiscard]] GRAFT_INLINE ir::Value* lower_constant(ir::Graph& g, double value);
/// A graph with `n` tensor inputs x0, x1, ...
[[nodiscard]] GRAFT_INLINE std::unique_ptr<ir::Graph> graph_with_inputs(std::size_t n);
/// Registers values[id] as the graph's outputs, in order, and checks the graph.
GRAFT_INLINE void register_outputs(ir::Graph& g, const std::vector<ir::Value*>& values,
                                   std::initializer_list<std::size_t> ids);

template <class Instr, class G>
ir::Value* lower_instr(ir::Graph& g, const expr::traced<G>& e, const std::vector<ir::Value*>& values) {
    if constexpr (requires { typename Instr::op; }) {
        return []<std::size_t... Ids>(ir::Graph& graph, const std::vector<ir::Value*>& vals,
                                      const expr::apply<typename Instr::op, Ids...>*) {
            return detail::lower_op(graph, ir::op_kind_v<typename Instr::op>, {vals[Ids]...});
        }(g, values, static_cast<const Instr*>(nullptr));
    } else if constexpr (requires { Instr::value; }) {
        return detail::lower_constant(g, Instr::value);
    } else if constexpr (requires { Instr::index; } && std::is_same_v<Instr, expr::literal<Instr::index>>) {
        return detail::lower_constant(g, e.literals[Instr::index]);
    } else {
        return g.inputs()[Instr::index];
    }
}

}  // namespace detail

/// The IR graph of compile-time expression `e`: one tensor input per expr::input<I>,
/// one output per expression output.
template <class G>
[[nodiscard]] std::unique_ptr<ir::Graph> to_ir(const expr::traced<G>& e) {
    constexpr std::size_t n_in = detail::num_inputs_of<typename G::instructions>::value;
    auto g = detail::graph_with_inputs(n_in);
    std::vector<ir::Value*> values;
    [&]<class... Is>(const expr::instrs<Is...>*) {
        (values.push_back(detail::lower_instr<Is>(*g, e, values)), ...);
    }(static_cast<const typename G::instructions*>(nullptr));
    [&]<std::size_t... Ids>(const expr::outputs<Ids...>*) {
        detail::register_outputs(*g, values, {Ids...});
    }(static_cast<const typename G::results*>(nullptr));
    return g;
}

/// A profiling executor over compile-time expression `e`.
template <class G>
[[nodiscard]] executor make_executor(const expr::traced<G>& e, options o = default_options()) {
    return executor(to_ir(e), std::move(o));
}

}  // namespace graft::jit

#if GRAFT_HAS_GRAPH_CODE
#include "graft/jit/impl/from_expr.ipp"
#endif
