#pragma once
// Definitions for graft/capture/trace.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/capture/trace.hpp"

#include <algorithm>
#include <array>
#include <ostream>
#include <string>

namespace graft::capture {

GRAFT_INLINE std::ostream& operator<<(std::ostream& os, const graph_meta& m) {
    os << "inputs: " << m.num_inputs << ", user outputs: " << m.num_user_outputs << ", mutated inputs: [";
    for (std::size_t i = 0; i < m.mutated_inputs.size(); ++i) os << (i ? ", " : "") << m.mutated_inputs[i];
    os << "]\n";
    for (const alias_group& g : m.alias_groups) {
        os << "  alias group (one graph input, a base of " << g.numel << " elements): inputs";
        for (std::size_t k = 0; k < g.members.size(); ++k)
            os << (k ? ", " : " ") << g.members[k] << " at offset " << g.offsets[k];
        os << '\n';
    }
    for (std::size_t i = 0; i < m.outputs.size(); ++i) {
        const output_info& o = m.outputs[i];
        os << "  output " << i << ": ";
        switch (o.kind) {
            case output_kind::fresh: os << "fresh"; break;
            case output_kind::alias_of_input: os << "alias of input " << o.input; break;
            case output_kind::view_of_input:
                os << "view of input " << o.input << " (sizes " << o.sizes << ", strides " << o.strides
                   << ", offset " << o.offset << ")";
                break;
        }
        os << '\n';
    }
    return os;
}

namespace detail {

GRAFT_INLINE ir::Type value_type(const Tensor& t) {
    ir::TensorType tt;
    tt.scalar_type = t.type();
    tt.sizes.emplace();
    for (auto s : t.sizes()) tt.sizes->push_back(s);
    return ir::Type::tensor_type(std::move(tt));
}

GRAFT_INLINE ir::Value* tracer::add_input(const Tensor& t, std::size_t index) {
    graft::detail::check(t.defined(), "capture::trace: example input ", index, " is undefined");
    graft::detail::check(!bases_.count(storage_key(t)), "capture: graph input ", index,
                         " shares memory with another graph input");  // copy_inputs groups aliases first
    std::string name = "x";
    name += std::to_string(index);
    ir::Value* v = g_.add_input(value_type(t), std::move(name));
    keep_.push_back(t);
    bases_[storage_key(t)] = {t, v, 0, static_cast<int>(index)};
    values_[impl_key(t)] = {v, 0};
    return v;
}

GRAFT_INLINE ir::Value* tracer::value_of(const Tensor& t, bool about_to_be_written) {
    auto bit = bases_.find(storage_key(t));
    if (bit == bases_.end()) {
        graft::detail::check(about_to_be_written || !fresh_.count(storage_key(t)),
                             "capture::trace: a tensor (sizes ", t.sizes(), ", ", t.type(),
                             ") was filled by code graph capture cannot see (memory from empty() written "
                             "element by element, or a raw kernel call); use graft ops so the graph records "
                             "the computation");
        if (t.requires_grad()) {
            // A closed-over tensor that requires grad: a constant would lose its gradient.
            graft::detail::check(lift_, "capture::aot: the function reads a tensor (sizes ", t.sizes(), ", ", t.type(),
                                 ") that requires grad but is not one of its inputs (a closed-over parameter): "
                                 "its gradient would be lost in a graph constant; pass it as an input (nn::aot "
                                 "does so for a module's parameters), or read t.detach() to make it a constant");
            const auto whole = [](const Tensor& u) {
                const auto elems = static_cast<std::int64_t>(u.impl().data->nbytes() / u.element_size());
                return u.is_contiguous() && u.storage_offset() == 0 && u.numel() == elems;
            };
            if (!whole(t)) {
                // A view (weight.t()): lift the tensor it views, and read the view from it.
                const auto* vm = autograd::detail::tracked_view(t);
                graft::detail::check(vm != nullptr && vm->base.defined() && whole(vm->base) &&
                                         storage_key(vm->base) == storage_key(t),
                                     "capture: the function reads a view (sizes ", t.sizes(), ", ", t.type(),
                                     ") of a tensor that requires grad and is not one of its inputs; pass it as "
                                     "an input");
                (void)value_of(vm->base);
                return value_of(t, about_to_be_written);
            }
            std::string name = "lifted";
            name += std::to_string(lifted_.size());
            ir::Value* v = g_.add_input(value_type(t), std::move(name));
            lifted_.push_back(t);
            lifted_values_.push_back(v);
            keep_.push_back(t);
            relift();
            return v;
        }
        // A tensor made outside the traced computation: its value becomes a constant.
        Tensor base = t;
        const auto elems = static_cast<std::int64_t>(t.impl().data->nbytes() / t.element_size());
        if (!(t.is_contiguous() && t.storage_offset() == 0 && t.numel() == elems))
            base = graft::detail::raw::view_of(t, {elems}, {1}, 0);
        ir::Node* c = append_constant();
        c->set_attr("value", graft::detail::raw::clone(base.detach()));
        keep_.push_back(base);
        bit = bases_.emplace(storage_key(t), base_state{base, c->add_output(value_type(base)), 0, -1}).first;
        values_[impl_key(base)] = {bit->second.value, 0};
    }
    base_state& b = bit->second;
    auto it = values_.find(impl_key(t));
    if (it != values_.end() && it->second.gen == b.gen) return it->second.value;
    // Stale (its memory was written since) or an unrecorded view: read it from the base.
    ir::Value* v = same_geometry(t, b.base) ? b.value : take(b, t);
    if (detached_.count(impl_key(t))) {
        // x.detach(): the same memory, read without a gradient.
        ir::Node* d = cur_->append<ir::kinds::detach>();
        d->add_input(v);
        v = d->add_output(value_type(t));
    }
    keep_.push_back(t);
    values_[impl_key(t)] = {v, b.gen};
    return v;
}

GRAFT_INLINE void tracer::on_op(std::string_view kind, std::span<const graft::detail::op_operand> operands,
                                std::initializer_list<graft::detail::op_attr_entry> attrs, const Tensor& result) {
    bool any_traced = false;
    for (const auto& o : operands) {
        if (!o.tensor) continue;
        any_traced = any_traced || traced(*o.tensor);
        if (impl_key(*o.tensor) == impl_key(result)) return;  // the op returned its input unchanged
    }
    if (!any_traced) return;  // computed from constants only: it stays a constant
    record(kind, operands, attrs, result);
}

GRAFT_INLINE void tracer::on_random(std::string_view kind, std::span<const graft::detail::op_operand> operands,
                                    std::initializer_list<graft::detail::op_attr_entry> attrs, const Tensor& result,
                                    const generator& gen) {
    graft::detail::check(&gen == &default_generator(), "capture::trace: ", kind,
                         " draws from a generator other than graft::default_generator(); a captured graph "
                         "draws from the default generator each time it runs, so capture code that uses it "
                         "(seed it with graft::manual_seed)");
    record(kind, operands, attrs, result);  // always a node: it draws anew on every run
}

GRAFT_INLINE void tracer::record(std::string_view kind, std::span<const graft::detail::op_operand> operands,
                                 std::initializer_list<graft::detail::op_attr_entry> attrs, const Tensor& result) {
    const ir::kind_info* k = ir::find_kind(kind);
    graft::detail::check(k != nullptr, "capture::trace: op '", kind,
                         "' has no graph IR kind, so it cannot be captured");
    std::vector<ir::Value*> inputs;
    for (const auto& o : operands) inputs.push_back(o.tensor ? value_of(*o.tensor) : number(o.number));
    ir::Node* n = cur_->append(*k);
    for (ir::Value* v : inputs) n->add_input(v);
    for (const auto& a : attrs)
        std::visit([&](const auto& v) { n->set_attr(a.name, v); }, a.value);
    ir::Value* out = n->add_output(value_type(result));
    keep_.push_back(result);
    auto bit = bases_.find(storage_key(result));
    if (bit == bases_.end()) bit = bases_.emplace(storage_key(result), base_state{result, out, 0, -1}).first;
    values_[impl_key(result)] = {out, bit->second.gen};
}

GRAFT_INLINE void tracer::on_detach(const Tensor& result) {
    keep_.push_back(result);  // its address stays its own
    detached_.insert(impl_key(result));
}

GRAFT_INLINE void tracer::on_write(const Tensor& dst, const graft::detail::op_operand& src) {
    if (!made_.count(storage_key(dst))) {
        const auto bit = bases_.find(storage_key(dst));
        graft::detail::check(bit != bases_.end() && bit->second.input >= 0, "capture::trace: the function writes into a tensor (sizes ",
                             dst.sizes(), ", ", dst.type(),
                             ") that is neither one of its inputs nor made by it (a closed-over tensor, such as "
                             "a module's buffer): the captured graph could not repeat that write on later calls; "
                             "pass the tensor as an input (nn::script and nn::aot pass a module's buffers), or "
                             "write into a copy");
    }
    const bool src_traced = src.tensor && traced(*src.tensor);
    if (!traced(dst) && !src_traced) return;  // initialising a constant
    (void)value_of(dst, true);                // registers an untraced destination as a constant first
    base_state& b = bases_.at(storage_key(dst));
    ir::Value* s = src.tensor ? value_of(*src.tensor) : number(src.number);
    ir::Value* next = nullptr;
    if (same_geometry(dst, b.base) && src.tensor && src.tensor->sizes() == dst.sizes() &&
        src.tensor->type() == dst.type()) {
        next = s;
    } else {
        ir::Value* idx = index_constant(b, dst);
        ir::Node* n = cur_->append<ir::kinds::put>();
        n->add_input(b.value);
        n->add_input(idx);
        n->add_input(s);
        next = n->add_output(value_type(b.base));
    }
    b.value = next;
    ++b.gen;
    values_[impl_key(b.base)] = {next, b.gen};
    ++mutations_;
}

GRAFT_INLINE void tracer::on_symbolic_sizes(const sym_int_list& sizes) {
    for (const SymInt& s : sizes) {
        if (!s.is_symbolic()) continue;
        ir::size_hint h;
        // Post-order: operands first, then the operation (a postfix program).
        const auto walk = [&](const auto& self, const graft::detail::sym_node& n) -> void {
            using op = graft::detail::sym_node::op;
            switch (n.kind) {
                case op::size:
                    h.program.push_back({ir::size_term::op::symbol, 0, h.leaves.size()});
                    h.leaves.push_back({n.value});
                    return;
                case op::constant:
                    h.program.push_back({ir::size_term::op::constant, static_cast<double>(n.value), 0});
                    return;
                default: break;
            }
            self(self, *n.lhs);
            self(self, *n.rhs);
            const ir::size_term::op k = n.kind == op::add   ? ir::size_term::op::add
                                        : n.kind == op::sub ? ir::size_term::op::sub
                                        : n.kind == op::mul ? ir::size_term::op::mul
                                        : n.kind == op::div ? ir::size_term::op::div
                                                            : ir::size_term::op::mod;
            h.program.push_back({k, 0, 0});
        };
        walk(walk, *s.node());
        hints_.push_back(std::move(h));
    }
}

GRAFT_INLINE void tracer::on_alloc(const Tensor& t, bool by_op) {
    // Storages made while tracing are told from f's closed-over tensors by address: tensors
    // alive before the trace cannot share one with them. Ops' results are kept by record();
    // empty()'s are kept here, so their addresses stay unique while tracing.
    made_.insert(storage_key(t));
    if (by_op) return;
    keep_.push_back(t);
    fresh_.insert(storage_key(t));
}

GRAFT_INLINE void tracer::on_read(std::string_view what, const Tensor& t) {
    if (!traced(t)) return;
    graft::detail::fail(graft::detail::concat(
        "capture::trace: ", what, "() reads the value of a traced tensor; data-dependent control flow and "
        "reading values cannot be captured (the graph would bake in this example's value)"));
}

GRAFT_INLINE std::vector<Tensor> tracer::record_cond(tracer& self, const Tensor& pred,
                                                     const graft::detail::branch_ref& then_branch,
                                                     const graft::detail::branch_ref& else_branch,
                                                     const std::vector<Tensor>& operands) {
    return self.cond_impl(pred, then_branch, else_branch, operands);
}

GRAFT_INLINE std::vector<Tensor> tracer::record_loop(tracer& self, const graft::detail::branch_ref& cond_fn,
                                                     const graft::detail::branch_ref& body_fn,
                                                     const std::vector<Tensor>& carried) {
    return self.loop_impl(cond_fn, body_fn, carried);
}

GRAFT_INLINE std::vector<Tensor> tracer::cond_impl(const Tensor& pred, const graft::detail::branch_ref& then_branch,
                                                   const graft::detail::branch_ref& else_branch,
                                                   const std::vector<Tensor>& operands) {
    bool taken = false;
    {
        graft::detail::observer_paused paused;  // reading the example's predicate is not part of the graph
        taken = pred.item<bool>();
    }
    // A predicate computed from constants only: the branch it selects, as eager code.
    if (!traced(pred)) return taken ? then_branch(operands) : else_branch(operands);
    ir::Value* c = value_of(pred);
    ir::Node* n = cur_->append<ir::kinds::if_>();
    n->add_input(c);
    open_ifs_.push_back(n);
    // Each branch sees the tracer's state as it was before the If; values it makes stay in
    // its block.
    const auto saved_bases = bases_;
    const auto saved_values = values_;
    const std::size_t saved_mutations = mutations_;
    ir::Block* outer = cur_;
    std::vector<Tensor> results[2];
    try {
        for (int b = 0; b < 2; ++b) {
            cur_ = n->add_block();
            results[b] = (b == 0 ? then_branch : else_branch)(operands);
            for (std::size_t i = 0; i < results[b].size(); ++i) {
                graft::detail::check(results[b][i].defined(), "cond: output ", i, " of the ",
                                     b == 0 ? "true" : "false", " branch is undefined");
                cur_->register_output(value_of(results[b][i]));
            }
            graft::detail::check(mutations_ == saved_mutations, "cond: the ", b == 0 ? "true" : "false",
                                 " branch writes into a tensor; under graph capture, branches must not modify "
                                 "tensors (return new ones instead)");
            cur_ = outer;
            bases_ = saved_bases;
            values_ = saved_values;
            relift();  // lifted inputs stay known outside the block
        }
    } catch (...) {
        cur_ = outer;
        open_ifs_.pop_back();
        bases_ = saved_bases;
        values_ = saved_values;
        relift();  // lifted inputs stay known outside the block
        throw;
    }
    open_ifs_.pop_back();
    graft::detail::check(results[0].size() == results[1].size(), "cond: the true branch returns ", results[0].size(),
                         " tensors, the false branch ", results[1].size());
    // The If's outputs; the caller continues with copies of the taken branch's results, which
    // the graph knows as those outputs.
    std::vector<Tensor> out;
    for (std::size_t i = 0; i < results[0].size(); ++i) {
        const Tensor& a = results[0][i];
        const Tensor& b = results[1][i];
        graft::detail::check(a.type() == b.type(), "cond: output ", i, " is ", a.type(), " in the true branch and ",
                             b.type(), " in the false branch");
        ir::TensorType tt;
        tt.scalar_type = a.type();
        if (a.sizes().size() == b.sizes().size()) {
            tt.sizes.emplace();
            for (std::size_t d = 0; d < a.sizes().size(); ++d)
                tt.sizes->push_back(a.sizes()[d] == b.sizes()[d] ? std::optional<std::int64_t>(a.sizes()[d]) : std::nullopt);
        }
        ir::Value* v = n->add_output(ir::Type::tensor_type(std::move(tt)));
        Tensor copy;
        {
            graft::detail::observer_paused paused;
            copy = graft::detail::raw::clone((taken ? a : b).detach());
        }
        keep_.push_back(copy);
        bases_[storage_key(copy)] = {copy, v, 0, -1};
        values_[impl_key(copy)] = {v, 0};
        out.push_back(std::move(copy));
    }
    attach_cond_backward(n, pred, out);
    return out;
}


GRAFT_INLINE std::vector<Tensor> tracer::loop_impl(const graft::detail::branch_ref& cond_fn,
                                                   const graft::detail::branch_ref& body_fn,
                                                   const std::vector<Tensor>& carried) {
    const auto check_condition = [](const std::vector<Tensor>& c) {
        graft::detail::check(c.size() == 1 && c[0].defined() && c[0].numel() == 1 && c[0].type() == dtype::bool_,
                             "while_loop: the condition function must return one one-element bool tensor");
    };
    const auto run_eagerly = [&](std::vector<Tensor> state) {
        while (graft::detail::loop_condition(cond_fn(state))) state = body_fn(state);
        return state;
    };
    const std::vector<Tensor> c0 = cond_fn(carried);
    check_condition(c0);
    ir::Value* cv = value_of(c0[0]);
    std::vector<ir::Value*> initial;
    for (const Tensor& t : carried) initial.push_back(value_of(t));
    ir::Node* n = cur_->append<ir::kinds::loop>();
    n->add_input(cv);
    for (ir::Value* v : initial) n->add_input(v);
    open_ifs_.push_back(n);
    const auto saved_bases = bases_;
    const auto saved_values = values_;
    const std::size_t saved_mutations = mutations_;
    ir::Block* outer = cur_;
    ir::Block* body = n->add_block();
    std::vector<Tensor> next;
    try {
        // The body's parameters stand for the carried values of any iteration: fresh copies
        // whose graph values are the block's inputs.
        std::vector<Tensor> params;
        for (const Tensor& t : carried) {
            ir::Value* p = body->add_input(value_type(t));
            Tensor copy;
            {
                graft::detail::observer_paused paused;
                copy = graft::detail::raw::clone(t.detach());
            }
            if (t.requires_grad()) copy.requires_grad_();
            keep_.push_back(copy);
            bases_[storage_key(copy)] = {copy, p, 0, -1};
            values_[impl_key(copy)] = {p, 0};
            params.push_back(std::move(copy));
        }
        cur_ = body;
        next = body_fn(params);
        graft::detail::check(next.size() == carried.size(), "while_loop: the body returns ", next.size(),
                             " tensors for ", carried.size(), " carried values");
        for (std::size_t i = 0; i < next.size(); ++i)
            graft::detail::check(next[i].defined() && next[i].type() == carried[i].type(),
                                 "while_loop: the body must return carried value ", i, " with dtype ",
                                 carried[i].type());
        const std::vector<Tensor> c1 = cond_fn(next);
        check_condition(c1);
        body->register_output(value_of(c1[0]));
        for (const Tensor& t : next) body->register_output(value_of(t));
        graft::detail::check(mutations_ == saved_mutations,
                             "while_loop: the body or the condition writes into a tensor; under graph capture they "
                             "must not modify tensors (return new ones instead)");
    } catch (...) {
        cur_ = outer;
        open_ifs_.pop_back();
        bases_ = saved_bases;
        values_ = saved_values;
        relift();  // lifted inputs stay known outside the block
        throw;
    }
    cur_ = outer;
    open_ifs_.pop_back();
    bases_ = saved_bases;
    values_ = saved_values;
    relift();  // lifted inputs stay known outside the block
    // A carried value whose sizes the body changes has unknown sizes (its rank when kept).
    for (std::size_t i = 0; i < carried.size(); ++i) {
        ir::Type t = value_type(carried[i]);
        if (next[i].sizes() != carried[i].sizes()) {
            if (next[i].sizes().size() == carried[i].sizes().size())
                for (auto& d : *t.tensor.sizes) d = std::nullopt;
            else
                t.tensor.sizes.reset();
        }
        body->inputs()[i]->set_type(t);
        n->add_output(t);
    }
    // The caller continues with the loop's real result (run again, not recorded), which the
    // graph knows as the Loop's outputs. At made-up values the loop is not run (it may never
    // end on them): the carried values stand for the result when the body keeps their sizes.
    std::vector<Tensor> result;
    if (tl_made_up_values) {
        for (std::size_t i = 0; i < carried.size(); ++i)
            graft::detail::check(next[i].sizes() == carried[i].sizes(),
                                 "capture: a while_loop whose body changes the sizes of carried value ", i,
                                 " is not traced at made-up sizes (its result's sizes depend on the values): "
                                 "exact sizes");
        result = carried;
    } else {
        graft::detail::observer_paused paused;
        result = run_eagerly(carried);
    }
    std::vector<Tensor> out;
    for (std::size_t i = 0; i < result.size(); ++i) {
        Tensor copy;
        {
            graft::detail::observer_paused paused;
            copy = graft::detail::raw::clone(result[i].detach());
        }
        keep_.push_back(copy);
        bases_[storage_key(copy)] = {copy, n->output(i), 0, -1};
        values_[impl_key(copy)] = {n->output(i), 0};
        out.push_back(std::move(copy));
    }
    attach_loop_backward(n, c0[0], carried, out);
    return out;
}

namespace loop_grad {

/// Values a block (and the blocks inside it) reads that are defined outside it, in order of use.
inline void collect_free_values(const ir::Block& b, std::set<const ir::Value*>& inside, std::vector<const ir::Value*>& free) {
    for (const ir::Value* v : b.inputs()) inside.insert(v);
    for (const ir::Node* n : b.nodes()) {
        for (const ir::Value* v : n->inputs())
            if (!inside.count(v) && std::find(free.begin(), free.end(), v) == free.end()) free.push_back(v);
        for (const ir::Block* sub : n->blocks()) collect_free_values(*sub, inside, free);
        for (const ir::Value* v : n->outputs()) inside.insert(v);
    }
    for (const ir::Value* v : b.outputs())
        if (!inside.count(v) && std::find(free.begin(), free.end(), v) == free.end()) free.push_back(v);
}

[[nodiscard]] inline std::vector<const ir::Value*> free_values(const ir::Node& n) {
    std::set<const ir::Value*> inside;
    std::vector<const ir::Value*> free;
    for (const ir::Block* b : n.blocks()) {
        std::set<const ir::Value*> in = inside;
        collect_free_values(*b, in, free);
    }
    return free;
}

/// Runs block b through the interpreter with `env` (its outer values and inputs) and returns its
/// outputs as tensors.
[[nodiscard]] inline std::vector<Tensor> run_block_tensors(const ir::Block& b, std::map<const ir::Value*, ir::ivalue> env) {
    std::vector<Tensor> r;
    for (ir::ivalue& v : ir::detail::run_block(b, env)) {
        Tensor* t = std::get_if<Tensor>(&v);
        graft::detail::check(t != nullptr, "capture::aot: a block of a cond or while_loop returns a number");
        r.push_back(std::move(*t));
    }
    return r;
}

/// What a recorded block's backward needs: the tensors of the values it reads from outside,
/// and which of them require grad (their gradients are computed).
struct block_context {
    std::map<const ir::Value*, Tensor> outer;
    std::map<const ir::Value*, ir::ivalue> constants;  // outer constants (numbers hoisted out of the blocks)
    std::vector<const ir::Value*> grad_values;  // outer values whose tensors require grad
    std::string missing;                       // a value the tracer could not name (empty: none)
    std::vector<std::pair<Tensor, std::uint64_t>> versions;  // the outer tensors' versions when recorded

