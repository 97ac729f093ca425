// Reductions, softmax and the dispatcher API on every available target.
#include "test_kernels_common.hpp"

#include <cstdlib>

using namespace kt;
using gk::reduce_op;

namespace {

template <class T>
void check_reduce_all_targets() {
    target_guard guard;
    const double eps = std::numeric_limits<T>::epsilon();
    for (gk::target t : gk::available_targets()) {
        gk::set_target(t);
        INFO("target " << gk::target_name(t));
        std::vector<std::size_t> lengths = test_lengths();
        for (std::size_t n : {2047u, 2048u, 2049u, 4096u, 10000u, 100003u}) lengths.push_back(n);
        for (std::size_t n : lengths) {
            INFO("n " << n);
            auto v = make_data<T>(n + 1, -1000, 1000, static_cast<std::uint32_t>(n), false);
            const T* a = v.data() + 1;  // unaligned
            // sum: pairwise bound vs the wide reference.
            const T got = gk::reduce(reduce_op::sum, a, n);
            long double exact = 0, abs_sum = 0;
            for (std::size_t i = 0; i < n; ++i) {
                exact += a[i];
                abs_sum += std::fabs(static_cast<long double>(a[i]));
            }
            const double bound = (40.0 + std::log2(static_cast<double>(n) + 1.0)) * eps * static_cast<double>(abs_sum);
            CHECK(std::fabs(static_cast<double>(static_cast<long double>(got) - exact)) <= bound + 1e-300);
            if (n > 0) {
                CHECK(gk::reduce(reduce_op::amax, a, n) == gk::reference::reduce(reduce_op::amax, a, n));
                CHECK(gk::reduce(reduce_op::amin, a, n) == gk::reference::reduce(reduce_op::amin, a, n));
                // NaN anywhere propagates.
                std::vector<T> w(a, a + n);
                w[(n * 7) % n] = std::numeric_limits<T>::quiet_NaN();
                CHECK(std::isnan(gk::reduce(reduce_op::amax, w.data(), n)));
                CHECK(std::isnan(gk::reduce(reduce_op::amin, w.data(), n)));
                CHECK(std::isnan(gk::reduce(reduce_op::sum, w.data(), n)));
                // ±inf
                w.assign(a, a + n);
                w[n / 2] = std::numeric_limits<T>::infinity();
                CHECK(gk::reduce(reduce_op::amax, w.data(), n) == std::numeric_limits<T>::infinity());
                CHECK(gk::reduce(reduce_op::sum, w.data(), n) == std::numeric_limits<T>::infinity());
                w[n / 2] = -std::numeric_limits<T>::infinity();
                CHECK(gk::reduce(reduce_op::amin, w.data(), n) == -std::numeric_limits<T>::infinity());
            }
        }
        CHECK(gk::reduce(reduce_op::sum, static_cast<const T*>(nullptr), 0) == T(0));
        // Denormals are summed, not flushed.
        std::vector<T> den(100, std::numeric_limits<T>::denorm_min());
        CHECK(gk::reduce(reduce_op::sum, den.data(), den.size()) == std::numeric_limits<T>::denorm_min() * T(100));
        CHECK(gk::reduce(reduce_op::amax, den.data(), den.size()) == std::numeric_limits<T>::denorm_min());
    }
}

}  // namespace

TEST_CASE("kernels: reductions float32 on every target", "[kernels][reduce]") { check_reduce_all_targets<float>(); }
TEST_CASE("kernels: reductions float64 on every target", "[kernels][reduce]") { check_reduce_all_targets<double>(); }

