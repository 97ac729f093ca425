#pragma once
// Tensors saved for backward: version-checked, freed after backward unless the
// graph is retained, and routed through saved_tensors_hooks when some are active.
#include <any>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graft/autograd/node.hpp"

namespace graft::autograd {

/// pack(tensor) -> anything; unpack(anything) -> tensor. See saved_tensors_hooks.
using pack_hook = std::function<std::any(const Tensor&)>;
using unpack_hook = std::function<Tensor(const std::any&)>;

namespace detail {

struct saved_hooks_state {
    std::vector<std::pair<pack_hook, unpack_hook>> stack;
    std::vector<std::string> disabled;  // messages of active disable_saved_tensors_hooks scopes
};
inline saved_hooks_state& saved_hooks() {
    thread_local saved_hooks_state state;
    return state;
}

}  // namespace detail

/// RAII: while alive, every tensor saved for backward on this thread is passed
/// to `pack` at save time and its result to `unpack` at each use in backward.
/// Guards nest; the innermost wins (torch.autograd.graph.saved_tensors_hooks).
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

/// RAII: registering saved_tensors_hooks in this scope throws graft::error(message).
class disable_saved_tensors_hooks {
public:
    explicit disable_saved_tensors_hooks(std::string message) {
        detail::saved_hooks().disabled.push_back(std::move(message));
    }
    disable_saved_tensors_hooks(const disable_saved_tensors_hooks&) = delete;
    disable_saved_tensors_hooks& operator=(const disable_saved_tensors_hooks&) = delete;
    ~disable_saved_tensors_hooks() { detail::saved_hooks().disabled.pop_back(); }
};

namespace detail {

/// Called when a saved tensor is about to be mutated in place; returns true if
/// the mutation was made safe (allow_mutation_on_saved_tensors clones it).
using mutation_guard_fn = std::function<void(const Tensor&)>;

/// A tensor saved by a node. Outputs of the node itself are stored without their
/// grad_fn (that would be a reference cycle) and re-attached on unpack.
class saved_variable {
public:
    saved_variable() = default;
    saved_variable(const Tensor& t, bool is_output) : defined_(t.defined()), is_output_(is_output) {
        if (!defined_) return;
        saved_version_ = t._version();
        sizes_ = t.sizes();
        type_ = t.type();
        if (const auto* m = meta(t)) {
            output_nr_ = m->output_nr;
            if (m->grad_fn) grad_fn_name_ = m->grad_fn->name();
        }
        auto& hooks = saved_hooks();
        if (!hooks.stack.empty()) {
            unpack_ = hooks.stack.back().second;
            packed_ = hooks.stack.back().first(is_output ? graft::detail::raw::alias(t) : t);
            has_hooks_ = true;
            return;
        }
        // Outputs: keep storage and version counter but not the autograd metadata.
        data_ = is_output ? graft::detail::raw::alias(t) : t;
        version_source_ = t;
        if (is_output) version_source_ = data_;
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
        if (has_hooks_) {
            value = unpack_(packed_);
            graft::detail::check(value.defined() && value.sizes() == sizes_, "saved_tensors_hooks: the unpack hook "
                                 "must return a tensor of the saved shape ", graft::detail::to_string(sizes_));
        } else {
            const std::uint64_t now = version_source_._version();
            if (now != saved_version_) {
                std::string desc = graft::detail::concat("[", name(type_), " ", graft::detail::to_string(sizes_), "]");
                if (!grad_fn_name_.empty() || is_output_)
                    desc += graft::detail::concat(", which is output ", output_nr_, " of ",
                                                  is_output_ && owner ? owner->name() : grad_fn_name_, ",");
                graft::detail::fail(graft::detail::concat(
                    "one of the variables needed for gradient computation has been modified by an inplace "
                    "operation: ", desc, " is at version ", now, "; expected version ", saved_version_,
                    " instead. Hint: the tensor was saved for backward and then changed in place; clone it "
                    "before the in-place change, or use autograd::allow_mutation_on_saved_tensors."));
            }
            value = data_;
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
        packed_.reset();
        released_ = true;
    }
    [[nodiscard]] bool defined() const noexcept { return defined_; }
    [[nodiscard]] const int_list& sizes() const noexcept { return sizes_; }
    [[nodiscard]] dtype type() const noexcept { return type_; }
    /// The saved tensor as stored (no version check); for tools such as allow_mutation_on_saved_tensors.
    [[nodiscard]] const Tensor& stored() const noexcept { return data_; }
    void replace_stored(const Tensor& t) {
        data_ = t;
        version_source_ = t;
        saved_version_ = t._version();
    }

private:
    Tensor data_;
    Tensor version_source_;
    std::any packed_;
    unpack_hook unpack_;
    int_list sizes_;
    dtype type_ = dtype::float32;
    std::uint64_t saved_version_ = 0;
    std::uint32_t output_nr_ = 0;
    std::string grad_fn_name_;
    bool defined_ = false;
    bool is_output_ = false;
    bool has_hooks_ = false;
    bool released_ = false;
};

}  // namespace detail
}  // namespace graft::autograd
