#pragma once
// Definitions for graft/ir/graph.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/ir/graph.hpp"

#include "graft/core/detail/op_observer.hpp"
#include "graft/core/factories.hpp"

#include <algorithm>

namespace graft::ir {

GRAFT_INLINE void Value::replace_all_uses_with(Value* other) {
    graft::detail::check(other != nullptr && &other->owning_graph() == graph_,
                         "Value::replace_all_uses_with: the replacement must be a value of the same graph");
    if (other == this) return;
    const std::vector<Use> uses = uses_;
    for (const Use& u : uses) {
        if (u.user) u.user->replace_input(u.offset, other);
        else u.block->replace_output(u.offset, other);
    }
}

GRAFT_INLINE Value* Node::add_input(Value* v) {
    graft::detail::check(v != nullptr && &v->owning_graph() == graph_, kind_->name,
                         ": an input must be a value of the same graph");
    v->uses_.push_back({this, inputs_.size(), nullptr});
    inputs_.push_back(v);
    return v;
}

GRAFT_INLINE void Node::replace_input(std::size_t i, Value* v) {
    graft::detail::check(i < inputs_.size(), kind_->name, ": no input ", i);
    graft::detail::check(v != nullptr && &v->owning_graph() == graph_, kind_->name,
                         ": an input must be a value of the same graph");
    Value* old = inputs_[i];
    auto& ou = old->uses_;
    ou.erase(std::find(ou.begin(), ou.end(), Use{this, i, nullptr}));
    inputs_[i] = v;
    v->uses_.push_back({this, i, nullptr});
}

GRAFT_INLINE void Node::remove_all_inputs() {
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
        auto& ou = inputs_[i]->uses_;
        ou.erase(std::find(ou.begin(), ou.end(), Use{this, i, nullptr}));
    }
    inputs_.clear();
}

GRAFT_INLINE Value* Node::add_output(Type t) {
    Value* v = graph_->new_value(std::move(t));
    v->node_ = this;
    v->offset_ = outputs_.size();
    outputs_.push_back(v);
    return v;
}

GRAFT_INLINE Block* Node::add_block() {
    Block* b = graph_->new_block(this);
    blocks_.push_back(b);
    return b;
}

GRAFT_INLINE bool Node::is_before(const Node* other) const {
    graft::detail::check(other && other->block_ == block_, "Node::is_before: nodes are in different blocks");
    return order_ < other->order_;
}

GRAFT_INLINE void Node::move_before(Node* other) {
    graft::detail::check(other && &other->owning_graph() == graph_, "Node::move_before: not a node of this graph");
    block_->nodes_.erase(pos_);
    block_ = other->block_;
    pos_ = block_->nodes_.insert(other->pos_, this);
    block_->renumber();
}

GRAFT_INLINE void Node::destroy() {
    for (Value* v : outputs_)
        graft::detail::check(!v->has_uses(), "Node::destroy: output %", v->name(), " of ", kind_->name,
                             " still has uses");
    // Nested blocks first: their nodes may use each other.
    for (Block* b : blocks_) {
        while (!b->outputs_.empty()) b->remove_output(b->outputs_.size() - 1);
        while (!b->nodes_.empty()) b->nodes_.back()->destroy();
    }
    remove_all_inputs();
    for (Value* v : outputs_) graph_->free_value(v);
    outputs_.clear();
    if (block_) block_->nodes_.erase(pos_);
    graph_->nodes_.erase(this);
}

GRAFT_INLINE Node* Node::set_attr(const std::string& name, attribute value) {
    attrs_[name] = std::move(value);
    return this;
}

GRAFT_INLINE const attribute& Node::attr(const std::string& name) const {
    auto it = attrs_.find(name);
    graft::detail::check(it != attrs_.end(), kind_->name, ": missing attribute '", name, "'");
    return it->second;
}

GRAFT_INLINE std::int64_t Node::i(const std::string& name) const { return attr_as<std::int64_t>(name); }

GRAFT_INLINE const std::vector<std::int64_t>& Node::is(const std::string& name) const {
    return attr_as<std::vector<std::int64_t>>(name);
}

GRAFT_INLINE Value* Block::add_input(Type t, std::string name) {
    Value* v = graph_->new_value(std::move(t));
    v->param_of_ = this;
    v->offset_ = inputs_.size();
    inputs_.push_back(v);
    if (!name.empty()) graph_->set_name(v, std::move(name));
    return v;
}

