#pragma once
// einsum for one and two operands (torch.einsum), composed of sum, permute, reshape and
// matmul, so it is differentiable (to any order) and graph capture records those ops.
#include <string_view>
#include <vector>

#include "graft/core/tensor.hpp"

namespace graft {

/// Einstein summation over one or two operands (torch.einsum): "ij,jk->ik", "bij,bjk->bik",
/// "ij,ij->", "i,j->ij", "ij->ji", "bi,bi->b", "ij,kj->ik", ... Letters a-z and A-Z; spaces
/// are ignored; without "->" the output is the letters that appear once, in alphabetical
/// order (PyTorch's implicit form). A letter shared by the operands must have the same size
/// in both (PyTorch also broadcasts size 1; graft refuses). Letters absent from the output
/// are summed. graft::error for malformed equations, an operand count or rank that does not
/// match the equation, output letters that repeat or appear in no input, and size
/// mismatches. Not implemented (graft::error saying so): more than two operands, ellipsis
/// ("..."), and a letter repeated within one operand (diagonals such as "ii->i").
[[nodiscard]] GRAFT_INLINE Tensor einsum(std::string_view equation, const std::vector<Tensor>& operands);
[[nodiscard]] inline Tensor einsum(std::string_view equation, const Tensor& a) { return einsum(equation, std::vector<Tensor>{a}); }
[[nodiscard]] inline Tensor einsum(std::string_view equation, const Tensor& a, const Tensor& b) {
    return einsum(equation, std::vector<Tensor>{a, b});
}

}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/autograd/impl/einsum.ipp"
#endif
