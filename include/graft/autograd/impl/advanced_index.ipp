#pragma once
// Definitions for graft/autograd/advanced_index.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/autograd/advanced_index.hpp"

#include "graft/autograd/functions.hpp"
#include "graft/autograd/tensor_methods.hpp"
#include "graft/core/factories.hpp"
#include "graft/autograd/view_tracking.hpp"

namespace graft {

namespace autograd::detail {

GRAFT_INLINE Tensor index_backward(const Tensor& g, const int_list& sizes, const std::vector<Tensor>& indices) {
    Tensor out = ops::index_backward(g, sizes, indices);
    auto node = make_node("IndexBackwardBackward0", g);
    if (!node) return out;
    node->backward = [indices](function_node&, const tensor_list& gg, tensor_list& grad_inputs) {
        grad_inputs.push_back(graft::index(gg[0], indices));
    };
    set_history(out, std::move(node));
    return out;
}

/// index_put's gradients: self gets g with the written positions zeroed (g itself with
/// accumulate), values gets g indexed, summed to values' shape.
[[nodiscard]] inline auto index_put_backward(std::vector<Tensor> indices, int_list vsizes, bool accumulate) {
    return [indices = std::move(indices), vsizes = std::move(vsizes), accumulate](
               function_node& n, const tensor_list& g, tensor_list& grad_inputs) {
        if (!n.needs_input_grad(0)) grad_inputs.emplace_back();
        else if (accumulate) grad_inputs.push_back(g[0]);
        else grad_inputs.push_back(graft::index_put(g[0], indices, zeros({}, g[0].type()), false));
        grad_inputs.push_back(n.needs_input_grad(1) ? sum_to_size(graft::index(g[0], indices), vsizes) : Tensor{});
    };
}

}  // namespace autograd::detail

GRAFT_INLINE Tensor index(const Tensor& t, const std::vector<Tensor>& indices) {
    Tensor out = ops::index(t, indices);
    auto node = autograd::detail::make_node("IndexBackward0", t);
    if (!node) return out;
    node->backward = [sizes = t.sizes(), indices](autograd::function_node&, const autograd::tensor_list& g,
                                                  autograd::tensor_list& grad_inputs) {
        grad_inputs.push_back(autograd::detail::index_backward(g[0], sizes, indices));
    };
    autograd::detail::set_history(out, std::move(node));
    return out;
}

GRAFT_INLINE Tensor index_put(const Tensor& t, const std::vector<Tensor>& indices, const Tensor& values,
                              bool accumulate) {
    Tensor out = ops::index_put(t, indices, values, accumulate);
    auto node = autograd::detail::make_node("IndexPutBackward0", t, values);
    if (!node) return out;
    node->backward = autograd::detail::index_put_backward(indices, values.sizes(), accumulate);
    autograd::detail::set_history(out, std::move(node));
    return out;
}

// ---------------------------------------------------------------- methods

GRAFT_INLINE Tensor Tensor::operator[](const Tensor& index) const { return graft::index(*this, {index}); }

GRAFT_INLINE Tensor Tensor::index(const std::vector<Tensor>& indices) const { return graft::index(*this, indices); }

GRAFT_INLINE Tensor Tensor::index_put(const std::vector<Tensor>& indices, const Tensor& values,
                                      bool accumulate) const {
    return graft::index_put(*this, indices, values, accumulate);
}

GRAFT_INLINE Tensor& Tensor::index_put_(const std::vector<Tensor>& indices, const Tensor& values, bool accumulate) {
    autograd::detail::check_inplace("index_put_", *this, autograd::detail::requires_grad(values));
    const Tensor result = ops::index_put(*this, indices, values, accumulate);  // checks every index before the write
    autograd::detail::check_inplace_result("index_put_", *this, result);
    auto node = autograd::detail::make_node("IndexPutBackward0", *this, values);
    if (node) node->backward = autograd::detail::index_put_backward(indices, values.sizes(), accumulate);
    autograd::detail::commit_inplace(*this, result, node);
    return *this;
}

}  // namespace graft
