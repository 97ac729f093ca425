#pragma once
// Settings of the profiling executor: the fusion strategy (how many STATIC
// and DYNAMIC specializations a graph may get before it runs unoptimized for
// good), the number of profiling runs, fusion on/off and when the profiling
// data is released. Each can be set in code, process-wide with the setters
// (like torch.jit.set_fusion_strategy), or by GRAFT_JIT_* environment
// variables read once at first use.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "graft/core/error.hpp"

namespace graft::jit {

/// What a specialization assumes about shapes.
enum class fusion_behavior {
    static_,   // exact observed sizes and strides: loop bounds precomputed
    dynamic_,  // sizes symbolic: guards on dtype, rank, contiguity and requires_grad only
};

[[nodiscard]] inline const char* to_string(fusion_behavior b) noexcept {
    return b == fusion_behavior::static_ ? "STATIC" : "DYNAMIC";
}

/// A fusion strategy at run time: (behaviour, depth) pairs, tried in order.
/// The depths add up to the bailout depth: the number of specializations a graph
/// may get in total.
using strategy = std::vector<std::pair<fusion_behavior, std::size_t>>;

/// Compile-time strategy steps: jit::fusion_strategy<jit::static_<2>, jit::dynamic_<10>>.
template <std::size_t Depth>
struct static_ {
    static constexpr fusion_behavior behavior = fusion_behavior::static_;
    static constexpr std::size_t depth = Depth;
};
template <std::size_t Depth>
struct dynamic_ {
    static constexpr fusion_behavior behavior = fusion_behavior::dynamic_;
    static constexpr std::size_t depth = Depth;
};

template <class T>
concept strategy_step = requires {
    { T::behavior } -> std::convertible_to<fusion_behavior>;
    { T::depth } -> std::convertible_to<std::size_t>;
};

/// A fusion strategy as a type (a policy); converts to jit::strategy.
template <class... Steps>
struct fusion_strategy {
    static_assert(sizeof...(Steps) > 0, "jit::fusion_strategy<...> needs at least one step (static_<N> or dynamic_<N>)");
    static_assert((strategy_step<Steps> && ...),
                  "jit::fusion_strategy<...>: every step must be jit::static_<N> or jit::dynamic_<N>");
    static constexpr std::size_t bailout_depth = (Steps::depth + ...);
    [[nodiscard]] static strategy value() { return {{Steps::behavior, Steps::depth}...}; }
    operator strategy() const { return value(); }  // NOLINT: a policy is meant to convert
};

/// PyTorch's default: two static specializations, then ten dynamic ones.
using default_fusion_strategy = fusion_strategy<static_<2>, dynamic_<10>>;

/// Sum of the depths.
[[nodiscard]] inline std::size_t bailout_depth(const strategy& s) {
    std::size_t d = 0;
    for (const auto& [b, n] : s) d += n;
    return d;
}

/// The behaviour for an executor with `remaining` specializations left: the strategy's
/// steps are consumed front to back as bailouts use up the depth (PyTorch's getCurrentBehavior).
[[nodiscard]] inline fusion_behavior current_behavior(const strategy& s, std::size_t remaining) {
    std::size_t depth = 0;
    for (std::size_t i = s.size(); i-- > 0;) {
        depth += s[i].second;
        if (remaining <= depth) return s[i].first;
    }
    return s.empty() ? fusion_behavior::static_ : s.front().first;
}

inline std::ostream& operator<<(std::ostream& os, const strategy& s) {
    os << '[';
    for (std::size_t i = 0; i < s.size(); ++i)
        os << (i ? ", " : "") << '(' << to_string(s[i].first) << ", " << s[i].second << ')';
    return os << ']';
}

/// Parses "STATIC:2,DYNAMIC:10" (case-insensitive behaviour names).
[[nodiscard]] inline strategy parse_strategy(std::string_view text) {
    strategy r;
    std::size_t pos = 0;
    const auto bad = [&] {
        graft::detail::fail(graft::detail::concat("jit: cannot parse fusion strategy '", text,
                                                  "': expected e.g. STATIC:2,DYNAMIC:10"));
    };
    while (pos < text.size()) {
        std::size_t end = text.find(',', pos);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view item = text.substr(pos, end - pos);
        const std::size_t colon = item.find(':');
        if (colon == std::string_view::npos) bad();
        std::string name(item.substr(0, colon));
        for (char& c : name) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
        fusion_behavior b{};
        if (name == "STATIC") b = fusion_behavior::static_;
        else if (name == "DYNAMIC") b = fusion_behavior::dynamic_;
        else bad();
        const std::string digits(item.substr(colon + 1));
        if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) bad();
        r.emplace_back(b, static_cast<std::size_t>(std::stoull(digits)));
        pos = end + 1;
    }
    if (r.empty()) bad();
    return r;
}

