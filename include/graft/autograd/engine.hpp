#pragma once
// The reverse-mode engine: runs the backward graph from root gradients in
// dependency order (later-created nodes first), with PyTorch's hook order.
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "graft/autograd/grad_mode.hpp"
#include "graft/autograd/node.hpp"
#include "graft/autograd/saved_variable.hpp"
#include "graft/ops/elementwise.hpp"
#include "graft/ops/reduce.hpp"

namespace graft {
GRAFT_INLINE Tensor sum_to_size(const Tensor& g, const int_list& sizes);
}  // namespace graft

namespace graft::autograd {

/// Accumulates gradients into a leaf's .grad (torch's AccumulateGrad).
class AccumulateGrad final : public Node {
public:
    explicit AccumulateGrad(Tensor leaf);
    [[nodiscard]] const Tensor& variable() const noexcept { return leaf_; }

protected:
    tensor_list apply(tensor_list&& grads) override;

private:
    Tensor leaf_;
};

class function_node;

namespace detail {

/// A move-only callable stored inside the node (no separate allocation for
/// captures up to 192 bytes): the derivative of one recorded op. Either form works:
/// `tensor_list(function_node&, const tensor_list& grads)` returns the input gradients;
/// `void(function_node&, const tensor_list& grads, tensor_list& out)` appends them to
/// `out`, a vector the engine reuses across nodes (no allocation per node).
class backward_callable {
public:
    using signature = tensor_list(function_node&, const tensor_list&);
    backward_callable() = default;
    backward_callable(const backward_callable&) = delete;
    backward_callable& operator=(const backward_callable&) = delete;
    ~backward_callable() { reset(); }

    template <class F>
    backward_callable& operator=(F f) {
        reset();
        if constexpr (sizeof(F) <= sizeof(buffer_) && alignof(F) <= alignof(std::max_align_t)) {
            target_ = new (buffer_) F(std::move(f));
            destroy_ = [](void* p, bool) { static_cast<F*>(p)->~F(); };
        } else {
            target_ = new F(std::move(f));
            destroy_ = [](void* p, bool) { delete static_cast<F*>(p); };
        }
        if constexpr (std::is_invocable_v<F&, function_node&, const tensor_list&, tensor_list&>) {
            fill_ = [](void* p, function_node& n, const tensor_list& g, tensor_list& out) {
                (*static_cast<F*>(p))(n, g, out);
            };
        } else {
            call_ = [](void* p, function_node& n, const tensor_list& g) { return (*static_cast<F*>(p))(n, g); };
        }
        return *this;
    }
    tensor_list operator()(function_node& n, const tensor_list& g) const {
        if (call_) return call_(target_, n, g);
        tensor_list out;
        fill_(target_, n, g, out);
        return out;
    }
    /// True for the appending form (see fill).
    [[nodiscard]] bool fills() const noexcept { return fill_ != nullptr; }
    /// Appends the gradients to `out`; either form.
    void fill(function_node& n, const tensor_list& g, tensor_list& out) const {
        if (fill_) fill_(target_, n, g, out);
        else out = call_(target_, n, g);
    }
    explicit operator bool() const noexcept { return call_ != nullptr || fill_ != nullptr; }

private:
    void reset() {
        if (destroy_) destroy_(target_, true);
        destroy_ = nullptr;
        call_ = nullptr;
        fill_ = nullptr;
        target_ = nullptr;
    }
    alignas(std::max_align_t) unsigned char buffer_[192];
    void* target_ = nullptr;
    tensor_list (*call_)(void*, function_node&, const tensor_list&) = nullptr;
    void (*fill_)(void*, function_node&, const tensor_list&, tensor_list&) = nullptr;
    void (*destroy_)(void*, bool) = nullptr;
};

}  // namespace detail

/// A backward node whose derivative is a function written with graft's ops.
class function_node final : public Node {
public:
    explicit function_node(const char* name) : Node(name) {}

    /// Saves tensors for backward; `is_output` marks outputs of this node. An undefined
    /// tensor takes a position (saved(i) returns it undefined) but no storage unless a
    /// defined one follows: most nodes save nothing or only their leading operands.
    void save(const Tensor& t, bool is_output = false) {
        if (!t.defined()) {
            ++trailing_undefined_;
            return;
        }
        save_defined(t, is_output);
    }
    /// Room for n saved tensors up front (nodes that save many: no regrowth).
    void reserve_saved(std::size_t n) { saved_.reserve(n); }
    /// The i-th saved tensor, version-checked (throws after release without retain_graph).
    [[nodiscard]] Tensor saved(std::size_t i) {
        if (i >= saved_.size() && i < saved_.size() + trailing_undefined_) return {};  // saved as undefined
        return saved_stored(i);
    }
    /// True when the i-th forward input needs a gradient.
    [[nodiscard]] bool needs_input_grad(std::size_t i) const {
        if (i >= next_functions().size()) [[unlikely]]
            graft::detail::fail(graft::detail::concat(name(), ": needs_input_grad(", i, ") of ", next_functions().size(), " inputs"));
        return next_functions()[i].valid();
    }
    void release_variables() override;
    [[nodiscard]] std::vector<std::string> describe_saved() const override;
    [[nodiscard]] auto& saved_variables() noexcept { return saved_; }

