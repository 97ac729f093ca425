// Single-header check: this TU and single_header_test_2.cpp both include only the
// generated single_include/graft/graft.hpp; linked together they must not clash (ODR,
// duplicate symbols) and must dispatch to the same target.
//
// Build (from the repository root, after `python3 scripts/amalgamate.py`):
//   g++ -std=c++20 -O2 -Isingle_include tests/single_header/single_header_test.cpp
//       tests/single_header/single_header_test_2.cpp -o /tmp/graft_single_header_test
//   /tmp/graft_single_header_test
#include <graft/graft.hpp>
#include <graft/graft.hpp>  // twice on purpose: must be harmless

#include <cmath>
#include <cstdio>
#include <vector>

namespace gk = graft::kernels;

// Defined in single_header_test_2.cpp.
float other_tu_sum(const float* a, std::size_t n);
gk::target other_tu_target();

int main() {
    int failures = 0;
    auto check = [&](bool ok, const char* what) {
        if (!ok) {
            std::printf("FAILED: %s\n", what);
            ++failures;
        }
    };
    std::vector<float> v(1000);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
    const auto targets = gk::available_targets();
    check(!targets.empty(), "available_targets() is not empty");
    for (gk::target t : targets) {
        gk::set_target(t);
        check(gk::current_target() == t, "set_target/current_target");
        check(other_tu_target() == t, "both TUs share one dispatch state");
        check(gk::reduce(gk::reduce_op::sum, v.data(), v.size()) == 499500.0f, "sum in TU 1");
        check(other_tu_sum(v.data(), v.size()) == 499500.0f, "sum in TU 2");
        float e[3] = {0.0f, 1.0f, -1.0f}, out[3];
        gk::unary(gk::unary_op::exp, e, 1, out, 3);
        check(out[0] == 1.0f && std::fabs(out[1] - 2.7182817f) < 1e-6f, "exp");
        float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, c[4];
        gk::matmul(a, 2, b, 2, c, 2, 2, 2, 2);
        check(c[0] == 19 && c[1] == 22 && c[2] == 43 && c[3] == 50, "matmul");
        std::printf("%s ok\n", gk::target_name(t));
    }
    std::printf(failures == 0 ? "single header: all passed\n" : "single header: %d failures\n", failures);
    return failures == 0 ? 0 : 1;
}
