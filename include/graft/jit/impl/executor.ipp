#pragma once
// Definitions for graft/jit/executor.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/jit/executor.hpp"

#include <algorithm>
#include <ostream>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

namespace graft::jit {

namespace detail {
/// How plans' graphs print in debug_state(): long tensor constants abbreviated.
inline constexpr ir::print_options readable{.max_tensor_elements = 8};
}  // namespace detail


GRAFT_INLINE const char* to_string(plan_kind k) noexcept {
    switch (k) {
        case plan_kind::fused: return "fused";
        case plan_kind::differentiable: return "differentiable";
        case plan_kind::eager: return "eager";
        case plan_kind::subgraphs: return "eager with differentiable subgraphs";
    }
    return "?";
}

GRAFT_INLINE bool input_guard::check(const ir::ivalue& v) const {
    if (any) return true;
    if (kind != ir::type_kind::tensor) {
        switch (kind) {
            case ir::type_kind::float_: return std::holds_alternative<double>(v);
            case ir::type_kind::int_: return std::holds_alternative<std::int64_t>(v);
            default: return std::holds_alternative<bool>(v);
        }
    }
    const Tensor* t = std::get_if<Tensor>(&v);
    return t != nullptr && check_tensor(*t);
}

GRAFT_INLINE void input_guard::compact() {
    exact = !any && kind == ir::type_kind::tensor && scalar_type && sizes && strides && requires_grad && !rank &&
            !contiguous && !symbolic_sizes && sizes->size() == strides->size();
    if (!exact) return;
    exact_type = *scalar_type;
    exact_requires_grad = *requires_grad;
    exact_layout = *sizes;
    exact_layout.insert(exact_layout.end(), strides->begin(), strides->end());
}

GRAFT_INLINE bool input_guard::check_tensor(const Tensor& tensor) const {
    const graft::detail::tensor_impl* im = tensor.impl_ptr().get();
    if (exact) {
        if (!im || im->type != exact_type) return false;
        const std::size_t r = im->sizes.size();
        if (2 * r != exact_layout.size()) return false;
        const std::int64_t* want = exact_layout.data();
        const std::int64_t* have = im->sizes.data();
        const std::int64_t* have_strides = im->strides.data();
        for (std::size_t d = 0; d < r; ++d)
            if (want[d] != have[d] || want[r + d] != have_strides[d]) return false;
        return exact_requires_grad == (im->autograd || im->view ? tensor.requires_grad() : false);
    }
    if (any) return true;
    if (kind != ir::type_kind::tensor) return false;
    if (!im) return false;
    if (scalar_type && *scalar_type != im->type) return false;
    const int_list& sz = im->sizes;
    const auto same = [](const std::vector<std::int64_t>& want, const int_list& have) {
        if (want.size() != have.size()) return false;
        for (std::size_t d = 0; d < want.size(); ++d)  // a loop: ranks are small, a memcmp call costs more
            if (want[d] != have[d]) return false;
        return true;
    };
    if (sizes && !same(*sizes, sz)) return false;
    if (strides && !same(*strides, im->strides)) return false;
    if (rank && *rank != sz.size()) return false;
    if (contiguous && *contiguous != graft::detail::is_contiguous_layout(sz, im->strides)) return false;
    if (symbolic_sizes) {
        if (sz.size() != symbolic_sizes->size()) return false;
        for (std::size_t d = 0; d < sz.size(); ++d) {
            const std::int64_t want = (*symbolic_sizes)[d];
            if (want >= 0 ? sz[d] != want : sz[d] < 2) return false;  // symbols: 0 and 1 are specialized
        }
    }
    // Last: requires_grad looks at the autograd metadata (none at all: false, no lookup).
    if (requires_grad && *requires_grad != (im->autograd || im->view ? tensor.requires_grad() : false)) return false;
    return true;
}

GRAFT_INLINE std::string input_guard::describe() const {
    if (any) return "any";
    std::ostringstream os;
    switch (kind) {
        case ir::type_kind::float_: return "float";
        case ir::type_kind::int_: return "int";
        case ir::type_kind::bool_: return "bool";
        case ir::type_kind::tensor: break;
    }
    os << (scalar_type ? ir::detail::dtype_type_name(*scalar_type) : "Tensor") << '(';
    if (sizes) {
        for (std::size_t i = 0; i < sizes->size(); ++i) os << (i ? ", " : "") << (*sizes)[i];
    } else if (symbolic_sizes) {
        for (std::size_t i = 0; i < symbolic_sizes->size(); ++i) {
            const std::int64_t d = (*symbolic_sizes)[i];
            os << (i ? ", " : "");
            if (d >= 0) os << d;
            else os << 's' << (-1 - d);
        }
    } else if (rank) {
        for (std::size_t i = 0; i < *rank; ++i) os << (i ? ", " : "") << '*';
    } else {
        os << "...";
    }
    if (strides) {
        os << ", strides=[";
        for (std::size_t i = 0; i < strides->size(); ++i) os << (i ? ", " : "") << (*strides)[i];
        os << ']';
    }
    if (contiguous) os << ", contiguous=" << (*contiguous ? 1 : 0);
    if (requires_grad) os << ", requires_grad=" << (*requires_grad ? 1 : 0);
    os << ')';
    return os.str();
}

GRAFT_INLINE std::uint64_t debug_state::total_guard_failures() const {
    std::uint64_t n = other_guard_failures;
    for (const auto& l : levels)
        if (l.plan) n += l.plan->guard_failures;
    return n;
}

GRAFT_INLINE std::ostream& operator<<(std::ostream& os, const debug_state& s) {
    os << "graft::jit executor: fusion strategy " << s.fusion << ", bailout depth " << s.bailout_depth << ", "
       << s.compilations << " compilation(s)\n";
    if (s.captures > 1)
        os << s.captures << " captures (one per aliasing pattern or sizes the others do not serve; below: the first); "
           << "the others: " << s.other_guard_failures << " guard failure(s), " << s.other_unoptimized_runs
           << " unoptimized run(s)\n";
    if (!s.symbolic.empty()) os << "graph symbolic sizes: " << s.symbolic << '\n';
    for (std::size_t i = 0; i < s.levels.size(); ++i) {
        const level_state& l = s.levels[i];
        os << (i == 0 ? "executor" : "fallback") << " #" << i << " (remaining depth " << l.remaining_depth << "): ";
        if (l.remaining_depth == 0 && !l.plan) {
            os << "depth spent, unoptimized plan, " << l.unoptimized_runs << " run(s)\n";
            continue;
        }
        os << l.profiled_runs << '/' << l.num_profiled_runs << " profiled run(s) (" << l.profiling_ms << " ms"
           << (l.profiling_released ? ", record released" : "") << ")";
        if (!l.plan) {
            os << ", not optimized yet\n";
            continue;
        }
        const plan_state& p = *l.plan;
        os << ", " << to_string(p.behavior) << ' ' << to_string(p.kind) << " plan";
        if (p.automatic_dynamic) os << " (automatic dynamic: sizes changed)";
        if (!p.reason.empty()) os << " (" << p.reason << ')';
        os << ": " << p.hits << " hit(s), " << p.guard_failures << " guard failure(s), compiled in " << p.compile_ms
           << " ms";
        if (p.timed_runs) os << ", " << p.timed_runs << " timed run(s) " << p.run_ms_total / static_cast<double>(p.timed_runs) << " ms each";
        os << "\n  guards:";
        for (std::size_t k = 0; k < p.guards.size(); ++k) os << (k ? ", " : " ") << '%' << k << ": " << p.guards[k];
        if (!p.symbolic.empty()) os << "\n  symbolic sizes: " << p.symbolic;
        os << "\n  shapes profiled:";
        for (std::size_t k = 0; k < p.seen_shapes.size(); ++k)
            os << (k ? "; " : " ") << '%' << k << ": " << (p.seen_shapes[k].empty() ? "-" : p.seen_shapes[k]);
        os << '\n' << p.graph;
    }
    return os;
}

namespace detail {

GRAFT_INLINE void trace_log::add(std::string name, const char* category, clock::time_point start, int level) {
    const auto now = clock::now();
    std::lock_guard lock(mutex);
    if (events.size() >= max_events) return;
    events.push_back({std::move(name), category,
                      std::chrono::duration<double, std::micro>(start - origin).count(),
                      std::chrono::duration<double, std::micro>(now - start).count(),
                      std::hash<std::thread::id>{}(std::this_thread::get_id()) % 100000, level});
}

GRAFT_INLINE bool specialization::admits(std::span<const ir::ivalue> in) const {
    if (in.size() != guards.size()) return false;
    for (std::size_t i = 0; i < in.size(); ++i)
        if (!guards[i].check(in[i])) return false;
    for (const auto& occ : symbol_occurrences) {  // duck sizing: one symbol, one size
        const std::int64_t v = std::get<Tensor>(in[occ[0].first]).sizes()[occ[0].second];
        for (std::size_t k = 1; k < occ.size(); ++k)
            if (std::get<Tensor>(in[occ[k].first]).sizes()[occ[k].second] != v) return false;
    }
    return true;
}

GRAFT_INLINE void shape_history::add(const std::vector<ir::ivalue>& in) {
    std::vector<std::vector<std::int64_t>> sizes;
    for (const auto& v : in) {
        const Tensor* t = std::get_if<Tensor>(&v);
        sizes.emplace_back();
        if (t && t->defined()) sizes.back().assign(t->sizes().begin(), t->sizes().end());
    }
    std::lock_guard lock(mutex);
    if (calls.size() < max_calls) calls.push_back(std::move(sizes));
}

GRAFT_INLINE std::vector<std::pair<std::size_t, std::size_t>> shape_history::varying_dims() {
    std::lock_guard lock(mutex);
    std::vector<std::pair<std::size_t, std::size_t>> r;
    if (calls.empty()) return r;
    for (std::size_t i = 0; i < calls[0].size(); ++i)
        for (std::size_t d = 0; d < calls[0][i].size(); ++d) {
            bool varies = false;
            for (const auto& c : calls)
                varies = varies || (i < c.size() && c[i].size() == calls[0][i].size() && c[i][d] != calls[0][i][d]);
            if (varies) r.emplace_back(i, d);
        }
    return r;
}

GRAFT_INLINE std::vector<ir::ivalue> specialization::run(std::span<const ir::ivalue> in) const {
    if (kind != plan_kind::differentiable) return run_plan->run(in);
    std::vector<Tensor> t;
    t.reserve(in.size());
    for (const auto& v : in) t.push_back(std::get<Tensor>(v));
    auto out = (*diff)(t);
    return {out.begin(), out.end()};
}

GRAFT_INLINE executor_state::executor_state(std::shared_ptr<const ir::Graph> g, options o, std::size_t remaining,
                                            std::shared_ptr<trace_log> log, int level,
                                            std::shared_ptr<std::atomic<std::size_t>> compilations,
                                            std::shared_ptr<shape_history> history,
                                            std::shared_ptr<const ir::symbolic_sizes> symbolic)
    : graph_(std::move(g)),
      options_(std::move(o)),
      remaining_(remaining),
      log_(std::move(log)),
      level_(level),
      compilations_(std::move(compilations)),
      history_(std::move(history)),
      symbolic_(std::move(symbolic)) {
    if (remaining_ == 0) unoptimized_ = std::make_unique<plan>(graph_, plain_options(), no_types);
}

GRAFT_INLINE std::vector<ir::ivalue> executor_state::run(std::span<const ir::ivalue> in) {
    // Only the top-level executor is ever flushed: its count covers the fallbacks' runs too.
    if (level_ != 0) return run_level(in);
    const active_calls::guard g(calls_.mine());
    return run_level(in);
}

GRAFT_INLINE bool executor_state::try_direct(std::span<const Tensor> in, std::vector<Tensor>& out, bool exact_only) {
    if (level_ != 0 || options_.collect_timings || release_pending_.load(std::memory_order_relaxed)) return false;
    const active_calls::guard g(calls_.mine());  // as run(): a flush must not free s meanwhile
    const specialization* s = current_.load(std::memory_order_seq_cst);
    if (!s || !s->symbol_occurrences.empty() || in.size() != s->guards.size() || (exact_only && !s->exact_guards))
        return false;
    const bool differentiable = s->kind == plan_kind::differentiable && s->diff;
    if (!differentiable && (s->kind != plan_kind::fused || !s->run_plan || !s->run_plan->has_direct())) return false;
    for (std::size_t i = 0; i < in.size(); ++i)
        if (!s->guards[i].check_tensor(in[i])) return false;  // run() counts the guard failure
    if (differentiable) {
        // Tensors in, tensors out: the differentiable plan without run()'s lists of ivalues.
        s->hits.fetch_add(1, std::memory_order_relaxed);
        out = (*s->diff)(std::vector<Tensor>(in.begin(), in.end()));
        return true;
    }
    if (!s->run_plan->run_direct(in, out, s->behavior == fusion_behavior::static_)) return false;
    s->hits.fetch_add(1, std::memory_order_relaxed);
    return true;
}

GRAFT_INLINE void executor_state::free_retired_if_quiescent(bool inside_call) {
    if (!retired_.empty() && (inside_call ? calls_.quiescent_but_caller() : calls_.quiescent())) retired_.clear();
}

GRAFT_INLINE std::vector<ir::ivalue> executor_state::run_level(std::span<const ir::ivalue> in) {
    for (;;) {
        if (const specialization* s = current_.load(std::memory_order_seq_cst)) {
            if (release_pending_.load(std::memory_order_relaxed)) maybe_release_profile();
            if (s->admits(in)) {
                s->hits.fetch_add(1, std::memory_order_relaxed);
                if (!options_.collect_timings) return s->run(in);
                const auto t0 = clock::now();
                auto out = s->run(in);
                s->run_ns.fetch_add(static_cast<std::uint64_t>(
                                        std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - t0).count()),
                                    std::memory_order_relaxed);
                s->timed_runs.fetch_add(1, std::memory_order_relaxed);
                log_->add("optimized run", "run", t0, level_);
                return out;
            }
            s->guard_failures.fetch_add(1, std::memory_order_relaxed);
            const auto t0 = clock::now();
            auto out = s->fallback(in);
            if (options_.collect_timings) log_->add("fallback", "bailout", t0, level_);
            return out;
        }
        if (unoptimized_) {
            unoptimized_runs_.fetch_add(1, std::memory_order_relaxed);
            return unoptimized_->run(in);
        }
        std::unique_lock lock(mutex_);
        if (current_.load(std::memory_order_acquire)) continue;  // another thread compiled meanwhile
        const std::vector<ir::ivalue> args(in.begin(), in.end());
        if (profiled_runs_ < options_.num_profiled_runs) return profile(args);
        compile(args);
    }
}

GRAFT_INLINE void executor_state::flush() {
    std::lock_guard lock(mutex_);
    current_.store(nullptr, std::memory_order_seq_cst);
    if (owned_) retired_.push_back(std::shared_ptr<const specialization>(owned_.release()));
    free_retired_if_quiescent(false);
    record_.reset();
    profiling_plan_.reset();
    profiled_runs_ = 0;
    profiling_ms_ = 0;
    profiling_released_ = false;
    release_pending_.store(false, std::memory_order_relaxed);
}

GRAFT_INLINE void executor_state::collect(debug_state& d) const {
    level_state l;
    l.remaining_depth = remaining_;
    std::shared_ptr<executor_state> next;
    {
        std::lock_guard lock(mutex_);
        l.profiled_runs = profiled_runs_;
        l.num_profiled_runs = options_.num_profiled_runs;
        l.profiling_ms = profiling_ms_;
        l.profiling_released = profiling_released_;
        l.unoptimized_runs = unoptimized_runs_.load(std::memory_order_relaxed);
        if (const specialization* s = current_.load(std::memory_order_acquire)) {
            plan_state p;
            p.kind = s->kind;
            p.behavior = s->behavior;
            p.reason = s->reason;
            p.automatic_dynamic = s->automatic_dynamic;
            for (const auto& g : s->guards) p.guards.push_back(g.describe());
            p.seen_shapes = s->seen_shapes;
            p.symbolic = s->symbolic_text;
            p.graph = s->graph_text(*graph_);
            p.fusion_groups = s->fusion_groups;
            p.hits = s->hits.load(std::memory_order_relaxed);
            p.guard_failures = s->guard_failures.load(std::memory_order_relaxed);
            p.compile_ms = s->compile_ms;
            p.timed_runs = s->timed_runs.load(std::memory_order_relaxed);
            p.run_ms_total = static_cast<double>(s->run_ns.load(std::memory_order_relaxed)) / 1e6;
            l.plan = std::move(p);
            next = s->fallback_executor;
        }
    }
    d.levels.push_back(std::move(l));
    if (next) next->collect(d);
}

GRAFT_INLINE std::vector<ir::ivalue> executor_state::profile(const std::vector<ir::ivalue>& in) {
    const auto t0 = clock::now();
    if (!record_) record_ = std::make_unique<profiling_record>();
    if (!profiling_plan_) profiling_plan_ = std::make_unique<plan>(graph_, plain_options(), no_types);
    // Observe into a copy: a run that throws (bad input) must not leave its types behind.
    profiling_record rec = *record_;
    const observer_fn observe = [&rec](const ir::Value* v, const ir::ivalue& x) { rec.observe(v, x); };
    auto out = profiling_plan_->run(in, &observe);
    rec.finish_run();
    history_->add(in);
    *record_ = std::move(rec);
    ++profiled_runs_;
    profiling_ms_ += ms_since(t0);
    log_->add("profiling run", "profile", t0, level_);
    return out;
}

GRAFT_INLINE std::optional<ir::Type> executor_state::profiled_type(const ir::Value* v) const {
    if (!record_) return std::nullopt;
    const value_profile* p = record_->find(v);
    if (!p || p->mixed_kinds) return std::nullopt;
    return p->type;
}

GRAFT_INLINE input_guard executor_state::make_guard(const ir::Value* v, fusion_behavior b) const {
    input_guard g;
    const value_profile* p = record_ ? record_->find(v) : nullptr;
    if (!p) {
        g.any = true;  // never profiled (num_profiled_runs == 0)
        return g;
    }
    if (p->mixed_kinds) return g;  // a tensor and a number were seen: any tensor
    g.kind = p->type.kind;
    if (!p->type.is_tensor()) return g;
    const ir::TensorType& t = p->type.tensor;
    g.scalar_type = t.scalar_type;
    g.requires_grad = t.requires_grad;
    // STATIC: every part of the type the profile knows is checked (a STATIC plan may rely on
    // sizes and strides separately: known sizes with strides that varied still fix loop bounds).
    const bool sizes_known = t.sizes && std::all_of(t.sizes->begin(), t.sizes->end(), [](const auto& d) { return d.has_value(); });
    if (b == fusion_behavior::static_ && sizes_known) {
        g.sizes.emplace();
        for (const auto& s : *t.sizes) g.sizes->push_back(*s);
        g.strides = t.strides;
        if (!g.strides) g.contiguous = p->contiguous;
    } else {
        g.rank = t.rank();
        g.contiguous = p->contiguous;
    }
    g.compact();
    return g;
}

GRAFT_INLINE bool executor_state::only_sizes_changed() const {
    const auto& ins = graph_->inputs();
    if (!record_ || parent_static_guards_.size() != ins.size()) return false;
    bool sizes_differ = false;
    for (std::size_t i = 0; i < ins.size(); ++i) {
        const input_guard& g = parent_static_guards_[i];
        const value_profile* p = record_->find(ins[i]);
        if (g.any || !p || p->mixed_kinds) return false;
        if (p->type.kind != g.kind) return false;
        if (!p->type.is_tensor()) continue;
        const ir::TensorType& t = p->type.tensor;
        if (t.scalar_type != g.scalar_type || t.requires_grad != g.requires_grad) return false;
        if (!g.sizes) continue;  // the parent did not check sizes here
        if (!t.sizes || t.sizes->size() != g.sizes->size()) return false;  // unknown or other rank
        for (std::size_t d = 0; d < g.sizes->size(); ++d)
            if ((*t.sizes)[d] != (*g.sizes)[d]) sizes_differ = true;
    }
    return sizes_differ;
}

GRAFT_INLINE input_guard differentiable_guard(const Tensor& t) {
    input_guard g;
    g.kind = ir::type_kind::tensor;
    g.scalar_type = t.type();
    g.sizes.emplace(t.sizes().begin(), t.sizes().end());
    g.requires_grad = t.requires_grad();
    return g;
}

GRAFT_INLINE std::map<std::string, ir::Type> executor_state::profiled_types() const {
    std::map<std::string, ir::Type> types;
    if (record_)
        for (const auto& [v, p] : record_->values())
            if (!p.mixed_kinds) types[v->name()] = p.type;
    return types;
}

GRAFT_INLINE std::string specialization::graph_text(const ir::Graph& g) const {
    if (kind == plan_kind::differentiable && diff)
        return "forward:\n" + ir::to_string(*diff->forward, detail::readable) + forward_plan->describe() + "backward:\n" +
               ir::to_string(*diff->backward, detail::readable) + backward_plan->describe();
    auto copy = g.copy();
    // copy() keeps value names: map types by name.
    const std::map<std::string, ir::Type>& types = profiled_types;
    const auto apply = [&](const ir::Block& b, auto& self) -> void {
        for (ir::Value* v : b.inputs())
            if (auto it = types.find(v->name()); it != types.end()) v->set_type(it->second);
        for (const ir::Node* n : b.nodes()) {
            for (ir::Value* v : n->outputs())
                if (auto it = types.find(v->name()); it != types.end()) v->set_type(it->second);
            for (const ir::Block* sub : n->blocks()) self(*sub, self);
        }
    };
    apply(*copy->block(), apply);
    std::string text = ir::to_string(*copy, detail::readable);
    if (kind == plan_kind::fused && run_plan) text += run_plan->describe();
    return text + graph_suffix;
}

GRAFT_INLINE void executor_state::compile(const std::vector<ir::ivalue>& in) {
    const auto t0 = clock::now();
    history_->add(in);
    auto s = std::make_unique<specialization>();
    fusion_behavior behavior = current_behavior(options_.fusion, remaining_);
    if (behavior == fusion_behavior::static_ && options_.automatic_dynamic && only_sizes_changed()) {
        behavior = fusion_behavior::dynamic_;
        s->automatic_dynamic = true;
    }
    s->behavior = behavior;
    for (const ir::Value* v : graph_->inputs()) {
        s->guards.push_back(make_guard(v, behavior));
        std::ostringstream os;
        if (const value_profile* p = record_ ? record_->find(v) : nullptr) {
            bool first = true;
            for (const auto& shape : p->shapes) {
                os << (first ? "[" : ", [");
                for (std::size_t k = 0; k < shape.size(); ++k) os << (k ? ", " : "") << shape[k];
                os << ']';
                first = false;
            }
            if (p->shapes_overflow) os << ", ...";
        }
        s->seen_shapes.push_back(os.str());
    }
    const auto type_of = [this](const ir::Value* v) { return profiled_type(v); };
    plan::build_options bo;
    bo.fuse = options_.enable_fusion;
    bo.static_shapes = behavior == fusion_behavior::static_;
    bo.num_threads = options_.num_threads;
    bo.parallel_grain = options_.parallel_grain;
    bo.symbolic = symbolic_;

    const bool needs_grad = record_ && record_->any_requires_grad();
    if (!record_) {
        s->kind = plan_kind::eager;
        s->reason = "no profiling runs";
        s->run_plan = std::make_unique<plan>(graph_, plain_options(), type_of);
    } else if (!needs_grad) {
        s->kind = plan_kind::fused;
        s->run_plan = std::make_unique<plan>(graph_, bo, type_of);
        s->fusion_groups = s->run_plan->num_fusion_groups();
        s->profiled_types = profiled_types();
    } else {
        s->reason = differentiable_plan(*s, in, bo, behavior);
        if (s->reason.empty()) {
            s->kind = plan_kind::differentiable;  // differentiable_plan set the guards
        } else {
            s->kind = plan_kind::eager;
            plan::build_options eo = plain_options();
            std::string text;
            eo.regions = differentiable_subgraphs(bo, text);
            if (!eo.regions.empty()) {
                s->kind = plan_kind::subgraphs;
                s->fusion_groups = 0;
            }
            s->run_plan = std::make_unique<plan>(graph_, eo, type_of);
            s->profiled_types = profiled_types();
            s->graph_suffix = std::move(text);
            // Never a silent eager plan: say so once per executor (debug_state() has the details).
            if (!log_->warned_eager.exchange(true))
                log_message(log_level::warning,
                            graft::detail::concat("jit: no differentiable plan for this graph (", s->reason, "); it runs ",
                                                  s->kind == plan_kind::subgraphs ? "eagerly with differentiable subgraphs"
                                                                                  : "eagerly",
                                                  " when inputs require grad (debug_state() shows the plan)"));
        }
    }
    // The fallback function: the same graph, one specialization less.
    auto fb = std::make_shared<executor_state>(graph_, options_, remaining_ - 1, log_, level_ + 1, compilations_,
                                               history_, symbolic_);
    if (behavior == fusion_behavior::static_) fb->parent_static_guards_ = s->guards;
    s->fallback_executor = fb;
    s->fallback = [fb](std::span<const ir::ivalue> args) { return fb->run(args); };
    s->compile_ms = ms_since(t0);
    compilations_->fetch_add(1, std::memory_order_relaxed);
    log_->add(std::string("compile ") + to_string(behavior) + ' ' + to_string(s->kind), "compile", t0, level_);

    s->exact_guards = std::all_of(s->guards.begin(), s->guards.end(), [](const input_guard& g) { return g.exact; });
    owned_ = std::move(s);
    current_.store(owned_.get(), std::memory_order_release);
    free_retired_if_quiescent(level_ == 0);  // plans flushed while calls were running
    if (options_.release_profiling_after_optimization) {
        release_deadline_ = clock::now() + std::chrono::milliseconds(options_.release_profiling_delay_ms);
        if (options_.release_profiling_delay_ms == 0) release_profile_locked();
        else release_pending_.store(true, std::memory_order_relaxed);
    }
}

/// Plans (fused) for an aot_function's forward and backward graphs, plugged in as its runners;
/// its autograd node is named DifferentiableGraphBackward.
GRAFT_INLINE std::pair<std::shared_ptr<plan>, std::shared_ptr<plan>> plug_fused_plans(capture::aot_function& f,
                                                                                       plan::build_options forward,
                                                                                       plan::build_options backward) {
    const auto own_types = [](const ir::Value* v) -> std::optional<ir::Type> { return v->type(); };
    auto fp = std::make_shared<plan>(f.forward, std::move(forward), own_types);
    auto bp = std::make_shared<plan>(f.backward, std::move(backward), own_types);
    const auto as_runner = [](std::shared_ptr<plan> p) {
        return [p](const std::vector<Tensor>& args) {
            std::vector<Tensor> r;
            // One fusion group (the usual differentiable chain): tensors in, tensors out.
            if (p->run_direct(std::span<const Tensor>(args.data(), args.size()), r, false)) return r;
            r.clear();
            const boost::container::small_vector<ir::ivalue, 16> a(args.begin(), args.end());
            auto values = p->run(std::span<const ir::ivalue>(a.data(), a.size()));
            r.reserve(values.size());
            for (auto& v : values) r.push_back(std::get<Tensor>(std::move(v)));
            return r;
        };
    };
    f.forward_runner = as_runner(fp);
    f.backward_runner = std::make_shared<const capture::aot_function::runner>(as_runner(bp));
    f.node_name = "DifferentiableGraphBackward";
    return {std::move(fp), std::move(bp)};
}

GRAFT_INLINE std::string executor_state::differentiable_plan(specialization& s, const std::vector<ir::ivalue>& in,
                                                             plan::build_options bo, fusion_behavior behavior) {
    for (const ir::Node* n : graph_->block()->nodes()) {
        if (!n->blocks().empty())
            return std::string("the graph has control flow (") + std::string(n->kind().name) +
                   "); differentiable plans are straight-line graphs";
        if (n->is<ir::kinds::constant>())
            if (const auto* t = std::get_if<Tensor>(&n->attr("value")); t && t->requires_grad())
                return "a constant tensor requires grad";
    }
    // The forward and backward graphs are traced (capture::aot) for the dtypes, sizes and
    // requires_grad flags of example inputs, so the plan's guards are exactly those of the
    // examples. The examples are the inputs of the profiled runs when the profile knows them
    // completely (this call's inputs when they agree, otherwise zeros of the profiled types:
    // the values do not matter, a straight-line graph is traced the same way for any values),
    // else this call's inputs.
    const auto& params = graph_->inputs();
    std::vector<Tensor> examples;
    bool profile_complete = record_ != nullptr, call_matches = true;
    for (std::size_t i = 0; i < params.size(); ++i) {
        const Tensor* t = std::get_if<Tensor>(&in[i]);
        if (!t) return "an input is a number";
        const value_profile* p = record_ ? record_->find(params[i]) : nullptr;
        const bool known = p && !p->mixed_kinds && p->type.is_tensor() && p->type.tensor.scalar_type &&
                           p->type.tensor.requires_grad && p->type.tensor.sizes &&
                           std::all_of(p->type.tensor.sizes->begin(), p->type.tensor.sizes->end(),
                                       [](const auto& d) { return d.has_value(); });
        if (!known) {
            profile_complete = false;
            continue;
        }
        const ir::TensorType& pt = p->type.tensor;
        call_matches = call_matches && t->type() == *pt.scalar_type && t->requires_grad() == *pt.requires_grad &&
                       std::equal(t->sizes().begin(), t->sizes().end(), pt.sizes->begin(), pt.sizes->end(),
                                  [](std::int64_t a, const std::optional<std::int64_t>& b) { return a == *b; });
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
        const Tensor& t = std::get<Tensor>(in[i]);
        if (!profile_complete || call_matches) {
            examples.push_back(t);
            continue;
        }
        const ir::TensorType& pt = record_->find(params[i])->type.tensor;
        int_list sizes;
        for (const auto& d : *pt.sizes) sizes.push_back(*d);
        Tensor z = zeros(sizes, *pt.scalar_type);
        if (*pt.requires_grad) z.requires_grad_();
        examples.push_back(std::move(z));
    }
    s.guards.clear();
    for (const Tensor& e : examples) s.guards.push_back(differentiable_guard(e));
    const ir::Graph& g = *graph_;
    const ir::symbolic_sizes* graph_sizes = symbolic_.get();
    capture::aot_options aot_opts;
    if (options_.recompute_elementwise_in_backward) aot_opts.policy = capture::partition_policy::recompute_elementwise;
    const auto trace = [&g, graph_sizes, aot_opts](const std::vector<Tensor>& ex) {
        return std::make_shared<capture::aot_function>(capture::aot(
            [&g, graph_sizes](const std::vector<Tensor>& args) {
                std::vector<ir::ivalue> a(args.begin(), args.end());
                std::vector<Tensor> r;
                for (auto& v : ir::interpret(g, a, graph_sizes)) {
                    auto* t = std::get_if<Tensor>(&v);
                    graft::detail::check(t != nullptr, "an output is a number");
                    r.push_back(std::move(*t));
                }
                return r;
            },
            ex, aot_opts));
    };
    std::shared_ptr<capture::aot_function> f;
    try {
        f = trace(examples);
    } catch (const graft::error& e) {
        return std::string("capture::aot: ") + e.what();
    }
    // DYNAMIC: sizes that varied over the chain's calls become symbols when the graphs traced
    // at other values of them differ only in attributes that are products of input sizes.
    std::shared_ptr<const ir::symbolic_sizes> fwd_sym, bwd_sym;
    if (behavior == fusion_behavior::dynamic_) {
        std::vector<std::pair<std::size_t, std::size_t>> varying;
        for (const auto& [i, d] : history_->varying_dims())
            if (examples[i].sizes().size() > d && examples[i].sizes()[d] >= 2) varying.emplace_back(i, d);
        if (!varying.empty()) {
            // Duck sizing: varying dimensions of equal size share a symbol.
            const capture::detail::dynamic_groups dg = capture::detail::group_dynamic_dims(examples, varying);
            const auto& groups = dg.dims;
            std::string why;
            try {
                std::vector<std::shared_ptr<capture::aot_function>> others;
                const auto perturbed = capture::detail::perturbed_examples(examples, dg, 2);
                {
                    const capture::detail::made_up_values_scope made_up;
                    for (const auto& ex : perturbed) others.push_back(trace(ex));
                }
                std::vector<ir::size_hint> hints =
                    ir::merge_size_hints({&f->size_hints, &others[0]->size_hints, &others[1]->size_hints});
                if (graph_sizes) {
                    // The graph's own SymInt sizes explain its autodiff's sizes too.
                    std::vector<std::vector<std::int64_t>> values;
                    for (const std::vector<Tensor>* ex :
                         std::array<const std::vector<Tensor>*, 3>{&examples, &perturbed[0], &perturbed[1]})
                        values.push_back(graph_sizes->bind(std::vector<ir::ivalue>(ex->begin(), ex->end())));
                    for (ir::size_hint& h : graph_sizes->as_hints(values)) hints.push_back(std::move(h));
                }
                auto fs = ir::infer_symbolic_sizes(*f->forward, {others[0]->forward.get(), others[1]->forward.get()},
                                                   why, hints);
                auto bs = fs ? ir::infer_symbolic_sizes(*f->backward,
                                                        {others[0]->backward.get(), others[1]->backward.get()}, why, hints,
                                                        {f->forward.get(), others[0]->forward.get(), others[1]->forward.get()})
                             : std::nullopt;
                if (fs && bs) {
                    fs->relax_input_types(*f->forward);
                    bs->relax_input_types(*f->backward);
                    fwd_sym = std::make_shared<const ir::symbolic_sizes>(std::move(*fs));
                    bwd_sym = std::make_shared<const ir::symbolic_sizes>(std::move(*bs));
                }
            } catch (const graft::error& e) {
                why = std::string("tracing at other sizes failed: ") + e.what();
            }
            if (fwd_sym) {
                for (std::size_t k = 0; k < groups.size(); ++k)
                    for (const auto& [i, d] : groups[k]) {
                        input_guard& gd = s.guards[i];
                        if (!gd.symbolic_sizes) gd.symbolic_sizes.emplace(gd.sizes->begin(), gd.sizes->end());
                        (*gd.symbolic_sizes)[d] = -1 - static_cast<std::int64_t>(k);
                    }
                for (input_guard& gd : s.guards)
                    if (gd.symbolic_sizes) gd.sizes.reset();
                s.symbol_occurrences = groups;
                f->signature.clear();  // the specialization's guards decide what the graphs serve
                f->forward_sizes = fwd_sym;
                f->backward_sizes = bwd_sym;  // its node gives the backward the forward's sizes
                s.symbolic_text = "forward: " + fwd_sym->describe(*f->forward) + "\n    backward: " +
                                  bwd_sym->describe(*f->backward);
            } else {
                s.symbolic_text = "none (exact sizes): " + why;
            }
        }
    }
    plan::build_options fbo = bo, bbo = bo;
    fbo.symbolic = fwd_sym;
    bbo.symbolic = bwd_sym;
    std::tie(s.forward_plan, s.backward_plan) = plug_fused_plans(*f, fbo, bbo);
    s.fusion_groups = s.forward_plan->num_fusion_groups() + s.backward_plan->num_fusion_groups();
    s.diff = std::move(f);
    return {};
}

GRAFT_INLINE std::vector<plan_region> executor_state::differentiable_subgraphs(plan::build_options bo,
                                                                              std::string& text) {
    std::vector<plan_region> regions;
    const ir::Block& top = *graph_->block();
    const auto is_constant = [](const ir::Value* v) { return v->node() && v->node()->is<ir::kinds::constant>(); };
    const auto complete_tensor = [this](const ir::Value* v) -> std::optional<ir::Type> {
        auto t = profiled_type(v);
        if (!t || !t->is_tensor() || !t->tensor.complete()) return std::nullopt;
        return t;
    };
    // A node a subgraph can hold: no blocks, run by the eager ops, tensors in and out (numbers
    // only from constants, which are copied into the subgraph).
    const auto eligible = [&](const ir::Node* n) {
        if (!n->blocks().empty() || !n->kind().run || n->is<ir::kinds::constant>()) return false;
        if (symbolic_ && symbolic_->patches_node(n)) return false;  // its attributes change per call
        for (const ir::Value* v : n->outputs())
            if (!complete_tensor(v)) return false;
        for (const ir::Value* v : n->inputs())
            if (!is_constant(v) && !complete_tensor(v)) return false;
        return true;
    };
    // The runs of eligible nodes of every block, nested blocks (If branches, Loop bodies)
    // included: each run is a candidate region.
    std::vector<std::vector<const ir::Node*>> runs;
    const auto collect = [&](const ir::Block& b, auto& self) -> void {
        std::vector<const ir::Node*> seq;
        for (const ir::Node* n : b.nodes())
            if (!n->is<ir::kinds::constant>()) seq.push_back(n);
        std::size_t i = 0;
        while (i < seq.size()) {
            std::size_t j = i;
            while (j < seq.size() && eligible(seq[j])) ++j;
            if (j == i) {
                for (const ir::Block* inner : seq[i]->blocks()) self(*inner, self);
                ++i;
                continue;
            }
            runs.emplace_back(seq.begin() + static_cast<std::ptrdiff_t>(i), seq.begin() + static_cast<std::ptrdiff_t>(j));
            i = j;
        }
    };
    collect(top, collect);
    for (std::vector<const ir::Node*>& run : runs) {
        if (run.size() < std::max<std::size_t>(options_.min_differentiable_subgraph, 1)) continue;
        const std::set<const ir::Node*> in_run(run.begin(), run.end());
        auto sg = std::make_shared<ir::Graph>();
        std::map<const ir::Value*, ir::Value*> map;
        plan_region reg;
        reg.nodes = run;
        std::vector<Tensor> examples;
        for (const ir::Node* n : run) {
            for (const ir::Value* v : n->inputs()) {
                if (map.count(v)) continue;
                if (is_constant(v)) {
                    ir::Node* c = sg->append<ir::kinds::constant>();
                    c->set_attr("value", v->node()->attr("value"));
                    map[v] = c->add_output(v->type());
                    continue;
                }
                const ir::Type t = *complete_tensor(v);
                map[v] = sg->add_input(t, v->name());
                reg.inputs.push_back(v);
                int_list sizes;
                for (const auto& d : *t.tensor.sizes) sizes.push_back(*d);
                Tensor e = zeros(sizes, *t.tensor.scalar_type);
                if (*t.tensor.requires_grad) e.requires_grad_();
                examples.push_back(std::move(e));
            }
            ir::Node* m = sg->append(n->kind());
            for (const ir::Value* v : n->inputs()) m->add_input(map.at(v));
            for (const auto& [name, value] : n->attributes()) m->set_attr(name, value);
            for (const ir::Value* v : n->outputs()) map[v] = m->add_output(*complete_tensor(v));
        }
        for (const ir::Node* n : run)
            for (const ir::Value* v : n->outputs()) {
                bool escapes = false;
                for (const ir::Use& u : v->uses()) escapes = escapes || !u.user || !in_run.count(u.user);
                if (!escapes) continue;
                sg->register_output(map.at(v));
                reg.outputs.push_back(v);
            }
        if (reg.outputs.empty()) continue;
        std::shared_ptr<capture::aot_function> f;
        try {
            sg->lint();
            const ir::Graph& sub = *sg;
            capture::aot_options aot_opts;
            if (options_.recompute_elementwise_in_backward)
                aot_opts.policy = capture::partition_policy::recompute_elementwise;
            f = std::make_shared<capture::aot_function>(capture::aot(
                [&sub](const std::vector<Tensor>& args) {
                    return ir::interpret(sub, args);
                },
                examples, aot_opts));
        } catch (const graft::error& e) {
            text += std::string("  (a region of ") + std::to_string(run.size()) + " nodes stays eager: " + e.what() + ")\n";
            continue;
        }
        f->recapture.reset();  // the region's own guard: admits() or eager
        const auto [fp, bp] = plug_fused_plans(*f, bo, bo);
        text += "differentiable subgraph " + std::to_string(regions.size()) + " (" + std::to_string(run.size()) +
                " nodes, from %" + run.front()->outputs()[0]->name() + " to %" + run.back()->outputs()[0]->name() +
                "):\n  forward:\n" + ir::to_string(*f->forward, detail::readable) + fp->describe() + "  backward:\n" +
                ir::to_string(*f->backward, detail::readable) + bp->describe();
        // Guarded on the inputs' types and requires_grad: otherwise the region runs eagerly, on
        // a copy whose inputs take any tensor (under no_grad a value profiled as requiring grad
        // does not; the ops check what they need).
        std::shared_ptr<ir::Graph> loose(sg->copy());
        for (ir::Value* v : loose->inputs()) v->set_type(ir::Type::tensor_type());
        reg.run = [f, loose](const std::vector<ir::ivalue>& in) -> std::vector<ir::ivalue> {
            std::vector<Tensor> t;
            bool grad = false;
            for (const auto& v : in) {
                const Tensor* x = std::get_if<Tensor>(&v);
                if (!x) return ir::interpret(*loose, in);
                grad = grad || x->requires_grad();
                t.push_back(*x);
            }
            if (!grad || !autograd::is_grad_enabled() || !f->admits(t)) return ir::interpret(*loose, in);
            auto out = (*f)(t);
            return {out.begin(), out.end()};
        };
        regions.push_back(std::move(reg));
    }
    return regions;
}

GRAFT_INLINE void executor_state::release_profile_locked() {
    record_.reset();
    profiling_plan_.reset();
    profiling_released_ = true;
    release_pending_.store(false, std::memory_order_relaxed);
}

GRAFT_INLINE void executor_state::maybe_release_profile() {
    if (clock::now() < release_deadline_) return;
    std::unique_lock lock(mutex_, std::try_to_lock);
    if (lock.owns_lock() && release_pending_.load(std::memory_order_relaxed)) release_profile_locked();
}

}  // namespace detail