/// How an executor behaves. Defaults come from jit::default_options().
struct options {
    /// Runs observed before the first optimization (PyTorch: num_profiled_runs, default 1).
    std::size_t num_profiled_runs = 1;
    strategy fusion = default_fusion_strategy::value();
    /// Fuse elementwise ops into tile loops (off: specialized but unfused plans).
    bool enable_fusion = true;
    /// Free the profiling plan and its record once the graph is optimized
    /// (PYTORCH_RELEASE_PROFILING_GRAPH_AFTER_OPTIMIZATION), after the delay.
    bool release_profiling_after_optimization = true;
    std::uint64_t release_profiling_delay_ms = 0;
    /// Time every optimized run for debug_state() and record Chrome-trace events
    /// (costs two clock reads per call).
    bool collect_timings = false;
    /// Threads a fused loop may use for large tensors (1: the calling thread only);
    /// default: the hardware's threads, as PyTorch's intra-op pool.
    std::size_t num_threads = std::max(1U, std::thread::hardware_concurrency());
    /// Elements per thread below which a fused loop stays on the calling thread.
    std::size_t parallel_grain = std::size_t{1} << 18;
};

namespace detail {

[[nodiscard]] inline bool env_flag(const char* name, bool fallback) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    const std::string s(v);
    if (s == "1" || s == "true" || s == "TRUE" || s == "on" || s == "ON") return true;
    if (s == "0" || s == "false" || s == "FALSE" || s == "off" || s == "OFF") return false;
    graft::detail::fail(graft::detail::concat("jit: environment variable ", name, "='", s, "' is not a boolean (0 or 1)"));
}

[[nodiscard]] inline std::uint64_t env_number(const char* name, std::uint64_t fallback) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    const std::string s(v);
    graft::detail::check(s.find_first_not_of("0123456789") == std::string::npos, "jit: environment variable ", name,
                         "='", s, "' is not a non-negative integer");
    return std::stoull(s);
}

/// Options from the environment over the built-in defaults.
[[nodiscard]] inline options options_from_env() {
    options o;
    o.num_profiled_runs = env_number("GRAFT_JIT_NUM_PROFILED_RUNS", o.num_profiled_runs);
    if (const char* s = std::getenv("GRAFT_JIT_FUSION_STRATEGY"); s && *s) o.fusion = parse_strategy(s);
    o.enable_fusion = env_flag("GRAFT_JIT_ENABLE_FUSION", o.enable_fusion);
    o.release_profiling_after_optimization =
        env_flag("GRAFT_JIT_RELEASE_PROFILING_GRAPH_AFTER_OPTIMIZATION", o.release_profiling_after_optimization);
    o.release_profiling_delay_ms =
        env_number("GRAFT_JIT_RELEASE_PROFILING_GRAPH_DELAY_MS", o.release_profiling_delay_ms);
    o.collect_timings = env_flag("GRAFT_JIT_COLLECT_TIMINGS", o.collect_timings);
    o.num_threads = env_number("GRAFT_JIT_NUM_THREADS", o.num_threads);
    if (o.num_threads == 0) o.num_threads = 1;
    return o;
}

struct global_options {
    std::mutex mutex;
    options value = options_from_env();
};

[[nodiscard]] inline global_options& globals() {
    static global_options g;
    return g;
}

}  // namespace detail

/// The options new executors start from: the environment's, changed by the setters below.
[[nodiscard]] inline options default_options() {
    auto& g = detail::globals();
    std::lock_guard lock(g.mutex);
    return g.value;
}

/// Sets the process-wide fusion strategy for executors created afterwards; returns the old one.
inline strategy set_fusion_strategy(strategy s) {
    graft::detail::check(!s.empty(), "jit::set_fusion_strategy: the strategy is empty");
    auto& g = detail::globals();
    std::lock_guard lock(g.mutex);
    std::swap(g.value.fusion, s);
    return s;
}

/// Sets the process-wide number of profiling runs for executors created afterwards; returns the old one.
inline std::size_t set_num_profiled_runs(std::size_t n) {
    auto& g = detail::globals();
    std::lock_guard lock(g.mutex);
    std::swap(g.value.num_profiled_runs, n);
    return n;
}

/// Replaces every process-wide default at once; returns the old ones.
inline options set_default_options(options o) {
    graft::detail::check(!o.fusion.empty(), "jit::set_default_options: the fusion strategy is empty");
    auto& g = detail::globals();
    std::lock_guard lock(g.mutex);
    std::swap(g.value, o);
    return o;
}

}  // namespace graft::jit
