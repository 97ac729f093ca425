// Reductions, matmul and softmax on tensors, against hand-computed values and double loops.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include <graft/graft.hpp>

using namespace graft;
using Catch::Matchers::Contains;

TEST_CASE("sum, mean, amax, amin over all elements and over dims", "[ops][reduce]") {
    const Tensor a = arange(24).view({2, 3, 4}).to(dtype::float32);
    REQUIRE(a.sum().dim() == 0);
    REQUIRE(a.sum().item<double>() == 276.0);
    REQUIRE(a.mean().item<double>() == 11.5);
    REQUIRE(a.amax().item<double>() == 23.0);
    REQUIRE(a.amin().item<double>() == 0.0);
    REQUIRE(a.sum({0}).to_vector<float>() ==
            std::vector<float>{12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34});
    REQUIRE(a.sum({1}).to_vector<float>() == std::vector<float>{12, 15, 18, 21, 48, 51, 54, 57});
    REQUIRE(a.sum({-1}).to_vector<float>() == std::vector<float>{6, 22, 38, 54, 70, 86});
    REQUIRE(a.sum({0, 2}).to_vector<float>() == std::vector<float>{60, 92, 124});
    REQUIRE(a.sum({0, 2}, true).sizes() == int_list{1, 3, 1});
    REQUIRE(a.mean({1}, true).sizes() == int_list{2, 1, 4});
    REQUIRE(a.mean({1}).to_vector<float>() == std::vector<float>{4, 5, 6, 7, 16, 17, 18, 19});
    REQUIRE(a.amax({2}).to_vector<float>() == std::vector<float>{3, 7, 11, 15, 19, 23});
    REQUIRE(a.amin({0, 1}).to_vector<float>() == std::vector<float>{0, 1, 2, 3});
    // Reductions over transposed views.
    REQUIRE(a.transpose(0, 2).sum({0}).to_vector<float>() == a.sum({2}).t().contiguous().to_vector<float>());
}

TEST_CASE("reductions: dtypes, empty inputs and NaN", "[ops][reduce][edge]") {
    REQUIRE(tensor({1, 2, 3}).sum().type() == dtype::int64);
    REQUIRE(tensor({true, true, false}).sum().item<std::int64_t>() == 2);
    REQUIRE(tensor({4, -2, 9}).amax().item<std::int64_t>() == 9);
    REQUIRE_THROWS_WITH(tensor({1, 2}).mean(), Contains("floating point"));
    REQUIRE(zeros({0}).sum().item<double>() == 0.0);
    REQUIRE(std::isnan(zeros({0}).mean().item<double>()));
    REQUIRE(zeros({3, 0}).sum({1}).to_vector<float>() == std::vector<float>{0, 0, 0});
    REQUIRE_THROWS_WITH(zeros({0}).amax(), Contains("amax") && Contains("non-zero size"));
    REQUIRE(zeros({0, 3}).amax({1}).numel() == 0);  // nothing to reduce per (absent) row
    REQUIRE(std::isnan(tensor({1.0, std::nan(""), 3.0}).amax().item<double>()));
    REQUIRE(std::isnan(tensor({1.0, std::nan(""), 3.0}).amin().item<double>()));
    REQUIRE(std::isnan(tensor({1.0, std::nan("")}).sum().item<double>()));
    REQUIRE_THROWS_WITH(ones({2, 2}).sum({0, 0}), Contains("multiple times"));
    REQUIRE_THROWS_WITH(ones({2, 2}).sum({2}), Contains("dimension out of range"));
    REQUIRE(scalar_tensor(4.0).sum({0}).item<double>() == 4.0);  // 0-dim accepts dim 0
}

TEST_CASE("float32 sum is accurate on long rows", "[ops][reduce][accuracy]") {
    REQUIRE(ones({10000000}).sum().item<double>() == 1e7);  // naive float accumulation stalls at 2^24
    manual_seed(5);
    const Tensor x = rand({1 << 20});
    double ref = 0;
    for (float v : x.to_vector<float>()) ref += v;
    REQUIRE(std::fabs(x.sum().item<double>() - ref) <= 1e-6 * ref);
}

