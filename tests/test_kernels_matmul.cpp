// matmul on every available target against the wide-accumulating reference.
#include "test_kernels_common.hpp"

using namespace kt;

namespace {

template <class T>
void check_matmul(std::size_t m, std::size_t n, std::size_t k, std::size_t pad, std::uint32_t seed) {
    const std::ptrdiff_t lda = static_cast<std::ptrdiff_t>(k + pad), ldb = static_cast<std::ptrdiff_t>(n + pad),
                         ldc = static_cast<std::ptrdiff_t>(n + 2 * pad > 0 ? n + 2 * pad : 1);
    auto a = make_data<T>(m * static_cast<std::size_t>(lda) + 1, -1, 1, seed, false);
    auto b = make_data<T>(k * static_cast<std::size_t>(ldb) + 1, -1, 1, seed + 7, false);
    const T sentinel = T(-777);
    std::vector<T> c(m * static_cast<std::size_t>(ldc) + 2, sentinel), want(m * static_cast<std::size_t>(ldc) + 2, sentinel);
    // Offsets of one element: unaligned A, B and C.
    gk::matmul(a.data() + 1, lda, b.data() + 1, ldb, c.data() + 1, ldc, m, n, k);
    gk::reference::matmul(a.data() + 1, lda, b.data() + 1, ldb, want.data() + 1, ldc, m, n, k);
    const double eps = std::numeric_limits<T>::epsilon();
    // |err| <= k * eps * sum|a||b| <= k * eps * k (|a|,|b| <= 1); use a 2x margin.
    const double bound = 2.0 * static_cast<double>(k) * eps * static_cast<double>(k > 0 ? k : 1) / 4.0 + 4 * eps;
    std::size_t bad = 0;
    for (std::size_t i = 0; i < c.size(); ++i) {
        const std::size_t row = i == 0 ? 0 : (i - 1) / static_cast<std::size_t>(ldc);
        const std::size_t col = i == 0 ? 0 : (i - 1) % static_cast<std::size_t>(ldc);
        const bool inside = i >= 1 && row < m && col < n;
        if (!inside) {
            if (c[i] != sentinel) ++bad;  // padding must be untouched
        } else if (std::fabs(static_cast<double>(c[i]) - static_cast<double>(want[i])) > bound) {
            ++bad;
        }
    }
    INFO("m " << m << " n " << n << " k " << k << " pad " << pad);
    CHECK(bad == 0);
}

template <class T>
void check_matmul_all_targets() {
    target_guard guard;
    for (gk::target t : gk::available_targets()) {
        gk::set_target(t);
        INFO("target " << gk::target_name(t));
        std::uint32_t seed = 1;
        for (std::size_t m : {0u, 1u, 2u, 5u, 7u, 8u, 9u, 13u, 17u, 33u})
            for (std::size_t n : {0u, 1u, 3u, 15u, 16u, 17u, 31u, 33u, 47u, 48u, 49u, 97u})
                for (std::size_t k : {0u, 1u, 2u, 7u, 16u, 33u})
                    check_matmul<T>(m, n, k, (m + n + k) % 3, seed++);
        // Multiple KC / MC / NC blocks and edge tiles.
        check_matmul<T>(130, 70, 300, 1, seed++);
        check_matmul<T>(67, 129, 513, 0, seed++);
        check_matmul<T>(200, 33, 257, 2, seed++);
        check_matmul<T>(5, 4200, 20, 3, seed++);
    }
}

}  // namespace

TEST_CASE("kernels: matmul float32 odd shapes and leading dims on every target", "[kernels][matmul]") {
    check_matmul_all_targets<float>();
}
TEST_CASE("kernels: matmul float64 odd shapes and leading dims on every target", "[kernels][matmul]") {
    check_matmul_all_targets<double>();
}

TEST_CASE("kernels: matmul k == 0 zeroes C; special values propagate", "[kernels][matmul]") {
    target_guard guard;
    for (gk::target t : gk::available_targets()) {
        gk::set_target(t);
        std::vector<float> c(12, 5.0f);
        gk::matmul(static_cast<const float*>(nullptr), 0, static_cast<const float*>(nullptr), 4, c.data(), 4, 3, 4, 0);
        for (float v : c) CHECK(v == 0.0f);
        const float a[2] = {std::numeric_limits<float>::infinity(), 1.0f};
        const float b[2] = {0.0f, 2.0f};  // inf*0 = NaN
        float out = 0;
        gk::matmul(a, 2, b, 1, &out, 1, 1, 1, 2);
        CHECK(std::isnan(out));
    }
}
