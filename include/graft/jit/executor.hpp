#pragma once
// The profiling graph executor (TorchScript's ProfilingGraphExecutorImpl,
// natively). An executor owns a graph. Its first `num_profiled_runs` calls
// run an instrumented plan that records the type of every value; the next
// call builds the optimized plan for what was seen:
//   * guards on the inputs (dtype, sizes and strides for STATIC, rank and
//     contiguity for DYNAMIC, requires_grad always),
//   * no value requires grad: elementwise runs fused into tile loops;
//   * inputs require grad: a differentiable graph (forward and backward graphs
//     from capture::aot, each fused) recorded as one autograd node;
//   * otherwise the specialized but unfused eager plan.
// A call whose inputs fail the guards goes to the plan's fallback function, a
// type-erased callable owning an executor of the same graph with one
// specialization less to spend; it profiles and specializes in turn. The
// fusion strategy says which behaviour each depth gets; at depth 0 the graph
// runs unoptimized for good. Every plan computes exactly what the unoptimized
// graph computes (fused loops run the same kernels in the same order).
//
// Thread safety: any number of threads may call one executor. Profiling runs
// and compilation happen under the executor's lock; an optimized plan's hot
// path (guard check, run) takes no lock.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "graft/autograd/grad_mode.hpp"
#include "graft/capture/aot.hpp"
#include "graft/core/error.hpp"
#include "graft/core/log.hpp"
#include "graft/ir/graph.hpp"
#include "graft/ir/passes.hpp"
#include "graft/ir/print.hpp"
#include "graft/jit/options.hpp"
#include "graft/jit/plan.hpp"
#include "graft/jit/profile.hpp"

namespace graft::jit {

/// How an optimized plan runs.
enum class plan_kind {
    fused,           // no value requires grad: fusion groups, no autograd
    differentiable,  // forward and backward graphs (fused), one autograd node
    eager,           // specialized, node by node through the eager ops (autograd records)
    subgraphs,       // eager, with differentiable subgraphs for straight-line regions
};

[[nodiscard]] GRAFT_INLINE const char* to_string(plan_kind k) noexcept;

/// One input's guard: the parts of its type a specialization relies on.
struct input_guard {
    bool any = false;  // nothing was profiled: admits every value
    ir::type_kind kind = ir::type_kind::tensor;
    std::optional<dtype> scalar_type;
    std::optional<std::vector<std::int64_t>> sizes;    // STATIC
    std::optional<std::vector<std::int64_t>> strides;  // STATIC
    std::optional<std::size_t> rank;                   // DYNAMIC
    std::optional<bool> contiguous;                    // DYNAMIC
    std::optional<bool> requires_grad;
    /// Symbolic differentiable plans: per dimension, the exact size, or -1 - k for size symbol
    /// s_k (any size >= 2; dimensions with one symbol must be equal: checked by the specialization).
    std::optional<std::vector<std::int64_t>> symbolic_sizes;

    [[nodiscard]] bool check(const ir::ivalue& v) const;
    /// check() of a tensor argument.
    [[nodiscard]] bool check_tensor(const Tensor& t) const;

    /// The STATIC form (dtype, sizes, strides and requires_grad all known) as one flat
    /// comparison for the per-call path; compact() sets it from the fields above (call it
    /// again after changing them).
    bool exact = false;
    dtype exact_type = dtype::float32;
    bool exact_requires_grad = false;
    std::vector<std::int64_t> exact_layout;  // the sizes, then the strides
    void compact();

