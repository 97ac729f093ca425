#pragma once
// Definitions for graft/jit/plan.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/jit/plan.hpp"

#include <array>
#include <sstream>

namespace graft::jit::detail {

GRAFT_INLINE const std::map<const ir::kind_info*, fusable_op>& fusable_ops() {
    static const auto table = [] {
        std::map<const ir::kind_info*, fusable_op> m;
        std::apply([&](auto... op) { (add_fusable<decltype(op)>(m), ...); }, ops::all_elementwise_ops{});
        return m;
    }();
    return table;
}

GRAFT_INLINE const fusable_op* find_fusable(const ir::Node* n) {
    if (n->is<ir::kinds::normal_cdf>()) {
        static const fusable_op cdf{ops::op_kind::unary, static_cast<int>(kernels::unary_op::normal_cdf), "normal_cdf"};
        return &cdf;
    }
    if (n->is<ir::kinds::gelu>()) {
        // Not an op-table entry (its attribute picks the kernel), but a unary kernel all the same.
        static const fusable_op erf{ops::op_kind::unary, static_cast<int>(kernels::unary_op::gelu), "gelu"};
        static const fusable_op tanh{ops::op_kind::unary, static_cast<int>(kernels::unary_op::gelu_tanh), "gelu"};
        const auto it = n->attributes().find("approximate");
        if (it == n->attributes().end()) return &erf;
        const auto* a = std::get_if<std::string>(&it->second);
        return a && *a == "none" ? &erf : a && *a == "tanh" ? &tanh : nullptr;  // another value: the op's own error
    }
    const auto& t = fusable_ops();
    auto it = t.find(&n->kind());
    return it == t.end() ? nullptr : &it->second;
}

// ---------------------------------------------------------------- worker_pool

GRAFT_INLINE worker_pool::worker_pool(std::size_t threads) {
    for (std::size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { loop(); });
}

GRAFT_INLINE worker_pool::~worker_pool() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
}

GRAFT_INLINE void worker_pool::run(std::size_t parts, const std::function<void(std::size_t)>& f) {
    struct batch {
        std::mutex m;
        std::condition_variable done;
        std::size_t left;
        std::exception_ptr error;
    };
    auto b = std::make_shared<batch>();
    b->left = parts - 1;
    {
        std::lock_guard lock(mutex_);
        for (std::size_t k = 1; k < parts; ++k)
            queue_.push_back([b, &f, k] {
                try {
                    f(k);
                } catch (...) {
                    std::lock_guard l(b->m);
                    if (!b->error) b->error = std::current_exception();
                }
                std::lock_guard l(b->m);
                if (--b->left == 0) b->done.notify_all();
            });
    }
    cv_.notify_all();
    std::exception_ptr mine;
    try {
        f(0);
    } catch (...) {
        mine = std::current_exception();
    }
    std::unique_lock l(b->m);
    b->done.wait(l, [&] { return b->left == 0; });
    if (mine) std::rethrow_exception(mine);
    if (b->error) std::rethrow_exception(b->error);
}

GRAFT_INLINE worker_pool& worker_pool::shared(std::size_t threads) {
    // More workers than the hardware has threads would only wait for each other (and a typo
    // such as num_threads = 999 would start 998 threads that live until exit): clamp.
    const std::size_t hardware = std::max<std::size_t>(1, std::thread::hardware_concurrency());
    static worker_pool pool(std::clamp<std::size_t>(threads, 2, std::max<std::size_t>(2, hardware)) - 1);
    return pool;
}

GRAFT_INLINE void worker_pool::loop() {
    for (;;) {
        std::function<void()> job;
        {
            std::unique_lock lock(mutex_);
            cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
            if (stop_ && queue_.empty()) return;
            job = std::move(queue_.front());
            queue_.erase(queue_.begin());
        }
        job();
    }
}

// ---------------------------------------------------------------- plans

GRAFT_INLINE plan::plan(std::shared_ptr<const ir::Graph> g, build_options o, const type_of_fn& type_of)
    : graph_(std::move(g)), options_(o) {
    for (const ir::Value* v : graph_->inputs()) input_slots_.push_back(slot(v));
    top_ = build_block(*graph_->block(), type_of);
    plan_direct(type_of);
}

GRAFT_INLINE void plan::plan_direct(const type_of_fn& type_of) {
    if (!options_.fuse || !options_.static_shapes || options_.symbolic || !options_.regions.empty()) return;
    const step* fused = nullptr;
    std::map<int, double> numbers;  // constant slots
    for (const step& s : top_.steps) {
        if (s.what == step::kind::fused && !fused) {
            fused = &s;
        } else if (s.what == step::kind::node && s.node->is<ir::kinds::constant>() && s.out.size() == 1 && !fused) {
            const auto v = s.node->kind().run(s.node->attributes(), {});
            if (v.size() != 1) return;
            if (const auto* d = std::get_if<double>(&v[0])) numbers[s.out[0]] = *d;
            else if (const auto* i = std::get_if<std::int64_t>(&v[0])) numbers[s.out[0]] = static_cast<double>(*i);
            else return;
        } else {
            return;
        }
    }
    if (!fused) return;
    const fusion_group& g = *fused->group;
    if (!g.static_sizes || !g.rerun.empty() || !g.sums.empty() || !g.totals.empty() || g.matmul ||
        g.num_registers > direct_max_registers)
        return;
    std::vector<direct_source> sources;
    for (int slot_index : g.input_slots) {
        direct_source src;
        const auto it = std::find(input_slots_.begin(), input_slots_.end(), slot_index);
        if (it != input_slots_.end()) {
            src.input = static_cast<int>(it - input_slots_.begin());
            const auto t = type_of(graph_->inputs()[static_cast<std::size_t>(src.input)]);
            if (t && t->is_tensor() && t->tensor.sizes && t->tensor.strides &&
                std::all_of(t->tensor.sizes->begin(), t->tensor.sizes->end(), [](const auto& d) { return d.has_value(); })) {
                int_list sizes;
                for (const auto& d : *t->tensor.sizes) sizes.push_back(*d);
                const int_list strides(t->tensor.strides->begin(), t->tensor.strides->end());
                if (sizes == *g.static_sizes && graft::detail::is_contiguous_layout(sizes, strides))
                    src.known = direct_source::layout::contiguous;
                else if (sizes.size() <= g.static_sizes->size() && graft::detail::numel_of(sizes) == 1)
                    src.known = direct_source::layout::broadcast;
            }
        } else if (const auto c = numbers.find(slot_index); c != numbers.end()) {
            src.number = c->second;
        } else {
            return;
        }
        sources.push_back(src);
    }
    std::vector<int> outputs;
    for (int o : top_.outputs) {
        const auto it = std::find(g.output_slots.begin(), g.output_slots.end(), o);
        if (it != g.output_slots.end()) {
            outputs.push_back(static_cast<int>(it - g.output_slots.begin()));
            continue;
        }
        // A graph input returned as is (a differentiable forward's saved inputs).
        const auto in = std::find(input_slots_.begin(), input_slots_.end(), o);
        if (in == input_slots_.end()) return;
        outputs.push_back(-1 - static_cast<int>(in - input_slots_.begin()));
    }
    direct_ = &g;
    direct_sources_ = std::move(sources);
    direct_outputs_ = std::move(outputs);
}

