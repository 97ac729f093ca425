#pragma once
// Definitions for graft/nn/module.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/nn/module.hpp"

#include <algorithm>
#include <ostream>
#include <sstream>

#include "graft/autograd/grad_mode.hpp"
#include "graft/autograd/tensor_methods.hpp"
#include "graft/core/error.hpp"

namespace graft::nn {

/// Module's private parts for the free functions of this file (functional_call).
struct detail_access {
    static std::deque<Module::slot>& parameters(Module& m) { return m.parameters_; }
    static std::deque<Module::slot>& buffers(Module& m) { return m.buffers_; }
    static int& swapped(Module& m) { return m.swapped_; }
};

namespace detail {

using graft::detail::check;

inline bool contains_tensor(const std::vector<Tensor>& seen, const Tensor& t) {
    return std::any_of(seen.begin(), seen.end(), [&](const Tensor& s) { return s.is_same(t); });
}

inline std::string join_dotted(const std::string& prefix, const std::string& name) {
    return prefix.empty() ? name : prefix + "." + name;
}

/// Every (dotted name, slot) of the parameters (or buffers) of `m` and its descendants, each
/// module visited once; with `dedup`, a tensor reached twice is listed once.
template <class Slots>
void collect(Module& m, Slots slots_of, bool recurse, bool dedup, bool persistent_only,
             std::vector<std::pair<std::string, Tensor*>>& out) {
    std::vector<Tensor> seen;
    const auto mods = recurse ? m.named_modules() : std::vector<std::pair<std::string, Module*>>{{"", &m}};
    for (const auto& [prefix, mod] : mods) {
        for (auto& s : slots_of(*mod)) {
            if (!s.value.defined() || (persistent_only && !s.persistent)) continue;
            if (dedup) {
                if (contains_tensor(seen, s.value)) continue;
                seen.push_back(s.value);
            }
            out.emplace_back(join_dotted(prefix, s.name), &s.value);
        }
    }
}

/// The state_dict's entries (parameters then persistent buffers of each module, children
/// after their parent, a child shared by two parents under both names, as PyTorch).
inline void state_entries(Module& m, const std::string& prefix, std::vector<std::pair<std::string, Tensor*>>& out) {
    for (auto& s : detail_access::parameters(m))
        if (s.value.defined()) out.emplace_back(join_dotted(prefix, s.name), &s.value);
    for (auto& s : detail_access::buffers(m))
        if (s.value.defined() && s.persistent) out.emplace_back(join_dotted(prefix, s.name), &s.value);
    for (const auto& [name, child] : m.named_children()) state_entries(*child, join_dotted(prefix, name), out);
}

inline std::string quoted_list(const std::vector<std::string>& keys) {
    std::string r;
    for (std::size_t i = 0; i < keys.size(); ++i) r += (i ? ", \"" : "\"") + keys[i] + "\"";
    return r;
}

/// Restores the slots functional_call replaced, also when forward throws.
class slot_swap {
public:
    slot_swap() = default;
    slot_swap(const slot_swap&) = delete;
    slot_swap& operator=(const slot_swap&) = delete;
    ~slot_swap() {
        for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) *it->first = std::move(it->second);
        for (Module* m : modules_) --detail_access::swapped(*m);
    }
    void lock(Module& root) {
        for (Module* m : root.modules()) {
            ++detail_access::swapped(*m);
            modules_.push_back(m);
        }
    }
    void replace(Tensor* slot, const Tensor& value) {
        saved_.emplace_back(slot, *slot);
        *slot = value;
    }

private:
    std::vector<std::pair<Tensor*, Tensor>> saved_;
    std::vector<Module*> modules_;
};

}  // namespace detail

GRAFT_INLINE Tensor Module::forward(const Tensor&) {
    graft::detail::fail(type_name_ + ".forward: this module has no forward (not implemented for a container; "
                                     "call its elements)");
}

