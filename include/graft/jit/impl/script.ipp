#pragma once
// Definitions for graft/jit/script.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/jit/script.hpp"

#include <sstream>

namespace graft::jit::detail {

GRAFT_INLINE script_state::script_state(std::optional<options> o)
    : options_(o ? std::move(*o) : default_options()), use_defaults_(!o) {
    graft::detail::check(!options_.fusion.empty(), "jit::script: the fusion strategy is empty");
}

GRAFT_INLINE std::vector<Tensor> script_state::call(const std::vector<Tensor>& inputs, capture::detail::traced_fn f) {
    const compiled* c = get(inputs, f);
    if (c == nullptr) return f(inputs);  // an aliasing pattern past max_alias_patterns: eager
    const capture::graph_meta& m = c->cap.meta();
    if (m.graph_inputs.empty()) return c->cap.finish(inputs, c->exec(inputs));
    return c->cap.finish(inputs, c->exec(m.graph_arguments(inputs)));
}

GRAFT_INLINE jit::debug_state script_state::debug_state() const {
    const compiled* c = compiled_.load(std::memory_order_acquire);
    if (c) return c->exec.state();
    // Not captured yet (or flushed): one executor level that has not run.
    jit::debug_state d{options_.fusion, bailout_depth(options_.fusion), 0, {}, {}};
    jit::level_state l;
    l.remaining_depth = d.bailout_depth;
    l.num_profiled_runs = options_.num_profiled_runs;
    d.levels.push_back(std::move(l));
    return d;
}

GRAFT_INLINE std::string script_state::debug_string() const {
    std::ostringstream os;
    os << debug_state();
    return os.str();
}

GRAFT_INLINE std::string script_state::chrome_trace() const {
    const compiled* c = compiled_.load(std::memory_order_acquire);
    return c ? c->exec.chrome_trace() : std::string("{\"traceEvents\": []}\n");
}

GRAFT_INLINE void script_state::flush_compilation_cache() {
    std::lock_guard lock(mutex_);
    compiled_.store(nullptr, std::memory_order_release);
    if (owned_) retired_.push_back(std::move(owned_));
    for (auto& c : other_patterns_) retired_.push_back(std::move(c));
    other_patterns_.clear();
}

GRAFT_INLINE const ir::Graph* script_state::graph() const {
    const compiled* c = compiled_.load(std::memory_order_acquire);
    return c ? &c->exec.graph() : nullptr;
}

GRAFT_INLINE const script_state::compiled* script_state::get(const std::vector<Tensor>& inputs,
                                                             capture::detail::traced_fn f) {
    const compiled* first = compiled_.load(std::memory_order_acquire);
    if (first) {
        graft::detail::check(inputs.size() == first->cap.meta().num_inputs, "jit::script: the function was captured with ",
                             first->cap.meta().num_inputs, " inputs, got ", inputs.size());
        if (first->cap.meta().aliasing_matches(inputs)) return first;  // the hot path: pointer comparisons
    }
    const auto make = [&] {
        capture::captured cap = capture::detail::trace_impl(inputs, f);
        executor exec(cap.graph(), options_);
        return std::make_unique<compiled>(compiled{std::move(cap), std::move(exec)});
    };
    std::lock_guard lock(mutex_);
    first = compiled_.load(std::memory_order_acquire);
    if (!first) {
        if (use_defaults_) options_ = default_options();
        graft::detail::check(!options_.fusion.empty(), "jit::script: the fusion strategy is empty");
        owned_ = make();
        compiled_.store(owned_.get(), std::memory_order_release);
        return owned_.get();
    }
    if (first->cap.meta().aliasing_matches(inputs)) return first;
    for (const auto& c : other_patterns_)
        if (c->cap.meta().aliasing_matches(inputs)) return c.get();
    if (other_patterns_.size() >= max_alias_patterns) return nullptr;
    other_patterns_.push_back(make());
    return other_patterns_.back().get();
}

}  // namespace graft::jit::detail
