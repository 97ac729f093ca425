// graft::distributed's process group under mpirun (-np 2 and -np 3, CTest): every rank runs
// every test case; expectations are closed forms of the ranks' contributions.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <graft/distributed.hpp>
#include <graft/graft.hpp>

using namespace graft;
namespace dist = graft::distributed;

namespace {
/// The group's timeout (init_process_group in main): short, so that a rank left waiting by its
/// peers fails this test in a minute rather than after the default 30, long enough that a
/// loaded machine never trips it in a passing run.
constexpr std::chrono::milliseconds group_timeout = std::chrono::seconds(60);

/// [n] of value(i) for i in 0..n-1.
template <class F>
Tensor filled(std::int64_t n, dtype t, F value) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = value(i);
    return from_vector(v).to(t);
}
}  // namespace

TEST_CASE("distributed: rank and world size", "[distributed]") {
    CHECK(dist::is_initialized());
    CHECK(dist::get_world_size() >= 2);
    CHECK(dist::get_rank() >= 0);
    CHECK(dist::get_rank() < dist::get_world_size());
    dist::barrier();
}

TEST_CASE("distributed: all_reduce sums and averages in place", "[distributed]") {
    const int r = dist::get_rank(), p = dist::get_world_size();
    for (dtype t : {dtype::float32, dtype::float64}) {
        // Rank r contributes (r + 1) * (i + 1): the sum is (i + 1) * p (p + 1) / 2.
        Tensor x = filled(1000, t, [&](std::int64_t i) { return double(r + 1) * double(i + 1); });
        const auto v0 = x._version();
        dist::all_reduce(x);
        CHECK(x._version() > v0);
        for (std::int64_t i = 0; i < 1000; i += 111)
            CHECK(x[i].item<double>() == Approx(double(i + 1) * p * (p + 1) / 2.0));
        Tensor y = filled(7, t, [&](std::int64_t i) { return double(r) + double(i); });
        dist::all_reduce(y, dist::reduce_op::avg);
        for (std::int64_t i = 0; i < 7; ++i) CHECK(y[i].item<double>() == Approx(double(p - 1) / 2.0 + double(i)));
    }
    Tensor k = filled(5, dtype::int64, [&](std::int64_t i) { return double(i * (r + 1)); });
    dist::all_reduce(k);
    for (std::int64_t i = 0; i < 5; ++i) CHECK(k[i].item<std::int64_t>() == i * p * (p + 1) / 2);
}

TEST_CASE("distributed: an asynchronous all_reduce completes on wait", "[distributed]") {
    const int r = dist::get_rank(), p = dist::get_world_size();
    Tensor x = full({100000}, double(r + 1));
    dist::work w = dist::all_reduce(x, dist::reduce_op::sum, /*async_op=*/true);
    w.wait();
    CHECK(w.is_completed());
    CHECK(x[99999].item<double>() == Approx(p * (p + 1) / 2.0));
}

TEST_CASE("distributed: broadcast, all_gather, reduce_scatter", "[distributed]") {
    const int r = dist::get_rank(), p = dist::get_world_size();
    Tensor b = full({3, 4}, double(r) * 10.0, dtype::float64);
    dist::broadcast(b, p - 1);
    CHECK(b.sum().item<double>() == Approx(12.0 * (p - 1) * 10.0));

    std::vector<Tensor> out;
    for (int i = 0; i < p; ++i) out.push_back(zeros({2, 3}));
    dist::all_gather(out, full({2, 3}, double(r) + 0.5));
    for (int i = 0; i < p; ++i) CHECK(out[static_cast<std::size_t>(i)].sum().item<double>() == Approx(6 * (i + 0.5)));

    // Rank r gives input[j] = (r + 1) * (j + 1); output on rank r is (r + 1) * p (p + 1) / 2.
    std::vector<Tensor> in;
    for (int j = 0; j < p; ++j) in.push_back(full({5}, double(r + 1) * double(j + 1)));
    Tensor o = zeros({5});
    dist::reduce_scatter(o, in);
    CHECK(o[4].item<double>() == Approx(double(r + 1) * p * (p + 1) / 2.0));
    dist::reduce_scatter(o, in, dist::reduce_op::avg);
    CHECK(o[0].item<double>() == Approx(double(r + 1) * (p + 1) / 2.0));
}

