// Issue 15's chain floors measured by alternation, for machines too noisy for back-to-back
// benchmarks: rounds of calls of one path, then of the other, in the same process, and the
// minimum and median over the rounds.
//   interleaved_chain [rounds] [N...]
// For each N (default 65536, 1048576, 16777216), the chain tanh(x*w + b) * sigmoid(x) in float32:
//   - jit::script's optimized plan on one thread against the same-math Highway hand loop
//     (bench/chain_hand.hpp), thread CPU time: the ">= 0.9 of the hand loop" floor;
//   - the plan with num_threads = 1 against num_threads = 2, wall time: the ">= 1.7x on two
//     threads at 16M" floor (read it with the load average printed next to it).
// A plain program (no Google Benchmark runner): it prints one line per N and floor.
#include <graft/graft.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "chain_hand.hpp"

#include <stdlib.h>  // getloadavg

using graft::Tensor;

namespace {

Tensor chain(Tensor x, Tensor w, Tensor b) { return graft::tanh(x * w + b) * graft::sigmoid(x); }

double thread_cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double wall_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct stats {
    double min = 0, median = 0;
};

stats summarize(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return {v.front(), v[v.size() / 2]};
}

std::string load() {
    double l[3] = {0, 0, 0};
    if (getloadavg(l, 3) < 0) return "?";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f %.2f %.2f", l[0], l[1], l[2]);
    return buf;
}

// Rounds of `calls` calls of a, then of b; per-call seconds of each round.
template <class A, class B, class Clock>
void alternate(int rounds, int calls, const A& a, const B& b, const Clock& clock, std::vector<double>& ta,
               std::vector<double>& tb) {
    for (int r = 0; r < rounds; ++r) {
        const double t0 = clock();
        for (int i = 0; i < calls; ++i) a();
        const double t1 = clock();
        for (int i = 0; i < calls; ++i) b();
        const double t2 = clock();
        ta.push_back((t1 - t0) / calls);
        tb.push_back((t2 - t1) / calls);
    }
}

}  // namespace

int main(int argc, char** argv) {
    const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 21;
    std::vector<std::int64_t> sizes;
    for (int i = 2; i < argc; ++i) sizes.push_back(std::atoll(argv[i]));
    if (sizes.empty()) sizes = {65536, 1048576, 16777216};
    const auto hand = chain_hand::hand_for_current_target();
    std::printf("target %s, %d rounds, load average before: %s\n",
                graft::kernels::target_name(graft::kernels::current_target()), rounds, load().c_str());
    for (const std::int64_t n : sizes) {
        const int calls = static_cast<int>(std::max<std::int64_t>(1, 20000000 / (n * 8 + 2000)));
        const Tensor x = graft::randn({n}), w = graft::randn({n}), b = graft::randn({n});
        Tensor y = graft::zeros({n});
        graft::jit::options one, two;
        one.num_threads = 1;
        two.num_threads = 2;
        auto f1 = graft::jit::script(chain, one);
        auto f2 = graft::jit::script(chain, two);
        for (int i = 0; i < 3; ++i) {  // profile, specialize
            (void)f1(x, w, b);
            (void)f2(x, w, b);
        }
        std::vector<double> tj, th, t1, t2;
        if (hand.fwd != nullptr)
            alternate(
                rounds, calls, [&] { (void)f1(x, w, b); },
                [&] {
                    hand.fwd(x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(),
                             static_cast<std::size_t>(n));
                },
                thread_cpu_seconds, tj, th);
        alternate(
            rounds, calls, [&] { (void)f1(x, w, b); }, [&] { (void)f2(x, w, b); }, wall_seconds, t1, t2);
        if (hand.fwd != nullptr) {
            const stats j = summarize(tj), h = summarize(th);
            std::printf("N=%lld  one thread, CPU time: jit min %.1f / median %.1f us, hand loop %.1f / %.1f us: "
                        "hand/jit %.2f / %.2f (floor >= 0.9)\n",
                        static_cast<long long>(n), j.min * 1e6, j.median * 1e6, h.min * 1e6, h.median * 1e6,
                        h.min / j.min, h.median / j.median);
        }
        const stats s1 = summarize(t1), s2 = summarize(t2);
        std::printf("N=%lld  wall time: 1 thread min %.1f / median %.1f us, 2 threads %.1f / %.1f us: "
                    "1t/2t %.2f / %.2f (floor >= 1.7 at 16M, idle machine); load %s\n",
                    static_cast<long long>(n), s1.min * 1e6, s1.median * 1e6, s2.min * 1e6, s2.median * 1e6,
                    s1.min / s2.min, s1.median / s2.median, load().c_str());
    }
    return 0;
}
