#pragma once
// Definitions for graft/jit/script.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/jit/script.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace graft::jit::detail {

GRAFT_INLINE script_state::script_state(std::optional<options> o)
    : options_(o ? std::move(*o) : default_options()), use_defaults_(!o) {
    graft::detail::check(!options_.fusion.empty(), "jit::script: the fusion strategy is empty");
}

GRAFT_INLINE void script_state::free_retired_if_quiescent(bool inside_call) {
    if (!retired_.empty() && (inside_call ? calls_.quiescent_but_caller() : calls_.quiescent())) retired_.clear();
    retired_count_.store(retired_.size(), std::memory_order_relaxed);
}

GRAFT_INLINE std::vector<Tensor> script_state::call(std::span<const Tensor> inputs, capture::detail::traced_fn f) {
    std::vector<Tensor> out;
    call_into(inputs, f, out);
    return out;
}

GRAFT_INLINE void script_state::call_into(std::span<const Tensor> inputs, capture::detail::traced_fn f,
                                          std::vector<Tensor>& out) {
    const active_calls::guard g(calls_.mine());
    if (const compiled* first = compiled_.load(std::memory_order_seq_cst);
        first != nullptr && first->plain && inputs.size() == first->cap.meta().num_inputs) {
        // The hot path: one guard check (the executor's) for the whole call.
        out.clear();
        if (first->exec.call_exact_into(inputs, out)) return;
        out.clear();
    }
    const compiled* c = get(inputs, f);
    if (c == nullptr) {
        out = f(std::vector<Tensor>(inputs.begin(), inputs.end()));  // a pattern past max_patterns: eager
        return;
    }
    const capture::graph_meta& m = c->cap.meta();
    if (m.graph_inputs.empty() && m.lifted.empty()) c->exec.call_into(inputs, out);
    else c->exec.call_into(m.graph_arguments(inputs), out);
    c->cap.finish_in_place(inputs, out);
}

GRAFT_INLINE jit::debug_state script_state::debug_state() const {
    const active_calls::guard g(calls_.mine());  // a flush on another thread must not free c meanwhile
    jit::debug_state d;
    if (const compiled* c = compiled_.load(std::memory_order_seq_cst)) {
        d = c->exec.state();
    } else {
        // Not captured yet (or flushed): one executor level that has not run.
        d.fusion = options_.fusion;
        d.bailout_depth = bailout_depth(options_.fusion);
        jit::level_state l;
        l.remaining_depth = d.bailout_depth;
        l.num_profiled_runs = options_.num_profiled_runs;
        d.levels.push_back(std::move(l));
    }
    {
        // Captures for other sizes or aliasing patterns: their compilations and guard failures
        // count too (patterns_mutex_ is never held while f runs, so f may call this).
        const std::lock_guard patterns(patterns_mutex_);
        d.captures = (compiled_.load(std::memory_order_seq_cst) ? 1 : 0) + other_patterns_.size();
        for (const auto& c : other_patterns_) {
            const jit::debug_state o = c->exec.state();
            d.compilations += o.compilations;
            d.other_guard_failures += o.total_guard_failures();
            for (const auto& l : o.levels) d.other_unoptimized_runs += l.unoptimized_runs;
        }
    }
    d.retired_plans += retired_count_.load(std::memory_order_relaxed);  // no lock: f may call this while capturing
    return d;
}

GRAFT_INLINE std::string script_state::debug_string() const {
    std::ostringstream os;
    os << debug_state();
    return os.str();
}

GRAFT_INLINE std::string script_state::chrome_trace() const {
    const active_calls::guard g(calls_.mine());
    const compiled* c = compiled_.load(std::memory_order_seq_cst);
    return c ? c->exec.chrome_trace() : std::string("{\"traceEvents\": []}\n");
}

GRAFT_INLINE void script_state::flush_compilation_cache() {
    std::lock_guard lock(mutex_);
    compiled_.store(nullptr, std::memory_order_seq_cst);
    if (owned_) retired_.push_back(std::move(owned_));
    const std::lock_guard patterns(patterns_mutex_);
    for (auto& c : other_patterns_) retired_.push_back(std::move(c));
    other_patterns_.clear();
    free_retired_if_quiescent(false);
}

GRAFT_INLINE const ir::Graph* script_state::graph() const {
    const compiled* c = compiled_.load(std::memory_order_acquire);
    return c ? &c->exec.graph() : nullptr;
}

GRAFT_INLINE void script_state::compiled::index_sizes() {
    const capture::graph_meta& m = cap.meta();
    plain = m.graph_inputs.empty() && m.lifted.empty() && m.alias_groups.empty() && m.mutated_inputs.empty() && symbolic == nullptr &&
            std::all_of(m.outputs.begin(), m.outputs.end(),
                        [](const capture::output_info& o) { return o.kind == capture::output_kind::fresh; });
    want.clear();
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        want.emplace_back(sizes[i].begin(), sizes[i].end());
        if (!free.empty())
            for (std::size_t d = 0; d < want.back().size(); ++d)
                if (free[i][d]) want.back()[d] = -1;
    }
}

