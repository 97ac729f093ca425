#pragma once
// Definitions for graft/autograd/saved_variable.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/autograd/saved_variable.hpp"

#include <iterator>

namespace graft::autograd {

GRAFT_INLINE saved_tensors_hooks::saved_tensors_hooks(pack_hook pack, unpack_hook unpack) {
    auto& st = detail::saved_hooks();
    graft::detail::check(st.disabled.empty(), st.disabled.empty() ? std::string() : st.disabled.back());
    st.stack.emplace_back(std::move(pack), std::move(unpack));
}

GRAFT_INLINE disable_saved_tensors_hooks::disable_saved_tensors_hooks(std::string message) {
    auto& st = detail::saved_hooks();
    // Disabling while hooks are installed is refused with the same message (as PyTorch does).
    graft::detail::check(st.stack.empty(), message);
    st.disabled.push_back(std::move(message));
}

namespace detail {

GRAFT_INLINE void mutation_context::add(const void* storage_key, const std::shared_ptr<mutation_entry>& e) {
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

GRAFT_INLINE Tensor clone_keeping_history(const Tensor& t) {
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

GRAFT_INLINE void notify_inplace(const Tensor& self) {
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

GRAFT_INLINE saved_variable::saved_variable(const Tensor& t, bool is_output)
    : defined_(t.defined()), is_output_(is_output) {
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
        // As PyTorch: the hook got the saved tensor itself, so an in-place change in it
        // would silently alter what the forward and backward see.
        graft::detail::check(t._version() == saved_version_,
                             "A saved tensor pack hook is modifying its input in place. Tensors provided as input "
                             "to pack hook can not be modified by in-place operations as this can lead to "
                             "unexpected side-effects. Please open an issue if you need to perform in-place "
                             "operations on the input to a pack hook.");
        // Remember where t sits in the graph, so the unpacked tensor can be re-attached
        // (double backward through a saved input works with hooks too).
        if (const auto* m = meta(t); m && !is_output) {
            hooked_->requires_grad = m->requires_grad || m->grad_fn;
            hooked_->grad_fn = m->grad_fn;
            if (!m->grad_fn && m->requires_grad) hooked_->grad_acc = m->grad_accumulator.lock();
        }
        return;
    }
    // Outputs: keep storage and version counter but not the autograd metadata. data_ shares
    // t's version counter in every case, so it is also what unpack checks the version of.
    if (is_output) {
        data_ = graft::detail::raw::alias(t);
    } else if (tracked_view(t) != nullptr) {
        // A view keeps its base alive; if the base's grad_fn (e.g. CopySlices) owns this
        // node, that is a reference cycle. Keep an alias with the view's autograd state
        // (its history at save time) and version counter, but not the base.
        data_ = graft::detail::raw::alias(t);
        data_.impl_ptr()->autograd = t.impl().autograd;
    } else {
        data_ = t;
    }
    if (const auto& ctx = active_mutation_context()) {
        // allow_mutation_on_saved_tensors: register, so an in-place op can swap in a clone.
        entry_ = std::make_shared<mutation_entry>();
        entry_->data = data_;
        entry_->version_source = std::move(data_);
        entry_->saved_version = saved_version_;
        entry_->context = ctx;
        data_ = Tensor{};
        std::lock_guard lock(ctx->mutex);
        ctx->add(t.impl().data.get(), entry_);
    }
}

GRAFT_INLINE Tensor saved_variable::unpack(const std::shared_ptr<Node>& owner) const {
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
        // The saved tensor (or the entry's, copied under its lock) and its version now.
        const Tensor* data = &data_;
        Tensor entry_data;
        std::uint64_t saved_version = saved_version_, now = 0;
        if (entry_) {
            std::lock_guard lock(entry_->context->mutex);
            graft::detail::check(entry_->context->alive, "Trying to backward outside of the "
                                 "'allow_mutation_on_saved_tensors' context in which the graph was originally "
                                 "recorded.");
            entry_data = entry_->data;
            data = &entry_data;
            now = entry_->version_source._version();
            saved_version = entry_->saved_version;
        } else {
            now = data_._version();
        }
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
        if (!is_output_ || !owner) return *data;
        value = *data;
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

GRAFT_INLINE void saved_variable::release() noexcept {
    data_ = Tensor{};
    if (hooked_) hooked_->packed.reset();
    entry_.reset();
    released_ = true;
}

GRAFT_INLINE Tensor saved_variable::stored() const {
    if (entry_) {
        std::lock_guard lock(entry_->context->mutex);
        return entry_->data;
    }
    return data_;
}

GRAFT_INLINE void saved_variable::replace_stored(const Tensor& t) {
    if (entry_) {
        std::lock_guard lock(entry_->context->mutex);
        entry_->data = t;
        entry_->version_source = t;
        entry_->saved_version = t._version();
        entry_->cloned = true;
        return;
    }
    data_ = t;
    saved_version_ = t._version();
}

}  // namespace detail
}  // namespace graft::autograd
