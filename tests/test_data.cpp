// graft/data.hpp: randperm, TensorDataset, Subset, random_split, default_collate, DataLoader
// (order, shuffling, drop_last, collate, the worker thread, exceptions, leaving an epoch early)
// and the progress bar. Expectations are independent of the code under test: rows picked with
// narrow / index_select, permutations from randperm drawn from the same seed, a Fisher-Yates
// written here. These tests also run under ThreadSanitizer (the worker thread).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <graft/graft.hpp>

using namespace graft;

namespace {

bool same(const Tensor& a, const Tensor& b) {
    if (a.sizes() != b.sizes() || a.type() != b.type()) return false;
    const Tensor ca = a.contiguous(), cb = b.contiguous();
    return std::memcmp(ca.raw_data(), cb.raw_data(), static_cast<std::size_t>(a.numel()) * a.element_size()) == 0;
}

std::vector<std::int64_t> values(const Tensor& t) { return t.to(dtype::int64).contiguous().to_vector<std::int64_t>(); }

/// n examples: x [n, 2, 3] float (example i holds 6i .. 6i+5), y [n] int64 (10 i).
data::TensorDataset numbered(std::int64_t n) {
    return data::TensorDataset(arange(0, 6 * n).to(dtype::float32).reshape({n, 2, 3}), arange(0, 10 * n, 10));
}

/// The example indices a batch of `numbered` holds (from y).
std::vector<std::int64_t> indices_of(const std::vector<Tensor>& batch) {
    std::vector<std::int64_t> v = values(batch[1]);
    for (auto& i : v) i /= 10;
    return v;
}

/// Every batch of one epoch, copied out.
template <class Loader>
std::vector<typename Loader::batch_type> epoch(Loader& loader) {
    std::vector<typename Loader::batch_type> out;
    for (auto& b : loader) out.push_back(b);
    return out;
}

/// The exception a data set's get() throws: not a graft::error, so that rethrowing "as is" shows.
struct bad_example : std::runtime_error {
    explicit bad_example(std::int64_t i) : std::runtime_error("bad example " + std::to_string(i)), index(i) {}
    std::int64_t index;
};

/// Example i is the 0-dim tensor i; get(bad) throws bad_example; counts its calls.
class flaky_dataset : public data::Dataset<Tensor> {
public:
    flaky_dataset(std::int64_t n, std::int64_t bad) : n_(n), bad_(bad) {}
    std::int64_t size() const override { return n_; }
    Tensor get(std::int64_t index) override {
        ++calls;
        if (index == bad_) throw bad_example(index);
        return scalar_tensor(index);
    }
    std::atomic<std::int64_t> calls{0};

private:
    std::int64_t n_, bad_;
};

/// Examples of another shape than a vector of tensors: (image, label) pairs.
class pair_dataset : public data::Dataset<std::pair<Tensor, std::int64_t>> {
public:
    std::int64_t size() const override { return 7; }
    std::pair<Tensor, std::int64_t> get(std::int64_t index) override {
        return {full({2}, static_cast<double>(index)), index % 3};
    }
};

}  // namespace

// ------------------------------------------------------------------------------------ randperm

