#pragma once
// Definitions for graft/nn/script.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/nn/script.hpp"

#include <span>

namespace graft::nn {
namespace detail {

GRAFT_INLINE Tensor module_forward::operator()(const std::vector<Tensor>& in) const {
    graft::detail::check(!in.empty(), "nn::script: expected the module's input first");
    Tensor out;
    with_parameters(*module, std::span<const Tensor>(in).subspan(1), [&] { out = module->forward(in[0]); }, true);
    return out;
}

GRAFT_INLINE std::vector<Tensor> module_tensors(const Module& module) {
    std::vector<Tensor> all = module.parameters();
    for (Tensor& b : module.buffers()) all.push_back(std::move(b));
    return all;
}

GRAFT_INLINE std::vector<Tensor> graph_inputs(const Module& module, const Tensor& input) {
    std::vector<Tensor> in = module_tensors(module);
    in.insert(in.begin(), input);
    return in;
}

GRAFT_INLINE std::vector<bool> training_flags(Module& module) {
    std::vector<bool> r;
    for (const Module* m : module.modules()) r.push_back(m->is_training());
    return r;
}

}  // namespace detail

GRAFT_INLINE aot_module::aot_module(std::shared_ptr<Module> module, const Tensor& example_input,
                                    capture::aot_options options)
    : module_(std::move(module)), options_(std::move(options)) {
    graft::detail::check(module_ != nullptr, "nn::aot: the module is null");
    num_parameters_ = detail::module_tensors(*module_).size();
    (void)function(example_input);
    first_ = captures_.last();
}

GRAFT_INLINE const capture::aot_function& aot_module::function(const Tensor& example_input) {
    const std::size_t now = detail::module_tensors(*module_).size();
    graft::detail::check(now == num_parameters_, "nn::aot: ", module_->type_name(), " was captured with ",
                         num_parameters_, " parameter and buffer tensors and has ", now,
                         " now; capture it again with nn::aot");
    return captures_.get(*module_, num_parameters_, [&] {
        return std::make_unique<capture::aot_function>(capture::aot(
            detail::module_forward{module_.get()}, detail::graph_inputs(*module_, example_input), options_));
    });
}

GRAFT_INLINE Tensor aot_module::operator()(const Tensor& input) {
    return function(input)(detail::graph_inputs(*module_, input)).at(0);
}

}  // namespace graft::nn