    detail::backward_callable backward;

protected:
    tensor_list apply(tensor_list&& grads) override;

private:
    void save_defined(const Tensor& t, bool is_output);
    [[nodiscard]] Tensor saved_stored(std::size_t i);

    boost::container::small_vector<graft::autograd::detail::saved_variable, 2> saved_;
    std::uint32_t trailing_undefined_ = 0;  // saved positions after saved_ that hold undefined tensors
};

namespace detail {

[[nodiscard]] inline bool requires_grad(const Tensor& t) noexcept {
    const auto* m = meta(t);
    if (m && (m->requires_grad || m->grad_fn)) return true;
    const auto* v = tracked_view(t);  // a view requires grad when its base does (as PyTorch)
    return v != nullptr && requires_grad(v->base);
}

/// The leaf's accumulator, created on first use and held weakly by the leaf.
[[nodiscard]] GRAFT_INLINE std::shared_ptr<Node> grad_accumulator(const Tensor& leaf);

/// Where gradients for `t` flow: its grad_fn, its accumulator, or nowhere.
[[nodiscard]] GRAFT_INLINE Edge gradient_edge(const Tensor& t);

/// The tensor hooks that run on gradients flowing into `node`'s slot.
[[nodiscard]] GRAFT_INLINE hook_list<tensor_hook>* tensor_hooks_of(Node& node, std::size_t slot);

/// Adds `b` to `a` (undefined means zero).
[[nodiscard]] GRAFT_INLINE Tensor accumulate(const Tensor& a, const Tensor& b);

/// Casts and checks a gradient against the slot it flows into.
[[nodiscard]] GRAFT_INLINE Tensor validate_grad(const Node& producer, std::size_t index, Tensor grad,
                                                const input_metadata& expected);

/// Per-node state of one backward pass.
struct node_state {
    std::shared_ptr<Node> owner;
    tensor_list buffer;  // gradients accumulated for the node's forward outputs
    int dependencies = 0;
    bool has_gradient = false;  // some gradient (maybe undefined) was routed to it
    bool needed = false;        // with a filter: on a path to a capture target (must run)
    bool is_capture = false;    // a capture target of autograd::grad / backward(inputs=...)
    std::uint8_t visit = 0;     // compute_needed's walk: 0 new, 1 on the stack, 2 done
};

/// Per-pass node states in one open-addressing table keyed by node address:
/// no allocation per node (std::unordered_map allocates one per entry).
class node_table {
public:
    node_table();
    node_table(const node_table&) = delete;
    node_table& operator=(const node_table&) = delete;
    ~node_table();
    /// The state of `n`, created empty when absent; `fresh` tells which.
    node_state& get(Node* n, bool* fresh = nullptr);
    /// The state of a node already entered (see get).
    [[nodiscard]] node_state* find(const Node* n) { return values_.data() + index_of(n); }
    [[nodiscard]] const node_state* find(const Node* n) const { return values_.data() + index_of(n); }
    [[nodiscard]] bool contains(const Node* n) const { return keys_[index_of(n)] == n; }
    /// Visits the entered nodes in the order they were entered.
    template <class F>
    void for_each(F&& f) {
        for (const std::uint32_t i : used_) f(keys_[i], values_[i]);
    }

private:
    /// The slot holding `n`, or the empty slot where it would go.
    [[nodiscard]] std::size_t index_of(const Node* n) const noexcept;
    [[nodiscard]] std::size_t slot_of(const Node* n) const noexcept {
        auto h = reinterpret_cast<std::uintptr_t>(n);
        h ^= h >> 17;
        h *= 0x9E3779B97F4A7C15ull;
        return static_cast<std::size_t>(h >> 7) & mask_;
    }
    void rehash(std::size_t capacity);

    static constexpr std::size_t max_spare = 4096;
    struct arrays {
        std::vector<Node*> keys;
        std::vector<node_state> values;
        std::vector<std::uint32_t> used;
    };
    static arrays& spare_arrays() {
        thread_local arrays spare;
        return spare;
    }