TEST_CASE("randperm: a permutation, the Fisher-Yates of its documentation, reproducible", "[data][random]") {
    for (std::int64_t n : {0, 1, 2, 17, 1000}) {
        INFO(n);
        const Tensor p = randperm(n);
        CHECK(p.type() == dtype::int64);
        CHECK(p.sizes() == int_list{n});
        std::vector<std::int64_t> v = values(p);
        std::sort(v.begin(), v.end());
        std::vector<std::int64_t> expected(static_cast<std::size_t>(n));
        std::iota(expected.begin(), expected.end(), std::int64_t{0});
        CHECK(v == expected);
    }
    // The documented algorithm, written again: position i swaps with i + below(n - i).
    generator g(99), h(99);
    std::vector<std::int64_t> expected(50);
    std::iota(expected.begin(), expected.end(), std::int64_t{0});
    for (std::size_t i = 0; i + 1 < expected.size(); ++i)
        std::swap(expected[i], expected[i + static_cast<std::size_t>(h.below(expected.size() - i))]);
    CHECK(values(randperm(50, dtype::int64, g)) == expected);
    CHECK(g.get_state().engine == h.get_state().engine);  // and it drew exactly that much

    manual_seed(5);
    const Tensor a = randperm(30), b = randperm(30);
    manual_seed(5);
    CHECK(same(randperm(30), a));
    CHECK(same(randperm(30), b));
    CHECK_FALSE(same(a, b));

    // float dtypes hold the same values; each of the 6 orders of 3 comes up about equally often.
    generator f(3), f2(3);
    CHECK(values(randperm(40, dtype::float64, f)) == values(randperm(40, dtype::int64, f2)));
    CHECK(randperm(5, dtype::float32).type() == dtype::float32);
    std::map<std::vector<std::int64_t>, int> seen;
    generator u(8);
    for (int i = 0; i < 6000; ++i) ++seen[values(randperm(3, dtype::int64, u))];
    CHECK(seen.size() == 6);
    for (const auto& [order, count] : seen) CHECK((count > 850 && count < 1150));

    CHECK_THROWS_WITH(randperm(-1), Catch::Contains("n must be non-negative"));
    CHECK_THROWS_WITH(randperm(3, dtype::bool_), Catch::Contains("expected dtype int64, float32 or float64"));
    CHECK_THROWS_WITH(randperm((std::int64_t{1} << 24) + 1, dtype::float32), Catch::Contains("too large for dtype"));
}

TEST_CASE("randperm is a random node under capture: it draws when the graph runs", "[data][random][capture]") {
    const Tensor x = zeros({6}, dtype::float32);
    const auto cap = capture::trace([](const Tensor& a) { return a + randperm(6, dtype::float32); }, {x});
    std::ostringstream text;
    text << cap.graph();
    CHECK(text.str().find("randperm[") != std::string::npos);
    for (std::uint64_t seed : {1u, 2u}) {
        manual_seed(seed);
        const Tensor eager = x + randperm(6, dtype::float32);
        manual_seed(seed);
        CHECK(same(cap(x)[0], eager));
    }
}

// ------------------------------------------------------------------------------- data sets

TEST_CASE("data::TensorDataset: rows of every tensor as views, bad input is an error", "[data]") {
    const Tensor x = randn({5, 3}), y = arange(5);
    data::TensorDataset ds(x, y);
    CHECK(ds.size() == 5);
    CHECK(ds.tensors().size() == 2);
    for (std::int64_t i = 0; i < 5; ++i) {
        const std::vector<Tensor> ex = ds.get(i);
        REQUIRE(ex.size() == 2);
        CHECK(same(ex[0], x.narrow(0, i, 1).reshape({3})));
        CHECK(ex[1].item<std::int64_t>() == i);
    }
    // Views of the rows, as PyTorch's indexing: a write to the tensor shows through.
    const std::vector<Tensor> row = ds.get(2);
    {
        no_grad guard;
        x.select(0, 2).fill_(7.0);
    }
    CHECK(row[0].sum().item<double>() == 21.0);

    CHECK(data::TensorDataset({arange(3)}).size() == 3);  // one tensor
    CHECK_THROWS_WITH(data::TensorDataset(std::vector<Tensor>{}), Catch::Contains("at least one tensor"));
    CHECK_THROWS_WITH(data::TensorDataset(x, arange(4)),
                      Catch::Contains("size mismatch between tensors") && Catch::Contains("tensor 1 has 4"));
    CHECK_THROWS_WITH(data::TensorDataset(x, scalar_tensor(1.0)), Catch::Contains("tensor 1 is 0-dim"));
    CHECK_THROWS_WITH(data::TensorDataset(x, Tensor{}), Catch::Contains("tensor 1 is undefined"));
    CHECK_THROWS_WITH(ds.get(5), Catch::Contains("index 5 is out of range for a data set of size 5"));
    CHECK_THROWS_WITH(ds.get(-1), Catch::Contains("index -1 is out of range"));
}

