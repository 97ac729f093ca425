// A reduction as an operand of a binary op with a number (mean(x) - 1.0).
// graft-expect-error: graft::expr: a reduction \(sum or mean\) may only be an output of a traced function
#include <graft/expr/expr.hpp>

int main() {
    auto e = graft::expr::trace<1>([](auto x) { return mean(x) - 1.0; });
    (void)e;
}
