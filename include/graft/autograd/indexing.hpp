#pragma once
// PyTorch's full tensor indexing, spelled as libtorch spells it: t.index({...}) is t[...] and
// t.index_put_({...}, v) is t[...] = v, with integers, indexing::Slice(start, stop, step),
// indexing::None, indexing::Ellipsis, bools, int64 index tensors in any position and bool
// masks. Basic indices (integers, slices, None, Ellipsis) make a view; index tensors and masks
// then gather a copy (PyTorch's advanced indexing), with PyTorch's result shapes: the index
// tensors' broadcast shape replaces the indexed dimensions where they are adjacent, and comes
// first where they are not. Differentiable; nonzero() (what a mask becomes) reads the mask's
// values, so a mask cannot be indexed with under graph capture. Manual: docs/tensor.md#indexing.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <type_traits>
#include <variant>
#include <vector>

#include "graft/autograd/advanced_index.hpp"
#include "graft/core/tensor.hpp"

namespace graft {

/// The indices of the non-zero (true) elements of t (torch.nonzero): int64 [n, t.dim()], in
/// row-major order. Not differentiable; reads t's values (refused under graph capture).
[[nodiscard]] GRAFT_INLINE Tensor nonzero(const Tensor& t);

namespace indexing {

/// `None` in an index: a new dimension of size 1 (PyTorch's t[None]); also an absent Slice
/// bound, Slice(None, None, 2) (as libtorch's None, it is std::nullopt).
inline constexpr std::nullopt_t None = std::nullopt;
using none_t = std::nullopt_t;

/// `...` in an index: as many full slices as the other indices leave dimensions.
struct ellipsis_t {
    explicit constexpr ellipsis_t(int) {}
};
inline constexpr ellipsis_t Ellipsis{0};

/// start:stop:step, Python's slice: absent bounds are the ends, negative ones count from the
/// end, out-of-range ones clamp; the step is positive (as PyTorch's).
struct Slice {
    std::optional<std::int64_t> start, stop, step;
    Slice(std::optional<std::int64_t> start_ = std::nullopt, std::optional<std::int64_t> stop_ = std::nullopt,
          std::optional<std::int64_t> step_ = std::nullopt)
        : start(start_), stop(stop_), step(step_) {}
};

/// One entry of an index list: an integer, a Slice, None, Ellipsis, a bool, or a tensor
/// (int64 indices or a bool mask).
class TensorIndex {
public:
    template <class I>
        requires(std::is_integral_v<I> && !std::is_same_v<I, bool>)
    TensorIndex(I i) : value_(static_cast<std::int64_t>(i)) {}  // NOLINT: implicit, as libtorch's
    TensorIndex(bool b) : value_(b) {}                          // NOLINT
    TensorIndex(Slice s) : value_(s) {}                         // NOLINT
    TensorIndex(none_t n) : value_(n) {}                        // NOLINT
    TensorIndex(ellipsis_t e) : value_(e) {}                    // NOLINT
    TensorIndex(Tensor t) : value_(std::move(t)) {}             // NOLINT

    [[nodiscard]] const std::variant<std::int64_t, bool, Slice, none_t, ellipsis_t, Tensor>& value() const noexcept {
        return value_;
    }

private:
    std::variant<std::int64_t, bool, Slice, none_t, ellipsis_t, Tensor> value_;
};

}  // namespace indexing

// The API is Tensor's members (graft/core/tensor.hpp): t.index({...}) and
// t.index_put_({...}, values / number). These are their bodies.
namespace detail {
/// t[indices...]: see the header's comment. A view when every index is basic; otherwise a
/// copy. Errors as PyTorch's: too many indices, more than one Ellipsis, an integer out of
/// range, a zero or negative step, a mask whose shape does not match, an index tensor of
/// another dtype.
[[nodiscard]] GRAFT_INLINE Tensor index_full(const Tensor& t, const std::vector<indexing::TensorIndex>& indices);

/// t[indices...] = values in place: values broadcast to the shape t[indices...] has (and are
/// converted to t's dtype); with index tensors, accumulate adds instead (repeated positions
/// add up). Every index is checked before anything is written. Autograd's in-place rules
/// apply (a leaf that requires grad is refused).
GRAFT_INLINE Tensor& index_put_full(Tensor& t, const std::vector<indexing::TensorIndex>& indices,
                                    const Tensor& values, bool accumulate);
}  // namespace detail

}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/autograd/impl/indexing.ipp"
#endif