template <class T, class Input, class Out>
bool plan::run_direct_typed(const Input& input, std::vector<Out>& out, bool guarded) const {
    const fusion_group& g = *direct_;
    const int_list& sizes = *g.static_sizes;
    const auto n = static_cast<std::size_t>(g.static_numel);
    if (options_.num_threads >= 2 && n / std::max<std::size_t>(options_.parallel_grain, 1) >= 2)
        return false;  // large: the general path splits it across threads (its setup is noise there)
    const bool grad = autograd::is_grad_enabled();
    const std::size_t nregs = g.num_registers, ninputs = g.input_slots.size();
    // Fixed arrays on the stack (plan_direct caps the registers): no setup beyond the registers used.
    std::array<T*, direct_max_registers> base;
    std::array<kernels::operand_mode, direct_max_registers> mode;
    std::array<T, direct_max_registers> numbers;
    static constexpr std::array<std::size_t, direct_max_registers> no_periods{};
    for (int o : direct_outputs_)
        if (o < 0 && input(static_cast<std::size_t>(-1 - o)) == nullptr) return false;  // returned inputs: tensors
    for (std::size_t r = ninputs; r < nregs; ++r) mode[r] = kernels::operand_mode::temp;
    for (std::size_t k = 0; k < ninputs; ++k) {
        const direct_source& src = direct_sources_[k];
        if (src.input < 0) {
            numbers[k] = static_cast<T>(src.number);
            base[k] = &numbers[k];
            mode[k] = kernels::operand_mode::broadcast;
            continue;
        }
        const Tensor* t = input(static_cast<std::size_t>(src.input));
        const graft::detail::tensor_impl* im = t ? t->impl_ptr().get() : nullptr;
        if (im == nullptr || im->type != g.type || (grad && (im->autograd || im->view) && t->requires_grad()))
            return false;  // the general path
        if (guarded && src.known != direct_source::layout::unknown)
            mode[k] = src.known == direct_source::layout::contiguous ? kernels::operand_mode::contiguous
                                                                      : kernels::operand_mode::broadcast;
        else if (im->sizes == sizes && graft::detail::is_contiguous_layout(im->sizes, im->strides))
            mode[k] = kernels::operand_mode::contiguous;
        else if (im->sizes.size() <= sizes.size() && graft::detail::numel_of(im->sizes) == 1)
            mode[k] = kernels::operand_mode::broadcast;
        else
            return false;
        base[k] = static_cast<T*>(im->data->data()) + im->offset;
    }
    const kernels::program prog{g.code.data(), g.code.size(), mode.data(), nregs, no_periods.data(), nullptr};
    if (g.output_regs.size() == 1) {
        // One output (the usual case): straight into `out`, no list of results.
        Tensor result = graft::detail::empty_of_bytes(sizes, g.type, graft::detail::checked_bytes("jit", g.static_numel, sizeof(T)));
        const auto r = static_cast<std::size_t>(g.output_regs[0]);
        base[r] = static_cast<T*>(result.raw_data());
        mode[r] = kernels::operand_mode::output;
        if (n > 0) kernels::run_program(prog, base.data(), program_scratch<T>(nregs), 0, n);
        out.reserve(direct_outputs_.size());
        if (direct_outputs_.size() == 1 && direct_outputs_[0] == 0) {
            out.emplace_back(std::move(result));
            return true;
        }
        for (int o : direct_outputs_) {
            if (o >= 0) out.emplace_back(result);
            else out.emplace_back(*input(static_cast<std::size_t>(-1 - o)));
        }
        return true;
    }
    reg_vector<Tensor> results;
    const std::size_t bytes = graft::detail::checked_bytes("jit", g.static_numel, sizeof(T));
    for (std::size_t k = 0; k < g.output_regs.size(); ++k) {
        results.push_back(graft::detail::empty_of_bytes(sizes, g.type, bytes));
        const auto r = static_cast<std::size_t>(g.output_regs[k]);
        base[r] = static_cast<T*>(results.back().raw_data());
        mode[r] = kernels::operand_mode::output;
    }
    if (n > 0) kernels::run_program(prog, base.data(), program_scratch<T>(nregs), 0, n);
    out.reserve(direct_outputs_.size());
    for (auto it = direct_outputs_.begin(); it != direct_outputs_.end(); ++it) {
        const int o = *it;
        if (o < 0) {
            out.emplace_back(*input(static_cast<std::size_t>(-1 - o)));
            continue;
        }
        Tensor& r = results[static_cast<std::size_t>(o)];
        // A result returned once (the usual case) is moved, not copied.
        if (std::find(it + 1, direct_outputs_.end(), o) == direct_outputs_.end()) out.emplace_back(std::move(r));
        else out.emplace_back(r);
    }
    return true;
}

GRAFT_INLINE std::vector<ivalue> plan::run(std::span<const ivalue> inputs, const observer_fn* observe) const {
    graft::detail::check(inputs.size() == input_slots_.size(), "jit: the graph takes ", input_slots_.size(),
                         " inputs, got ", inputs.size());
    if (direct_ && !observe) {
        std::vector<ivalue> out;
        const auto input = [&](std::size_t i) { return std::get_if<Tensor>(&inputs[i]); };
        if (direct_->type == dtype::float32 ? run_direct_typed<float>(input, out) : run_direct_typed<double>(input, out))
            return out;
    }
    frame_t frame(num_slots_);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        frame[static_cast<std::size_t>(input_slots_[i])] = inputs[i];
        if (observe) (*observe)(graph_->inputs()[i], inputs[i]);
    }
    if (options_.symbolic) {
        const std::vector<std::int64_t> sizes = options_.symbolic->bind(inputs);
        return run_block(top_, frame, observe, sizes);
    }
    return run_block(top_, frame, observe);
}