GRAFT_INLINE void Module::check_new_name(const char* what, const std::string& name) const {
    using graft::detail::check;
    check(swapped_ == 0, type_name_, ".register_", what, "(\"", name,
          "\"): cannot register while functional_call has replaced this module's tensors");
    check(!name.empty(), type_name_, ".register_", what, ": ", what, " name can't be empty string \"\"");
    check(name.find('.') == std::string::npos, type_name_, ".register_", what, "(\"", name, "\"): ", what,
          " name can't contain \".\"");
    const auto has = [&](const auto& list) {
        return std::any_of(list.begin(), list.end(), [&](const auto& e) {
            if constexpr (requires { e.name; }) return e.name == name;
            else return e.first == name;
        });
    };
    check(!has(parameters_) && !has(buffers_) && !has(children_), type_name_, ".register_", what, "(\"", name,
          "\"): attribute '", name, "' already exists");
}

GRAFT_INLINE Tensor& Module::register_parameter(std::string name, Tensor tensor, bool requires_grad) {
    check_new_name("parameter", name);
    if (tensor.defined()) {
        graft::detail::check(!requires_grad || is_floating_point(tensor.type()), type_name_, ".register_parameter(\"",
                             name, "\"): only tensors of floating point dtype can require gradients, got ",
                             tensor.type());
        // A leaf with the wanted flag keeps its identity (weight tying registers one tensor twice).
        if (!tensor.is_leaf() || tensor.requires_grad() != requires_grad) {
            tensor = tensor.detach();
            if (requires_grad) tensor.requires_grad_(true);
        }
    }
    parameters_.push_back(slot{std::move(name), std::move(tensor), true});
    return parameters_.back().value;
}

GRAFT_INLINE Tensor& Module::register_buffer(std::string name, Tensor tensor, bool persistent) {
    check_new_name("buffer", name);
    buffers_.push_back(slot{std::move(name), std::move(tensor), persistent});
    return buffers_.back().value;
}

GRAFT_INLINE void Module::register_module_erased(std::string name, std::shared_ptr<Module> module) {
    check_new_name("module", name);
    graft::detail::check(module != nullptr, type_name_, ".register_module(\"", name, "\"): the module is null");
    for (Module* m : module->modules())
        graft::detail::check(m != this, type_name_, ".register_module(\"", name,
                             "\"): the module contains this module (a module cannot be its own descendant)");
    children_.emplace_back(std::move(name), std::move(module));
}

GRAFT_INLINE std::vector<std::pair<std::string, Module*>> Module::named_modules() {
    std::vector<std::pair<std::string, Module*>> out;
    std::vector<Module*> seen;
    const auto walk = [&](auto& self, Module* m, const std::string& prefix) -> void {
        if (std::find(seen.begin(), seen.end(), m) != seen.end()) return;
        seen.push_back(m);
        out.emplace_back(prefix, m);
        for (const auto& [name, child] : m->children_) self(self, child.get(), detail::join_dotted(prefix, name));
    };
    walk(walk, this, "");
    return out;
}

GRAFT_INLINE std::vector<Module*> Module::modules() {
    std::vector<Module*> r;
    for (const auto& e : named_modules()) r.push_back(e.second);
    return r;
}

GRAFT_INLINE named_tensor_list Module::named_parameters(bool recurse) const {
    std::vector<std::pair<std::string, Tensor*>> slots;
    detail::collect(
        const_cast<Module&>(*this), [](Module& m) -> auto& { return m.parameters_; }, recurse, true, false, slots);
    named_tensor_list r;
    r.reserve(slots.size());
    for (auto& [n, t] : slots) r.emplace_back(std::move(n), *t);
    return r;
}

GRAFT_INLINE std::vector<Tensor> Module::parameters(bool recurse) const {
    std::vector<Tensor> r;
    for (auto& e : named_parameters(recurse)) r.push_back(std::move(e.second));
    return r;
}

GRAFT_INLINE named_tensor_list Module::named_buffers(bool recurse) const {
    std::vector<std::pair<std::string, Tensor*>> slots;
    detail::collect(
        const_cast<Module&>(*this), [](Module& m) -> auto& { return m.buffers_; }, recurse, true, false, slots);
    named_tensor_list r;
    for (auto& [n, t] : slots) r.emplace_back(std::move(n), *t);
    return r;
}

