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

GRAFT_INLINE bool loop_condition(const std::vector<Tensor>& c) {
    check(c.size() == 1 && c[0].defined() && c[0].numel() == 1 && c[0].type() == dtype::bool_,
          "while_loop: the condition function must return one one-element bool tensor");
    return c[0].item<bool>();
}

GRAFT_INLINE std::vector<Tensor> while_loop_impl(const branch_ref& cond_fn, const branch_ref& body_fn,
                                                 const std::vector<Tensor>& carried) {
    for (std::size_t i = 0; i < carried.size(); ++i) check(carried[i].defined(), "while_loop: carried value ", i, " is undefined");
    if (op_observer* o = tl_op_observer) return o->on_while_loop(cond_fn, body_fn, carried);
    std::vector<Tensor> state = carried;
    while (loop_condition(cond_fn(state))) {
        std::vector<Tensor> next = body_fn(state);
        check(next.size() == state.size(), "while_loop: the body returns ", next.size(), " tensors for ", state.size(),
              " carried values");
        for (std::size_t i = 0; i < next.size(); ++i)
            if (!next[i].defined() || next[i].type() != state[i].type())
                fail(concat("while_loop: the body returns ",
                            next[i].defined() ? std::string(name(next[i].type())) : std::string("an undefined tensor"),
                            " for carried value ", i, " of ", state[i].type()));
        state = std::move(next);
    }
    return state;
}

}  // namespace graft::detail
