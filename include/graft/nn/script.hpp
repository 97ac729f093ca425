#pragma once
// Modules under jit::script and capture::aot, with the parameters and buffers as graph inputs.
//
// nn::script(model) and nn::aot(model, example) trace functional_call(model, {p0, p1, ...}, x),
// with the module's current parameters and buffers passed as graph inputs on every call: the
// graph holds no copy of them, an optimizer's in-place update is seen by the next call, buffers
// a forward writes (BatchNorm's running statistics, num_batches_tracked) are written back into
// the module on every call as eager code writes them, and backward fills
// p.grad() of the module's parameters through the compiled graph's autograd node.
// nn::script(model, fn) and nn::aot(model, fn, examples...) do the same for any function of
// the module and several tensors returning a Tensor, a vector or a tuple of tensors (a VAE's
// forward with a noise input and three outputs). Each train/eval mode of the module tree gets
// its own captures, kept side by side: switching modes reuses them. The objects are movable.
// This header bridges nn and the graph layers; <graft/nn.hpp> does not include it
// (<graft/graft.hpp> does).
#include <memory>
#include <optional>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/capture/aot.hpp"
#include "graft/jit/script.hpp"
#include "graft/nn/module.hpp"

namespace graft::nn {

namespace detail {
/// forward(in[0]) with in[1..] as the module's parameters and buffers (parameters()'s order,
/// then buffers()'s).
struct module_forward {
    Module* module = nullptr;
    GRAFT_INLINE Tensor operator()(const std::vector<Tensor>& in) const;
};
/// parameters() then buffers(): the module's tensors a capture takes as graph inputs, so that
/// the graph reads their current values and writes the buffers a forward updates (BatchNorm's
/// running statistics) back into the module.
[[nodiscard]] GRAFT_INLINE std::vector<Tensor> module_tensors(const Module& module);
/// {input, p0, p1, ..., b0, b1, ...}: the graph's inputs for one call.
[[nodiscard]] GRAFT_INLINE std::vector<Tensor> graph_inputs(const Module& module, const Tensor& input);
/// is_training() of the module and each descendant: a capture holds the path one mode takes.
[[nodiscard]] GRAFT_INLINE std::vector<bool> training_flags(Module& module);

/// fn(module, in[0], ..., in[n - 1]) with in[n..] as the module's tensors: the function a
/// capture of nn::script(model, fn) / nn::aot(model, fn, ...) traces.
template <class M, class Fn>
struct module_call {
    M* module = nullptr;
    std::shared_ptr<const Fn> fn;  // shared: the traced function's address survives moves
    std::size_t num_inputs = 0;

