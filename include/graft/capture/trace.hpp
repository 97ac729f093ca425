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
#include <iosfwd>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/autograd/view_tracking.hpp"
#include "graft/core/detail/op_observer.hpp"
#include "graft/ir/graph.hpp"
#include "graft/ir/interpreter.hpp"
#include "graft/ir/passes.hpp"
#include "graft/ir/symbolic.hpp"

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

/// Inputs that shared memory in the examples (f(x, x), overlapping views), captured as
/// AOTAutograd does: one graph input, a synthetic base (1-D, contiguous) covering every
/// member's elements, from which the graph reads each member (`take`) and into which it
/// writes (`put`), so a write through one member is seen through the others.
struct alias_group {
    std::vector<std::size_t> members;      // function inputs, ascending
    std::vector<std::int64_t> offsets;     // each member's storage offset minus the base's
    std::vector<int_list> sizes, strides;  // each member's geometry when captured
    std::int64_t numel = 0;                // the base's number of elements
};

/// What running the graph must do besides computing outputs (PyTorch's ViewAndMutationMeta).
struct graph_meta {
    std::size_t num_inputs = 0;               // the function's inputs
    std::size_t num_user_outputs = 0;         // graph outputs [0, n) are the function's outputs
    std::vector<std::size_t> mutated_inputs;  // graph inputs f writes to: one more graph output each, in this order
    std::vector<output_info> outputs;         // one per user output
    std::vector<alias_group> alias_groups;    // empty when no two examples shared memory
    /// Graph input j is function input graph_inputs[j] when that is < num_inputs, else the
    /// synthetic base of alias group graph_inputs[j] - num_inputs. Empty: the graph's inputs
    /// are the function's inputs.
    std::vector<std::size_t> graph_inputs;
    /// Tensors f read that require grad but are not its inputs (closed-over parameters), lifted
    /// to graph inputs after the others, as torch.compile lifts free tensors: each call passes
    /// these very tensors (their current values), and gradients reach them as in eager code.
    std::vector<Tensor> lifted;

    /// Do `inputs` share memory the way the examples did, as far as the graph can tell? Inputs
    /// captured as one alias group must again share memory with the same relative geometry;
    /// when the graph writes to an input, inputs captured apart must not share memory. (A graph
    /// that writes nothing reads the same values whatever aliases what.) Cheap: pointer
    /// comparisons only.
    [[nodiscard]] bool aliasing_matches(std::span<const Tensor> inputs) const;
    /// The graph's inputs for a call: `inputs`, with each alias group replaced by its base (a
    /// view of the caller's memory). Throws graft::error when aliasing_matches(inputs) is false.
    [[nodiscard]] std::vector<Tensor> graph_arguments(std::span<const Tensor> inputs) const;
};

GRAFT_INLINE std::ostream& operator<<(std::ostream& os, const graph_meta& m);

namespace detail {

namespace loop_grad {
struct block_context;
}  // namespace loop_grad

[[nodiscard]] inline const void* storage_key(const Tensor& t) { return t.impl().data.get(); }
[[nodiscard]] inline const void* impl_key(const Tensor& t) { return t.impl_ptr().get(); }

[[nodiscard]] inline bool same_geometry(const Tensor& a, const Tensor& b) {
    return a.sizes() == b.sizes() && a.strides() == b.strides() && a.storage_offset() == b.storage_offset() &&
           a.type() == b.type();
}

[[nodiscard]] GRAFT_INLINE ir::Type value_type(const Tensor& t);

/// Set while f is traced at made-up values (zeros at other sizes, to infer symbolic sizes):
/// the tracer then runs no user loop on them (a loop may never end, or grow without bound, on
/// values the program never sees).
inline thread_local bool tl_made_up_values = false;
class made_up_values_scope {
public:
    made_up_values_scope() noexcept : saved_(tl_made_up_values) { tl_made_up_values = true; }
    ~made_up_values_scope() { tl_made_up_values = saved_; }
    made_up_values_scope(const made_up_values_scope&) = delete;
    made_up_values_scope& operator=(const made_up_values_scope&) = delete;

private:
    bool saved_;
};

/// The op observer that records into a graph while f runs.
class tracer final : public graft::detail::op_observer {
public:
    // The control-flow recorders are reached through pointers set here: GCC emits the tracer's
    // vtable (and so its virtual functions) in every TU, even one that never captures, and
    // these pull in capture::aot; through the constructor only TUs that capture compile them.
    explicit tracer(ir::Graph& g)
        : g_(g), cur_(g.block()), record_cond_(&tracer::record_cond), record_loop_(&tracer::record_loop) {}

