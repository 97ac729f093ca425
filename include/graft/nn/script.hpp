#pragma once
// Modules under jit::script and capture::aot, with the parameters as graph inputs.
//
// A lambda that calls `model->forward(x)` captures the parameters as tensors the graph does
// not take as inputs: they are recorded as constants (docs/nn.md#modules-under-jitscript-and-captureaot
// says what that gives). nn::script(model) and nn::aot(model, example) instead trace
// functional_call(model, {p0, p1, ...}, x), with the module's current parameters passed as
// graph inputs on every call: the graph holds no copy of them, an optimizer's in-place update
// is seen by the next call, and backward fills p.grad() of the module's parameters through the
// compiled graph's autograd node. This header bridges nn and the graph layers; <graft/nn.hpp>
// does not include it (<graft/graft.hpp> does).
#include <memory>
#include <optional>
#include <vector>

#include "graft/capture/aot.hpp"
#include "graft/jit/script.hpp"
#include "graft/nn/module.hpp"

namespace graft::nn {

namespace detail {
/// forward(in[0]) with in[1..] as the module's parameters (in parameters() order).
struct module_forward {
    Module* module = nullptr;
    GRAFT_INLINE Tensor operator()(const std::vector<Tensor>& in) const;
};
/// {input, p0, p1, ...}: the graph's inputs for one call.
[[nodiscard]] GRAFT_INLINE std::vector<Tensor> graph_inputs(const Module& module, const Tensor& input);
/// is_training() of the module and each descendant: a capture holds the path one mode takes.
[[nodiscard]] GRAFT_INLINE std::vector<bool> training_flags(Module& module);
}  // namespace detail

/// jit::script of a module's forward, parameters as graph inputs. Keeps the module alive.
class scripted_module {
public:
    scripted_module(std::shared_ptr<Module> module, std::optional<jit::options> o)
        : module_(std::move(module)), fn_(detail::module_forward{checked(module_)}, std::move(o)) {}
    /// forward(input) through the profiling executor. After train()/eval() changed a mode
    /// (which layers such as Dropout read while traced), or parameters were registered, the
    /// captures are flushed and made again.
    Tensor operator()(const Tensor& input) {
        std::vector<Tensor> in = detail::graph_inputs(*module_, input);
        if (auto flags = detail::training_flags(*module_); flags != modes_ || in.size() != inputs_) {
            if (!modes_.empty()) fn_.flush_compilation_cache();
            modes_ = std::move(flags);
            inputs_ = in.size();
        }
        return fn_(in).at(0);
    }
    [[nodiscard]] Module& module() const { return *module_; }
    /// The script function (debug_state(), graph(), flush_compilation_cache()); its inputs are
    /// {input, parameters()...}.
    [[nodiscard]] jit::script_function<detail::module_forward>& function() { return fn_; }

private:
    static Module* checked(const std::shared_ptr<Module>& m) {
        graft::detail::check(m != nullptr, "nn::script: the module is null");
        return m.get();
    }
    std::shared_ptr<Module> module_;
    jit::script_function<detail::module_forward> fn_;
    std::vector<bool> modes_;  // the training flags the current captures were made under
    std::size_t inputs_ = 0;   // and the number of graph inputs (1 + parameters)
};

/// The module's forward as a profiling executor (jit::script) with the process-wide options,
/// or with `o`.
[[nodiscard]] inline scripted_module script(std::shared_ptr<Module> module) {
    return scripted_module(std::move(module), std::nullopt);
}
[[nodiscard]] inline scripted_module script(std::shared_ptr<Module> module, jit::options o) {
    return scripted_module(std::move(module), std::move(o));
}

/// capture::aot of a module's forward at `example_input`, parameters as graph inputs: calls
/// run the forward graph and record one CompiledFunctionBackward node whose backward fills the
/// parameters' grads. A call with another input signature captures again (as capture::aot).
/// options.dynamic_dims index the graph's inputs: input 0 is the module's input. The graphs
/// hold the train/eval mode of the capture: a call after a mode change is a graft::error.
class aot_module {
public:
    GRAFT_INLINE aot_module(std::shared_ptr<Module> module, const Tensor& example_input,
                            capture::aot_options options = {});
    GRAFT_INLINE Tensor operator()(const Tensor& input) const;
    [[nodiscard]] Module& module() const { return *module_; }
    /// The forward and backward graphs (inputs {input, parameters()...}).
    [[nodiscard]] const capture::aot_function& function() const { return fn_; }

private:
    std::shared_ptr<Module> module_;
    capture::aot_function fn_;
    std::vector<bool> modes_;
};

[[nodiscard]] inline aot_module aot(std::shared_ptr<Module> module, const Tensor& example_input,
                                    capture::aot_options options = {}) {
    return aot_module(std::move(module), example_input, std::move(options));
}

}  // namespace graft::nn

#if GRAFT_HAS_GRAPH_CODE
#include "graft/nn/impl/script.ipp"
#endif