    std::vector<Node*> keys_;
    std::vector<node_state> values_;
    std::vector<std::uint32_t> used_;  // the occupied slots, in the order entered (no scan of empty slots)
    std::size_t mask_ = 0;
    std::size_t count_ = 0;
};

struct graph_task {
    std::uint64_t id = 0;
    bool keep_graph = false;
    bool create_graph = false;
    bool accumulate_grad = true;
    node_table nodes;
    // Capture targets (autograd::grad / backward(inputs=...)): the node's gradient slot goes to
    // output `index`. Few entries: a list, with node_state::is_capture for lookups.
    struct capture_target {
        Node* node;
        std::uint32_t slot;
        std::size_t index;
    };
    std::vector<capture_target> captures;
    /// True when `n` is a capture target of this pass.
    [[nodiscard]] bool is_capture(const Node* n) const { return nodes.contains(n) && nodes.find(n)->is_capture; }
    bool filter = false;
    tensor_list captured;
    std::vector<tensor_list> spare_lists;  // emptied gradient vectors, reused as node buffers

    // The spare vectors outlive the pass: the next pass on this thread starts with them.
    graph_task() { spare_lists.swap(spare_pool()); }
    graph_task(const graph_task&) = delete;
    graph_task& operator=(const graph_task&) = delete;
    ~graph_task() {
        if (spare_pool().empty()) spare_lists.swap(spare_pool());  // a nested pass may have refilled it
    }

private:
    static std::vector<tensor_list>& spare_pool() {
        thread_local std::vector<tensor_list> pool;
        return pool;
    }
};

inline std::atomic<std::uint64_t>& next_task_id() {
    static std::atomic<std::uint64_t> id{1};
    return id;
}
/// The graph task running on this thread (null outside backward).
inline graph_task*& current_task() {
    thread_local graph_task* task = nullptr;
    return task;
}

/// Called for every node the engine runs, with its gradients (see autograd::set_node_logger).
using node_logger = std::function<void(const Node&, const tensor_list& grad_outputs, const tensor_list& grad_inputs)>;
inline std::shared_ptr<node_logger>& logger_slot() {
    static std::shared_ptr<node_logger> slot;
    return slot;
}
inline std::mutex& logger_mutex() {
    static std::mutex m;
    return m;
}
/// True while a logger is set: a backward pass takes logger_mutex only then.
inline std::atomic<bool>& logger_set() {
    static std::atomic<bool> set{false};
    return set;
}

GRAFT_INLINE void compute_dependencies(graph_task& task, std::span<const Edge> roots);

/// Marks the nodes on some path to a capture target (PyTorch's exec_info).
GRAFT_INLINE void compute_needed(graph_task& task, std::span<const Edge> roots, bool run_targets);

GRAFT_INLINE void add_to_buffer(graph_task& task, node_state& st, const Node& target, std::uint32_t slot,
                                Tensor grad);

/// Runs tensor hooks and retain_grad for one slot; returns the (possibly replaced) gradient.
GRAFT_INLINE Tensor run_tensor_hooks(Node& node, std::size_t slot, Tensor grad, bool create_graph);

/// Keeps the memory of a gradient vector for a later node's buffer (saves an allocation per node).
GRAFT_INLINE void recycle(graph_task& task, tensor_list&& list);

GRAFT_INLINE void execute(graph_task& task);

/// Shared implementation of Tensor::backward and autograd::grad.
GRAFT_INLINE tensor_list run_backward(const tensor_list& outputs, const tensor_list& grad_outputs, bool keep_graph,
                                      bool create_graph, const std::vector<Edge>& inputs, bool accumulate_grad,
                                      bool allow_unused);

}  // namespace detail

/// Logs every node the engine runs (name and gradient shapes) to `os`, until
/// called again with nullptr. Process-wide; thread-safe.
GRAFT_INLINE void set_node_logger(std::function<void(const Node&, const tensor_list&, const tensor_list&)> fn);

/// Inside a backward pass (e.g. from a hook): true when the engine will run `node`
/// in the current pass (torch's _will_engine_execute_node). Throws outside backward.
[[nodiscard]] GRAFT_INLINE bool will_engine_execute_node(const Node& node);

/// Identifies the backward pass running on this thread (0 outside backward).
[[nodiscard]] inline std::uint64_t current_graph_task_id() noexcept {
    const auto* task = detail::current_task();
    return task ? task->id : 0;
}

}  // namespace graft::autograd

#if GRAFT_HAS_CODE
#include "graft/autograd/impl/engine.ipp"
#endif