    ir::Value* add_input(const Tensor& t, std::size_t index);

    [[nodiscard]] bool traced(const Tensor& t) const {
        return t.defined() && (values_.count(impl_key(t)) || bases_.count(storage_key(t)));
    }

    /// The IR value holding t's current contents (recorded as a constant if t is not traced).
    /// `about_to_be_written`: t is the destination of a write, so fresh memory is fine.
    ir::Value* value_of(const Tensor& t, bool about_to_be_written = false);

    void on_op(std::string_view kind, std::span<const graft::detail::op_operand> operands,
               std::initializer_list<graft::detail::op_attr_entry> attrs, const Tensor& result) override;

    void on_write(const Tensor& dst, const graft::detail::op_operand& src) override;

    /// A random op: always recorded (it draws anew each time the graph runs), from the default
    /// generator only.
    void on_random(std::string_view kind, std::span<const graft::detail::op_operand> operands,
                   std::initializer_list<graft::detail::op_attr_entry> attrs, const Tensor& result,
                   const generator& gen) override;

    void on_alloc(const Tensor& t, bool by_op) override;

    /// A detached alias: reads of it become detach(its value), so no gradient flows through.
    void on_detach(const Tensor& result) override;

    void on_read(std::string_view what, const Tensor& t) override;

    /// Sizes computed with SymInts (view_symint, ...): kept as size hints (ir/symbolic.hpp).
    void on_symbolic_sizes(const sym_int_list& sizes) override;
    /// The SymInt expressions seen so far, in order.
    [[nodiscard]] std::vector<ir::size_hint> take_size_hints() { return std::move(hints_); }

    /// graft::while_loop: recorded as a prim::Loop (body and condition traced once).
    std::vector<Tensor> on_while_loop(const graft::detail::branch_ref& cond_fn, const graft::detail::branch_ref& body_fn,
                                      const std::vector<Tensor>& carried) override {
        return record_loop_(*this, cond_fn, body_fn, carried);
    }

    /// graft::cond: both branches recorded as the blocks of a prim::If on `pred`'s value.
    std::vector<Tensor> on_cond(const Tensor& pred, const graft::detail::branch_ref& then_branch,
                                const graft::detail::branch_ref& else_branch,
                                const std::vector<Tensor>& operands) override {
        return record_cond_(*this, pred, then_branch, else_branch, operands);
    }

    static std::vector<Tensor> record_cond(tracer& self, const Tensor& pred, const graft::detail::branch_ref& then_branch,
                                           const graft::detail::branch_ref& else_branch,
                                           const std::vector<Tensor>& operands);
    static std::vector<Tensor> record_loop(tracer& self, const graft::detail::branch_ref& cond_fn,
                                           const graft::detail::branch_ref& body_fn, const std::vector<Tensor>& carried);

    /// A tensor that requires grad and is not an input (a closed-over parameter): lifted to a
    /// graph input (jit::script, capture::trace) when `lift` is set, otherwise a graft::error
    /// (capture::aot: its gradient would be lost in a constant).
    void lift_grad_tensors(bool lift) { lift_ = lift; }
    [[nodiscard]] std::vector<Tensor> take_lifted() { return std::move(lifted_); }

    /// The current value of input `index`'s memory, and whether f wrote to it.
    [[nodiscard]] std::pair<ir::Value*, bool> input_state(const Tensor& input) const;

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

    ir::Value* number(const scalar& s);

    /// Appends node `kind` reading `operands`, whose output is `result`.
    void record(std::string_view kind, std::span<const graft::detail::op_operand> operands,
                std::initializer_list<graft::detail::op_attr_entry> attrs, const Tensor& result);

    /// The row-major positions in b.base of t's elements, as an int64 constant.
    ir::Value* index_constant(const base_state& b, const Tensor& t);

    ir::Value* take(const base_state& b, const Tensor& t);
    /// t read from the contiguous b.base as reshape, narrows, reshape and permute, when t is a
    /// box of the base in some order of its strides (each stride a multiple of the next); null
    /// otherwise.
    ir::Value* strided_view(const base_state& b, const Tensor& t);

    std::vector<Tensor> cond_impl(const Tensor& pred, const graft::detail::branch_ref& then_branch,
                                  const graft::detail::branch_ref& else_branch, const std::vector<Tensor>& operands);
    std::vector<Tensor> loop_impl(const graft::detail::branch_ref& cond_fn, const graft::detail::branch_ref& body_fn,
                                  const std::vector<Tensor>& carried);

