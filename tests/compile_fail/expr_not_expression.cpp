// A traced function that does not return an expression.
// graft-expect-error: graft::expr::trace<N>\(f\): f must return an expression
#include <graft/expr/expr.hpp>

int main() {
    auto e = graft::expr::trace<1>([](auto) { return 1.0; });
    (void)e;
}