    [[nodiscard]] std::string describe() const;
};

/// What debug_state() reports about one optimized plan.
struct plan_state {
    plan_kind kind = plan_kind::eager;
    fusion_behavior behavior = fusion_behavior::static_;
    std::string reason;               // why a plan is eager (or empty)
    bool automatic_dynamic = false;   // DYNAMIC before the strategy's turn: sizes changed (options::automatic_dynamic)
    std::vector<std::string> guards;       // one per input
    std::vector<std::string> seen_shapes;  // per input: the shapes the profiling runs saw, e.g. "[100], [200]"
    std::string symbolic;                  // symbolic differentiable plans: symbols and computed attributes
    std::string graph;                     // the specialized graph (types from the profile) and its fusion groups
    std::size_t fusion_groups = 0;
    std::uint64_t hits = 0;            // calls that passed the guards
    std::uint64_t guard_failures = 0;  // calls sent to the fallback function
    double compile_ms = 0;
    std::uint64_t timed_runs = 0;  // with options::collect_timings
    double run_ms_total = 0;
};

/// What debug_state() reports about one executor of the fallback chain.
struct level_state {
    std::size_t remaining_depth = 0;  // specializations this executor and its fallbacks may still make
    std::size_t profiled_runs = 0;
    std::size_t num_profiled_runs = 0;
    double profiling_ms = 0;
    bool profiling_released = false;
    std::uint64_t unoptimized_runs = 0;  // depth spent: runs of the unoptimized plan
    std::optional<plan_state> plan;
};

/// The executor's state: the chain from the top executor through its fallbacks.
struct debug_state {
    strategy fusion;
    std::size_t bailout_depth = 0;
    std::size_t compilations = 0;
    std::vector<level_state> levels;
    std::string graph;  // after the profiling-insensitive passes
    /// Executors built with traces at other sizes: the graph's symbolic sizes (which input
    /// dimensions are symbols, which attributes are computed from them), or why there are none.
    std::string symbolic;
    /// Flushed plans (and, for jit::script, captures) not freed yet: a call that was running
    /// at the flush may still use them; they go at the next flush or compilation that finds
    /// no such call.
    std::size_t retired_plans = 0;
    /// jit::script: the captures made (the first call's, and one per other aliasing pattern or
    /// sizes it could not serve). `levels` describe the first; `compilations` count all, and
    /// the other captures' guard failures and unoptimized runs are added here.
    std::size_t captures = 0;
    std::uint64_t other_guard_failures = 0;
    std::uint64_t other_unoptimized_runs = 0;

    [[nodiscard]] std::uint64_t total_guard_failures() const;
};

GRAFT_INLINE std::ostream& operator<<(std::ostream& os, const debug_state& s);

namespace detail {

using clock = std::chrono::steady_clock;
class script_state;

[[nodiscard]] inline double ms_since(clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(clock::now() - t0).count();
}

/// Counts the calls running through an object whose plans a flush may retire, so that the
/// retired plans are freed as soon as no call can still be using them (a flush that finds no
/// call running, or the next compilation that does). Sharded by thread: entering costs one
/// uncontended atomic increment.
class active_calls {
    struct alignas(64) shard {
        std::atomic<std::uint32_t> n{0};
    };

public:
    class guard {
    public:
        explicit guard(std::atomic<std::uint32_t>& n) noexcept : n_(n) { n_.fetch_add(1, std::memory_order_seq_cst); }
        guard(const guard&) = delete;
        guard& operator=(const guard&) = delete;
        ~guard() { n_.fetch_sub(1, std::memory_order_release); }

    private:
        std::atomic<std::uint32_t>& n_;
    };

    /// Enter before reading the current plan (with a seq_cst load), leave when done with it.
    [[nodiscard]] std::atomic<std::uint32_t>& mine() noexcept {
        static std::atomic<std::size_t> next{0};
        thread_local const std::size_t k = next.fetch_add(1, std::memory_order_relaxed) % num_shards;
        return shards_[k].n;
    }
    /// No call is running: after a plan was unpublished (seq_cst store), none can use it.
    [[nodiscard]] bool quiescent() const noexcept {
        for (const shard& s : shards_)
            if (s.n.load(std::memory_order_seq_cst) != 0) return false;
        return true;
    }
    /// The same, asked from inside a call that holds no unpublished plan (its own count is
    /// the only one left).
    [[nodiscard]] bool quiescent_but_caller() noexcept {
        const std::atomic<std::uint32_t>& own = mine();
        for (const shard& s : shards_)
            if (s.n.load(std::memory_order_seq_cst) > (&s.n == &own ? 1U : 0U)) return false;
        return true;
    }

private:
    static constexpr std::size_t num_shards = 8;
    shard shards_[num_shards];
};

/// Input sizes seen by the profiling runs and compilations of one executor chain: which
/// dimensions vary, for symbolic differentiable plans.
struct shape_history {
    std::mutex mutex;
    std::vector<std::vector<std::vector<std::int64_t>>> calls;  // per call, per input: sizes (empty: a number)
    static constexpr std::size_t max_calls = 64;

