#pragma once
// Definitions for graft/capture/aot.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/capture/aot.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string>

namespace graft::capture {

namespace detail {

GRAFT_INLINE std::vector<input_signature> signature_of(const std::vector<Tensor>& inputs) {
    std::vector<input_signature> r;
    r.reserve(inputs.size());
    for (const Tensor& t : inputs) r.push_back({t.type(), t.sizes(), t.requires_grad()});
    return r;
}

GRAFT_INLINE std::string describe_signature(const std::vector<input_signature>& s) {
    std::string r;
    for (std::size_t i = 0; i < s.size(); ++i) {
        ir::TensorType t;
        t.scalar_type = s[i].type;
        t.sizes.emplace(s[i].sizes.begin(), s[i].sizes.end());
        if (s[i].requires_grad) t.requires_grad = true;
        if (i) r += ", ";
        r += ir::to_string(ir::Type::tensor_type(std::move(t)));
    }
    return r;
}

}  // namespace detail

GRAFT_INLINE bool aot_function::admits(const std::vector<Tensor>& inputs) const {
    if (inputs.size() != signature.size()) return false;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const Tensor& t = inputs[i];
        const detail::input_signature& s = signature[i];
        if (!t.defined() || t.type() != s.type || (t.requires_grad() && !s.requires_grad)) return false;
        if (size_groups.empty()) {
            if (t.sizes() != s.sizes) return false;
            continue;
        }
        if (t.sizes().size() != s.sizes.size()) return false;
        for (std::size_t d = 0; d < s.sizes.size(); ++d) {
            bool dynamic = false;
            for (const auto& grp : size_groups)
                for (const auto& [gi, gd] : grp) dynamic = dynamic || (gi == i && gd == d);
            if (dynamic ? t.sizes()[d] < 2 : t.sizes()[d] != s.sizes[d]) return false;
        }
    }
    for (const auto& grp : size_groups)  // one symbol, one size
        for (const auto& [gi, gd] : grp)
            if (inputs[gi].sizes()[gd] != inputs[grp[0].first].sizes()[grp[0].second]) return false;
    // SymInt expressions that were constant over the traced sizes hold that value here too.
    if (forward_sizes && meta.graph_inputs.empty() && !forward_sizes->guards_hold(inputs)) return false;
    return true;
}

GRAFT_INLINE std::size_t aot_function::recaptures() const {
    if (!recapture) return 0;
    std::lock_guard lock(recapture->mutex);
    return recapture->cache.size();
}

