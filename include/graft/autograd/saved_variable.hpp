#pragma once
// Tensors saved for backward: version-checked, freed after backward unless the
// graph is retained, and routed through saved_tensors_hooks when some are active.
#include <any>
#include <cstdint>
#include <functional>
#include <iterator>
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
    saved_tensors_hooks(pack_hook pack, unpack_hook unpack) {
        auto& st = detail::saved_hooks();
        graft::detail::check(st.disabled.empty(), st.disabled.empty() ? std::string() : st.disabled.back());
        st.stack.emplace_back(std::move(pack), std::move(unpack));
    }
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
    explicit disable_saved_tensors_hooks(std::string message) {
        auto& st = detail::saved_hooks();
        // Disabling while hooks are installed is refused with the same message (as PyTorch does).
        graft::detail::check(st.stack.empty(), message);
        st.disabled.push_back(std::move(message));
    }
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
    void add(const void* storage_key, const std::shared_ptr<mutation_entry>& e) {
        by_storage[storage_key].push_back(e);
        if (++tracked < sweep_at) return;
        tracked = 0;
        for (auto it = by_storage.begin(); it != by_storage.end();) {
            auto& v = it->second;
            std::erase_if(v, [](const auto& w) { return w.expired(); });
            tracked += v.size();
            it = v.empty() ? by_storage.erase(it) : std::next(it);
        }
        std::erase_if(cloned, [](const auto& w) { return w.expired(); });
        tracked += cloned.size();
        sweep_at = 2 * tracked + 1024;
    }
};

/// The context active on this thread (null outside allow_mutation_on_saved_tensors).
inline std::shared_ptr<mutation_context>& active_mutation_context() {
    thread_local std::shared_ptr<mutation_context> ctx;
    return ctx;
}

/// A copy of `t`'s values that keeps `t`'s place in the graph (grad_fn / leaf accumulator).
[[nodiscard]] inline Tensor clone_keeping_history(const Tensor& t) {
    Tensor c = graft::detail::raw::clone(t);
    if (const auto* m = meta(t)) {
        auto& cm = ensure_meta(c);
        cm.requires_grad = m->requires_grad;
        cm.grad_fn = m->grad_fn;
        cm.output_nr = m->output_nr;
        cm.grad_accumulator = m->grad_accumulator;
    }
    return c;
}

/// Called by every in-place op before it writes `self`: inside
/// allow_mutation_on_saved_tensors, each saved tensor sharing self's storage is
/// replaced by a clone of its current value, so backward sees the value as saved.
inline void notify_inplace(const Tensor& self) {
    const auto& ctx = active_mutation_context();
    if (!ctx) return;
    std::lock_guard lock(ctx->mutex);
    auto it = ctx->by_storage.find(self.impl().data.get());
    if (it == ctx->by_storage.end()) return;
    for (const auto& weak : it->second) {
        auto e = weak.lock();
        if (!e || e->cloned) continue;
        // Already modified behind our back (e.g. by a raw write): leave it, unpack reports it.
        if (e->version_source._version() != e->saved_version) continue;
        e->data = clone_keeping_history(e->data);
        e->version_source = e->data;
        e->saved_version = e->data._version();
        e->cloned = true;
        ctx->cloned.push_back(e);
    }
    ctx->by_storage.erase(it);  // every live entry is now a private clone
}

/// A tensor saved by a node. Outputs of the node itself are stored without their
/// grad_fn (that would be a reference cycle) and re-attached on unpack.
class saved_variable {
public:
    saved_variable() = default;
    saved_variable(const Tensor& t, bool is_output) : defined_(t.defined()), is_output_(is_output) {
        if (!defined_) return;
        if (!is_output) refresh_if_view(t);  // a stale view's grad_fn is regenerated first
        saved_version_ = t._version();
        sizes_ = t.sizes();
        type_ = t.type();
        if (const auto* m = meta(t)) {
            output_nr_ = m->output_nr;
            if (m->grad_fn) grad_fn_name_ = m->grad_fn->raw_name();
        }
        auto& hooks = saved_hooks();
        if (!hooks.stack.empty() && hooks.packing == 0) {
            hooked_ = std::make_unique<hooked_state>();
            hooked_->unpack = hooks.stack.back().second;
            {
                // Ops inside the pack hook (say t * 2) may save tensors themselves; those are
                // saved plainly, or packing would recurse forever.
                struct packing_scope {
                    int& depth;
                    explicit packing_scope(int& d) : depth(d) { ++depth; }
                    ~packing_scope() { --depth; }
                } scope(hooks.packing);
                hooked_->packed = hooks.stack.back().first(is_output ? graft::detail::raw::alias(t) : t);
            }
            // Remember where t sits in the graph, so the unpacked tensor can be re-attached
            // (double backward through a saved input works with hooks too).
            if (const auto* m = meta(t); m && !is_output) {
                hooked_->requires_grad = m->requires_grad || m->grad_fn;
                hooked_->grad_fn = m->grad_fn;
                if (!m->grad_fn && m->requires_grad) hooked_->grad_acc = m->grad_accumulator.lock();
            }
            return;
        }
        // Outputs: keep storage and version counter but not the autograd metadata.
        data_ = is_output ? graft::detail::raw::alias(t) : t;
        if (!is_output && tracked_view(t) != nullptr) {
            // A view keeps its base alive; if the base's grad_fn (e.g. CopySlices) owns this
            // node, that is a reference cycle. Keep an alias with the view's autograd state
            // (its history at save time) and version counter, but not the base.
            data_ = graft::detail::raw::alias(t);
            data_.impl_ptr()->autograd = t.impl().autograd;
        }
        version_source_ = is_output || tracked_view(t) != nullptr ? data_ : t;
        if (const auto& ctx = active_mutation_context()) {
            // allow_mutation_on_saved_tensors: register, so an in-place op can swap in a clone.
            entry_ = std::make_shared<mutation_entry>();
            entry_->data = std::move(data_);
            entry_->version_source = std::move(version_source_);
            entry_->saved_version = saved_version_;
            entry_->context = ctx;
            data_ = Tensor{};
            version_source_ = Tensor{};
            std::lock_guard lock(ctx->mutex);
            ctx->add(t.impl().data.get(), entry_);
        }
    }

