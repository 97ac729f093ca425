// Conan test_package: graft's headers, a Tensor op computed by graft's SIMD kernels
// and Boost.Hana work. Returns non-zero on a wrong result. Works with both recipe
// options (header_only=True, and False: GRAFT_COMPILED_LIB, libgraft.a).
#include <graft/graft.hpp>

#include <boost/hana/fold_left.hpp>
#include <boost/hana/tuple.hpp>

#include <cstdio>
#include <vector>

int main() {
    int failures = 0;

    if (graft::broadcast_shapes({3, 1}, {1, 4}) != graft::int_list{3, 4}) {
        std::puts("graft::broadcast_shapes({3,1},{1,4}) != {3,4}");
        ++failures;
    }

    // float32 add and sum run on the dispatched SIMD kernels; 19 elements give full
    // vectors plus a tail on every target. Hand values: (x + x)[i] = 2i, sum = 171.
    const graft::Tensor x = graft::arange(19).to(graft::dtype::float32);
    const std::vector<float> twice = (x + x).to_vector<float>();
    if (twice.size() != 19) {
        std::printf("x + x has %zu elements, expected 19\n", twice.size());
        ++failures;
    } else {
        for (std::size_t i = 0; i < twice.size(); ++i) {
            if (twice[i] != 2.0f * static_cast<float>(i)) {
                std::printf("(x + x)[%zu] = %g, expected %g\n", i, static_cast<double>(twice[i]),
                            2.0 * static_cast<double>(i));
                ++failures;
            }
        }
    }
    const float total = x.sum().item<float>();
    if (total != 171.0f) {
        std::printf("arange(19).sum() = %g, expected 171\n", static_cast<double>(total));
        ++failures;
    }

    constexpr int sum = boost::hana::fold_left(boost::hana::make_tuple(1, 2, 3), 0,
                                               [](int a, int b) { return a + b; });
    static_assert(sum == 6, "Boost.Hana reaches the consumer");

    std::printf("graft test_package (%s, kernels: %s): %s\n",
#ifdef GRAFT_COMPILED_LIB
                "compiled mode",
#else
                "header-only",
#endif
                graft::kernels::target_name(graft::kernels::current_target()),
                failures == 0 ? "OK" : "FAILED");
    return failures == 0 ? 0 : 1;
}