// A program's full sum (instr_kind::sum_all) must give the eager sum kernel's bits: the same
// blocks, accumulators and pairwise combination, whatever the tiles and the run's tail; the
// mean is that sum divided by n. Checked against gk::reduce over the unfused values (and the
// wide reference within the pairwise bound, so that both cannot be wrong the same way).
template <class T>
void check_program_full_sums() {
    target_guard guard;
    const double eps = std::numeric_limits<T>::epsilon();
    for (gk::target t : gk::available_targets()) {
        gk::set_target(t);
        // r2 = r0 * r1 (a temporary); totals[0] = sum(r2), totals[1] = mean(r0); r3 = r2 + r1 written out.
        std::vector<gk::program_instr> code(4);
        code[0].kind = gk::instr_kind::binary;
        code[0].op = static_cast<std::uint8_t>(gk::binary_op::mul);
        code[0].a = 0, code[0].b = 1, code[0].out = 2;
        code[1].kind = gk::instr_kind::sum_all;
        code[1].a = 2, code[1].out = 0;
        code[2].kind = gk::instr_kind::sum_all;
        code[2].a = 0, code[2].out = 1;
        code[3].kind = gk::instr_kind::binary;
        code[3].op = static_cast<std::uint8_t>(gk::binary_op::add);
        code[3].a = 2, code[3].b = 1, code[3].out = 3;
        const std::vector<gk::operand_mode> mode{gk::operand_mode::contiguous, gk::operand_mode::contiguous,
                                                 gk::operand_mode::temp, gk::operand_mode::output};
        for (std::size_t n : {1u, 5u, 8u, 31u, 32u, 127u, 128u, 129u, 1000u, 1001u, 1023u, 1024u, 1025u, 2048u, 2049u,
                              4099u, 70001u, 262147u}) {
            INFO("target " << gk::target_name(t) << " n " << n);
            auto a = make_data<T>(n, -3, 3, static_cast<std::uint32_t>(n), false);
            auto b = make_data<T>(n, -2, 2, static_cast<std::uint32_t>(n + 7), false);
            std::vector<T> prod(n), y(n, T(-7)), scratch(4 * gk::program_scratch_stride<T> + 64);
            gk::binary(gk::binary_op::mul, a.data(), 1, b.data(), 1, prod.data(), n);
            T total = T(-1), avg = T(-1);
            std::vector<T> blocks0(gk::full_sum_scratch_elements(n)), blocks1(gk::full_sum_scratch_elements(n));
            const std::size_t block = gk::sum_block_elements<T>();
            std::vector<gk::full_sum> totals{{&total, blocks0.data(), n, block, 0.0},
                                             {&avg, blocks1.data(), n, block, static_cast<double>(n)}};
            gk::program prog{code.data(), code.size(), mode.data(), mode.size()};
            prog.totals = totals.data();
            std::vector<T*> base{a.data(), b.data(), nullptr, y.data()};
            const auto finish = [&] {
                gk::finish_full_sum<T>(totals[0]);
                gk::finish_full_sum<T>(totals[1]);
            };
            gk::run_program(prog, base.data(), scratch.data(), 0, n);
            finish();
            const T want_total = gk::reduce(reduce_op::sum, prod.data(), n);
            const T want_avg = gk::reduce(reduce_op::sum, a.data(), n) / static_cast<T>(n);
            CHECK(std::memcmp(&total, &want_total, sizeof(T)) == 0);
            CHECK(std::memcmp(&avg, &want_avg, sizeof(T)) == 0);
            long double exact = 0, abs_sum = 0;
            for (std::size_t i = 0; i < n; ++i) {
                exact += static_cast<long double>(a[i]) * b[i];
                abs_sum += std::fabs(static_cast<long double>(a[i]) * b[i]);
            }
            const double bound = (42.0 + std::log2(static_cast<double>(n) + 1.0)) * eps * static_cast<double>(abs_sum);
            CHECK(std::fabs(static_cast<double>(static_cast<long double>(total) - exact)) <= bound);
            // The written output is unaffected by the sums.
            bool y_ok = true;
            for (std::size_t i = 0; i < n; ++i) y_ok = y_ok && y[i] == prod[i] + b[i];
            CHECK(y_ok);
            // Split at block boundaries (as threads take whole blocks), in any order: the same bits.
            if (n > block) {
                total = avg = T(-1);
                const std::size_t mid = (n / block + 1) / 2 * block;
                gk::run_program(prog, base.data(), scratch.data(), mid, n);
                gk::run_program(prog, base.data(), scratch.data(), 0, mid);
                finish();
                CHECK(std::memcmp(&total, &want_total, sizeof(T)) == 0);
                CHECK(std::memcmp(&avg, &want_avg, sizeof(T)) == 0);
            }
            // A run starting inside a block (misuse) makes the result NaN, never a wrong sum.
            if (n > block / 2) {
                gk::run_program(prog, base.data(), scratch.data(), 0, n);
                gk::run_program(prog, base.data(), scratch.data(), block / 2, n);
                finish();
                CHECK(std::isnan(total));
                CHECK(std::isnan(avg));
            }
        }
    }
}

