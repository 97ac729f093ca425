#pragma once
// The runtime graph IR: a Graph owns Nodes and Values; a Block is an ordered
// list of nodes with its own inputs and outputs (the graph's top block, or the
// branches of an If). Every Value is produced by exactly one node (block and
// graph inputs by the block's parameter list) and knows its uses, so passes
// can rewrite the graph in place.
#include <algorithm>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "graft/core/error.hpp"
#include "graft/ir/kinds.hpp"
#include "graft/ir/type.hpp"

namespace graft::ir {

class Graph;
class Block;
class Node;
class Value;

/// One use of a value: input number `offset` of node `user`, or output `offset`
/// of a block (then `user` is null and `block` is set).
struct Use {
    Node* user = nullptr;
    std::size_t offset = 0;
    Block* block = nullptr;
    friend bool operator==(const Use&, const Use&) = default;
};

/// An SSA value: one output of a node, or an input of a block.
class Value {
public:
    [[nodiscard]] Node* node() const noexcept { return node_; }
    /// The block whose input this is, or null for a node output.
    [[nodiscard]] Block* param_of() const noexcept { return param_of_; }
    [[nodiscard]] std::size_t offset() const noexcept { return offset_; }
    [[nodiscard]] const Type& type() const noexcept { return type_; }
    Value* set_type(Type t) {
        type_ = std::move(t);
        return this;
    }
    /// The name in the text form (without `%`), unique within the graph.
    [[nodiscard]] const std::string& name() const noexcept { return name_; }
    [[nodiscard]] const std::vector<Use>& uses() const noexcept { return uses_; }
    [[nodiscard]] bool has_uses() const noexcept { return !uses_.empty(); }
    [[nodiscard]] Graph& owning_graph() const noexcept { return *graph_; }
    /// Makes every user of this value use `other` instead.
    void replace_all_uses_with(Value* other);

private:
    friend class Graph;
    friend class Node;
    friend class Block;
    Graph* graph_ = nullptr;
    Node* node_ = nullptr;
    Block* param_of_ = nullptr;
    std::size_t offset_ = 0;
    Type type_;
    std::string name_;
    std::vector<Use> uses_;
};

/// An operation: a kind from the kind registry, input and output values,
/// attributes, and (for If) nested blocks.
class Node {
public:
    [[nodiscard]] const kind_info& kind() const noexcept { return *kind_; }
    template <class K>
    [[nodiscard]] bool is() const noexcept { return kind_ == &kind_v<K>; }
    [[nodiscard]] const std::vector<Value*>& inputs() const noexcept { return inputs_; }
    [[nodiscard]] const std::vector<Value*>& outputs() const noexcept { return outputs_; }
    [[nodiscard]] Value* input(std::size_t i) const { return inputs_.at(i); }
    [[nodiscard]] Value* output(std::size_t i = 0) const { return outputs_.at(i); }
    [[nodiscard]] const std::vector<Block*>& blocks() const noexcept { return blocks_; }
    [[nodiscard]] Block* owning_block() const noexcept { return block_; }
    [[nodiscard]] Graph& owning_graph() const noexcept { return *graph_; }

    Value* add_input(Value* v);
    void replace_input(std::size_t i, Value* v);
    void remove_all_inputs();
    Value* add_output(Type t = {});
    Block* add_block();

    // Attributes, kept sorted by name (so the text form is canonical).
    [[nodiscard]] const std::map<std::string, attribute>& attributes() const noexcept { return attrs_; }
    [[nodiscard]] bool has_attr(const std::string& name) const { return attrs_.count(name) != 0; }
    Node* set_attr(const std::string& name, attribute value) {
        attrs_[name] = std::move(value);
        return this;
    }
    [[nodiscard]] const attribute& attr(const std::string& name) const {
        auto it = attrs_.find(name);
        graft::detail::check(it != attrs_.end(), kind_->name, ": missing attribute '", name, "'");
        return it->second;
    }
    template <class T>
    [[nodiscard]] const T& attr_as(const std::string& name) const {
        const attribute& a = attr(name);
        const T* p = std::get_if<T>(&a);
        graft::detail::check(p != nullptr, kind_->name, ": attribute '", name, "' has the wrong type");
        return *p;
    }
    [[nodiscard]] std::int64_t i(const std::string& name) const { return attr_as<std::int64_t>(name); }
    [[nodiscard]] const std::vector<std::int64_t>& is(const std::string& name) const {
        return attr_as<std::vector<std::int64_t>>(name);
    }

