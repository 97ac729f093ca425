#pragma once
// The reverse-mode engine: runs the backward graph from root gradients in
// dependency order (later-created nodes first), with PyTorch's hook order.
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
#include <string>
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
inline Tensor sum_to_size(const Tensor& g, const int_list& sizes);
}  // namespace graft

namespace graft::autograd {

/// Accumulates gradients into a leaf's .grad (torch's AccumulateGrad).
class AccumulateGrad final : public Node {
public:
    explicit AccumulateGrad(Tensor leaf) : Node("AccumulateGrad"), leaf_(std::move(leaf)) {
        is_accumulate_grad_ = true;
        add_output(leaf_);
    }
    [[nodiscard]] const Tensor& variable() const noexcept { return leaf_; }

protected:
    tensor_list apply(tensor_list&& grads) override;

private:
    Tensor leaf_;
};

class function_node;

namespace detail {

/// A move-only callable stored inside the node (no separate allocation for
/// captures up to 192 bytes): the derivative of one recorded op.
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
        call_ = [](void* p, function_node& n, const tensor_list& g) { return (*static_cast<F*>(p))(n, g); };
        return *this;
    }
    tensor_list operator()(function_node& n, const tensor_list& g) const { return call_(target_, n, g); }
    explicit operator bool() const noexcept { return call_ != nullptr; }

private:
    void reset() {
        if (destroy_) destroy_(target_, true);
        destroy_ = nullptr;
        call_ = nullptr;
        target_ = nullptr;
    }
    alignas(std::max_align_t) unsigned char buffer_[192];
    void* target_ = nullptr;
    tensor_list (*call_)(void*, function_node&, const tensor_list&) = nullptr;
    void (*destroy_)(void*, bool) = nullptr;
};

}  // namespace detail

/// A backward node whose derivative is a function written with graft's ops.
class function_node final : public Node {
public:
    explicit function_node(const char* name) : Node(name) {}

    /// Saves tensors for backward; `is_output` marks outputs of this node.
    void save(const Tensor& t, bool is_output = false) { saved_.emplace_back(t, is_output); }
    /// The i-th saved tensor, version-checked (throws after release without retain_graph).
    [[nodiscard]] Tensor saved(std::size_t i) { return saved_.at(i).unpack(shared_from_this()); }
    /// True when the i-th forward input needs a gradient.
    [[nodiscard]] bool needs_input_grad(std::size_t i) const { return next_functions().at(i).valid(); }
    void release_variables() override {
        for (auto& s : saved_) s.release();
    }
    [[nodiscard]] std::vector<std::string> describe_saved() const override {
        std::vector<std::string> out;
        for (const auto& s : saved_)
            if (s.defined()) out.push_back(graft::detail::concat(graft::name(s.type()), s.sizes()));
        return out;
    }
    [[nodiscard]] auto& saved_variables() noexcept { return saved_; }

    detail::backward_callable backward;

protected:
    tensor_list apply(tensor_list&& grads) override { return backward(*this, grads); }

private:
    boost::container::small_vector<graft::autograd::detail::saved_variable, 2> saved_;
};

