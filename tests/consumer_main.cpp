// Exits 0 only if graft, found with find_package(graft) or added with add_subdirectory(),
// computes correctly. Shared by the two consumer projects under tests/cmake_*/project/.
#if __has_include(<graft/graft.hpp>)
#include <graft/graft.hpp>
#endif
#include <graft/core/error.hpp>
#include <graft/core/shape.hpp>
#if __has_include(<graft/kernels/dispatch.hpp>)
#include <graft/kernels/dispatch.hpp>
#define GRAFT_CONSUMER_KERNELS 1
#endif

#include <boost/hana/fold_left.hpp>
#include <boost/hana/tuple.hpp>
#include <hwy/base.h>

#include <cstdio>

int main() {
    int failures = 0;

    // Broadcasting (3,1) with (1,4) gives (3,4); (2) with (3) is an error.
    if (graft::broadcast_shapes({3, 1}, {1, 4}) != graft::int_list{3, 4}) {
        std::puts("broadcast_shapes({3,1},{1,4}) != {3,4}");
        ++failures;
    }
    try {
        (void)graft::broadcast_shapes({2}, {3});
        std::puts("broadcast_shapes({2},{3}) did not throw");
        ++failures;
    } catch (const graft::error&) {
    }

#ifdef GRAFT_CONSUMER_KERNELS
    // A dispatched SIMD kernel; 37 elements leave a tail on every target.
    float a[37], b[37], out[37];
    for (int i = 0; i < 37; ++i) {
        a[i] = static_cast<float>(i);
        b[i] = 0.5f * static_cast<float>(i);
    }
    graft::kernels::binary(graft::kernels::binary_op::add, a, 1, b, 1, out, 37);
    for (int i = 0; i < 37; ++i) {
        if (out[i] != 1.5f * static_cast<float>(i)) {
            std::printf("kernels::binary(add): out[%d] = %g\n", i, static_cast<double>(out[i]));
            ++failures;
        }
    }
#endif

    // graft's dependencies reach the consumer through graft::graft.
    constexpr int sum = boost::hana::fold_left(boost::hana::make_tuple(1, 2, 3), 0,
                                               [](int x, int y) { return x + y; });
    static_assert(sum == 6);
    static_assert(sizeof(hwy::MakeUnsigned<float>) == 4);

    if (failures == 0) std::puts("graft consumer: OK");
    return failures == 0 ? 0 : 1;
}