GRAFT_INLINE void Block::register_output(Value* v) {
    graft::detail::check(v != nullptr && &v->owning_graph() == graph_,
                         "Block::register_output: not a value of this graph");
    v->uses_.push_back({nullptr, outputs_.size(), this});
    outputs_.push_back(v);
}

GRAFT_INLINE void Block::replace_output(std::size_t i, Value* v) {
    graft::detail::check(i < outputs_.size(), "Block::replace_output: no output ", i);
    auto& ou = outputs_[i]->uses_;
    ou.erase(std::find(ou.begin(), ou.end(), Use{nullptr, i, this}));
    outputs_[i] = v;
    v->uses_.push_back({nullptr, i, this});
}

GRAFT_INLINE void Block::remove_output(std::size_t i) {
    graft::detail::check(i < outputs_.size(), "Block::remove_output: no output ", i);
    for (std::size_t k = i; k < outputs_.size(); ++k) {
        auto& ou = outputs_[k]->uses_;
        ou.erase(std::find(ou.begin(), ou.end(), Use{nullptr, k, this}));
    }
    std::vector<Value*> rest(outputs_.begin() + static_cast<std::ptrdiff_t>(i) + 1, outputs_.end());
    outputs_.resize(i);
    for (Value* v : rest) register_output(v);
}

GRAFT_INLINE Node* Block::append(const kind_info& kind) {
    auto n = std::make_unique<Node>();
    Node* raw = n.get();
    raw->graph_ = graph_;
    raw->block_ = this;
    raw->kind_ = &kind;
    graph_->nodes_.emplace(raw, std::move(n));
    raw->pos_ = nodes_.insert(nodes_.end(), raw);
    raw->order_ = nodes_.size() == 1 ? 0 : (*std::prev(raw->pos_, 1))->order_ + 1;
    return raw;
}

GRAFT_INLINE Node* Block::insert_before(Node* pos, const kind_info& kind) {
    graft::detail::check(pos && pos->block_ == this, "Block::insert_before: the position is not in this block");
    Node* n = append(kind);
    n->move_before(pos);
    return n;
}

GRAFT_INLINE void Block::renumber() {
    std::uint64_t i = 0;
    for (Node* n : nodes_) n->order_ = i++;
}

GRAFT_INLINE Graph::Graph() : top_(new_block(nullptr)) {}

GRAFT_INLINE Block* Graph::new_block(Node* owner) {
    blocks_.push_back(std::make_unique<Block>());
    Block* b = blocks_.back().get();
    b->graph_ = this;
    b->owner_ = owner;
    return b;
}

GRAFT_INLINE Value* Graph::new_value(Type t) {
    auto v = std::make_unique<Value>();
    v->graph_ = this;
    v->type_ = std::move(t);
    Value* raw = v.get();
    values_.emplace(raw, std::move(v));
    // The next free number (a name given with set_name may have taken it), named once.
    std::string id = std::to_string(next_id_++);
    while (names_.count(id)) id = std::to_string(next_id_++);
    names_.insert(id);
    raw->name_ = std::move(id);
    return raw;
}

GRAFT_INLINE void Graph::free_value(Value* v) {
    names_.erase(v->name_);
    values_.erase(v);
}

GRAFT_INLINE void Graph::set_name(Value* v, std::string name) {
    graft::detail::check(!name.empty(), "Graph::set_name: empty name");
    if (v->name_ == name) return;
    std::string unique = name;
    for (int k = 1; names_.count(unique); ++k) {
        unique = name;
        unique += '.';
        unique += std::to_string(k);
    }
    if (!v->name_.empty()) names_.erase(v->name_);
    names_.insert(unique);
    v->name_ = std::move(unique);
}

