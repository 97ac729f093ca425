// A reduction over some dims inside a traced function: only full reductions are fusable.
// graft-expect-error: graft::expr: only full reductions are fusable: sum\(e\) reduces every element
#include <graft/expr/expr.hpp>

int main() {
    auto e = graft::expr::trace<1>([](auto x) { return sum(exp(x), 0); });
    (void)e;
}