GRAFT_INLINE bool plan::run_direct(std::span<const Tensor> inputs, std::vector<Tensor>& out, bool guarded) const {
    if (!direct_ || inputs.size() != input_slots_.size()) return false;
    const auto input = [&](std::size_t i) { return &inputs[i]; };
    return direct_->type == dtype::float32 ? run_direct_typed<float>(input, out, guarded)
                                           : run_direct_typed<double>(input, out, guarded);
}

GRAFT_INLINE std::string plan::describe() const {
    std::ostringstream os;
    for (std::size_t k = 0; k < groups_.size(); ++k) {
        const fusion_group& g = *groups_[k];
        os << "  FusionGroup_" << k << " (" << g.nodes.size() << " ops, " << g.type;
        if (g.static_sizes) os << ", static sizes " << *g.static_sizes;
        if (g.matmul) os << ", epilogue of %" << g.matmul->output()->name() << " = matmul";
        os << "):";
        for (const ir::Node* n : g.nodes) os << " %" << n->output()->name() << " = " << n->kind().name << ';';
        os << '\n';
    }
    return os.str();
}

GRAFT_INLINE int plan::slot(const ir::Value* v) {
    auto [it, fresh] = slots_.emplace(v, static_cast<int>(num_slots_));
    if (fresh) ++num_slots_;
    return it->second;
}

GRAFT_INLINE bool plan::fusable(const ir::Node* n, const type_of_fn& type_of, std::optional<dtype>& type) const {
    const fusable_op* op = find_fusable(n);
    if (!op) return false;
    if (options_.symbolic && options_.symbolic->patches_node(n)) return false;  // attributes computed per run
    const auto t = type_of(n->output());
    if (!t || !t->is_tensor() || !t->tensor.scalar_type) return false;
    dtype d = *t->tensor.scalar_type;
    if (op->kind == ops::op_kind::compare) {
        // A bool result; the group's dtype is its operands'.
        if (d != dtype::bool_) return false;
        std::optional<dtype> operands;
        for (const ir::Value* in : n->inputs()) {
            const auto ti = type_of(in);
            if (!ti || (ti->is_tensor() && !ti->tensor.scalar_type)) return false;
            if (!ti->is_tensor()) continue;
            if (operands && *operands != *ti->tensor.scalar_type) return false;
            operands = *ti->tensor.scalar_type;
        }
        if (!operands) return false;
        d = *operands;
    }
    if (d != dtype::float32 && d != dtype::float64) return false;
    if (type && *type != d) return false;
    for (std::size_t k = 0; k < n->inputs().size(); ++k) {
        const auto ti = type_of(n->input(k));
        if (!ti) return false;
        if (ti->is_tensor()) {
            // where's condition is a bool (a comparison inside the group: checked by the caller).
            const dtype want = op->kind == ops::op_kind::where && k == 0 ? dtype::bool_ : d;
            if (ti->tensor.scalar_type != want) return false;
        } else if (ti->kind == ir::type_kind::bool_ || (op->kind == ops::op_kind::where && k == 0)) {
            return false;
        }
    }
    type = d;
    return true;
}

GRAFT_INLINE bool plan::summable(const ir::Node* n, dtype type, const std::set<const ir::Value*>& inside,
                                  const type_of_fn& type_of, fusion_group::leading_sum& out) const {
    if (!n->is<ir::kinds::sum>() || n->inputs().size() != 1 || !inside.count(n->input(0)) || !n->has_attr("dims"))
        return false;
    if (options_.symbolic && options_.symbolic->patches_node(n)) return false;
    const auto* dims = std::get_if<std::vector<std::int64_t>>(&n->attr("dims"));
    if (!dims || dims->empty()) return false;
    bool keepdim = false;
    if (n->has_attr("keepdim")) {
        const auto* k = std::get_if<bool>(&n->attr("keepdim"));
        if (!k) return false;
        keepdim = *k;
    }
    const auto t = type_of(n->input(0));
    if (!t || !t->is_tensor() || t->tensor.scalar_type != type || !t->tensor.sizes) return false;
    const auto& sizes = *t->tensor.sizes;
    const auto rank = static_cast<std::int64_t>(sizes.size());
    // The summed dimensions are exactly 0 .. prefix-1 (any order, no repeats).
    std::vector<bool> seen(sizes.size(), false);
    for (std::int64_t d : *dims) {
        if (d < -rank || d >= rank) return false;
        const auto w = static_cast<std::size_t>(d < 0 ? d + rank : d);
        if (seen[w]) return false;
        seen[w] = true;
    }
    const std::size_t prefix = dims->size();
    if (prefix >= sizes.size()) return false;
    for (std::size_t d = 0; d < prefix; ++d)
        if (!seen[d]) return false;
    // Trailing sizes static and at least 16 elements (the column reduction's condition).
    std::int64_t inner = 1;
    for (std::size_t d = prefix; d < sizes.size(); ++d) {
        if (!sizes[d]) return false;
        inner *= *sizes[d];
        if (inner >= 16) break;
    }
    if (inner < 16) return false;
    out.rank = sizes.size();
    out.prefix = prefix;
    out.keepdim = keepdim;
    return true;
}

GRAFT_INLINE bool plan::totalable(const ir::Node* n, dtype type, const std::set<const ir::Value*>& inside,
                                   const type_of_fn& type_of, bool& mean) const {
    const bool is_sum = n->is<ir::kinds::sum>();
    if ((!is_sum && !n->is<ir::kinds::mean>()) || n->inputs().size() != 1 || !inside.count(n->input(0))) return false;
    if (options_.symbolic && options_.symbolic->patches_node(n)) return false;
    // graft::sum(v) has no attributes; sum(v, {}, false) and mean(v) (dims {}, keepdim false)
    // reduce everything the same way (the eager full reduction of a contiguous tensor).
    if (n->has_attr("dims")) {
        const auto* dims = std::get_if<std::vector<std::int64_t>>(&n->attr("dims"));
        if (!dims || !dims->empty()) return false;
    } else if (!is_sum) {
        return false;
    }
    if (n->has_attr("keepdim")) {
        const auto* k = std::get_if<bool>(&n->attr("keepdim"));
        if (!k || *k) return false;
    }
    const auto t = type_of(n->input(0));
    if (!t || !t->is_tensor() || t->tensor.scalar_type != type) return false;
    mean = !is_sum;
    return true;
}