TEST_CASE("kernels: a program's full sum and mean are the eager sum's bits (float32)", "[kernels][program]") {
    check_program_full_sums<float>();
}
TEST_CASE("kernels: a program's full sum and mean are the eager sum's bits (float64)", "[kernels][program]") {
    check_program_full_sums<double>();
}

TEST_CASE("kernels: float32 sum of 1e7 ones is exact", "[kernels][reduce]") {
    target_guard guard;
    std::vector<float> ones(10'000'000, 1.0f);
    for (gk::target t : gk::available_targets()) {
        gk::set_target(t);
        INFO("target " << gk::target_name(t));
        CHECK(gk::reduce(reduce_op::sum, ones.data(), ones.size()) == 1e7f);
        CHECK(gk::reduce(reduce_op::sum, ones.data() + 1, ones.size() - 1) == 9999999.0f);
    }
}

TEST_CASE("kernels: float32 sum of 0.1 x 1e6 stays within the pairwise bound", "[kernels][reduce]") {
    target_guard guard;
    std::vector<float> v(1'000'000, 0.1f);
    const double exact = 1e6 * static_cast<double>(0.1f);
    for (gk::target t : gk::available_targets()) {
        gk::set_target(t);
        const float got = gk::reduce(reduce_op::sum, v.data(), v.size());
        // naive float accumulation is off by ~1%; pairwise/blocked must be ~1e-6 relative.
        CHECK(std::fabs(got - exact) / exact < 2e-6);
    }
}

namespace {

template <class T>
void check_softmax_all_targets() {
    target_guard guard;
    using L = std::numeric_limits<T>;
    for (gk::target t : gk::available_targets()) {
        gk::set_target(t);
        INFO("target " << gk::target_name(t));
        for (bool log : {false, true}) {
            INFO("log " << log);
            for (std::size_t cols : test_lengths()) {
                if (cols > 1000) continue;
                const std::size_t rows = 3;
                auto x = make_data<T>(rows * cols, -30, 30, static_cast<std::uint32_t>(cols), false);
                if (cols > 2) {
                    x[1] = -L::infinity();  // row 0 has a -inf
                    x[cols + 1] = T(80);    // row 1 has large values
                    x[cols] = T(88);
                }
                std::vector<T> got(rows * cols), want(rows * cols);
                gk::softmax_rows(x.data(), got.data(), rows, cols, log);
                gk::reference::softmax_rows(x.data(), want.data(), rows, cols, log);
                for (std::size_t i = 0; i < rows * cols; ++i) {
                    const std::size_t row = i / cols;
                    T m = x[row * cols];
                    for (std::size_t j = 0; j < cols; ++j) m = std::max(m, x[row * cols + j]);
                    const double z = std::fabs(static_cast<double>(x[i]) - static_cast<double>(m));
                    // x - m is rounded in T (as in PyTorch): softmax has relative error
                    // <= (6 + |x - m|) eps (exp condition number), log_softmax absolute
                    // error <= 8 eps * max(1, |x - m| + 1).
                    const bool ok = log ? close(got[i], want[i], tol{8, 8}, z + 1.0)
                                        : close(got[i], want[i], tol{6.0 + 2.0 * z, 0});
                    if (!ok) {
                        INFO("cols " << cols << " i " << i << " got " << got[i] << " want " << want[i]);
                        CHECK(ok);
                    }
                }
                // in place
                std::vector<T> inplace = x;
                gk::softmax_rows(inplace.data(), inplace.data(), rows, cols, log);
                for (std::size_t i = 0; i < rows * cols; ++i) CHECK((inplace[i] == got[i] || (std::isnan(inplace[i]) && std::isnan(got[i]))));
            }
            // A row of all -inf → NaN (PyTorch); a row with +inf → NaN.
            std::vector<T> r(7, -L::infinity()), o(7);
            gk::softmax_rows(r.data(), o.data(), 1, r.size(), log);
            for (T y : o) CHECK(std::isnan(y));
            r.assign(7, T(1));
            r[2] = L::infinity();
            gk::softmax_rows(r.data(), o.data(), 1, r.size(), log);
            for (T y : o) CHECK(std::isnan(y));
            // Large equal values are stable.
            r.assign(19, T(1e4));
            o.assign(19, T(0));
            gk::softmax_rows(r.data(), o.data(), 1, r.size(), log);
            for (T y : o) CHECK(y == Approx(log ? -std::log(19.0) : 1.0 / 19.0).epsilon(1e-6));
        }
    }
}

}  // namespace

