#pragma once
// Joining and splitting tensors, differentiable: cat, stack (torch.cat, torch.stack),
// broadcast_tensors (expand views), and
// the views split, chunk, unbind and flatten (torch.split, chunk, unbind, flatten). Names,
// defaults, negative dims and errors follow PyTorch. Graph capture records cat as one `cat`
// node and the others as the views and cat they are made of (narrow, select, unsqueeze,
// reshape), as PyTorch's decompositions do, so every graph layer runs and differentiates them.
//
// In the eager autograd graph the views of one split, split_with_sizes, chunk or unbind call
// share one backward node, as in PyTorch: SplitBackward0 (split with an int, chunk),
// SplitWithSizesBackward0 (split with a list, split_with_sizes, chunk of an empty dimension)
// or UnbindBackward0, whose output i (output_nr) is view i. Its backward receives all the
// views' gradients (a missing one counts as zeros) and joins them (cat, or stack for unbind).
// Because that node cannot be rebased for one view, such a view (or a view of it) must not be
// modified in place, nor used after its base was, while autograd records (grad mode on and
// something requires grad): a graft::error says so; under no_grad it is allowed.
#include <cstdint>
#include <vector>

#include "graft/autograd/functions.hpp"
#include "graft/ops/cat.hpp"

namespace graft {

/// The tensors joined along `dim` (torch.cat): dtype promoted over the list; every tensor
/// has the same sizes except along `dim`; 1-D tensors of size 0 are skipped (PyTorch's
/// legacy rule). Differentiable (CatBackward0: each input gets its slice of the gradient).
[[nodiscard]] GRAFT_INLINE Tensor cat(const std::vector<Tensor>& tensors, std::int64_t dim = 0);

/// The tensors (all of one size) stacked along a new dimension `dim` (torch.stack):
/// `dim` ranges over [-(rank + 1), rank]; cat of the tensors unsqueezed at `dim`.
[[nodiscard]] GRAFT_INLINE Tensor stack(const std::vector<Tensor>& tensors, std::int64_t dim = 0);

/// The tensors expanded (views, torch.broadcast_tensors) to their common broadcast shape
/// (trailing dimensions aligned, a size 1 stretches). Differentiable through expand (each
/// gradient is summed back to its tensor's sizes). An empty list gives an empty list;
/// an undefined tensor or incompatible shapes are a graft::error.
[[nodiscard]] GRAFT_INLINE std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& tensors);

/// Views of consecutive pieces of `split_size` along `dim` (torch.split with an int); the
/// last piece is smaller when the size does not divide. `split(t, {2, 3})` takes the sizes
/// of the pieces instead (torch.split with a list; they must add up to the size along dim).
/// A braced single number, `split(t, {2})`, is the int form: write `int_list{2}` for a list.
/// The views share one SplitBackward0 (int) or SplitWithSizesBackward0 (list) node.
[[nodiscard]] GRAFT_INLINE std::vector<Tensor> split(const Tensor& t, std::int64_t split_size, std::int64_t dim = 0);
[[nodiscard]] GRAFT_INLINE std::vector<Tensor> split(const Tensor& t, const int_list& split_sizes,
                                                     std::int64_t dim = 0);
/// torch.split_with_sizes: split with the sizes of the pieces (one SplitWithSizesBackward0).
[[nodiscard]] GRAFT_INLINE std::vector<Tensor> split_with_sizes(const Tensor& t, const int_list& split_sizes,
                                                                std::int64_t dim = 0);

/// At most `chunks` views along `dim` (torch.chunk), each of ceil(size / chunks) elements
/// but the last: fewer chunks when that many are not needed (a size of 5 in 4 chunks gives
/// 3 pieces of 2, 2 and 1), `chunks` empty pieces for a size of 0. The views share one
/// SplitBackward0 node (SplitWithSizesBackward0 for a size of 0, as PyTorch).
[[nodiscard]] GRAFT_INLINE std::vector<Tensor> chunk(const Tensor& t, std::int64_t chunks, std::int64_t dim = 0);

/// The views t.select(dim, i) for every i (torch.unbind), sharing one UnbindBackward0 node.
[[nodiscard]] GRAFT_INLINE std::vector<Tensor> unbind(const Tensor& t, std::int64_t dim = 0);

/// The dimensions start_dim..end_dim merged into one (torch.flatten): a view when the
/// strides allow it, else a copy (reshape); a 0-dim tensor becomes 1-D.
[[nodiscard]] GRAFT_INLINE Tensor flatten(const Tensor& t, std::int64_t start_dim = 0, std::int64_t end_dim = -1);

}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/autograd/impl/join_split.ipp"
#endif