    void add(const std::vector<ir::ivalue>& in);
    /// (input, dim) pairs whose size differed between calls of the same rank.
    [[nodiscard]] std::vector<std::pair<std::size_t, std::size_t>> varying_dims();
};

/// Chrome trace events of one executor chain.
struct trace_log {
    struct event {
        std::string name;
        std::string category;
        double start_us;
        double duration_us;
        std::size_t thread;
        int level;
    };
    std::mutex mutex;
    clock::time_point origin = clock::now();
    std::vector<event> events;
    /// Set once this executor warned that a graph requiring grad runs eagerly (once per executor).
    std::atomic<bool> warned_eager{false};
    static constexpr std::size_t max_events = 100000;

    void add(std::string name, const char* category, clock::time_point start, int level);
};

class executor_state;

/// A specialization: guards, the optimized plan and the fallback function.
struct specialization {
    plan_kind kind = plan_kind::eager;
    fusion_behavior behavior = fusion_behavior::static_;
    std::string reason;
    bool automatic_dynamic = false;
    std::vector<input_guard> guards;
    std::vector<std::string> seen_shapes;
    std::unique_ptr<plan> run_plan;  // fused or eager
    std::shared_ptr<capture::aot_function> diff;
    std::shared_ptr<plan> forward_plan, backward_plan;
    /// For debug_state(), rendered only when asked (a compile should not print graphs): the
    /// profiled types of the graph's values by name, and text that follows the graph.
    std::map<std::string, ir::Type> profiled_types;
    std::string graph_suffix;
    std::size_t fusion_groups = 0;
    double compile_ms = 0;
    /// The fallback function: runs the graph through an executor with one specialization less.
    std::function<std::vector<ir::ivalue>(std::span<const ir::ivalue>)> fallback;
    /// Symbolic differentiable plans: where each size symbol occurs (input, dimension).
    std::vector<std::vector<std::pair<std::size_t, std::size_t>>> symbol_occurrences;
    std::string symbolic_text;  // the symbols and the attributes computed from them
    std::shared_ptr<executor_state> fallback_executor;  // the same executor, for debug_state()
    mutable std::atomic<std::uint64_t> hits{0}, guard_failures{0}, timed_runs{0}, run_ns{0};
    bool exact_guards = false;  // every guard is exact (input_guard::exact)

    [[nodiscard]] bool admits(std::span<const ir::ivalue> in) const;

    /// The specialized graph `g` (with its profiled types), or the forward and backward graphs
    /// of a differentiable plan, with their fusion groups, as text.
    [[nodiscard]] std::string graph_text(const ir::Graph& g) const;

    [[nodiscard]] std::vector<ir::ivalue> run(std::span<const ir::ivalue> in) const;
};

class executor_state : public std::enable_shared_from_this<executor_state> {
public:
    executor_state(std::shared_ptr<const ir::Graph> g, options o, std::size_t remaining,
                   std::shared_ptr<trace_log> log, int level, std::shared_ptr<std::atomic<std::size_t>> compilations,
                   std::shared_ptr<shape_history> history, std::shared_ptr<const ir::symbolic_sizes> symbolic = nullptr);

    [[nodiscard]] std::vector<ir::ivalue> run(std::span<const ir::ivalue> in);

    /// The per-call shortcut of the top level: when the current specialization is a fused
    /// plan with a direct path (one fusion group) or a differentiable plan, and `in` passes
    /// its guards, runs it and returns true; otherwise false with nothing run or counted (the
    /// caller takes run()).
    /// `exact_only`: only a plan whose guards are all exact (STATIC: dtype, sizes, strides,
    /// requires_grad), for jit::script's hot path, which skips its own size checks when such a
    /// guard admits the call (those sizes passed them when they were profiled).
    bool try_direct(std::span<const Tensor> in, std::vector<Tensor>& out, bool exact_only = false);

    /// Unpublishes every plan; they are freed once no call still runs them.
    void flush();

    void collect(debug_state& d) const;

    [[nodiscard]] std::size_t retired_count() const {
        std::lock_guard lock(mutex_);
        return retired_.size();
    }

    [[nodiscard]] const options& opts() const noexcept { return options_; }
    [[nodiscard]] const ir::Graph& graph() const noexcept { return *graph_; }
    [[nodiscard]] const std::shared_ptr<trace_log>& log() const noexcept { return log_; }

private:
    static std::optional<ir::Type> no_types(const ir::Value*) { return std::nullopt; }