    /// Is this node before `other` in the same block?
    [[nodiscard]] bool is_before(const Node* other) const;
    /// Moves this node right before `other` (same graph).
    void move_before(Node* other);
    /// Removes this node from its block and frees it; its outputs must be unused.
    void destroy();

private:
    friend class Graph;
    friend class Block;
    Graph* graph_ = nullptr;
    Block* block_ = nullptr;
    const kind_info* kind_ = nullptr;
    std::vector<Value*> inputs_;
    std::vector<Value*> outputs_;
    std::vector<Block*> blocks_;
    std::map<std::string, attribute> attrs_;
    std::list<Node*>::iterator pos_{};
    std::uint64_t order_ = 0;  // position within the block, for is_before
};

/// An ordered list of nodes with inputs (parameters) and outputs.
class Block {
public:
    [[nodiscard]] const std::vector<Value*>& inputs() const noexcept { return inputs_; }
    [[nodiscard]] const std::vector<Value*>& outputs() const noexcept { return outputs_; }
    [[nodiscard]] const std::list<Node*>& nodes() const noexcept { return nodes_; }
    [[nodiscard]] Node* owning_node() const noexcept { return owner_; }
    [[nodiscard]] Graph& owning_graph() const noexcept { return *graph_; }

    Value* add_input(Type t = {}, std::string name = {});
    void register_output(Value* v);
    void replace_output(std::size_t i, Value* v);
    void remove_output(std::size_t i);
    /// Creates a node of kind K (or `kind`) at the end of the block.
    Node* append(const kind_info& kind);
    template <class K>
    Node* append() { return append(kind_v<K>); }
    /// Creates a node right before `pos` (a node of this block).
    Node* insert_before(Node* pos, const kind_info& kind);

private:
    friend class Graph;
    friend class Node;
    void renumber();
    Graph* graph_ = nullptr;
    Node* owner_ = nullptr;
    std::vector<Value*> inputs_;
    std::vector<Value*> outputs_;
    std::list<Node*> nodes_;
};

/// A graph: the top block plus ownership of every node, value and block.
class Graph {
public:
    Graph() : top_(new_block(nullptr)) {}
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;
    Graph(Graph&&) = delete;
    Graph& operator=(Graph&&) = delete;

    [[nodiscard]] Block* block() const noexcept { return top_; }
    [[nodiscard]] const std::vector<Value*>& inputs() const noexcept { return top_->inputs(); }
    [[nodiscard]] const std::vector<Value*>& outputs() const noexcept { return top_->outputs(); }
    Value* add_input(Type t = {}, std::string name = {}) { return top_->add_input(std::move(t), std::move(name)); }
    void register_output(Value* v) { top_->register_output(v); }
    template <class K>
    Node* append() { return top_->append<K>(); }
    Node* append(const kind_info& kind) { return top_->append(kind); }
    /// Number of live nodes in every block.
    [[nodiscard]] std::size_t num_nodes() const noexcept { return nodes_.size(); }

    /// Gives `v` the name `name` (made unique with a suffix if taken).
    void set_name(Value* v, std::string name);

    /// Checks the graph's invariants; throws graft::error describing the first violation.
    void lint() const;

