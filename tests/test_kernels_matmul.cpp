// matmul on every available target against the wide-accumulating reference.
#include "test_kernels_common.hpp"

#include <algorithm>
#include <array>

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

TEST_CASE("kernels: matmul k == 0 zeroes C, special values propagate", "[kernels][matmul]") {
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

namespace {

// A and B stored transposed (column-major), read through row and column strides: the result
// must be bitwise that of the contiguous form on the same values (the packed panels are the
// same numbers in the same order).
template <class T>
void check_strided_matmul_all_targets() {
    target_guard guard;
    std::uint32_t seed = 11;
    for (gk::target t : gk::available_targets()) {
        gk::set_target(t);
        for (const auto& [m, n, k] : {std::array<std::size_t, 3>{1, 1, 1}, {7, 5, 3}, {128, 32, 2}, {2, 32, 128},
                                      {33, 70, 129}, {130, 17, 300}}) {
            const auto a = make_data<T>(m * k, -1, 1, seed++, false);  // row-major m x k
            const auto b = make_data<T>(k * n, -1, 1, seed++, false);  // row-major k x n
            std::vector<T> at(k * m), bt(n * k);                        // the same values, column-major
            for (std::size_t i = 0; i < m; ++i)
                for (std::size_t p = 0; p < k; ++p) at[p * m + i] = a[i * k + p];
            for (std::size_t p = 0; p < k; ++p)
                for (std::size_t j = 0; j < n; ++j) bt[j * k + p] = b[p * n + j];
            const auto sm = static_cast<std::ptrdiff_t>(m), sk = static_cast<std::ptrdiff_t>(k),
                       sn = static_cast<std::ptrdiff_t>(n);
            std::vector<T> want(m * n), got(m * n);
            gk::matmul(a.data(), sk, b.data(), sn, want.data(), sn, m, n, k);
            for (int which = 1; which <= 3; ++which) {  // A transposed, B transposed, both
                std::fill(got.begin(), got.end(), T(-1));
                const bool ta = which & 1, tb = which & 2;
                gk::matmul(ta ? at.data() : a.data(), ta ? 1 : sk, ta ? sm : 1, tb ? bt.data() : b.data(), tb ? 1 : sn,
                           tb ? sk : 1, got.data(), sn, m, n, k);
                INFO("target " << gk::target_name(t) << " m " << m << " n " << n << " k " << k << " A^T " << ta
                               << " B^T " << tb);
                CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(T)) == 0);
            }
        }
    }
}

}  // namespace

TEST_CASE("kernels: matmul reads transposed operands through strides, bitwise as contiguous", "[kernels][matmul]") {
    check_strided_matmul_all_targets<float>();
    check_strided_matmul_all_targets<double>();
}