    /// Unfused, unspecialized plan options (with the graph's symbolic sizes).
    [[nodiscard]] plan::build_options plain_options() const {
        plan::build_options o;
        o.symbolic = symbolic_;
        return o;
    }

    std::vector<ir::ivalue> profile(const std::vector<ir::ivalue>& in);

    [[nodiscard]] std::optional<ir::Type> profiled_type(const ir::Value* v) const;

    [[nodiscard]] input_guard make_guard(const ir::Value* v, fusion_behavior b) const;

    /// The graph with the profiled types on its values, as text.
    [[nodiscard]] std::map<std::string, ir::Type> profiled_types() const;

    void compile(const std::vector<ir::ivalue>& in);

    /// options::automatic_dynamic: the profiled inputs differ from the STATIC guards of the
    /// plan above this fallback in sizes only (same kinds, dtypes, ranks, requires-grad).
    [[nodiscard]] bool only_sizes_changed() const;

    /// Builds the differentiable plan; returns why it is not possible (empty: done).
    std::string differentiable_plan(specialization& s, const std::vector<ir::ivalue>& in, plan::build_options bo,
                                    fusion_behavior behavior);

    /// The straight-line regions of the top-level block that become differentiable subgraphs
    /// (graphs that require grad but are not one differentiable graph); `text` describes them.
    std::vector<plan_region> differentiable_subgraphs(plan::build_options bo, std::string& text);

    void release_profile_locked();

    void maybe_release_profile();

    std::shared_ptr<const ir::Graph> graph_;
    options options_;
    std::size_t remaining_;
    std::shared_ptr<trace_log> log_;
    int level_;
    std::shared_ptr<std::atomic<std::size_t>> compilations_;
    std::shared_ptr<shape_history> history_;
    /// The graph's own symbolic sizes (attributes computed from the inputs' sizes), or null.
    std::shared_ptr<const ir::symbolic_sizes> symbolic_;
    /// The STATIC guards of the plan whose fallback this executor is (empty otherwise).
    std::vector<input_guard> parent_static_guards_;

    mutable std::mutex mutex_;
    std::atomic<const specialization*> current_{nullptr};
    std::unique_ptr<specialization> owned_;
    std::vector<std::shared_ptr<const specialization>> retired_;  // flushed plans other threads may still run
    mutable active_calls calls_;  // calls through this (top-level) executor, for freeing retired_

    std::vector<ir::ivalue> run_level(std::span<const ir::ivalue> in);
    /// `inside_call`: asked by a thread inside run() (which holds no retired plan).
    void free_retired_if_quiescent(bool inside_call);
    std::unique_ptr<plan> unoptimized_;
    std::unique_ptr<profiling_record> record_;
    std::unique_ptr<plan> profiling_plan_;
    std::size_t profiled_runs_ = 0;
    double profiling_ms_ = 0;
    bool profiling_released_ = false;
    std::atomic<bool> release_pending_{false};
    clock::time_point release_deadline_{};
    std::atomic<std::uint64_t> unoptimized_runs_{0};
};

}  // namespace detail

/// A profiling executor over an IR graph (see the top of this header).
class executor {
public:
    explicit executor(const ir::Graph& g, options o = default_options());
    explicit executor(std::unique_ptr<ir::Graph> g, options o = default_options());
    /// An executor for `g` and the same program traced at other input sizes (`at_other_sizes`,
    /// as jit::script makes them): after the passes, attributes that differ between the traces
    /// and are explained by the `hints` (the SymInt expressions of the traces, merged by
    /// ir::merge_size_hints) or are a constant times a product of input sizes (a view to
    /// `x.size(0)` rows) become functions of each call's sizes (ir::infer_symbolic_sizes), so
    /// every plan computes them per run. When the traces differ otherwise, the graph keeps its
    /// numbers: symbolic_sizes() is null and debug_state().symbolic says why. Calls must keep
    /// the input dimensions that share a symbol equal and every symbolic size >= 2 (jit::script
    /// checks this).
    executor(std::unique_ptr<ir::Graph> g, std::vector<std::unique_ptr<ir::Graph>> at_other_sizes,
             options o = default_options(), std::vector<ir::size_hint> hints = {});
    /// An executor for a graph with symbolic sizes (ir::parse_symbolic; the table's nodes must
    /// be the graph's, graft::error otherwise): the graph is derived again at other values of its symbols (2x and 3x
    /// the traced ones) and handed to the constructor above with the table's expressions as
    /// hints, so the passes run and the table is inferred again after them. graft::error for a
    /// table with context symbols (those belong to backward graphs run by capture::aot).
    explicit executor(ir::symbolic_graph g, options o = default_options());