namespace {
/// The elements of a 2-d tensor in logical (row-major) order, read one by one.
std::vector<double> elements(const Tensor& t) {
    std::vector<double> v;
    for (std::int64_t i = 0; i < t.size(0); ++i)
        for (std::int64_t j = 0; j < t.size(1); ++j) v.push_back(t[i][j].item<double>());
    return v;
}
}  // namespace

TEST_CASE("distributed: collectives take non-contiguous tensors and write results back into them", "[distributed]") {
    // As PyTorch's gloo backend accepts them: graft copies to a contiguous buffer and back.
    const int r = dist::get_rank(), p = dist::get_world_size();
    const double tri = p * (p + 1) / 2.0;  // sum over ranks of (rank + 1)
    for (dtype type : {dtype::float32, dtype::float64, dtype::int64}) {
        // A transpose: rank r holds base[i][j] = (r + 1) * (4 i + j + 1), reduced through t = base.t().
        Tensor base = filled(12, type, [&](std::int64_t k) { return double(r + 1) * double(k + 1); }).view({3, 4});
        Tensor t = base.t();
        REQUIRE_FALSE(t.is_contiguous());
        const auto v0 = t._version();
        dist::all_reduce(t);
        CHECK(t._version() > v0);
        CHECK_FALSE(t.is_contiguous());  // the caller's tensor, strides unchanged
        for (std::int64_t i = 0; i < 4; ++i)
            for (std::int64_t j = 0; j < 3; ++j) CHECK(t[i][j].item<double>() == Approx(double(4 * j + i + 1) * tri));
        for (std::int64_t k = 0; k < 12; ++k)  // seen through the base: the same memory was written
            CHECK(base.view({12})[k].item<double>() == Approx(double(k + 1) * tri));
    }
    {
        // A strided slice (every other column of a 3 x 6 tensor): average; the columns between keep
        // this rank's own values.
        Tensor m = filled(18, dtype::float64, [&](std::int64_t k) { return double(r) * 100.0 + double(k); }).view({3, 6});
        Tensor cols = m.slice(1, 0, 6, 2);
        REQUIRE_FALSE(cols.is_contiguous());
        dist::all_reduce(cols, dist::reduce_op::avg);
        for (std::int64_t i = 0; i < 3; ++i)
            for (std::int64_t j = 0; j < 6; ++j) {
                const double own = double(r) * 100.0 + double(6 * i + j);
                const double avg = double(p - 1) * 50.0 + double(6 * i + j);  // mean over ranks of 100 rank + k
                CHECK(m[i][j].item<double>() == Approx(j % 2 == 0 ? avg : own));
            }
        // Asynchronous: the result is in the caller's tensor once wait() returns.
        Tensor m2 = full({4, 5}, double(r + 1), dtype::float64);
        Tensor s2 = m2.narrow(1, 1, 3);
        dist::work w = dist::all_reduce(s2, dist::reduce_op::sum, /*async_op=*/true);
        w.wait();
        for (std::int64_t i = 0; i < 4; ++i)
            for (std::int64_t j = 0; j < 5; ++j)
                CHECK(m2[i][j].item<double>() == Approx(j >= 1 && j <= 3 ? tri : double(r + 1)));
    }
    {
        // broadcast into a transpose: every rank ends with rank p - 1's values; the other half of
        // a sliced tensor stays as it was.
        Tensor bt = filled(6, dtype::float32, [&](std::int64_t k) { return double(r) * 10.0 + double(k); }).view({2, 3}).t();
        dist::broadcast(bt, p - 1);
        std::vector<double> expect;
        for (std::int64_t i = 0; i < 3; ++i)
            for (std::int64_t j = 0; j < 2; ++j) expect.push_back(double(p - 1) * 10.0 + double(3 * j + i));
        CHECK(elements(bt) == expect);
        Tensor half = full({4, 4}, double(r), dtype::float64);
        Tensor rows = half.slice(0, 1, 4, 2);  // rows 1 and 3
        dist::broadcast(rows, 0);
        for (std::int64_t i = 0; i < 4; ++i) CHECK(half[i][2].item<double>() == (i % 2 == 1 ? 0.0 : double(r)));
    }
    {
        // all_gather from a transposed input into transposed outputs (slices of one tensor).
        Tensor in = filled(6, dtype::float64, [&](std::int64_t k) { return double(r) * 10.0 + double(k); }).view({2, 3}).t();
        Tensor big = zeros({p, 2, 3}, dtype::float64);
        std::vector<Tensor> outs;
        for (int i = 0; i < p; ++i) outs.push_back(big[i].t());  // 3 x 2 views, not contiguous
        REQUIRE_FALSE(outs[0].is_contiguous());
        dist::all_gather(outs, in);
        for (int i = 0; i < p; ++i) {
            // outs[i] = rank i's input, element by element: in[a][b] = 10 i + (3 b + a).
            std::vector<double> expect;
            for (std::int64_t a = 0; a < 3; ++a)
                for (std::int64_t b = 0; b < 2; ++b) expect.push_back(double(i) * 10.0 + double(3 * b + a));
            CHECK(elements(outs[static_cast<std::size_t>(i)]) == expect);
        }
    }
    {
        // reduce_scatter from transposed inputs into a column of a larger tensor.
        std::vector<Tensor> in;
        for (int j = 0; j < p; ++j)
            in.push_back(filled(6, dtype::float64, [&](std::int64_t k) { return double(r + 1) * double(j * 6 + k); })
                             .view({2, 3})
                             .t());
        Tensor host = full({3, 2, 2}, -1.0, dtype::float64);
        Tensor out = host.select(2, 1);  // 3 x 2, strides (4, 2)
        REQUIRE_FALSE(out.is_contiguous());
        dist::reduce_scatter(out, in);
        // Rank r receives the sum over ranks of in[r]: in[r][a][b] = (rank + 1) (6 r + 3 b + a).
        for (std::int64_t a = 0; a < 3; ++a)
            for (std::int64_t b = 0; b < 2; ++b) {
                CHECK(out[a][b].item<double>() == Approx(tri * double(6 * r + 3 * b + a)));
                CHECK(host[a][b][0].item<double>() == -1.0);  // the other column is untouched
            }
    }
}