    /// graft::error when f wrote into a tensor the block reads after the block ran: the
    /// backward would read the new contents.
    void check_unchanged(const char* what) const {
        graft::detail::check(missing.empty(), "capture::aot: the gradient of a ", what, " needs ", missing,
                             ", a value the capture cannot name again");
        for (const auto& [t, v] : versions)
            graft::detail::check(t._version() == v, "capture::aot: the function writes into a tensor that a ", what,
                                 " reads, after the ", what,
                                 "; its gradient would read the new contents (clone the tensor before writing)");
    }

    /// env for a run of the block: the outer tensors, with the grad values replaced by `leaves`.
    [[nodiscard]] std::map<const ir::Value*, ir::ivalue> env(const std::vector<Tensor>& leaves) const {
        std::map<const ir::Value*, ir::ivalue> e = constants;
        for (const auto& [v, t] : outer) e.emplace(v, t);
        for (std::size_t k = 0; k < grad_values.size() && k < leaves.size(); ++k) e[grad_values[k]] = leaves[k];
        return e;
    }
    [[nodiscard]] std::vector<Tensor> new_leaves() const {
        std::vector<Tensor> r;
        for (const ir::Value* v : grad_values) r.push_back(outer.at(v).detach().requires_grad_());
        return r;
    }
};

/// d(outs . g)/d(wrt) for the floating outs that require grad (zeros where none flows).
[[nodiscard]] inline std::vector<Tensor> vjp(const std::vector<Tensor>& outs, const std::vector<Tensor>& g,
                                      const std::vector<Tensor>& wrt) {
    std::vector<Tensor> o, go;
    for (std::size_t k = 0; k < outs.size() && k < g.size(); ++k)
        if (outs[k].requires_grad()) {
            o.push_back(outs[k]);
            go.push_back(g[k]);
        }
    std::vector<Tensor> r;
    if (!o.empty() && !wrt.empty()) {
        std::vector<autograd::grad_input> in(wrt.begin(), wrt.end());
        r = autograd::grad(o, in, go, false, false, /*allow_unused=*/true);
    }
    r.resize(wrt.size());
    for (std::size_t k = 0; k < wrt.size(); ++k)
        if (!r[k].defined()) r[k] = zeros_like(wrt[k]);
    return r;
}

/// A branch_ref calling a callable that lives at least as long as the call.
template <class F>
[[nodiscard]] graft::detail::branch_ref ref_to(const F& f) {
    return {&f, [](const void* o, const std::vector<Tensor>& in) { return (*static_cast<const F*>(o))(in); }};
}

}  // namespace loop_grad

using loop_grad::block_context;
using loop_grad::free_values;
using loop_grad::ref_to;
using loop_grad::run_block_tensors;
using loop_grad::vjp;

GRAFT_INLINE std::map<const ir::Value*, Tensor> tracer::tensors_of(const std::vector<const ir::Value*>& values) const {
    std::map<const ir::Value*, Tensor> r;
    const auto wanted = [&](const ir::Value* v) { return std::find(values.begin(), values.end(), v) != values.end(); };
    for (const auto& [key, b] : bases_)
        if (wanted(b.value) && b.base.defined() && !r.count(b.value)) r.emplace(b.value, b.base);
    for (const Tensor& t : keep_) {
        const auto it = values_.find(impl_key(t));
        const auto bit = bases_.find(storage_key(t));
        // Only a tensor whose memory was not written since it got the value holds it.
        if (it != values_.end() && bit != bases_.end() && it->second.gen == bit->second.gen &&
            wanted(it->second.value) && !r.count(it->second.value))
            r.emplace(it->second.value, t);
    }
    return r;
}

GRAFT_INLINE std::shared_ptr<block_context> tracer::context_of(const ir::Node& n) const {
    auto ctx = std::make_shared<block_context>();
    const std::vector<const ir::Value*> free = free_values(n);
    ctx->outer = tensors_of(free);
    for (const auto& [v, t] : ctx->outer) ctx->versions.emplace_back(t, t._version());
    for (const ir::Value* v : free) {
        const auto it = ctx->outer.find(v);
        if (it != ctx->outer.end()) {
            if (it->second.requires_grad() && is_floating_point(it->second.type())) ctx->grad_values.push_back(v);
            continue;
        }
        const ir::Node* def = v->node();
        if (def != nullptr && def->inputs().empty() && def->blocks().empty() && def->kind().run != nullptr) {
            graft::detail::observer_paused paused;  // a constant: its value
            std::vector<ir::ivalue> vals = def->kind().run(def->attributes(), {});
            for (std::size_t i = 0; i < def->outputs().size() && i < vals.size(); ++i)
                if (def->outputs()[i] == v) ctx->constants.emplace(v, vals[i]);
            if (ctx->constants.count(v)) continue;
        }
        if (ctx->missing.empty()) ctx->missing = "%" + v->name();
    }
    return ctx;
}

/// Refuses a differentiable If/Loop whose blocks draw random numbers: its backward runs the
/// blocks again, which would draw other numbers than the forward did.
GRAFT_INLINE void check_no_random_in_blocks(const ir::Node& n, const char* what) {
    const auto walk = [](const ir::Block& b, const auto& self) -> const ir::Node* {
        for (const ir::Node* m : b.nodes()) {
            if (m->kind().random) return m;
            for (const ir::Block* inner : m->blocks())
                if (const ir::Node* r = self(*inner, self)) return r;
        }
        return nullptr;
    };
    for (const ir::Block* b : n.blocks())
        if (const ir::Node* r = walk(*b, walk))
            graft::detail::fail(graft::detail::concat(
                "capture: ", what, " draws random numbers (", r->kind().name,
                ") and a value it reads requires grad: its captured backward runs the body again and would "
                "draw other numbers than the forward; draw them outside and pass them in, or run it eagerly"));
}

GRAFT_INLINE void tracer::attach_cond_backward(ir::Node* n, const Tensor& pred, std::vector<Tensor>& outs) {
    if (!autograd::is_grad_enabled()) return;
    const std::shared_ptr<block_context> ctx = context_of(*n);
    if (ctx->grad_values.empty()) return;
    check_no_random_in_blocks(*n, "a cond branch");
    auto node = std::make_shared<autograd::function_node>("CondBackward");
    for (const ir::Value* v : ctx->grad_values) node->add_next_edge(autograd::detail::gradient_edge(ctx->outer.at(v)));
    std::vector<std::pair<int_list, dtype>> shapes;
    for (const Tensor& o : outs)
        if (is_floating_point(o.type())) shapes.emplace_back(o.sizes(), o.type());
    const ir::Block* blocks[2] = {n->blocks()[0], n->blocks()[1]};
    node->backward = [ctx, pred, shapes, b0 = blocks[0], b1 = blocks[1]](autograd::function_node&,
                                                                            const autograd::tensor_list& g) {
        ctx->check_unchanged("cond");
        std::vector<Tensor> gs;
        for (std::size_t k = 0; k < shapes.size(); ++k)
            gs.push_back(k < g.size() && g[k].defined() ? g[k] : zeros(shapes[k].first, shapes[k].second));
        // Each branch: its block again with leaves for the values requiring grad, then the
        // vector-Jacobian product with the output gradients (the cond's floating outputs).
        const auto branch = [&ctx](const ir::Block* b, const std::vector<Tensor>& grads) {
            autograd::enable_grad on;
            const std::vector<Tensor> leaves = ctx->new_leaves();
            std::vector<Tensor> outs, floating;
            outs = run_block_tensors(*b, ctx->env(leaves));
            for (const Tensor& o : outs)
                if (is_floating_point(o.type())) floating.push_back(o);
            return vjp(floating, grads, leaves);
        };
        const auto t = [&](const std::vector<Tensor>& in) { return branch(b0, in); };
        const auto e = [&](const std::vector<Tensor>& in) { return branch(b1, in); };
        return graft::detail::cond_impl(pred, ref_to(t), ref_to(e), gs);
    };
    for (Tensor& o : outs)
        if (is_floating_point(o.type())) autograd::detail::set_history(o, node);
}

GRAFT_INLINE void tracer::attach_loop_backward(ir::Node* n, const Tensor& cond0, const std::vector<Tensor>& carried,
                                               std::vector<Tensor>& outs) {
    if (!autograd::is_grad_enabled()) return;
    const std::shared_ptr<block_context> ctx = context_of(*n);
    std::vector<std::size_t> floating;  // carried values with gradients (the loop's floating outputs)
    bool carried_grad = false;
    for (std::size_t i = 0; i < carried.size(); ++i)
        if (is_floating_point(carried[i].type())) {
            floating.push_back(i);
            carried_grad = carried_grad || carried[i].requires_grad();
        }
    if (ctx->grad_values.empty() && !carried_grad) return;
    check_no_random_in_blocks(*n, "a while_loop body");
    auto node = std::make_shared<autograd::function_node>("WhileLoopBackward");
    std::vector<std::size_t> grad_carried;
    for (std::size_t i : floating)
        if (carried[i].requires_grad()) {
            grad_carried.push_back(i);
            node->add_next_edge(autograd::detail::gradient_edge(carried[i]));
        }
    for (const ir::Value* v : ctx->grad_values) node->add_next_edge(autograd::detail::gradient_edge(ctx->outer.at(v)));
    std::vector<std::pair<int_list, dtype>> shapes;
    for (std::size_t i : floating) shapes.emplace_back(outs[i].sizes(), outs[i].type());
    const ir::Block* body = n->blocks()[0];
    std::vector<Tensor> c0;
    for (const Tensor& t : carried) {
        c0.push_back(t.detach());
        ctx->versions.emplace_back(t, t._version());
    }
    node->backward = [ctx, body, cond0 = cond0.detach(), c0, floating, grad_carried, shapes](
                         autograd::function_node&, const autograd::tensor_list& g) {
        ctx->check_unchanged("while_loop");
        const std::size_t m = c0.size();
        // The body: (next condition, next carried...) from carried values (and leaves for the
        // outer values requiring grad).
        const auto run_body = [&](const std::vector<Tensor>& c, const std::vector<Tensor>& leaves) {
            std::map<const ir::Value*, ir::ivalue> env = ctx->env(leaves);
            for (std::size_t i = 0; i < m; ++i) env[body->inputs()[i]] = c[i];
            return run_block_tensors(*body, std::move(env));
        };
        const std::vector<Tensor> no_leaves;
        const Tensor zero = full({}, 0, dtype::int64);
        // 1. The trip count: the loop again, counting.
        const auto count_cond = [](const std::vector<Tensor>& s) { return std::vector<Tensor>{s.back()}; };
        const auto count_body = [&](const std::vector<Tensor>& s) {
            std::vector<Tensor> r = run_body(std::vector<Tensor>(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(m)),
                                             no_leaves);
            std::vector<Tensor> next(r.begin() + 1, r.end());
            next.push_back(s[m] + std::int64_t{1});
            next.push_back(r[0]);
            return next;
        };
        std::vector<Tensor> start = c0;
        start.push_back(zero);
        start.push_back(cond0);
        const Tensor trips = graft::detail::while_loop_impl(ref_to(count_cond), ref_to(count_body), start)[m];
        // 2. From the last iteration to the first: recompute its carried values, apply the body's
        // vector-Jacobian product to the carried gradients, add the outer values' gradients.
        std::vector<Tensor> state{trips - std::int64_t{1}};
        for (std::size_t k = 0; k < shapes.size(); ++k)
            state.push_back(k < g.size() && g[k].defined() ? g[k] : zeros(shapes[k].first, shapes[k].second));
        for (const ir::Value* v : ctx->grad_values) state.push_back(zeros_like(ctx->outer.at(v)));
        const std::size_t nf = floating.size();
        const auto back_cond = [](const std::vector<Tensor>& s) { return std::vector<Tensor>{s[0] >= std::int64_t{0}}; };
        const auto back_body = [&](const std::vector<Tensor>& s) {
            const Tensor& j = s[0];
            const auto re_cond = [&j, m](const std::vector<Tensor>& r) { return std::vector<Tensor>{r[m] < j}; };
            const auto re_body = [&](const std::vector<Tensor>& r) {
                std::vector<Tensor> x = run_body(std::vector<Tensor>(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(m)),
                                                 no_leaves);
                std::vector<Tensor> next(x.begin() + 1, x.end());
                next.push_back(r[m] + std::int64_t{1});
                return next;
            };
            std::vector<Tensor> from = c0;
            from.push_back(zero);
            std::vector<Tensor> cj = graft::detail::while_loop_impl(ref_to(re_cond), ref_to(re_body), from);
            cj.pop_back();
            autograd::enable_grad on;
            std::vector<Tensor> wrt;
            for (std::size_t i : floating) {
                cj[i] = cj[i].detach().requires_grad_();
                wrt.push_back(cj[i]);
            }
            const std::vector<Tensor> leaves = ctx->new_leaves();
            wrt.insert(wrt.end(), leaves.begin(), leaves.end());
            const std::vector<Tensor> x = run_body(cj, leaves);
            std::vector<Tensor> outs_f, gs;
            for (std::size_t q = 0; q < nf; ++q) {
                outs_f.push_back(x[1 + floating[q]]);
                gs.push_back(s[1 + q]);
            }
            const std::vector<Tensor> d = vjp(outs_f, gs, wrt);
            std::vector<Tensor> next{j - std::int64_t{1}};
            for (std::size_t q = 0; q < nf; ++q) next.push_back(d[q]);
            for (std::size_t k = 0; k < ctx->grad_values.size(); ++k) next.push_back(s[1 + nf + k] + d[nf + k]);
            return next;
        };
        const std::vector<Tensor> done = graft::detail::while_loop_impl(ref_to(back_cond), ref_to(back_body), state);
        autograd::tensor_list r;
        for (std::size_t i : grad_carried)
            for (std::size_t q = 0; q < nf; ++q)
                if (floating[q] == i) r.push_back(done[1 + q]);
        for (std::size_t k = 0; k < ctx->grad_values.size(); ++k) r.push_back(done[1 + nf + k]);
        return r;
    };
    for (std::size_t i : floating) autograd::detail::set_history(outs[i], node);
}

GRAFT_INLINE std::pair<ir::Value*, bool> tracer::input_state(const Tensor& input) const {
    const base_state& b = bases_.at(storage_key(input));
    return {b.value, b.gen > 0};
}

GRAFT_INLINE void tracer::relift() {
    for (std::size_t k = 0; k < lifted_.size(); ++k) {
        const Tensor& t = lifted_[k];
        if (bases_.count(storage_key(t))) continue;
        bases_[storage_key(t)] = {t, lifted_values_[k], 0, -1};
        values_[impl_key(t)] = {lifted_values_[k], 0};
    }
}

GRAFT_INLINE ir::Node* tracer::append_constant() {
    ir::Node* c = g_.append<ir::kinds::constant>();
    if (!open_ifs_.empty()) c->move_before(open_ifs_.front());
    return c;
}

GRAFT_INLINE ir::Value* tracer::number(const scalar& s) {
    ir::Node* c = append_constant();
    if (s.kind() == dtype::bool_) {
        c->set_attr("value", s.to<bool>());
        return c->add_output(ir::Type::bool_type());
    }
    if (s.kind() == dtype::int64) {
        c->set_attr("value", s.to_int64());
        return c->add_output(ir::Type::int_type());
    }
    c->set_attr("value", s.to_double());
    return c->add_output(ir::Type::float_type());
}

GRAFT_INLINE ir::Value* tracer::index_constant(const base_state& b, const Tensor& t) {
    const Tensor idx = autograd::detail::view_index(autograd::detail::geometry_of(b.base),
                                                    autograd::detail::geometry_of(t));
    ir::Node* c = append_constant();
    c->set_attr("value", idx);
    return c->add_output(value_type(idx));
}

GRAFT_INLINE ir::Value* tracer::strided_view(const base_state& b, const Tensor& t) {
    if (!(t.type() == b.base.type() && b.base.is_contiguous() && t.dim() > 0 && t.numel() > 1 &&
          t.storage_offset() >= b.base.storage_offset()))
        return nullptr;
    const std::size_t rank = static_cast<std::size_t>(t.dim());
    // t's dimensions of size > 1 by decreasing stride; size-1 dimensions (their strides mean
    // nothing) keep their place by index. `order[k]`: t's dimension at place k.
    std::vector<std::size_t> big;
    for (std::size_t d = 0; d < rank; ++d)
        if (t.sizes()[d] > 1) big.push_back(d);
    std::sort(big.begin(), big.end(), [&](std::size_t x, std::size_t y) {  // ties (rejected below) by index
        return t.strides()[x] != t.strides()[y] ? t.strides()[x] > t.strides()[y] : x < y;
    });
    std::vector<std::size_t> order = big;
    for (std::size_t d = 0; d < rank; ++d)
        if (t.sizes()[d] == 1) order.insert(std::upper_bound(order.begin(), order.end(), d), d);
    // The base reshaped so that each of those strides is a dimension's ([N / s0, s0 / s1, ...,
    // s_last], the last dropped when it is 1): t is then a box of it.
    const std::int64_t total = b.base.numel();
    std::vector<std::int64_t> strides;
    for (std::size_t d : big) strides.push_back(t.strides()[d]);
    if (strides.front() <= 0 || total % strides.front() != 0) return nullptr;
    std::vector<std::int64_t> shape{total / strides.front()};
    for (std::size_t k = 0; k + 1 < strides.size(); ++k) {
        if (strides[k + 1] <= 0 || strides[k] % strides[k + 1] != 0 || strides[k] == strides[k + 1]) return nullptr;
        shape.push_back(strides[k] / strides[k + 1]);
    }
    const bool inner = strides.back() > 1;  // a trailing dimension of stride 1 that t fixes at one index
    if (inner) shape.push_back(strides.back());
    // Where the box starts in each dimension, and its lengths.
    std::int64_t rel = t.storage_offset() - b.base.storage_offset();
    std::vector<std::int64_t> start(shape.size()), length(shape.size(), 1);
    for (std::size_t k = 0; k < strides.size(); ++k) {
        start[k] = rel / strides[k];
        rel -= start[k] * strides[k];
        length[k] = t.sizes()[big[k]];
    }
    if (inner) start.back() = rel;
    else if (rel != 0) return nullptr;
    for (std::size_t k = 0; k < shape.size(); ++k)
        if (start[k] + length[k] > shape[k]) return nullptr;
    const auto tensor_type = [&](const std::vector<std::int64_t>& sizes) {
        ir::TensorType tt;
        tt.scalar_type = t.type();
        tt.sizes.emplace(sizes.begin(), sizes.end());
        return ir::Type::tensor_type(std::move(tt));
    };
    ir::Value* v = b.value;
    std::vector<std::int64_t> sizes(b.base.sizes().begin(), b.base.sizes().end());
    const auto reshape = [&](const std::vector<std::int64_t>& to) {
        if (sizes == to) return;
        ir::Node* r = cur_->append<ir::kinds::reshape>();
        r->set_attr("sizes", to);
        r->add_input(v);
        v = r->add_output(tensor_type(to));
        sizes = to;
    };
    reshape(shape);
    for (std::size_t k = 0; k < shape.size(); ++k) {
        if (start[k] == 0 && length[k] == shape[k]) continue;
        ir::Node* n = cur_->append<ir::kinds::narrow>();
        n->set_attr("dim", static_cast<std::int64_t>(k));
        n->set_attr("start", start[k]);
        n->set_attr("length", length[k]);
        n->add_input(v);
        sizes[k] = length[k];
        v = n->add_output(tensor_type(sizes));
    }
    // t's sizes in `order`, then the permutation back to t's own order.
    std::vector<std::int64_t> ordered(rank), perm(rank);
    bool identity = true;
    for (std::size_t k = 0; k < rank; ++k) {
        ordered[k] = t.sizes()[order[k]];
        perm[order[k]] = static_cast<std::int64_t>(k);
        identity = identity && order[k] == k;
    }
    reshape(ordered);
    if (identity) return v;
    ir::Node* n = cur_->append<ir::kinds::permute>();
    n->set_attr("dims", perm);
    n->add_input(v);
    return n->add_output(value_type(t));
}

GRAFT_INLINE ir::Value* tracer::take(const base_state& b, const Tensor& t) {
    // The base's elements in their order under other sizes: a reshape, whose sizes stay
    // numbers a symbolic graph can compute (an index tensor would be a constant of that size).
    if (t.type() == b.base.type() && t.is_contiguous() && b.base.is_contiguous() &&
        t.storage_offset() == b.base.storage_offset() && t.numel() == b.base.numel() && t.numel() > 0) {
        ir::Node* n = cur_->append<ir::kinds::reshape>();
        n->set_attr("sizes", std::vector<std::int64_t>(t.sizes().begin(), t.sizes().end()));
        n->add_input(b.value);
        return n->add_output(value_type(t));
    }
    // The base with its dimensions permuted (w.t() saved for matmul's backward): a transpose or
    // permute view, not an index constant as large as the tensor.
    if (t.type() == b.base.type() && b.base.is_contiguous() && t.dim() == b.base.dim() && t.dim() > 1 &&
        t.storage_offset() == b.base.storage_offset() && t.numel() == b.base.numel() && t.numel() > 0) {
        const std::size_t rank = static_cast<std::size_t>(t.dim());
        std::vector<std::int64_t> perm(rank, -1);
        std::vector<bool> used(rank, false);
        bool ok = true;
        // Dimensions of size > 1 by their stride (unique in a contiguous base), then the size-1
        // dimensions (any stride) in order.
        for (int pass = 0; pass < 2 && ok; ++pass)
            for (std::size_t d = 0; d < rank && ok; ++d) {
                if ((t.sizes()[d] > 1) != (pass == 0)) continue;
                ok = false;
                for (std::size_t e = 0; e < rank && !ok; ++e)
                    if (!used[e] && b.base.sizes()[e] == t.sizes()[d] &&
                        (t.sizes()[d] == 1 || b.base.strides()[e] == t.strides()[d])) {
                        perm[d] = static_cast<std::int64_t>(e);
                        used[e] = ok = true;
                    }
            }
        std::vector<std::size_t> moved;
        for (std::size_t d = 0; ok && d < rank; ++d)
            if (perm[d] != static_cast<std::int64_t>(d)) moved.push_back(d);
        if (ok && !moved.empty()) {
            ir::Node* n;
            if (moved.size() == 2) {
                n = cur_->append<ir::kinds::transpose>();
                n->set_attr("dim0", static_cast<std::int64_t>(moved[0]));
                n->set_attr("dim1", static_cast<std::int64_t>(moved[1]));
            } else {
                n = cur_->append<ir::kinds::permute>();
                n->set_attr("dims", perm);
            }
            n->add_input(b.value);
            return n->add_output(value_type(t));
        }
    }
    // A box of the base (its strides, each dimension a window): narrows, whose starts and
    // lengths a symbolic graph can compute (x.narrow(1, 1, n - 2) saved for the backward).
    if (t.type() == b.base.type() && b.base.is_contiguous() && t.dim() == b.base.dim() && t.dim() > 0 &&
        t.strides() == b.base.strides() && t.numel() > 0) {
        std::int64_t rel = t.storage_offset() - b.base.storage_offset();
        std::vector<std::int64_t> start(t.sizes().size(), 0);
        bool box = rel >= 0;
        for (std::size_t d = 0; box && d < start.size(); ++d) {
            const std::int64_t stride = b.base.strides()[d], n = b.base.sizes()[d];
            if (n > 1 && stride > 0) {
                start[d] = rel / stride;
                rel -= start[d] * stride;
            }
            box = start[d] + t.sizes()[d] <= n;
        }
        if (box && rel == 0) {
            ir::Value* v = b.value;
            int_list sizes = b.base.sizes();
            for (std::size_t d = 0; d < start.size(); ++d) {
                if (start[d] == 0 && t.sizes()[d] == sizes[d]) continue;
                sizes[d] = t.sizes()[d];
                ir::Node* n = cur_->append<ir::kinds::narrow>();
                n->set_attr("dim", static_cast<std::int64_t>(d));
                n->set_attr("start", start[d]);
                n->set_attr("length", t.sizes()[d]);
                n->add_input(v);
                ir::TensorType tt;
                tt.scalar_type = t.type();
                tt.sizes.emplace(sizes.begin(), sizes.end());
                v = n->add_output(ir::Type::tensor_type(std::move(tt)));
            }
            if (v != b.value) return v;
        }
    }
    // Any other box of the base in some order of its strides (attention's
    // qkv.split(C, 2)[i].view({B, T, H, d}).transpose(1, 2) saved for the backward): reshape,
    // narrows, reshape, permute, whose sizes stay numbers a symbolic graph can compute where an
    // index constant would tie the graph to the batch size.
    if (ir::Value* v = strided_view(b, t)) return v;
    ir::Value* idx = index_constant(b, t);
    ir::Node* n = cur_->append<ir::kinds::take>();
    n->add_input(b.value);
    n->add_input(idx);
    return n->add_output(value_type(t));
}

GRAFT_INLINE observer_scope::observer_scope(graft::detail::op_observer* o) {
    graft::detail::check(graft::detail::tl_op_observer == nullptr,
                         "capture::trace: already tracing on this thread (nested capture is not supported)");
    rng_ = default_generator().get_state();
    graft::detail::tl_op_observer = o;
}

GRAFT_INLINE observer_scope::~observer_scope() {
    graft::detail::tl_op_observer = nullptr;
    default_generator().set_state(rng_);
}

GRAFT_INLINE output_info alias_info(const Tensor& out, const std::vector<Tensor>& in) {
    output_info info;
    for (std::size_t k = 0; k < in.size(); ++k) {
        if (storage_key(out) != storage_key(in[k])) continue;
        info.input = k;
        info.input_strides = in[k].strides();
        if (same_geometry(out, in[k])) {
            info.kind = output_kind::alias_of_input;
            return info;  // the input itself (among inputs sharing memory, this one)
        } else {
            info.kind = output_kind::view_of_input;
            info.sizes = out.sizes();
            info.strides = out.strides();
            info.offset = out.storage_offset() - in[k].storage_offset();
        }
    }
    return info;
}

GRAFT_INLINE Tensor recreate_output(const output_info& o, std::size_t i, const Tensor& computed,
                                    std::span<const Tensor> inputs) {
    if (o.kind == output_kind::fresh) return computed;
    const Tensor& in = inputs[o.input];
    if (o.kind == output_kind::alias_of_input) return in;
    graft::detail::check(in.strides() == o.input_strides, "capture: output ", i, " is a view of input ", o.input,
                         ", which had strides ", o.input_strides, " when captured but has ", in.strides(),
                         " now; recapture for this layout");
    return in.as_strided(o.sizes, o.strides, in.storage_offset() + o.offset);
}

GRAFT_INLINE traced_inputs copy_inputs(const std::vector<Tensor>& examples, const char* who) {
    traced_inputs r;
    const std::size_t n = examples.size();
    for (std::size_t i = 0; i < n; ++i)
        graft::detail::check(examples[i].defined(), who, ": example input ", i, " is undefined");
    // Inputs sharing a storage form one group (sharing is storage identity, so transitive).
    std::vector<int> group_of(n, -1);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t k = 0; k < i; ++k) {
            if (!examples[i].shares_storage_with(examples[k])) continue;
            if (group_of[k] < 0) {
                group_of[k] = static_cast<int>(r.groups.size());
                r.groups.emplace_back().members.push_back(k);
            }
            group_of[i] = group_of[k];
            r.groups[static_cast<std::size_t>(group_of[i])].members.push_back(i);
            break;
        }
    // Each group's memory, from its lowest to its highest element, copied once: the members
    // become views of the copy with their own geometry.
    std::vector<Tensor> bases;
    for (std::size_t gi = 0; gi < r.groups.size(); ++gi) {
        alias_group& g = r.groups[gi];
        const Tensor& first = examples[g.members[0]];
        std::int64_t lo = first.storage_offset(), hi = lo;
        bool grad = false;
        for (std::size_t m : g.members) {
            const Tensor& e = examples[m];
            graft::detail::check(e.type() == first.type(), who, ": example inputs ", g.members[0], " and ", m,
                                 " share memory but have different dtypes (", first.type(), ", ", e.type(), ")");
            const std::int64_t extent = autograd::detail::storage_extent(autograd::detail::geometry_of(e));
            lo = std::min(lo, e.storage_offset());
            hi = std::max(hi, e.storage_offset() + extent);
            grad = grad || e.requires_grad();
        }
        g.numel = hi - lo;
        Tensor base = graft::detail::raw::clone(graft::detail::raw::as_strided(first.detach(), {g.numel}, {1}, lo));
        if (grad) base.requires_grad_();
        for (std::size_t m : g.members) {
            const Tensor& e = examples[m];
            g.offsets.push_back(e.storage_offset() - lo);
            g.sizes.push_back(e.sizes());
            g.strides.push_back(e.strides());
        }
        bases.push_back(std::move(base));
    }
    for (std::size_t i = 0; i < n; ++i) {
        const Tensor& e = examples[i];
        if (group_of[i] < 0) {
            Tensor c = graft::detail::raw::clone(e.detach());
            if (e.requires_grad()) c.requires_grad_();
            r.copies.push_back(c);
            r.graph_inputs.push_back(c);
            if (!r.groups.empty()) r.graph_input_sources.push_back(i);
            continue;
        }
        const auto gi = static_cast<std::size_t>(group_of[i]);
        const alias_group& g = r.groups[gi];
        const Tensor& base = bases[gi];
        std::size_t k = 0;
        while (g.members[k] != i) ++k;
        // A differentiable view when the base requires grad, so eager code inside f sees what
        // it would see on the caller's aliased tensors.
        r.copies.push_back(base.as_strided(g.sizes[k], g.strides[k], g.offsets[k]));
        if (k == 0) {
            r.graph_inputs.push_back(base);
            r.graph_input_sources.push_back(n + gi);
        }
    }
    return r;
}

}  // namespace detail

