// Factories, the seeded generator, dtype promotion and PyTorch-style printing.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
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

namespace {

// The scalar reference for the random factories: one generator call per element, in
// row-major order, as the factories drew before they drew in bulk under one lock.
template <class T>
std::vector<T> scalar_rand(generator& g, std::int64_t n) {
    std::vector<T> v;
    for (std::int64_t i = 0; i < n; ++i) {
        T x = static_cast<T>(g.uniform());
        if constexpr (std::is_same_v<T, float>)
            if (x >= 1.0f) x = std::nextafter(1.0f, 0.0f);  // rand stays below 1 in float32
        v.push_back(x);
    }
    return v;
}
template <class T>
std::vector<T> scalar_randn(generator& g, std::int64_t n) {
    std::vector<T> v;
    for (std::int64_t i = 0; i < n; ++i) v.push_back(static_cast<T>(g.normal()));
    return v;
}
template <class T>
std::vector<T> scalar_randint(generator& g, std::int64_t low, std::int64_t high, std::int64_t n) {
    std::vector<T> v;
    const auto range = static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low);
    for (std::int64_t i = 0; i < n; ++i)
        v.push_back(static_cast<T>(static_cast<std::int64_t>(static_cast<std::uint64_t>(low) + g.below(range))));
    return v;
}
template <class T>
std::vector<T> scalar_bernoulli(generator& g, const std::vector<double>& p) {
    std::vector<T> v;
    for (double q : p) v.push_back(g.uniform() < q ? T(1) : T(0));
    return v;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// The spare is compared only when there is one (manual_seed leaves a stale, unused value).
bool same_state(const generator::state& a, const generator::state& b) {
    return a.engine == b.engine && a.seed == b.seed && a.has_spare == b.has_spare &&
           (!a.has_spare || std::memcmp(&a.spare, &b.spare, sizeof(double)) == 0);
}

}  // namespace

TEST_CASE("random factories draw bitwise what one scalar generator call per element draws", "[core][random]") {
    // Odd and even counts: an odd randn count leaves Box-Muller's second value as the spare
    // that the next randn starts with (also across dtypes and factories).
    for (const std::uint64_t seed : {std::uint64_t{1}, std::uint64_t{42}, generator::default_seed}) {
        for (const std::int64_t n : {0, 1, 2, 7, 64, 1001}) {
            INFO("seed " << seed << " n " << n);
            manual_seed(seed);
            generator& dg = default_generator();
            generator g(seed);  // the reference, drawn from one value at a time
            const int_list sizes = n == 1001 ? int_list{7, 11, 13} : int_list{n};
            auto step = [&](const char* what, bool same) {
                INFO(what);
                CHECK(same);
                CHECK(same_state(dg.get_state(), g.get_state()));  // the same number of engine calls
            };
            step("rand f32", same_bits(rand(sizes).to_vector<float>(), scalar_rand<float>(g, n)));
            step("randn f32", same_bits(randn(sizes).to_vector<float>(), scalar_randn<float>(g, n)));
            step("rand f64", same_bits(rand(sizes, dtype::float64).to_vector<double>(), scalar_rand<double>(g, n)));
            step("randn f64",
                 same_bits(randn(sizes, dtype::float64).to_vector<double>(), scalar_randn<double>(g, n)));
            step("randn f64 again",
                 same_bits(randn(sizes, dtype::float64).to_vector<double>(), scalar_randn<double>(g, n)));
            const Tensor like32 = zeros(sizes), like64 = zeros(sizes, dtype::float64);
            step("rand_like f32", same_bits(rand_like(like32).to_vector<float>(), scalar_rand<float>(g, n)));
            step("randn_like f32", same_bits(randn_like(like32).to_vector<float>(), scalar_randn<float>(g, n)));
            step("rand_like f64", same_bits(rand_like(like64).to_vector<double>(), scalar_rand<double>(g, n)));
            step("randn_like f64", same_bits(randn_like(like64).to_vector<double>(), scalar_randn<double>(g, n)));
            step("randint int64", same_bits(randint(-5, 12, sizes).to_vector<std::int64_t>(),
                                            scalar_randint<std::int64_t>(g, -5, 12, n)));
            // A range that is not a power of two and rejects some draws (limit below 2^64 - 1).
            const std::int64_t lo = std::numeric_limits<std::int64_t>::min() / 3 * 2;
            const std::int64_t hi = std::numeric_limits<std::int64_t>::max() / 3 * 2;
            step("randint wide", same_bits(randint(lo, hi, sizes).to_vector<std::int64_t>(),
                                           scalar_randint<std::int64_t>(g, lo, hi, n)));
            step("randint f32", same_bits(randint(0, 1000, sizes, dtype::float32).to_vector<float>(),
                                          scalar_randint<float>(g, 0, 1000, n)));
            std::vector<double> p;
            for (std::int64_t i = 0; i < n; ++i) p.push_back(static_cast<double>(i % 11) / 10.0);  // 0 .. 1
            const Tensor p64 = from_vector(p).reshape(sizes);
            step("bernoulli f64", same_bits(bernoulli(p64).to_vector<double>(), scalar_bernoulli<double>(g, p)));
            std::vector<double> p32;
            for (double q : p) p32.push_back(static_cast<float>(q));
            step("bernoulli f32", same_bits(bernoulli(p64.to(dtype::float32)).to_vector<float>(),
                                            scalar_bernoulli<float>(g, p32)));
            step("bernoulli_p f32", same_bits(bernoulli(like32, 0.3).to_vector<float>(),
                                              scalar_bernoulli<float>(g, std::vector<double>(p.size(), 0.3))));
            step("bernoulli_p f64", same_bits(bernoulli(like64, 0.7).to_vector<double>(),
                                              scalar_bernoulli<double>(g, std::vector<double>(p.size(), 0.7))));
            // A generator passed explicitly, and the scalar calls still interleave with tensors.
            generator h(seed + 1), r(seed + 1);
            CHECK(same_bits(randn({n}, dtype::float32, h).to_vector<float>(), scalar_randn<float>(r, n)));
            CHECK(h.normal() == r.normal());
            CHECK(same_bits(rand({n}, dtype::float64, h).to_vector<double>(), scalar_rand<double>(r, n)));
            CHECK(h.below(3) == r.below(3));
            CHECK(same_state(h.get_state(), r.get_state()));
        }
    }
}

