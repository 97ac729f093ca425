// Executor stress (issue 14): 8 threads call one jit::script with changing shapes, dtypes and
// requires-grad patterns while another thread changes the process-wide fusion strategy and
// flushes the script's compilation cache; every result is checked against eager. Prints the
// calls made, wrong results (must be 0), the resident set size after warm-up and at the end
// (flushed plans are freed: no growth), and the load average.
//   ./build/bench/stress_jit [total_calls=1000000] [threads=8]
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <graft/graft.hpp>

namespace {

using namespace graft;

long rss_kib() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
    return -1;
}

std::string load_average() {
    std::ifstream in("/proc/loadavg");
    std::string a, b, c;
    in >> a >> b >> c;
    return a + " " + b + " " + c;
}

Tensor f(const Tensor& x, const Tensor& w, const Tensor& b) { return (tanh(x * w + b) * sigmoid(x)).sum(); }

}  // namespace

int main(int argc, char** argv) {
    const long total = argc > 1 ? std::atol(argv[1]) : 1000000;
    const int nthreads = argc > 2 ? std::atoi(argv[2]) : 8;
    auto fn = jit::script(f);  // process-wide options, re-read at every flush
    std::atomic<long> calls{0}, wrong{0}, flushes{0};
    std::atomic<bool> stop{false};
    const auto worker = [&](int id) {
        for (long i = 0;; ++i) {
            if (calls.fetch_add(1) >= total) break;
            const std::int64_t n = 2 + (id + i) % 7;
            const dtype t = (i / 11) % 2 ? dtype::float64 : dtype::float32;
            Tensor x = randn({n}, t), w = randn({n}, t), b = randn({n}, t);
            const bool grad = (id + i) % 3 == 0;
            if (grad) x.requires_grad_();
            const Tensor y = fn(x, w, b), want = f(x, w, b);
            if (!allclose(y.detach(), want.detach(), 1e-5, 1e-5) || y.requires_grad() != grad) ++wrong;
            if (grad) {
                const auto g = autograd::grad({y}, {x}), ge = autograd::grad({want}, {x});
                if (!allclose(g[0], ge[0], 1e-5, 1e-5)) ++wrong;
            }
        }
    };
    const std::vector<jit::strategy> strategies{jit::default_fusion_strategy::value(),
                                                jit::strategy{{jit::fusion_behavior::dynamic_, 3}},
                                                jit::strategy{{jit::fusion_behavior::static_, 1}}};
    // The reference RSS is taken once a tenth of the calls ran (threads, pools and caches warm).
    std::atomic<long> rss_start{-1}, rss_peak{0};
    const auto t0 = std::chrono::steady_clock::now();
    std::thread flusher([&] {
        std::size_t k = 0;
        while (!stop.load()) {
            const long rss = rss_kib();
            if (rss_start.load() < 0 && calls.load() >= total / 10) rss_start = rss;
            if (rss_start.load() >= 0) rss_peak = std::max(rss_peak.load(), rss);
            (void)jit::set_fusion_strategy(strategies[k++ % strategies.size()]);
            fn.flush_compilation_cache();
            ++flushes;
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    });
    std::vector<std::thread> threads;
    for (int id = 0; id < nthreads; ++id) threads.emplace_back(worker, id);
    for (auto& t : threads) t.join();
    stop = true;
    flusher.join();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fn.flush_compilation_cache();
    const long rss_end = rss_kib();
    std::printf("stress_jit: %ld calls on %d threads in %.1f s, %ld flushes with strategy changes, %ld wrong results\n",
                std::min(calls.load(), total), nthreads, seconds, flushes.load(), wrong.load());
    const long start = rss_start.load();
    std::printf("  RSS after 10%% of the calls %ld KiB, peak after that %ld KiB, at the end %ld KiB (%+.1f%%); "
                "retired plans left %zu; load average %s\n",
                start, rss_peak.load(), rss_end, 100.0 * static_cast<double>(rss_end - start) / static_cast<double>(start),
                fn.debug_state().retired_plans, load_average().c_str());
    return wrong.load() == 0 ? 0 : 1;
}
