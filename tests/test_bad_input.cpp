// Bad input (issue 14): sizes that overflow, conversions without a value, allocations the
// machine cannot give. Each probe must throw graft::error with a clear message and leave
// graft usable, with no sanitizer report (CI runs this file under ASan and UBSan).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <graft/graft.hpp>

using namespace graft;

namespace {

constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();

/// graft still works after a refused call: a small computation against its hand value.
void still_usable() {
    const Tensor x = ones({2, 3});
    CHECK((x * 2.0 + 1.0).sum().item<double>() == 18.0);
}

}  // namespace

TEST_CASE("bad input: factories refuse sizes whose element count overflows", "[bad_input]") {
    CHECK_THROWS_WITH(empty({std::int64_t{1} << 31, std::int64_t{1} << 31}),  // 2^62 floats: 2^64 bytes
                      Catch::Contains("empty") && Catch::Contains("cannot be addressed"));
    CHECK_THROWS_WITH(ones({(std::int64_t{1} << 62) + 1, 4}), Catch::Contains("more elements than an int64 can count"));
    CHECK_THROWS_WITH(zeros({int64_max, 2}), Catch::Contains("[9223372036854775807, 2]"));
    // Zero elements, but contiguous strides would still overflow.
    CHECK_THROWS_AS(empty({0, int64_max, 4}), graft::error);
    CHECK_THROWS_WITH(empty({-3, 2}), Catch::Contains("negative dimension -3"));
    still_usable();
}

TEST_CASE("bad input: an allocation beyond the machine's memory throws instead of aborting", "[bad_input]") {
    // 4 TiB: representable, addressable, but no machine this runs on has it.
    CHECK_THROWS_WITH(empty({std::int64_t{1} << 40}, dtype::float32),
                      Catch::Contains("out of memory allocating") && Catch::Contains("bytes for a tensor"));
    still_usable();
}

TEST_CASE("bad input: arange whose element count overflows", "[bad_input]") {
    CHECK_THROWS_WITH(arange(std::numeric_limits<std::int64_t>::min(), int64_max, 1, dtype::int64),
                      Catch::Contains("more elements than an int64 can count"));
    CHECK_THROWS_WITH(arange(0.0, 1e300, 1e-300), Catch::Contains("arange"));
    // The extreme step still counts right: one element.
    const Tensor one = arange(std::int64_t{0}, int64_max, int64_max, dtype::int64);
    CHECK(one.numel() == 1);
    still_usable();
}

TEST_CASE("bad input: views whose sizes, strides or offsets overflow", "[bad_input]") {
    const Tensor x = arange(std::int64_t{0}, std::int64_t{12}, std::int64_t{1}, dtype::int64).reshape({3, 4});
    CHECK_THROWS_WITH(x.narrow(0, 1, int64_max), Catch::Contains("exceeds dimension size"));
    CHECK_THROWS_WITH(empty({0}).reshape({std::int64_t{1} << 32, std::int64_t{1} << 32}),
                      Catch::Contains("more elements than an int64 can count"));
    CHECK_THROWS_WITH(ones({1}).expand({std::int64_t{1} << 32, std::int64_t{1} << 32}),
                      Catch::Contains("more elements than an int64 can count"));
    CHECK_THROWS_WITH(ones({1}).expand({-5}), Catch::Contains("expanded size -5"));
    CHECK_THROWS_WITH(x.as_strided({2, 2}, {std::int64_t{1} << 62, 1}, 0), Catch::Contains("as_strided"));
    CHECK_THROWS_WITH(x.as_strided({3, 3}, {int64_max, int64_max}, 0), Catch::Contains("as_strided"));
    // slice with the largest step: one element, the first (Python's x[::2**63-1]).
    const Tensor s = x.slice(1, 0, 4, int64_max);
    REQUIRE(s.sizes() == int_list{3, 1});
    CHECK(s.select(0, 2).item<std::int64_t>() == 8);
    const Tensor none = x.slice(1, 4, 4, int64_max);
    CHECK(none.sizes() == int_list{3, 0});
    still_usable();
}

TEST_CASE("bad input: NaN and infinities converted to int64 give INT64_MIN (x86-64 PyTorch), no UB", "[bad_input]") {
    constexpr std::int64_t int64_min = std::numeric_limits<std::int64_t>::min();
    constexpr double inf = std::numeric_limits<double>::infinity();
    const Tensor f = tensor({std::nan(""), inf, -inf, 1e19, -2.5, 3.9}, {-1}, dtype::float64);
    const Tensor i = f.to(dtype::int64);
    const std::vector<std::int64_t> want{int64_min, int64_min, int64_min, int64_min, -2, 3};
    for (std::size_t k = 0; k < want.size(); ++k) CHECK(i.data_ptr<std::int64_t>()[k] == want[k]);
    CHECK(full({2}, std::nan(""), dtype::int64).data_ptr<std::int64_t>()[1] == int64_min);
    CHECK(full({1}, -7.9, dtype::int64).item<std::int64_t>() == -7);
    still_usable();
}
