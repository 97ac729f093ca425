#pragma once
// The runtime graph IR: a Graph owns Nodes and Values; a Block is an ordered
// list of nodes with its own inputs and outputs (the graph's top block, or the
// branches of an If). Every Value is produced by exactly one node (block and
// graph inputs by the block's parameter list) and knows its uses, so passes
// can rewrite the graph in place.
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
    [[nodiscard]] Value* input(std::size_t i) const {
        if (i >= inputs_.size()) [[unlikely]]
            graft::detail::fail(graft::detail::concat(kind_->name, ": input ", i, " of ", inputs_.size()));
        return inputs_[i];
    }
    [[nodiscard]] Value* output(std::size_t i = 0) const {
        if (i >= outputs_.size()) [[unlikely]]
            graft::detail::fail(graft::detail::concat(kind_->name, ": output ", i, " of ", outputs_.size()));
        return outputs_[i];
    }
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
    Node* set_attr(const std::string& name, attribute value);
    [[nodiscard]] const attribute& attr(const std::string& name) const;
    template <class T>
    [[nodiscard]] const T& attr_as(const std::string& name) const {
        const attribute& a = attr(name);
        const T* p = std::get_if<T>(&a);
        graft::detail::check(p != nullptr, kind_->name, ": attribute '", name, "' has the wrong type");
        return *p;
    }
    [[nodiscard]] std::int64_t i(const std::string& name) const;
    [[nodiscard]] const std::vector<std::int64_t>& is(const std::string& name) const;

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
    Graph();
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
    Block* new_block(Node* owner);
    Value* new_value(Type t);
    void free_value(Value* v);
    std::vector<std::unique_ptr<Block>> blocks_;
    std::map<Node*, std::unique_ptr<Node>> nodes_;
    std::map<Value*, std::unique_ptr<Value>> values_;
    std::unordered_set<std::string> names_;
    std::uint64_t next_id_ = 0;
    Block* top_;
};

namespace detail {

GRAFT_INLINE bool has_use(const Value* v, const Use& u);

GRAFT_INLINE void lint_block(const Block& b, std::vector<const Value*>& visible, const Graph& g);

GRAFT_INLINE void copy_block(const Block& from, Block& to, std::map<const Value*, Value*>& map, Graph& g);

/// Lints a graph that graft itself just built (a capture, a partition, a pass pipeline's
/// result) in debug builds only: a violation there is a bug in graft, which the test suite's
/// debug builds catch. Graphs from outside (parsed text, a user's Graph handed to an
/// executor or a pipeline) are always linted.
inline void lint_own_graph([[maybe_unused]] const Graph& g) {
#ifndef NDEBUG
    g.lint();
#endif
}

}  // namespace detail

}  // namespace graft::ir

#if GRAFT_HAS_GRAPH_CODE
#include "graft/ir/impl/graph.ipp"
#endif