GRAFT_INLINE std::vector<const ir::Node*> plan::producers_before_consumers(const std::vector<const ir::Node*>& nodes,
                                                                          const std::set<const ir::Value*>& used_later) {
    // A node whose value only one node of the group reads (and nothing after it) is emitted
    // right before that reader, so that run_program can sweep the two together; the order
    // stays topological, and elementwise nodes of one group compute each element alone, so
    // the bits do not change. Groups are small (max_group_nodes): plain vectors and scans.
    const std::size_t n = nodes.size();
    const auto index_of = [&nodes, n](const ir::Node* m) {
        for (std::size_t k = 0; k < n; ++k)
            if (nodes[k] == m) return k;
        return n;
    };
    std::vector<std::uint8_t> readers(n, 0), deferred(n, 0), emitted(n, 0);
    for (const ir::Node* m : nodes)
        for (const ir::Value* v : m->inputs())
            if (const std::size_t k = index_of(v->node()); k < n && readers[k] < 2) ++readers[k];
    for (std::size_t k = 0; k < n; ++k)
        deferred[k] = readers[k] == 1 && !used_later.count(nodes[k]->output()) && find_fusable(nodes[k]) != nullptr;
    std::vector<const ir::Node*> order;
    order.reserve(n);
    const auto emit = [&](std::size_t k, const auto& self) -> void {
        for (const ir::Value* v : nodes[k]->inputs())
            if (const std::size_t j = index_of(v->node()); j < n && deferred[j] && !emitted[j]) self(j, self);
        emitted[k] = 1;
        order.push_back(nodes[k]);
    };
    for (std::size_t k = 0; k < n; ++k)
        if (!deferred[k]) emit(k, emit);
    // Every deferred node has its one reader in the group, so following readers ends at a
    // node that is not deferred: every node is emitted.
    graft::detail::check(order.size() == n, "jit: reordering a fusion group lost a node (internal error)");
    return order;
}

GRAFT_INLINE std::unique_ptr<fusion_group> plan::make_group(const std::vector<const ir::Node*>& group_nodes, dtype type,
                                                            const std::set<const ir::Value*>& used_later,
                                                            const type_of_fn& type_of) {
    const std::vector<const ir::Node*> nodes = producers_before_consumers(group_nodes, used_later);
    auto g = std::make_unique<fusion_group>();
    g->type = type;
    g->nodes = nodes;
    std::map<const ir::Value*, int> reg;
    std::set<const ir::Value*> inside;
    for (const ir::Node* n : nodes) inside.insert(n->output());
    for (const ir::Node* n : nodes)
        for (const ir::Value* v : n->inputs())
            if (!inside.count(v) && !reg.count(v)) {
                reg[v] = static_cast<int>(g->num_registers++);
                g->input_slots.push_back(slot(v));
            }
    for (const ir::Node* n : nodes) {
        std::vector<int> in;
        for (const ir::Value* v : n->inputs()) in.push_back(slot(v));
        g->node_inputs.push_back(std::move(in));
        g->node_outputs.push_back(slot(n->output()));
    }
    // Comparisons whose bool tensors are read after the group run again after it (their
    // values stay in registers inside the group): what they read from inside the group must
    // escape to the frame, comparisons they read included (which then run again too).
    std::set<const ir::Value*> rerun_reads;
    std::set<const ir::Node*> reruns;
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
        const fusable_op* f = find_fusable(*it);
        const ir::Value* o = (*it)->output();
        if (!f || f->kind != ops::op_kind::compare || !(used_later.count(o) || rerun_reads.count(o))) continue;
        reruns.insert(*it);
        for (const ir::Value* v : (*it)->inputs())
            if (inside.count(v)) rerun_reads.insert(v);
    }
    // Which group inputs each register is computed from.
    std::vector<std::vector<int>> deps(g->num_registers);
    for (std::size_t k = 0; k < deps.size(); ++k) deps[k] = {static_cast<int>(k)};
    for (std::size_t index = 0; index < nodes.size(); ++index) {
        const ir::Node* n = nodes[index];
        const ir::Value* o = n->output();
        if (bool mean = false; !find_fusable(n) && totalable(n, type, inside, type_of, mean)) {
            // A full sum or mean epilogue (build_block checked it): no register, a full_sum target.
            fusion_group::full_total ft;
            ft.source_reg = reg.at(n->input(0));
            ft.out_slot = slot(o);
            ft.mean = mean;
            kernels::program_instr ins;
            ins.kind = kernels::instr_kind::sum_all;
            ins.a = static_cast<std::uint16_t>(ft.source_reg);
            ins.out = static_cast<std::uint16_t>(g->totals.size());
            g->code.push_back(ins);
            g->output_deps.push_back(deps[static_cast<std::size_t>(ft.source_reg)]);
            g->totals.push_back(ft);
            continue;
        }
        if (n->is<ir::kinds::sum>()) {
            // A sum epilogue (build_block checked summable): no register, a row_sum target.
            fusion_group::leading_sum ls;
            const bool ok = summable(n, type, inside, type_of, ls);
            graft::detail::check(ok, "jit: a fusion group's sum is not summable (internal error)");
            ls.source_reg = reg.at(n->input(0));
            ls.out_slot = slot(o);
            kernels::program_instr ins;
            ins.kind = kernels::instr_kind::sum_rows;
            ins.a = static_cast<std::uint16_t>(ls.source_reg);
            ins.out = static_cast<std::uint16_t>(g->sums.size());
            g->code.push_back(ins);
            g->output_deps.push_back(deps[static_cast<std::size_t>(ls.source_reg)]);
            g->sums.push_back(ls);
            continue;
        }
        const bool compare = find_fusable(n)->kind == ops::op_kind::compare;
        if (compare && reruns.count(n)) g->rerun.push_back(index);
        // A condition stays in its register (a rerun makes its bool tensor).
        const bool escapes = !compare && (used_later.count(o) != 0 || rerun_reads.count(o) != 0);
        reg[o] = static_cast<int>(g->num_registers++);
        if (escapes) {
            g->output_slots.push_back(slot(o));
            g->output_regs.push_back(reg[o]);
        }
        const fusable_op& op = *find_fusable(n);
        kernels::program_instr ins;
        ins.kind = op.kind == ops::op_kind::unary    ? kernels::instr_kind::unary
                   : op.kind == ops::op_kind::binary ? kernels::instr_kind::binary
                   : op.kind == ops::op_kind::compare ? kernels::instr_kind::compare
                                                      : kernels::instr_kind::where;
        ins.op = static_cast<std::uint8_t>(op.kernel);
        ins.a = static_cast<std::uint16_t>(reg.at(n->input(0)));
        if (n->inputs().size() > 1) ins.b = static_cast<std::uint16_t>(reg.at(n->input(1)));
        if (n->inputs().size() > 2) ins.c = static_cast<std::uint16_t>(reg.at(n->input(2)));
        ins.out = static_cast<std::uint16_t>(reg[o]);
        g->code.push_back(ins);
        std::vector<int> d;
        for (const ir::Value* in : n->inputs()) {
            const auto& di = deps[static_cast<std::size_t>(reg.at(in))];
            d.insert(d.end(), di.begin(), di.end());
        }
        std::sort(d.begin(), d.end());
        d.erase(std::unique(d.begin(), d.end()), d.end());
        deps.push_back(std::move(d));
        if (escapes) g->output_deps.push_back(deps.back());
    }
    graft::detail::check(g->num_registers <= kernels::program_max_registers, "jit: a fusion group of ",
                         g->num_registers, " registers (internal error: groups are capped)");
    if (options_.static_shapes) {
        // Loop bounds from the types: every output has the same complete sizes.
        std::optional<int_list> sizes;
        bool ok = true;
        for (const ir::Node* n : nodes) {
            if (!find_fusable(n)) continue;  // a sum epilogue: its own sizes
            const auto t = type_of(n->output());
            if (!t || !t->is_tensor() || !t->tensor.sizes) {
                ok = false;
                break;
            }
            int_list s;
            for (const auto& d : *t->tensor.sizes) {
                if (!d) ok = false;
                else s.push_back(*d);
            }
            if (!ok) break;
            if (sizes && *sizes != s) ok = false;
            sizes = s;
        }
        if (ok && sizes) {
            g->static_numel = graft::detail::checked_numel("jit fusion group", *sizes);
            g->static_sizes = sizes;
        }
    }
    return g;
}