TEST_CASE("distributed: bad input is a graft::error on every rank and the group stays usable", "[distributed]") {
    const int r = dist::get_rank(), p = dist::get_world_size();
    // Ranks disagree on the size: every rank learns it from the size check, nothing is sent.
    Tensor x = zeros({r == 0 ? 4 : 5});
    CHECK_THROWS_WITH(dist::all_reduce(x), Catch::Contains("disagree"));
    // A written tensor whose elements share memory (an expanded view) has no single result.
    Tensor overlapping = zeros({1}).expand({4});
    CHECK_THROWS_WITH(dist::all_reduce(overlapping), Catch::Contains("overlap"));
    std::vector<Tensor> expanded_outputs;
    for (int i = 0; i < p; ++i) expanded_outputs.push_back(zeros({1}).expand({2}));
    CHECK_THROWS_WITH(dist::all_gather(expanded_outputs, zeros({2})), Catch::Contains("overlap"));
    Tensor w = zeros({3}).requires_grad_();
    CHECK_THROWS_WITH(dist::all_reduce(w), Catch::Contains("requires grad"));
    {
        autograd::no_grad guard;
        dist::all_reduce(w);  // fine without grad mode
    }
    Tensor b = zeros({3}, dtype::bool_);
    CHECK_THROWS_WITH(dist::all_reduce(b), Catch::Contains("not supported"));
    Tensor k = zeros({3}, dtype::int64);
    CHECK_THROWS_WITH(dist::all_reduce(k, dist::reduce_op::avg), Catch::Contains("floating-point"));
    Tensor y = zeros({2});
    CHECK_THROWS_WITH(dist::broadcast(y, p), Catch::Contains("not a rank"));
    std::vector<Tensor> few{zeros({2})};
    CHECK_THROWS_WITH(dist::all_gather(few, y), Catch::Contains("world size"));
    CHECK_THROWS_WITH(dist::init_process_group(), Catch::Contains("twice"));
    // Still usable.
    Tensor z = full({2}, 1.0);
    dist::all_reduce(z);
    CHECK(z[0].item<double>() == Approx(double(p)));
}

