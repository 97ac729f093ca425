#pragma once
// What a differentiable view remembers about its base (PyTorch's
// DifferentiableViewMeta): the base tensor, the mode it was created in and the
// version its grad_fn was computed at. The logic that uses it (rebasing the
// base's history onto CopySlices after an in-place op on a view, regenerating
// a stale view's grad_fn) is in graft/autograd/view_tracking.hpp.
#include <cstdint>
#include <mutex>

#include "graft/core/tensor.hpp"

namespace graft::autograd::detail {

/// How a view was created; views made in no_grad mode must not be modified in
/// place with grad mode enabled (their history cannot be rebased), nor may outputs of a
/// custom Function that are views (rebasing would bypass the Function's backward), nor the
/// views that split, chunk and unbind return together (multi_output_node: they share one
/// backward node, which cannot be rebased for one of them).
enum class creation_meta : std::uint8_t { default_mode, no_grad_mode, in_custom_function, multi_output_node };

/// Set on views made by the public view ops (view, transpose, narrow, select, ...).
struct view_meta {
    Tensor base;  // the root tensor (never itself a tracked view)
    std::uint64_t attr_version = 0;  // version counter value when the view's grad_fn was last valid
    creation_meta creation = creation_meta::default_mode;
    const char* custom_function = nullptr;  // in_custom_function: the Function's name (static storage)
    std::mutex mutex;
};

/// The view metadata of `t`, or null when t is not a tracked (differentiable) view.
[[nodiscard]] inline view_meta* tracked_view(const Tensor& t) noexcept {
    return t.defined() ? t.impl().view.get() : nullptr;
}

/// Recomputes a view's grad_fn when the shared version counter moved since it
/// was set (defined in view_tracking.hpp).
GRAFT_INLINE void refresh_view_grad_fn(const Tensor& view);

inline void refresh_if_view(const Tensor& t) {
    if (tracked_view(t) != nullptr) refresh_view_grad_fn(t);
}

/// Sizes, strides (elements) and storage offset of a strided tensor.
struct strided_geometry {
    int_list sizes;
    int_list strides;
    std::int64_t offset = 0;
};

[[nodiscard]] GRAFT_INLINE strided_geometry geometry_of(const Tensor& t);

/// Largest element position reached relative to the offset, plus one (0 when empty).
[[nodiscard]] GRAFT_INLINE std::int64_t storage_extent(const strided_geometry& g);

/// True when no two elements of the geometry share a memory location.
[[nodiscard]] GRAFT_INLINE bool is_non_overlapping(const strided_geometry& g);

/// Non-overlapping and without holes: every position in [offset, offset + extent) is an element.
[[nodiscard]] inline bool is_dense(const strided_geometry& g) {
    return is_non_overlapping(g) && storage_extent(g) == graft::detail::numel_of(g.sizes);
}

/// True when every element of `view` is an element of the dense `base`.
[[nodiscard]] inline bool lies_within(const strided_geometry& view, const strided_geometry& base) {
    if (graft::detail::numel_of(view.sizes) == 0) return true;
    return view.offset >= base.offset && view.offset + storage_extent(view) <= base.offset + storage_extent(base);
}

}  // namespace graft::autograd::detail

#if GRAFT_HAS_CODE
#include "graft/autograd/impl/view_meta.ipp"
#endif
