// trace<2> of a function of 3 arguments.
// graft-expect-error: graft::expr::trace<N>\(f\): f must be callable with exactly N arguments
#include <graft/expr/expr.hpp>

int main() {
    auto e = graft::expr::trace<2>([](auto x, auto y, auto z) { return x * y + z; });
    (void)e;
}