GRAFT_INLINE std::vector<Tensor> aot_function::operator()(const std::vector<Tensor>& inputs) const {
    graft::detail::check(inputs.size() == num_inputs, "capture::aot: the function takes ", num_inputs,
                         " inputs, got ", inputs.size());
    if (!signature.empty() && !admits(inputs)) {
        for (std::size_t i = 0; i < inputs.size(); ++i)
            graft::detail::check(inputs[i].defined(), "capture::aot: input ", i, " is undefined");
        const auto sig = detail::signature_of(inputs);
        graft::detail::check(recapture != nullptr, "capture::aot: the graphs were captured for (",
                             detail::describe_signature(signature), "), got (", detail::describe_signature(sig),
                             "); capture again for these inputs");
        std::shared_ptr<const aot_function> other;
        {
            std::lock_guard lock(recapture->mutex);
            for (const auto& [s, fn] : recapture->cache)
                if (fn->admits(inputs)) other = fn;
            if (!other && recapture->cache.size() < detail::aot_recapture::max_signatures) {
                aot_options opts = recapture->options;  // dynamic dimensions stay dynamic where they can
                bool keep = true;
                for (const auto& [i, d] : opts.dynamic_dims)
                    keep = keep && d < inputs[i].sizes().size() && inputs[i].sizes()[d] >= 2;
                if (!keep) opts.dynamic_dims.clear();
                auto fn = std::make_shared<aot_function>(
                    detail::aot_impl(inputs, detail::traced_fn::of(recapture->f), opts));
                fn->node_name = node_name;
                recapture->cache.emplace_back(sig, fn);
                other = std::move(fn);
            }
        }
        if (!other) return recapture->f(inputs);  // past max_signatures: eager
        return (*other)(inputs);
    }
    // The graphs' inputs: the function's, or with alias groups their bases (inputs that share
    // memory the way the examples did; otherwise a graft::error, never a wrong result).
    const std::vector<Tensor> args_storage = meta.graph_inputs.empty() && meta.mutated_inputs.empty()
                                                 ? std::vector<Tensor>{}
                                                 : meta.graph_arguments(inputs);
    const std::vector<Tensor>& args = meta.graph_inputs.empty() ? inputs : args_storage;
    std::vector<Tensor> results;
    {
        autograd::no_grad guard;
        if (!forward_runner || !backward_runner)
            std::call_once(programs->once, [&] {
                programs->forward = std::make_shared<const ir::prepared_graph>(forward, forward_sizes);
                programs->backward = std::make_shared<const ir::prepared_graph>(backward, backward_sizes);
            });
        results = forward_runner ? forward_runner(args) : programs->forward->run_tensors(args);
    }
    const std::size_t n_mut = meta.mutated_inputs.size();
    for (std::size_t k = 0; k < n_mut; ++k) {
        autograd::no_grad guard;  // only inputs that do not require grad may be written (checked at capture)
        Tensor dst = args[meta.mutated_inputs[k]];
        dst.copy_(results[num_outputs + k]);
    }
    std::vector<Tensor> outs;
    outs.reserve(num_outputs);
    for (std::size_t i = 0; i < num_outputs; ++i)
        outs.push_back(detail::recreate_output(meta.outputs[i], i, results[i], inputs));
    bool needs_node = autograd::is_grad_enabled();
    bool any = false;
    for (std::size_t i : grad_inputs) any = any || args[i].requires_grad();
    if (!needs_node || !any) return outs;
    auto node = std::allocate_shared<autograd::function_node>(graft::detail::pool_allocator<autograd::function_node>{},
                                                              node_name);
    for (std::size_t i : grad_inputs) node->add_next_edge(autograd::detail::gradient_edge(args[i]));
    node->reserve_saved(num_saved);
    // Saved as aliases without history (the same storage and version counter): a saved value
    // that is also an output (tanh's result) would otherwise hold this node through its
    // grad_fn, a cycle that leaked the node and its saved tensors whenever the outputs were
    // dropped without a backward (PyTorch's SavedVariable saves outputs so, for that reason).
    for (std::size_t k = 0; k < num_saved; ++k) node->save(results[num_outputs + n_mut + k].detach());
    // A symbolic backward may compute sizes from the forward's input sizes (ir::size_symbol::context).
    std::vector<int_list> context;
    if (backward_sizes && backward_sizes->uses_context())
        for (const Tensor& a : args) context.push_back(a.sizes());
    node->backward = [progs = programs, run = backward_runner, n_saved = num_saved,
                      context = std::move(context), reaches = reaches](autograd::function_node& n,
                                                                       const autograd::tensor_list& g) {
        // The saved values carry no history, so a backward that records (create_graph)
        // would silently drop second-order terms: refused, as AOTAutograd does.
        if (autograd::is_grad_enabled()) [[unlikely]]
            graft::detail::fail_with(n.name(), ": double backward (create_graph=true) through a compiled graph is "
                                     "not supported; differentiate the eager function instead");
        // Outputs the caller did not differentiate get zeros of their recorded sizes and dtype
        // (the node keeps those, not the outputs: it must not own them).
        std::vector<Tensor> in;
        in.reserve(n_saved + n.num_outputs());
        for (std::size_t k = 0; k < n_saved; ++k) in.push_back(n.saved(k));
        for (std::size_t k = 0; k < n.num_outputs(); ++k) {
            const auto& out = n.output_metadata(k);
            in.push_back(k < g.size() && g[k].defined() ? g[k] : zeros(out.sizes, out.type));
        }
        const ir::size_context_scope sizes_of_forward(context);
        std::vector<Tensor> r;
        if (run) r = (*run)(in);
        else r = progs->backward->run_tensors(in);  // prepared by the forward call
        // An input that none of the differentiated outputs reaches gets no gradient (undefined).
        for (std::size_t k = 0; k < reaches.size() && k < r.size(); ++k) {
            bool any = false;
            for (std::size_t o = 0; o < reaches[k].size() && !any; ++o) any = reaches[k][o] && o < g.size() && g[o].defined();
            if (!any) r[k] = Tensor();
        }
        return r;
    };
    for (std::size_t o : differentiable_outputs) autograd::detail::set_history(outs[o], node);
    return outs;
}