namespace {

// Matrix-vector shapes take their own path; it must give the bits the blocked path gives to
// the same column (row) of a two-column (two-row) product, for every operand layout.
template <class T>
void check_matvec_matches_blocked() {
    target_guard guard;
    std::uint32_t seed = 101;
    for (gk::target t : gk::available_targets()) {
        gk::set_target(t);
        for (const auto& [len, k] : {std::array<std::size_t, 2>{1, 1}, {5, 3}, {128, 32}, {37, 300}, {200, 600}}) {
            const auto sl = static_cast<std::ptrdiff_t>(len), sk = static_cast<std::ptrdiff_t>(k);
            // n == 1: A [len x k] row-major and column-major, B [k x 2] (column 0 is the vector).
            const auto a = make_data<T>(len * k, -1, 1, seed++, false);
            const auto b2 = make_data<T>(k * 2, -1, 1, seed++, false);
            std::vector<T> at(k * len), bcol(k);
            for (std::size_t i = 0; i < len; ++i)
                for (std::size_t p = 0; p < k; ++p) at[p * len + i] = a[i * k + p];
            for (std::size_t p = 0; p < k; ++p) bcol[p] = b2[p * 2];
            std::vector<T> wide(len * 2), got(len);
            gk::matmul(a.data(), sk, b2.data(), 2, wide.data(), 2, len, 2, k);
            for (bool transposed : {false, true}) {
                gk::matmul(transposed ? at.data() : a.data(), transposed ? 1 : sk, transposed ? sl : 1, bcol.data(), 1, 1,
                           got.data(), 1, len, 1, k);
                bool same = true;
                for (std::size_t i = 0; i < len; ++i) same = same && std::memcmp(&got[i], &wide[i * 2], sizeof(T)) == 0;
                INFO("n == 1: target " << gk::target_name(t) << " m " << len << " k " << k << " A^T " << transposed);
                CHECK(same);
            }
            // m == 1: A [2 x k] (row 0 is the vector), B [k x len] row-major and column-major.
            const auto a2 = make_data<T>(2 * k, -1, 1, seed++, false);
            const auto b = make_data<T>(k * len, -1, 1, seed++, false);
            std::vector<T> bt(len * k);
            for (std::size_t p = 0; p < k; ++p)
                for (std::size_t j = 0; j < len; ++j) bt[j * k + p] = b[p * len + j];
            std::vector<T> tall(2 * len), row(len);
            gk::matmul(a2.data(), sk, b.data(), sl, tall.data(), sl, 2, len, k);
            for (bool transposed : {false, true}) {
                gk::matmul(a2.data(), sk, 1, transposed ? bt.data() : b.data(), transposed ? 1 : sl, transposed ? sk : 1,
                           row.data(), sl, 1, len, k);
                INFO("m == 1: target " << gk::target_name(t) << " n " << len << " k " << k << " B^T " << transposed);
                CHECK(std::memcmp(row.data(), tall.data(), len * sizeof(T)) == 0);
            }
        }
    }
}

}  // namespace

TEST_CASE("kernels: matrix-vector products are bitwise the blocked path's", "[kernels][matmul]") {
    check_matvec_matches_blocked<float>();
    check_matvec_matches_blocked<double>();
}

TEST_CASE("kernels: narrow products (n <= 2 vectors) give the bits of wider ones on their columns", "[kernels][matmul]") {
    // Narrow B may take another register blocking; every column is the same FMA chain.
    target_guard guard;
    for (gk::target t : gk::available_targets()) {
        gk::set_target(t);
        for (const auto& [m, k] : {std::array<std::size_t, 2>{128, 32}, {37, 300}, {5, 2}}) {
            for (std::size_t n : {2u, 8u, 16u, 31u, 32u}) {
                const std::size_t wide = 97;
                const auto a = make_data<float>(m * k, -1, 1, static_cast<std::uint32_t>(m + k + n), false);
                const auto b = make_data<float>(k * wide, -1, 1, static_cast<std::uint32_t>(m * k + n), false);
                std::vector<float> cw(m * wide), cn(m * n);
                gk::matmul(a.data(), static_cast<std::ptrdiff_t>(k), b.data(), static_cast<std::ptrdiff_t>(wide), cw.data(),
                           static_cast<std::ptrdiff_t>(wide), m, wide, k);
                // The first n columns of B, read in place (row stride `wide`).
                gk::matmul(a.data(), static_cast<std::ptrdiff_t>(k), b.data(), static_cast<std::ptrdiff_t>(wide), cn.data(),
                           static_cast<std::ptrdiff_t>(n), m, n, k);
                bool same = true;
                for (std::size_t i = 0; i < m; ++i)
                    same = same && std::memcmp(&cn[i * n], &cw[i * wide], n * sizeof(float)) == 0;
                INFO("target " << gk::target_name(t) << " m " << m << " n " << n << " k " << k);
                CHECK(same);
            }
        }
    }
}