GRAFT_INLINE executor::executor(const ir::Graph& g, options o) : executor(g.copy(), std::move(o)) {}

GRAFT_INLINE void executor::prepare(ir::Graph& g, bool keep_input_types) {
    try {
        g.lint();
    } catch (const graft::error& e) {
        graft::detail::fail(std::string("jit::executor: the graph is invalid: ") + e.what());
    }
    // Profiling-insensitive optimizations once, up front. The graph's declared tensor types
    // describe one call (a capture's first call, or whatever a graph text claims); the
    // executor serves others under its guards, so the passes must not use them (a narrow that
    // is a no-op at the first call's sizes is not one at others): every tensor type is
    // forgotten first, and the profile supplies the types. keep_input_types: the inputs'
    // types come back afterwards (the symbolic-size inference reads them).
    std::vector<ir::Type> input_types;
    for (const ir::Value* v : g.inputs()) input_types.push_back(v->type());
    const auto forget = [](ir::Block& b, auto& self) -> void {
        for (ir::Value* v : b.inputs())
            if (v->type().is_tensor()) v->set_type(ir::Type::tensor_type());
        for (ir::Node* n : b.nodes()) {
            for (ir::Value* v : n->outputs())
                if (v->type().is_tensor() && !n->is<ir::kinds::constant>()) v->set_type(ir::Type::tensor_type());
            for (ir::Block* inner : n->blocks()) self(*inner, self);
        }
    };
    forget(*g.block(), forget);
    ir::pipeline_options checked;
    checked.lint_input = false;  // linted above
    ir::default_pipeline::run(g, checked);
    if (keep_input_types)
        for (std::size_t i = 0; i < g.inputs().size(); ++i) g.inputs()[i]->set_type(input_types[i]);
    ir::detail::lint_own_graph(g);
}

