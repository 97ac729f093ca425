// Exits 0 only if graft, found with find_package(graft) or added with add_subdirectory(),
// computes correctly. Shared by the consumer projects under tests/cmake_*/project/, built
// once against graft::graft (header-only) and once against graft::compiled (compiled
// mode; the build then defines GRAFT_CONSUMER_EXPECT_COMPILED). The compiled-mode build
// includes every public header (graft/graft.hpp: an installed package missing one fails
// here; cheap, as compiled mode only declares); the header-only builds include the tensor
// layer, which compiles every SIMD kernel, in half the time of graft.hpp (the whole
// header-only graft.hpp is compiled by tests/single_header).
#ifdef GRAFT_CONSUMER_EXPECT_COMPILED
#include <graft/graft.hpp>
#else
#include <graft/tensor.hpp>
#endif

#include <boost/hana/fold_left.hpp>
#include <boost/hana/tuple.hpp>
#include <hwy/base.h>

#include <cstdio>
#include <vector>

// graft::compiled must bring GRAFT_COMPILED_LIB; graft::graft must not.
#if defined(GRAFT_CONSUMER_EXPECT_COMPILED) && !defined(GRAFT_COMPILED_LIB)
#error "linked graft::compiled, but GRAFT_COMPILED_LIB is not defined"
#elif !defined(GRAFT_CONSUMER_EXPECT_COMPILED) && defined(GRAFT_COMPILED_LIB)
#error "linked graft::graft (header-only), but GRAFT_COMPILED_LIB is defined"
#endif

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

    // The same through Tensor ops: float32 add and sum run on the SIMD kernels.
    const graft::Tensor x = graft::arange(37).to(graft::dtype::float32);
    const std::vector<float> twice = (x + x).to_vector<float>();
    for (int i = 0; i < 37; ++i) {
        if (twice.size() != 37 || twice[static_cast<std::size_t>(i)] != 2.0f * static_cast<float>(i)) {
            std::printf("(x + x)[%d] != %g\n", i, 2.0 * i);
            ++failures;
            break;
        }
    }
    if (x.sum().item<float>() != 666.0f) {  // 0 + 1 + ... + 36
        std::printf("arange(37).sum() = %g, expected 666\n", static_cast<double>(x.sum().item<float>()));
        ++failures;
    }

    // graft's dependencies reach the consumer through graft::graft.
    constexpr int sum = boost::hana::fold_left(boost::hana::make_tuple(1, 2, 3), 0,
                                               [](int p, int q) { return p + q; });
    static_assert(sum == 6);
    static_assert(sizeof(hwy::MakeUnsigned<float>) == 4);

    std::printf("graft consumer (%s, kernels: %s): %s\n",
#ifdef GRAFT_COMPILED_LIB
                "compiled mode",
#else
                "header-only",
#endif
                graft::kernels::target_name(graft::kernels::current_target()), failures == 0 ? "OK" : "FAILED");
    return failures == 0 ? 0 : 1;
}