TEST_CASE("data::Subset: the data set through its indices", "[data]") {
    auto base = std::make_shared<data::TensorDataset>(numbered(6));
    data::Subset<std::vector<Tensor>> sub(base, {4, 0, 4});
    CHECK(sub.size() == 3);
    CHECK(sub.get(0)[1].item<std::int64_t>() == 40);
    CHECK(sub.get(1)[1].item<std::int64_t>() == 0);
    CHECK(sub.get(2)[1].item<std::int64_t>() == 40);
    CHECK(sub.dataset() == base);
    CHECK(sub.indices() == std::vector<std::int64_t>{4, 0, 4});
    auto sub2 = std::make_shared<data::Subset<std::vector<Tensor>>>(sub);  // a subset of a subset
    CHECK(data::Subset<std::vector<Tensor>>(sub2, {1}).get(0)[1].item<std::int64_t>() == 0);
    CHECK_THROWS_WITH(sub.get(3), Catch::Contains("data::Subset::get: index 3 is out of range"));
    CHECK_THROWS_WITH((data::Subset<std::vector<Tensor>>(base, {1, 6})),
                      Catch::Contains("indices[1] = 6 is out of range for a data set of size 6"));
    CHECK_THROWS_WITH((data::Subset<std::vector<Tensor>>(nullptr, {})), Catch::Contains("null"));
}

TEST_CASE("data::random_split: sizes, disjoint cover, randperm's order, reproducible", "[data][random]") {
    auto ds = std::make_shared<data::TensorDataset>(numbered(10));
    generator g(17);
    auto parts = data::random_split(ds, {6, 4, 0}, g);
    REQUIRE(parts.size() == 3);
    CHECK(parts[0].size() == 6);
    CHECK(parts[1].size() == 4);
    CHECK(parts[2].size() == 0);
    // Consecutive pieces of randperm(10) drawn from the same seed.
    generator h(17);
    const std::vector<std::int64_t> perm = values(randperm(10, dtype::int64, h));
    CHECK(parts[0].indices() == std::vector<std::int64_t>(perm.begin(), perm.begin() + 6));
    CHECK(parts[1].indices() == std::vector<std::int64_t>(perm.begin() + 6, perm.end()));
    std::set<std::int64_t> all;
    for (auto& p : parts)
        for (std::int64_t i = 0; i < p.size(); ++i) {
            CHECK(p.dataset() == ds);
            all.insert(p.get(i)[1].item<std::int64_t>() / 10);
        }
    CHECK(all.size() == 10);  // disjoint and covering

    // The default generator: manual_seed makes it reproducible.
    manual_seed(4);
    const auto a = data::random_split(*ds, std::vector<std::int64_t>{5, 5});
    manual_seed(4);
    const auto b = data::random_split(*ds, std::vector<int>{5, 5});
    CHECK(a[0].indices() == b[0].indices());
    CHECK(a[1].indices() == b[1].indices());
    CHECK(a[0].dataset() != ds);  // by value: a copy the subsets share
    CHECK(a[0].dataset() == a[1].dataset());
}

