// Factories, the seeded generator, dtype promotion and PyTorch-style printing.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>

#include <graft/graft.hpp>

using namespace graft;
using Catch::Matchers::Contains;

namespace {
std::string str(const Tensor& t) {
    std::ostringstream os;
    os << t;
    return os.str();
}
}  // namespace

TEST_CASE("filled factories and their dtypes", "[core][factories]") {
    REQUIRE(zeros({2, 2}).type() == dtype::float32);
    REQUIRE(ones({3}, dtype::int64).to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 1, 1});
    REQUIRE(full({2}, 7).type() == dtype::int64);  // like torch.full with an int
    REQUIRE(full({2}, 0.5).type() == dtype::float32);
    REQUIRE(full({2}, true).type() == dtype::bool_);
    REQUIRE(full({2}, 0.5, dtype::float64).to_vector<double>() == std::vector<double>{0.5, 0.5});
    REQUIRE(zeros_like(ones({2, 3}, dtype::float64)).type() == dtype::float64);
}

TEST_CASE("arange and linspace", "[core][factories]") {
    REQUIRE(arange(5).type() == dtype::int64);
    REQUIRE(arange(5).to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 1, 2, 3, 4});
    REQUIRE(arange(1, 10, 3).to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 4, 7});
    REQUIRE(arange(5, 0, -2).to_vector<std::int64_t>() == std::vector<std::int64_t>{5, 3, 1});
    REQUIRE(arange(0.0, 1.0, 0.25).to_vector<float>() == std::vector<float>{0.f, 0.25f, 0.5f, 0.75f});
    REQUIRE(arange(0).numel() == 0);
    REQUIRE_THROWS_WITH(arange(0, 5, 0), Contains("step must be nonzero"));
    REQUIRE_THROWS_WITH(arange(5, 0, 1), Contains("inconsistent with step sign"));
    REQUIRE(linspace(0, 1, 5).to_vector<float>() == std::vector<float>{0.f, 0.25f, 0.5f, 0.75f, 1.f});
    REQUIRE(linspace(-1, 1, 1).to_vector<float>() == std::vector<float>{-1.f});
    REQUIRE(linspace(0, 1, 0).numel() == 0);
    const auto l = linspace(0, 3, 7, dtype::float64).to_vector<double>();
    REQUIRE(l.back() == 3.0);
    REQUIRE(l[3] == 1.5);
}

TEST_CASE("tensor() from braced lists picks PyTorch's dtypes", "[core][factories]") {
    REQUIRE(tensor({1, 2, 3}).type() == dtype::int64);
    REQUIRE(tensor({1.0, 2.0}).type() == dtype::float32);
    REQUIRE(tensor({true, false}).type() == dtype::bool_);
    REQUIRE(tensor({1.0, 2.0}, {-1}, dtype::float64).to_vector<double>() == std::vector<double>{1.0, 2.0});
    REQUIRE(tensor({0.1}, {1}, dtype::float64).item<double>() == 0.1);  // no float32 round trip
    REQUIRE(tensor({1, 2, 3, 4, 5, 6}, {2, 3}).sizes() == int_list{2, 3});
    REQUIRE_THROWS_WITH(tensor({1, 2, 3}, {2, 2}), Contains("invalid for input of size 3"));
    REQUIRE(from_vector(std::vector<double>{1, 2}).type() == dtype::float64);
}

TEST_CASE("rand and randn are reproducible from a seed", "[core][random]") {
    manual_seed(42);
    const auto a = randn({1000}).to_vector<float>();
    const auto u = rand({1000}).to_vector<float>();
    manual_seed(42);
    REQUIRE(randn({1000}).to_vector<float>() == a);
    REQUIRE(rand({1000}).to_vector<float>() == u);
    generator g(7);
    generator h(7);
    REQUIRE(rand({10}, dtype::float64, g).to_vector<double>() == rand({10}, dtype::float64, h).to_vector<double>());
    // Moments of 1000 samples: independent statistical expectations (very loose bounds).
    double mean = 0, var = 0, umin = 1, umax = 0;
    for (float v : a) mean += v;
    mean /= 1000;
    for (float v : a) var += (v - mean) * (v - mean);
    var /= 999;
    for (float v : u) {
        umin = std::min<double>(umin, v);
        umax = std::max<double>(umax, v);
    }
    REQUIRE(std::fabs(mean) < 0.15);
    REQUIRE(std::fabs(var - 1.0) < 0.15);
    REQUIRE(umin >= 0.0);
    REQUIRE(umax < 1.0);
    REQUIRE_THROWS_WITH(rand({2}, dtype::int64), Contains("floating-point dtype"));
}

TEST_CASE("result_type follows PyTorch's promotion categories", "[core][promotion]") {
    const Tensor f32 = ones({2}), f64 = ones({2}, dtype::float64), i64 = ones({2}, dtype::int64),
                 b = ones({2}, dtype::bool_);
    REQUIRE(result_type(f32, f64) == dtype::float64);
    REQUIRE(result_type(i64, f32) == dtype::float32);
    REQUIRE(result_type(b, i64) == dtype::int64);
    REQUIRE(result_type(i64, 2.5) == dtype::float32);     // a float number lifts int to the default float
    REQUIRE(result_type(f32, 2.5) == dtype::float32);     // but never widens a float tensor
    REQUIRE(result_type(b, 3) == dtype::int64);
    REQUIRE(result_type(i64, true) == dtype::int64);
    REQUIRE(result_type(f32, scalar_tensor(1.0, dtype::float64)) == dtype::float32);  // 0-dim ranks below dims
    REQUIRE(result_type(i64, scalar_tensor(1.0, dtype::float64)) == dtype::float64);  // unless it raises the category
}

TEST_CASE("printing matches PyTorch's format", "[core][print]") {
    REQUIRE(str(tensor({1.0, 2.0, 3.0})) == "tensor([1., 2., 3.])");
    REQUIRE(str(tensor({1.5, -2.25})) == "tensor([ 1.5000, -2.2500])");
    REQUIRE(str(arange(6).view({2, 3})) == "tensor([[0, 1, 2],\n        [3, 4, 5]])");
    REQUIRE(str(tensor({true, false})) == "tensor([ True, False])");
    REQUIRE(str(scalar_tensor(3.5)) == "tensor(3.5000)");
    REQUIRE(str(scalar_tensor(7)) == "tensor(7)");
    REQUIRE(str(ones({2}, dtype::float64)) == "tensor([1., 1.], dtype=float64)");
    REQUIRE(str(zeros({0})) == "tensor([])");
    REQUIRE(str(zeros({0, 3})) == "tensor([], size=(0, 3))");
    REQUIRE(str(tensor({1e-5, 1.0})) == "tensor([1.0000e-05, 1.0000e+00])");
    REQUIRE(str(tensor({double(NAN), double(INFINITY), -double(INFINITY), 1.0})) == "tensor([nan, inf, -inf, 1.])");
    REQUIRE(str(arange(2000)) == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
    REQUIRE(str(arange(8).view({2, 2, 2})) == "tensor([[[0, 1],\n         [2, 3]],\n\n        [[4, 5],\n         [6, 7]]])");
    REQUIRE(str(Tensor{}) == "tensor(undefined)");
}