GRAFT_INLINE executor::executor(std::unique_ptr<ir::Graph> g, options o)
    : executor(std::shared_ptr<ir::Graph>(std::move(g)), std::move(o), std::true_type{}) {}

GRAFT_INLINE executor::executor(std::unique_ptr<ir::Graph> g, std::vector<std::unique_ptr<ir::Graph>> at_other_sizes,
                                options o, std::vector<ir::size_hint> hints) {
    init_traced(std::move(g), std::move(at_other_sizes), std::move(o), hints);
}

GRAFT_INLINE executor::executor(ir::symbolic_graph sg, options o) {
    std::unique_ptr<ir::Graph> g = std::move(sg.graph);
    const ir::symbolic_sizes& sizes = sg.sizes;
    graft::detail::check(g != nullptr, "jit::executor: the graph is null");
    for (const ir::size_patch& p : sizes.patches)
        graft::detail::check(std::find(g->block()->nodes().begin(), g->block()->nodes().end(), p.node) !=
                                 g->block()->nodes().end(),
                             "jit::executor: the symbolic sizes patch a node that is not the graph's (a table "
                             "inferred or parsed for another graph object)");
    graft::detail::check(!sizes.uses_context(), "jit::executor: the symbolic sizes read a forward's input sizes "
                                                "(context symbols): they belong to a backward graph run by capture::aot");
    graft::detail::check(sizes.traced.size() == sizes.symbols.size(), "jit::executor: the symbolic sizes have ",
                         sizes.symbols.size(), " symbols and ", sizes.traced.size(), " traced values");
    for (const ir::Node* n : g->block()->nodes())
        graft::detail::check(n->blocks().empty(), "jit::executor: a graph with symbolic sizes has no control flow (",
                             n->kind().name, ")");
    // Input types at the symbols' values (the inference reads which dimensions differ).
    const auto set_input_sizes = [&sizes](ir::Graph& c, const std::vector<std::int64_t>& v) {
        for (std::size_t q = 0; q < sizes.dims.size(); ++q) {
            const auto [j, d] = sizes.dims[q];
            graft::detail::check(j < c.inputs().size(), "jit::executor: a symbol reads input ", j, " of a graph with ",
                                 c.inputs().size(), " inputs");
            ir::Type t = c.inputs()[j]->type();
            if (t.is_tensor() && t.tensor.sizes && d < t.tensor.sizes->size()) {
                (*t.tensor.sizes)[d] = v[sizes.dim_symbols[q]];
                t.tensor.strides.reset();
                c.inputs()[j]->set_type(std::move(t));
            }
        }
    };
    set_input_sizes(*g, sizes.traced);
    std::vector<std::vector<std::int64_t>> values{sizes.traced};
    std::vector<std::unique_ptr<ir::Graph>> others;
    for (std::int64_t round = 1; round <= 2; ++round) {
        std::vector<std::int64_t> v;
        for (std::size_t k = 0; k < sizes.traced.size(); ++k) {
            std::int64_t x = sizes.traced[k] * (round + 1);
            for (std::size_t q = 0; q < k; ++q)  // symbols traced equal stay apart
                if (sizes.traced[q] == sizes.traced[k]) x += 2 * round * static_cast<std::int64_t>(k);
            v.push_back(x);
        }
        std::unique_ptr<ir::Graph> c = g->copy();
        const std::vector<const ir::Node*> from(g->block()->nodes().begin(), g->block()->nodes().end());
        const std::vector<ir::Node*> to(c->block()->nodes().begin(), c->block()->nodes().end());
        for (std::size_t i = 0; i < from.size(); ++i)
            if (sizes.patches_node(from[i]))
                for (const auto& [name, a] : sizes.attributes(from[i], v)) to[i]->set_attr(name, a);
        set_input_sizes(*c, v);
        values.push_back(std::move(v));
        others.push_back(std::move(c));
    }
    init_traced(std::move(g), std::move(others), std::move(o), sizes.as_hints(values));
}

