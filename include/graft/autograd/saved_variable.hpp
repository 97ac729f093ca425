#pragma once
// Tensors saved for backward: version-checked, freed after backward unless the
// graph is retained, and routed through saved_tensors_hooks when some are active.
#include <any>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "graft/autograd/node.hpp"
#include "graft/autograd/view_meta.hpp"

namespace graft::autograd {

/// pack(tensor) -> anything; unpack(anything) -> tensor. See saved_tensors_hooks.
using pack_hook = std::function<std::any(const Tensor&)>;
using unpack_hook = std::function<Tensor(const std::any&)>;

namespace detail {

struct saved_hooks_state {
    std::vector<std::pair<pack_hook, unpack_hook>> stack;
    std::vector<std::string> disabled;  // messages of active disable_saved_tensors_hooks scopes
    int packing = 0;  // > 0 while a pack hook runs: tensors saved by its own ops skip the hooks
};
inline saved_hooks_state& saved_hooks() {
    thread_local saved_hooks_state state;
    return state;
}

}  // namespace detail

/// RAII: while alive, every tensor saved for backward on this thread is passed
/// to `pack` at save time and its result to `unpack` at each use in backward.
/// Guards nest; the innermost wins (torch.autograd.graph.saved_tensors_hooks).
/// Tensors saved by ops run inside a pack hook are saved without hooks.
class saved_tensors_hooks {
public:
    saved_tensors_hooks(pack_hook pack, unpack_hook unpack);
    saved_tensors_hooks(const saved_tensors_hooks&) = delete;
    saved_tensors_hooks& operator=(const saved_tensors_hooks&) = delete;
    ~saved_tensors_hooks() { detail::saved_hooks().stack.pop_back(); }
};

/// True unless a disable_saved_tensors_hooks scope is active on this thread.
[[nodiscard]] inline bool saved_tensors_hooks_enabled() { return detail::saved_hooks().disabled.empty(); }

/// RAII: registering saved_tensors_hooks in this scope throws graft::error(message);
/// entering it while saved_tensors_hooks are active throws graft::error(message) too.
class disable_saved_tensors_hooks {
public:
    explicit disable_saved_tensors_hooks(std::string message);
    disable_saved_tensors_hooks(const disable_saved_tensors_hooks&) = delete;
    disable_saved_tensors_hooks& operator=(const disable_saved_tensors_hooks&) = delete;
    ~disable_saved_tensors_hooks() { detail::saved_hooks().disabled.pop_back(); }
};

namespace detail {

// ---- allow_mutation_on_saved_tensors bookkeeping (the RAII guard lives in graph.hpp)

struct mutation_context;

/// A tensor saved while an allow_mutation_on_saved_tensors context was active. The
/// context may swap `data` for a clone of the pre-mutation value (see notify_inplace).
struct mutation_entry {
    Tensor data;            // what unpack returns: the saved tensor, or its clone
    Tensor version_source;  // whose version counter is checked at unpack
    std::uint64_t saved_version = 0;
    bool cloned = false;
    std::shared_ptr<mutation_context> context;
};

/// State of one allow_mutation_on_saved_tensors scope: saved entries by storage.
struct mutation_context {
    std::mutex mutex;
    bool alive = true;  // false once the scope exited: graphs recorded in it can't run backward
    std::unordered_map<const void*, std::vector<std::weak_ptr<mutation_entry>>> by_storage;  // not yet cloned
    std::vector<std::weak_ptr<mutation_entry>> cloned;  // freed when the scope exits
    std::size_t tracked = 0, sweep_at = 1024;

    /// Registers a saved entry; now and then forgets entries whose graph was freed.
    void add(const void* storage_key, const std::shared_ptr<mutation_entry>& e);
};

/// The context active on this thread (null outside allow_mutation_on_saved_tensors).
inline std::shared_ptr<mutation_context>& active_mutation_context() {
    thread_local std::shared_ptr<mutation_context> ctx;
    return ctx;
}

/// A copy of `t`'s values that keeps `t`'s place in the graph (grad_fn / leaf accumulator).
[[nodiscard]] GRAFT_INLINE Tensor clone_keeping_history(const Tensor& t);

/// Called by every in-place op before it writes `self`: inside
/// allow_mutation_on_saved_tensors, each saved tensor sharing self's storage is
/// replaced by a clone of its current value, so backward sees the value as saved.
GRAFT_INLINE void notify_inplace(const Tensor& self);

/// A tensor saved by a node. Outputs of the node itself are stored without their
/// grad_fn (that would be a reference cycle) and re-attached on unpack.
class saved_variable {
public:
    saved_variable() = default;
    saved_variable(const Tensor& t, bool is_output);

    /// The saved tensor; `owner` is the node that saved it (re-attached as grad_fn of saved outputs).
    [[nodiscard]] Tensor unpack(const std::shared_ptr<Node>& owner) const;

    void release() noexcept;
    [[nodiscard]] bool defined() const noexcept { return defined_; }
    [[nodiscard]] const int_list& sizes() const noexcept { return sizes_; }
    [[nodiscard]] dtype type() const noexcept { return type_; }
    /// The saved tensor as stored (no version check); for tools such as allow_mutation_on_saved_tensors.
    [[nodiscard]] Tensor stored() const;
    /// Makes `t` the saved value (its current version becomes the expected one).
    void replace_stored(const Tensor& t);

private:
    /// What a tensor saved through saved_tensors_hooks keeps (rare: allocated only then,
    /// so a plain saved variable, and the node holding it, stay small).
    struct hooked_state {
        std::any packed;
        unpack_hook unpack;
        std::shared_ptr<Node> grad_fn;   // the original's grad_fn (non-outputs)
        std::shared_ptr<Node> grad_acc;  // the original leaf's accumulator
        bool requires_grad = false;
    };

    Tensor data_;  // shares the saved tensor's version counter (checked at unpack)
    std::unique_ptr<hooked_state> hooked_;  // set only when saved through saved_tensors_hooks
    std::shared_ptr<mutation_entry> entry_;  // set only inside allow_mutation_on_saved_tensors
    int_list sizes_;
    dtype type_ = dtype::float32;
    std::uint64_t saved_version_ = 0;
    std::uint32_t output_nr_ = 0;
    const char* grad_fn_name_ = nullptr;  // Node names are static strings
    bool defined_ = false;
    bool is_output_ = false;
    bool released_ = false;
};

}  // namespace detail
}  // namespace graft::autograd

#if GRAFT_HAS_CODE
#include "graft/autograd/impl/saved_variable.ipp"
#endif