TEST_CASE("kernels: softmax/log_softmax float32 on every target", "[kernels][softmax]") {
    check_softmax_all_targets<float>();
}
TEST_CASE("kernels: softmax/log_softmax float64 on every target", "[kernels][softmax]") {
    check_softmax_all_targets<double>();
}

TEST_CASE("kernels: dispatcher target selection", "[kernels][dispatch]") {
    target_guard guard;
    const auto av = gk::available_targets();
    REQUIRE(!av.empty());
    // Best first and scalar (or emu128) always available as the last resort.
    CHECK((av.back() == gk::target::scalar || av.back() == gk::target::emu128));
    CHECK(std::string(gk::target_name(gk::target::avx3)) == "AVX3");
    CHECK(std::string(gk::target_name(gk::target::avx2)) == "AVX2");
    CHECK(std::string(gk::target_name(gk::target::sse4)) == "SSE4");
    CHECK(std::string(gk::target_name(gk::target::scalar)) == "SCALAR");
    const auto compiled = gk::compiled_targets();
    for (gk::target t : av) {
        gk::set_target(t);
        CHECK(gk::current_target() == t);
        CHECK(std::find(compiled.begin(), compiled.end(), t) != compiled.end());
    }
    // The default (no GRAFT_SIMD_TARGET) is the best available one, unless overridden.
    if (std::getenv("GRAFT_SIMD_TARGET") == nullptr) CHECK(guard.saved == av.front());

    // Errors leave the current target unchanged.
    gk::set_target(av.back());
    const gk::target before = gk::current_target();
    for (gk::target bad : {gk::target::neon, gk::target::sve2, gk::target::rvv, gk::target::unknown}) {
        if (std::find(av.begin(), av.end(), bad) != av.end()) continue;
        CHECK_THROWS_AS(gk::set_target(bad), graft::error);
        CHECK(gk::current_target() == before);
    }
#if defined(__x86_64__) && !defined(GRAFT_KERNELS_ALL_TARGETS)
    // SSE4 is not compiled by default (config.hpp).
    CHECK_THROWS_AS(gk::set_target(gk::target::sse4), graft::error);
    CHECK(gk::current_target() == before);
#endif
    // Kernels follow the target: the same call on each target gives the same result.
    const float x[5] = {1, 2, 3, 4, 5};
    float y[5];
    for (gk::target t : av) {
        gk::set_target(t);
        gk::unary(gk::unary_op::sqrt, x, 1, y, 5);
        CHECK(y[3] == 2.0f);
    }
}