GRAFT_INLINE void executor::init_traced(std::unique_ptr<ir::Graph> g, std::vector<std::unique_ptr<ir::Graph>> at_other_sizes,
                                        options o, const std::vector<ir::size_hint>& hints) {
    graft::detail::check(g != nullptr, "jit::executor: the graph is null");
    // The inference reads which input dimensions differ from the traces' input types: keep
    // them until it is done.
    prepare(*g, true);
    std::vector<const ir::Graph*> others;
    for (auto& other : at_other_sizes) {
        graft::detail::check(other != nullptr, "jit::executor: a graph traced at other sizes is null");
        prepare(*other, true);
        others.push_back(other.get());
    }
    if (!others.empty()) {
        if (auto sym = ir::infer_symbolic_sizes(*g, others, symbolic_why_, hints)) {
            if (!sym->patches.empty()) symbolic_ = std::make_shared<const ir::symbolic_sizes>(std::move(*sym));
            else symbolic_why_ = "the graph does not depend on its inputs' sizes";
        }
    }
    for (ir::Value* v : g->inputs())
        if (v->type().is_tensor()) v->set_type(ir::Type::tensor_type());
    start(std::move(g), std::move(o));
}

GRAFT_INLINE executor::executor(std::shared_ptr<ir::Graph> g, options o, std::true_type) {
    graft::detail::check(g != nullptr, "jit::executor: the graph is null");
    prepare(*g, false);
    start(std::move(g), std::move(o));
}

