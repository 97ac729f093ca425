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
    if (c == nullptr) return f(inputs);  // a pattern past max_patterns: eager
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

GRAFT_INLINE bool script_state::compiled::serves(const std::vector<Tensor>& inputs) const {
    if (!cap.meta().aliasing_matches(inputs)) return false;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const int_list& s = inputs[i].sizes();
        const int_list& c = sizes[i];
        if (s.size() != c.size()) return false;
        for (std::size_t d = 0; d < c.size(); ++d)
            if (size_dependent || c[d] <= 1 ? s[d] != c[d] : s[d] <= 1) return false;
    }
    return true;
}

/// Why the graph captured from f at `inputs` is not f at other sizes ("" when it is): f is
/// captured again at two other sizes of every dimension of 2 or more (equal sizes kept equal)
/// and the graphs must be the same but for their input types.
GRAFT_INLINE std::string size_dependence(const capture::captured& cap, const std::vector<Tensor>& inputs,
                                         capture::detail::traced_fn f) {
    if (!cap.meta().alias_groups.empty()) return "inputs share memory";
    std::vector<std::pair<std::size_t, std::size_t>> dims;
    for (std::size_t i = 0; i < inputs.size(); ++i)
        for (std::size_t d = 0; d < inputs[i].sizes().size(); ++d)
            if (inputs[i].sizes()[d] >= 2) dims.emplace_back(i, d);
    if (dims.empty()) return {};
    std::vector<capture::captured> others;
    try {
        for (const auto& ex : capture::detail::perturbed_examples(
                 inputs, capture::detail::group_dynamic_dims(inputs, dims), 2))
            others.push_back(capture::detail::trace_impl(ex, f));
    } catch (const graft::error& e) {
        return std::string("capturing f at other sizes failed: ") + e.what();
    }
    std::string why;
    const auto sym = ir::infer_symbolic_sizes(cap.graph(), {&others[0].graph(), &others[1].graph()}, why);
    if (!sym) return why;
    if (!sym->patches.empty()) return "the graph records input sizes as numbers: " + sym->describe(cap.graph());
    return {};
}

GRAFT_INLINE const script_state::compiled* script_state::get(const std::vector<Tensor>& inputs,
                                                             capture::detail::traced_fn f) {
    const compiled* first = compiled_.load(std::memory_order_acquire);
    if (first) {
        graft::detail::check(inputs.size() == first->cap.meta().num_inputs, "jit::script: the function was captured with ",
                             first->cap.meta().num_inputs, " inputs, got ", inputs.size());
        if (first->serves(inputs)) return first;  // the hot path: pointer and size comparisons
    }
    const auto make = [&] {
        capture::captured cap = capture::detail::trace_impl(inputs, f);
        executor exec(cap.graph(), options_);
        std::vector<int_list> sizes;
        for (const Tensor& t : inputs) sizes.push_back(t.sizes());
        const bool dependent = !size_dependence(cap, inputs, f).empty();
        return std::make_unique<compiled>(compiled{std::move(cap), std::move(exec), std::move(sizes), dependent});
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
    if (first->serves(inputs)) return first;
    for (const auto& c : other_patterns_)
        if (c->serves(inputs)) return c.get();
    if (other_patterns_.size() >= max_patterns) return nullptr;
    other_patterns_.push_back(make());
    return other_patterns_.back().get();
}

}  // namespace graft::jit::detail