namespace detail {

/// The alias group input `i` belongs to, or -1.
[[nodiscard]] inline int group_of_input(const graph_meta& m, std::size_t i) {
    for (std::size_t g = 0; g < m.alias_groups.size(); ++g)
        for (std::size_t k : m.alias_groups[g].members)
            if (k == i) return static_cast<int>(g);
    return -1;
}

[[nodiscard]] inline std::string describe_aliasing(const graph_meta& m) {
    if (m.alias_groups.empty()) return "no two inputs shared memory";
    std::string r;
    for (const alias_group& g : m.alias_groups) {
        r += r.empty() ? "inputs " : "; inputs ";
        for (std::size_t k = 0; k < g.members.size(); ++k) {
            if (k) r += ", ";
            r += std::to_string(g.members[k]);
        }
        r += " shared memory";
    }
    return r;
}

}  // namespace detail

GRAFT_INLINE bool graph_meta::aliasing_matches(std::span<const Tensor> inputs) const {
    if (inputs.size() != num_inputs) return false;
    if (alias_groups.empty() && mutated_inputs.empty()) return true;
    for (const alias_group& g : alias_groups) {
        const Tensor& a = inputs[g.members[0]];
        if (!a.defined()) return false;
        for (std::size_t k = 0; k < g.members.size(); ++k) {
            const Tensor& m = inputs[g.members[k]];
            if (!m.defined() || !m.shares_storage_with(a) || m.type() != a.type() || m.sizes() != g.sizes[k] ||
                m.strides() != g.strides[k] || m.storage_offset() - a.storage_offset() != g.offsets[k] - g.offsets[0])
                return false;
        }
    }
    if (mutated_inputs.empty()) return true;
    // The graph writes: inputs captured apart must not share memory.
    for (std::size_t i = 0; i < inputs.size(); ++i)
        for (std::size_t k = 0; k < i; ++k) {
            if (!inputs[i].defined() || !inputs[k].defined() || !inputs[i].shares_storage_with(inputs[k])) continue;
            const int gi = detail::group_of_input(*this, i);
            if (gi < 0 || gi != detail::group_of_input(*this, k)) return false;
        }
    return true;
}