    std::vector<Tensor> operator()(const std::vector<Tensor>& in) const {
        graft::detail::check(in.size() >= num_inputs, "nn::script: expected ", num_inputs, " inputs");
        const std::span<const Tensor> all(in);
        std::vector<Tensor> out;
        with_parameters(
            *module, all.subspan(num_inputs), [&] { out = invoke(all.first(num_inputs)); }, true);
        return out;
    }

private:
    std::vector<Tensor> invoke(std::span<const Tensor> args) const {
        std::vector<Tensor> out;
        bool called = false;
        const auto attempt = [&]<std::size_t... I>(std::index_sequence<I...>) {
            if constexpr (std::is_invocable_v<const Fn&, M&, decltype((void)I, Tensor())...>) {
                if (args.size() == sizeof...(I)) {
                    out = capture::detail::as_outputs((*fn)(*module, args[I]...));
                    called = true;
                }
            }
        };
        [&]<std::size_t... N>(std::index_sequence<N...>) { (attempt(std::make_index_sequence<N>{}), ...); }(
            std::make_index_sequence<9>{});
        graft::detail::check(called, "nn::script: the function cannot be called with the module and ", args.size(),
                             " tensors");
        return out;
    }
};

/// fn(module, tensors...) for inputs Ts (tensors), and what it returns.
template <class Fn, class M, class... Ts>
concept callable_on_module = sizeof...(Ts) > 0 && (std::is_convertible_v<const Ts&, const Tensor&> && ...) &&
                             std::is_invocable_v<const Fn&, M&, decltype((void)sizeof(Ts), Tensor())...>;
template <class Fn, class M, class... Ts>
using module_call_result = std::decay_t<std::invoke_result_t<const Fn&, M&, decltype((void)sizeof(Ts), Tensor())...>>;

/// What fn returns for tensors `out`: the Tensor, the vector, or the tuple.
template <class R>
[[nodiscard]] R as_result(std::vector<Tensor>&& out) {
    if constexpr (std::is_same_v<R, Tensor>) {
        return std::move(out.at(0));
    } else if constexpr (std::is_same_v<R, std::vector<Tensor>>) {
        return std::move(out);
    } else {
        graft::detail::check(out.size() == std::tuple_size_v<R>, "nn::script: expected ", std::tuple_size_v<R>,
                             " outputs, got ", out.size());
        return [&]<std::size_t... I>(std::index_sequence<I...>) {
            return R{std::move(out[I])...};
        }(std::make_index_sequence<std::tuple_size_v<R>>{});
    }
}

/// One value per train/eval mode of a module tree (its training_flags), made on first use and
/// kept side by side (a few modes at most: the oldest goes past max_modes). A change in the
/// number of the module's tensors forgets them all (the graphs' inputs changed).
template <class T>
class per_mode {
public:
    static constexpr std::size_t max_modes = 8;
    template <class Make>
    T& get(Module& module, std::size_t num_parameters, Make&& make) {
        std::vector<bool> modes = training_flags(module);
        if (num_parameters != num_parameters_) {
            entries_.clear();
            num_parameters_ = num_parameters;
        }
        for (auto& [m, v] : entries_)
            if (m == modes) return *v;
        if (entries_.size() == max_modes) entries_.erase(entries_.begin());
        entries_.emplace_back(std::move(modes), std::shared_ptr<T>(make()));
        return *entries_.back().second;
    }
    /// The value of the mode used last (null before any).
    [[nodiscard]] std::shared_ptr<T> last() const { return entries_.empty() ? nullptr : entries_.back().second; }
    [[nodiscard]] std::size_t size() const { return entries_.size(); }

private:
    std::vector<std::pair<std::vector<bool>, std::shared_ptr<T>>> entries_;
    std::size_t num_parameters_ = 0;
};
}  // namespace detail

/// jit::script of a module's forward, parameters and buffers as graph inputs. Keeps the module alive.
class scripted_module {
public:
    scripted_module(std::shared_ptr<Module> module, std::optional<jit::options> o)
        : module_(std::move(module)), options_(std::move(o)) {
        graft::detail::check(module_ != nullptr, "nn::script: the module is null");
    }
    /// forward(input) through the profiling executor of the module's current train/eval mode.
    Tensor operator()(const Tensor& input) { return function()(detail::graph_inputs(*module_, input)); }
    [[nodiscard]] Module& module() const { return *module_; }
    /// The script function of the module's current mode (debug_state(), graph(),
    /// flush_compilation_cache()); its inputs are {input, parameters()..., buffers()...}.
    [[nodiscard]] jit::script_function<detail::module_forward>& function() {
        return plans_.get(*module_, detail::module_tensors(*module_).size(), [&] {
            return std::make_unique<jit::script_function<detail::module_forward>>(detail::module_forward{module_.get()},
                                                                                  options_);
        });
    }
    /// Train/eval modes captured so far (each keeps its plans).
    [[nodiscard]] std::size_t num_modes() const { return plans_.size(); }

private:
    std::shared_ptr<Module> module_;
    std::optional<jit::options> options_;
    detail::per_mode<jit::script_function<detail::module_forward>> plans_;
};

/// jit::script of fn(module, inputs...) (nn::script(model, fn)), the module's parameters and buffers as
/// graph inputs; calls return what fn returns.
template <class M, class Fn>
class scripted_function {
public:
    scripted_function(std::shared_ptr<M> module, Fn fn, std::optional<jit::options> o)
        : module_(std::move(module)), fn_(std::make_shared<const Fn>(std::move(fn))), options_(std::move(o)) {
        graft::detail::check(module_ != nullptr, "nn::script: the module is null");
    }
    template <class... Ts>
        requires detail::callable_on_module<Fn, M, Ts...>
    auto operator()(const Ts&... inputs) {
        using R = detail::module_call_result<Fn, M, Ts...>;
        std::vector<Tensor> in{Tensor(inputs)...};
        const std::vector<Tensor> params = detail::module_tensors(*module_);
        in.insert(in.end(), params.begin(), params.end());
        auto& fn = plans_.get(*module_, params.size(), [&] {
            return std::make_unique<jit::script_function<traced>>(traced{module_.get(), fn_, sizeof...(Ts)}, options_);
        });
        return detail::as_result<R>(fn(in));
    }
    [[nodiscard]] M& module() const { return *module_; }
    [[nodiscard]] std::size_t num_modes() const { return plans_.size(); }

private:
    using traced = detail::module_call<M, Fn>;
    std::shared_ptr<M> module_;
    std::shared_ptr<const Fn> fn_;
    std::optional<jit::options> options_;
    detail::per_mode<jit::script_function<traced>> plans_;
};

/// The module's forward as a profiling executor (jit::script) with the process-wide options,
/// or with `o`.
[[nodiscard]] inline scripted_module script(std::shared_ptr<Module> module) {
    return scripted_module(std::move(module), std::nullopt);
}
[[nodiscard]] inline scripted_module script(std::shared_ptr<Module> module, jit::options o) {
    return scripted_module(std::move(module), std::move(o));
}
/// fn(module, inputs...) as a profiling executor: any number of tensor inputs and outputs.
template <class M, class Fn>
    requires std::is_base_of_v<Module, M>
[[nodiscard]] scripted_function<M, std::decay_t<Fn>> script(std::shared_ptr<M> module, Fn&& fn) {
    return {std::move(module), std::forward<Fn>(fn), std::nullopt};
}
template <class M, class Fn>
    requires std::is_base_of_v<Module, M>
[[nodiscard]] scripted_function<M, std::decay_t<Fn>> script(std::shared_ptr<M> module, Fn&& fn, jit::options o) {
    return {std::move(module), std::forward<Fn>(fn), std::move(o)};
}

/// capture::aot of a module's forward at `example_input`, parameters and buffers as graph inputs: calls
/// run the forward graph and record one CompiledFunctionBackward node whose backward fills the
/// parameters' grads. A call with another input signature captures again (as capture::aot).
/// options.dynamic_dims index the graph's inputs: input 0 is the module's input. A call in
/// another train/eval mode captures that mode (at the call's input) beside the first.
class aot_module {
public:
    GRAFT_INLINE aot_module(std::shared_ptr<Module> module, const Tensor& example_input,
                            capture::aot_options options = {});
    GRAFT_INLINE Tensor operator()(const Tensor& input);
    [[nodiscard]] Module& module() const { return *module_; }
    /// The forward and backward graphs of the current mode (inputs {input, parameters()...,
    /// buffers()...}),
    /// captured at `example_input` for a mode not called yet.
    [[nodiscard]] GRAFT_INLINE const capture::aot_function& function(const Tensor& example_input);
    /// The first capture's graphs (the mode and example of the constructor).
    [[nodiscard]] const capture::aot_function& function() const { return *first_; }
    [[nodiscard]] std::size_t num_modes() const { return captures_.size(); }

private:
    std::shared_ptr<Module> module_;
    capture::aot_options options_;
    detail::per_mode<capture::aot_function> captures_;
    std::shared_ptr<const capture::aot_function> first_;
    std::size_t num_parameters_ = 0;
};

[[nodiscard]] inline aot_module aot(std::shared_ptr<Module> module, const Tensor& example_input,
                                    capture::aot_options options = {}) {
    return aot_module(std::move(module), example_input, std::move(options));
}

/// capture::aot of fn(module, inputs...) (nn::aot(model, fn, examples...)), captured at the
/// examples, the module's parameters and buffers as graph inputs; calls return what fn returns.
template <class M, class Fn>
class aot_function_of {
public:
    template <class... Ts>
    aot_function_of(std::shared_ptr<M> module, Fn fn, capture::aot_options options, const Ts&... examples)
        : module_(std::move(module)), fn_(std::make_shared<const Fn>(std::move(fn))), options_(std::move(options)) {
        graft::detail::check(module_ != nullptr, "nn::aot: the module is null");
        (void)capture_for(std::vector<Tensor>{Tensor(examples)...});
    }
    template <class... Ts>
        requires detail::callable_on_module<Fn, M, Ts...>
    auto operator()(const Ts&... inputs) {
        using R = detail::module_call_result<Fn, M, Ts...>;
        std::vector<Tensor> in{Tensor(inputs)...};
        const capture::aot_function& f = capture_for(in);
        const std::vector<Tensor> params = detail::module_tensors(*module_);
        in.insert(in.end(), params.begin(), params.end());
        return detail::as_result<R>(f(in));
    }
    [[nodiscard]] M& module() const { return *module_; }
    [[nodiscard]] std::size_t num_modes() const { return captures_.size(); }

private:
    const capture::aot_function& capture_for(std::vector<Tensor> in) {
        const std::size_t n = in.size();
        const std::vector<Tensor> params = detail::module_tensors(*module_);
        in.insert(in.end(), params.begin(), params.end());
        return captures_.get(*module_, params.size(), [&] {
            return std::make_unique<capture::aot_function>(
                capture::aot(detail::module_call<M, Fn>{module_.get(), fn_, n}, in, options_));
        });
    }
    std::shared_ptr<M> module_;
    std::shared_ptr<const Fn> fn_;
    capture::aot_options options_;
    detail::per_mode<capture::aot_function> captures_;
};

template <class M, class Fn, class... Ts>
    requires(std::is_base_of_v<Module, M> && sizeof...(Ts) > 0 &&
             (std::is_convertible_v<const Ts&, const Tensor&> && ...))
[[nodiscard]] aot_function_of<M, std::decay_t<Fn>> aot(std::shared_ptr<M> module, Fn&& fn, const Ts&... examples) {
    return aot_function_of<M, std::decay_t<Fn>>(std::move(module), std::forward<Fn>(fn), capture::aot_options{},
                                                examples...);
}

}  // namespace graft::nn

#if GRAFT_HAS_GRAPH_CODE
#include "graft/nn/impl/script.ipp"
#endif
