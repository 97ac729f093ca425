#pragma once
// Ahead-of-time autograd (AOTAutograd's job): trace the forward AND the
// backward of f into one joint graph, then partition it into a forward graph
// (inputs -> outputs + saved values) and a backward graph (saved values +
// output gradients -> input gradients).
//
// The joint graph is obtained the way AOTAutograd does it: f runs on traced
// tensors that require grad, then autograd::grad runs inside the same trace,
// so the backward ops recorded are exactly the eager engine's derivatives
// (the op table's rules for elementwise ops). The partitioner then decides
// what the forward saves for the backward (see partition_policy).
//
// The graphs are traced for the examples' dtypes and sizes; a call with other ones captures
// f again (a small cache per signature, like torch.compile's recompilation).
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "graft/autograd/tensor_methods.hpp"
#include "graft/capture/trace.hpp"
#include "graft/ir/interpreter.hpp"
#include "graft/ir/symbolic.hpp"

namespace graft::capture {

/// What the forward graph saves for the backward.
enum class partition_policy {
    /// Save every forward value the backward reads.
    save_all,
    /// Recompute chains of elementwise ops in the backward from the values they
    /// start from (which are saved instead): less memory, a little more arithmetic.
    /// A simple rule, not PyTorch's min-cut: every needed elementwise value is
    /// recomputed from its nearest non-elementwise ancestors or inputs.
    recompute_elementwise,
};

struct aot_options {
    partition_policy policy = partition_policy::save_all;
    /// (input, dimension) pairs whose size may change between calls, as
    /// torch._dynamo.mark_dynamic: the graphs get symbolic sizes there (ir/symbolic.hpp;
    /// dimensions of equal size share one symbol), so one capture serves every size >= 2.
    /// Empty: sizes are exact and another size captures again.
    std::vector<std::pair<std::size_t, std::size_t>> dynamic_dims;
};

class aot_function;

namespace detail {

/// What a capture of capture::aot is specialized for, per function input.
struct input_signature {
    dtype type = dtype::float32;
    int_list sizes;
    bool requires_grad = false;
};

/// capture::aot's own copy of f, to capture it again for inputs of another signature (as
/// torch.compile recompiles), and the captures made so far.
struct aot_recapture {
    std::function<std::vector<Tensor>(const std::vector<Tensor>&)> f;
    aot_options options;
    std::mutex mutex;
    std::vector<std::pair<std::vector<input_signature>, std::shared_ptr<const aot_function>>> cache;
    static constexpr std::size_t max_signatures = 16;  // past that, f runs eagerly
};

/// The forward and backward graphs prepared to run (ir::prepared_graph), made once, by the
/// first call that runs them (after capture::aot has finished editing the graphs).
struct prepared_programs {
    std::once_flag once;
    std::shared_ptr<const ir::prepared_graph> forward, backward;
};

}  // namespace detail

/// The result of capture::aot: two graphs and how to run them as one autograd node.
class aot_function {
public:
    std::shared_ptr<ir::Graph> joint;     // inputs + output gradients -> outputs + input gradients
    std::shared_ptr<ir::Graph> forward;   // inputs -> outputs + saved values
    std::shared_ptr<ir::Graph> backward;  // saved values + output gradients -> input gradients
    std::size_t num_inputs = 0;
    std::size_t num_outputs = 0;
    std::size_t num_saved = 0;
    std::vector<std::size_t> grad_inputs;         // graph inputs that receive gradients (required grad when captured and an output depends on them)
    std::vector<std::size_t> differentiable_outputs;  // outputs the backward takes gradients for
    /// Per grad input (row) and differentiable output (column): does the output depend on it?
    /// A backward whose defined output gradients all miss an input gives it no gradient, as
    /// eagerly (empty: every output reaches every grad input).
    std::vector<std::vector<bool>> reaches;
    graph_meta meta;  // mutated inputs (written back after the forward) and outputs aliasing inputs
    /// How the forward and backward graphs run (empty: ir::interpret). The profiling
    /// executor plugs in its fused plans.
    using runner = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
    runner forward_runner;
    std::shared_ptr<const runner> backward_runner;  // shared with the recorded nodes, not copied per call
    /// Without runners: the graphs as ir::prepared_graph (slots, values released after their last
    /// use), shared by copies of this function and the nodes it records.
    std::shared_ptr<detail::prepared_programs> programs = std::make_shared<detail::prepared_programs>();
    /// The name of the recorded autograd node.
    const char* node_name = "CompiledFunctionBackward";  // static storage: nodes keep the pointer
    /// The examples' dtypes, sizes and requires_grad flags: the graphs are traced for them.
    std::vector<detail::input_signature> signature;
    /// With aot_options::dynamic_dims: the attributes of the forward and backward graphs that
    /// are computed from the inputs' sizes, and the dynamic dimensions grouped by symbol.
    std::shared_ptr<const ir::symbolic_sizes> forward_sizes, backward_sizes;
    std::vector<std::vector<std::pair<std::size_t, std::size_t>>> size_groups;
    /// The sizes f computed with SymInts while traced (capture::captured::size_hints).
    std::vector<ir::size_hint> size_hints;
    /// Set by capture::aot when f can be copied: a call with another signature (dtype, sizes,
    /// or an input that requires grad where the example did not) captures f again for it,
    /// once per signature (at most 16; past that f runs eagerly). Empty: such a call is a
    /// graft::error naming the expected and the actual types.
    std::shared_ptr<detail::aot_recapture> recapture;

