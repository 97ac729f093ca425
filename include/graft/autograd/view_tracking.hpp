#pragma once
// In-place operations on views with autograd, as PyTorch does them:
//
// * every public view op (view, transpose, narrow, select, expand, as_strided, ...)
//   records the view's base and the mode it was created in (track_view);
// * an in-place op on a view rebases the *base's* history onto a CopySlices node,
//   whose backward runs the in-place op's derivative on the view's region of the
//   base's gradient and passes the rest of it through to the base's previous
//   history (rebase_history);
// * a view whose base (or another view of it) was modified in place has a stale
//   grad_fn: it is regenerated lazily, when next asked for, as an
//   AsStridedBackward0 node pointing at the base's current history
//   (refresh_view_grad_fn), like PyTorch 2.x on CPU.
//
// Views here are described by their strided geometry in the shared storage
// (sizes, strides, storage offset), so a view of a view needs no chain of view
// functions: the base's gradient is laid out with the base's strides and the
// view's region is an as_strided window of it.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graft/autograd/functions.hpp"
#include "graft/autograd/view_meta.hpp"

namespace graft::autograd::detail {

// ---------------------------------------------------------------- raw strided helpers

/// A fresh base-sized tensor laid out with the base's strides (so the storage
/// positions of the base's views address the same elements in it), zeroed or not.
[[nodiscard]] GRAFT_INLINE Tensor make_base_layout(dtype type, const strided_geometry& base, bool zero);

/// The view's window in a tensor made by make_base_layout.
[[nodiscard]] GRAFT_INLINE Tensor region_of(const Tensor& buffer, const strided_geometry& base,
                                            const strided_geometry& view);

/// A plain (non-view, contiguous) tensor with the values of `t`.
[[nodiscard]] GRAFT_INLINE Tensor plain(const Tensor& t);

/// dst[i] += src[i] element by element, correct when several elements of dst share
/// a location (an expanded view): each contribution is added.
GRAFT_INLINE void add_elements(const Tensor& dst, const Tensor& src);

/// For graph capture: the row-major index in a base-sized tensor of each element of
/// the view (shaped like the view), so strided reads and writes are recorded as take/put.
[[nodiscard]] GRAFT_INLINE Tensor view_index(const strided_geometry& base, const strided_geometry& view);

// ---------------------------------------------------------------- differentiable strided ops

/// The values of the view's region of `x` (x has the base's sizes, any layout):
/// the forward of as_strided, as a contiguous copy.
GRAFT_INLINE Tensor as_strided_gather(const Tensor& x, const strided_geometry& base, const strided_geometry& view);

/// A base-sized zero tensor with `g` added at the view's positions (summed where the
/// view overlaps itself): the backward of as_strided.
GRAFT_INLINE Tensor as_strided_embed(const Tensor& g, const strided_geometry& base, const strided_geometry& view);

/// `x` (base-sized) with the view's region replaced by `src` (view-sized, the view
/// must not overlap itself): how CopySlices writes the in-place op's gradient back.
GRAFT_INLINE Tensor as_strided_scatter(const Tensor& x, const Tensor& src, const strided_geometry& base,
                                       const strided_geometry& view);

// ---------------------------------------------------------------- CopySlices

/// The base's grad_fn after an in-place op on one of its views (PyTorch's CopySlices).
/// Its next edges are the base's previous history, then the in-place op's other inputs.
/// Backward: the in-place op's derivative `fn` runs on the view's region of the
/// incoming gradient; its result for the view replaces that region, the rest of the
/// gradient passes through unchanged.
class CopySlices final : public Node {
public:
    CopySlices(const Tensor& base, strided_geometry view, std::shared_ptr<function_node> fn);
    /// The node of the in-place op (null once backward released it).
    [[nodiscard]] std::shared_ptr<function_node> fn() const {
        std::lock_guard lock(fn_mutex_);
        return fn_;
    }
    void release_variables() override;
    [[nodiscard]] std::vector<std::string> describe_saved() const override;

protected:
    tensor_list apply(tensor_list&& grads) override;

private:
    strided_geometry base_;
    strided_geometry view_;
    mutable std::mutex fn_mutex_;
    std::shared_ptr<function_node> fn_;
};

// ---------------------------------------------------------------- history updates

/// Makes `node` the grad_fn of `t`, moving a retain_grad() from the old grad_fn to it.
GRAFT_INLINE void set_history_moving_retain(const Tensor& t, const std::shared_ptr<Node>& node);

GRAFT_INLINE void refresh_view_grad_fn(const Tensor& self);

/// After an in-place op wrote `self`, makes `node` (the op's backward, whose first
/// edge is self's previous history) the history of self: directly for a plain
/// tensor; for a view, the base's history becomes a CopySlices around `node` and
/// the view's grad_fn is regenerated from the base (PyTorch's rebase_history).
GRAFT_INLINE void rebase_history(const Tensor& self, const std::shared_ptr<function_node>& node);

/// Marks `out` as a differentiable view of `self` (or of self's base when self is a view).
GRAFT_INLINE void track_view(const Tensor& self, const Tensor& out);

}  // namespace graft::autograd::detail

#if GRAFT_HAS_CODE
#include "graft/autograd/impl/view_tracking.ipp"
#endif