GRAFT_INLINE bool plan::outputs_have_group_shape(const fusion_group& g, const frame_t& frame, const int_list& sizes) {
    bool uniform = true;
    for (int slot_index : g.input_slots)
        if (const Tensor* t = std::get_if<Tensor>(&frame[static_cast<std::size_t>(slot_index)]))
            uniform = uniform && t->sizes() == sizes;
    if (uniform) return true;
    for (const std::vector<int>& d : g.output_deps) {
        std::optional<int_list> own;
        for (int k : d) {
            const Tensor* t = std::get_if<Tensor>(&frame[static_cast<std::size_t>(g.input_slots[static_cast<std::size_t>(k)])]);
            if (!t) continue;
            own = own ? broadcast_shapes(*own, t->sizes()) : t->sizes();
        }
        if (!own || *own != sizes) return false;
    }
    return true;
}

GRAFT_INLINE void plan::sink_matmuls_to_their_epilogues(std::vector<const ir::Node*>& nodes) {
    for (const ir::Node* n : nodes)
        // Only straight-line pure code moves (random nodes stay put, in order, so they count).
        if (!(n->kind().pure || n->kind().random) || !n->blocks().empty()) return;
    for (std::size_t r = 1; r < nodes.size(); ++r) {
        if (!find_fusable(nodes[r]) || find_fusable(nodes[r - 1])) continue;  // r starts a run
        std::set<const ir::Value*> reads;
        for (std::size_t e = r; e < nodes.size() && find_fusable(nodes[e]); ++e)
            for (const ir::Value* v : nodes[e]->inputs()) reads.insert(v);
        if (nodes[r - 1]->is<ir::kinds::matmul>() && reads.count(nodes[r - 1]->output())) continue;  // adjacent
        for (std::size_t p = r - 1; p-- > 0;) {
            if (!nodes[p]->is<ir::kinds::matmul>() || !reads.count(nodes[p]->output())) continue;
            bool read_between = false;
            for (std::size_t q = p + 1; q < r && !read_between; ++q)
                for (const ir::Value* v : nodes[q]->inputs()) read_between = read_between || v == nodes[p]->output();
            if (!read_between)
                std::rotate(nodes.begin() + static_cast<std::ptrdiff_t>(p), nodes.begin() + static_cast<std::ptrdiff_t>(p + 1),
                            nodes.begin() + static_cast<std::ptrdiff_t>(r));
            break;
        }
    }
}

