// Exits 0 only if graft, found with find_package(graft), computes correctly.
#if __has_include(<graft/graft.hpp>)
#include <graft/graft.hpp>
#endif
#include <graft/core/error.hpp>
#include <graft/core/shape.hpp>

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

    // graft's dependencies reach the consumer through graft::graft.
    constexpr int sum = boost::hana::fold_left(boost::hana::make_tuple(1, 2, 3), 0,
                                               [](int a, int b) { return a + b; });
    static_assert(sum == 6);
    static_assert(sizeof(hwy::MakeUnsigned<float>) == 4);

    if (failures == 0) std::puts("graft consumer: OK");
    return failures == 0 ? 0 : 1;
}
