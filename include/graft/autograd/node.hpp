#pragma once
// The backward graph: Node (torch.autograd.graph.Node), Edge, hooks and the
// per-tensor autograd metadata.
#include <any>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "graft/core/error.hpp"
#include "graft/core/tensor.hpp"

namespace graft::autograd {

using tensor_list = std::vector<Tensor>;

/// An input of a backward node: gradients flowing into `function` at slot `input_nr`.
struct Edge {
    std::shared_ptr<Node> function;
    std::uint32_t input_nr = 0;
    [[nodiscard]] bool valid() const noexcept { return function != nullptr; }
};

namespace detail {
/// One registered hook; handles mark it removed, and the engine skips removed hooks.
template <class Fn>
struct hook_entry {
    Fn fn;
    bool removed = false;
};
}  // namespace detail

/// Returned by every register_*hook; remove() is idempotent and may run during backward.
struct hook_handle {
    std::function<void()> remover;
    void remove() {
        if (remover) {
            auto r = std::move(remover);
            remover = nullptr;
            r();
        }
    }
};

/// A hook on a node's inputs: fn(grad_outputs) may return replacements.
using pre_hook = std::function<std::optional<tensor_list>(const tensor_list& grad_outputs)>;
/// A hook after a node ran: fn(grad_inputs, grad_outputs) may return replacement grad_inputs.
using post_hook = std::function<std::optional<tensor_list>(const tensor_list& grad_inputs, const tensor_list& grad_outputs)>;
/// A tensor hook: fn(grad) returns a replacement, or an undefined tensor to keep grad.
using tensor_hook = std::function<Tensor(const Tensor&)>;

namespace detail {

template <class Fn>
using hook_list = std::vector<std::shared_ptr<hook_entry<Fn>>>;

template <class Fn>
hook_handle add_hook(hook_list<Fn>& list, Fn fn) {
    auto entry = std::make_shared<hook_entry<Fn>>(hook_entry<Fn>{std::move(fn), false});
    list.push_back(entry);
    std::weak_ptr<hook_entry<Fn>> weak = entry;
    return hook_handle{[weak] {
        if (auto e = weak.lock()) e->removed = true;
    }};
}

/// Per thread, as PyTorch's sequence numbers: ordering only matters within one thread's
/// recording, and a shared atomic counter costs every recorded op a locked increment.
inline std::uint64_t& next_sequence_nr() noexcept {
    static thread_local std::uint64_t counter = 0;
    return counter;
}

/// Shape and dtype a gradient slot must have.
struct input_metadata {
    int_list sizes;
    dtype type = dtype::float32;
};

}  // namespace detail

/// A node of the backward graph. `apply` maps the gradients of the forward
/// outputs (grad_outputs) to the gradients of the forward inputs (grad_inputs),
/// one per entry of next_functions().
class Node : public std::enable_shared_from_this<Node> {
public:
    using edge_list = boost::container::small_vector<Edge, 2>;

    explicit Node(const char* name) : name_(name), sequence_nr_(detail::next_sequence_nr()++) {}
    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;
    virtual ~Node();

    /// PyTorch's class name of the node, e.g. "MulBackward0" or "AccumulateGrad".
    [[nodiscard]] std::string name() const;
    /// The same name without a copy (a static string).
    [[nodiscard]] const char* raw_name() const noexcept { return name_; }
    /// One edge per forward input; invalid edges (null function) for inputs that need no grad.
    [[nodiscard]] const edge_list& next_functions() const noexcept { return next_edges_; }
    /// Creation order; the engine runs later nodes first.
    [[nodiscard]] std::uint64_t sequence_nr() const noexcept { return sequence_nr_; }
    /// Free-form per-node annotations users may read and write.
    [[nodiscard]] std::map<std::string, std::any>& metadata();
    /// Number of forward outputs: how many gradients apply() receives.
    [[nodiscard]] std::size_t num_outputs() const noexcept { return output_meta_.size(); }
    [[nodiscard]] const detail::input_metadata& output_metadata(std::size_t i) const {
        if (i >= output_meta_.size()) [[unlikely]]
            graft::detail::fail(graft::detail::concat(name(), ": output ", i, " of ", output_meta_.size()));
        return output_meta_[i];
    }
    /// True for the AccumulateGrad of a leaf.
    [[nodiscard]] bool is_accumulate_grad() const noexcept { return is_accumulate_grad_; }