namespace {

// Widths that are not multiples of a register panel (48 floats on AVX3, 24 doubles, 16 / 8 on
// AVX2, 4 on SCALAR): the last partial panel of B runs a narrower micro-kernel than the others.
// Each product is checked against a double-precision sum within the dot-product bound, and
// bitwise against three other routes to the same FMA chains: (1) each column alone (n == 1,
// the matrix-vector path, no panels at all); (2) the same columns inside a product whose width
// is a multiple of 48 (every panel full width, extra columns random); (3) B stored column-major
// (the transposed packing route). k > 256 makes several KC slices accumulate into C; m > MC
// (128 floats) several row blocks, and m not a multiple of MR row-edge tiles.
template <class T>
void check_partial_panels_all_targets() {
    target_guard guard;
    const double eps = std::numeric_limits<T>::epsilon();
    for (gk::target t : gk::available_targets()) {
        gk::set_target(t);
        std::uint32_t seed = 1001;
        for (const auto& [m, k] : {std::array<std::size_t, 2>{2, 33}, {9, 1}, {9, 300}, {37, 17}, {37, 513}, {130, 260}}) {
            for (std::size_t n : {1u, 15u, 16u, 17u, 31u, 32u, 33u, 47u, 48u, 49u, 95u, 96u, 97u, 128u, 130u, 256u}) {
                if (m == 130 && n % 32 != 0 && n != 1 && n != 17 && n != 130) continue;  // keep the big rows cheap
                const std::size_t wide = (n + 47) / 48 * 48 + 48;  // all panels full, on every target
                const auto sk = static_cast<std::ptrdiff_t>(k), sn = static_cast<std::ptrdiff_t>(n),
                           sw = static_cast<std::ptrdiff_t>(wide);
                const auto a = make_data<T>(m * k, -1, 1, seed++, false);
                const auto bw = make_data<T>(k * wide, -1, 1, seed++, false);  // k x wide; B = its first n columns
                std::vector<T> b(k * n), bt(n * k);
                for (std::size_t p = 0; p < k; ++p)
                    for (std::size_t j = 0; j < n; ++j) b[p * n + j] = bt[j * k + p] = bw[p * wide + j];
                std::vector<T> c(m * n), cw(m * wide), ct(m * n, T(-1)), col(m);
                gk::matmul(a.data(), sk, b.data(), sn, c.data(), sn, m, n, k);
                gk::matmul(a.data(), sk, bw.data(), sw, cw.data(), sw, m, wide, k);
                gk::matmul(a.data(), sk, 1, bt.data(), 1, sk, ct.data(), sn, m, n, k);
                std::size_t far = 0, not_wide = 0, not_col = 0;
                for (std::size_t i = 0; i < m; ++i)
                    for (std::size_t j = 0; j < n; ++j) {
                        double s = 0, sabs = 0;
                        for (std::size_t p = 0; p < k; ++p) {
                            const double x = static_cast<double>(a[i * k + p]) * static_cast<double>(b[p * n + j]);
                            s += x;
                            sabs += std::fabs(x);
                        }
                        if (std::fabs(static_cast<double>(c[i * n + j]) - s) > 2.0 * static_cast<double>(k) * eps * sabs + eps)
                            ++far;
                        if (std::memcmp(&c[i * n + j], &cw[i * wide + j], sizeof(T)) != 0) ++not_wide;
                    }
                for (std::size_t j = 0; j < n; ++j) {
                    gk::matmul(a.data(), sk, 1, b.data() + j, sn, 1, col.data(), 1, m, 1, k);
                    for (std::size_t i = 0; i < m; ++i) not_col += std::memcmp(&col[i], &c[i * n + j], sizeof(T)) != 0;
                }
                INFO("target " << gk::target_name(t) << " m " << m << " n " << n << " k " << k);
                CHECK(far == 0);
                CHECK(not_wide == 0);
                CHECK(not_col == 0);
                CHECK(std::memcmp(ct.data(), c.data(), c.size() * sizeof(T)) == 0);
            }
        }
    }
}

}  // namespace

TEST_CASE("kernels: matmul widths off the register panel: reference and bitwise against other routes",
          "[kernels][matmul]") {
    check_partial_panels_all_targets<float>();
    check_partial_panels_all_targets<double>();
}