GRAFT_INLINE std::vector<Tensor> graph_meta::graph_arguments(std::span<const Tensor> inputs) const {
    graft::detail::check(inputs.size() == num_inputs, "capture: the captured function takes ", num_inputs,
                         " inputs, got ", inputs.size());
    if (!aliasing_matches(inputs)) {
        std::string now;
        for (std::size_t i = 0; i < inputs.size(); ++i)
            for (std::size_t k = 0; k < i; ++k)
                if (inputs[i].defined() && inputs[k].defined() && inputs[i].shares_storage_with(inputs[k])) {
                    now += now.empty() ? "inputs " : ", ";
                    now += std::to_string(k);
                    now += " and ";
                    now += std::to_string(i);
                }
        graft::detail::fail(graft::detail::concat(
            "capture: the inputs share memory differently from the examples the function was captured with (then: ",
            detail::describe_aliasing(*this), "; now: ", now.empty() ? std::string("no two inputs share memory") : now + " share memory",
            ", or with another geometry); the graph would compute a wrong result: capture again with inputs "
            "aliased like these (jit::script does so by itself)"));
    }
    if (graph_inputs.empty()) {
        std::vector<Tensor> args(inputs.begin(), inputs.end());
        args.insert(args.end(), lifted.begin(), lifted.end());
        return args;
    }
    std::vector<Tensor> args;
    args.reserve(graph_inputs.size() + lifted.size());
    for (std::size_t src : graph_inputs) {
        if (src < num_inputs) {
            args.push_back(inputs[src]);
            continue;
        }
        const alias_group& g = alias_groups[src - num_inputs];
        const Tensor& first = inputs[g.members[0]];
        // The base is a view of the caller's memory; taken from the root of a differentiable
        // view, so that gradients reach the tensor the members are views of.
        Tensor root = first;
        if (const auto* vm = autograd::detail::tracked_view(first)) root = vm->base;
        args.push_back(root.as_strided({g.numel}, {1}, first.storage_offset() - g.offsets[0]));
    }
    args.insert(args.end(), lifted.begin(), lifted.end());
    return args;
}