GRAFT_INLINE block_plan plan::build_block(const ir::Block& b, const type_of_fn& type_of) {
    block_plan bp;
    // Constants first (they read nothing), so they do not split runs of fusable ops; in
    // straight-line pure code also the views of the block's inputs (a backward's reshape and
    // expand of its incoming gradient, the transposed weights), which would split them as well.
    std::vector<const ir::Node*> nodes;
    bool straight_pure = true;
    for (const ir::Node* n : b.nodes())
        straight_pure = straight_pure && (n->kind().pure || n->kind().random) && n->blocks().empty();
    std::set<const ir::Value*> early(b.inputs().begin(), b.inputs().end());
    std::set<const ir::Node*> hoisted;
    for (const ir::Node* n : b.nodes()) {
        const bool view_of_early = straight_pure && n->kind().is_view && n->outputs().size() == 1 &&
                                   std::all_of(n->inputs().begin(), n->inputs().end(),
                                               [&](const ir::Value* v) { return early.count(v) != 0; });
        if (n->is<ir::kinds::constant>() || view_of_early) {
            nodes.push_back(n);
            hoisted.insert(n);
            for (const ir::Value* v : n->outputs()) early.insert(v);
        }
    }
    for (const ir::Node* n : b.nodes())
        if (!hoisted.count(n)) nodes.push_back(n);
    if (options_.fuse && options_.regions.empty()) sink_matmuls_to_their_epilogues(nodes);
    // Values used at or after node i (and block outputs), for group outputs and releases.
    std::map<const ir::Value*, std::size_t> last_use;
    const auto note_uses = [&](const ir::Node* n, std::size_t i, auto& self) -> void {
        for (const ir::Value* v : n->inputs()) last_use[v] = i;
        for (const ir::Block* sub : n->blocks()) {
            for (const ir::Node* m : sub->nodes()) self(m, i, self);
            for (const ir::Value* v : sub->outputs()) last_use[v] = i;
        }
    };
    for (std::size_t i = 0; i < nodes.size(); ++i) note_uses(nodes[i], i, note_uses);
    const std::size_t end = nodes.size();
    for (const ir::Value* v : b.outputs()) last_use[v] = end;
    for (const ir::Value* v : graph_->outputs()) last_use[v] = end;

    const auto releases_after = [&](std::size_t first, std::size_t last) {
        // Values whose last use is in [first, last] and that this block may drop.
        std::vector<int> r;
        for (std::size_t i = first; i <= last; ++i) {
            for (const ir::Value* v : nodes[i]->inputs())
                if (last_use.at(v) == last && slots_.count(v) && defined_in(v, b)) r.push_back(slots_.at(v));
            for (const ir::Value* o : nodes[i]->outputs())
                if (!last_use.count(o) && slots_.count(o)) r.push_back(slots_.at(o));
        }
        std::sort(r.begin(), r.end());
        r.erase(std::unique(r.begin(), r.end()), r.end());
        return r;
    };

    std::size_t i = 0;
    while (i < nodes.size()) {
        // A region (differentiable subgraph) starting here, when its nodes follow in order
        // (regions may lie in nested blocks: If branches, Loop bodies).
        if (!options_.regions.empty()) {
            std::size_t r = 0;
            while (r < options_.regions.size() && options_.regions[r].nodes.front() != nodes[i]) ++r;
            if (r < options_.regions.size()) {
                const plan_region& reg = options_.regions[r];
                bool contiguous = i + reg.nodes.size() <= nodes.size();
                for (std::size_t k = 0; contiguous && k < reg.nodes.size(); ++k) contiguous = nodes[i + k] == reg.nodes[k];
                if (contiguous) {
                    step s;
                    s.what = step::kind::region;
                    s.region = r;
                    s.node = nodes[i];
                    for (const ir::Value* v : reg.inputs) s.in.push_back(slot(v));
                    for (const ir::Value* v : reg.outputs) s.out.push_back(slot(v));
                    // Inputs last used inside the region, and outputs nothing reads, are dropped after it
                    // (values made and used inside it never reach the frame).
                    const std::size_t last = i + reg.nodes.size() - 1;
                    for (const ir::Value* v : reg.inputs)
                        if (const auto it = last_use.find(v);
                            it != last_use.end() && it->second >= i && it->second <= last && defined_in(v, b))
                            s.release.push_back(slots_.at(v));
                    for (const ir::Value* v : reg.outputs)
                        if (!last_use.count(v)) s.release.push_back(slots_.at(v));
                    bp.steps.push_back(std::move(s));
                    i += reg.nodes.size();
                    continue;
                }
            }
        }
        // A fusion group: the longest run of fusable nodes of one dtype.
        if (options_.fuse) {
            std::optional<dtype> type;
            std::size_t j = i;
            // where's condition must be a comparison of the same run (a register, not a bool tensor).
            const auto condition_inside = [&](const ir::Node* n, std::size_t end) {
                if (find_fusable(n)->kind != ops::op_kind::where) return true;
                const ir::Node* c = n->input(0)->node();
                return std::find(nodes.begin() + static_cast<std::ptrdiff_t>(i),
                                 nodes.begin() + static_cast<std::ptrdiff_t>(end), c) !=
                       nodes.begin() + static_cast<std::ptrdiff_t>(end);
            };
            // A group's tensors broadcast to one shape (bind_group runs it unfused otherwise, every
            // call): the run ends at a node whose output sizes do not broadcast with the run's,
            // where the types know them (two independent chains of other shapes, as the GRU's
            // [B, H] and [B, 3H] gradients).
            std::optional<std::vector<std::optional<std::int64_t>>> shape;
            const auto broadcasts = [&](const ir::Node* n) {
                const auto t = type_of(n->output());
                if (!t || !t->is_tensor() || !t->tensor.sizes) return true;  // unknown: the run-time check decides
                const auto& sizes = *t->tensor.sizes;
                if (!shape) {
                    shape = sizes;
                    return true;
                }
                std::vector<std::optional<std::int64_t>> merged(std::max(shape->size(), sizes.size()), std::int64_t{1});
                for (std::size_t k = 0; k < merged.size(); ++k) {
                    const auto at = [&](const std::vector<std::optional<std::int64_t>>& v) -> std::optional<std::int64_t> {
                        return k + v.size() < merged.size() ? std::optional<std::int64_t>(1) : v[k + v.size() - merged.size()];
                    };
                    const auto x = at(*shape), y = at(sizes);
                    if (x && y && *x != *y && *x != 1 && *y != 1) return false;
                    merged[k] = x && *x == 1 ? y : y && *y == 1 ? x : x && y ? x : std::nullopt;
                }
                shape = std::move(merged);
                return true;
            };
            while (j < nodes.size() && j - i < max_group_nodes && fusable(nodes[j], type_of, type) &&
                   condition_inside(nodes[j], j) && broadcasts(nodes[j]))
                ++j;
            // A run that ends in comparisons only used after it gains nothing from them.
            while (j > i && find_fusable(nodes[j - 1])->kind == ops::op_kind::compare) --j;
            // Sums over leading dimensions of the run's values that follow it: epilogues.
            if (j > i) {
                std::set<const ir::Value*> inside;
                for (std::size_t k = i; k < j; ++k) inside.insert(nodes[k]->output());
                fusion_group::leading_sum unused;
                bool unused_mean = false;
                while (j < nodes.size() && j - i < max_group_nodes &&
                       (summable(nodes[j], *type, inside, type_of, unused) ||
                        totalable(nodes[j], *type, inside, type_of, unused_mean)))
                    ++j;
            }
            // A matmul just before whose result the run reads: one op is enough (its epilogue).
            const auto after_matmul = [&] {
                if (bp.steps.empty() || bp.steps.back().what != step::kind::node ||
                    !bp.steps.back().node->is<ir::kinds::matmul>())
                    return false;
                const ir::Value* product = bp.steps.back().node->output();
                for (std::size_t k = i; k < j; ++k)
                    for (const ir::Value* v : nodes[k]->inputs())
                        if (v == product) return true;
                return false;
            };
            if (j - i >= 2 || (j - i == 1 && after_matmul())) {
                std::set<const ir::Value*> later;
                for (std::size_t k = i; k < j; ++k) {
                    const ir::Value* o = nodes[k]->output();
                    if (last_use.count(o) && last_use.at(o) >= j) later.insert(o);
                }
                step s;
                s.what = step::kind::fused;
                s.group = make_group({nodes.begin() + static_cast<std::ptrdiff_t>(i),
                                      nodes.begin() + static_cast<std::ptrdiff_t>(j)},
                                     *type, later, type_of);
                groups_.push_back(s.group.get());
                for (std::size_t k = i; k < j; ++k) {
                    for (const ir::Value* v : nodes[k]->inputs()) s.in.push_back(slot(v));
                    s.out.push_back(slot(nodes[k]->output()));
                }
                // Internal values never reach the frame; drop inputs last used here.
                std::vector<int> rel;
                for (std::size_t k = i; k < j; ++k)
                    for (const ir::Value* v : nodes[k]->inputs())
                        if (last_use.at(v) < j && defined_in(v, b) &&
                            std::find(nodes.begin() + static_cast<std::ptrdiff_t>(i),
                                      nodes.begin() + static_cast<std::ptrdiff_t>(j), v->node()) ==
                                nodes.begin() + static_cast<std::ptrdiff_t>(j))
                            rel.push_back(slot(v));
                std::sort(rel.begin(), rel.end());
                rel.erase(std::unique(rel.begin(), rel.end()), rel.end());
                s.release = std::move(rel);
                if (after_matmul() && s.group->totals.empty()) {
                    // The matmul's rows and the group run chunk by chunk (run_matmul_group_typed);
                    // not with full sums, which take the group's elements in one run.
                    step& mm = bp.steps.back();
                    mm.what = step::kind::matmul_fused;
                    mm.group = std::move(s.group);
                    mm.group->matmul = mm.node;
                    mm.release.insert(mm.release.end(), s.release.begin(), s.release.end());
                    std::sort(mm.release.begin(), mm.release.end());
                    mm.release.erase(std::unique(mm.release.begin(), mm.release.end()), mm.release.end());
                } else {
                    bp.steps.push_back(std::move(s));
                }
                i = j;
                continue;
            }
        }
        const ir::Node* n = nodes[i];
        step s;
        s.node = n;
        for (const ir::Value* v : n->inputs()) s.in.push_back(slot(v));
        for (const ir::Value* v : n->outputs()) s.out.push_back(slot(v));
        if (n->is<ir::kinds::if_>()) {
            s.what = step::kind::if_;
            s.then_plan = std::make_unique<block_plan>(build_block(*n->blocks()[0], type_of));
            s.else_plan = std::make_unique<block_plan>(build_block(*n->blocks()[1], type_of));
        } else if (n->is<ir::kinds::loop>()) {
            s.what = step::kind::loop;
            for (const ir::Value* p : n->blocks()[0]->inputs()) s.body_inputs.push_back(slot(p));
            s.then_plan = std::make_unique<block_plan>(build_block(*n->blocks()[0], type_of));
        } else {
            graft::detail::check(!n->is<ir::kinds::call>(),
                                 "jit: prim::Call must be inlined before planning (ir::inline_calls)");
            graft::detail::check(n->kind().run != nullptr, "jit: no interpreter for ", n->kind().name);
        }
        s.patched = options_.symbolic && options_.symbolic->patches_node(n);
        s.release = releases_after(i, i);
        bp.steps.push_back(std::move(s));
        ++i;
    }
    for (const ir::Value* v : b.outputs()) bp.outputs.push_back(slot(v));
    return bp;
}