namespace detail {

[[nodiscard]] inline bool requires_grad(const Tensor& t) noexcept {
    const auto* m = meta(t);
    if (m && (m->requires_grad || m->grad_fn)) return true;
    const auto* v = tracked_view(t);  // a view requires grad when its base does (as PyTorch)
    return v != nullptr && requires_grad(v->base);
}

/// The leaf's accumulator, created on first use and held weakly by the leaf.
[[nodiscard]] inline std::shared_ptr<Node> grad_accumulator(const Tensor& leaf) {
    auto& m = ensure_meta(leaf);
    std::lock_guard lock(m.mutex);
    if (auto acc = m.grad_accumulator.lock()) return acc;
    auto acc = std::make_shared<AccumulateGrad>(leaf);
    m.grad_accumulator = acc;
    return acc;
}

/// Where gradients for `t` flow: its grad_fn, its accumulator, or nowhere.
[[nodiscard]] inline Edge gradient_edge(const Tensor& t) {
    refresh_if_view(t);
    auto* m = meta(t);
    if (!m) return {};
    if (m->grad_fn) return {m->grad_fn, m->output_nr};
    if (m->requires_grad) return {grad_accumulator(t), 0};
    return {};
}

/// The tensor hooks that run on gradients flowing into `node`'s slot.
[[nodiscard]] inline hook_list<tensor_hook>* tensor_hooks_of(Node& node, std::size_t slot) {
    if (node.is_accumulate_grad()) {
        auto* m = meta(static_cast<AccumulateGrad&>(node).variable());
        return m ? &m->leaf_hooks : nullptr;
    }
    return node.has_hooks() ? &node.tensor_pre_hooks(slot) : nullptr;
}

/// Adds `b` to `a` (undefined means zero).
[[nodiscard]] inline Tensor accumulate(const Tensor& a, const Tensor& b);

/// Casts and checks a gradient against the slot it flows into.
[[nodiscard]] inline Tensor validate_grad(const Node& producer, std::size_t index, const Tensor& grad,
                                          const input_metadata& expected) {
    Tensor g = grad;
    if (g.sizes() != expected.sizes) {
        // A gradient of a broadcast shape is summed back, as PyTorch's validate_outputs does.
        bool expandable = true;
        try {
            expandable = broadcast_shapes(expected.sizes, g.sizes()) == g.sizes();
        } catch (const error&) {
            expandable = false;
        }
        graft::detail::check(expandable, "Function ", producer.name(), " returned an invalid gradient at index ",
                             index, " - got ", g.sizes(),
                             " but expected shape compatible with ", expected.sizes);
        g = sum_to_size(g, expected.sizes);
    }
    if (g.type() != expected.type) g = g.to(expected.type);
    return g;
}

/// Per-node state of one backward pass.
struct node_state {
    std::shared_ptr<Node> owner;
    tensor_list buffer;  // gradients accumulated for the node's forward outputs
    int dependencies = 0;
    bool has_gradient = false;  // some gradient (maybe undefined) was routed to it
};

/// Per-pass node states in one open-addressing table keyed by node address:
/// no allocation per node (std::unordered_map allocates one per entry).
class node_table {
public:
    node_table() {
        // Reuse the arrays of this thread's previous pass (one rehash-free table per thread;
        // a nested pass, e.g. backward inside a hook, gets fresh arrays).
        auto& spare = spare_arrays();
        if (!spare.keys.empty()) {
            keys_.swap(spare.keys);
            values_.swap(spare.values);
            mask_ = keys_.size() - 1;
        } else {
            rehash(64);
        }
    }
    node_table(const node_table&) = delete;
    node_table& operator=(const node_table&) = delete;
    ~node_table() {
        // Release the pass's references now (as destroying the arrays would), then keep
        // the emptied arrays for the next pass when they are not too large.
        for (std::size_t i = 0; i < keys_.size() && count_ > 0; ++i)
            if (keys_[i] != nullptr) {
                keys_[i] = nullptr;
                values_[i] = node_state{};
                --count_;
            }
        auto& spare = spare_arrays();
        if (keys_.size() <= max_spare && spare.keys.empty()) {
            spare.keys.swap(keys_);
            spare.values.swap(values_);
        }
    }
    /// The state of `n`, created empty when absent; `fresh` tells which.
    node_state& get(Node* n, bool* fresh = nullptr) {
        if ((count_ + 1) * 2 > keys_.size()) rehash(keys_.size() * 2);
        std::size_t i = slot_of(n);
        while (keys_[i] != nullptr && keys_[i] != n) i = (i + 1) & mask_;
        if (fresh) *fresh = keys_[i] == nullptr;
        if (keys_[i] == nullptr) {
            keys_[i] = n;
            ++count_;
        }
        return values_[i];
    }
    /// The state of a node already entered (see get).
    [[nodiscard]] node_state* find(const Node* n) { return values_.data() + index_of(n); }
    [[nodiscard]] bool contains(const Node* n) const { return keys_[index_of(n)] == n; }
    template <class F>
    void for_each(F&& f) {
        for (std::size_t i = 0; i < keys_.size(); ++i)
            if (keys_[i] != nullptr) f(keys_[i], values_[i]);
    }

private:
    /// The slot holding `n`, or the empty slot where it would go.
    [[nodiscard]] std::size_t index_of(const Node* n) const noexcept {
        std::size_t i = slot_of(n);
        while (keys_[i] != nullptr && keys_[i] != n) i = (i + 1) & mask_;
        return i;
    }
    [[nodiscard]] std::size_t slot_of(const Node* n) const noexcept {
        auto h = reinterpret_cast<std::uintptr_t>(n);
        h ^= h >> 17;
        h *= 0x9E3779B97F4A7C15ull;
        return static_cast<std::size_t>(h >> 7) & mask_;
    }
    void rehash(std::size_t capacity) {
        std::vector<Node*> old_keys(capacity, nullptr);
        std::vector<node_state> old_values(capacity);
        old_keys.swap(keys_);
        old_values.swap(values_);
        mask_ = capacity - 1;
        count_ = 0;
        for (std::size_t i = 0; i < old_keys.size(); ++i)
            if (old_keys[i] != nullptr) get(old_keys[i]) = std::move(old_values[i]);
    }

