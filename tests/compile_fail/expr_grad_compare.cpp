// The gradient of a comparison output.
// graft-expect-error: graft::expr::grad: an output of the expression is a comparison or logical \(bool\) result, which is not differentiable
#include <graft/expr/expr.hpp>

int main() {
    auto e = graft::expr::trace<2>([](auto x, auto y) { return x < y; });
    auto g = graft::expr::grad<0>(e);
    (void)g;
}
