#pragma once
// Definitions for graft/jit/from_expr.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/jit/from_expr.hpp"

#include <string>

namespace graft::jit::detail {

GRAFT_INLINE ir::Value* lower_op(ir::Graph& g, const ir::kind_info& kind, std::initializer_list<ir::Value*> inputs) {
    ir::Node* n = g.append(kind);
    for (ir::Value* v : inputs) n->add_input(v);
    return n->add_output();
}

GRAFT_INLINE ir::Value* lower_constant(ir::Graph& g, double value) {
    ir::Node* n = g.append<ir::kinds::constant>();
    n->set_attr("value", value);
    return n->add_output(ir::Type::float_type());
}

GRAFT_INLINE std::unique_ptr<ir::Graph> graph_with_inputs(std::size_t n) {
    auto g = std::make_unique<ir::Graph>();
    for (std::size_t i = 0; i < n; ++i) {
        std::string name = "x";  // not "x" + to_string(i): g++ 12 -O2 warns (-Wrestrict, a false positive)
        name += std::to_string(i);
        g->add_input(ir::Type::tensor_type(), std::move(name));
    }
    return g;
}

GRAFT_INLINE void register_outputs(ir::Graph& g, const std::vector<ir::Value*>& values,
                                   std::initializer_list<std::size_t> ids) {
    for (std::size_t id : ids) g.register_output(values[id]);
    g.lint();
}

}  // namespace graft::jit::detail
