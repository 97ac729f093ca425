// Conan test_package: graft's headers, a dispatched SIMD kernel and Hana work.
#include <graft/core/shape.hpp>
#if __has_include(<graft/kernels/dispatch.hpp>)
#include <graft/kernels/dispatch.hpp>
#define GRAFT_TEST_PACKAGE_KERNELS 1
#endif

#include <boost/hana/fold_left.hpp>
#include <boost/hana/tuple.hpp>

#include <cstdio>

int main() {
    int failures = 0;

    if (graft::broadcast_shapes({3, 1}, {1, 4}) != graft::int_list{3, 4}) {
        std::puts("graft::broadcast_shapes({3,1},{1,4}) != {3,4}");
        ++failures;
    }

#ifdef GRAFT_TEST_PACKAGE_KERNELS
    // 19 elements: full vectors plus a tail on every target.
    float a[19], b[19], out[19];
    for (int i = 0; i < 19; ++i) {
        a[i] = static_cast<float>(i);
        b[i] = 0.5f * static_cast<float>(i);
    }
    graft::kernels::binary(graft::kernels::binary_op::add, a, 1, b, 1, out, 19);
    for (int i = 0; i < 19; ++i) {
        if (out[i] != 1.5f * static_cast<float>(i)) {
            std::printf("graft::kernels::binary(add): out[%d] = %g\n", i, static_cast<double>(out[i]));
            ++failures;
        }
    }
#endif

    constexpr int sum = boost::hana::fold_left(boost::hana::make_tuple(1, 2, 3), 0,
                                               [](int x, int y) { return x + y; });
    static_assert(sum == 6, "Boost.Hana reaches the consumer");

    std::puts(failures == 0 ? "graft test_package: OK" : "graft test_package: FAILED");
    return failures == 0 ? 0 : 1;
}