    /// A deep copy of this graph (values keep their names).
    [[nodiscard]] std::unique_ptr<Graph> copy() const;

private:
    friend class Node;
    friend class Block;
    friend class Value;
    Block* new_block(Node* owner) {
        blocks_.push_back(std::make_unique<Block>());
        Block* b = blocks_.back().get();
        b->graph_ = this;
        b->owner_ = owner;
        return b;
    }
    Value* new_value(Type t) {
        auto v = std::make_unique<Value>();
        v->graph_ = this;
        v->type_ = std::move(t);
        Value* raw = v.get();
        values_.emplace(raw, std::move(v));
        while (names_.count(std::to_string(next_id_))) ++next_id_;
        set_name(raw, std::to_string(next_id_++));
        return raw;
    }
    void free_value(Value* v) {
        names_.erase(v->name_);
        values_.erase(v);
    }
    std::vector<std::unique_ptr<Block>> blocks_;
    std::map<Node*, std::unique_ptr<Node>> nodes_;
    std::map<Value*, std::unique_ptr<Value>> values_;
    std::unordered_set<std::string> names_;
    std::uint64_t next_id_ = 0;
    Block* top_;
};

// ---------------------------------------------------------------- definitions

inline void Value::replace_all_uses_with(Value* other) {
    graft::detail::check(other != nullptr && &other->owning_graph() == graph_,
                         "Value::replace_all_uses_with: the replacement must be a value of the same graph");
    if (other == this) return;
    const std::vector<Use> uses = uses_;
    for (const Use& u : uses) {
        if (u.user) u.user->replace_input(u.offset, other);
        else u.block->replace_output(u.offset, other);
    }
}

inline Value* Node::add_input(Value* v) {
    graft::detail::check(v != nullptr && &v->owning_graph() == graph_, kind_->name,
                         ": an input must be a value of the same graph");
    v->uses_.push_back({this, inputs_.size(), nullptr});
    inputs_.push_back(v);
    return v;
}

inline void Node::replace_input(std::size_t i, Value* v) {
    graft::detail::check(i < inputs_.size(), kind_->name, ": no input ", i);
    graft::detail::check(v != nullptr && &v->owning_graph() == graph_, kind_->name,
                         ": an input must be a value of the same graph");
    Value* old = inputs_[i];
    auto& ou = old->uses_;
    ou.erase(std::find(ou.begin(), ou.end(), Use{this, i, nullptr}));
    inputs_[i] = v;
    v->uses_.push_back({this, i, nullptr});
}

inline void Node::remove_all_inputs() {
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
        auto& ou = inputs_[i]->uses_;
        ou.erase(std::find(ou.begin(), ou.end(), Use{this, i, nullptr}));
    }
    inputs_.clear();
}

inline Value* Node::add_output(Type t) {
    Value* v = graph_->new_value(std::move(t));
    v->node_ = this;
    v->offset_ = outputs_.size();
    outputs_.push_back(v);
    return v;
}

inline Block* Node::add_block() {
    Block* b = graph_->new_block(this);
    blocks_.push_back(b);
    return b;
}

inline bool Node::is_before(const Node* other) const {
    graft::detail::check(other && other->block_ == block_, "Node::is_before: nodes are in different blocks");
    return order_ < other->order_;
}

inline void Node::move_before(Node* other) {
    graft::detail::check(other && &other->owning_graph() == graph_, "Node::move_before: not a node of this graph");
    block_->nodes_.erase(pos_);
    block_ = other->block_;
    pos_ = block_->nodes_.insert(other->pos_, this);
    block_->renumber();
}