TEST_CASE("matmul: 2-D, vector and batched shapes against a double loop", "[ops][matmul]") {
    manual_seed(9);
    for (dtype dt : {dtype::float32, dtype::float64}) {
        const double tol = dt == dtype::float32 ? 1e-4 : 1e-12;
        const Tensor a = randn({2, 5, 7}, dt), b = randn({7, 3}, dt);
        const Tensor c = matmul(a, b);  // b broadcasts over the batch
        REQUIRE(c.sizes() == int_list{2, 5, 3});
        const auto av = a.to_vector<double>(), bv = b.to_vector<double>(), cv = c.to_vector<double>();
        for (int bi = 0; bi < 2; ++bi)
            for (int i = 0; i < 5; ++i)
                for (int j = 0; j < 3; ++j) {
                    double ref = 0;
                    for (int k = 0; k < 7; ++k) ref += av[(bi * 5 + i) * 7 + k] * bv[k * 3 + j];
                    REQUIRE(std::fabs(cv[(bi * 5 + i) * 3 + j] - ref) <= tol * (1 + std::fabs(ref)));
                }
        // Transposed operands give the same product as contiguous copies.
        const Tensor bt = randn({3, 7}, dt).t();
        REQUIRE(allclose(matmul(a, bt), matmul(a, bt.contiguous()), 1e-6, 1e-6));
    }
    const Tensor m = tensor({1.0, 2.0, 3.0, 4.0}, {2, 2});
    const Tensor v = tensor({1.0, 1.0});
    REQUIRE(matmul(m, v).to_vector<float>() == std::vector<float>{3, 7});
    REQUIRE(matmul(v, m).to_vector<float>() == std::vector<float>{4, 6});
    REQUIRE(matmul(v, v).dim() == 0);
    REQUIRE(matmul(v, v).item<float>() == 2.0f);
    REQUIRE(matmul(zeros({3, 0}), zeros({0, 2})).to_vector<float>() == std::vector<float>(6, 0.0f));
    REQUIRE(matmul(zeros({0, 4}), zeros({4, 2})).sizes() == int_list{0, 2});
    REQUIRE_THROWS_WITH(matmul(ones({2, 3}), ones({2, 3})), Contains("cannot be multiplied") && Contains("2x3"));
    REQUIRE_THROWS_WITH(matmul(ones({2, 2}), ones({2, 2}, dtype::float64)), Contains("same dtype"));
    REQUIRE_THROWS_WITH(matmul(ones({2, 2}, dtype::int64), ones({2, 2}, dtype::int64)), Contains("floating-point"));
    REQUIRE_THROWS_WITH(matmul(scalar_tensor(1.0), ones({2})), Contains("at least 1 dimension"));
    REQUIRE_THROWS_WITH(matmul(ones({2, 2, 3}), ones({3, 3, 2})), Contains("not broadcastable"));
}

