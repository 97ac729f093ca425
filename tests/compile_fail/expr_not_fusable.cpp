// A non-elementwise op (matmul) inside a traced function: a readable static_assert.
// graft-expect-error: graft::expr: matmul is not fusable
#include <graft/expr/expr.hpp>

int main() {
    auto e = graft::expr::trace<2>([](auto x, auto w) { return matmul(x, w); });
    (void)e;
}
