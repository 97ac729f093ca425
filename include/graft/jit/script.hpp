#pragma once
// jit::script(f): f (a function of tensors written with graft's eager ops) as
// a profiling executor. The first call captures f into a graph
// (capture::trace, functionalized) and profiles it; later calls run the
// specialized, fused plans. Like torch.jit.trace, the capture records the path
// taken and the sizes that view ops were given on the first call: f must not
// branch on tensor values, and view sizes computed from input sizes stay
// those of the first call. Inputs that share memory (f(x, x)) are part of what a
// capture is for: a call whose inputs alias differently from the capture's (where
// that changes the result) gets a capture and executor of its own. So are sizes when
// the graph records them as numbers (x.view({x.size(0), -1})): each capture is checked
// by capturing f again at two other sizes (f runs three times at a capture), and a graph
// that differs there serves its own sizes only; other sizes get captures of their own.
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/capture/trace.hpp"
#include "graft/jit/executor.hpp"

namespace graft::jit {

namespace detail {

/// script_function's non-template part: the capture of f and its executor, made on the first call.
class script_state {
public:
    /// `o` empty: the process-wide default_options(), read at the first call and again after
    /// flush_compilation_cache() (as torch.jit reads its global settings).
    explicit script_state(std::optional<options> o);
    script_state(const script_state&) = delete;
    script_state& operator=(const script_state&) = delete;

    /// Calls f's compiled form (capturing f, called through `f`, on the first call).
    std::vector<Tensor> call(std::span<const Tensor> inputs, capture::detail::traced_fn f);
    /// call() into `out` (its capacity reused: no heap allocation for the result list).
    void call_into(std::span<const Tensor> inputs, capture::detail::traced_fn f, std::vector<Tensor>& out);
    [[nodiscard]] jit::debug_state debug_state() const;
    [[nodiscard]] std::string debug_string() const;
    [[nodiscard]] std::string chrome_trace() const;
    void flush_compilation_cache();
    [[nodiscard]] const ir::Graph* graph() const;

private:
    struct compiled {
        capture::captured cap;
        executor exec;
        std::vector<int_list> sizes;  // the inputs' sizes at capture
        /// Per input and dimension: may a call have another size there (any size of 2 or
        /// more; sizes 0 and 1 are specialized, as in PyTorch)? Empty: every size is exact
        /// (the graph records sizes that no symbolic size explains, or inputs share memory).
        std::vector<std::vector<bool>> free;
        /// The executor's symbolic sizes when the graph's numbers are functions of the inputs'
        /// sizes (a view to x.size(0) rows): calls must keep the dimensions sharing a symbol
        /// equal and give integral values to every computed attribute.
        const ir::symbolic_sizes* symbolic = nullptr;
        /// `sizes` and `free` as one list per input for the hot path: the exact size, or -1 (free).
        std::vector<std::vector<std::int64_t>> want;
        /// The graph's inputs and outputs are f's own (no alias groups, no written inputs, every
        /// output fresh, no symbolic sizes): a call that the executor's exact guards admit needs
        /// none of serves()'s checks (the executor profiled only calls that passed them) and no
        /// finishing (call_into's fast path).
        bool plain = false;
        /// SymInt expressions that gave one value at every probed size (ir::size_guard): a call
        /// where one gives another value is not served (null: none).
        std::shared_ptr<const ir::symbolic_sizes> size_guards = nullptr;

        /// Fills `want` from `sizes` and `free`.
        void index_sizes();
        /// Is the graph f for these inputs (aliasing pattern and sizes)?
        [[nodiscard]] bool serves(std::span<const Tensor> inputs) const;
    };
    /// The capture (and executor) for the inputs' aliasing pattern and sizes, made on first
    /// need; null when max_patterns captures exist already and none fits (f then runs eagerly).
    const compiled* get(std::span<const Tensor> inputs, capture::detail::traced_fn f);

    /// Captures kept besides the first call's: for other aliasing patterns (inputs sharing
    /// memory), or other sizes when the graph depends on them.
    static constexpr std::size_t max_patterns = 8;

