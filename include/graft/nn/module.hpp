#pragma once
// graft::nn::Module: the base of every layer (torch.nn.Module). A module owns named
// parameters, buffers and child modules in registration order; everything that walks them
// (parameters(), named_parameters(), state_dict(), train(), to(), zero_grad()) does so
// recursively with PyTorch's dotted names ("0.weight", "fc1.bias").
//
// Ownership: modules are held by std::shared_ptr (std::make_shared<nn::Linear>(4, 3)), as
// PyTorch's C++ frontend holds them; a parent keeps shared_ptrs to its children, so a child
// may also be kept (or shared between parents) by the user. Modules cannot be copied or moved
// (a layer's `weight` member refers to its registry slot). forward() is virtual, Tensor to
// Tensor; modules with other signatures define their own call operators. Manual: docs/nn.md.
#include <cstdint>
#include <deque>
#include <iosfwd>
#include <map>
#include <functional>
#include <memory>
#include <ranges>
#include <type_traits>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graft/core/error.hpp"
#include "graft/core/tensor.hpp"

namespace graft::nn {

/// Tensors by name in registration order: what named_parameters(), named_buffers() and
/// state_dict() return (PyTorch's OrderedDict). io::save_file accepts it as it is.
using named_tensor_list = std::vector<std::pair<std::string, Tensor>>;

class Module;

/// load_state_dict's report (PyTorch's _IncompatibleKeys): keys the module has that the
/// dict lacks, and keys the dict has that the module lacks. Always empty after a strict load.
struct load_state_dict_result {
    std::vector<std::string> missing_keys;
    std::vector<std::string> unexpected_keys;
};

class Module {
public:
    /// `type_name` names the module in error messages and printing ("Linear").
    explicit Module(std::string type_name = "Module") : type_name_(std::move(type_name)) {}
    virtual ~Module() = default;
    Module(const Module&) = delete;
    Module& operator=(const Module&) = delete;
    Module(Module&&) = delete;
    Module& operator=(Module&&) = delete;

    /// The module's computation. The base's throws (a container such as ModuleList has none).
    GRAFT_INLINE virtual Tensor forward(const Tensor& input);
    /// forward(input), as calling a PyTorch module.
    Tensor operator()(const Tensor& input) { return forward(input); }

    [[nodiscard]] const std::string& type_name() const noexcept { return type_name_; }

    // ------------------------------------------------------------------ registration
    // Names must be non-empty, contain no '.', and be unique among this module's parameters,
    // buffers and children (PyTorch's KeyErrors); otherwise a graft::error. Registration is
    // refused while functional_call has swapped this module's tensors.

    /// Adds a parameter and returns a reference to its slot (stable for the module's life), so
    /// a layer keeps `Tensor& weight = register_parameter("weight", ...)`. A defined tensor is
    /// made a leaf (detached) that requires grad when `requires_grad` (floating dtypes only);
    /// an undefined one registers an absent parameter (PyTorch's None, skipped by parameters()).
    GRAFT_INLINE Tensor& register_parameter(std::string name, Tensor tensor, bool requires_grad = true);
    /// Adds a buffer (state that is not trained, such as running statistics). Persistent buffers
    /// are part of state_dict(). Undefined tensors register an absent buffer.
    GRAFT_INLINE Tensor& register_buffer(std::string name, Tensor tensor, bool persistent = true);
    /// Adds a child module (non-null, not this module or one of its ancestors: no cycles).
    template <class M>
    std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
        register_module_erased(std::move(name), module);
        return module;
    }

    // ------------------------------------------------------------------ traversal
    // Duplicates (a module or tensor reached twice) are listed once, at their first place, as
    // PyTorch's remove_duplicate=True.

    /// The parameters (this module's, then its children's in order when `recurse`): what an
    /// optimizer takes (graft::optim takes std::vector<Tensor>).
    [[nodiscard]] GRAFT_INLINE std::vector<Tensor> parameters(bool recurse = true) const;
    [[nodiscard]] GRAFT_INLINE named_tensor_list named_parameters(bool recurse = true) const;
    [[nodiscard]] GRAFT_INLINE std::vector<Tensor> buffers(bool recurse = true) const;
    [[nodiscard]] GRAFT_INLINE named_tensor_list named_buffers(bool recurse = true) const;
    /// The direct children.
    [[nodiscard]] GRAFT_INLINE std::vector<std::shared_ptr<Module>> children() const;
    [[nodiscard]] GRAFT_INLINE std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
    /// This module and every descendant, depth first (this module first, name "").
    [[nodiscard]] GRAFT_INLINE std::vector<Module*> modules();
    [[nodiscard]] GRAFT_INLINE std::vector<std::pair<std::string, Module*>> named_modules();