template <class T>
bool plan::run_matmul_group_typed(const step& s, frame_t& frame) const {
    const fusion_group& g = *s.group;
    const Tensor* a = std::get_if<Tensor>(&frame[static_cast<std::size_t>(s.in[0])]);
    const Tensor* b = std::get_if<Tensor>(&frame[static_cast<std::size_t>(s.in[1])]);
    if (!a || !b || !a->defined() || !b->defined() || a->dim() != 2 || b->dim() != 2 || a->type() != g.type ||
        b->type() != g.type || a->size(1) != b->size(0))
        return false;  // the matmul node reports errors, or takes the other cases
    if (autograd::is_grad_enabled()) {
        // Inputs that require grad take the recording path (the matmul node, then run_group).
        if (a->requires_grad() || b->requires_grad()) return false;
        for (int slot_index : g.input_slots)
            if (const Tensor* t = std::get_if<Tensor>(&frame[static_cast<std::size_t>(slot_index)]);
                slot_index != s.out[0] && t && t->defined() && t->requires_grad())
                return false;
    }
    const std::int64_t m = a->size(0), k = a->size(1), n = b->size(1);
    if (m < 2 || n == 0) return false;
    Tensor c = empty({m, n}, g.type);  // as ops::matmul: row-major, ldc = n
    const Tensor a_keep = *a, b_keep = *b;  // the frame slots may be overwritten by the group's outputs
    frame[static_cast<std::size_t>(s.out[0])] = c;
    T* cp = static_cast<T*>(c.raw_data());
    const T* ap = a_keep.template data_ptr<T>();
    const T* bp = b_keep.template data_ptr<T>();
    const auto whole_product = [&] {
        kernels::matmul(ap, a_keep.stride(0), a_keep.stride(1), bp, b_keep.stride(0), b_keep.stride(1), cp, n,
                        static_cast<std::size_t>(m), static_cast<std::size_t>(n), static_cast<std::size_t>(k));
    };
    bound_group<T> st;
    // Full sums need the group's elements in one run: the whole product first.
    if (!g.totals.empty() || !bind_group(g, frame, st) || *st.sizes != c.sizes()) {
        whole_product();
        run_group(g, frame);
        return true;
    }
    // Chunks of about 64 KiB of the product (whole register blocks of rows; never one row alone,
    // which the kernel would take as a matrix-vector product), each followed by the group.
    constexpr std::int64_t row_align = 24;  // a multiple of every target's micro-kernel rows
    const std::int64_t target_rows = std::max<std::int64_t>(1, (std::int64_t{1} << 16) / static_cast<std::int64_t>(sizeof(T)) / n);
    const std::int64_t chunk = (target_rows + row_align - 1) / row_align * row_align;
    for (std::int64_t r0 = 0; r0 < m;) {
        std::int64_t r1 = std::min(m, r0 + chunk);
        if (m - r1 == 1) r1 = m;
        kernels::matmul(ap + r0 * a_keep.stride(0), a_keep.stride(0), a_keep.stride(1), bp, b_keep.stride(0),
                        b_keep.stride(1), cp + r0 * n, n, static_cast<std::size_t>(r1 - r0), static_cast<std::size_t>(n),
                        static_cast<std::size_t>(k));
        run_bound(g, st, static_cast<std::size_t>(r0 * n), static_cast<std::size_t>(r1 * n), false);
        r0 = r1;
    }
    return true;
}

