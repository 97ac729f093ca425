#pragma once
// Definitions for graft/autograd/engine.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/autograd/engine.hpp"

#include <algorithm>

namespace graft::autograd {

GRAFT_INLINE AccumulateGrad::AccumulateGrad(Tensor leaf) : Node("AccumulateGrad"), leaf_(std::move(leaf)) {
    is_accumulate_grad_ = true;
    add_output(leaf_);
}

GRAFT_INLINE void function_node::save_defined(const Tensor& t, bool is_output) {
    for (; trailing_undefined_ > 0; --trailing_undefined_) saved_.emplace_back();
    saved_.emplace_back(t, is_output);
}

GRAFT_INLINE Tensor function_node::saved_stored(std::size_t i) {
    if (i >= saved_.size())
        graft::detail::fail(graft::detail::concat(name(), ": saved tensor ", i, " of ", saved_.size() + trailing_undefined_));
    return saved_[i].unpack(shared_from_this());
}

GRAFT_INLINE void function_node::release_variables() {
    for (auto& s : saved_) s.release();
}

GRAFT_INLINE std::vector<std::string> function_node::describe_saved() const {
    std::vector<std::string> out;
    for (const auto& s : saved_)
        if (s.defined()) out.push_back(graft::detail::concat(graft::name(s.type()), s.sizes()));
    return out;
}

GRAFT_INLINE tensor_list function_node::apply(tensor_list&& grads) {
    if (!backward.fills()) return backward(*this, grads);
    // The appending form writes into an emptied vector of the running pass (the engine
    // recycles the result the same way), so a node's run allocates no vector.
    tensor_list out;
    if (auto* task = detail::current_task(); task != nullptr && !task->spare_lists.empty()) {
        out = std::move(task->spare_lists.back());
        task->spare_lists.pop_back();
    }
    backward.fill(*this, grads, out);
    return out;
}

namespace detail {

GRAFT_INLINE std::shared_ptr<Node> grad_accumulator(const Tensor& leaf) {
    auto& m = ensure_meta(leaf);
    std::lock_guard lock(m.mutex);
    if (auto acc = m.grad_accumulator.lock()) return acc;
    auto acc = std::allocate_shared<AccumulateGrad>(graft::detail::pool_allocator<AccumulateGrad>{}, leaf);
    m.grad_accumulator = acc;
    return acc;
}

GRAFT_INLINE Edge gradient_edge(const Tensor& t) {
    refresh_if_view(t);
    auto* m = meta(t);
    if (!m) return {};
    if (m->grad_fn) return {m->grad_fn, m->output_nr};
    if (m->requires_grad) return {grad_accumulator(t), 0};
    return {};
}

GRAFT_INLINE hook_list<tensor_hook>* tensor_hooks_of(Node& node, std::size_t slot) {
    if (node.is_accumulate_grad()) {
        auto* m = meta(static_cast<AccumulateGrad&>(node).variable());
        return m ? &m->leaf_hooks : nullptr;
    }
    return node.has_hooks() ? &node.tensor_pre_hooks(slot) : nullptr;
}

GRAFT_INLINE Tensor validate_grad(const Node& producer, std::size_t index, Tensor grad,
                                  const input_metadata& expected) {
    Tensor g = std::move(grad);  // passed by value: the engine hands over its reference
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

GRAFT_INLINE node_table::node_table() {
    // Reuse the arrays of this thread's previous pass (one rehash-free table per thread;
    // a nested pass, e.g. backward inside a hook, gets fresh arrays).
    auto& spare = spare_arrays();
    if (!spare.keys.empty()) {
        keys_.swap(spare.keys);
        values_.swap(spare.values);
        used_.swap(spare.used);
        mask_ = keys_.size() - 1;
    } else {
        rehash(64);
    }
}

GRAFT_INLINE node_table::~node_table() {
    // Release the pass's references now (as destroying the arrays would), then keep
    // the emptied arrays for the next pass when they are not too large.
    for (const std::uint32_t i : used_) {
        keys_[i] = nullptr;
        values_[i] = node_state{};
    }
    used_.clear();
    count_ = 0;
    auto& spare = spare_arrays();
    if (keys_.size() <= max_spare && spare.keys.empty()) {
        spare.keys.swap(keys_);
        spare.values.swap(values_);
        spare.used.swap(used_);
    }
}

GRAFT_INLINE node_state& node_table::get(Node* n, bool* fresh) {
    if ((count_ + 1) * 2 > keys_.size()) rehash(keys_.size() * 2);
    std::size_t i = slot_of(n);
    while (keys_[i] != nullptr && keys_[i] != n) i = (i + 1) & mask_;
    if (fresh) *fresh = keys_[i] == nullptr;
    if (keys_[i] == nullptr) {
        keys_[i] = n;
        used_.push_back(static_cast<std::uint32_t>(i));
        ++count_;
    }
    return values_[i];
}

GRAFT_INLINE std::size_t node_table::index_of(const Node* n) const noexcept {
    std::size_t i = slot_of(n);
    while (keys_[i] != nullptr && keys_[i] != n) i = (i + 1) & mask_;
    return i;
}

GRAFT_INLINE void node_table::rehash(std::size_t capacity) {
    std::vector<Node*> old_keys(capacity, nullptr);
    std::vector<node_state> old_values(capacity);
    std::vector<std::uint32_t> old_used;
    old_used.reserve(capacity / 2);
    old_keys.swap(keys_);
    old_values.swap(values_);
    old_used.swap(used_);
    mask_ = capacity - 1;
    count_ = 0;
    for (const std::uint32_t i : old_used) get(old_keys[i]) = std::move(old_values[i]);  // entry order kept
}

GRAFT_INLINE void compute_dependencies(graph_task& task, std::span<const Edge> roots) {
    boost::container::small_vector<Node*, 32> stack;
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

GRAFT_INLINE void compute_needed(graph_task& task, std::span<const Edge> roots, bool run_targets) {
    // Depth-first over the nodes compute_dependencies entered, without recursion: a node is
    // needed when it is a capture target that runs (run_targets) or some child is needed or
    // is a capture target. A node met again while on the stack (a cycle cannot occur in a
    // backward graph, but stay safe) counts as not needed, as before.
    struct frame {
        Node* node;
        node_state* state;
        std::size_t next_edge;
        bool need;
    };
    boost::container::small_vector<frame, 16> stack;
    const auto enter = [&](Node* n) {
        node_state* st = task.nodes.find(n);
        st->visit = 1;
        stack.push_back({n, st, 0, run_targets && st->is_capture});
    };
    for (const auto& root : roots) {
        if (!root.valid() || task.nodes.find(root.function.get())->visit != 0) continue;
        enter(root.function.get());
        while (!stack.empty()) {
            frame& f = stack.back();
            const auto& edges = f.node->next_functions();
            if (f.next_edge < edges.size()) {
                const Edge& e = edges[f.next_edge++];
                if (!e.valid()) continue;
                node_state* child = task.nodes.find(e.function.get());
                if (child->visit == 0) {
                    enter(e.function.get());  // invalidates f; its result is folded in on return
                    continue;
                }
                f.need = f.need || (child->visit == 2 && child->needed) || child->is_capture;
                continue;
            }
            node_state* done = f.state;
            done->visit = 2;
            done->needed = f.need;
            stack.pop_back();
            if (!stack.empty()) stack.back().need = stack.back().need || done->needed || done->is_capture;
        }
    }
}

GRAFT_INLINE void add_to_buffer(graph_task& task, node_state& st, const Node& target, std::uint32_t slot,
                                Tensor grad) {
    if (st.buffer.size() < target.num_outputs()) {
        if (st.buffer.capacity() == 0 && !task.spare_lists.empty()) {
            st.buffer = std::move(task.spare_lists.back());
            task.spare_lists.pop_back();
        }
        st.buffer.resize(target.num_outputs());
    }
    Tensor& held = st.buffer[slot];
    held = held.defined() ? accumulate(held, grad) : std::move(grad);
    st.has_gradient = true;
}

/// A hook's replacement for a gradient must keep its dtype and shape (PyTorch: "hook has
/// changed the type of value" / "the size of value").
GRAFT_INLINE void check_hook_gradient(const char* hook, const Node& node, std::size_t slot, const Tensor& before,
                                      const Tensor& after) {
    if (!before.defined() || !after.defined()) return;
    if (after.type() != before.type() || after.sizes() != before.sizes())
        graft::detail::fail(graft::detail::concat(
            hook, " of ", node.name(), " changed gradient ", slot, " from ", before.type(), " ", before.sizes(), " to ",
            after.type(), " ", after.sizes(), ": a hook must return a gradient of the same dtype and shape"));
}

GRAFT_INLINE Tensor run_tensor_hooks(Node& node, std::size_t slot, Tensor grad, bool create_graph) {
    if (!grad.defined()) return grad;
    if (auto* hooks = tensor_hooks_of(node, slot); hooks && !hooks->empty()) {
        const auto snapshot = *hooks;
        for (const auto& h : snapshot) {
            if (h->removed) continue;
            Tensor r = h->fn(grad);
            if (!r.defined()) continue;
            check_hook_gradient("a tensor hook", node, slot, grad, r);
            grad = r;
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

GRAFT_INLINE void recycle(graph_task& task, tensor_list&& list) {
    if (list.capacity() == 0 || task.spare_lists.size() >= 8) return;
    list.clear();
    task.spare_lists.push_back(std::move(list));
}

GRAFT_INLINE void execute(graph_task& task) {
    auto later_first = [](const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) {
        return a->sequence_nr() < b->sequence_nr();
    };
    // A heap by hand (not std::priority_queue): the popped node is moved out, not copied,
    // so running a node costs no reference-count update for the queue.
    boost::container::small_vector<std::shared_ptr<Node>, 16> ready;
    const auto push_ready = [&](const std::shared_ptr<Node>& n) {
        ready.push_back(n);
        std::push_heap(ready.begin(), ready.end(), later_first);
    };
    task.nodes.for_each([&](Node*, node_state& st) {
        if (st.has_gradient && st.dependencies == 0) push_ready(st.owner);
    });

    grad_mode_guard mode(task.create_graph);
    graph_task* outer = current_task();
    current_task() = &task;
    struct restore_task {
        graph_task* outer;
        ~restore_task() { current_task() = outer; }
    } restore{outer};
    std::shared_ptr<node_logger> log;
    if (logger_set().load(std::memory_order_acquire)) {
        std::lock_guard lock(logger_mutex());
        log = logger_slot();
    }
    while (!ready.empty()) {
        std::pop_heap(ready.begin(), ready.end(), later_first);
        std::shared_ptr<Node> node = std::move(ready.back());
        ready.pop_back();
        std::lock_guard lock(node->mutex());
        node_state& state = *task.nodes.find(node.get());
        tensor_list grads = std::move(state.buffer);
        grads.resize(node->num_outputs());
        const bool captured = state.is_capture;
        bool run = !task.filter || state.needed;
        if (node->is_accumulate_grad() && !task.accumulate_grad) run = false;
        // A node neither run nor captured is not part of this pass: its tensor hooks stay quiet.
        if (!run && !captured) continue;
        if (node->has_hooks() || node->is_accumulate_grad())  // else no tensor hook or retain_grad can apply
            for (std::size_t i = 0; i < grads.size(); ++i) grads[i] = run_tensor_hooks(*node, i, grads[i], task.create_graph);
        if (captured)
            for (const auto& c : task.captures)
                if (c.node == node.get()) task.captured[c.index] = accumulate(task.captured[c.index], grads[c.slot]);
        if (!run) continue;

        const bool hooked = node->has_hooks();
        if (hooked)
            for (const auto& h : std::vector(node->pre_hooks())) {
                if (h->removed) continue;
                if (auto r = h->fn(grads)) {
                    if (r->size() != grads.size())
                        graft::detail::fail(graft::detail::concat("a pre-hook of ", node->name(), " returned ", r->size(),
                                                                  " gradients for a node with ", grads.size(), " outputs"));
                    for (std::size_t i = 0; i < grads.size(); ++i)
                        check_hook_gradient("a pre-hook", *node, i, grads[i], (*r)[i]);
                    grads = std::move(*r);
                }
            }
        bool any = false;
        for (const auto& g : grads) any = any || g.defined();
        tensor_list outputs;
        if (any) outputs = (hooked || log) ? (*node)(grads) : (*node)(std::move(grads));
        outputs.resize(node->next_functions().size());
        if (hooked)
            for (const auto& h : std::vector(node->post_hooks())) {
                if (h->removed) continue;
                if (auto r = h->fn(outputs, grads)) {
                    if (r->size() != outputs.size())
                        graft::detail::fail(graft::detail::concat("a post-hook of ", node->name(), " returned ", r->size(),
                                                                  " gradients for a node with ", outputs.size(), " inputs"));
                    outputs = std::move(*r);
                }
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
                              validate_grad(*node, i, std::move(outputs[i]), next->output_metadata(e.input_nr)));
            else
                st.has_gradient = true;  // becomes ready with an undefined gradient
            if (--st.dependencies == 0) push_ready(st.owner);
        }
        recycle(task, std::move(grads));
        recycle(task, std::move(outputs));
    }
}

GRAFT_INLINE tensor_list run_backward(const tensor_list& outputs, const tensor_list& grad_outputs, bool keep_graph,
                                      bool create_graph, const std::vector<Edge>& inputs, bool accumulate_grad,
                                      bool allow_unused) {
    graft::detail::check(grad_outputs.empty() || grad_outputs.size() == outputs.size(), "backward: got ",
                         grad_outputs.size(), " gradients for ", outputs.size(), " outputs");
    graph_task task;
    task.id = next_task_id()++;
    task.keep_graph = keep_graph;
    task.create_graph = create_graph;
    task.accumulate_grad = accumulate_grad;
    boost::container::small_vector<Edge, 4> roots;
    boost::container::small_vector<Tensor, 4> root_grads;
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
    const std::span<const Edge> root_edges(roots.data(), roots.size());
    compute_dependencies(task, root_edges);
    if (!inputs.empty()) {
        task.filter = true;
        task.captured.resize(inputs.size());
        task.captures.reserve(inputs.size());
        for (std::size_t i = 0; i < inputs.size(); ++i) {
            graft::detail::check(inputs[i].valid(), "One of the differentiated Tensors does not require grad");
            task.nodes.get(inputs[i].function.get()).owner = inputs[i].function;
            task.nodes.find(inputs[i].function.get())->is_capture = true;
            task.captures.push_back({inputs[i].function.get(), inputs[i].input_nr, i});
        }
        compute_needed(task, root_edges, accumulate_grad);
    }
    for (std::size_t i = 0; i < roots.size(); ++i) {
        Node* n = roots[i].function.get();
        add_to_buffer(task, task.nodes.get(n), *n, roots[i].input_nr,
                      validate_grad(*n, i, std::move(root_grads[i]), n->output_metadata(roots[i].input_nr)));
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

GRAFT_INLINE void set_node_logger(std::function<void(const Node&, const tensor_list&, const tensor_list&)> fn) {
    std::lock_guard lock(detail::logger_mutex());
    detail::logger_slot() = fn ? std::make_shared<detail::node_logger>(std::move(fn)) : nullptr;
    detail::logger_set().store(detail::logger_slot() != nullptr, std::memory_order_release);
}

GRAFT_INLINE bool will_engine_execute_node(const Node& node) {
    const auto* task = detail::current_task();
    graft::detail::check(task != nullptr, "will_engine_execute_node: should only be called during the backward pass");
    auto* n = const_cast<Node*>(&node);
    if (!task->nodes.contains(n)) return false;
    if (task->nodes.find(n)->is_capture) return true;  // as PyTorch: capture targets count as executed
    if (node.is_accumulate_grad() && !task->accumulate_grad) return false;
    return !task->filter || task->nodes.find(n)->needed;
}

}  // namespace graft::autograd
