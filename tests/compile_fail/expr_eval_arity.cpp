// ex::evaluate with more arguments than the traced function takes.
// graft-expect-error: graft::expr::evaluate\(e, args...\): the number of arguments must equal
#include <graft/graft.hpp>

int main() {
    auto e = graft::expr::trace<2>([](auto x, auto y) { return x * y; });
    const graft::Tensor x = graft::ones({3});
    (void)graft::expr::evaluate(e, x, x, x);
}