GRAFT_INLINE bool script_state::compiled::serves(std::span<const Tensor> inputs) const {
    if (!cap.meta().aliasing_matches(inputs)) return false;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const int_list& s = inputs[i].sizes();
        const std::vector<std::int64_t>& w = want[i];
        if (s.size() != w.size()) return false;
        for (std::size_t d = 0; d < w.size(); ++d)
            if (w[d] >= 0 ? s[d] != w[d] : s[d] <= 1) return false;  // free: any size of 2 or more
    }
    if (size_guards && !size_guards->guards_hold(inputs)) return false;
    if (symbolic) {
        // Dimensions that share a symbol stay equal, and every attribute computed from the
        // symbols is a whole number (x.size(0) / 2 traced at even sizes does not serve odd ones).
        std::vector<std::int64_t> values(symbolic->symbols.size(), -1);
        for (std::size_t k = 0; k < symbolic->dims.size(); ++k) {
            const auto [i, d] = symbolic->dims[k];
            const std::int64_t v = inputs[i].sizes()[d];
            std::int64_t& sym = values[symbolic->dim_symbols[k]];
            if (sym >= 0 && sym != v) return false;
            sym = v;
        }
        for (const ir::size_patch& p : symbolic->patches) {
            const double v = p.expr.eval(values);
            if (!(std::abs(v - std::round(v)) < 1e-9 && std::abs(v) < 9.0e15)) return false;
        }
    }
    return true;
}

/// f captured again at two other sizes of some dimensions, and what the
/// captures say about the graph captured at `inputs`: nullopt when a capture fails or the
/// graphs differ in something no product of input sizes explains.
struct size_probe {
    std::vector<capture::captured> others;
    ir::symbolic_sizes sizes;
    std::vector<ir::size_hint> hints;  // the traces' SymInt expressions, merged
};

using dim_group = std::vector<std::pair<std::size_t, std::size_t>>;  // (input, dimension) pairs

/// f traced at two other sizes of `groups`' dimensions (each group keeps its dimensions
/// equal and gets sizes of its own).
GRAFT_INLINE std::optional<size_probe> probe_sizes(const capture::captured& cap, const std::vector<Tensor>& inputs,
                                                   capture::detail::traced_fn f, const std::vector<dim_group>& groups) {
    size_probe r;
    capture::detail::dynamic_groups dyn;
    for (const dim_group& g : groups) {
        if (g.empty()) continue;
        dyn.values.push_back(inputs[g.front().first].sizes()[g.front().second]);
        dyn.dims.push_back(g);
    }
    try {
        const capture::detail::made_up_values_scope made_up;  // zeros: run no user loop on them
        for (const auto& ex : capture::detail::perturbed_examples(inputs, dyn, 2))
            r.others.push_back(capture::detail::trace_impl(ex, f));
    } catch (const graft::error&) {
        return std::nullopt;  // f refuses those sizes (a view that needs an even size, ...)
    }
    std::string why;
    r.hints = ir::merge_size_hints({&cap.size_hints(), &r.others[0].size_hints(), &r.others[1].size_hints()});
    auto sym = ir::infer_symbolic_sizes(cap.graph(), {&r.others[0].graph(), &r.others[1].graph()}, why, r.hints);
    if (!sym) return std::nullopt;
    r.sizes = std::move(*sym);
    return r;
}

/// Which dimensions of 2 or more the capture may serve at other sizes: all of them when f
/// traces to the same program (up to symbolic sizes) at other sizes of all; otherwise the
/// groups of equal sizes that may change on their own (a batch dimension when another
/// dimension must stay even), the rest exact. The dimensions in `changed` (those that differ
/// from the first capture's) form a group of their own whatever other dimensions have their
/// size: a batch of 16 stays free of a layer's 16 channels (automatic dynamic shapes).
GRAFT_INLINE std::optional<size_probe> free_dimensions(const capture::captured& cap, const std::vector<Tensor>& inputs,
                                                       capture::detail::traced_fn f, dim_group& dims,
                                                       const dim_group& changed) {
    if (!cap.meta().alias_groups.empty()) return std::nullopt;  // inputs share memory: exact sizes
    dims.clear();
    for (std::size_t i = 0; i < inputs.size(); ++i)
        for (std::size_t d = 0; d < inputs[i].sizes().size(); ++d)
            if (inputs[i].sizes()[d] >= 2) dims.emplace_back(i, d);
    if (dims.empty()) return size_probe{};
    std::vector<dim_group> groups;
    dim_group hinted;
    for (const auto& p : changed)
        if (std::find(dims.begin(), dims.end(), p) != dims.end()) hinted.push_back(p);
    if (!hinted.empty()) groups.push_back(hinted);
    for (auto g : capture::detail::group_dynamic_dims(inputs, dims).dims) {
        std::erase_if(g, [&](const auto& p) { return std::find(hinted.begin(), hinted.end(), p) != hinted.end(); });
        if (!g.empty()) groups.push_back(std::move(g));
    }
    if (auto all = probe_sizes(cap, inputs, f, groups)) return all;
    if (groups.size() < 2) return std::nullopt;
    constexpr std::size_t max_groups = 8;  // each probe traces f twice; the changed dimensions come first
    if (groups.size() > max_groups) groups.resize(max_groups);
    std::vector<dim_group> ok;
    std::optional<size_probe> last;
    for (const auto& g : groups)
        if (auto p = probe_sizes(cap, inputs, f, {g})) {
            ok.push_back(g);
            last = std::move(p);
        }
    if (ok.empty()) return std::nullopt;
    if (ok.size() > 1) last = probe_sizes(cap, inputs, f, ok);
    if (last) {
        dims.clear();
        for (const auto& g : ok) dims.insert(dims.end(), g.begin(), g.end());
    }
    return last;
}

