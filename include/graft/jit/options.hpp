#pragma once
// Settings of the profiling executor: the fusion strategy (how many STATIC
// and DYNAMIC specializations a graph may get before it runs unoptimized for
// good), the number of profiling runs, fusion on/off and when the profiling
// data is released. Each can be set in code, process-wide with the setters
// (like torch.jit.set_fusion_strategy), or by GRAFT_JIT_* environment
// variables read once at first use.
#include <algorithm>
#include <concepts>
#include <cstdint>
#include <iosfwd>
#include <mutex>
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
[[nodiscard]] GRAFT_INLINE std::size_t bailout_depth(const strategy& s);

/// The behaviour for an executor with `remaining` specializations left: the strategy's
/// steps are consumed front to back as bailouts use up the depth (PyTorch's getCurrentBehavior).
[[nodiscard]] GRAFT_INLINE fusion_behavior current_behavior(const strategy& s, std::size_t remaining);

GRAFT_INLINE std::ostream& operator<<(std::ostream& os, const strategy& s);

/// The most specializations one step of a strategy may allow.
inline constexpr std::size_t max_strategy_depth = 10000;

/// Parses "STATIC:2,DYNAMIC:10" (case-insensitive behaviour names; depths up to
/// max_strategy_depth).
[[nodiscard]] GRAFT_INLINE strategy parse_strategy(std::string_view text);

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
    /// Graphs that require grad but cannot be one differentiable graph (control flow): the
    /// straight-line regions of at least this many nodes become differentiable subgraphs,
    /// smaller ones stay inline (TorchScript's autodiff subgraph inlining threshold).
    std::size_t min_differentiable_subgraph = 5;
    /// Automatic dynamic shapes (torch.compile's automatic_dynamic_shapes): when a STATIC plan
    /// bails out because sizes changed (same dtypes, ranks and requires-grad), the fallback
    /// compiles DYNAMIC at once instead of another STATIC plan for the next size. Off: the
    /// strategy's steps are taken exactly as written (TorchScript's behaviour).
    bool automatic_dynamic = true;
    /// On: differentiable plans save only the values elementwise chains start from and
    /// recompute the chains in the backward (capture::partition_policy::recompute_elementwise,
    /// the idea of torch.compile's rematerializing partitioner): less memory for activations.
    /// Off (default): every forward value the backward reads is saved (save_all), which was
    /// faster on graft's benchmarks (the MLP step 34 -> 41 us with recomputation; the chain
    /// at 1M about even; see bench/README.md).
    bool recompute_elementwise_in_backward = false;
};

namespace detail {

[[nodiscard]] GRAFT_INLINE bool env_flag(const char* name, bool fallback);

[[nodiscard]] GRAFT_INLINE std::uint64_t env_number(const char* name, std::uint64_t fallback);

/// Options from the environment over the built-in defaults.
[[nodiscard]] GRAFT_INLINE options options_from_env();

struct global_options {
    std::mutex mutex;
    options value = options_from_env();
};

[[nodiscard]] GRAFT_INLINE global_options& globals();

}  // namespace detail

/// The options new executors start from: the environment's, changed by the setters below.
[[nodiscard]] GRAFT_INLINE options default_options();

/// Sets the process-wide fusion strategy for executors created afterwards; returns the old one.
GRAFT_INLINE strategy set_fusion_strategy(strategy s);

/// Sets the process-wide number of profiling runs for executors created afterwards; returns the old one.
GRAFT_INLINE std::size_t set_num_profiled_runs(std::size_t n);

/// Replaces every process-wide default at once; returns the old ones.
GRAFT_INLINE options set_default_options(options o);

}  // namespace graft::jit

#if GRAFT_HAS_GRAPH_CODE
#include "graft/jit/impl/options.ipp"
#endif
