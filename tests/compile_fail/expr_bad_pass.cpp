// A pipeline element that is not a pass.
// graft-expect-error: graft::expr::pipeline<P...>: every P must be a pass type
#include <graft/expr/expr.hpp>

int main() {
    auto e = graft::expr::trace<1>([](auto x) { return x * 2.0; });
    auto o = graft::expr::optimize<graft::expr::pipeline<graft::expr::cse, int>>(e);
    (void)o;
}
