#pragma once
// Runtime passes over the graph IR. Each pass is a type with a name and
// `static bool run(Graph&)` (true when it changed the graph); a pipeline is a
// type list of passes run in order, with the graph linted after each pass when
// asked (always in debug builds). Every rewrite here is exact: the graph
// computes bit-identical results before and after.
//
//   using cleanup = ir::pipeline<ir::inline_calls, ir::constant_propagation, ir::peephole,
//                                ir::remove_noop_views, ir::canonicalize, ir::cse, ir::dce>;
//   cleanup::run(graph);
#include <concepts>
#include <cstring>
#include <map>
#include <string_view>
#include <vector>

#include "graft/autograd/grad_mode.hpp"
#include "graft/ir/graph.hpp"
#include "graft/ir/interpreter.hpp"

namespace graft::ir {

/// A pass: a type with a name and `static bool run(Graph&)`.
template <class P>
concept pass = requires(Graph& g) {
    { P::name } -> std::convertible_to<std::string_view>;
    { P::run(g) } -> std::same_as<bool>;
};

namespace detail {

/// Every block of the graph, outermost first.
GRAFT_INLINE void collect_blocks(Block* b, std::vector<Block*>& out);

[[nodiscard]] GRAFT_INLINE bool is_pure_tree(const Node* n);

[[nodiscard]] GRAFT_INLINE bool attributes_equal(const attribute& a, const attribute& b);

[[nodiscard]] GRAFT_INLINE bool same_computation(const Node* a, const Node* b);

[[nodiscard]] GRAFT_INLINE const attribute* constant_value(const Value* v);

[[nodiscard]] GRAFT_INLINE std::optional<double> number_constant(const Value* v);

/// Is v a floating-point tensor of known dtype (numbers do not change its dtype)?
[[nodiscard]] inline bool is_float_tensor(const Value* v) {
    return v->type().is_tensor() && v->type().tensor.scalar_type && is_floating_point(*v->type().tensor.scalar_type);
}

[[nodiscard]] inline bool bitwise_equal(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

/// Replaces n's only output by v (a value of the same category) and destroys n.
GRAFT_INLINE bool forward_input(Node* n, Value* v);

}  // namespace detail

/// Removes pure nodes (and pure If/Call trees) whose outputs are unused.
struct dce {
    static constexpr std::string_view name = "dce";
    static bool run(Graph& g);
};

/// Common-subexpression elimination: a pure node identical to an earlier one
/// (same kind, inputs, attributes and output types) visible from it is replaced.
struct cse {
    static constexpr std::string_view name = "cse";
    static bool run(Graph& g) {
        std::vector<Node*> seen;
        return run_block(g.block(), seen);
    }

private:
    static bool run_block(Block* b, std::vector<Node*>& seen);
};

/// Evaluates pure nodes whose inputs are all constants (under no_grad) and
/// replaces them by constants; an If on a constant condition is replaced by
/// the taken block.
struct constant_propagation {
    static constexpr std::string_view name = "constant_propagation";
    static bool run(Graph& g) { return run_block(g.block()); }

private:
    static ivalue to_ivalue(const attribute& a);
    static bool run_block(Block* b);

public:
    /// Moves block `inner`'s nodes before `n`, maps n's outputs to the block's, removes n.
    static void inline_block(Node* n, Block* inner);
};

/// Hoists every constant to the start of the graph (in order of first
/// appearance, outer blocks first) and merges equal ones.
struct constant_pooling {
    static constexpr std::string_view name = "constant_pooling";
    static bool run(Graph& g);
};

/// Algebraic rewrites that are exact in IEEE arithmetic, for floating-point
/// tensors of known dtype: x*1, 1*x, x/1, x-0, x+(-0.0), (-0.0)+x, neg(neg(x)).
/// x+0.0 is NOT rewritten: (-0.0)+0.0 is +0.0. Also removes double transposes.
struct peephole {
    static constexpr std::string_view name = "peephole";
    static bool run(Graph& g);

private:
    static bool same_shape_number(const Value* tensor, const Value* number, double expect);
    static bool rewrite(Node* n);
};

/// Removes views that do not change anything, when the input's sizes are known:
/// expand/reshape to the same sizes, transpose of a dim with itself, the
/// identity permutation, a full-length narrow.
struct remove_noop_views {
    static constexpr std::string_view name = "remove_noop_views";
    static bool run(Graph& g);

private:
    static std::optional<std::vector<std::int64_t>> known_sizes(const Value* v);
    static bool is_noop(const Node* n);
};

/// Rewrites that give consumers fresh contiguous results instead of views, exactly (the same
/// products and sums in the same order: the same bits): transpose(matmul(a, b)) of 2-D
/// operands becomes matmul(transpose(b), transpose(a)) (a transpose of a transposed value is
/// that value), and reshape(sum(x, dims, keepdim = true)) that only drops the summed
/// dimensions becomes sum(x, dims, keepdim = false). The matmul or sum must have no other use.
/// A linear layer's weight and bias gradients then leave a backward graph as contiguous tensors
/// of their own, which AccumulateGrad takes without a copy (it copies views).
struct contiguous_results {
    static constexpr std::string_view name = "contiguous_results";
    static bool run(Graph& g);
};

/// clamp[min=a, max=b](x) of a float tensor becomes minimum(maximum(x, a), b): the same
/// kernels in the same order as graft::clamp runs them (the same bits), as elementwise ops a
/// jit fusion group can hold (clamp, with its bounds as attributes, would end the group).
struct lower_clamp {
    static constexpr std::string_view name = "lower_clamp";
    static bool run(Graph& g);
};

/// zeros_like / ones_like / full_like read only by elementwise op-table ops as a non-condition
/// operand, where a number gives the same result (the op's result has the filled tensor's sizes
/// and dtype, and another tensor operand has that dtype): replaced by that number, which the
/// fusion groups take as a broadcast operand (a backward's where(x <= 0, zeros_like(g), g)
/// fuses again). Values are unchanged bit for bit.
struct fold_like_fills {
    static constexpr std::string_view name = "fold_like_fills";
    static bool run(Graph& g);
};

/// A sum of narrow_backwards of one tensor's sizes and dimension over disjoint ranges that
/// tile one interval (the backward of chunk / split: each piece's gradient embedded in zeros,
/// then added): one cat of the pieces (embedded by one narrow_backward when the interval is not
/// the whole dimension), plus 0.0, which turns -0 into +0 as the adds of zeros did. A piece
/// read elsewhere too stays for those readers. Values are unchanged bit for bit; instead of one
/// zero-filled tensor of the full size per piece, one cat.
struct narrow_backwards_to_cat {
    static constexpr std::string_view name = "narrow_backwards_to_cat";
    static bool run(Graph& g);
};

/// Unrolls prim::Loops whose trip count is a constant of at most `max_trip_count`: the
/// condition, and every carried value it depends on, start from constants and are computed
/// in the body by pure ops, so the pass runs that part of the body on the constants to count
/// the trips (a fori_loop over constant bounds), then replaces the Loop by that many copies of
/// its body. The same ops run in the same order: results are bit-identical. Loops whose body
/// holds control flow are left alone.
struct unroll_loops {
    static constexpr std::string_view name = "unroll_loops";
    static constexpr std::size_t max_trip_count = 8;
    static bool run(Graph& g);

private:
    static std::optional<std::size_t> trip_count(const Node* loop);
    static void unroll(Node* loop, std::size_t trips);
};

/// Splices every prim::Call's callee into the caller.
struct inline_calls {
    static constexpr std::string_view name = "inline_calls";
    static bool run(Graph& g);
};

/// A canonical form: operands of commutative ops in definition order, and
/// automatically named values renumbered in order of definition.
struct canonicalize {
    static constexpr std::string_view name = "canonicalize";
    static bool run(Graph& g);

private:
    static bool is_commutative(const kind_info& k);
    static bool is_auto_name(const std::string& s);
    static void number(Block* b, std::map<const Value*, std::size_t>& order, std::vector<Value*>& auto_named);
};

/// Options for running a pipeline.
struct pipeline_options {
    /// Run Graph::lint after every pass (always on in debug builds).
#ifdef NDEBUG
    bool lint = false;
#else
    bool lint = true;
#endif
    /// Lint the graph before the first pass. A caller that has just linted it (the
    /// executor checks every graph it is given) may skip this second check.
    bool lint_input = true;
};

/// Passes run in order, as one type: `pipeline<dce, cse>::run(g)`.
template <class... Passes>
struct pipeline {
    static_assert((pass<Passes> && ...),
                  "graft::ir::pipeline<...>: every element must be a pass type with a `name` and "
                  "`static bool run(graft::ir::Graph&)`");
    static constexpr std::string_view name = "pipeline";
    static bool run(Graph& g) { return run(g, pipeline_options{}); }
    static bool run(Graph& g, pipeline_options options) {
        // Passes assume a valid graph (no use before definition, no cycle): check it first.
        if (options.lint_input) {
            try {
                g.lint();
            } catch (const graft::error& e) {
                graft::detail::fail(std::string("ir pipeline: the graph is invalid before any pass ran: ") + e.what());
            }
        }
        bool changed = false;
        const auto one = [&](auto tag) {
            using P = typename decltype(tag)::type;
            changed = P::run(g) || changed;
            if (options.lint) {
                try {
                    g.lint();
                } catch (const graft::error& e) {
                    graft::detail::fail(std::string("ir pass ") + std::string(P::name) + " broke the graph: " + e.what());
                }
            }
        };
        (one(std::type_identity<Passes>{}), ...);
        return changed;
    }
};

/// The default clean-up: inline, fold, unroll small constant loops, fold again, simplify, then
/// remove what became dead.
using default_pipeline = pipeline<inline_calls, constant_propagation, unroll_loops, constant_propagation, peephole,
                                  remove_noop_views, canonicalize, cse, constant_pooling, dce>;

}  // namespace graft::ir

#if GRAFT_HAS_GRAPH_CODE
#include "graft/ir/impl/passes.ipp"
#endif
