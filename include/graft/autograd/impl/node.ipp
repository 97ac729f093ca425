#pragma once
// Definitions for graft/autograd/node.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/autograd/node.hpp"

namespace graft::autograd {

GRAFT_INLINE Node::~Node() = default;

GRAFT_INLINE std::string Node::name() const { return name_; }

GRAFT_INLINE std::map<std::string, std::any>& Node::metadata() {
    if (!metadata_) metadata_ = std::make_unique<std::map<std::string, std::any>>();  // rare: allocated on use
    return *metadata_;
}

GRAFT_INLINE hook_handle Node::register_hook(post_hook fn) { return detail::add_hook(hooks().post, std::move(fn)); }

GRAFT_INLINE hook_handle Node::register_prehook(pre_hook fn) { return detail::add_hook(hooks().pre, std::move(fn)); }

GRAFT_INLINE tensor_list Node::operator()(const tensor_list& grad_outputs) {
    tensor_list copy = grad_outputs;
    return apply(std::move(copy));
}

GRAFT_INLINE void Node::release_variables() {}

GRAFT_INLINE std::vector<std::string> Node::describe_saved() const { return {}; }

GRAFT_INLINE void Node::add_next_edge(Edge e) { next_edges_.push_back(std::move(e)); }

GRAFT_INLINE std::uint32_t Node::add_output(const Tensor& t) {
    auto& m = output_meta_.emplace_back();  // filled in place: no temporary int_list
    m.sizes = t.sizes();
    m.type = t.type();
    return static_cast<std::uint32_t>(output_meta_.size() - 1);
}

GRAFT_INLINE detail::hook_list<tensor_hook>& Node::tensor_pre_hooks(std::size_t output_nr) {
    auto& h = hooks();
    if (output_nr >= num_outputs())
        graft::detail::fail(graft::detail::concat(name(), ": output ", output_nr, " of ", num_outputs()));
    if (h.tensor.size() < num_outputs()) h.tensor.resize(num_outputs());
    return h.tensor[output_nr];
}

GRAFT_INLINE std::weak_ptr<graft::detail::tensor_impl>& Node::retain_grad_target(std::size_t output_nr) {
    auto& h = hooks();
    if (output_nr >= num_outputs())
        graft::detail::fail(graft::detail::concat(name(), ": output ", output_nr, " of ", num_outputs()));
    if (h.retain.size() < num_outputs()) h.retain.resize(num_outputs());
    return h.retain[output_nr];
}

GRAFT_INLINE Node::hook_storage& Node::hooks() {
    if (!hooks_) hooks_ = std::make_unique<hook_storage>();
    return *hooks_;
}

namespace detail {

GRAFT_INLINE autograd_meta& ensure_meta(const Tensor& t) {
    (void)t.impl();  // throws on an undefined tensor
    auto& slot = t.impl_ptr()->autograd;
    if (!slot) slot = std::allocate_shared<autograd_meta>(graft::detail::pool_allocator<autograd_meta>{});
    return *slot;
}

}  // namespace detail
}  // namespace graft::autograd