namespace detail {

GRAFT_INLINE void partition(const ir::Graph& joint, std::size_t n_in, std::size_t n_out, partition_policy policy,
                            aot_function& r) {
    // Joint outputs: the n_out outputs, then the new values of mutated inputs (forward
    // outputs too), then the input gradients.
    const std::size_t n_fwd_out = n_out + r.meta.mutated_inputs.size();
    const ir::Block& top = *joint.block();
    // What a node reads: its inputs and, for If/Loop, the outer values its blocks use.
    const auto reads = [](const ir::Node* n) {
        std::vector<const ir::Value*> out(n->inputs().begin(), n->inputs().end());
        std::set<const ir::Value*> inside;
        const auto walk = [&](const ir::Block& b, auto& self) -> void {
            for (const ir::Value* v : b.inputs()) inside.insert(v);
            for (const ir::Node* m : b.nodes()) {
                for (const ir::Value* v : m->inputs())
                    if (!inside.count(v)) out.push_back(v);
                for (const ir::Block* sub : m->blocks()) self(*sub, self);
                for (const ir::Value* v : m->outputs()) inside.insert(v);
            }
            for (const ir::Value* v : b.outputs())
                if (!inside.count(v)) out.push_back(v);
        };
        for (const ir::Block* b : n->blocks()) walk(*b, walk);
        return out;
    };
    // Values that depend on a tangent are backward values.
    std::set<const ir::Value*> bwd_values(joint.inputs().begin() + static_cast<std::ptrdiff_t>(n_in),
                                          joint.inputs().end());
    std::vector<const ir::Node*> fwd_nodes, bwd_nodes;
    for (const ir::Node* n : top.nodes()) {
        bool depends = false;
        for (const ir::Value* v : reads(n)) depends = depends || bwd_values.count(v);
        if (depends) {
            bwd_nodes.push_back(n);
            for (const ir::Value* v : n->outputs()) bwd_values.insert(v);
        } else {
            fwd_nodes.push_back(n);
        }
    }
    // Forward nodes the outputs do not need run in the backward instead (nothing to save for them).
    std::set<const ir::Node*> for_outputs;
    std::vector<const ir::Value*> stack(joint.outputs().begin(),
                                        joint.outputs().begin() + static_cast<std::ptrdiff_t>(n_fwd_out));
    while (!stack.empty()) {
        const ir::Value* v = stack.back();
        stack.pop_back();
        if (v->node() && v->node()->owning_block() == &top && for_outputs.insert(v->node()).second)
            for (const ir::Value* in : reads(v->node())) stack.push_back(in);
    }
    {
        std::vector<const ir::Node*> kept;
        for (const ir::Node* n : fwd_nodes) {
            if (for_outputs.count(n) || n->is<ir::kinds::constant>()) {
                kept.push_back(n);
                continue;
            }
            bwd_nodes.push_back(n);
            for (const ir::Value* v : n->outputs()) bwd_values.insert(v);
        }
        fwd_nodes = std::move(kept);
    }
    const auto is_constant = [](const ir::Value* v) { return v->node() && v->node()->is<ir::kinds::constant>(); };
    // Forward values the backward reads (and input gradients that are forward values).
    std::vector<const ir::Value*> needed;
    const auto need = [&](const ir::Value* v) {
        if (!bwd_values.count(v) && std::find(needed.begin(), needed.end(), v) == needed.end()) needed.push_back(v);
    };
    for (const ir::Node* n : bwd_nodes)
        for (const ir::Value* v : reads(n)) need(v);
    for (std::size_t i = n_fwd_out; i < joint.outputs().size(); ++i) need(joint.outputs()[i]);
    // Decide what to save and what the backward recomputes.
    std::vector<const ir::Value*> saved;
    std::set<const ir::Node*> recompute;
    std::vector<const ir::Value*> work = needed;
    while (!work.empty()) {
        const ir::Value* v = work.back();
        work.pop_back();
        if (is_constant(v)) {
            recompute.insert(v->node());  // constants are copied, never saved
            continue;
        }
        const bool elementwise = v->node() && v->node()->kind().elementwise && v->node()->owning_block() == &top;
        // A bool mask computed elementwise from values the backward reads anyway, or constants
        // (relu's or clamp's `x > 0` of a saved x): recomputed rather than saved, which costs
        // one comparison and lets the backward's fusion group compute the mask in registers
        // (a bool input would end the group).
        const bool cheap_mask = elementwise && v->type().is_tensor() &&
                                v->type().tensor.scalar_type == std::optional<dtype>(dtype::bool_) &&
                                std::all_of(v->node()->inputs().begin(), v->node()->inputs().end(), [&](const ir::Value* in) {
                                    return is_constant(in) || std::find(needed.begin(), needed.end(), in) != needed.end();
                                });
        if ((policy == partition_policy::recompute_elementwise && elementwise) || cheap_mask) {
            if (recompute.insert(v->node()).second)
                for (const ir::Value* in : v->node()->inputs()) work.push_back(in);
            continue;
        }
        if (std::find(saved.begin(), saved.end(), v) == saved.end()) saved.push_back(v);
    }
    // Saved values in order of definition (inputs first), for readable graphs.
    std::map<const ir::Value*, std::size_t> order;
    for (const ir::Value* v : joint.inputs()) order.emplace(v, order.size());
    for (const ir::Node* n : top.nodes())
        for (const ir::Value* v : n->outputs()) order.emplace(v, order.size());
    std::sort(saved.begin(), saved.end(), [&](auto* a, auto* b) { return order.at(a) < order.at(b); });

    // Copies n (and the blocks of an If or Loop) into `dst`, mapping values through `map`.
    const auto copy_into = [](ir::Block& dst, const ir::Node* n, std::map<const ir::Value*, ir::Value*>& map,
                              auto& self) -> void {
        ir::Graph& g = dst.owning_graph();
        ir::Node* c = dst.append(n->kind());
        for (const auto& [name, value] : n->attributes()) c->set_attr(name, value);
        for (const ir::Value* in : n->inputs()) c->add_input(map.at(in));
        for (const ir::Block* sub : n->blocks()) {
            ir::Block* nb = c->add_block();
            for (const ir::Value* p : sub->inputs()) map[p] = nb->add_input(p->type(), p->name());
            for (const ir::Node* m : sub->nodes()) self(*nb, m, map, self);
            for (const ir::Value* o : sub->outputs()) nb->register_output(map.at(o));
        }
        for (const ir::Value* out : n->outputs()) {
            ir::Value* v = c->add_output(out->type());
            g.set_name(v, out->name());
            map[out] = v;
        }
    };
    const auto copy_node = [&copy_into](ir::Graph& g, const ir::Node* n, std::map<const ir::Value*, ir::Value*>& map) {
        copy_into(*g.block(), n, map, copy_into);
    };

    // Forward graph: inputs -> outputs + saved.
    auto fwd = std::make_shared<ir::Graph>();
    std::map<const ir::Value*, ir::Value*> fmap;
    for (std::size_t i = 0; i < n_in; ++i)
        fmap[joint.inputs()[i]] = fwd->add_input(joint.inputs()[i]->type(), joint.inputs()[i]->name());
    for (const ir::Node* n : fwd_nodes) copy_node(*fwd, n, fmap);
    for (std::size_t i = 0; i < n_fwd_out; ++i) fwd->register_output(fmap.at(joint.outputs()[i]));
    for (const ir::Value* v : saved) fwd->register_output(fmap.at(v));
    ir::dce::run(*fwd);
    ir::detail::lint_own_graph(*fwd);

    // Backward graph: saved + tangents -> input gradients.
    auto bwd = std::make_shared<ir::Graph>();
    std::map<const ir::Value*, ir::Value*> bmap;
    for (const ir::Value* v : saved) bmap[v] = bwd->add_input(v->type(), v->name());
    for (std::size_t i = n_in; i < joint.inputs().size(); ++i)
        bmap[joint.inputs()[i]] = bwd->add_input(joint.inputs()[i]->type(), joint.inputs()[i]->name());
    for (const ir::Node* n : top.nodes())
        if (recompute.count(n) || std::find(bwd_nodes.begin(), bwd_nodes.end(), n) != bwd_nodes.end())
            copy_node(*bwd, n, bmap);
    for (std::size_t i = n_fwd_out; i < joint.outputs().size(); ++i) bwd->register_output(bmap.at(joint.outputs()[i]));
    ir::dce::run(*bwd);
    ir::detail::lint_own_graph(*bwd);

    r.forward = std::move(fwd);
    r.backward = std::move(bwd);
    r.num_saved = saved.size();
}

GRAFT_INLINE dynamic_groups group_dynamic_dims(const std::vector<Tensor>& examples,
                                              const std::vector<std::pair<std::size_t, std::size_t>>& dims) {
    dynamic_groups g;
    for (const auto& [i, d] : dims) {
        const std::int64_t v = examples[i].sizes()[d];
        std::size_t k = 0;
        while (k < g.values.size() && g.values[k] != v) ++k;
        if (k == g.values.size()) {
            g.values.push_back(v);
            g.dims.emplace_back();
        }
        bool dup = false;
        for (const auto& p : g.dims[k]) dup = dup || p == std::pair{i, d};
        if (!dup) g.dims[k].emplace_back(i, d);
    }
    return g;
}

GRAFT_INLINE std::vector<std::vector<Tensor>> perturbed_examples(const std::vector<Tensor>& examples,
                                                                 const dynamic_groups& groups, int rounds) {
    std::set<std::int64_t> used;
    for (const Tensor& e : examples)
        for (std::int64_t d : e.sizes()) used.insert(d);
    std::vector<std::vector<Tensor>> r;
    for (int round = 1; round <= rounds; ++round) {
        std::vector<int_list> sizes;
        for (const Tensor& e : examples) sizes.push_back(e.sizes());
        for (std::size_t k = 0; k < groups.values.size(); ++k) {
            std::int64_t v = groups.values[k] + round;
            while (used.count(v)) ++v;
            used.insert(v);
            for (const auto& [i, d] : groups.dims[k]) sizes[i][d] = v;
        }
        std::vector<Tensor> ex;
        for (std::size_t i = 0; i < examples.size(); ++i) {
            if (sizes[i] == examples[i].sizes()) {
                ex.push_back(examples[i]);
                continue;
            }
            Tensor z = zeros(sizes[i], examples[i].type());
            if (examples[i].requires_grad()) z.requires_grad_();
            ex.push_back(std::move(z));
        }
        r.push_back(std::move(ex));
    }
    return r;
}

GRAFT_INLINE aot_function aot_impl(const std::vector<Tensor>& example_inputs, traced_fn f, aot_options options) {
    if (!options.dynamic_dims.empty()) {
        for (const auto& [i, d] : options.dynamic_dims) {
            graft::detail::check(i < example_inputs.size() && example_inputs[i].defined() &&
                                     d < example_inputs[i].sizes().size(),
                                 "capture::aot: dynamic dimension ", d, " of input ", i, " does not exist");
            graft::detail::check(example_inputs[i].sizes()[d] >= 2, "capture::aot: dynamic dimension ", d,
                                 " of input ", i, " has size ", example_inputs[i].sizes()[d],
                                 " in the example; sizes 0 and 1 are specialized: give an example of size 2 or more");
        }
        aot_options exact = options;
        exact.dynamic_dims.clear();
        aot_function r = aot_impl(example_inputs, f, exact);
        const dynamic_groups groups = group_dynamic_dims(example_inputs, options.dynamic_dims);
        std::vector<aot_function> others;
        {
            const made_up_values_scope made_up;  // zeros at other sizes: run no user loop on them
            for (const auto& ex : perturbed_examples(example_inputs, groups, 2)) others.push_back(aot_impl(ex, f, exact));
        }
        std::string why;
        const std::vector<ir::size_hint> hints =
            ir::merge_size_hints({&r.size_hints, &others[0].size_hints, &others[1].size_hints});
        auto fs = ir::infer_symbolic_sizes(*r.forward, {others[0].forward.get(), others[1].forward.get()}, why, hints);
        auto bs = fs ? ir::infer_symbolic_sizes(*r.backward, {others[0].backward.get(), others[1].backward.get()}, why,
                                                hints, {r.forward.get(), others[0].forward.get(), others[1].forward.get()})
                     : std::nullopt;
        graft::detail::check(fs && bs, "capture::aot: the dynamic dimensions cannot be symbolic: ", why,
                             " (capture without dynamic_dims: one capture per size)");
        fs->relax_input_types(*r.forward);
        bs->relax_input_types(*r.backward);
        r.forward_sizes = std::make_shared<const ir::symbolic_sizes>(std::move(*fs));
        r.backward_sizes = std::make_shared<const ir::symbolic_sizes>(std::move(*bs));
        r.size_groups = groups.dims;
        return r;
    }
    aot_function r;
    auto joint = std::make_shared<ir::Graph>();
    detail::tracer tr(*joint);
    traced_inputs ti = copy_inputs(example_inputs, "capture::aot");
    for (const alias_group& g : ti.groups)
        for (std::size_t m : g.members)
            graft::detail::check(!example_inputs[m].requires_grad(), "capture::aot: example input ", m,
                                 " shares memory with input ", m == g.members[0] ? g.members[1] : g.members[0],
                                 " and requires grad; aliased inputs that require grad are supported by "
                                 "jit::script, not by capture::aot yet (pass distinct tensors)");
    const std::vector<Tensor>& in = ti.copies;  // the function's inputs
    const std::vector<Tensor>& gin = ti.graph_inputs;  // the graphs' inputs
    for (std::size_t j = 0; j < gin.size(); ++j)
        if (gin[j].requires_grad()) r.grad_inputs.push_back(j);
    r.num_inputs = in.size();
    r.signature = signature_of(example_inputs);
    r.meta.alias_groups = ti.groups;
    r.meta.graph_inputs = ti.graph_input_sources;
    {
        autograd::enable_grad grad_on;
        detail::observer_scope scope(&tr);
        for (std::size_t j = 0; j < gin.size(); ++j) {
            tr.add_input(gin[j], j);
            if (!r.meta.graph_inputs.empty() && r.meta.graph_inputs[j] >= in.size()) {
                std::string name = "base";
                name += std::to_string(r.meta.graph_inputs[j] - in.size());
                joint->set_name(joint->inputs().back(), std::move(name));
            }
        }
        std::vector<Tensor> outs = f(in);
        r.num_outputs = outs.size();
        r.meta.num_inputs = in.size();
        r.meta.num_user_outputs = outs.size();
        for (std::size_t j = 0; j < gin.size(); ++j) {
            if (!tr.input_state(gin[j]).second) continue;
            graft::detail::check(!gin[j].requires_grad(), "capture::aot: the function writes into input ",
                                 r.meta.graph_inputs.empty() ? j : r.meta.graph_inputs[j],
                                 ", which requires grad; only inputs that do not require grad (buffers) may be "
                                 "updated in place");
            r.meta.mutated_inputs.push_back(j);
        }
        std::vector<Tensor> diff_outs, tangents;
        for (std::size_t i = 0; i < outs.size(); ++i) {
            graft::detail::check(outs[i].defined(), "capture::aot: output ", i, " is undefined");
            const output_info info = detail::alias_info(outs[i], in);
            r.meta.outputs.push_back(info);
            if (info.kind != output_kind::fresh) {
                graft::detail::check(!in[info.input].requires_grad(), "capture::aot: output ", i,
                                     " aliases input ", info.input, ", which requires grad; return a clone (views of "
                                     "inputs that require grad are not supported by aot yet)");
                continue;
            }
            if (!outs[i].requires_grad()) continue;
            r.differentiable_outputs.push_back(i);
            diff_outs.push_back(outs[i]);
            Tensor t = ones(outs[i].sizes(), outs[i].type());
            tr.add_input(t, gin.size() + tangents.size());
            std::string name = "g";
            name += std::to_string(tangents.size());
            joint->set_name(joint->inputs().back(), std::move(name));
            tangents.push_back(t);
        }
        for (const Tensor& o : outs) joint->register_output(tr.value_of(o));
        for (std::size_t j : r.meta.mutated_inputs) joint->register_output(tr.input_state(gin[j]).first);
        std::vector<autograd::grad_input> wrt;
        for (std::size_t j : r.grad_inputs) wrt.emplace_back(gin[j]);
        std::vector<Tensor> grads;
        if (!wrt.empty() && !diff_outs.empty())
            grads = autograd::grad(diff_outs, wrt, tangents, false, false, /*allow_unused=*/true);
        // Inputs the outputs do not depend on get no gradient (undefined, as eagerly: an
        // optimizer skips them), not zeros: they leave grad_inputs, and the node has no edge
        // to them.
        std::vector<std::size_t> used;
        for (std::size_t k = 0; k < r.grad_inputs.size(); ++k) {
            if (k >= grads.size() || !grads[k].defined()) continue;
            used.push_back(r.grad_inputs[k]);
            joint->register_output(tr.value_of(grads[k]));  // grads[k] itself: a detached alias would read as take
        }
        r.grad_inputs = std::move(used);
        // Which outputs reach which grad inputs (through the traced autograd graph): a call
        // that differentiates some outputs only gives no gradient to inputs only others reach.
        std::vector<std::set<const autograd::Node*>> reached;
        for (const Tensor& o : diff_outs) {
            std::set<const autograd::Node*> seen;
            std::vector<const autograd::Node*> stack;
            if (o.grad_fn()) stack.push_back(o.grad_fn().get());
            while (!stack.empty()) {
                const autograd::Node* n = stack.back();
                stack.pop_back();
                if (!seen.insert(n).second) continue;
                for (const autograd::Edge& e : n->next_functions())
                    if (e.function) stack.push_back(e.function.get());
            }
            reached.push_back(std::move(seen));
        }
        bool all = true;
        for (std::size_t j : r.grad_inputs) {
            const autograd::Edge e = autograd::detail::gradient_edge(gin[j]);
            std::vector<bool> row;
            for (const auto& seen : reached) row.push_back(e.function && seen.count(e.function.get()) != 0);
            all = all && std::all_of(row.begin(), row.end(), [](bool b) { return b; });
            r.reaches.push_back(std::move(row));
        }
        if (all) r.reaches.clear();  // the usual case: nothing to check per call
    }
    // The IR's clean-up before partitioning, so that equal values are computed and saved once
    // ((p - y) * (p - y) traces two subs) and views that change nothing (the backward's
    // reshape to the same sizes) are gone. Values are unchanged bit for bit;
    // contiguous_results: a linear layer's weight and bias gradients come out as fresh
    // contiguous tensors, not views (transpose, reshape) that AccumulateGrad would copy;
    // lower_clamp: clamps become maximum / minimum, which jit's fusion groups hold;
    // narrow_backwards_to_cat: chunk's and split's backward (pieces embedded in zeros, then
    // added) becomes one cat.
    ir::pipeline<ir::cse, ir::remove_noop_views, ir::contiguous_results, ir::lower_clamp, ir::fold_like_fills,
                 ir::narrow_backwards_to_cat, ir::cse, ir::dce>::run(*joint);
    ir::detail::lint_own_graph(*joint);
    detail::partition(*joint, gin.size(), r.num_outputs, options.policy, r);
    r.joint = std::move(joint);
    r.size_hints = tr.take_size_hints();
    return r;
}

}  // namespace detail

}  // namespace graft::capture