GRAFT_INLINE std::vector<Tensor> captured::operator()(const std::vector<Tensor>& inputs) const {
    graft::detail::check(inputs.size() == meta_.num_inputs, "capture: the captured function takes ",
                         meta_.num_inputs, " inputs, got ", inputs.size());
    return finish(inputs, ir::interpret(*graph_, meta_.graph_arguments(inputs)));
}

GRAFT_INLINE std::vector<Tensor> captured::finish(std::span<const Tensor> inputs, std::vector<Tensor> outs) const {
    finish_in_place(inputs, outs);
    return outs;
}

GRAFT_INLINE void captured::finish_in_place(std::span<const Tensor> inputs, std::vector<Tensor>& outs) const {
    graft::detail::check(outs.size() == meta_.num_user_outputs + meta_.mutated_inputs.size(),
                         "capture: the graph gave ", outs.size(), " outputs, expected ",
                         meta_.num_user_outputs + meta_.mutated_inputs.size());
    if (!meta_.mutated_inputs.empty()) {
        const std::vector<Tensor> args = meta_.graph_inputs.empty() ? std::vector<Tensor>{} : meta_.graph_arguments(inputs);
        for (std::size_t k = 0; k < meta_.mutated_inputs.size(); ++k) {
            Tensor dst = args.empty() ? inputs[meta_.mutated_inputs[k]] : args[meta_.mutated_inputs[k]];
            dst.copy_(outs[meta_.num_user_outputs + k]);
        }
    }
    // In place: outputs are fresh tensors or recreated from the inputs; the written-back
    // values of mutated inputs are dropped.
    for (std::size_t i = 0; i < meta_.num_user_outputs; ++i)
        if (meta_.outputs[i].kind != output_kind::fresh)
            outs[i] = detail::recreate_output(meta_.outputs[i], i, outs[i], inputs);
    outs.resize(meta_.num_user_outputs);
}