    static constexpr std::size_t max_spare = 4096;
    struct arrays {
        std::vector<Node*> keys;
        std::vector<node_state> values;
    };
    static arrays& spare_arrays() {
        thread_local arrays spare;
        return spare;
    }

    std::vector<Node*> keys_;
    std::vector<node_state> values_;
    std::size_t mask_ = 0;
    std::size_t count_ = 0;
};

struct graph_task {
    std::uint64_t id = 0;
    bool keep_graph = false;
    bool create_graph = false;
    bool accumulate_grad = true;
    node_table nodes;
    // Capture targets (autograd::grad / backward(inputs=...)): node -> slots -> output index.
    std::unordered_map<Node*, std::vector<std::pair<std::uint32_t, std::size_t>>> captures;
    std::unordered_set<Node*> needed;  // with a filter: the nodes that must run
    bool filter = false;
    tensor_list captured;
    std::vector<tensor_list> spare_lists;  // emptied gradient vectors, reused as node buffers
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

inline void compute_dependencies(graph_task& task, const std::vector<Edge>& roots) {
    std::vector<Node*> stack;
    auto visit = [&](const std::shared_ptr<Node>& fn) {
        bool fresh = false;
        node_state& st = task.nodes.get(fn.get(), &fresh);
        if (fresh) {
            st.owner = fn;
            stack.push_back(fn.get());
        }
        return &st;
    };
    for (const auto& e : roots)
        if (e.valid()) visit(e.function);
    while (!stack.empty()) {
        Node* n = stack.back();
        stack.pop_back();
        for (const auto& e : n->next_functions())
            if (e.valid()) ++visit(e.function)->dependencies;
    }
}

/// Marks the nodes on some path to a capture target (PyTorch's exec_info).
inline void compute_needed(graph_task& task, const std::vector<Edge>& roots, bool run_targets) {
    std::unordered_map<Node*, int> state;  // 0 unknown, 1 visiting, 2 done
    std::function<bool(Node*)> visit = [&](Node* n) -> bool {
        auto& s = state[n];
        if (s == 2) return task.needed.count(n) > 0;
        if (s == 1) return false;
        s = 1;
        bool need = run_targets && task.captures.count(n) > 0;
        for (const auto& e : n->next_functions()) {
            if (!e.valid()) continue;
            const bool child = visit(e.function.get());
            need = need || child || task.captures.count(e.function.get()) > 0;
        }
        state[n] = 2;
        if (need) task.needed.insert(n);
        return need;
    };
    for (const auto& e : roots)
        if (e.valid()) visit(e.function.get());
}

inline void add_to_buffer(graph_task& task, node_state& st, const Node& target, std::uint32_t slot,
                          const Tensor& grad) {
    if (st.buffer.size() < target.num_outputs()) {
        if (st.buffer.capacity() == 0 && !task.spare_lists.empty()) {
            st.buffer = std::move(task.spare_lists.back());
            task.spare_lists.pop_back();
        }
        st.buffer.resize(target.num_outputs());
    }
    st.buffer[slot] = accumulate(st.buffer[slot], grad);
    st.has_gradient = true;
}

/// Runs tensor hooks and retain_grad for one slot; returns the (possibly replaced) gradient.
inline Tensor run_tensor_hooks(Node& node, std::size_t slot, Tensor grad, bool create_graph) {
    if (!grad.defined()) return grad;
    if (auto* hooks = tensor_hooks_of(node, slot); hooks && !hooks->empty()) {
        const auto snapshot = *hooks;
        for (const auto& h : snapshot) {
            if (h->removed) continue;
            Tensor r = h->fn(grad);
            if (r.defined()) grad = r;
        }
    }
    if (node.has_hooks() && slot < node.num_outputs() && !node.is_accumulate_grad()) {
        if (auto impl = node.retain_grad_target(slot).lock()) {
            Tensor owner(impl);
            auto& m = ensure_meta(owner);
            const Tensor g = create_graph ? grad : grad.detach();
            m.grad = m.grad.defined() ? ops::add(m.grad, g) : graft::detail::raw::clone(g);
        }
    }
    return grad;
}

/// Keeps the memory of a gradient vector for a later node's buffer (saves an allocation per node).
inline void recycle(graph_task& task, tensor_list&& list) {
    if (list.capacity() == 0 || task.spare_lists.size() >= 8) return;
    list.clear();
    task.spare_lists.push_back(std::move(list));
}

inline void execute(graph_task& task) {
    auto later_first = [](const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) {
        return a->sequence_nr() < b->sequence_nr();
    };
    std::priority_queue<std::shared_ptr<Node>, std::vector<std::shared_ptr<Node>>, decltype(later_first)> ready(
        later_first);
    task.nodes.for_each([&](Node*, node_state& st) {
        if (st.has_gradient && st.dependencies == 0) ready.push(st.owner);
    });

    grad_mode_guard mode(task.create_graph);
    graph_task* outer = current_task();
    current_task() = &task;
    struct restore_task {
        graph_task* outer;
        ~restore_task() { current_task() = outer; }
    } restore{outer};
    std::shared_ptr<node_logger> log;
    {
        std::lock_guard lock(logger_mutex());
        log = logger_slot();
    }
    while (!ready.empty()) {
        std::shared_ptr<Node> node = ready.top();
        ready.pop();
        std::lock_guard lock(node->mutex());
        tensor_list grads = std::move(task.nodes.find(node.get())->buffer);
        grads.resize(node->num_outputs());
        const auto capture = task.captures.empty() ? task.captures.end() : task.captures.find(node.get());
        bool run = !task.filter || task.needed.count(node.get()) > 0;
        if (node->is_accumulate_grad() && !task.accumulate_grad) run = false;
        // A node neither run nor captured is not part of this pass: its tensor hooks stay quiet.
        if (!run && capture == task.captures.end()) continue;
        for (std::size_t i = 0; i < grads.size(); ++i) grads[i] = run_tensor_hooks(*node, i, grads[i], task.create_graph);
        if (capture != task.captures.end())
            for (auto [slot, index] : capture->second) task.captured[index] = accumulate(task.captured[index], grads[slot]);
        if (!run) continue;

        const bool hooked = node->has_hooks();
        if (hooked)
            for (const auto& h : std::vector(node->pre_hooks())) {
                if (h->removed) continue;
                if (auto r = h->fn(grads)) grads = std::move(*r);
            }
        bool any = false;
        for (const auto& g : grads) any = any || g.defined();
        tensor_list outputs;
        if (any) outputs = (hooked || log) ? (*node)(grads) : (*node)(std::move(grads));
        outputs.resize(node->next_functions().size());
        if (hooked)
            for (const auto& h : std::vector(node->post_hooks())) {
                if (h->removed) continue;
                if (auto r = h->fn(outputs, grads)) outputs = std::move(*r);
            }
        if (log) (*log)(*node, grads, outputs);
        if (!task.keep_graph) node->release_variables();

        const auto& edges = node->next_functions();
        for (std::size_t i = 0; i < edges.size(); ++i) {
            const Edge& e = edges[i];
            if (!e.valid()) continue;
            Node* next = e.function.get();
            node_state& st = *task.nodes.find(next);  // every reachable node was entered up front
            if (i < outputs.size() && outputs[i].defined())
                add_to_buffer(task, st, *next, e.input_nr,
                              validate_grad(*node, i, outputs[i], next->output_metadata(e.input_nr)));
            else
                st.has_gradient = true;  // becomes ready with an undefined gradient
            if (--st.dependencies == 0) ready.push(st.owner);
        }
        recycle(task, std::move(grads));
        recycle(task, std::move(outputs));
    }
}

/// Shared implementation of Tensor::backward and autograd::grad.
inline tensor_list run_backward(const tensor_list& outputs, const tensor_list& grad_outputs, bool keep_graph,
                                bool create_graph, const std::vector<Edge>& inputs, bool accumulate_grad,
                                bool allow_unused) {
    graft::detail::check(grad_outputs.empty() || grad_outputs.size() == outputs.size(), "backward: got ",
                         grad_outputs.size(), " gradients for ", outputs.size(), " outputs");
    graph_task task;
    task.id = next_task_id()++;
    task.keep_graph = keep_graph;
    task.create_graph = create_graph;
    task.accumulate_grad = accumulate_grad;
    std::vector<Edge> roots;
    std::vector<Tensor> root_grads;
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        const Tensor& out = outputs[i];
        graft::detail::check(out.defined(), "backward: output ", i, " is an undefined tensor");
        Edge e = gradient_edge(out);
        graft::detail::check(e.valid(), "element ", i, " of tensors does not require grad and does not have a grad_fn");
        Tensor g = grad_outputs.empty() ? Tensor{} : grad_outputs[i];
        if (!g.defined()) {
            graft::detail::check(out.numel() == 1, "grad can be implicitly created only for scalar outputs (output ",
                                 i, " has shape ", out.sizes(), ")");
            g = ones_like(out);
        } else {
            graft::detail::check(g.sizes() == out.sizes(), "Mismatch in shape: grad_output[", i, "] has a shape of ",
                                 g.sizes(), " and output[", i, "] has a shape of ",
                                 out.sizes(), ".");
            graft::detail::check(is_floating_point(g.type()), "backward: grad_output[", i,
                                 "] must be a floating-point tensor, got ", g.type());
        }
        roots.push_back(e);
        root_grads.push_back(g);
    }
    compute_dependencies(task, roots);
    if (!inputs.empty()) {
        task.filter = true;
        task.captured.resize(inputs.size());
        for (std::size_t i = 0; i < inputs.size(); ++i) {
            graft::detail::check(inputs[i].valid(), "One of the differentiated Tensors does not require grad");
            task.nodes.get(inputs[i].function.get()).owner = inputs[i].function;
            task.captures[inputs[i].function.get()].emplace_back(inputs[i].input_nr, i);
        }
        compute_needed(task, roots, accumulate_grad);
    }
    for (std::size_t i = 0; i < roots.size(); ++i) {
        Node* n = roots[i].function.get();
        add_to_buffer(task, task.nodes.get(n), *n, roots[i].input_nr,
                      validate_grad(*n, i, root_grads[i], n->output_metadata(roots[i].input_nr)));
    }
    execute(task);
    if (!accumulate_grad) {
        for (std::size_t i = 0; i < task.captured.size(); ++i)
            graft::detail::check(allow_unused || task.captured[i].defined(),
                                 "One of the differentiated Tensors appears to not have been used in the graph. Set "
                                 "allow_unused=true if this is the desired behavior.");
    }
    return task.captured;
}

}  // namespace detail

