#pragma once
// Definitions for graft/autograd/conv.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/autograd/conv.hpp"

#include <utility>

namespace graft {

GRAFT_INLINE Tensor im2col(const Tensor& input, const int_list& kernel_size, const int_list& dilation,
                           const int_list& padding, const int_list& stride) {
    Tensor out = ops::im2col(input, kernel_size, dilation, padding, stride);
    auto node = autograd::detail::make_node("Im2ColBackward0", input);
    if (!node) return out;
    node->backward = [size = int_list{input.size(2), input.size(3)}, kernel_size, dilation, padding, stride](
                         autograd::function_node&, const autograd::tensor_list& g, autograd::tensor_list& grad_inputs) {
        grad_inputs.push_back(graft::col2im(g[0], size, kernel_size, dilation, padding, stride));
    };
    autograd::detail::set_history(out, std::move(node));
    return out;
}

GRAFT_INLINE Tensor col2im(const Tensor& cols, const int_list& output_size, const int_list& kernel_size,
                           const int_list& dilation, const int_list& padding, const int_list& stride) {
    Tensor out = ops::col2im(cols, output_size, kernel_size, dilation, padding, stride);
    auto node = autograd::detail::make_node("Col2ImBackward0", cols);
    if (!node) return out;
    node->backward = [kernel_size, dilation, padding, stride](autograd::function_node&, const autograd::tensor_list& g,
                                                              autograd::tensor_list& grad_inputs) {
        grad_inputs.push_back(graft::im2col(g[0], kernel_size, dilation, padding, stride));
    };
    autograd::detail::set_history(out, std::move(node));
    return out;
}

}  // namespace graft
