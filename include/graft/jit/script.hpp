#pragma once
// jit::script(f): f (a function of tensors written with graft's eager ops) as
// a profiling executor. The first call captures f into a graph
// (capture::trace, functionalized) and profiles it; later calls run the
// specialized, fused plans. Like torch.jit.trace, the capture records the path
// taken and the sizes that view ops were given on the first call: f must not
// branch on tensor values, and view sizes computed from input sizes stay
// those of the first call.
#include <atomic>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/capture/trace.hpp"
#include "graft/jit/executor.hpp"

namespace graft::jit {

template <class F>
class script_function {
public:
    script_function(F f, options o) : f_(std::move(f)), options_(std::move(o)) {
        graft::detail::check(!options_.fusion.empty(), "jit::script: the fusion strategy is empty");
    }
    script_function(const script_function&) = delete;
    script_function& operator=(const script_function&) = delete;

    /// Calls f's compiled form; returns what f returns as a vector of tensors.
    std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) {
        const compiled& c = get(inputs);
        graft::detail::check(inputs.size() == c.cap.meta().num_inputs, "jit::script: the function was captured with ",
                             c.cap.meta().num_inputs, " inputs, got ", inputs.size());
        return c.cap.finish(inputs, c.exec(inputs));
    }
    /// Calls with tensors as arguments; returns a Tensor when f returns one.
    template <class... Ts>
        requires(sizeof...(Ts) > 0 && (std::is_convertible_v<const Ts&, const Tensor&> && ...))
    auto operator()(const Ts&... inputs) {
        auto r = (*this)(std::vector<Tensor>{inputs...});
        if constexpr (std::is_same_v<std::decay_t<std::invoke_result_t<F&, decltype((void)sizeof(Ts), Tensor())...>>,
                                     Tensor>)
            return r.at(0);
        else
            return r;
    }

    /// The captured graph's executor state (empty before the first call).
    [[nodiscard]] jit::debug_state debug_state() const {
        const compiled* c = compiled_.load(std::memory_order_acquire);
        return c ? c->exec.state() : jit::debug_state{options_.fusion, bailout_depth(options_.fusion), 0, {}, {}};
    }
    [[nodiscard]] std::string debug_string() const {
        std::ostringstream os;
        os << debug_state();
        return os.str();
    }
    [[nodiscard]] std::string chrome_trace() const {
        const compiled* c = compiled_.load(std::memory_order_acquire);
        return c ? c->exec.chrome_trace() : std::string("{\"traceEvents\": []}\n");
    }
    /// Drops every specialization (the capture is kept).
    void flush_compilation_cache() {
        if (const compiled* c = compiled_.load(std::memory_order_acquire)) c->exec.flush_compilation_cache();
    }
    /// The captured graph, or null before the first call.
    [[nodiscard]] const ir::Graph* graph() const {
        const compiled* c = compiled_.load(std::memory_order_acquire);
        return c ? &c->exec.graph() : nullptr;
    }

private:
    struct compiled {
        capture::captured cap;
        executor exec;
    };
    const compiled& get(const std::vector<Tensor>& inputs) {
        if (const compiled* c = compiled_.load(std::memory_order_acquire)) return *c;
        std::lock_guard lock(mutex_);
        if (const compiled* c = compiled_.load(std::memory_order_acquire)) return *c;
        capture::captured cap = capture::trace(f_, inputs);
        executor exec(cap.graph(), options_);
        owned_ = std::make_unique<compiled>(compiled{std::move(cap), std::move(exec)});
        compiled_.store(owned_.get(), std::memory_order_release);
        return *owned_;
    }

    F f_;
    options options_;
    std::mutex mutex_;
    std::unique_ptr<compiled> owned_;
    std::atomic<const compiled*> compiled_{nullptr};
};

/// f as a profiling executor with the given options (default: jit::default_options()).
template <class F>
[[nodiscard]] auto script(F&& f, options o = default_options()) {
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