namespace detail {

GRAFT_INLINE captured trace_impl(const std::vector<Tensor>& example_inputs, traced_fn f) {
    auto g = std::make_shared<ir::Graph>();
    detail::tracer tr(*g);
    tr.lift_grad_tensors(true);
    // Work on copies, so tracing never writes into the caller's examples.
    traced_inputs ti = copy_inputs(example_inputs, "capture::trace");
    const std::vector<Tensor>& in = ti.copies;
    graph_meta meta;
    meta.num_inputs = in.size();
    meta.alias_groups = ti.groups;
    meta.graph_inputs = ti.graph_input_sources;
    std::vector<Tensor> outs;
    {
        detail::observer_scope scope(&tr);
        for (std::size_t j = 0; j < ti.graph_inputs.size(); ++j) {
            tr.add_input(ti.graph_inputs[j], j);
            if (!meta.graph_inputs.empty() && meta.graph_inputs[j] >= meta.num_inputs) {
                std::string name = "base";
                name += std::to_string(meta.graph_inputs[j] - meta.num_inputs);
                g->set_name(g->inputs().back(), std::move(name));
            }
        }
        outs = f(in);
        meta.num_user_outputs = outs.size();
        for (std::size_t i = 0; i < outs.size(); ++i) {
            graft::detail::check(outs[i].defined(), "capture::trace: output ", i, " is undefined");
            const output_info info = detail::alias_info(outs[i], in);
            meta.outputs.push_back(info);
            g->register_output(tr.value_of(outs[i]));
        }
        for (std::size_t j = 0; j < ti.graph_inputs.size(); ++j) {
            const auto [value, mutated] = tr.input_state(ti.graph_inputs[j]);
            if (!mutated) continue;
            meta.mutated_inputs.push_back(j);
            g->register_output(value);
        }
        meta.lifted = tr.take_lifted();
        for (const Tensor& t : meta.lifted)
            graft::detail::check(!tr.input_state(t).second, "capture: the function writes into a tensor that requires "
                                                            "grad and is not one of its inputs; pass it as an input");
    }
    ir::dce::run(*g);
    ir::detail::lint_own_graph(*g);
    return captured(std::move(g), std::move(meta), tr.take_size_hints());
}

}  // namespace detail

}  // namespace graft::capture
