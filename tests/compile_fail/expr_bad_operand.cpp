// An operand of an unsupported type (a string) inside a traced function.
// graft-expect-error: graft::expr: unsupported operand type in a traced expression
#include <graft/expr/expr.hpp>

#include <string>

int main() {
    auto e = graft::expr::trace<1>([](auto x) { return x * std::string("2"); });
    (void)e;
}