namespace detail {

GRAFT_INLINE bool has_use(const Value* v, const Use& u) {
    return std::find(v->uses().begin(), v->uses().end(), u) != v->uses().end();
}

GRAFT_INLINE void lint_block(const Block& b, std::vector<const Value*>& visible, const Graph& g) {
    using graft::detail::check;
    using graft::detail::concat;
    using graft::detail::fail;
    const std::size_t scope = visible.size();
    const auto is_visible = [&](const Value* v) {
        return std::find(visible.begin(), visible.end(), v) != visible.end();
    };
    for (const Value* v : b.inputs()) {
        check(v->param_of() == &b && v->node() == nullptr, "Graph::lint: block input %", v->name(),
              " does not belong to its block");
        visible.push_back(v);
    }
    const Node* prev = nullptr;
    for (const Node* n : b.nodes()) {
        const kind_info& k = n->kind();
        check(n->owning_block() == &b && &n->owning_graph() == &g, "Graph::lint: ", k.name,
              " node is listed in a block it does not belong to");
        check(prev == nullptr || prev->is_before(n), "Graph::lint: node order of the block is inconsistent at ", k.name);
        prev = n;
        check(k.num_inputs < 0 || n->inputs().size() == static_cast<std::size_t>(k.num_inputs), "Graph::lint: ", k.name,
              " takes ", k.num_inputs, " inputs, has ", n->inputs().size());
        check(k.num_outputs < 0 || n->outputs().size() == static_cast<std::size_t>(k.num_outputs), "Graph::lint: ",
              k.name, " has ", k.num_outputs, " outputs, has ", n->outputs().size());
        check(n->blocks().size() == static_cast<std::size_t>(k.num_blocks), "Graph::lint: ", k.name, " has ",
              k.num_blocks, " blocks, has ", n->blocks().size());
        for (std::size_t i = 0; i < n->inputs().size(); ++i) {
            const Value* in = n->inputs()[i];
            check(is_visible(in), "Graph::lint: %", in->name(), " is used by ", k.name,
                  " before it is defined (or outside its scope)");
            check(has_use(in, Use{const_cast<Node*>(n), i, nullptr}), "Graph::lint: %", in->name(),
                  " does not record its use by ", k.name);
        }
        // Types: elementwise and view ops take tensors where the table says so.
        if (k.elementwise || k.is_view) {
            bool any_tensor = false;
            for (const Value* in : n->inputs()) any_tensor = any_tensor || in->type().is_tensor();
            check(any_tensor, "Graph::lint: ", k.name, " needs at least one tensor input");
        }
        if (k.elementwise && n->outputs().size() == 1 && n->output()->type().is_tensor() &&
            n->output()->type().tensor.rank()) {
            // Broadcasting: the result has the largest rank of the inputs (when all are known).
            std::size_t rank = 0;
            bool known = true;
            for (const Value* in : n->inputs())
                if (in->type().is_tensor()) {
                    const auto r = in->type().tensor.rank();
                    known = known && r.has_value();
                    if (r) rank = std::max(rank, *r);
                }
            // Messages are formatted only on failure (lint runs at every executor construction).
            if (known && *n->output()->type().tensor.rank() != rank)
                fail(concat("Graph::lint: ", k.name, " of inputs of rank ", rank, " cannot produce %",
                            n->output()->name(), " of type ", to_string(n->output()->type())));
        }
        if (k.elementwise && k.run && n->outputs().size() == 1 && n->output()->type().is_tensor() &&
            n->output()->type().tensor.scalar_type) {
            // The dtype the op computes for its inputs' declared types: run it on one-element
            // tensors of the inputs' dtypes and ranks (ranks matter: 0-dim tensors promote less).
            bool known = true;
            for (const Value* in : n->inputs()) {
                const Type& t = in->type();
                if (t.is_tensor() && (!t.tensor.scalar_type || !t.tensor.rank())) known = false;
            }
            const auto make_probe = [&] {
                std::vector<ivalue> probe;
                for (const Value* in : n->inputs()) {
                    const Type& t = in->type();
                    if (t.is_tensor()) probe.emplace_back(ones(int_list(*t.tensor.rank(), 1), *t.tensor.scalar_type));
                    else if (t.kind == type_kind::float_) probe.emplace_back(1.0);
                    else if (t.kind == type_kind::int_) probe.emplace_back(std::int64_t{1});
                    else probe.emplace_back(true);
                }
                return probe;
            };
            std::optional<dtype> computed;
            if (known) {
                // Remembered per thread for ops without attributes (what they compute depends on
                // the op and the inputs' kinds, dtypes and ranks only): lint runs at every
                // capture and executor construction, and a probe allocates and runs the op.
                thread_local std::map<std::vector<std::int64_t>, std::optional<dtype>> memo;
                std::vector<std::int64_t> key;
                const bool memoize = n->attributes().empty();
                if (memoize) {
                    key.push_back(static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(&k)));
                    for (const Value* in : n->inputs()) {
                        const Type& t = in->type();
                        key.push_back(static_cast<std::int64_t>(t.kind));
                        if (t.is_tensor()) {
                            key.push_back(static_cast<std::int64_t>(*t.tensor.scalar_type));
                            key.push_back(static_cast<std::int64_t>(*t.tensor.rank()));
                        }
                    }
                }
                if (const auto it = memoize ? memo.find(key) : memo.end(); it != memo.end()) {
                    computed = it->second;
                } else {
                    try {
                        const graft::detail::observer_paused not_traced;  // lint may run while capturing
                        const auto r = k.run(n->attributes(), make_probe());
                        if (r.size() == 1)
                            if (const auto* t = std::get_if<Tensor>(&r[0])) computed = t->type();
                    } catch (const graft::error&) {
                        // The op refuses these types: the interpreter will say why.
                    }
                    if (memoize) {
                        if (memo.size() >= 4096) memo.clear();  // bounded (fuzzed graphs)
                        memo.emplace(std::move(key), computed);
                    }
                }
            }
            if (computed && *computed != *n->output()->type().tensor.scalar_type)
                fail(concat("Graph::lint: ", k.name, " of the declared input types computes ", name(*computed), ", but %",
                            n->output()->name(), " is declared ", to_string(n->output()->type())));
        }
        if (n->is<kinds::constant>() && n->outputs().size() == 1 && n->attributes().count("value")) {
            const attribute& a = n->attributes().at("value");
            const type_kind want = std::holds_alternative<Tensor>(a)          ? type_kind::tensor
                                   : std::holds_alternative<double>(a)        ? type_kind::float_
                                   : std::holds_alternative<std::int64_t>(a)  ? type_kind::int_
                                   : std::holds_alternative<bool>(a)          ? type_kind::bool_
                                                                              : type_kind::tensor;
            const bool is_value = std::holds_alternative<Tensor>(a) || std::holds_alternative<double>(a) ||
                                  std::holds_alternative<std::int64_t>(a) || std::holds_alternative<bool>(a);
            check(is_value, "Graph::lint: prim::Constant %", n->output()->name(),
                  ": 'value' must be a tensor or a number (strings and lists are attributes, not values)");
            if (n->output()->type().kind != want)
                fail(concat("Graph::lint: prim::Constant %", n->output()->name(), " is declared ",
                            to_string(n->output()->type()), " but its value is a ",
                            want == type_kind::tensor   ? "tensor"
                            : want == type_kind::float_ ? "float"
                            : want == type_kind::int_   ? "int"
                                                        : "bool"));
            if (const auto* t = std::get_if<Tensor>(&a); t && t->defined())
                if (!((!n->output()->type().tensor.scalar_type || *n->output()->type().tensor.scalar_type == t->type()) &&
                      (!n->output()->type().tensor.rank() || *n->output()->type().tensor.rank() == t->sizes().size())))
                    fail(concat("Graph::lint: prim::Constant %", n->output()->name(), " is declared ",
                                to_string(n->output()->type()), " but its value is ", t->type(), " ", t->sizes()));
        }
        for (const Value* out : n->outputs()) {
            if (k.elementwise || k.is_view)
                if (!out->type().is_tensor())
                    fail(concat("Graph::lint: ", k.name, " produces a tensor, but %", out->name(), " has type ",
                                to_string(out->type())));
        }
        if (n->is<kinds::if_>()) {
            const Type& c = n->input(0)->type();
            // A number, or a one-element tensor (graft::cond's predicate; checked when run).
            if (c.is_tensor() && c.tensor.scalar_type && *c.tensor.scalar_type != dtype::bool_)
                fail(concat("Graph::lint: prim::If needs a number or a bool tensor condition, got ", to_string(c)));
            for (const Block* inner : n->blocks()) {
                check(inner->inputs().empty(), "Graph::lint: prim::If blocks take no inputs");
                check(inner->outputs().size() == n->outputs().size(), "Graph::lint: prim::If has ",
                      n->outputs().size(), " outputs but a block returns ", inner->outputs().size());
                for (std::size_t i = 0; i < inner->outputs().size(); ++i)
                    if (inner->outputs()[i]->type().kind != n->outputs()[i]->type().kind)
                        fail(concat("Graph::lint: prim::If output ", i, " has type ", to_string(n->outputs()[i]->type()),
                                    " but a block returns ", to_string(inner->outputs()[i]->type())));
            }
        }
        if (n->is<kinds::loop>()) {
            const auto condition_ok = [](const Type& c) {
                return !c.is_tensor() || !c.tensor.scalar_type || *c.tensor.scalar_type == dtype::bool_;
            };
            check(!n->inputs().empty() && condition_ok(n->input(0)->type()),
                  "Graph::lint: prim::Loop needs a number or a bool tensor condition as its first input");
            const std::size_t carried = n->inputs().size() - 1;
            const Block* body = n->blocks()[0];
            check(n->outputs().size() == carried, "Graph::lint: prim::Loop carries ", carried, " values but has ",
                  n->outputs().size(), " outputs");
            check(body->inputs().size() == carried, "Graph::lint: prim::Loop carries ", carried,
                  " values but its block takes ", body->inputs().size());
            check(body->outputs().size() == carried + 1, "Graph::lint: prim::Loop's block must return the next condition and ",
                  carried, " carried values, returns ", body->outputs().size());
            check(condition_ok(body->outputs()[0]->type()),
                  "Graph::lint: prim::Loop's block must return a number or a bool tensor condition first");
            for (std::size_t i = 0; i < carried; ++i)
                check(body->outputs()[i + 1]->type().kind == n->outputs()[i]->type().kind &&
                          n->input(i + 1)->type().kind == n->outputs()[i]->type().kind,
                      "Graph::lint: prim::Loop carried value ", i, " changes category between iterations");
        }
        if (n->is<kinds::call>()) {
            const Block* body = n->blocks()[0];
            check(body->inputs().size() == n->inputs().size(), "Graph::lint: prim::Call passes ", n->inputs().size(),
                  " arguments to a callee that takes ", body->inputs().size());
            check(body->outputs().size() == n->outputs().size(), "Graph::lint: prim::Call has ", n->outputs().size(),
                  " outputs but its callee returns ", body->outputs().size());
        }
        for (const Block* inner : n->blocks()) {
            check(inner->owning_node() == n, "Graph::lint: a block of ", k.name, " does not point to its node");
            lint_block(*inner, visible, g);
        }
        for (std::size_t i = 0; i < n->outputs().size(); ++i) {
            const Value* out = n->outputs()[i];
            check(out->node() == n && out->offset() == i, "Graph::lint: output %", out->name(), " of ", k.name,
                  " does not point back to its node");
            for (const Use& u : out->uses()) {
                if (u.user)
                    check(u.offset < u.user->inputs().size() && u.user->inputs()[u.offset] == out,
                          "Graph::lint: %", out->name(), " records a use that does not exist");
                else
                    check(u.block && u.offset < u.block->outputs().size() && u.block->outputs()[u.offset] == out,
                          "Graph::lint: %", out->name(), " records a block output that does not exist");
            }
            visible.push_back(out);
        }
    }
    for (std::size_t i = 0; i < b.outputs().size(); ++i) {
        const Value* v = b.outputs()[i];
        check(is_visible(v), "Graph::lint: block output %", v->name(), " is not defined in scope");
        check(has_use(v, Use{nullptr, i, const_cast<Block*>(&b)}), "Graph::lint: block output %", v->name(),
              " does not record its use");
    }
    visible.resize(scope);
}