    /// Runs the graph on tensors and numbers.
    [[nodiscard]] std::vector<ir::ivalue> run(std::vector<ir::ivalue> inputs) const;
    /// Runs a graph whose inputs and outputs are tensors.
    std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const {
        return (*this)(std::span<const Tensor>(inputs));
    }
    std::vector<Tensor> operator()(std::span<const Tensor> inputs) const;
    /// operator() into `out` (cleared first): a caller that keeps `out` across calls makes no
    /// heap allocation for the result list.
    void call_into(std::span<const Tensor> inputs, std::vector<Tensor>& out) const;
    template <class... Ts>
        requires(sizeof...(Ts) > 0 && (std::is_convertible_v<const Ts&, const Tensor&> && ...))
    std::vector<Tensor> operator()(const Ts&... inputs) const {
        const std::array<Tensor, sizeof...(Ts)> args{Tensor(inputs)...};
        return (*this)(std::span<const Tensor>(args));
    }

    /// Plans, guards, counts and timings of the executor and its fallbacks.
    [[nodiscard]] jit::debug_state debug_state() const { return state(); }
    /// The same as debug_state().
    [[nodiscard]] jit::debug_state state() const;
    /// The state as text.
    [[nodiscard]] std::string debug_string() const;

    /// Profiling runs, compilations, bailouts (and, with collect_timings, every optimized run)
    /// as Chrome trace JSON for chrome://tracing or Perfetto.
    [[nodiscard]] std::string chrome_trace() const;

    /// Forgets every specialization and profile: the next calls profile again with the
    /// full bailout depth (torch.jit's flush of the compilation cache). Plans other threads
    /// may still be running are kept until the executor is destroyed.
    void flush_compilation_cache() const { top_->flush(); }

    /// The graph the executor runs (after the profiling-insensitive passes).
    [[nodiscard]] const ir::Graph& graph() const noexcept { return top_->graph(); }
    [[nodiscard]] const options& opts() const noexcept { return top_->opts(); }
    /// The graph's symbolic sizes (executors built with traces at other sizes), or null.
    [[nodiscard]] const ir::symbolic_sizes* symbolic_sizes() const noexcept { return symbolic_.get(); }

private:
    friend class detail::script_state;
    /// call_into() when the current plan is fused with a direct loop and its exact guards admit
    /// `inputs`; false (and nothing run) otherwise. `out` must be empty.
    bool call_exact_into(std::span<const Tensor> inputs, std::vector<Tensor>& out) const {
        return top_->try_direct(inputs, out, true);
    }

    /// run() without the copy: checks the inputs' kinds, then runs the top-level executor.
    [[nodiscard]] std::vector<ir::ivalue> run_checked(std::span<const ir::ivalue> inputs) const;

    /// jit::script's executor for its capture's graph, taken without a copy: the passes
    /// rewrite it in place (the capture keeps only its meta() in use afterwards).
    executor(std::shared_ptr<ir::Graph> g, options o, std::true_type adopt);

    /// Runs the profiling-insensitive passes on g, leaves its input types to the profile.
    static void prepare(ir::Graph& g, bool keep_input_types);
    void start(std::shared_ptr<ir::Graph> g, options o);

    void init_traced(std::unique_ptr<ir::Graph> g, std::vector<std::unique_ptr<ir::Graph>> at_other_sizes, options o,
                     const std::vector<ir::size_hint>& hints);

    std::shared_ptr<const ir::symbolic_sizes> symbolic_;
    std::string symbolic_why_;
    std::shared_ptr<detail::executor_state> top_;
    std::shared_ptr<std::atomic<std::size_t>> compilations_;
    strategy strategy_;
    std::size_t depth_ = 0;
};

}  // namespace graft::jit

#if GRAFT_HAS_GRAPH_CODE
#include "graft/jit/impl/executor.ipp"
#endif