    /// A parameter, buffer or child by (dotted) name; a graft::error naming it when absent.
    [[nodiscard]] GRAFT_INLINE Tensor& get_parameter(std::string_view name);
    [[nodiscard]] GRAFT_INLINE Tensor& get_buffer(std::string_view name);
    [[nodiscard]] GRAFT_INLINE std::shared_ptr<Module> get_submodule(std::string_view name) const;

    // ------------------------------------------------------------------ modes and state

    /// Sets training mode on this module and every descendant (Dropout and norms read it).
    GRAFT_INLINE Module& train(bool mode = true);
    Module& eval() { return train(false); }
    [[nodiscard]] bool is_training() const noexcept { return training_; }

    /// Clears the gradients of every parameter: undefined (set_to_none, the default) or zeroed.
    GRAFT_INLINE void zero_grad(bool set_to_none = true);

    /// Converts floating-point parameters and buffers to `type` (float32 or float64).
    /// Converted parameters are new leaves with the old requires_grad (and converted grads):
    /// as PyTorch with overwrite_module_params_on_conversion, so make optimizers after to().
    GRAFT_INLINE Module& to(dtype type);

    /// Parameters and persistent buffers by dotted name, in registration order, detached
    /// (sharing memory with the module's tensors, as PyTorch's).
    [[nodiscard]] GRAFT_INLINE named_tensor_list state_dict() const;
    /// Copies the dict's values into the module's parameters and persistent buffers in place
    /// (under no_grad, so optimizers holding the parameters keep working). strict: missing or
    /// unexpected keys are an error; shape mismatches always are (dtypes are converted, as
    /// copy_ does; a non-floating value for a floating parameter is an error). Errors list
    /// every problem, as PyTorch's message does, and are found before anything is copied.
    GRAFT_INLINE load_state_dict_result load_state_dict(const named_tensor_list& dict, bool strict = true);
    /// The same from any range of (name, Tensor) pairs, e.g. the std::map io::load_file returns.
    template <std::ranges::input_range R>
        requires(!std::is_same_v<R, named_tensor_list> && requires(std::ranges::range_reference_t<const R> e) {
            { std::string(e.first) };
            { Tensor(e.second) };
        })
    load_state_dict_result load_state_dict(const R& dict, bool strict = true) {
        named_tensor_list list;
        for (const auto& e : dict) list.emplace_back(std::string(e.first), Tensor(e.second));
        return load_state_dict(list, strict);
    }

    /// One line per module, indented by depth: "Sequential(\n  (0): Linear(in_features=...".
    [[nodiscard]] GRAFT_INLINE std::string to_string() const;
    /// The part inside the parentheses of this module's line (PyTorch's extra_repr).
    [[nodiscard]] virtual std::string extra_repr() const { return {}; }

protected:
    /// Called by train() on each module after the flag changed (for layers that cache by mode).
    virtual void on_train(bool /*mode*/) {}

public:
    /// A registry entry (internal: the layout functional_call and state_dict walk).
    struct slot {
        std::string name;
        Tensor value;
        bool persistent = true;
    };

private:
    friend struct detail_access;
    GRAFT_INLINE void register_module_erased(std::string name, std::shared_ptr<Module> module);
    GRAFT_INLINE void check_new_name(const char* what, const std::string& name) const;

    std::string type_name_;
    bool training_ = true;
    int swapped_ = 0;  // > 0 while functional_call has replaced this module's tensors
    std::deque<slot> parameters_;  // a deque: references to slots stay valid as it grows
    std::deque<slot> buffers_;
    std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

/// forward(input) with the module's parameters (and buffers) replaced by the given tensors,
/// the module's own tensors restored afterwards, also on an exception
/// (torch.func.functional_call). By name: any subset of named_parameters()/named_buffers()
/// (an unknown name is an error). By position: exactly parameters()'s tensors, in its order.
/// This is how a module's parameters become graph inputs under jit::script and capture::aot
/// (graft/nn/script.hpp). Not thread-safe for one module (it swaps the module's slots).
[[nodiscard]] GRAFT_INLINE Tensor functional_call(Module& module, const named_tensor_list& tensors, const Tensor& input);
[[nodiscard]] GRAFT_INLINE Tensor functional_call(Module& module, std::span<const Tensor> parameters,
                                                  const Tensor& input);

namespace detail {
/// Runs `body` with `module`'s parameters replaced by `parameters` (parameters()'s order, tied
/// slots together, as the positional functional_call), restored afterwards, also on an exception.
/// with_buffers: `parameters` continues with the buffers (buffers()'s order), replaced too.
GRAFT_INLINE void with_parameters(Module& module, std::span<const Tensor> parameters, const std::function<void()>& body,
                                  bool with_buffers = false);
}  // namespace detail

/// The module tree as text (Module::to_string()).
GRAFT_INLINE std::ostream& operator<<(std::ostream& os, const Module& m);

}  // namespace graft::nn

#if GRAFT_HAS_CODE
#include "graft/nn/impl/module.ipp"
#endif