/// The copy of v (copy_block): defined earlier in the copy, or the graph is invalid.
GRAFT_INLINE Value* copied_value(const std::map<const Value*, Value*>& map, const Value* v) {
    const auto it = map.find(v);
    if (it == map.end())
        graft::detail::fail(graft::detail::concat("Graph::copy: %", v->name(),
                                                  " is used before it is defined (Graph::lint() tells where)"));
    return it->second;
}

GRAFT_INLINE void copy_block(const Block& from, Block& to, std::map<const Value*, Value*>& map, Graph& g) {
    for (const Value* v : from.inputs()) {
        Value* nv = to.add_input(v->type());
        g.set_name(nv, v->name());
        map[v] = nv;
    }
    for (const Node* n : from.nodes()) {
        Node* c = to.append(n->kind());
        for (const auto& [name, value] : n->attributes()) c->set_attr(name, value);
        for (const Value* in : n->inputs()) c->add_input(copied_value(map, in));
        for (const Value* out : n->outputs()) {
            Value* nv = c->add_output(out->type());
            g.set_name(nv, out->name());
            map[out] = nv;
        }
        for (const Block* inner : n->blocks()) copy_block(*inner, *c->add_block(), map, g);
    }
    for (const Value* v : from.outputs()) to.register_output(copied_value(map, v));
}

}  // namespace detail

GRAFT_INLINE void Graph::lint() const {
    std::vector<const Value*> visible;
    detail::lint_block(*top_, visible, *this);
    for (const auto& [raw, owned] : values_)
        graft::detail::check((raw->node() && nodes_.count(raw->node())) || raw->param_of(), "Graph::lint: value %",
                             raw->name(), " is dangling (its node was removed)");
}

GRAFT_INLINE std::unique_ptr<Graph> Graph::copy() const {
    auto g = std::make_unique<Graph>();
    // Names first claimed by the copy's automatic names are reassigned as values are copied.
    std::map<const Value*, Value*> map;
    detail::copy_block(*top_, *g->top_, map, *g);
    return g;
}

}  // namespace graft::ir