TEST_CASE("data::random_split: fractions as PyTorch >= 1.13 (floor, then the rest one by one)", "[data]") {
    const auto sizes = [](std::int64_t n, std::vector<double> fractions) {
        std::vector<std::int64_t> out;
        for (const auto& p : data::random_split(numbered(n), fractions)) out.push_back(p.size());
        return out;
    };
    CHECK(sizes(10, {0.33, 0.33, 0.34}) == std::vector<std::int64_t>{4, 3, 3});  // 3+3+3, one more to the first
    CHECK(sizes(5, {0.5, 0.5}) == std::vector<std::int64_t>{3, 2});
    CHECK(sizes(7, {0.25, 0.25, 0.25, 0.25}) == std::vector<std::int64_t>{2, 2, 2, 1});
    CHECK(sizes(10, {0.8, 0.2}) == std::vector<std::int64_t>{8, 2});
    CHECK(sizes(3, {1.0, 0.0}) == std::vector<std::int64_t>{3, 0});
    CHECK(sizes(10, {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}) == std::vector<std::int64_t>(10, 1));
    const auto braced = data::random_split(numbered(10), {0.7, 0.3});
    CHECK(braced[0].size() == 7);

    const data::TensorDataset ds = numbered(10);
    CHECK_THROWS_WITH(data::random_split(ds, {0.5, 0.4}), Catch::Contains("fractions must sum to 1"));
    CHECK_THROWS_WITH(data::random_split(ds, {1.5, -0.5}), Catch::Contains("fraction at index 0 is not between 0 and 1"));
    CHECK_THROWS_WITH(data::random_split(ds, {6, 3}),
                      Catch::Contains("sum of input lengths (9) does not equal the length of the input data set (10)"));
    CHECK_THROWS_WITH(data::random_split(ds, {12, -2}), Catch::Contains("length at index 1 is negative"));
    CHECK_THROWS_WITH(data::random_split(ds, std::vector<int>{}), Catch::Contains("at least one length"));
    CHECK_THROWS_WITH(data::random_split(std::shared_ptr<data::TensorDataset>(), {1}), Catch::Contains("null"));
}

// ---------------------------------------------------------------------------- default_collate

TEST_CASE("data::default_collate: stacks tensors, numbers to 1-D tensors, keeps pairs, tuples, vectors",
          "[data]") {
    const Tensor a = randn({2, 3}), b = randn({2, 3});
    const Tensor s = data::default_collate(std::vector<Tensor>{a, b});
    CHECK(s.sizes() == int_list{2, 2, 3});
    CHECK(same(s.narrow(0, 0, 1), a.reshape({1, 2, 3})));
    CHECK(same(s.narrow(0, 1, 1), b.reshape({1, 2, 3})));

    using ex = std::tuple<Tensor, std::int64_t, double, float, bool>;
    const auto t = data::default_collate(std::vector<ex>{{a, 3, 0.5, 1.5f, true}, {b, -1, 2.0, 2.5f, false}});
    static_assert(std::is_same_v<std::remove_cvref_t<decltype(t)>, std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor>>);
    CHECK(std::get<0>(t).sizes() == int_list{2, 2, 3});
    CHECK(std::get<1>(t).type() == dtype::int64);
    CHECK(values(std::get<1>(t)) == std::vector<std::int64_t>{3, -1});
    CHECK(std::get<2>(t).type() == dtype::float64);
    CHECK(std::get<2>(t).to_vector<double>() == std::vector<double>{0.5, 2.0});
    CHECK(std::get<3>(t).type() == dtype::float32);
    CHECK(std::get<4>(t).type() == dtype::bool_);

    // A vector of pairs: position by position.
    using nested = std::vector<std::pair<Tensor, int>>;
    const auto n = data::default_collate(std::vector<nested>{{{a, 1}, {b, 2}}, {{b, 3}, {a, 4}}});
    static_assert(std::is_same_v<std::remove_cvref_t<decltype(n)>, std::vector<std::pair<Tensor, Tensor>>>);
    REQUIRE(n.size() == 2);
    CHECK(same(n[1].first.narrow(0, 0, 1), b.reshape({1, 2, 3})));
    CHECK(values(n[1].second) == std::vector<std::int64_t>{2, 4});

    static_assert(data::default_collatable<std::vector<std::tuple<Tensor, int>>>);
    static_assert(!data::default_collatable<std::string>);
    static_assert(!data::default_collatable<std::pair<Tensor, std::string>>);

    CHECK_THROWS_WITH(data::default_collate(std::vector<Tensor>{}), Catch::Contains("the batch is empty"));
    CHECK_THROWS_WITH(data::default_collate(std::vector<Tensor>{a, randn({3, 2})}),
                      Catch::Contains("equal size") && Catch::Contains("[3, 2]"));
    CHECK_THROWS_WITH(data::default_collate(std::vector<std::vector<Tensor>>{{a, b}, {a}}),
                      Catch::Contains("example 1 has 1"));
    CHECK_THROWS_WITH(data::default_collate(std::vector<std::vector<int>>{{1, 2}, {3}}),
                      Catch::Contains("should be of equal size"));
}

