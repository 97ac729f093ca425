#pragma once
// The torch.autograd.graph toolbox: offloading saved tensors to disk, multi-grad
// hooks, allow_mutation_on_saved_tensors, a node logger and a Graphviz dump.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "graft/autograd/engine.hpp"
#include "graft/autograd/saved_variable.hpp"
#include "graft/autograd/tensor_methods.hpp"

namespace graft::autograd {

// ---------------------------------------------------------------- save_on_disk

namespace detail {

/// One saved tensor written to a temporary file; the file is deleted with the blob,
/// i.e. when the last saved_variable holding it is released.
struct disk_blob {
    std::filesystem::path path;
    int_list sizes;
    dtype type = dtype::float32;
    std::size_t nbytes = 0;
    disk_blob() = default;
    disk_blob(const disk_blob&) = delete;
    disk_blob& operator=(const disk_blob&) = delete;
    ~disk_blob();
};

/// A file name no other process or thread picks: a per-process random tag plus a counter.
[[nodiscard]] GRAFT_INLINE std::filesystem::path unique_temp_file(const std::filesystem::path& dir);

[[nodiscard]] GRAFT_INLINE std::any pack_to_disk(const std::filesystem::path& dir, const Tensor& t);

[[nodiscard]] GRAFT_INLINE Tensor unpack_from_disk(const std::any& packed);

[[nodiscard]] GRAFT_INLINE std::filesystem::path checked_directory(std::filesystem::path dir);

}  // namespace detail

/// RAII, like torch.autograd.graph.save_on_cpu but for memory pressure on the host:
/// every tensor saved for backward in this scope (on this thread) is written to a
/// temporary file in `directory` (default: the system temp directory) and read back
/// at each use in backward. A file is deleted once its saved tensor is released.
class save_on_disk {
public:
    explicit save_on_disk(const std::filesystem::path& directory = {});
    save_on_disk(const save_on_disk&) = delete;
    save_on_disk& operator=(const save_on_disk&) = delete;
    /// Where the temporary files go.
    [[nodiscard]] const std::filesystem::path& directory() const noexcept { return dir_; }

private:
    std::filesystem::path dir_;
    saved_tensors_hooks hooks_;
};

// ---------------------------------------------------------------- multi-grad hooks

/// When a multi-grad hook fires: after all gradients of the pass, or at the first one.
enum class mode { all, any };

namespace detail {

/// Shared by the per-tensor hooks of one register_multi_grad_hook call.
struct multi_grad_state {
    mode kind = mode::all;
    std::function<void(const tensor_list&)> all_fn;
    std::function<void(const Tensor&)> any_fn;
    // Where each tensor's gradient arrives. Non-leaves: their grad_fn (weak: the hooks
    // live on these nodes). Leaves: resolved at backward time to their current accumulator.
    std::vector<std::weak_ptr<Node>> grad_fns;
    std::vector<std::weak_ptr<graft::detail::tensor_impl>> leaves;

    struct pass {
        std::size_t expected = 0, received = 0;
        tensor_list grads;
    };
    std::mutex mutex;
    std::map<std::uint64_t, pass> passes;  // "all": in-flight passes by graph task id
    std::set<std::uint64_t> fired;         // "any": passes that already fired
    static constexpr std::size_t max_tracked = 4096;  // bound for passes that died (errors)

    [[nodiscard]] std::shared_ptr<Node> node_of(std::size_t i) const;
};

/// True when the running backward pass delivers a gradient to `node` (it runs it or
/// captures its input for autograd::grad / backward(inputs=...)).
[[nodiscard]] GRAFT_INLINE bool gradient_expected(const Node* node);

GRAFT_INLINE Tensor on_multi_grad(const std::shared_ptr<multi_grad_state>& st, std::size_t i, const Tensor& grad);

GRAFT_INLINE hook_handle register_multi_grad_hook_impl(const tensor_list& tensors,
                                                       std::shared_ptr<multi_grad_state> st);

}  // namespace detail

/// torch.autograd.graph.register_multi_grad_hook, mode::all: fn(grads) runs once per
/// backward pass, after the last gradient among `tensors` that this pass computes;
/// grads[i] is undefined for tensors the pass does not reach. Thread-safe: each
/// pass (graph task) has its own state. remove() on the handle removes every hook.
GRAFT_INLINE hook_handle register_multi_grad_hook(const tensor_list& tensors,
                                                  std::function<void(const tensor_list&)> fn, mode m = mode::all);

/// register_multi_grad_hook, mode::any: fn(grad) runs once per backward pass, with
/// the first gradient computed among `tensors`.
GRAFT_INLINE hook_handle register_multi_grad_hook(const tensor_list& tensors, std::function<void(const Tensor&)> fn,
                                                  mode m);

// ---------------------------------------------------------------- allow_mutation_on_saved_tensors

/// RAII (torch.autograd.graph.allow_mutation_on_saved_tensors): in this scope, on this
/// thread, an in-place op on a tensor saved for backward first clones the saved value,
/// so backward uses the value from before the mutation instead of failing the version
/// check. Backward must run inside the same scope; scopes cannot be nested. On exit
/// the clones and bookkeeping are released.
class allow_mutation_on_saved_tensors {
public:
    allow_mutation_on_saved_tensors();
    allow_mutation_on_saved_tensors(const allow_mutation_on_saved_tensors&) = delete;
    allow_mutation_on_saved_tensors& operator=(const allow_mutation_on_saved_tensors&) = delete;
    ~allow_mutation_on_saved_tensors();

private:
    std::shared_ptr<detail::mutation_context> ctx_;
};

// ---------------------------------------------------------------- node logging

namespace detail {

GRAFT_INLINE void write_shapes(std::ostream& os, const tensor_list& grads);

}  // namespace detail

/// RAII: while alive, every node any backward pass runs writes one line to `os`:
/// "<name>: (<grad_output shapes>) -> (<grad_input shapes>)", undefined gradients as None,
/// in execution order. Uses set_node_logger, so it is process-wide and cannot nest.
class log_nodes_to {
public:
    explicit log_nodes_to(std::ostream& os);
    log_nodes_to(const log_nodes_to&) = delete;
    log_nodes_to& operator=(const log_nodes_to&) = delete;
    ~log_nodes_to() { set_node_logger(nullptr); }
};

// ---------------------------------------------------------------- to_dot

namespace detail {

/// Escapes a label for a double-quoted DOT string ('\n' stays a DOT line break).
[[nodiscard]] GRAFT_INLINE std::string dot_escape(const std::string& s);

}  // namespace detail

/// The backward graph reachable from t.grad_fn() as Graphviz DOT (like torchviz):
/// one box per node with its name and saved tensors, leaf accumulators with the
/// leaf's dtype and shape, an arrow per next_functions entry. Ids n0, n1, ... follow
/// breadth-first order from the root, so the output is deterministic.
[[nodiscard]] GRAFT_INLINE std::string to_dot(const Tensor& t);

}  // namespace graft::autograd

#if GRAFT_HAS_CODE
#include "graft/autograd/impl/graph.ipp"
#endif