    /// fn(grad_inputs, grad_outputs) after the node ran; a returned list replaces grad_inputs.
    hook_handle register_hook(post_hook fn);
    /// fn(grad_outputs) before the node runs; a returned list replaces grad_outputs.
    hook_handle register_prehook(pre_hook fn);

    /// Runs the node; called by the engine.
    [[nodiscard]] tensor_list operator()(const tensor_list& grad_outputs);
    /// As above; `grad_outputs` may be left moved-from, or as it was (the engine reuses its memory).
    [[nodiscard]] tensor_list operator()(tensor_list&& grad_outputs) { return apply(std::move(grad_outputs)); }
    /// Frees saved tensors once backward no longer needs them.
    virtual void release_variables();
    /// Short description of saved tensors, for to_dot.
    [[nodiscard]] virtual std::vector<std::string> describe_saved() const;

    // Graph construction (used by ops).
    void add_next_edge(Edge e);
    std::uint32_t add_output(const Tensor& t);

    // Hook storage read by the engine and by Tensor::register_hook / retain_grad.
    /// False while no hook of any kind was ever registered (the engine's fast path).
    [[nodiscard]] bool has_hooks() const noexcept { return hooks_ != nullptr; }
    detail::hook_list<pre_hook>& pre_hooks() { return hooks().pre; }
    detail::hook_list<post_hook>& post_hooks() { return hooks().post; }
    detail::hook_list<tensor_hook>& tensor_pre_hooks(std::size_t output_nr);
    std::weak_ptr<graft::detail::tensor_impl>& retain_grad_target(std::size_t output_nr);
    /// Serializes concurrent backward passes that share this node.
    std::mutex& mutex() noexcept { return mutex_; }

protected:
    virtual tensor_list apply(tensor_list&& grad_outputs) = 0;
    bool is_accumulate_grad_ = false;

private:
    struct hook_storage {
        detail::hook_list<pre_hook> pre;
        detail::hook_list<post_hook> post;
        boost::container::small_vector<detail::hook_list<tensor_hook>, 1> tensor;
        boost::container::small_vector<std::weak_ptr<graft::detail::tensor_impl>, 1> retain;
    };
    hook_storage& hooks();

    const char* name_;
    std::uint64_t sequence_nr_;
    edge_list next_edges_;
    boost::container::small_vector<detail::input_metadata, 1> output_meta_;
    std::unique_ptr<std::map<std::string, std::any>> metadata_;
    std::unique_ptr<hook_storage> hooks_;
    std::mutex mutex_;
};

namespace detail {

/// What a tensor knows about its place in the graph.
struct autograd_meta {
    bool requires_grad = false;  // meaningful for leaves; non-leaves require grad through grad_fn
    Tensor grad;
    std::shared_ptr<Node> grad_fn;
    std::uint32_t output_nr = 0;
    std::weak_ptr<Node> grad_accumulator;
    bool retains_grad = false;
    hook_list<tensor_hook> leaf_hooks;  // tensor hooks of a leaf, run by its AccumulateGrad
    hook_list<std::function<void(const Tensor&)>> post_accumulate_hooks;
    std::mutex mutex;
};

[[nodiscard]] inline autograd_meta* meta(const Tensor& t) noexcept {
    return t.defined() ? t.impl().autograd.get() : nullptr;
}
[[nodiscard]] GRAFT_INLINE autograd_meta& ensure_meta(const Tensor& t);

}  // namespace detail
}  // namespace graft::autograd

#if GRAFT_HAS_CODE
#include "graft/autograd/impl/node.ipp"
#endif
