#pragma once
// Definitions for graft/ir/interpreter.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/ir/interpreter.hpp"

namespace graft::ir {
namespace detail {

GRAFT_INLINE bool truthy(const ivalue& v) {
    if (const auto* b = std::get_if<bool>(&v)) return *b;
    if (const auto* i = std::get_if<std::int64_t>(&v)) return *i != 0;
    if (const auto* d = std::get_if<double>(&v)) return *d != 0.0;
    const Tensor& t = std::get<Tensor>(v);
    graft::detail::check(t.defined() && t.numel() == 1, "prim::If: a tensor condition must have one element, got sizes ",
                         t.defined() ? t.sizes() : int_list{});
    return t.item<double>() != 0.0;
}

GRAFT_INLINE std::string describe_value(const ivalue& x) {
    if (const auto* t = std::get_if<Tensor>(&x)) {
        if (!t->defined()) return "an undefined tensor";
        ir::TensorType tt = ir::TensorType::of(*t);
        if (t->is_contiguous()) tt.strides.reset();  // as types print: strides only when they matter
        if (!t->requires_grad()) tt.requires_grad.reset();
        return to_string(Type::tensor_type(std::move(tt)));
    }
    if (std::holds_alternative<double>(x)) return "a float";
    if (std::holds_alternative<std::int64_t>(x)) return "an int";
    return "a bool";
}

GRAFT_INLINE void check_input_type(const Value* v, const ivalue& x) {
    const Type& t = v->type();
    const bool ok = std::visit(
        [&](const auto& val) {
            using V = std::decay_t<decltype(val)>;
            if constexpr (std::is_same_v<V, Tensor>) return t.is_tensor() && val.defined() && t.tensor.matches(val);
            else if constexpr (std::is_same_v<V, double>) return t.kind == type_kind::float_;
            else if constexpr (std::is_same_v<V, std::int64_t>) return t.kind == type_kind::int_;
            else return t.kind == type_kind::bool_;
        },
        x);
    if (ok) return;
    graft::detail::fail(graft::detail::concat("ir::interpret: input %", v->name(), " expects ", to_string(t), ", got ",
                                              describe_value(x)));
}

GRAFT_INLINE const ivalue& lookup(const std::map<const Value*, ivalue>& env, const Value* v) {
    const auto it = env.find(v);
    if (it == env.end())
        graft::detail::fail(graft::detail::concat("ir::interpret: %", v->name(),
                                                  " is used before it is defined (Graph::lint() tells where)"));
    return it->second;
}

GRAFT_INLINE std::vector<ivalue> run_block(const Block& b, std::map<const Value*, ivalue>& env,
                                           const symbolic_sizes* sizes, std::span<const std::int64_t> values) {
    for (const Node* n : b.nodes()) {
        std::vector<ivalue> in;
        in.reserve(n->inputs().size());
        for (const Value* v : n->inputs()) in.push_back(lookup(env, v));
        std::vector<ivalue> out;
        if (n->is<kinds::if_>()) {
            out = run_block(*n->blocks()[truthy(in[0]) ? 0 : 1], env, sizes, values);
        } else if (n->is<kinds::loop>()) {
            const Block& body = *n->blocks()[0];
            ivalue c = in[0];
            std::vector<ivalue> carried(in.begin() + 1, in.end());
            while (truthy(c)) {
                for (std::size_t i = 0; i < carried.size(); ++i) env[body.inputs()[i]] = carried[i];
                std::vector<ivalue> next = run_block(body, env, sizes, values);
                c = std::move(next[0]);
                carried.assign(std::make_move_iterator(next.begin() + 1), std::make_move_iterator(next.end()));
            }
            out = std::move(carried);
        } else if (n->is<kinds::call>()) {
            const Block& body = *n->blocks()[0];
            graft::detail::check(body.inputs().size() == in.size(), "prim::Call: the callee takes ",
                                 body.inputs().size(), " arguments, got ", in.size());
            for (std::size_t i = 0; i < in.size(); ++i) env[body.inputs()[i]] = in[i];
            out = run_block(body, env, sizes, values);
        } else {
            graft::detail::check(n->kind().run != nullptr, "ir::interpret: no interpreter for ", n->kind().name);
            out = sizes && sizes->patches_node(n) ? n->kind().run(sizes->attributes(n, values), in)
                                                  : n->kind().run(n->attributes(), in);
        }
        graft::detail::check(out.size() == n->outputs().size(), "ir::interpret: ", n->kind().name, " gave ",
                             out.size(), " values for ", n->outputs().size(), " outputs");
        for (std::size_t i = 0; i < out.size(); ++i) env[n->outputs()[i]] = std::move(out[i]);
    }
    std::vector<ivalue> r;
    for (const Value* v : b.outputs()) r.push_back(lookup(env, v));
    return r;
}

}  // namespace detail

GRAFT_INLINE std::vector<ivalue> interpret(const Graph& g, const std::vector<ivalue>& inputs) {
    graft::detail::check(inputs.size() == g.inputs().size(), "ir::interpret: the graph takes ", g.inputs().size(),
                         " inputs, got ", inputs.size());
    std::map<const Value*, ivalue> env;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        detail::check_input_type(g.inputs()[i], inputs[i]);
        env[g.inputs()[i]] = inputs[i];
    }
    return detail::run_block(*g.block(), env);
}

GRAFT_INLINE std::vector<ivalue> interpret(const Graph& g, const std::vector<ivalue>& inputs,
                                           const symbolic_sizes* sizes) {
    if (!sizes) return interpret(g, inputs);
    graft::detail::check(inputs.size() == g.inputs().size(), "ir::interpret: the graph takes ", g.inputs().size(),
                         " inputs, got ", inputs.size());
    std::map<const Value*, ivalue> env;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        detail::check_input_type(g.inputs()[i], inputs[i]);
        env[g.inputs()[i]] = inputs[i];
    }
    const std::vector<std::int64_t> values = sizes->bind(inputs);
    return detail::run_block(*g.block(), env, sizes, values);
}

GRAFT_INLINE std::vector<Tensor> interpret(const Graph& g, const std::vector<Tensor>& inputs) {
    std::vector<ivalue> in(inputs.begin(), inputs.end());
    std::vector<Tensor> r;
    for (auto& v : interpret(g, in)) {
        auto* t = std::get_if<Tensor>(&v);
        graft::detail::check(t != nullptr, "ir::interpret: an output is a number; use the ivalue overload");
        r.push_back(std::move(*t));
    }
    return r;
}

}  // namespace graft::ir
