#pragma once
// Definitions for graft/nn/script.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/nn/script.hpp"

#include <span>

namespace graft::nn {
namespace detail {

GRAFT_INLINE Tensor module_forward::operator()(const std::vector<Tensor>& in) const {
    graft::detail::check(!in.empty(), "nn::script: expected the module's input first");
    return functional_call(*module, std::span<const Tensor>(in).subspan(1), in[0]);
}

GRAFT_INLINE std::vector<Tensor> graph_inputs(const Module& module, const Tensor& input) {
    std::vector<Tensor> in = module.parameters();
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
    num_parameters_ = module_->parameters().size();
    (void)function(example_input);
    first_ = captures_.last();
}

GRAFT_INLINE const capture::aot_function& aot_module::function(const Tensor& example_input) {
    graft::detail::check(module_->parameters().size() == num_parameters_, "nn::aot: ", module_->type_name(),
                         " was captured with ", num_parameters_, " parameter tensors and has ",
                         module_->parameters().size(), " now; capture it again with nn::aot");
    return captures_.get(*module_, num_parameters_, [&] {
        return std::make_unique<capture::aot_function>(capture::aot(
            detail::module_forward{module_.get()}, detail::graph_inputs(*module_, example_input), options_));
    });
}

GRAFT_INLINE Tensor aot_module::operator()(const Tensor& input) {
    return function(input)(detail::graph_inputs(*module_, input)).at(0);
}

}  // namespace graft::nn
