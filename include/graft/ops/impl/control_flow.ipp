#pragma once
// Definitions for graft/ops/control_flow.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/ops/control_flow.hpp"

namespace graft::detail {

GRAFT_INLINE std::vector<Tensor> cond_impl(const Tensor& pred, const branch_ref& true_branch,
                                           const branch_ref& false_branch, const std::vector<Tensor>& operands) {
    check(pred.defined(), "cond: the predicate is undefined");
    check(pred.numel() == 1 && pred.type() == dtype::bool_, "cond: the predicate must be a one-element bool tensor, got ",
          pred.type(), " of sizes ", pred.sizes(), "; compare first (x.sum() > 0), or pass a C++ bool");
    for (std::size_t i = 0; i < operands.size(); ++i) check(operands[i].defined(), "cond: operand ", i, " is undefined");
    if (op_observer* o = tl_op_observer) return o->on_cond(pred, true_branch, false_branch, operands);
    return pred.item<bool>() ? true_branch(operands) : false_branch(operands);
}

}  // namespace graft::detail