TEST_CASE("graft's mt19937_64 draws exactly what std::mt19937_64 draws", "[core][random]") {
    // Several refills (312 words each), through operator() and through fill() in chunks that
    // start and end inside, at and across refill boundaries.
    constexpr std::size_t draws = 12000;
    const std::size_t chunks[] = {1, 311, 312, 313, 1000};
    for (const std::uint64_t seed : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{5489},
                                     std::numeric_limits<std::uint64_t>::max(), generator::default_seed}) {
        INFO("seed " << seed);
        std::mt19937_64 expected(seed);
        std::vector<std::uint64_t> want(draws);
        for (auto& w : want) w = expected();
        detail::mt19937_64 scalar(seed);
        std::size_t mismatches = 0;
        for (std::size_t i = 0; i < draws; ++i) mismatches += scalar() != want[i];
        CHECK(mismatches == 0);
        for (std::size_t first = 0; first < 5; ++first) {  // each chunk size first once
            INFO("chunks from " << chunks[first]);
            detail::mt19937_64 bulk(seed);
            std::vector<std::uint64_t> got(draws);
            for (std::size_t done = 0, c = first; done < draws; ++c) {
                const std::size_t k = std::min(chunks[c % 5], draws - done);
                bulk.fill(got.data() + done, k);
                done += k;
            }
            CHECK(got == want);
            detail::mt19937_64 after_scalar = scalar;
            CHECK(bulk == after_scalar);  // the same state after the same number of draws
            CHECK(bulk() == after_scalar());
        }
        // The default constructor seeds 5489 as std::mt19937_64's does; seed() starts over.
        detail::mt19937_64 e;
        std::mt19937_64 s;
        CHECK(e() == s());
        e.seed(seed);
        CHECK(e() == want[0]);
        CHECK_FALSE(e == scalar);
    }
}