GRAFT_INLINE std::vector<Tensor> Module::buffers(bool recurse) const {
    std::vector<Tensor> r;
    for (auto& e : named_buffers(recurse)) r.push_back(std::move(e.second));
    return r;
}

GRAFT_INLINE std::vector<std::shared_ptr<Module>> Module::children() const {
    std::vector<std::shared_ptr<Module>> r;
    for (const auto& e : children_) r.push_back(e.second);
    return r;
}

GRAFT_INLINE std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const {
    return children_;
}

GRAFT_INLINE std::shared_ptr<Module> Module::get_submodule(std::string_view name) const {
    // The shared_ptr of the module itself is not known here: "" is refused.
    graft::detail::check(!name.empty(), type_name_, ".get_submodule: expected a non-empty name");
    const Module* m = this;
    std::shared_ptr<Module> found;
    std::string_view rest = name;
    while (true) {
        const auto dot = rest.find('.');
        const std::string_view part = rest.substr(0, dot);
        const auto it = std::find_if(m->children_.begin(), m->children_.end(),
                                     [&](const auto& e) { return e.first == part; });
        graft::detail::check(it != m->children_.end(), type_name_, ".get_submodule(\"", name, "\"): ",
                             m->type_name_, " has no submodule named '", part, "'");
        found = it->second;
        m = found.get();
        if (dot == std::string_view::npos) return found;
        rest = rest.substr(dot + 1);
    }
}

namespace detail {
inline Tensor& find_slot(const Module& self, Module& owner, std::deque<Module::slot>& slots, std::string_view full,
                         std::string_view leaf, const char* what) {
    const auto it = std::find_if(slots.begin(), slots.end(), [&](const auto& s) { return s.name == leaf; });
    check(it != slots.end() && it->value.defined(), self.type_name(), ".get_", what, "(\"", full, "\"): ",
          owner.type_name(), " has no ", what, " named '", leaf, "'");
    return it->value;
}
}  // namespace detail

GRAFT_INLINE Tensor& Module::get_parameter(std::string_view name) {
    const auto dot = name.rfind('.');
    Module& owner = dot == std::string_view::npos ? *this : *get_submodule(name.substr(0, dot));
    return detail::find_slot(*this, owner, owner.parameters_, name,
                             dot == std::string_view::npos ? name : name.substr(dot + 1), "parameter");
}

GRAFT_INLINE Tensor& Module::get_buffer(std::string_view name) {
    const auto dot = name.rfind('.');
    Module& owner = dot == std::string_view::npos ? *this : *get_submodule(name.substr(0, dot));
    return detail::find_slot(*this, owner, owner.buffers_, name,
                             dot == std::string_view::npos ? name : name.substr(dot + 1), "buffer");
}

GRAFT_INLINE Module& Module::train(bool mode) {
    for (Module* m : modules()) {
        m->training_ = mode;
        m->on_train(mode);
    }
    return *this;
}

GRAFT_INLINE void Module::zero_grad(bool set_to_none) {
    const autograd::no_grad guard;
    for (const Tensor& p : parameters()) {
        const Tensor g = p.grad();
        if (!g.defined()) continue;
        if (set_to_none) p.set_grad(Tensor{});
        else p.set_grad(zeros_like(g));
    }
}

GRAFT_INLINE Module& Module::to(dtype type) {
    graft::detail::check(is_floating_point(type), type_name_, ".to: expected a floating-point dtype, got ", type);
    const autograd::no_grad guard;
    std::vector<std::pair<Tensor, Tensor>> converted;  // old -> new, so tied tensors stay tied
    const auto convert = [&](Tensor& t, bool parameter) {
        if (!t.defined() || !is_floating_point(t.type()) || t.type() == type) return;
        for (const auto& [from, into] : converted)
            if (from.is_same(t)) {
                t = into;
                return;
            }
        Tensor n = t.detach().to(type);
        if (n.shares_storage_with(t)) n = n.clone();
        if (parameter) {
            if (t.requires_grad()) n.requires_grad_(true);
            if (const Tensor g = t.grad(); g.defined()) n.set_grad(g.to(type));
        }
        converted.emplace_back(t, n);
        t = n;
    };
    for (Module* m : modules()) {
        for (auto& s : m->parameters_) convert(s.value, true);
        for (auto& s : m->buffers_) convert(s.value, false);
    }
    return *this;
}