// --------------------------------------------------------------------------------- DataLoader

TEST_CASE("data::DataLoader: batches in order, rows as narrow picks them, len(loader) and drop_last",
          "[data]") {
    const data::TensorDataset ds = numbered(10);
    for (int workers : {0, 1}) {
        INFO("num_workers " << workers);
        data::DataLoader loader(ds, {.batch_size = 3, .num_workers = workers});
        static_assert(std::is_same_v<decltype(loader), data::DataLoader<std::vector<Tensor>, std::vector<Tensor>>>);
        CHECK(loader.size() == 4);
        const auto batches = epoch(loader);
        REQUIRE(batches.size() == 4);
        for (std::int64_t k = 0; k < 4; ++k) {
            const std::int64_t len = k < 3 ? 3 : 1;
            CHECK(same(batches[static_cast<std::size_t>(k)][0], ds.tensors()[0].narrow(0, 3 * k, len)));
            CHECK(same(batches[static_cast<std::size_t>(k)][1], ds.tensors()[1].narrow(0, 3 * k, len)));
        }
        CHECK(epoch(loader).size() == 4);  // a second epoch, the same
    }
    // len(loader) = ceil(n / b), floor with drop_last; the epochs have that many batches.
    for (auto [n, b, drop, expected] : std::vector<std::tuple<std::int64_t, std::int64_t, bool, std::int64_t>>{
             {10, 3, false, 4}, {10, 3, true, 3}, {9, 3, false, 3}, {9, 3, true, 3}, {2, 5, false, 1},
             {2, 5, true, 0}, {1, 1, true, 1}}) {
        INFO(n << " " << b << " " << drop);
        for (int workers : {0, 1}) {
            data::DataLoader loader(numbered(n), {.batch_size = b, .num_workers = workers, .drop_last = drop});
            CHECK(loader.size() == expected);
            const auto batches = epoch(loader);
            CHECK(static_cast<std::int64_t>(batches.size()) == expected);
            // Full batches, but for a smaller last one without drop_last.
            for (std::size_t k = 0; k < batches.size(); ++k)
                CHECK(batches[k][0].size(0) == (k + 1 < batches.size() || drop ? b : n - b * (expected - 1)));
        }
    }
    // An empty data set: no batches; begin() is end().
    data::DataLoader empty(data::TensorDataset(zeros({0, 2})), {.batch_size = 2, .num_workers = 1});
    CHECK(empty.size() == 0);
    CHECK(empty.begin() == empty.end());
    static_assert(std::ranges::input_range<data::DataLoader<std::vector<Tensor>>>);
}