TEST_CASE("generator states after scalar and bulk draws compare equal", "[core][random]") {
    for (const std::uint64_t seed : {std::uint64_t{3}, generator::default_seed}) {
        for (const std::int64_t n : {1, 311, 312, 313, 1000, 5000}) {
            INFO("seed " << seed << " n " << n);
            generator scalar(seed), bulk(seed);
            for (std::int64_t i = 0; i < n; ++i) (void)scalar.uniform();
            bulk.draw_uniforms(n, [](std::int64_t, double) {});
            CHECK(scalar.get_state().engine == bulk.get_state().engine);
            for (std::int64_t i = 0; i < n; ++i) (void)scalar.below(1000);
            bulk.draw_below(1000, n, [](std::int64_t, std::uint64_t) {});
            CHECK(scalar.get_state().engine == bulk.get_state().engine);
            for (std::int64_t i = 0; i < n; ++i) (void)scalar.normal();
            bulk.draw_normals(n, [](std::int64_t, double) {});
            CHECK(scalar.get_state().engine == bulk.get_state().engine);
            CHECK(scalar.normal() == bulk.normal());  // the same spare
            // set_state draws again what was drawn after get_state.
            const generator::state s = bulk.get_state();
            const double a = bulk.uniform();
            bulk.set_state(s);
            CHECK(bulk.uniform() == a);
        }
    }
}

TEST_CASE("rand and randn after manual_seed(42) are std::mt19937_64's numbers, as before", "[core][random]") {
    // The documented conversions over std::mt19937_64(42): uniform = (bits >> 11) * 2^-53,
    // float32 rand below 1; normal = Box-Muller on (u1, u2), u1 redrawn while 0, cos first and
    // sin kept as the spare. These are the numbers graft drew before it had its own engine.
    constexpr int n = 1001;  // odd: the spare is the next randn's first value
    std::mt19937_64 e(42);
    unsigned long long used = 0;
    auto uniform = [&e, &used] {
        ++used;
        return static_cast<double>(e() >> 11) * 0x1.0p-53;
    };
    std::vector<float> want_rand, want_randn;
    std::vector<double> want_rand64;
    for (int i = 0; i < n; ++i) {
        const float f = static_cast<float>(uniform());
        want_rand.push_back(f >= 1.0f ? std::nextafter(1.0f, 0.0f) : f);
    }
    double spare = 0.0;
    bool has_spare = false;
    for (int i = 0; i < n + 1; ++i) {  // randn({n}) then the first value of the next randn
        if (has_spare) {
            want_randn.push_back(static_cast<float>(spare));
            has_spare = false;
            continue;
        }
        double u1 = uniform();
        while (u1 == 0.0) u1 = uniform();
        const double u2 = uniform();
        const double r = std::sqrt(-2.0 * std::log(u1));
        constexpr double two_pi = 6.283185307179586476925286766559;
        spare = r * std::sin(two_pi * u2);
        has_spare = true;
        want_randn.push_back(static_cast<float>(r * std::cos(two_pi * u2)));
    }
    for (int i = 0; i < 7; ++i) want_rand64.push_back(uniform());
    manual_seed(42);
    CHECK(same_bits(rand({n}).to_vector<float>(), want_rand));
    auto got_randn = randn({n}).to_vector<float>();
    got_randn.push_back(randn({1}).item<float>());
    CHECK(same_bits(got_randn, want_randn));
    CHECK(same_bits(rand({7}, dtype::float64).to_vector<double>(), want_rand64));
    detail::mt19937_64 after(42);
    after.discard(used);
    CHECK(default_generator().get_state().engine == after);  // no more engine outputs drawn
    CHECK(default_generator().get_state().engine() == e());
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

TEST_CASE("int64 tensors print their exact values, beyond 2^53 too", "[core][print]") {
    // 2^53 + 1 has no double: printing through double showed 9007199254740992. Expected strings
    // are PyTorch 1.13's prints of the same tensors.
    constexpr std::int64_t above = (std::int64_t{1} << 53) + 1;
    constexpr std::int64_t lowest = std::numeric_limits<std::int64_t>::min();
    constexpr std::int64_t highest = std::numeric_limits<std::int64_t>::max();
    REQUIRE(str(tensor({above, -above})) == "tensor([ 9007199254740993, -9007199254740993])");
    REQUIRE(str(scalar_tensor(highest)) == "tensor(9223372036854775807)");
    REQUIRE(str(tensor({lowest, std::int64_t{0}})) == "tensor([-9223372036854775808,                    0])");
    // In a summarized print (elements read through select views), after int64 arithmetic.
    const Tensor big = arange(2000) + above;
    REQUIRE(str(big) ==
            "tensor([9007199254740993, 9007199254740994, 9007199254740995,  ...,\n"
            "        9007199254742990, 9007199254742991, 9007199254742992])");
}
