// A reduction used as an operand (tanh of a sum): reductions may only be outputs.
// graft-expect-error: graft::expr: a reduction \(sum or mean\) may only be an output of a traced function
#include <graft/expr/expr.hpp>

int main() {
    auto e = graft::expr::trace<2>([](auto x, auto w) { return tanh(sum(x * w)); });
    (void)e;
}