GRAFT_INLINE named_tensor_list Module::state_dict() const {
    std::vector<std::pair<std::string, Tensor*>> entries;
    detail::state_entries(const_cast<Module&>(*this), "", entries);
    named_tensor_list r;
    r.reserve(entries.size());
    for (auto& [n, t] : entries) r.emplace_back(std::move(n), t->detach());
    return r;
}

GRAFT_INLINE load_state_dict_result Module::load_state_dict(const named_tensor_list& list, bool strict) {
    std::map<std::string, Tensor> dict;
    for (const auto& [name, t] : list) {
        const bool fresh = dict.emplace(name, t).second;
        graft::detail::check(fresh, "Error(s) in loading state_dict for ", type_name_, ":\n\tkey \"", name,
                             "\" appears twice in the state_dict.");
    }
    std::vector<std::pair<std::string, Tensor*>> entries;
    detail::state_entries(*this, "", entries);
    load_state_dict_result result;
    std::vector<std::string> mismatches;
    std::vector<std::pair<Tensor*, Tensor>> copies;
    for (const auto& [name, slot] : entries) {
        const auto it = dict.find(name);
        if (it == dict.end()) {
            result.missing_keys.push_back(name);
            continue;
        }
        const Tensor& src = it->second;
        if (!src.defined()) {
            mismatches.push_back(graft::detail::concat("value for ", name, " is an undefined tensor."));
        } else if (src.sizes() != slot->sizes()) {
            mismatches.push_back(graft::detail::concat("size mismatch for ", name, ": copying a param with shape ",
                                                       src.sizes(), " from checkpoint, the shape in current model is ",
                                                       slot->sizes(), "."));
        } else if (src.type() != slot->type() &&
                   (is_floating_point(src.type()) != is_floating_point(slot->type()) ||
                    src.type() == dtype::bool_ || slot->type() == dtype::bool_)) {
            // Within a category the copy converts (a float16 checkpoint into a float32 model,
            // as PyTorch's copy_); across categories it would truncate or invent values.
            mismatches.push_back(graft::detail::concat("dtype mismatch for ", name, ": copying a param of dtype ",
                                                       src.type(), " from checkpoint, the dtype in current model is ",
                                                       slot->type(), " (convert with to() first)."));
        } else {
            copies.emplace_back(slot, src);
        }
    }
    for (const auto& [name, value] : list) {
        const bool known = std::any_of(entries.begin(), entries.end(), [&](const auto& e) { return e.first == name; });
        if (!known) result.unexpected_keys.push_back(name);
    }
    std::string errors;
    if (strict && !result.missing_keys.empty())
        errors += "\n\tMissing key(s) in state_dict: " + detail::quoted_list(result.missing_keys) + ".";
    if (strict && !result.unexpected_keys.empty())
        errors += "\n\tUnexpected key(s) in state_dict: " + detail::quoted_list(result.unexpected_keys) + ".";
    for (const auto& m : mismatches) errors += "\n\t" + m;
    graft::detail::check(errors.empty(), "Error(s) in loading state_dict for ", type_name_, ":", errors);
    const autograd::no_grad guard;
    for (auto& [slot, src] : copies) slot->copy_(src);
    return result;
}

GRAFT_INLINE std::string Module::to_string() const {
    std::string r = type_name_ + "(" + extra_repr();
    if (!children_.empty()) {
        r += "\n";
        for (const auto& [name, child] : children_) {
            std::string c = child->to_string();
            std::string indented;
            for (const char ch : c) {
                indented += ch;
                if (ch == '\n') indented += "  ";
            }
            r += "  (" + name + "): " + indented + "\n";
        }
    }
    return r + ")";
}

GRAFT_INLINE std::ostream& operator<<(std::ostream& os, const Module& m) { return os << m.to_string(); }