TEST_CASE("data::DataLoader shuffle: every index once per epoch, randperm's order, a new one each epoch",
          "[data][random]") {
    const std::int64_t n = 23;
    const data::TensorDataset ds = numbered(n);
    for (int workers : {0, 1}) {
        INFO("num_workers " << workers);
        data::DataLoader loader(ds, {.batch_size = 4, .shuffle = true, .num_workers = workers});
        manual_seed(123);
        std::vector<std::vector<std::int64_t>> orders;
        for (int e = 0; e < 3; ++e) {
            std::vector<std::int64_t> order;
            for (auto& batch : loader) {
                CHECK(same(batch[0], ds.tensors()[0].index_select(0, from_vector(indices_of(batch)))));
                for (std::int64_t i : indices_of(batch)) order.push_back(i);
            }
            std::vector<std::int64_t> sorted = order;
            std::sort(sorted.begin(), sorted.end());
            std::vector<std::int64_t> all(static_cast<std::size_t>(n));
            std::iota(all.begin(), all.end(), std::int64_t{0});
            CHECK(sorted == all);
            orders.push_back(order);
        }
        CHECK(orders[0] != orders[1]);
        manual_seed(123);
        for (int e = 0; e < 3; ++e) CHECK(orders[static_cast<std::size_t>(e)] == values(randperm(n)));
    }
    // A generator of its own: the default generator neither matters nor moves.
    generator mine(77);
    data::DataLoader loader(ds, {.batch_size = 5, .shuffle = true, .generator = &mine});
    manual_seed(1);
    std::vector<std::int64_t> order;
    for (auto& batch : loader)
        for (std::int64_t i : indices_of(batch)) order.push_back(i);
    generator same_seed(77);
    CHECK(order == values(randperm(n, dtype::int64, same_seed)));
    CHECK(default_generator().get_state().engine == generator(1).get_state().engine);
}

TEST_CASE("data::DataLoader: the worker thread gives the batches the calling thread gives", "[data][thread]") {
    const data::TensorDataset ds(randn({37, 4}), randint(0, 5, {37}), randn({37}, dtype::float64));
    for (bool drop : {false, true})
        for (int prefetch : {1, 2, 5}) {
            INFO("drop_last " << drop << ", prefetch_factor " << prefetch);
            data::DataLoader plain(ds, {.batch_size = 8, .shuffle = true, .drop_last = drop});
            data::DataLoader worker(
                ds, {.batch_size = 8, .shuffle = true, .num_workers = 1, .drop_last = drop, .prefetch_factor = prefetch});
            manual_seed(9);
            const auto a1 = epoch(plain), a2 = epoch(plain);
            const auto after_plain = default_generator().get_state().engine;
            manual_seed(9);
            const auto b1 = epoch(worker), b2 = epoch(worker);
            CHECK(default_generator().get_state().engine == after_plain);
            REQUIRE(a1.size() == b1.size());
            REQUIRE(a2.size() == b2.size());
            for (std::size_t k = 0; k < a1.size(); ++k)
                for (std::size_t f = 0; f < 3; ++f) {
                    CHECK(same(a1[k][f], b1[k][f]));
                    CHECK(same(a2[k][f], b2[k][f]));
                }
        }
}

TEST_CASE("data::DataLoader: an exception from get() surfaces, as is, at the batch that holds the example",
          "[data][thread]") {
    for (int workers : {0, 1}) {
        INFO("num_workers " << workers);
        // Example 9 is in batch 2 (examples 8 .. 11).
        auto ds = std::make_shared<flaky_dataset>(20, 9);
        data::DataLoader loader(ds, {.batch_size = 4, .num_workers = workers});
        std::vector<std::int64_t> seen;
        try {
            for (auto& batch : loader) seen.push_back(batch.size(0));
            FAIL("no exception");
        } catch (const bad_example& e) {
            CHECK(e.index == 9);
            CHECK(std::string(e.what()) == "bad example 9");
        }
        CHECK(seen == std::vector<std::int64_t>{4, 4});

        // Iterating by hand: the ++ that makes batch 2 throws; the next ++ goes on with batch 3.
        auto it = loader.begin();
        CHECK(values(*it) == std::vector<std::int64_t>{0, 1, 2, 3});
        ++it;
        CHECK_THROWS_AS(++it, bad_example);
        CHECK_FALSE(it == loader.end());
        CHECK_THROWS_WITH(*it, Catch::Contains("no batch here"));
        ++it;
        CHECK(values(*it) == std::vector<std::int64_t>{12, 13, 14, 15});
        ++it;
        ++it;
        CHECK(it == loader.end());

        // In the first batch: begin() throws.
        data::DataLoader first(std::make_shared<flaky_dataset>(8, 1), {.batch_size = 4, .num_workers = workers});
        CHECK_THROWS_AS(first.begin(), bad_example);
        // In the last batch: the loop ends with it.
        data::DataLoader last(std::make_shared<flaky_dataset>(8, 7), {.batch_size = 4, .num_workers = workers});
        int batches = 0;
        CHECK_THROWS_AS([&] {
            for (auto& batch : last) batches += static_cast<int>(batch.size(0) > 0);
        }(), bad_example);
        CHECK(batches == 1);
    }
}