inline void Node::destroy() {
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

inline Value* Block::add_input(Type t, std::string name) {
    Value* v = graph_->new_value(std::move(t));
    v->param_of_ = this;
    v->offset_ = inputs_.size();
    inputs_.push_back(v);
    if (!name.empty()) graph_->set_name(v, std::move(name));
    return v;
}

inline void Block::register_output(Value* v) {
    graft::detail::check(v != nullptr && &v->owning_graph() == graph_,
                         "Block::register_output: not a value of this graph");
    v->uses_.push_back({nullptr, outputs_.size(), this});
    outputs_.push_back(v);
}

inline void Block::replace_output(std::size_t i, Value* v) {
    graft::detail::check(i < outputs_.size(), "Block::replace_output: no output ", i);
    auto& ou = outputs_[i]->uses_;
    ou.erase(std::find(ou.begin(), ou.end(), Use{nullptr, i, this}));
    outputs_[i] = v;
    v->uses_.push_back({nullptr, i, this});
}

inline void Block::remove_output(std::size_t i) {
    graft::detail::check(i < outputs_.size(), "Block::remove_output: no output ", i);
    for (std::size_t k = i; k < outputs_.size(); ++k) {
        auto& ou = outputs_[k]->uses_;
        ou.erase(std::find(ou.begin(), ou.end(), Use{nullptr, k, this}));
    }
    std::vector<Value*> rest(outputs_.begin() + static_cast<std::ptrdiff_t>(i) + 1, outputs_.end());
    outputs_.resize(i);
    for (Value* v : rest) register_output(v);
}

inline Node* Block::append(const kind_info& kind) {
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

inline Node* Block::insert_before(Node* pos, const kind_info& kind) {
    graft::detail::check(pos && pos->block_ == this, "Block::insert_before: the position is not in this block");
    Node* n = append(kind);
    n->move_before(pos);
    return n;
}

inline void Block::renumber() {
    std::uint64_t i = 0;
    for (Node* n : nodes_) n->order_ = i++;
}

inline void Graph::set_name(Value* v, std::string name) {
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

inline bool has_use(const Value* v, const Use& u) {
    return std::find(v->uses().begin(), v->uses().end(), u) != v->uses().end();
}

inline void lint_block(const Block& b, std::vector<const Value*>& visible, const Graph& g) {
    using graft::detail::check;
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
        for (const Value* out : n->outputs()) {
            if (k.elementwise || k.is_view)
                check(out->type().is_tensor(), "Graph::lint: ", k.name, " produces a tensor, but %", out->name(),
                      " has type ", to_string(out->type()));
        }
        if (n->is<kinds::if_>()) {
            const Type& c = n->input(0)->type();
            check(!c.is_tensor(), "Graph::lint: prim::If needs a number condition (bool, int or float), got ",
                  to_string(c));
            for (const Block* inner : n->blocks()) {
                check(inner->inputs().empty(), "Graph::lint: prim::If blocks take no inputs");
                check(inner->outputs().size() == n->outputs().size(), "Graph::lint: prim::If has ",
                      n->outputs().size(), " outputs but a block returns ", inner->outputs().size());
                for (std::size_t i = 0; i < inner->outputs().size(); ++i)
                    check(inner->outputs()[i]->type().kind == n->outputs()[i]->type().kind, "Graph::lint: prim::If output ",
                          i, " has type ", to_string(n->outputs()[i]->type()), " but a block returns ",
                          to_string(inner->outputs()[i]->type()));
            }
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

inline void copy_block(const Block& from, Block& to, std::map<const Value*, Value*>& map, Graph& g) {
    for (const Value* v : from.inputs()) {
        Value* nv = to.add_input(v->type());
        g.set_name(nv, v->name());
        map[v] = nv;
    }
    for (const Node* n : from.nodes()) {
        Node* c = to.append(n->kind());
        for (const auto& [name, value] : n->attributes()) c->set_attr(name, value);
        for (const Value* in : n->inputs()) c->add_input(map.at(in));
        for (const Value* out : n->outputs()) {
            Value* nv = c->add_output(out->type());
            g.set_name(nv, out->name());
            map[out] = nv;
        }
        for (const Block* inner : n->blocks()) copy_block(*inner, *c->add_block(), map, g);
    }
    for (const Value* v : from.outputs()) to.register_output(map.at(v));
}

}  // namespace detail

inline void Graph::lint() const {
    std::vector<const Value*> visible;
    detail::lint_block(*top_, visible, *this);
    for (const auto& [raw, owned] : values_)
        graft::detail::check((raw->node() && nodes_.count(raw->node())) || raw->param_of(), "Graph::lint: value %",
                             raw->name(), " is dangling (its node was removed)");
}

inline std::unique_ptr<Graph> Graph::copy() const {
    auto g = std::make_unique<Graph>();
    // Names first claimed by the copy's automatic names are reassigned as values are copied.
    std::map<const Value*, Value*> map;
    detail::copy_block(*top_, *g->top_, map, *g);
    return g;
}

}  // namespace graft::ir
