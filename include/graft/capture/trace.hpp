#pragma once
// Graph capture: run ordinary eager graft code on example inputs and record
// every op it performs into an ir::Graph, functionalized: in-place writes
// become out-of-place values (a write through a view becomes `put` into the
// written tensor's base; later reads of stale views become `take`), a mutated
// input becomes an extra graph output that is copied back into the caller's
// tensor after the graph runs, and outputs that alias inputs are recorded so
// running the capture gives the eager result, aliasing included.
//
//   auto cap = capture::trace([](Tensor x, Tensor w) { return tanh(x * w).sum(); }, {x, w});
//   std::cout << *cap.graph;           // the IR
//   Tensor y = cap(x2, w2)[0];         // runs it (interpreter, with autograd)
#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/autograd/view_tracking.hpp"
#include "graft/core/detail/op_observer.hpp"
#include "graft/ir/graph.hpp"
#include "graft/ir/interpreter.hpp"
#include "graft/ir/passes.hpp"

namespace graft::capture {

/// How a user output relates to the inputs (PyTorch's OutputAliasInfo, reduced).
enum class output_kind {
    fresh,           // a new tensor computed by the graph
    alias_of_input,  // the very input tensor (same geometry)
    view_of_input,   // a view of an input: recreated from the caller's tensor after the graph runs
};

struct output_info {
    output_kind kind = output_kind::fresh;
    std::size_t input = 0;                    // for aliases/views: which input
    int_list sizes, strides;                  // for views: geometry relative to the input
    std::int64_t offset = 0;                  // storage offset relative to the input's
    int_list input_strides;                   // the input's strides at capture (must match at run time)
};

/// What running the graph must do besides computing outputs (PyTorch's ViewAndMutationMeta).
struct graph_meta {
    std::size_t num_inputs = 0;
    std::size_t num_user_outputs = 0;         // graph outputs [0, n) are the function's outputs
    std::vector<std::size_t> mutated_inputs;  // then one graph output per mutated input, in this order
    std::vector<output_info> outputs;         // one per user output
};

inline std::ostream& operator<<(std::ostream& os, const graph_meta& m) {
    os << "inputs: " << m.num_inputs << ", user outputs: " << m.num_user_outputs << ", mutated inputs: [";
    for (std::size_t i = 0; i < m.mutated_inputs.size(); ++i) os << (i ? ", " : "") << m.mutated_inputs[i];
    os << "]\n";
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

[[nodiscard]] inline const void* storage_key(const Tensor& t) { return t.impl().data.get(); }
[[nodiscard]] inline const void* impl_key(const Tensor& t) { return t.impl_ptr().get(); }

[[nodiscard]] inline bool same_geometry(const Tensor& a, const Tensor& b) {
    return a.sizes() == b.sizes() && a.strides() == b.strides() && a.storage_offset() == b.storage_offset() &&
           a.type() == b.type();
}

[[nodiscard]] inline ir::Type value_type(const Tensor& t) {
    ir::TensorType tt;
    tt.scalar_type = t.type();
    tt.sizes.emplace();
    for (auto s : t.sizes()) tt.sizes->push_back(s);
    return ir::Type::tensor_type(std::move(tt));
}

/// The op observer that records into a graph while f runs.
class tracer final : public graft::detail::op_observer {
public:
    explicit tracer(ir::Graph& g) : g_(g) {}

    ir::Value* add_input(const Tensor& t, std::size_t index) {
        graft::detail::check(t.defined(), "capture::trace: example input ", index, " is undefined");
        graft::detail::check(!bases_.count(storage_key(t)), "capture::trace: example input ", index,
                             " shares memory with another input; inputs that alias each other are not supported");
        std::string name = "x";
        name += std::to_string(index);
        ir::Value* v = g_.add_input(value_type(t), std::move(name));
        keep_.push_back(t);
        bases_[storage_key(t)] = {t, v, 0, static_cast<int>(index)};
        values_[impl_key(t)] = {v, 0};
        return v;
    }

    [[nodiscard]] bool traced(const Tensor& t) const {
        return t.defined() && (values_.count(impl_key(t)) || bases_.count(storage_key(t)));
    }

    /// The IR value holding t's current contents (recorded as a constant if t is not traced).
    /// `about_to_be_written`: t is the destination of a write, so fresh memory is fine.
    ir::Value* value_of(const Tensor& t, bool about_to_be_written = false) {
        auto bit = bases_.find(storage_key(t));
        if (bit == bases_.end()) {
            graft::detail::check(about_to_be_written || !fresh_.count(storage_key(t)),
                                 "capture::trace: a tensor (sizes ", t.sizes(), ", ", t.type(),
                                 ") was filled by code graph capture cannot see (memory from empty() written "
                                 "element by element, or a raw kernel call); use graft ops so the graph records "
                                 "the computation");
            // A tensor made outside the traced computation: its value becomes a constant.
            Tensor base = t;
            const auto elems = static_cast<std::int64_t>(t.impl().data->nbytes() / t.element_size());
            if (!(t.is_contiguous() && t.storage_offset() == 0 && t.numel() == elems))
                base = graft::detail::raw::view_of(t, {elems}, {1}, 0);
            ir::Node* c = g_.append<ir::kinds::constant>();
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
        keep_.push_back(t);
        values_[impl_key(t)] = {v, b.gen};
        return v;
    }

    void on_op(std::string_view kind, std::initializer_list<graft::detail::op_operand> operands,
               std::initializer_list<graft::detail::op_attr_entry> attrs, const Tensor& result) override {
        bool any_traced = false;
        for (const auto& o : operands) {
            if (!o.tensor) continue;
            any_traced = any_traced || traced(*o.tensor);
            if (impl_key(*o.tensor) == impl_key(result)) return;  // the op returned its input unchanged
        }
        if (!any_traced) return;  // computed from constants only: it stays a constant
        const ir::kind_info* k = ir::find_kind(kind);
        graft::detail::check(k != nullptr, "capture::trace: op '", kind,
                             "' has no graph IR kind, so it cannot be captured");
        std::vector<ir::Value*> inputs;
        for (const auto& o : operands) inputs.push_back(o.tensor ? value_of(*o.tensor) : number(o.number));
        ir::Node* n = g_.append(*k);
        for (ir::Value* v : inputs) n->add_input(v);
        for (const auto& a : attrs)
            std::visit([&](const auto& v) { n->set_attr(a.name, v); }, a.value);
        ir::Value* out = n->add_output(value_type(result));
        keep_.push_back(result);
        auto bit = bases_.find(storage_key(result));
        if (bit == bases_.end()) bit = bases_.emplace(storage_key(result), base_state{result, out, 0, -1}).first;
        values_[impl_key(result)] = {out, bit->second.gen};
    }

    void on_write(const Tensor& dst, const graft::detail::op_operand& src) override {
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
            ir::Node* n = g_.append<ir::kinds::put>();
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

    void on_alloc(const Tensor& t) override {
        keep_.push_back(t);  // its address must stay unique while tracing
        fresh_.insert(storage_key(t));
    }

    void on_read(std::string_view what, const Tensor& t) override {
        if (!traced(t)) return;
        graft::detail::fail(graft::detail::concat(
            "capture::trace: ", what, "() reads the value of a traced tensor; data-dependent control flow and "
            "reading values cannot be captured (the graph would bake in this example's value)"));
    }

    /// The current value of input `index`'s memory, and whether f wrote to it.
    [[nodiscard]] std::pair<ir::Value*, bool> input_state(const Tensor& input) const {
        const base_state& b = bases_.at(storage_key(input));
        return {b.value, b.gen > 0};
    }

private:
    struct base_state {
        Tensor base;
        ir::Value* value;
        std::uint64_t gen = 0;
        int input = -1;
    };
    struct entry {
        ir::Value* value;
        std::uint64_t gen;
    };

    ir::Value* number(const scalar& s) {
        ir::Node* c = g_.append<ir::kinds::constant>();
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

    /// The row-major positions in b.base of t's elements, as an int64 constant.
    ir::Value* index_constant(const base_state& b, const Tensor& t) {
        const Tensor idx = autograd::detail::view_index(autograd::detail::geometry_of(b.base),
                                                        autograd::detail::geometry_of(t));
        ir::Node* c = g_.append<ir::kinds::constant>();
        c->set_attr("value", idx);
        return c->add_output(value_type(idx));
    }

    ir::Value* take(const base_state& b, const Tensor& t) {
        ir::Value* idx = index_constant(b, t);
        ir::Node* n = g_.append<ir::kinds::take>();
        n->add_input(b.value);
        n->add_input(idx);
        return n->add_output(value_type(t));
    }

    ir::Graph& g_;
    std::map<const void*, base_state> bases_;
    std::map<const void*, entry> values_;
    std::vector<Tensor> keep_;  // every tensor seen stays alive, so addresses stay unique
    std::set<const void*> fresh_;  // storages allocated by empty() outside any op or factory
    std::size_t mutations_ = 0;
};

/// Installs an observer for the current thread for the lifetime of this object.
class observer_scope {
public:
    explicit observer_scope(graft::detail::op_observer* o) {
        graft::detail::check(graft::detail::tl_op_observer == nullptr,
                             "capture::trace: already tracing on this thread (nested capture is not supported)");
        graft::detail::tl_op_observer = o;
    }
    ~observer_scope() { graft::detail::tl_op_observer = nullptr; }
    observer_scope(const observer_scope&) = delete;
    observer_scope& operator=(const observer_scope&) = delete;
};

/// How output `out` relates to the (traced copies of the) inputs.
[[nodiscard]] inline output_info alias_info(const Tensor& out, const std::vector<Tensor>& in) {
    output_info info;
    for (std::size_t k = 0; k < in.size(); ++k) {
        if (storage_key(out) != storage_key(in[k])) continue;
        info.input = k;
        info.input_strides = in[k].strides();
        if (same_geometry(out, in[k])) {
            info.kind = output_kind::alias_of_input;
        } else {
            info.kind = output_kind::view_of_input;
            info.sizes = out.sizes();
            info.strides = out.strides();
            info.offset = out.storage_offset() - in[k].storage_offset();
        }
    }
    return info;
}

/// The caller-visible output i: the graph's value, or the caller's input (or a view of it).
[[nodiscard]] inline Tensor recreate_output(const output_info& o, std::size_t i, const Tensor& computed,
                                            const std::vector<Tensor>& inputs) {
    if (o.kind == output_kind::fresh) return computed;
    const Tensor& in = inputs[o.input];
    if (o.kind == output_kind::alias_of_input) return in;
    graft::detail::check(in.strides() == o.input_strides, "capture: output ", i, " is a view of input ", o.input,
                         ", which had strides ", o.input_strides, " when captured but has ", in.strides(),
                         " now; recapture for this layout");
    return in.as_strided(o.sizes, o.strides, in.storage_offset() + o.offset);
}

inline void check_distinct_memory(const std::vector<Tensor>& examples) {
    for (std::size_t i = 0; i < examples.size(); ++i)
        for (std::size_t k = 0; k < i; ++k)
            graft::detail::check(!examples[i].defined() || !examples[k].defined() ||
                                     !examples[i].shares_storage_with(examples[k]),
                                 "capture: example input ", i, " shares memory with another input (", k,
                                 "); inputs that alias each other are not supported");
}

template <class R>
[[nodiscard]] std::vector<Tensor> as_outputs(R&& r) {
    using T = std::decay_t<R>;
    if constexpr (std::is_same_v<T, Tensor>) {
        return {std::forward<R>(r)};
    } else if constexpr (std::is_same_v<T, std::vector<Tensor>>) {
        return std::forward<R>(r);
    } else {
        return std::apply([](auto&&... ts) { return std::vector<Tensor>{Tensor(ts)...}; }, std::forward<R>(r));
    }
}

/// Calls f with the inputs: f(const std::vector<Tensor>&) or f(Tensor, Tensor, ...) (up to 8).
template <class F>
[[nodiscard]] std::vector<Tensor> call(F& f, const std::vector<Tensor>& in) {
    if constexpr (std::is_invocable_v<F&, const std::vector<Tensor>&>) {
        return as_outputs(f(in));
    } else {
        std::vector<Tensor> out;
        bool called = false;
        const auto attempt = [&]<std::size_t... I>(std::index_sequence<I...>) {
            if constexpr (std::is_invocable_v<F&, decltype((void)I, std::declval<Tensor>())...>) {
                if (in.size() == sizeof...(I)) {
                    out = as_outputs(f(in[I]...));
                    called = true;
                }
            }
        };
        [&]<std::size_t... N>(std::index_sequence<N...>) { (attempt(std::make_index_sequence<N>{}), ...); }(
            std::make_index_sequence<9>{});
        graft::detail::check(called, "capture: the function cannot be called with ", in.size(),
                             " tensors (it must take a const std::vector<Tensor>& or that many Tensor arguments)");
        return out;
    }
}

}  // namespace detail

/// A captured function: the graph, its metadata, and how to run it.
class captured {
public:
    captured(std::shared_ptr<ir::Graph> g, graph_meta m) : graph_(std::move(g)), meta_(std::move(m)) {}
    [[nodiscard]] const ir::Graph& graph() const { return *graph_; }
    [[nodiscard]] ir::Graph& graph() { return *graph_; }
    [[nodiscard]] const graph_meta& meta() const { return meta_; }

    /// Runs the graph with the eager interpreter (autograd records as usual), writes
    /// mutated inputs back into the caller's tensors and recreates outputs that alias inputs.
    std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const {
        graft::detail::check(inputs.size() == meta_.num_inputs, "capture: the captured function takes ",
                             meta_.num_inputs, " inputs, got ", inputs.size());
        return finish(inputs, ir::interpret(*graph_, inputs));
    }
    /// The caller-visible results from the graph's raw outputs (however the graph was run):
    /// writes mutated inputs back and recreates outputs that alias inputs.
    std::vector<Tensor> finish(const std::vector<Tensor>& inputs, std::vector<Tensor> outs) const {
        graft::detail::check(outs.size() == meta_.num_user_outputs + meta_.mutated_inputs.size(),
                             "capture: the graph gave ", outs.size(), " outputs, expected ",
                             meta_.num_user_outputs + meta_.mutated_inputs.size());
        for (std::size_t k = 0; k < meta_.mutated_inputs.size(); ++k) {
            Tensor dst = inputs[meta_.mutated_inputs[k]];
            dst.copy_(outs[meta_.num_user_outputs + k]);
        }
        std::vector<Tensor> result;
        for (std::size_t i = 0; i < meta_.num_user_outputs; ++i)
            result.push_back(detail::recreate_output(meta_.outputs[i], i, outs[i], inputs));
        return result;
    }
    template <class... Ts>
        requires(std::is_convertible_v<const Ts&, const Tensor&> && ...)
    std::vector<Tensor> operator()(const Ts&... inputs) const {
        return (*this)(std::vector<Tensor>{inputs...});
    }

private:
    std::shared_ptr<ir::Graph> graph_;
    graph_meta meta_;
};

/// Records what f does to `example_inputs` as a functionalized graph (see the top of this header).
/// f takes the inputs as Tensor arguments (or one const std::vector<Tensor>&) and returns a
/// Tensor, a std::vector<Tensor> or a tuple of Tensors. The examples are not modified.
template <class F>
[[nodiscard]] captured trace(F&& f, const std::vector<Tensor>& example_inputs) {
    auto g = std::make_shared<ir::Graph>();
    detail::tracer tr(*g);
    detail::check_distinct_memory(example_inputs);
    // Work on copies, so tracing never writes into the caller's examples.
    std::vector<Tensor> in;
    for (std::size_t i = 0; i < example_inputs.size(); ++i) {
        const Tensor& e = example_inputs[i];
        graft::detail::check(e.defined(), "capture::trace: example input ", i, " is undefined");
        Tensor c = graft::detail::raw::clone(e.detach());
        if (e.requires_grad()) c.requires_grad_();
        in.push_back(c);
    }
    graph_meta meta;
    meta.num_inputs = in.size();
    std::vector<Tensor> outs;
    {
        detail::observer_scope scope(&tr);
        for (std::size_t i = 0; i < in.size(); ++i) tr.add_input(in[i], i);
        outs = detail::call(f, in);
        meta.num_user_outputs = outs.size();
        for (std::size_t i = 0; i < outs.size(); ++i) {
            graft::detail::check(outs[i].defined(), "capture::trace: output ", i, " is undefined");
            const output_info info = detail::alias_info(outs[i], in);
            meta.outputs.push_back(info);
            g->register_output(tr.value_of(outs[i]));
        }
        for (std::size_t k = 0; k < in.size(); ++k) {
            const auto [value, mutated] = tr.input_state(in[k]);
            if (!mutated) continue;
            meta.mutated_inputs.push_back(k);
            g->register_output(value);
        }
    }
    ir::dce::run(*g);
    g->lint();
    return captured(std::move(g), std::move(meta));
}

/// trace with the examples as arguments: capture::trace(f, x, w).
template <class F, class... Ts>
    requires(sizeof...(Ts) > 0 && (std::is_convertible_v<const Ts&, const Tensor&> && ...))
[[nodiscard]] captured trace(F&& f, const Ts&... examples) {
    return trace(std::forward<F>(f), std::vector<Tensor>{examples...});
}

}  // namespace graft::capture