TEST_CASE("data::DataLoader: an exception from the collate function surfaces at its batch", "[data][thread]") {
    for (int workers : {0, 1}) {
        INFO("num_workers " << workers);
        int calls = 0;  // the collate runs on one thread at a time (the worker or this one)
        data::DataLoader loader(numbered(12), {.batch_size = 3, .num_workers = workers},
                                [&calls](std::vector<std::vector<Tensor>> examples) {
                                    if (calls++ == 2) throw std::out_of_range("collate refused batch 2");
                                    return static_cast<std::int64_t>(examples.size());
                                });
        static_assert(std::is_same_v<decltype(loader)::batch_type, std::int64_t>);
        int seen = 0;
        CHECK_THROWS_WITH([&] {
            for (std::int64_t size : loader) seen += static_cast<int>(size);
        }(), "collate refused batch 2");
        CHECK(seen == 6);
    }
}

TEST_CASE("data::DataLoader: leaving an epoch early stops and joins the worker", "[data][thread]") {
    auto ds = std::make_shared<flaky_dataset>(1000, -1);
    {
        data::DataLoader loader(ds, {.batch_size = 10, .num_workers = 1, .prefetch_factor = 2});
        for (auto& batch : loader) {
            CHECK(batch.size(0) == 10);
            break;
        }
        // The worker made at most the batch taken and prefetch_factor more (it waits for room).
        CHECK(ds->calls <= 30);
        // Again, abandoning an iterator by hand after two batches.
        auto it = loader.begin();
        ++it;
        CHECK(values(*it)[0] == 10);
    }  // the iterator, then the loader: both gone, the thread joined
    CHECK(ds->calls <= 30 + 40);

    // The iterator keeps its epoch's data set: the loader may go first.
    auto it = [] {
        data::DataLoader loader(numbered(6), {.batch_size = 2, .num_workers = 1});
        return loader.begin();
    }();
    std::vector<std::int64_t> rest;
    for (; it != std::default_sentinel; ++it)
        for (std::int64_t i : indices_of(*it)) rest.push_back(i);
    CHECK(rest == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5});

    // Two epochs of one loader at once (as two iter(loader)), each with its worker.
    data::DataLoader loader(numbered(8), {.batch_size = 2, .num_workers = 1});
    auto a = loader.begin(), b = loader.begin();
    ++a;
    CHECK(indices_of(*a) == std::vector<std::int64_t>{2, 3});
    CHECK(indices_of(*b) == std::vector<std::int64_t>{0, 1});
}