GRAFT_INLINE void executor::start(std::shared_ptr<ir::Graph> g, options o) {
    graft::detail::check(!o.fusion.empty(), "jit::executor: the fusion strategy is empty");
    depth_ = bailout_depth(o.fusion);
    strategy_ = o.fusion;
    auto log = std::make_shared<detail::trace_log>();
    compilations_ = std::make_shared<std::atomic<std::size_t>>(0);
    top_ = std::make_shared<detail::executor_state>(std::shared_ptr<const ir::Graph>(std::move(g)), std::move(o),
                                                    depth_, std::move(log), 0, compilations_,
                                                    std::make_shared<detail::shape_history>(), symbolic_);
}

GRAFT_INLINE std::vector<ir::ivalue> executor::run(std::vector<ir::ivalue> inputs) const { return run_checked(inputs); }

GRAFT_INLINE std::vector<ir::ivalue> executor::run_checked(std::span<const ir::ivalue> inputs) const {
    const auto& params = top_->graph().inputs();
    graft::detail::check(inputs.size() == params.size(), "jit::executor: the graph takes ", params.size(),
                         " inputs, got ", inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const ir::Type& t = params[i]->type();
        const bool ok = t.is_tensor() ? std::holds_alternative<Tensor>(inputs[i]) && std::get<Tensor>(inputs[i]).defined()
                                      : detail::number_type(inputs[i]) == t && !std::holds_alternative<Tensor>(inputs[i]);
        if (!ok)  // not check(): the message's parts are formatted only on failure
            graft::detail::fail(graft::detail::concat(
                "jit::executor: input ", i, " (%", params[i]->name(), ") must be ",
                t.is_tensor() ? std::string("a defined tensor") : ir::to_string(t), ", got ",
                ir::detail::describe_value(inputs[i])));
    }
    return top_->run(inputs);
}