    /// Make the results of a recorded If (cond) or Loop (while_loop) differentiable when a value
    /// their blocks read requires grad (operands and closed-over tensors alike): the backward
    /// runs the node's blocks again through the interpreter with autograd, recorded by this
    /// tracer as a cond / while_loop (capture::aot's autograd::grad builds the joint graph).
    /// A loop's backward counts the iterations, then for each one from the last recomputes its
    /// carried values from the start (no per-iteration tape: O(N^2) body runs, O(1) memory) and
    /// applies the body's vector-Jacobian product.
    void attach_cond_backward(ir::Node* n, const Tensor& pred, std::vector<Tensor>& outs);
    void attach_loop_backward(ir::Node* n, const Tensor& cond0, const std::vector<Tensor>& carried,
                              std::vector<Tensor>& outs);
    /// The tensors this tracer knows as `values` (values outer to a block); values it cannot
    /// name are left out.
    [[nodiscard]] std::map<const ir::Value*, Tensor> tensors_of(const std::vector<const ir::Value*>& values) const;
    /// What the backward of If/Loop node n needs from this trace (loop_grad::block_context).
    [[nodiscard]] std::shared_ptr<loop_grad::block_context> context_of(const ir::Node& n) const;

    /// A node that reads nothing (a constant): in the top block, before the outermost If being
    /// recorded, so that it is visible wherever it is used.
    ir::Node* append_constant();

    ir::Graph& g_;
    ir::Block* cur_;
    std::vector<Tensor> (*record_cond_)(tracer&, const Tensor&, const graft::detail::branch_ref&,
                                        const graft::detail::branch_ref&, const std::vector<Tensor>&);
    std::vector<Tensor> (*record_loop_)(tracer&, const graft::detail::branch_ref&, const graft::detail::branch_ref&,
                                        const std::vector<Tensor>&);                 // where nodes are recorded (a branch of an If while recording cond)
    std::vector<ir::Node*> open_ifs_;  // the If/Loop nodes whose blocks are being recorded, outermost first
    std::map<const void*, base_state> bases_;
    std::map<const void*, entry> values_;
    std::vector<Tensor> keep_;  // every tensor seen stays alive, so addresses stay unique
    std::set<const void*> fresh_;  // storages allocated by empty() outside any op or factory
    std::set<const void*> made_;   // storages allocated while tracing (by ops or not): f may write them
    std::set<const void*> detached_;  // tensors made by detach() (kept alive in keep_)
    std::vector<ir::size_hint> hints_;  // SymInt expressions, in the order the ops got them
    std::size_t mutations_ = 0;
    bool lift_ = false;
    std::vector<Tensor> lifted_;  // in the order of their graph inputs
    std::vector<ir::Value*> lifted_values_;
    /// Makes the lifted tensors known again (after a block's recording restored the maps).
    void relift();
};

/// Installs an observer for the current thread for the lifetime of this object. Tracing draws
/// no numbers: the default generator's state is put back when the scope ends, so the graph's
/// random nodes draw, when it runs, what eager code would have drawn.
class observer_scope {
public:
    explicit observer_scope(graft::detail::op_observer* o);
    ~observer_scope();
    observer_scope(const observer_scope&) = delete;
    observer_scope& operator=(const observer_scope&) = delete;

private:
    generator::state rng_;
};

/// How output `out` relates to the (traced copies of the) inputs.
[[nodiscard]] GRAFT_INLINE output_info alias_info(const Tensor& out, const std::vector<Tensor>& in);

/// The caller-visible output i: the graph's value, or the caller's input (or a view of it).
[[nodiscard]] GRAFT_INLINE Tensor recreate_output(const output_info& o, std::size_t i, const Tensor& computed,
                                                  std::span<const Tensor> inputs);

/// The examples' alias groups (inputs sharing memory), with the traced copies of the inputs:
/// each group's members become views of one fresh copy of the memory they cover.
struct traced_inputs {
    std::vector<Tensor> copies;     // one per function input (group members: views of their base's copy)
    std::vector<Tensor> graph_inputs;  // the graph's inputs, in order
    std::vector<alias_group> groups;
    std::vector<std::size_t> graph_input_sources;  // graph_meta::graph_inputs (empty without groups)
};
[[nodiscard]] GRAFT_INLINE traced_inputs copy_inputs(const std::vector<Tensor>& examples, const char* who);

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

/// A reference to the function being captured (not owned, no allocation): lets the
/// non-template parts of trace and aot call detail::call(f, in).
struct traced_fn {
    const void* object = nullptr;  // the callable object, or
    void (*function)() = nullptr;  // the function (cast back to its own type by invoke)
    std::vector<Tensor> (*invoke)(const traced_fn& self, const std::vector<Tensor>& in) = nullptr;