TEST_CASE("data::DataLoader: other example types, custom collate, autograd and bad options", "[data]") {
    // (tensor, label) pairs, default_collate: a pair of batches.
    data::DataLoader pairs(pair_dataset{}, {.batch_size = 4, .num_workers = 1});
    static_assert(std::is_same_v<decltype(pairs)::batch_type, std::pair<Tensor, Tensor>>);
    const auto batches = epoch(pairs);
    REQUIRE(batches.size() == 2);
    CHECK(batches[0].first.sizes() == int_list{4, 2});
    CHECK(values(batches[1].second) == std::vector<std::int64_t>{1, 2, 0});
    CHECK(batches[1].first.to_vector<float>() == std::vector<float>{4, 4, 5, 5, 6, 6});

    // Batches from the calling thread keep grad mode (and history); the worker's are made under no_grad.
    const Tensor w = randn({6, 2}).requires_grad_();
    data::DataLoader plain(data::TensorDataset(w), {.batch_size = 3});
    data::DataLoader worker(data::TensorDataset(w), {.batch_size = 3, .num_workers = 1});
    CHECK((*plain.begin())[0].requires_grad());
    CHECK_FALSE((*worker.begin())[0].requires_grad());
    {
        no_grad guard;
        CHECK_FALSE((*plain.begin())[0].requires_grad());
    }

    const data::TensorDataset ds = numbered(4);
    CHECK_THROWS_WITH(data::DataLoader(ds, {.batch_size = 0}), Catch::Contains("batch_size should be a positive integer"));
    CHECK_THROWS_WITH(data::DataLoader(ds, {.num_workers = -1}), Catch::Contains("num_workers option should be non-negative"));
    CHECK_THROWS_WITH(data::DataLoader(ds, {.num_workers = 2}), Catch::Contains("at most one worker thread"));
    CHECK_THROWS_WITH(data::DataLoader(ds, {.num_workers = 1, .prefetch_factor = 0}),
                      Catch::Contains("prefetch_factor should be a positive integer"));
    CHECK_THROWS_WITH(data::DataLoader(std::shared_ptr<data::TensorDataset>(), {}), Catch::Contains("null"));
    CHECK_THROWS_WITH((data::DataLoader<std::vector<Tensor>, int>(
                          ds, {}, std::function<int(std::vector<std::vector<Tensor>>)>())),
                      Catch::Contains("collate function is empty"));
    data::DataLoader<std::vector<Tensor>> ended(ds, {.batch_size = 4});
    auto it = ended.begin();
    ++it;
    CHECK(it == ended.end());
    CHECK_THROWS_WITH(*it, Catch::Contains("no batch here"));
}

// ----------------------------------------------------------------------------------- progress

TEST_CASE("data::progress: one line at the end off a terminal, redrawn in place on one", "[data]") {
    std::ostringstream log;
    {
        data::progress bar(log, 200, "epoch 3/10", data::progress::display::automatic, 10);
        CHECK_FALSE(bar.redraws());  // a string stream is no terminal
        bar.update(120);
        bar.set_postfix("loss 0.123");
        CHECK(bar.line() == "epoch 3/10 [======>   ] 120/200 loss 0.123");
        CHECK(log.str().empty());  // nothing until it closes
    }
    CHECK(log.str() == "epoch 3/10 [======>   ] 120/200 loss 0.123\n");

    std::ostringstream tty;
    data::progress bar(tty, 4, "", data::progress::display::terminal, 4);
    CHECK(bar.redraws());
    CHECK(tty.str() == "\r[    ] 0/4");
    bar.set_postfix({{"loss", 0.123456}, {"acc", 1.0}});
    bar.update();
    CHECK(tty.str() == "\r[    ] 0/4\r[=>  ] 1/4 loss 0.1235 acc 1");
    bar.set_postfix("");
    bar.update(3);
    bar.close();
    bar.close();  // once
    // The last line is blanked to the length of the longest before it (28), and drawn once.
    CHECK(tty.str() == "\r[    ] 0/4\r[=>  ] 1/4 loss 0.1235 acc 1\r[====] 4/4" + std::string(18, ' ') + "\n");
    CHECK_THROWS_WITH(bar.update(), Catch::Contains("closed"));

    std::ostringstream other;
    data::progress empty(other, 0, "", data::progress::display::lines, 3);
    CHECK(empty.line() == "[===] 0/0");
    CHECK_THROWS_WITH(data::progress(other, -1), Catch::Contains("total must be non-negative"));
    CHECK_THROWS_WITH(data::progress(other, 1, "", data::progress::display::lines, 0),
                      Catch::Contains("width must be positive"));
}