    options options_;
    bool use_defaults_ = false;
    std::mutex mutex_;
    std::unique_ptr<compiled> owned_;
    std::atomic<const compiled*> compiled_{nullptr};  // the first call's capture
    std::vector<std::unique_ptr<compiled>> other_patterns_;  // changed under mutex_ and patterns_mutex_
    mutable std::mutex patterns_mutex_;  // other_patterns_ for debug_state() (never held while f runs)
    std::vector<std::unique_ptr<compiled>> retired_;  // flushed: other threads may still be running them
    std::atomic<std::size_t> retired_count_{0};  // retired_.size(), for debug_state() without the lock
    mutable active_calls calls_;  // calls running (and debug reads), for freeing retired_ once none can use them
    /// `inside_call`: asked by a thread inside call() (which holds no retired capture).
    void free_retired_if_quiescent(bool inside_call);
};

}  // namespace detail

template <class F>
class script_function {
public:
    script_function(F f, std::optional<options> o) : f_(std::move(f)), state_(std::move(o)) {}
    script_function(const script_function&) = delete;
    script_function& operator=(const script_function&) = delete;

    /// Calls f's compiled form with the inputs as a list; returns a Tensor when f takes a
    /// const std::vector<Tensor>& and returns a Tensor, else the results as a vector.
    auto operator()(const std::vector<Tensor>& inputs) {
        if constexpr (returns_one_tensor_for_a_list) {
            std::vector<Tensor> r = state_.call(inputs, capture::detail::traced_fn::of(f_));
            return Tensor(std::move(r.at(0)));
        } else {
            return state_.call(inputs, capture::detail::traced_fn::of(f_));
        }
    }
    /// Calls with tensors as arguments; returns a Tensor when f returns one.
    template <class... Ts>
        requires(sizeof...(Ts) > 0 && (std::is_convertible_v<const Ts&, const Tensor&> && ...))
    auto operator()(const Ts&... inputs) {
        const std::array<Tensor, sizeof...(Ts)> args{Tensor(inputs)...};  // on the stack
        if constexpr (std::is_same_v<std::decay_t<std::invoke_result_t<F&, decltype((void)sizeof(Ts), Tensor())...>>,
                                     Tensor>) {
            // One tensor back: the result list is this thread's, reused (no allocation per call).
            // Taken out while in use, so a script called from f (at a capture) gets its own.
            thread_local std::vector<Tensor> reused;
            std::vector<Tensor> r = std::move(reused);
            state_.call_into(args, capture::detail::traced_fn::of(f_), r);
            Tensor result = std::move(r.at(0));
            r.clear();
            reused = std::move(r);
            return result;
        } else {
            return state_.call(args, capture::detail::traced_fn::of(f_));
        }
    }

    /// The captured graph's executor state (empty before the first call).
    [[nodiscard]] jit::debug_state debug_state() const { return state_.debug_state(); }
    [[nodiscard]] std::string debug_string() const { return state_.debug_string(); }
    [[nodiscard]] std::string chrome_trace() const { return state_.chrome_trace(); }
    /// Forgets the captures and every specialization: the next call captures and profiles
    /// again (with the process-wide options re-read when the script was made without options).
    void flush_compilation_cache() { state_.flush_compilation_cache(); }
    /// The captured graph, or null before the first call. Valid until the next
    /// flush_compilation_cache() (which frees the capture once no call uses it).
    [[nodiscard]] const ir::Graph* graph() const { return state_.graph(); }

private:
    static constexpr bool returns_one_tensor_for_a_list = [] {
        if constexpr (std::is_invocable_v<F&, const std::vector<Tensor>&>)
            return std::is_same_v<std::decay_t<std::invoke_result_t<F&, const std::vector<Tensor>&>>, Tensor>;
        else
            return false;
    }();
    F f_;
    detail::script_state state_;
};

/// f as a profiling executor with the process-wide options (jit::default_options(), read at
/// the first call: jit::set_fusion_strategy before then applies).
template <class F>
[[nodiscard]] auto script(F&& f) {
    return script_function<std::decay_t<F>>(std::forward<F>(f), std::nullopt);
}

/// f as a profiling executor with the given options.
template <class F>
[[nodiscard]] auto script(F&& f, options o) {
    return script_function<std::decay_t<F>>(std::forward<F>(f), std::move(o));
}

/// f as a profiling executor with a compile-time fusion strategy:
/// jit::script(f, jit::fusion_strategy<jit::static_<2>, jit::dynamic_<10>>{}).
template <class F, class... Steps>
[[nodiscard]] auto script(F&& f, fusion_strategy<Steps...> s) {
    options o = default_options();
    o.fusion = s;
    return script_function<std::decay_t<F>>(std::forward<F>(f), std::move(o));
}

}  // namespace graft::jit

#if GRAFT_HAS_GRAPH_CODE
#include "graft/jit/impl/script.ipp"
#endif