    /// Runs the forward graph; when an input requires grad, records one autograd node
    /// ("CompiledFunctionBackward") whose backward runs the backward graph.
    std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
    /// Were the graphs traced for inputs like these (dtypes, sizes; no input requiring grad
    /// that did not when captured)?
    [[nodiscard]] bool admits(const std::vector<Tensor>& inputs) const;
    /// Number of captures made for other signatures so far (see `recapture`).
    [[nodiscard]] std::size_t recaptures() const;
    template <class... Ts>
        requires(std::is_convertible_v<const Ts&, const Tensor&> && ...)
    std::vector<Tensor> operator()(const Ts&... inputs) const {
        return (*this)(std::vector<Tensor>{inputs...});
    }
};

namespace detail {

/// Dynamic dimensions grouped by their size in the examples (duck sizing).
struct dynamic_groups {
    std::vector<std::int64_t> values;
    std::vector<std::vector<std::pair<std::size_t, std::size_t>>> dims;
};
[[nodiscard]] GRAFT_INLINE dynamic_groups group_dynamic_dims(const std::vector<Tensor>& examples,
                                                             const std::vector<std::pair<std::size_t, std::size_t>>& dims);
/// `rounds` sets of examples in which every group has another size (distinct from every size
/// of the examples and of the other rounds); inputs with other sizes are zeros (values do not
/// change how a straight-line program traces).
[[nodiscard]] GRAFT_INLINE std::vector<std::vector<Tensor>> perturbed_examples(const std::vector<Tensor>& examples,
                                                                               const dynamic_groups& groups, int rounds);

/// Splits the joint graph (inputs: n_in inputs then tangents; outputs: n_out outputs then grads).
GRAFT_INLINE void partition(const ir::Graph& joint, std::size_t n_in, std::size_t n_out, partition_policy policy,
                            aot_function& r);

/// aot's non-template part: f is called once, through `f`, on copies of the examples.
[[nodiscard]] GRAFT_INLINE aot_function aot_impl(const std::vector<Tensor>& example_inputs, traced_fn f,
                                                 aot_options options);

}  // namespace detail

/// Captures f's forward and backward ahead of time (see the top of this header). The
/// inputs that require grad in `example_inputs` get gradients; f must not mutate its
/// inputs that require grad or return views of them (clear errors otherwise); other inputs
/// (buffers) may be updated in place and returned, as capture::trace allows.
template <class F>
[[nodiscard]] aot_function aot(F&& f, const std::vector<Tensor>& example_inputs, aot_options options = {}) {
    aot_function r = detail::aot_impl(example_inputs, detail::traced_fn::of(f), options);
    if constexpr (std::is_copy_constructible_v<std::decay_t<F>>) {
        r.recapture = std::make_shared<detail::aot_recapture>();
        r.recapture->f = [fn = std::decay_t<F>(f)](const std::vector<Tensor>& in) mutable {
            return detail::call(fn, in);
        };
        r.recapture->options = options;
    }
    return r;
}

template <class F, class... Ts>
    requires(sizeof...(Ts) > 0 && (std::is_convertible_v<const Ts&, const Tensor&> && ...))
[[nodiscard]] aot_function aot(F&& f, const Ts&... examples) {
    return aot(std::forward<F>(f), std::vector<Tensor>{examples...});
}

}  // namespace graft::capture

#if GRAFT_HAS_GRAPH_CODE
#include "graft/capture/impl/aot.ipp"
#endif