GRAFT_INLINE std::vector<ivalue> plan::run_block(const block_plan& bp, frame_t& frame, const observer_fn* observe,
                                                 std::span<const std::int64_t> sizes) const {
    for (const step& s : bp.steps) {
        switch (s.what) {
            case step::kind::node:
                if (s.patched) {
                    // Attributes that are functions of the inputs' sizes, evaluated for this run.
                    const ir::attribute_map attrs = options_.symbolic->attributes(s.node, sizes);
                    std::vector<ivalue> in;
                    for (int k : s.in) in.push_back(frame[static_cast<std::size_t>(k)]);
                    auto out = s.node->kind().run(attrs, in);
                    for (std::size_t k = 0; k < out.size() && k < s.out.size(); ++k) {
                        if (observe) (*observe)(s.node->outputs()[k], out[k]);
                        frame[static_cast<std::size_t>(s.out[k])] = std::move(out[k]);
                    }
                } else {
                    run_node(s.node, s.in, s.out, frame, observe);
                }
                break;
            case step::kind::if_: {
                const ivalue& c = frame[static_cast<std::size_t>(s.in[0])];
                const block_plan& taken = ir::detail::truthy(c) ? *s.then_plan : *s.else_plan;
                auto out = run_block(taken, frame, observe, sizes);
                for (std::size_t k = 0; k < out.size(); ++k) {
                    if (observe) (*observe)(s.node->outputs()[k], out[k]);
                    frame[static_cast<std::size_t>(s.out[k])] = std::move(out[k]);
                }
                break;
            }
            case step::kind::fused: run_group(*s.group, frame); break;
            case step::kind::matmul_fused: {
                const bool done = s.group->type == dtype::float32 ? run_matmul_group_typed<float>(s, frame)
                                                                  : run_matmul_group_typed<double>(s, frame);
                if (!done) {
                    run_node(s.node, s.in, s.out, frame, observe);
                    run_group(*s.group, frame);
                }
                break;
            }
            case step::kind::region: {
                std::vector<ivalue> in;
                for (int k : s.in) in.push_back(frame[static_cast<std::size_t>(k)]);
                auto out = options_.regions[s.region].run(in);
                for (std::size_t k = 0; k < out.size() && k < s.out.size(); ++k) {
                    if (observe) (*observe)(options_.regions[s.region].outputs[k], out[k]);
                    frame[static_cast<std::size_t>(s.out[k])] = std::move(out[k]);
                }
                break;
            }
            case step::kind::loop: {
                const ir::Block& body = *s.node->blocks()[0];
                ivalue c = frame[static_cast<std::size_t>(s.in[0])];
                std::vector<ivalue> carried;
                for (std::size_t k = 1; k < s.in.size(); ++k) carried.push_back(frame[static_cast<std::size_t>(s.in[k])]);
                while (ir::detail::truthy(c)) {
                    for (std::size_t k = 0; k < carried.size(); ++k) {
                        if (observe) (*observe)(body.inputs()[k], carried[k]);
                        frame[static_cast<std::size_t>(s.body_inputs[k])] = std::move(carried[k]);
                    }
                    auto next = run_block(*s.then_plan, frame, observe, sizes);
                    c = std::move(next[0]);
                    carried.assign(std::make_move_iterator(next.begin() + 1), std::make_move_iterator(next.end()));
                }
                for (const int k : s.body_inputs) frame[static_cast<std::size_t>(k)] = ivalue{};
                for (std::size_t k = 0; k < carried.size(); ++k) {
                    if (observe) (*observe)(s.node->outputs()[k], carried[k]);
                    frame[static_cast<std::size_t>(s.out[k])] = std::move(carried[k]);
                }
                break;
            }
        }
        for (int r : s.release) frame[static_cast<std::size_t>(r)] = ivalue{};
    }
    std::vector<ivalue> r;
    r.reserve(bp.outputs.size());
    for (int o : bp.outputs) r.push_back(frame[static_cast<std::size_t>(o)]);
    return r;
}

GRAFT_INLINE void plan::run_node(const ir::Node* n, std::span<const int> in_slots, std::span<const int> out_slots,
                                 frame_t& frame, const observer_fn* observe) {
    std::array<ivalue, 4> small;
    std::vector<ivalue> big;
    std::span<const ivalue> in;
    if (in_slots.size() <= small.size()) {
        for (std::size_t k = 0; k < in_slots.size(); ++k) small[k] = frame[static_cast<std::size_t>(in_slots[k])];
        in = std::span<const ivalue>(small.data(), in_slots.size());
    } else {
        for (int k : in_slots) big.push_back(frame[static_cast<std::size_t>(k)]);
        in = big;
    }
    auto out = n->kind().run(n->attributes(), in);
    graft::detail::check(out.size() == out_slots.size(), "jit: ", n->kind().name, " gave ", out.size(),
                         " values for ", out_slots.size(), " outputs");
    for (std::size_t k = 0; k < out.size(); ++k) {
        if (observe) (*observe)(n->outputs()[k], out[k]);
        frame[static_cast<std::size_t>(out_slots[k])] = std::move(out[k]);
    }
}

GRAFT_INLINE void plan::run_group_unfused(const fusion_group& g, frame_t& frame) {
    for (std::size_t k = 0; k < g.nodes.size(); ++k)
        run_node(g.nodes[k], g.node_inputs[k], std::span<const int>(&g.node_outputs[k], 1), frame, nullptr);
}

GRAFT_INLINE void plan::run_group(const fusion_group& g, frame_t& frame) const {
    if (autograd::is_grad_enabled()) {
        // Fused loops record no autograd history: take the eager path when an input needs it.
        for (int k : g.input_slots)
            if (const Tensor* t = std::get_if<Tensor>(&frame[static_cast<std::size_t>(k)]);
                t && t->defined() && t->requires_grad())
                return run_group_unfused(g, frame);
    }
    const bool fused = g.type == dtype::float32 ? run_group_typed<float>(g, frame) : run_group_typed<double>(g, frame);
    if (fused)
        for (std::size_t k : g.rerun)  // comparisons also used after the group: their bool tensors
            run_node(g.nodes[k], g.node_inputs[k], std::span<const int>(&g.node_outputs[k], 1), frame, nullptr);
}

}  // namespace graft::jit::detail