    std::vector<Tensor> operator()(const std::vector<Tensor>& in) const { return invoke(*this, in); }

    template <class F>
    [[nodiscard]] static traced_fn of(F& f) {
        traced_fn r;
        if constexpr (std::is_function_v<F>) {
            r.function = reinterpret_cast<void (*)()>(&f);
            r.invoke = [](const traced_fn& self, const std::vector<Tensor>& in) {
                return detail::call(*reinterpret_cast<F*>(self.function), in);
            };
        } else {
            r.object = std::addressof(f);
            r.invoke = [](const traced_fn& self, const std::vector<Tensor>& in) {
                return detail::call(*const_cast<F*>(static_cast<const F*>(self.object)), in);
            };
        }
        return r;
    }
};

}  // namespace detail

/// A captured function: the graph, its metadata, and how to run it.
class captured {
public:
    captured(std::shared_ptr<ir::Graph> g, graph_meta m, std::vector<ir::size_hint> hints = {})
        : graph_(std::move(g)), meta_(std::move(m)), hints_(std::move(hints)) {}
    [[nodiscard]] const ir::Graph& graph() const { return *graph_; }
    [[nodiscard]] ir::Graph& graph() { return *graph_; }
    /// The graph's shared owner (jit::script hands it to its executor instead of a copy).
    [[nodiscard]] std::shared_ptr<ir::Graph> shared_graph() { return graph_; }
    [[nodiscard]] const graph_meta& meta() const { return meta_; }
    /// The sizes f computed with SymInts (Tensor::sym_size), as expressions of the sizes it read
    /// (ir::size_hint): jit::script uses them to make the graph's sizes symbolic.
    [[nodiscard]] const std::vector<ir::size_hint>& size_hints() const { return hints_; }

    /// Runs the graph with the eager interpreter (autograd records as usual), writes
    /// mutated inputs back into the caller's tensors and recreates outputs that alias inputs.
    std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
    /// The caller-visible results from the graph's raw outputs (however the graph was run on
    /// meta().graph_arguments(inputs)): writes mutated inputs back and recreates outputs that
    /// alias inputs.
    std::vector<Tensor> finish(std::span<const Tensor> inputs, std::vector<Tensor> outs) const;
    /// finish() in place: `outs` (the raw outputs) becomes the caller-visible results.
    void finish_in_place(std::span<const Tensor> inputs, std::vector<Tensor>& outs) const;
    template <class... Ts>
        requires(std::is_convertible_v<const Ts&, const Tensor&> && ...)
    std::vector<Tensor> operator()(const Ts&... inputs) const {
        return (*this)(std::vector<Tensor>{inputs...});
    }

private:
    std::shared_ptr<ir::Graph> graph_;
    graph_meta meta_;
    std::vector<ir::size_hint> hints_;
};

namespace detail {

/// trace's non-template part: f is called once, through `f`, on copies of the examples.
[[nodiscard]] GRAFT_INLINE captured trace_impl(const std::vector<Tensor>& example_inputs, traced_fn f);

}  // namespace detail

/// Records what f does to `example_inputs` as a functionalized graph (see the top of this header).
/// f takes the inputs as Tensor arguments (or one const std::vector<Tensor>&) and returns a
/// Tensor, a std::vector<Tensor> or a tuple of Tensors. The examples are not modified.
template <class F>
[[nodiscard]] captured trace(F&& f, const std::vector<Tensor>& example_inputs) {
    return detail::trace_impl(example_inputs, detail::traced_fn::of(f));
}

/// trace with the examples as arguments: capture::trace(f, x, w).
template <class F, class... Ts>
    requires(sizeof...(Ts) > 0 && (std::is_convertible_v<const Ts&, const Tensor&> && ...))
[[nodiscard]] captured trace(F&& f, const Ts&... examples) {
    return trace(std::forward<F>(f), std::vector<Tensor>{examples...});
}

}  // namespace graft::capture

#if GRAFT_HAS_GRAPH_CODE
#include "graft/capture/impl/trace.ipp"
// The tracer's cond backward captures each branch with aot: defined in aot.ipp.
#include "graft/capture/aot.hpp"
#endif