namespace {
/// Runs `call` on every rank, rank 1 alone passing bad input: every rank must get a graft::error
/// well before the group's timeout (nobody left waiting for the others), rank 1 its own message
/// (containing `own`), the others one naming rank 1.
template <class F>
void only_rank_1_is_bad(const char* own, F&& call) {
    const int r = dist::get_rank();
    dist::barrier();  // start together: the time measured is the call's, not a wait for a late peer
    const auto start = std::chrono::steady_clock::now();
    std::string message = "(no graft::error)";
    try {
        call(r == 1);
    } catch (const graft::error& e) {
        message = e.what();
    }
    const auto took = std::chrono::steady_clock::now() - start;
    INFO("rank " << r << ": " << message);
    CHECK(took < group_timeout / 6);
    CHECK_THAT(message, Catch::Contains(r == 1 ? own : "rank 1 reported bad input"));
}
}  // namespace

TEST_CASE("distributed: bad input on one rank only fails every rank at once and the group stays usable",
          "[distributed]") {
    const int r = dist::get_rank(), p = dist::get_world_size();
    Tensor good = full({4}, 1.0);
    // An undefined tensor and an unsupported dtype, to all_reduce and broadcast.
    only_rank_1_is_bad("undefined", [&](bool bad) {
        Tensor t = bad ? Tensor() : good.clone();
        dist::all_reduce(t);
    });
    only_rank_1_is_bad("not supported", [&](bool bad) {
        Tensor t = bad ? zeros({4}, dtype::bool_) : good.clone();
        dist::all_reduce(t);
    });
    only_rank_1_is_bad("undefined", [&](bool bad) {
        Tensor t = bad ? Tensor() : good.clone();
        dist::broadcast(t, 0);
    });
    only_rank_1_is_bad("not supported", [&](bool bad) {
        Tensor t = bad ? zeros({4}, dtype::bool_) : good.clone();
        dist::broadcast(t, 0);
    });
    // A src that is not a rank, an average of integers, a short output list, an overlapping output.
    only_rank_1_is_bad("not a rank", [&](bool bad) {
        Tensor t = good.clone();
        dist::broadcast(t, bad ? p : 0);
    });
    only_rank_1_is_bad("floating-point", [&](bool bad) {
        Tensor t = bad ? zeros({4}, dtype::int64) : good.clone();
        dist::all_reduce(t, dist::reduce_op::avg);
    });
    only_rank_1_is_bad("world size", [&](bool bad) {
        std::vector<Tensor> outs(static_cast<std::size_t>(bad ? p - 1 : p), zeros({4}));
        for (Tensor& o : outs) o = zeros({4});
        dist::all_gather(outs, good);
    });
    only_rank_1_is_bad("overlap", [&](bool bad) {
        Tensor out = bad ? zeros({1}).expand({4}) : zeros({4});
        std::vector<Tensor> in(static_cast<std::size_t>(p));
        for (Tensor& i : in) i = full({4}, 1.0);
        dist::reduce_scatter(out, in);
    });
    if (p >= 3) {
        // Ranks 1 and 2 both bad: rank 0 hears of both; each bad rank gets its own message.
        dist::barrier();
        std::string message = "(no graft::error)";
        try {
            Tensor t = r == 1 || r == 2 ? Tensor() : good.clone();
            dist::all_reduce(t);
        } catch (const graft::error& e) {
            message = e.what();
        }
        CHECK_THAT(message, Catch::Contains(r == 1 || r == 2 ? "undefined" : "ranks 1 and 2"));
    }
    // Still usable on every rank: a normal all_reduce sums.
    Tensor z = full({3}, double(r + 1));
    dist::all_reduce(z);
    for (std::int64_t i = 0; i < 3; ++i) CHECK(z[i].item<double>() == Approx(p * (p + 1) / 2.0));
}

