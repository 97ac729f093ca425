#pragma once
// Definitions for graft/autograd/view_tracking.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/autograd/view_tracking.hpp"

#include <type_traits>
#include <unordered_map>
#include <utility>

namespace graft::autograd::detail {

GRAFT_INLINE Tensor make_base_layout(dtype type, const strided_geometry& base, bool zero) {
    if (graft::detail::is_contiguous_layout(base.sizes, base.strides))
        return zero ? zeros(base.sizes, type) : empty(base.sizes, type);
    const int_list extent{storage_extent(base)};
    Tensor storage = zero ? zeros(extent, type) : empty(extent, type);
    return graft::detail::raw::as_strided(storage, base.sizes, base.strides, 0);
}

GRAFT_INLINE Tensor region_of(const Tensor& buffer, const strided_geometry& base, const strided_geometry& view) {
    return graft::detail::raw::as_strided(buffer, view.sizes, view.strides,
                                          buffer.storage_offset() + view.offset - base.offset);
}

GRAFT_INLINE Tensor plain(const Tensor& t) {
    return t.is_contiguous() && !t.is_view() ? t : graft::detail::raw::clone(t);
}

GRAFT_INLINE void add_elements(const Tensor& dst, const Tensor& src) {
    const Tensor s = graft::detail::raw::contiguous(graft::detail::raw::to(src, dst.type()));
    graft::detail::visit_dtype(dst.type(), [&](auto z) {
        using T = decltype(z);
        if constexpr (std::is_floating_point_v<T>) {
            T* d = static_cast<T*>(dst.raw_data());
            const T* p = static_cast<const T*>(s.raw_data());
            const std::int64_t n = dst.numel(), rank = dst.dim();
            std::vector<std::int64_t> idx(static_cast<std::size_t>(rank), 0);
            std::int64_t pos = 0;
            for (std::int64_t k = 0; k < n; ++k) {
                d[pos] += p[k];
                for (std::int64_t j = rank - 1; j >= 0; --j) {
                    const auto uj = static_cast<std::size_t>(j);
                    if (++idx[uj] < dst.sizes()[uj]) {
                        pos += dst.strides()[uj];
                        break;
                    }
                    pos -= (dst.sizes()[uj] - 1) * dst.strides()[uj];
                    idx[uj] = 0;
                }
            }
        } else {
            graft::detail::fail(graft::detail::concat("as_strided backward: expected a floating-point gradient, got ",
                                                      dst.type()));
        }
    });
}

GRAFT_INLINE Tensor view_index(const strided_geometry& base, const strided_geometry& view) {
    const auto walk = [](const strided_geometry& g, auto&& visit) {
        std::int64_t n = 1;
        for (auto s : g.sizes) n *= s;
        std::vector<std::int64_t> i(g.sizes.size(), 0);
        for (std::int64_t k = 0; k < n; ++k) {
            std::int64_t p = g.offset;
            for (std::size_t d = 0; d < i.size(); ++d) p += i[d] * g.strides[d];
            visit(k, p);
            for (std::size_t d = i.size(); d-- > 0;) {
                if (++i[d] < g.sizes[d]) break;
                i[d] = 0;
            }
        }
    };
    std::unordered_map<std::int64_t, std::int64_t> logical;
    walk(base, [&](std::int64_t k, std::int64_t p) { logical.emplace(p, k); });
    Tensor idx = empty(view.sizes, dtype::int64);
    auto* out = idx.data_ptr<std::int64_t>();
    walk(view, [&](std::int64_t k, std::int64_t p) {
        auto it = logical.find(p);
        graft::detail::check(it != logical.end(), "capture: a view (sizes ", view.sizes, ", strides ", view.strides,
                             ", offset ", view.offset, ") reaches memory outside the tensor it was traced from; "
                             "not supported");
        out[k] = it->second;
    });
    return idx;
}

GRAFT_INLINE Tensor as_strided_gather(const Tensor& x, const strided_geometry& base, const strided_geometry& view) {
    const graft::detail::observed_op obs;  // recorded as take(x, index) by graph capture
    Tensor buffer = make_base_layout(x.type(), base, false);
    graft::detail::copy_elements(buffer, x);
    Tensor out = graft::detail::raw::clone(region_of(buffer, base, view));
    if (obs.active()) obs.record("take", {x, view_index(base, view)}, out);
    auto node = make_node("AsStridedBackward0", x);
    if (!node) return out;
    node->backward = [base, view](function_node&, const tensor_list& g) -> tensor_list {
        return {as_strided_embed(g[0], base, view)};
    };
    set_history(out, node);
    return out;
}

GRAFT_INLINE Tensor as_strided_embed(const Tensor& g, const strided_geometry& base, const strided_geometry& view) {
    const graft::detail::observed_op obs;  // recorded as put(zeros, index, g, accumulate) by graph capture
    Tensor buffer = make_base_layout(g.type(), base, true);
    const Tensor region = region_of(buffer, base, view);
    if (is_non_overlapping(view)) graft::detail::copy_elements(region, graft::detail::raw::broadcast_to(g, view.sizes));
    else add_elements(region, graft::detail::raw::broadcast_to(g, view.sizes));
    Tensor out = plain(buffer);
    if (obs.active())
        obs.record("put", {zeros(base.sizes, g.type()), view_index(base, view), g}, out, {{"accumulate", true}});
    auto node = make_node("AsStridedBackwardBackward0", g);
    if (!node) return out;
    node->backward = [base, view](function_node&, const tensor_list& gg) -> tensor_list {
        return {as_strided_gather(gg[0], base, view)};
    };
    set_history(out, node);
    return out;
}

GRAFT_INLINE Tensor as_strided_scatter(const Tensor& x, const Tensor& src, const strided_geometry& base,
                                       const strided_geometry& view) {
    const graft::detail::observed_op obs;  // recorded as put(x, index, src) by graph capture
    Tensor buffer = make_base_layout(x.type(), base, false);
    graft::detail::copy_elements(buffer, x);
    graft::detail::copy_elements(region_of(buffer, base, view), graft::detail::raw::broadcast_to(src, view.sizes));
    Tensor out = plain(buffer);
    if (obs.active()) obs.record("put", {x, view_index(base, view), src}, out);
    auto node = make_node("AsStridedScatterBackward0", x, src);
    if (!node) return out;
    const dtype src_type = src.type();
    node->backward = [base, view, src_type](function_node& n, const tensor_list& g) -> tensor_list {
        Tensor gx, gs;
        if (n.needs_input_grad(0)) gx = as_strided_scatter(g[0], zeros(view.sizes, g[0].type()), base, view);
        if (n.needs_input_grad(1)) gs = as_strided_gather(g[0], base, view).to(src_type);
        return {gx, gs};
    };
    set_history(out, node);
    return out;
}

GRAFT_INLINE CopySlices::CopySlices(const Tensor& base, strided_geometry view, std::shared_ptr<function_node> fn)
    : Node("CopySlices"), base_(geometry_of(base)), view_(std::move(view)), fn_(std::move(fn)) {
    add_next_edge(gradient_edge(base));
    const auto& edges = fn_->next_functions();
    for (std::size_t i = 1; i < edges.size(); ++i) add_next_edge(edges[i]);
}

GRAFT_INLINE void CopySlices::release_variables() {
    std::lock_guard lock(fn_mutex_);
    if (fn_) fn_->release_variables();
    fn_.reset();
}

GRAFT_INLINE std::vector<std::string> CopySlices::describe_saved() const {
    auto f = fn();
    return f ? f->describe_saved() : std::vector<std::string>{};
}

GRAFT_INLINE tensor_list CopySlices::apply(tensor_list&& grads) {
    tensor_list out(next_functions().size());
    const Tensor g = grads.empty() ? Tensor{} : grads[0];
    if (!g.defined()) return out;
    const std::shared_ptr<function_node> f = fn();
    graft::detail::check(f != nullptr,
                         "Trying to backward through the graph a second time (or directly access saved tensors "
                         "after they have already been freed). Saved intermediate values of the graph are freed "
                         "when you call backward() or autograd::grad(). Specify retain_graph=true if you need to "
                         "backward through the graph a second time or if you need to access saved tensors after "
                         "calling backward.");
    tensor_list res = (*f)({as_strided_gather(g, base_, view_)});
    res.resize(f->next_functions().size());
    if (next_functions()[0].valid()) {
        const Tensor slice = res[0].defined() ? res[0] : zeros(view_.sizes, g.type());
        out[0] = as_strided_scatter(g, slice, base_, view_);
    }
    for (std::size_t i = 1; i < out.size() && i < res.size(); ++i) out[i] = res[i];
    return out;
}

GRAFT_INLINE void set_history_moving_retain(const Tensor& t, const std::shared_ptr<Node>& node) {
    auto& m = ensure_meta(t);
    const bool retained = m.retains_grad;
    if (retained && m.grad_fn && m.grad_fn->has_hooks() && m.output_nr < m.grad_fn->num_outputs())
        m.grad_fn->retain_grad_target(m.output_nr).reset();  // the old node no longer fills .grad
    set_history(t, node);
    if (retained) node->retain_grad_target(m.output_nr) = t.impl_ptr();
}

GRAFT_INLINE void refresh_view_grad_fn(const Tensor& self) {
    view_meta& vm = *tracked_view(self);
    std::lock_guard lock(vm.mutex);
    const auto* m = meta(self);
    if (!(m && m->grad_fn) && !requires_grad(vm.base)) return;
    const std::uint64_t now = self._version();
    if (vm.attr_version == now) return;
    handle_view_on_rebase(vm, self, nullptr, true);
    check_rebase_supported("view", self, vm.base);
    auto node = std::make_shared<function_node>("AsStridedBackward0");
    node->add_next_edge(gradient_edge(vm.base));
    const strided_geometry base = geometry_of(vm.base), view = geometry_of(self);
    node->backward = [base, view](function_node&, const tensor_list& g) -> tensor_list {
        return {as_strided_embed(g[0], base, view)};
    };
    set_history_moving_retain(self, node);
    vm.attr_version = now;
}

GRAFT_INLINE void rebase_history(const Tensor& self, const std::shared_ptr<function_node>& node) {
    view_meta* vm = tracked_view(self);
    if (vm == nullptr) {
        set_history_moving_retain(self, node);
        return;
    }
    node->add_output(self);
    const Tensor base = vm->base;
    set_history_moving_retain(base, std::make_shared<CopySlices>(base, geometry_of(self), node));
    refresh_view_grad_fn(self);
}

GRAFT_INLINE void track_view(const Tensor& self, const Tensor& out) {
    if (!is_floating_point(out.type()) || !out.shares_storage_with(self)) return;
    auto vm = std::make_shared<view_meta>();
    const creation_meta mode = is_grad_enabled() ? creation_meta::default_mode : creation_meta::no_grad_mode;
    if (const view_meta* parent = tracked_view(self)) {
        vm->base = parent->base;
        vm->creation = mode == creation_meta::default_mode ? parent->creation : mode;
    } else {
        vm->base = self;
        vm->creation = mode;
    }
    vm->attr_version = out._version();
    out.impl_ptr()->view = std::move(vm);
}

}  // namespace graft::autograd::detail
