#pragma once
// Definitions for graft/ir/interpreter.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/ir/interpreter.hpp"

#include <unordered_map>

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

GRAFT_INLINE prepared_graph::prepared_graph(std::shared_ptr<const Graph> g, std::shared_ptr<const symbolic_sizes> sizes)
    : graph_(std::move(g)), sizes_(std::move(sizes)) {
    graft::detail::check(graph_ != nullptr, "ir::prepared_graph: the graph is null");
    for (const Node* n : graph_->block()->nodes()) flat_ = flat_ && n->blocks().empty();
    if (!flat_) return;
    std::unordered_map<const Value*, std::uint32_t> slot;
    const auto number = [&](const Value* v) {
        const auto [it, fresh] = slot.emplace(v, static_cast<std::uint32_t>(num_slots_));
        if (fresh) ++num_slots_;
        return it->second;
    };
    for (const Value* v : graph_->inputs()) (void)number(v);
    const auto slot_of = [&](const Value* v) {
        const auto it = slot.find(v);
        graft::detail::check(it != slot.end(), "ir::prepared_graph: %", v->name(),
                             " is used before it is defined (Graph::lint() tells where)");
        return it->second;
    };
    for (const Node* n : graph_->block()->nodes()) {
        graft::detail::check(n->kind().run != nullptr, "ir::interpret: no interpreter for ", n->kind().name);
        step s{n, {}, {}, {}, sizes_ && sizes_->patches_node(n)};
        for (const Value* v : n->inputs()) s.inputs.push_back(slot_of(v));
        for (const Value* v : n->outputs()) s.outputs.push_back(number(v));
        steps_.push_back(std::move(s));
    }
    for (const Value* v : graph_->outputs()) outputs_.push_back(slot_of(v));
    // Each slot's last reader (a step, or the graph's outputs: never released).
    std::vector<std::ptrdiff_t> last(num_slots_, -1);
    for (std::size_t k = 0; k < steps_.size(); ++k) {
        for (std::uint32_t i : steps_[k].inputs) last[i] = static_cast<std::ptrdiff_t>(k);
        for (std::uint32_t o : steps_[k].outputs)
            if (last[o] < 0) last[o] = static_cast<std::ptrdiff_t>(k);  // unread: released at once
    }
    for (std::uint32_t o : outputs_) last[o] = -2;
    for (std::size_t i = 0; i < num_slots_; ++i)
        if (last[i] >= 0) steps_[static_cast<std::size_t>(last[i])].release.push_back(static_cast<std::uint32_t>(i));
}

GRAFT_INLINE std::vector<ivalue> prepared_graph::run(std::span<const ivalue> inputs) const {
    graft::detail::check(inputs.size() == graph_->inputs().size(), "ir::interpret: the graph takes ",
                         graph_->inputs().size(), " inputs, got ", inputs.size());
    if (!flat_) return interpret(*graph_, std::vector<ivalue>(inputs.begin(), inputs.end()), sizes_.get());
    std::vector<ivalue> slots(num_slots_);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        detail::check_input_type(graph_->inputs()[i], inputs[i]);
        slots[i] = inputs[i];
    }
    const std::vector<std::int64_t> values = sizes_ ? sizes_->bind(inputs) : std::vector<std::int64_t>{};
    std::vector<ivalue> in;
    for (const step& s : steps_) {
        in.clear();
        for (std::uint32_t i : s.inputs) in.push_back(slots[i]);
        std::vector<ivalue> out = s.patched ? s.node->kind().run(sizes_->attributes(s.node, values), in)
                                            : s.node->kind().run(s.node->attributes(), in);
        graft::detail::check(out.size() == s.outputs.size(), "ir::interpret: ", s.node->kind().name, " gave ",
                             out.size(), " values for ", s.outputs.size(), " outputs");
        for (std::size_t k = 0; k < out.size(); ++k) slots[s.outputs[k]] = std::move(out[k]);
        for (std::uint32_t r : s.release) slots[r] = ivalue{};  // an empty Tensor: the buffer goes back now
    }
    in.clear();
    std::vector<ivalue> r;
    r.reserve(outputs_.size());
    for (std::uint32_t o : outputs_) r.push_back(slots[o]);
    return r;
}

GRAFT_INLINE std::vector<Tensor> prepared_graph::run_tensors(const std::vector<Tensor>& inputs) const {
    const std::vector<ivalue> in(inputs.begin(), inputs.end());
    std::vector<Tensor> r;
    for (auto& v : run(in)) {
        graft::detail::check(std::holds_alternative<Tensor>(v), "ir::interpret: an output is not a tensor");
        r.push_back(std::get<Tensor>(std::move(v)));
    }
    return r;
}

}  // namespace graft::ir
