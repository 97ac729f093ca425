#pragma once
// A compile-time expression (graft::expr) as an IR graph, so the profiling
// executor can run it: jit::executor ex(jit::to_ir(e)). The expression's ops
// are op-table entries, which are IR kinds, so the lowering is one node per
// instruction; compile-time constants and runtime literals become constants.
#include <cstddef>
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

template <class Instr, class G>
ir::Value* lower_instr(ir::Graph& g, const expr::traced<G>& e, const std::vector<ir::Value*>& values) {
    if constexpr (requires { typename Instr::op; }) {
        return []<std::size_t... Ids>(ir::Graph& graph, const std::vector<ir::Value*>& vals,
                                      const expr::apply<typename Instr::op, Ids...>*) {
            ir::Node* n = graph.append(ir::op_kind_v<typename Instr::op>);
            (n->add_input(vals[Ids]), ...);
            return n->add_output();
        }(g, values, static_cast<const Instr*>(nullptr));
    } else if constexpr (requires { Instr::value; }) {
        ir::Node* n = g.append<ir::kinds::constant>();
        n->set_attr("value", Instr::value);
        return n->add_output(ir::Type::float_type());
    } else if constexpr (requires { Instr::index; } && std::is_same_v<Instr, expr::literal<Instr::index>>) {
        ir::Node* n = g.append<ir::kinds::constant>();
        n->set_attr("value", e.literals[Instr::index]);
        return n->add_output(ir::Type::float_type());
    } else {
        return g.inputs()[Instr::index];
    }
}

}  // namespace detail

/// The IR graph of compile-time expression `e`: one tensor input per expr::input<I>,
/// one output per expression output.
template <class G>
[[nodiscard]] std::unique_ptr<ir::Graph> to_ir(const expr::traced<G>& e) {
    auto g = std::make_unique<ir::Graph>();
    constexpr std::size_t n_in = detail::num_inputs_of<typename G::instructions>::value;
    for (std::size_t i = 0; i < n_in; ++i) g->add_input(ir::Type::tensor_type(), "x" + std::to_string(i));
    std::vector<ir::Value*> values;
    [&]<class... Is>(const expr::instrs<Is...>*) {
        (values.push_back(detail::lower_instr<Is>(*g, e, values)), ...);
    }(static_cast<const typename G::instructions*>(nullptr));
    [&]<std::size_t... Ids>(const expr::outputs<Ids...>*) {
        (g->register_output(values[Ids]), ...);
    }(static_cast<const typename G::results*>(nullptr));
    g->lint();
    return g;
}

/// A profiling executor over compile-time expression `e`.
template <class G>
[[nodiscard]] executor make_executor(const expr::traced<G>& e, options o = default_options()) {
    return executor(to_ir(e), std::move(o));
}

}  // namespace graft::jit