/// Logs every node the engine runs (name and gradient shapes) to `os`, until
/// called again with nullptr. Process-wide; thread-safe.
inline void set_node_logger(std::function<void(const Node&, const tensor_list&, const tensor_list&)> fn) {
    std::lock_guard lock(detail::logger_mutex());
    detail::logger_slot() = fn ? std::make_shared<detail::node_logger>(std::move(fn)) : nullptr;
}

/// Inside a backward pass (e.g. from a hook): true when the engine will run `node`
/// in the current pass (torch's _will_engine_execute_node). Throws outside backward.
[[nodiscard]] inline bool will_engine_execute_node(const Node& node) {
    const auto* task = detail::current_task();
    graft::detail::check(task != nullptr, "will_engine_execute_node: should only be called during the backward pass");
    auto* n = const_cast<Node*>(&node);
    if (!task->nodes.contains(n)) return false;
    if (task->captures.count(n)) return true;  // as PyTorch: capture targets count as executed
    if (node.is_accumulate_grad() && !task->accumulate_grad) return false;
    return !task->filter || task->needed.count(n) > 0;
}

/// Identifies the backward pass running on this thread (0 outside backward).
[[nodiscard]] inline std::uint64_t current_graph_task_id() noexcept {
    const auto* task = detail::current_task();
    return task ? task->id : 0;
}

}  // namespace graft::autograd