GRAFT_INLINE const script_state::compiled* script_state::get(std::span<const Tensor> args,
                                                             capture::detail::traced_fn f) {
    const compiled* first = compiled_.load(std::memory_order_seq_cst);
    if (first) {
        graft::detail::check(args.size() == first->cap.meta().num_inputs, "jit::script: the function was captured with ",
                             first->cap.meta().num_inputs, " inputs, got ", args.size());
        if (first->serves(args)) return first;  // the hot path: pointer and size comparisons
    }
    const std::vector<Tensor> inputs(args.begin(), args.end());
    // The dimensions whose sizes differ from the first capture's: one group of symbols to try
    // first when this call needs a capture of its own (automatic dynamic shapes).
    dim_group changed;
    const auto make = [&] {
        capture::captured cap = capture::detail::trace_impl(inputs, f);
        std::vector<int_list> sizes;
        std::vector<std::vector<bool>> free(inputs.size());
        for (std::size_t i = 0; i < inputs.size(); ++i) {
            sizes.push_back(inputs[i].sizes());
            free[i].assign(inputs[i].sizes().size(), false);
        }
        std::vector<std::pair<std::size_t, std::size_t>> dims;
        std::optional<size_probe> probe = free_dimensions(cap, inputs, f, dims, changed);
        if (probe)
            for (const auto& [i, d] : dims) free[i][d] = true;
        std::shared_ptr<const ir::symbolic_sizes> guards;
        if (probe && !probe->sizes.guards.empty()) guards = std::make_shared<const ir::symbolic_sizes>(probe->sizes);
        if (probe && !probe->sizes.patches.empty()) {
            // Numbers that are functions of the inputs' sizes: the executor computes them per call.
            std::vector<std::unique_ptr<ir::Graph>> other_graphs;
            for (const auto& o : probe->others) other_graphs.push_back(o.graph().copy());
            executor exec(cap.graph().copy(), std::move(other_graphs), options_, probe->hints);
            const ir::symbolic_sizes* symbolic = exec.symbolic_sizes();
            if (!symbolic) free = {};
            auto c = std::make_unique<compiled>(
                compiled{std::move(cap), std::move(exec), std::move(sizes), std::move(free), symbolic, {}});
            if (!c->free.empty()) c->size_guards = std::move(guards);
            c->index_sizes();
            return c;
        }
        if (!probe) free = {};
        // The executor takes the capture's graph (no copy; only cap.meta() is used from here on).
        executor exec(cap.shared_graph(), options_, std::true_type{});
        auto c = std::make_unique<compiled>(
            compiled{std::move(cap), std::move(exec), std::move(sizes), std::move(free), nullptr, {}});
        if (!c->free.empty()) c->size_guards = std::move(guards);
        c->index_sizes();
        return c;
    };
    std::lock_guard lock(mutex_);
    first = compiled_.load(std::memory_order_acquire);
    if (!first) {
        if (use_defaults_) options_ = default_options();
        graft::detail::check(!options_.fusion.empty(), "jit::script: the fusion strategy is empty");
        owned_ = make();
        compiled_.store(owned_.get(), std::memory_order_release);
        free_retired_if_quiescent(true);
        return owned_.get();
    }
    if (first->serves(inputs)) return first;
    for (const auto& c : other_patterns_)
        if (c->serves(inputs)) return c.get();
    if (other_patterns_.size() >= max_patterns) return nullptr;
    for (std::size_t i = 0; i < inputs.size() && i < first->sizes.size(); ++i)
        if (inputs[i].sizes().size() == first->sizes[i].size())
            for (std::size_t d = 0; d < first->sizes[i].size(); ++d)
                if (inputs[i].sizes()[d] != first->sizes[i][d]) changed.emplace_back(i, d);
    std::unique_ptr<compiled> c = make();
    compiled* made = c.get();
    const bool generalizes = !changed.empty() && !made->free.empty() &&
                             std::all_of(changed.begin(), changed.end(), [&](const auto& p) { return made->free[p.first][p.second]; });
    const std::lock_guard patterns(patterns_mutex_);
    other_patterns_.push_back(std::move(c));
    if (generalizes) {
        // Sizes that changed since the first capture are free in this one: it comes first from
        // now on (the hot path), so it serves the first call's sizes too, instead of the first
        // capture compiling a plan of its own for them. The first stays for what only it serves.
        std::swap(owned_, other_patterns_.back());
        compiled_.store(owned_.get(), std::memory_order_seq_cst);
    }
    return made;
}

}  // namespace graft::jit::detail