GRAFT_INLINE std::vector<Tensor> executor::operator()(std::span<const Tensor> inputs) const {
    std::vector<Tensor> out;
    call_into(inputs, out);
    return out;
}

GRAFT_INLINE void executor::call_into(std::span<const Tensor> inputs, std::vector<Tensor>& out) const {
    out.clear();
    if (top_->try_direct(inputs, out)) return;
    out.clear();
    const boost::container::small_vector<ir::ivalue, 8> args(inputs.begin(), inputs.end());
    auto results = run_checked(std::span<const ir::ivalue>(args.data(), args.size()));
    out.reserve(results.size());
    for (auto& v : results) {
        auto* t = std::get_if<Tensor>(&v);
        graft::detail::check(t != nullptr, "jit::executor: an output is a number; use run()");
        out.push_back(std::move(*t));
    }
}

GRAFT_INLINE jit::debug_state executor::state() const {
    jit::debug_state d;
    d.fusion = strategy_;
    d.bailout_depth = depth_;
    d.compilations = compilations_->load(std::memory_order_relaxed);
    d.graph = ir::to_string(top_->graph());
    d.symbolic = symbolic_ ? symbolic_->describe(top_->graph()) : symbolic_why_;
    d.retired_plans = top_->retired_count();
    top_->collect(d);
    return d;
}

GRAFT_INLINE std::string executor::debug_string() const {
    std::ostringstream os;
    os << state();
    return os.str();
}

GRAFT_INLINE std::string executor::chrome_trace() const {
    auto& log = *top_->log();
    std::lock_guard lock(log.mutex);
    std::ostringstream os;
    os << "{\"traceEvents\": [";
    for (std::size_t i = 0; i < log.events.size(); ++i) {
        const auto& e = log.events[i];
        os << (i ? ",\n" : "\n") << "{\"name\": \"" << e.name << "\", \"cat\": \"" << e.category
           << "\", \"ph\": \"X\", \"ts\": " << e.start_us << ", \"dur\": " << e.duration_us
           << ", \"pid\": 1, \"tid\": " << e.thread << ", \"args\": {\"level\": " << e.level << "}}";
    }
    os << "\n], \"displayTimeUnit\": \"ms\"}\n";
    return os.str();
}

}  // namespace graft::jit