    /// The saved tensor; `owner` is the node that saved it (re-attached as grad_fn of saved outputs).
    [[nodiscard]] Tensor unpack(const std::shared_ptr<Node>& owner) const {
        if (!defined_) return {};
        graft::detail::check(!released_,
                             "Trying to backward through the graph a second time (or directly access saved tensors "
                             "after they have already been freed). Saved intermediate values of the graph are freed "
                             "when you call backward() or autograd::grad(). Specify retain_graph=true if you need to "
                             "backward through the graph a second time or if you need to access saved tensors after "
                             "calling backward.");
        Tensor value;
        if (hooked_) {
            value = hooked_->unpack(hooked_->packed);
            graft::detail::check(value.defined(), "Output of saved tensor unpack_hook expected to be a Tensor, but "
                                 "the unpack hook returned an undefined tensor");
            graft::detail::check(value.sizes() == sizes_ && value.type() == type_, "saved_tensors_hooks: the unpack "
                                 "hook returned a tensor of shape ", graft::detail::to_string(value.sizes()), " and "
                                 "dtype ", name(value.type()), ", but the saved tensor had shape ",
                                 graft::detail::to_string(sizes_), " and dtype ", name(type_));
            if (hooked_->requires_grad) {
                // Re-attach the unpacked value where the original was (no version counter sharing).
                value = graft::detail::raw::alias(value);
                auto& m = ensure_meta(value);
                m.grad_fn = hooked_->grad_fn;
                m.output_nr = output_nr_;
                m.requires_grad = !hooked_->grad_fn;
                if (hooked_->grad_acc) m.grad_accumulator = hooked_->grad_acc;
            }
        } else {
            Tensor data = data_, version_source = version_source_;
            std::uint64_t saved_version = saved_version_;
            if (entry_) {
                std::lock_guard lock(entry_->context->mutex);
                graft::detail::check(entry_->context->alive, "Trying to backward outside of the "
                                     "'allow_mutation_on_saved_tensors' context in which the graph was originally "
                                     "recorded.");
                data = entry_->data;
                version_source = entry_->version_source;
                saved_version = entry_->saved_version;
            }
            const std::uint64_t now = version_source._version();
            if (now != saved_version) {
                std::string desc = graft::detail::concat("[", name(type_), " ", graft::detail::to_string(sizes_), "]");
                if (grad_fn_name_ != nullptr || is_output_)
                    desc += graft::detail::concat(", which is output ", output_nr_, " of ",
                                                  is_output_ && owner ? owner->name()
                                                  : grad_fn_name_ ? std::string(grad_fn_name_) : std::string(),
                                                  ",");
                graft::detail::fail(graft::detail::concat(
                    "one of the variables needed for gradient computation has been modified by an inplace "
                    "operation: ", desc, " is at version ", now, "; expected version ", saved_version,
                    " instead. Hint: the tensor was saved for backward and then changed in place; clone it "
                    "before the in-place change, or use autograd::allow_mutation_on_saved_tensors."));
            }
            value = data;
        }
        if (is_output_ && owner) {
            // Reattach to the graph so double backward flows through the node that produced it.
            value = graft::detail::raw::alias(value);
            auto& m = ensure_meta(value);
            m.grad_fn = owner;
            m.output_nr = output_nr_;
        }
        return value;
    }

    void release() noexcept {
        data_ = Tensor{};
        version_source_ = Tensor{};
        if (hooked_) hooked_->packed.reset();
        entry_.reset();
        released_ = true;
    }
    [[nodiscard]] bool defined() const noexcept { return defined_; }
    [[nodiscard]] const int_list& sizes() const noexcept { return sizes_; }
    [[nodiscard]] dtype type() const noexcept { return type_; }
    /// The saved tensor as stored (no version check); for tools such as allow_mutation_on_saved_tensors.
    [[nodiscard]] Tensor stored() const {
        if (entry_) {
            std::lock_guard lock(entry_->context->mutex);
            return entry_->data;
        }
        return data_;
    }
    /// Makes `t` the saved value (its current version becomes the expected one).
    void replace_stored(const Tensor& t) {
        if (entry_) {
            std::lock_guard lock(entry_->context->mutex);
            entry_->data = t;
            entry_->version_source = t;
            entry_->saved_version = t._version();
            entry_->cloned = true;
            return;
        }
        data_ = t;
        version_source_ = t;
        saved_version_ = t._version();
    }

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

    Tensor data_;
    Tensor version_source_;
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