TEST_CASE("softmax and log_softmax along a dim", "[ops][softmax]") {
    const Tensor x = tensor({1.0, 2.0, 3.0, 1.0, 1.0, 1.0}, {2, 3});
    const Tensor s = softmax(x, 1);
    const double e1 = std::exp(1.0), e2 = std::exp(2.0), e3 = std::exp(3.0), z = e1 + e2 + e3;
    const auto sv = s.to_vector<double>();
    REQUIRE(sv[0] == Approx(e1 / z).epsilon(1e-6));
    REQUIRE(sv[2] == Approx(e3 / z).epsilon(1e-6));
    REQUIRE(sv[4] == Approx(1.0 / 3.0).epsilon(1e-6));
    const auto lv = log_softmax(x, -1).to_vector<double>();
    REQUIRE(lv[1] == Approx(2.0 - std::log(z)).epsilon(1e-6));
    // Along dim 0, columns are normalized.
    const auto cols = softmax(x, 0).sum({0}).to_vector<double>();
    for (double c : cols) REQUIRE(c == Approx(1.0).epsilon(1e-6));
    // Large values do not overflow; -inf entries get probability 0; an all -inf row is NaN.
    const double inf = std::numeric_limits<double>::infinity();
    const auto big = softmax(tensor({1000.0, 1000.0}), 0).to_vector<double>();
    REQUIRE(big[0] == Approx(0.5));
    const auto masked = softmax(tensor({-inf, 0.0}), 0).to_vector<double>();
    REQUIRE(masked[0] == 0.0);
    REQUIRE(masked[1] == 1.0);
    REQUIRE(std::isnan(softmax(tensor({-inf, -inf}), 0).to_vector<double>()[0]));
    REQUIRE(log_softmax(tensor({-inf, 0.0}), 0).to_vector<double>()[0] == -inf);
    REQUIRE(softmax(scalar_tensor(3.0), 0).item<double>() == 1.0);
    REQUIRE(softmax(zeros({2, 0}), 1).sizes() == int_list{2, 0});
    REQUIRE_THROWS_WITH(softmax(tensor({1, 2}), 0), Contains("floating-point"));
    REQUIRE_THROWS_WITH(softmax(x, 2), Contains("dimension out of range"));
}

TEST_CASE("allclose and equal", "[ops][compare]") {
    REQUIRE(allclose(tensor({1.0, 2.0}), tensor({1.0 + 1e-7, 2.0})));
    REQUIRE_FALSE(allclose(tensor({1.0, 2.0}), tensor({1.1, 2.0})));
    REQUIRE_FALSE(allclose(tensor({std::nan("")}), tensor({std::nan("")})));
    REQUIRE(allclose(tensor({std::nan("")}), tensor({std::nan("")}), 1e-5, 1e-8, true));
    REQUIRE(allclose(ones({2, 3}), ones({3})));  // broadcasts
    REQUIRE(equal(arange(3), tensor({0, 1, 2})));
    REQUIRE_FALSE(equal(arange(3), arange(4)));
    REQUIRE_FALSE(equal(tensor({std::nan("")}), tensor({std::nan("")})));
}

TEST_CASE("reductions over leading dims match a double loop", "[ops][reduce]") {
    manual_seed(21);
    // Shapes that take the column-accumulation path (reduced run followed by >= 16 kept
    // elements) and shapes that do not; every result is checked against double sums.
    for (const int_list& shape : {int_list{1000, 40}, int_list{3, 600, 17}, int_list{5, 7, 3}}) {
        const Tensor x = randn(shape);
        const auto v = x.to_vector<double>();
        const std::int64_t a = shape.size() == 3 ? shape[0] : 1, r = shape[shape.size() - 2], n = shape.back();
        const std::int64_t dim = static_cast<std::int64_t>(shape.size()) - 2;
        const auto got = x.sum({dim}).to_vector<double>();
        const auto mx = x.amax({dim}).to_vector<double>();
        for (std::int64_t i = 0; i < a; ++i)
            for (std::int64_t j = 0; j < n; ++j) {
                double ref = 0, ref_max = -1e300;
                for (std::int64_t k = 0; k < r; ++k) {
                    ref += v[(i * r + k) * n + j];
                    ref_max = std::max(ref_max, v[(i * r + k) * n + j]);
                }
                REQUIRE(std::fabs(got[i * n + j] - ref) <= 1e-5 * (1 + std::fabs(ref)));
                REQUIRE(mx[i * n + j] == ref_max);
            }
    }
    // NaN in one column propagates through amax/amin on the column path only for that column.
    Tensor y = zeros({300, 32});
    y.select(0, 123).select(0, 5).fill_(std::nan(""));
    const auto m = y.amax({0}).to_vector<double>();
    REQUIRE(std::isnan(m[5]));
    REQUIRE(m[4] == 0.0);
    REQUIRE(std::isnan(y.amin({0}).to_vector<double>()[5]));
    REQUIRE(ones({1 << 20, 16}).sum({0}).to_vector<float>() == std::vector<float>(16, float(1 << 20)));
}