GRAFT_INLINE Tensor functional_call(Module& module, const named_tensor_list& tensors, const Tensor& input) {
    std::vector<std::pair<std::string, Tensor*>> params, bufs;
    detail::collect(module, [](Module& m) -> auto& { return detail_access::parameters(m); }, true, false, false, params);
    detail::collect(module, [](Module& m) -> auto& { return detail_access::buffers(m); }, true, false, false, bufs);
    std::vector<std::pair<Tensor*, Tensor>> plan;
    for (const auto& [name, value] : tensors) {
        graft::detail::check(value.defined(), "functional_call: the tensor for \"", name, "\" is undefined");
        bool found = false;
        for (auto* list : {&params, &bufs})
            for (const auto& [n, slot] : *list)
                if (n == name) {
                    plan.emplace_back(slot, value);
                    found = true;
                }
        graft::detail::check(found, "functional_call: ", module.type_name(), " has no parameter or buffer named \"",
                             name, "\"");
    }
    // Tied tensors (one tensor in several slots) are replaced together, as PyTorch's
    // tie_weights=True, unless a slot is given its own value.
    const std::size_t named = plan.size();
    for (std::size_t i = 0; i < named; ++i) {
        const Tensor original = *plan[i].first;
        for (auto* list : {&params, &bufs})
            for (const auto& [n, slot] : *list) {
                const bool given = std::any_of(plan.begin(), plan.end(), [&](const auto& e) { return e.first == slot; });
                if (!given && slot->is_same(original)) plan.emplace_back(slot, plan[i].second);
            }
    }
    detail::slot_swap swap;
    swap.lock(module);
    for (const auto& [slot, value] : plan) swap.replace(slot, value);
    return module.forward(input);
}

GRAFT_INLINE Tensor functional_call(Module& module, std::span<const Tensor> parameters, const Tensor& input) {
    Tensor out;
    detail::with_parameters(module, parameters, [&] { out = module.forward(input); });
    return out;
}

GRAFT_INLINE void detail::with_parameters(Module& module, std::span<const Tensor> parameters,
                                          const std::function<void()>& body, bool with_buffers) {
    std::vector<std::pair<std::string, Tensor*>> slots;
    detail::collect(module, [](Module& m) -> auto& { return detail_access::parameters(m); }, true, false, false, slots);
    // Group the slots by tensor (a tied tensor fills several slots) in parameters()'s order,
    // then buffers()'s.
    std::vector<Tensor> distinct;
    std::vector<std::size_t> group;
    const auto add_groups = [&](std::size_t from) {
        const std::size_t first_distinct = distinct.size();
        for (std::size_t i = from; i < slots.size(); ++i) {
            const Tensor& t = *slots[i].second;
            const auto begin = distinct.begin() + static_cast<std::ptrdiff_t>(first_distinct);
            const auto it = std::find_if(begin, distinct.end(), [&](const Tensor& d) { return d.is_same(t); });
            group.push_back(static_cast<std::size_t>(it - distinct.begin()));
            if (it == distinct.end()) distinct.push_back(t);
        }
    };
    add_groups(0);
    const std::size_t num_parameters = distinct.size();
    if (with_buffers) {
        const std::size_t from = slots.size();
        detail::collect(module, [](Module& m) -> auto& { return detail_access::buffers(m); }, true, false, false,
                        slots);
        add_groups(from);
    }
    graft::detail::check(parameters.size() == distinct.size(), "functional_call: ", module.type_name(), " has ",
                         num_parameters, " parameters",
                         with_buffers ? graft::detail::concat(" and ", distinct.size() - num_parameters, " buffers")
                                      : std::string(),
                         ", got ", parameters.size(), " tensors");
    for (std::size_t i = 0; i < parameters.size(); ++i)
        graft::detail::check(parameters[i].defined(), "functional_call: ", i < num_parameters ? "parameter " : "buffer ",
                             i < num_parameters ? i : i - num_parameters, " is an undefined tensor");
    detail::slot_swap swap;
    swap.lock(module);
    for (std::size_t i = 0; i < slots.size(); ++i) swap.replace(slots[i].second, parameters[group[i]]);
    body();
}

}  // namespace graft::nn