TEST_CASE("distributed: DistributedSampler gives disjoint, equal shards of one permutation", "[distributed]") {
    // Five simulated ranks over 23 samples: 5 each, the 2 missing padded from the start.
    std::vector<int> seen(23, 0);
    std::vector<std::int64_t> first_epoch;
    for (int r = 0; r < 5; ++r) {
        dist::DistributedSampler s(23, 5, r, true, 7);
        CHECK(s.num_samples() == 5);
        const auto idx = s.indices();
        REQUIRE(idx.size() == 5);
        for (auto i : idx) ++seen[static_cast<std::size_t>(i)];
        if (r == 0) first_epoch = idx;
        s.set_epoch(1);
        if (r == 0) CHECK(s.indices() != first_epoch);  // another permutation per epoch
    }
    int twice = 0;
    for (int c : seen) {
        CHECK(c >= 1);
        twice += c == 2;
    }
    CHECK(twice == 2);
    // drop_last: 4 each, 3 samples left out; no shuffle: rank r takes r, r + 5, ...
    dist::DistributedSampler plain(23, 5, 2, false, 0, true);
    CHECK(plain.indices() == std::vector<std::int64_t>{2, 7, 12, 17});
    // The default process group's rank and size; the same permutation on every rank.
    const int p = dist::get_world_size();
    dist::DistributedSampler mine(10);
    const Tensor idx = from_vector(mine.indices());
    REQUIRE(idx.numel() == (10 + p - 1) / p);
    std::vector<Tensor> all;
    for (int i = 0; i < p; ++i) all.push_back(zeros({idx.numel()}, dtype::int64));
    dist::all_gather(all, idx);
    std::vector<int> covered(10, 0);
    for (const Tensor& shard : all)
        for (std::int64_t k = 0; k < shard.numel(); ++k) covered[static_cast<std::size_t>(shard[k].item<std::int64_t>())] = 1;
    CHECK(std::count(covered.begin(), covered.end(), 1) == 10);  // the ranks' shards cover the data set
    CHECK_THROWS_WITH(dist::DistributedSampler(10, 2, 2), Catch::Contains("Invalid rank"));
}

namespace {
/// Runs after every test case, outside Catch (it leaves the group unusable where it fails): a
/// collective whose ranks pass different element counts, started without all_reduce's agreement
/// check (as DistributedDataParallel's buckets are), fails inside MPI's completion on a rank that
/// receives more than it posted (MPI_ERR_TRUNCATE). That must be a graft::error naming MPI_Test
/// (Open MPI would otherwise abort the job from MPI_COMM_WORLD's handler), and the group then
/// refuses further calls. Returns the number of failed checks on this rank.
int mpi_error_is_graft_error() {
    constexpr const char* op = "test: mismatched all_reduce";
    const int r = dist::get_rank();
    Tensor t = zeros({r == 0 ? 8 : 4}, dtype::float64);  // rank 0 sends more than the others receive
    int failures = 0, failed = 0;
    try {
        (void)dist::detail::start_all_reduce(op, dist::detail::checked_group(op), t, dist::reduce_op::sum, false);
    } catch (const graft::error& e) {
        failed = 1;
        const std::string what = e.what();
        std::printf("rank %d: caught: %s\n", r, what.c_str());
        failures += what.find("test: mismatched all_reduce: MPI_Test failed: ") == std::string::npos;
        try {
            dist::barrier();
            ++failures;
        } catch (const graft::error& again) {
            failures += std::string(again.what()).find("unusable: an earlier collective failed") == std::string::npos;
        }
    }
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    failures += any == 0;  // some rank received more than it posted
    if (failures) std::printf("rank %d: %d failed checks on the mismatched all_reduce\n", r, failures);
    return failures;
}
}  // namespace

int main(int argc, char** argv) {
    dist::init_process_group({.timeout = group_timeout});
    int result = Catch::Session().run(argc, argv);
    result += mpi_error_is_graft_error();
    int worst = result;
    MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);  // one failing rank fails all
    dist::destroy_process_group();
    return worst;
}
