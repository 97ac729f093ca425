#pragma once
// Execution plans: a graph lowered to a flat list of steps over numbered
// slots (no name lookups at run time), with values released after their last
// use so their buffers are reused within the call. A step runs one node
// through the eager ops, an If with two nested plans, a Loop with a nested plan for
// its body, or a fusion group: a
// maximal run of elementwise float ops executed as one tile loop (each op's
// Highway kernel over an L1-sized tile, intermediates kept in per-thread tile
// buffers), so the group reads its inputs and writes its outputs once.
//
// A fusion group runs exactly the kernels the eager ops run, element by
// element in the same order, so its results are bitwise those of the unfused
// plan. Inputs broadcast from one element are read in place; other broadcast
// or strided inputs are first copied to contiguous memory. When an input does
// not fit at all (undefined, another dtype, shapes that do not broadcast), the
// group runs its nodes unfused, so the eager op reports the error.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "graft/autograd/grad_mode.hpp"
#include "graft/core/error.hpp"
#include "graft/core/shape.hpp"
#include "graft/core/tensor.hpp"
#include "graft/ir/graph.hpp"
#include "graft/ir/interpreter.hpp"
#include "graft/ir/kinds.hpp"
#include "graft/ir/print.hpp"
#include "graft/ir/symbolic.hpp"
#include "graft/jit/options.hpp"
#include "graft/jit/profile.hpp"
#include "graft/kernels/dispatch.hpp"
#include "graft/ops/table.hpp"

namespace graft::jit::detail {

using ir::ivalue;
/// A plan run's values, one per slot (on the stack for small graphs).
using frame_t = boost::container::small_vector<ivalue, 24>;
template <class T>
using reg_vector = boost::container::small_vector<T, 32>;  // most groups fit: no allocation per run

// ---------------------------------------------------------------- fusable ops

/// An elementwise op a fusion group can run: unary or binary float arithmetic, a comparison
/// (its bool result a condition inside the group) or where.
struct fusable_op {
    ops::op_kind kind;
    int kernel;  // kernels::unary_op, binary_op or compare_op (where: unused)
    std::string_view name;
};

template <class Op>
constexpr void add_fusable(std::map<const ir::kind_info*, fusable_op>& m) {
    if constexpr (Op::kind == ops::op_kind::unary || Op::kind == ops::op_kind::binary ||
                  Op::kind == ops::op_kind::compare)
        m.emplace(&ir::op_kind_v<Op>, fusable_op{Op::kind, static_cast<int>(Op::kernel), Op::name});
    else if constexpr (Op::kind == ops::op_kind::where)
        m.emplace(&ir::op_kind_v<Op>, fusable_op{Op::kind, 0, Op::name});
}

/// The op table's unary, binary and compare ops and where, by IR kind.
[[nodiscard]] GRAFT_INLINE const std::map<const ir::kind_info*, fusable_op>& fusable_ops();

/// n's fusable op: an op-table entry, normal_cdf, or gelu (its `approximate` attribute picks the
/// kernel); null for any other node.
[[nodiscard]] GRAFT_INLINE const fusable_op* find_fusable(const ir::Node* n);

// ---------------------------------------------------------------- fusion groups

struct fusion_group {
    dtype type = dtype::float32;
    std::vector<const ir::Node*> nodes;  // in order: the unfused fallback
    std::vector<std::vector<int>> node_inputs;  // per node: its input slots
    std::vector<int> node_outputs;              // per node: its output slot
    std::vector<int> input_slots;        // group inputs (tensors or numbers)
    std::vector<int> output_slots;       // values used after the group
    std::vector<int> output_regs;
    std::size_t num_registers = 0;       // [0, inputs) are the inputs, then one per node (how each
                                         // is addressed is decided per run: kernels::operand_mode)
    /// The group as a register program (kernels::run_program): one instruction per node.
    std::vector<kernels::program_instr> code;
    /// STATIC plans: the output sizes, known when the plan was built (loop bounds precomputed).
    std::optional<int_list> static_sizes;
    std::int64_t static_numel = 0;  // of static_sizes
    /// Per output: the group inputs (indices into input_slots) it is computed from. The
    /// program runs at the broadcast shape of all inputs; an output whose own inputs broadcast
    /// to less (two independent chains of different shapes in one group) must not be written
    /// at that shape: such runs go node by node.
    std::vector<std::vector<int>> output_deps;
    /// Comparisons whose bool results are also used after the group (indices into `nodes`):
    /// inside the group they are conditions in registers, so after a fused run these nodes
    /// run once more, eagerly, for the bool tensors.
    std::vector<std::size_t> rerun;
    /// Sums over the leading dimensions of values of the group, computed as the program runs
    /// (kernels::instr_kind::sum_rows, in the eager column reduction's order: the same bits).
    struct leading_sum {
        int source_reg = 0;
        int out_slot = 0;
        std::size_t rank = 0;    // of the summed value
        std::size_t prefix = 0;  // dimensions [0, prefix) are summed
        bool keepdim = false;
    };
    std::vector<leading_sum> sums;
    /// Full sums and means of values of the group (`v.sum()`, `v.mean()`: a loss), computed as
    /// the program runs (kernels::instr_kind::sum_all, in the eager sum kernel's order: the same
    /// bits); threads split such a group at the sum's blocks; never a matmul's epilogue.
    struct full_total {
        int source_reg = 0;
        int out_slot = 0;
        bool mean = false;
    };
    std::vector<full_total> totals;
    /// The matmul whose product the group reads as its epilogue (run chunk by chunk with it).
    const ir::Node* matmul = nullptr;
};

/// Nodes per fusion group at most: each adds at most four registers (where: three inputs and
/// its output), and a program has at most kernels::program_max_registers.
inline constexpr std::size_t max_group_nodes = kernels::program_max_registers / 4;

/// Per-thread scratch tiles for a group's registers (64-byte aligned).
template <class T>
[[nodiscard]] T* program_scratch(std::size_t registers) {
    struct deleter {
        void operator()(void* p) const noexcept { ::operator delete(p, std::align_val_t{64}); }
    };
    thread_local std::unique_ptr<void, deleter> buf;
    thread_local std::size_t cap = 0;
    const std::size_t bytes = std::max<std::size_t>(registers, 1) * kernels::program_scratch_stride<T> * sizeof(T);
    if (bytes > cap) {
        buf.reset();
        cap = 0;
        buf.reset(::operator new(bytes, std::align_val_t{64}));
        cap = bytes;
    }
    return static_cast<T*>(buf.get());
}

/// A small pool of worker threads for splitting large fused loops.
class worker_pool {
public:
    explicit worker_pool(std::size_t threads);
    worker_pool(const worker_pool&) = delete;
    worker_pool& operator=(const worker_pool&) = delete;
    ~worker_pool();
    [[nodiscard]] std::size_t size() const noexcept { return workers_.size(); }

    /// Runs f(0..parts-1): part 0 on the caller, the others on the workers; waits for all.
    void run(std::size_t parts, const std::function<void(std::size_t)>& f);

    /// The process-wide pool, made on first use with `threads - 1` workers, `threads` clamped
    /// to the hardware's thread count (never resized: callers use at most size() + 1 parts).
    [[nodiscard]] static worker_pool& shared(std::size_t threads);

private:
    void loop();
    std::vector<std::thread> workers_;
    std::vector<std::function<void()>> queue_;
    std::mutex mutex_;
    std::condition_variable cv_;
    bool stop_ = false;
};

// ---------------------------------------------------------------- plans

struct block_plan;

struct step {
    enum class kind { node, if_, fused, loop, region, matmul_fused };  // matmul_fused: node, then group
    kind what = kind::node;
    const ir::Node* node = nullptr;
    std::vector<int> in, out;
    std::vector<int> release;  // slots to clear after this step
    std::unique_ptr<block_plan> then_plan, else_plan;  // If; a Loop's body is then_plan
    std::vector<int> body_inputs;                     // Loop: the slots of the body's parameters
    std::unique_ptr<fusion_group> group;
    bool patched = false;  // a node whose attributes are computed from symbolic sizes
    std::size_t region = 0;  // region steps: index into build_options::regions
};

/// A run of consecutive nodes of a top-level block executed as one unit (a differentiable
/// subgraph): `run` maps the values of `inputs` to those of `outputs`.
struct plan_region {
    std::vector<const ir::Node*> nodes;
    std::vector<const ir::Value*> inputs, outputs;
    std::function<std::vector<ivalue>(const std::vector<ivalue>&)> run;
};

struct block_plan {
    std::vector<step> steps;
    std::vector<int> outputs;
};

/// What a plan run reports to a profiling record.
using observer_fn = std::function<void(const ir::Value*, const ivalue&)>;

/// A graph lowered to steps over slots.
class plan {
public:
    /// How a plan is built: the value types fusion may rely on, and whether to fuse.
    struct build_options {
        bool fuse = false;
        bool static_shapes = false;  // fusion groups precompute their loop bounds from the types
        std::size_t num_threads = 1;
        std::size_t parallel_grain = std::size_t{1} << 18;
        /// Attributes computed from the inputs' sizes at every run (DYNAMIC differentiable plans).
        std::shared_ptr<const ir::symbolic_sizes> symbolic;
        /// Runs of nodes of the top-level block executed as one step each.
        std::vector<plan_region> regions;
    };
    using type_of_fn = std::function<std::optional<ir::Type>(const ir::Value*)>;

    plan(std::shared_ptr<const ir::Graph> g, build_options o, const type_of_fn& type_of);

    [[nodiscard]] const ir::Graph& graph() const noexcept { return *graph_; }
    [[nodiscard]] std::size_t num_fusion_groups() const noexcept { return groups_.size(); }
    [[nodiscard]] const std::vector<const fusion_group*>& fusion_groups() const noexcept { return groups_; }

    /// Runs the plan (autograd records as usual where inputs require grad).
    [[nodiscard]] std::vector<ivalue> run(std::span<const ivalue> inputs, const observer_fn* observe = nullptr) const;

    /// The direct path (a STATIC plan that is one fusion group, see plan_direct) on tensor
    /// inputs: false when the plan has none or the inputs do not fit it (nothing run).
    [[nodiscard]] bool has_direct() const noexcept { return direct_ != nullptr; }
    /// `guarded`: the inputs passed the STATIC guards of the types the plan was built with
    /// (exact dtype, sizes and strides), so their layouts are the plan's and are not checked again.
    bool run_direct(std::span<const Tensor> inputs, std::vector<Tensor>& out, bool guarded = false) const;

    /// The plan as text: the graph, then each fusion group's members.
    [[nodiscard]] std::string describe() const;

private:
    int slot(const ir::Value* v);

    /// Can n join a group of dtype `type` (float32/float64)?
    bool fusable(const ir::Node* n, const type_of_fn& type_of, std::optional<dtype>& type) const;

    /// Can sum node n end a group of dtype `type` whose values are `inside` (a sum over leading
    /// dimensions of one of them, of static trailing sizes the column reduction takes)?
    /// Sets rank, prefix and keepdim.
    bool summable(const ir::Node* n, dtype type, const std::set<const ir::Value*>& inside, const type_of_fn& type_of,
                  fusion_group::leading_sum& out) const;

    /// Is n a full sum or mean (no dims, no keepdim: graft::sum(v), graft::mean(v)) of one of
    /// the values `inside` a group of dtype `type`? Sets `mean`.
    bool totalable(const ir::Node* n, dtype type, const std::set<const ir::Value*>& inside, const type_of_fn& type_of,
                   bool& mean) const;

    /// The group's nodes with each value read by one node only moved right before its reader
    /// (adjacent arithmetic runs as one sweep in kernels::run_program); still topological.
    static std::vector<const ir::Node*> producers_before_consumers(const std::vector<const ir::Node*>& nodes,
                                                                   const std::set<const ir::Value*>& used_later);

    std::unique_ptr<fusion_group> make_group(const std::vector<const ir::Node*>& nodes, dtype type,
                                             const std::set<const ir::Value*>& used_later,
                                             const type_of_fn& type_of);

    block_plan build_block(const ir::Block& b, const type_of_fn& type_of);

    /// Moves a matmul down to just before the run of fusable nodes that reads its product,
    /// past nodes that do not read it (straight-line pure blocks only), so that the run
    /// becomes the matmul's epilogue: the backward's `grad_a = g @ w^T` computed after the
    /// independent `grad_w = a^T @ g`, right before the activation's derivative reads it.
    static void sink_matmuls_to_their_epilogues(std::vector<const ir::Node*>& nodes);

    /// Is v made by a node of block b (so b's plan may release it)? Graph inputs and
    /// values of enclosing blocks are released by their own block.
    [[nodiscard]] static bool defined_in(const ir::Value* v, const ir::Block& b) {
        return v->node() != nullptr && v->node()->owning_block() == &b;
    }

    /// `sizes`: the symbols' values for this run (symbolic plans only).
    std::vector<ivalue> run_block(const block_plan& bp, frame_t& frame, const observer_fn* observe,
                                  std::span<const std::int64_t> sizes = {}) const;

    /// Runs node n on the frame's values in slots `in`, storing its results in slots `out`.
    static void run_node(const ir::Node* n, std::span<const int> in_slots, std::span<const int> out_slots,
                         frame_t& frame, const observer_fn* observe);

    /// When `in` broadcasts to `out` as one row repeated over out's leading dimensions (in's
    /// sizes, leading 1s dropped, are out's trailing sizes, and in is smaller): the row's
    /// length; otherwise 0.
    static std::size_t row_period(const int_list& in, const int_list& out) {
        std::size_t lead = 0;
        while (lead < in.size() && in[lead] == 1) ++lead;
        const std::size_t rank = in.size() - lead;
        if (rank == 0 || rank > out.size()) return 0;
        std::size_t period = 1;
        for (std::size_t d = 0; d < rank; ++d) {
            if (in[lead + d] != out[out.size() - rank + d]) return 0;
            period *= static_cast<std::size_t>(in[lead + d]);
        }
        return period < static_cast<std::size_t>(graft::detail::numel_of(out)) ? period : 0;
    }

    /// When `in` (aligned right with `out`, leading size-1 dimensions allowed) matches `out` on
    /// its leading dimensions and is 1 on the rest (layer_norm's [B, T, 1] statistics beside
    /// [B, T, C]): how many consecutive elements of `out` each of its elements covers; else 0.
    static std::size_t column_period(const int_list& in, const int_list& out) {
        if (in.size() > out.size()) return 0;
        const std::size_t pad = out.size() - in.size();
        std::size_t q = out.size();  // the first dimension of the repeated block
        while (q > pad && in[q - 1 - pad] == 1) --q;
        if (q == out.size()) return 0;  // nothing repeated: not a column
        std::size_t period = 1;
        for (std::size_t d = q; d < out.size(); ++d) period *= static_cast<std::size_t>(out[d]);
        for (std::size_t d = 0; d < q; ++d)
            if ((d < pad ? 1 : in[d - pad]) != out[d] && !(d < pad && out[d] == 1)) return 0;
        return period > 1 ? period : 0;
    }

    /// The group's nodes one by one (exact eager semantics, for inputs the tile loop cannot take).
    static void run_group_unfused(const fusion_group& g, frame_t& frame);

    /// Does every output's own broadcast shape equal the group's `sizes`? (Always, when every
    /// tensor input has exactly `sizes`.)
    static bool outputs_have_group_shape(const fusion_group& g, const frame_t& frame, const int_list& sizes);

    /// The group node by node; false (for run_group_typed's callers: not fused).
    static bool fall_back_unfused(const fusion_group& g, frame_t& frame) {
        run_group_unfused(g, frame);
        return false;
    }

    /// A fusion group's operands bound for one fused run (base pointers into `numbers` and `held`:
    /// not movable).
    template <class T>
    struct bound_group {
        bound_group() = default;
        bound_group(const bound_group&) = delete;
        bound_group& operator=(const bound_group&) = delete;
        reg_vector<T*> base;
        reg_vector<kernels::operand_mode> mode;
        reg_vector<std::size_t> periods;  // row registers: the row's length
        reg_vector<T> numbers;
        reg_vector<Tensor> held;  // contiguous copies of broadcast or strided inputs, sum partials
        reg_vector<kernels::row_sum> reductions;
        reg_vector<kernels::full_sum> totals;
        int_list computed;
        const int_list* sizes = nullptr;  // the group's (broadcast) shape
        std::size_t numel = 0;
    };

    /// Binds g's inputs and allocates its outputs (stored in the frame) for a fused run; false
    /// when the tile loop cannot take the inputs (the caller runs the group node by node).
    template <class T>
    bool bind_group(const fusion_group& g, frame_t& frame, bound_group<T>& st) const {
        const std::size_t nregs = g.num_registers;
        const std::size_t ninputs = g.input_slots.size();
        st.base.assign(nregs, nullptr);
        st.mode.assign(nregs, kernels::operand_mode::temp);
        st.periods.assign(nregs, 0);
        st.numbers.assign(ninputs, T(0));
        auto& base = st.base;
        auto& mode = st.mode;
        auto& periods = st.periods;
        auto& numbers = st.numbers;
        auto& held = st.held;
        // Output sizes: precomputed (STATIC) or the broadcast of the tensor inputs.
        int_list& computed = st.computed;
        const int_list* sizes_p = g.static_sizes ? &*g.static_sizes : nullptr;
        std::int64_t numel = g.static_numel;
        if (!sizes_p) {
            bool first = true;
            for (std::size_t k = 0; k < ninputs; ++k)
                if (const Tensor* t = std::get_if<Tensor>(&frame[static_cast<std::size_t>(g.input_slots[k])])) {
                    if (!t->defined()) return false;
                    if (first) computed = t->sizes();
                    else if (t->sizes() != computed &&
                             !graft::detail::try_broadcast_shapes(computed, t->sizes(), computed))
                        return false;  // the eager op reports it (no exception thrown and caught per run)
                    first = false;
                }
            if (first) return false;
            if (!outputs_have_group_shape(g, frame, computed)) return false;
            sizes_p = &computed;
            numel = graft::detail::checked_numel("jit fusion group", computed);
        }
        const int_list& sizes = *sizes_p;
        for (std::size_t k = 0; k < ninputs; ++k) {
            const ivalue& v = frame[static_cast<std::size_t>(g.input_slots[k])];
            if (const Tensor* t = std::get_if<Tensor>(&v)) {
                const graft::detail::tensor_impl* im = t->impl_ptr().get();
                if (im == nullptr || im->type != g.type) return false;
                T* data = static_cast<T*>(im->data->data()) + im->offset;
                if (im->sizes == sizes && graft::detail::is_contiguous_layout(im->sizes, im->strides)) {
                    base[k] = data;
                    mode[k] = kernels::operand_mode::contiguous;
                } else if (im->sizes.size() <= sizes.size() && graft::detail::numel_of(im->sizes) == 1) {
                    base[k] = data;
                    mode[k] = kernels::operand_mode::broadcast;
                } else if (const std::size_t period = row_period(im->sizes, sizes);
                           period > 0 && graft::detail::is_contiguous_layout(im->sizes, im->strides)) {
                    // A row broadcast over the leading dimensions (a bias): the row, then one
                    // tile of it repeated, instead of a copy at the full shape.
                    constexpr std::size_t tile = kernels::program_tile_elements<T>;
                    held.push_back(empty({static_cast<std::int64_t>(period + tile)}, g.type));
                    T* rep = static_cast<T*>(held.back().raw_data());
                    std::memcpy(rep, data, period * sizeof(T));
                    for (std::size_t done = period; done < period + tile;) {  // doubling copies
                        const std::size_t n = std::min(done, period + tile - done);
                        std::memcpy(rep + done, rep, n * sizeof(T));
                        done += n;
                    }
                    base[k] = rep;
                    mode[k] = kernels::operand_mode::row;
                    periods[k] = period;
                } else if (const std::size_t column = column_period(im->sizes, sizes);
                           column > 0 && graft::detail::is_contiguous_layout(im->sizes, im->strides)) {
                    // Each element repeated over a block (a [B, T, 1] statistic): filled as runs,
                    // not through the strided copy of a stride-0 view.
                    held.push_back(empty(sizes, g.type));
                    T* rep = static_cast<T*>(held.back().raw_data());
                    const auto count = static_cast<std::size_t>(graft::detail::numel_of(im->sizes));
                    for (std::size_t e = 0; e < count; ++e) std::fill_n(rep + e * column, column, data[e]);
                    base[k] = rep;
                    mode[k] = kernels::operand_mode::contiguous;
                } else {
                    // Broadcast (a bias row) or strided: one contiguous copy, then fused as usual.
                    try {
                        autograd::no_grad guard;
                        held.push_back(t->expand(sizes).contiguous());
                    } catch (const graft::error&) {
                        return false;  // the eager op reports it
                    }
                    base[k] = held.back().template data_ptr<T>();
                    mode[k] = kernels::operand_mode::contiguous;
                }
            } else {
                if (const auto* d = std::get_if<double>(&v)) numbers[k] = static_cast<T>(*d);
                else if (const auto* i = std::get_if<std::int64_t>(&v)) numbers[k] = static_cast<T>(*i);
                else return false;
                base[k] = &numbers[k];
                mode[k] = kernels::operand_mode::broadcast;
            }
        }
        auto& reductions = st.reductions;
        reductions.assign(g.sums.size(), kernels::row_sum{});
        for (std::size_t k = 0; k < g.sums.size(); ++k) {
            // The eager column reduction's conditions (inner >= 16, rows >= 2), else node by node.
            const auto& s = g.sums[k];
            if (sizes.size() != s.rank || numel == 0) return false;
            std::size_t rows = 1, inner = 1;
            int_list out_sizes;
            for (std::size_t d = 0; d < s.rank; ++d) {
                const auto extent = static_cast<std::size_t>(sizes[d]);
                if (d < s.prefix) {
                    rows *= extent;
                    if (s.keepdim) out_sizes.push_back(1);
                } else {
                    inner *= extent;
                    out_sizes.push_back(sizes[d]);
                }
            }
            if (inner < 16 || rows < 2) return false;
            Tensor out = empty(out_sizes, g.type);
            held.push_back(empty({static_cast<std::int64_t>(inner)}, g.type));
            reductions[k] = kernels::row_sum{out.raw_data(), held.back().raw_data(), inner, rows};
            frame[static_cast<std::size_t>(s.out_slot)] = std::move(out);
        }
        auto& totals = st.totals;
        totals.assign(g.totals.size(), kernels::full_sum{});
        for (std::size_t k = 0; k < g.totals.size(); ++k) {
            // The sum of every element of the group's shape (empty: node by node, as eagerly).
            if (numel == 0) return false;
            const auto n = static_cast<std::size_t>(numel);
            Tensor out = empty({}, g.type);
            held.push_back(empty({static_cast<std::int64_t>(kernels::full_sum_scratch_elements(n))}, g.type));
            totals[k] = kernels::full_sum{out.raw_data(), held.back().raw_data(), n, kernels::sum_block_elements<T>(),
                                          g.totals[k].mean ? static_cast<double>(numel) : 0.0};
            frame[static_cast<std::size_t>(g.totals[k].out_slot)] = std::move(out);
        }
        for (std::size_t k = 0; k < g.output_regs.size(); ++k) {
            Tensor out = empty(sizes, g.type);
            const auto r = static_cast<std::size_t>(g.output_regs[k]);
            base[r] = static_cast<T*>(out.raw_data());
            mode[r] = kernels::operand_mode::output;
            frame[static_cast<std::size_t>(g.output_slots[k])] = std::move(out);
        }
        st.sizes = &sizes;
        st.numel = static_cast<std::size_t>(numel);
        return true;
    }

    /// Runs elements [begin, end) of a bound group; `split`: across the worker pool when large
    /// (never when the group sums over leading dimensions: such sums see the elements in order;
    /// full sums split at their blocks, each block summed by one thread, so the bits do not
    /// depend on the split).
    template <class T>
    void run_bound(const fusion_group& g, bound_group<T>& st, std::size_t begin, std::size_t end, bool split) const {
        const std::size_t nregs = g.num_registers;
        const kernels::program prog{g.code.data(),      g.code.size(),
                                    st.mode.data(),      nregs,
                                    st.periods.data(),   st.reductions.data(),
                                    g.totals.empty() ? nullptr : st.totals.data()};
        T* const* base = st.base.data();
        const std::size_t n = end - begin;
        const std::size_t threads =
            split && g.sums.empty() ? std::min(options_.num_threads, n / std::max<std::size_t>(options_.parallel_grain, 1)) : 1;
        if (threads >= 2) {
            // Split on tile boundaries into chunks (16 per thread) that the threads take in
            // turn from a counter, rather than one fixed share each: a thread that wakes late or
            // shares its core with another program takes fewer chunks, so the loop ends when
            // the work does. Elementwise (full sums: whole blocks per chunk), so every split
            // gives the same bits. Each thread has its own scratch tiles.
            constexpr std::size_t tile = kernels::program_tile_elements<T>;
            const std::size_t tiles = (n + tile - 1) / tile;
            worker_pool& pool = worker_pool::shared(threads);
            const std::size_t parts = std::min(threads, pool.size() + 1);
            std::size_t chunk = std::max<std::size_t>(1, tiles / (parts * 16)) * tile;
            if (!st.totals.empty()) {
                // Full sums take whole blocks of the sum kernel (a multiple of the tile) per chunk.
                const std::size_t block = st.totals[0].block;
                chunk = (chunk + block - 1) / block * block;
            }
            std::atomic<std::size_t> next{0};
            pool.run(parts, [&](std::size_t) {
                T* scratch = program_scratch<T>(nregs);
                for (std::size_t c = next.fetch_add(1, std::memory_order_relaxed); c * chunk < n;
                     c = next.fetch_add(1, std::memory_order_relaxed))
                    kernels::run_program(prog, base, scratch, begin + c * chunk, begin + std::min(n, (c + 1) * chunk));
            });
        } else if (n > 0) {
            kernels::run_program(prog, base, program_scratch<T>(nregs), begin, end);
        }
        for (const kernels::full_sum& fs : st.totals) kernels::finish_full_sum<T>(fs);
    }

    /// Runs the group fused; false when it ran node by node instead.
    template <class T>
    bool run_group_typed(const fusion_group& g, frame_t& frame) const {
        bound_group<T> st;
        if (!bind_group(g, frame, st)) return fall_back_unfused(g, frame);
        run_bound(g, st, 0, st.numel, true);
        return true;
    }

    /// A matmul and the group that reads its result, in row chunks: each chunk's rows of the
    /// product, then the group over them while they are in cache. False when the operands
    /// are not two matrices of the group's dtype or the group is not of the product's shape
    /// (nothing run: the caller runs the matmul node and the group as usual).
    template <class T>
    bool run_matmul_group_typed(const step& s, frame_t& frame) const;

    void run_group(const fusion_group& g, frame_t& frame) const;

    /// A STATIC plan that is one fusion group over the graph's inputs and numbers, whose
    /// outputs are the graph's: run without a frame or steps (the per-call path of small
    /// fused graphs). Each group input is a graph input (index) or a number.
    struct direct_source {
        int input = -1;   // graph input index, or -1: `number`
        double number = 0;
        /// The input's layout from its type, when the type fixes it (sizes and strides known):
        /// contiguous at the group's shape or one broadcast element; unknown: checked per call.
        enum class layout : std::uint8_t { unknown, contiguous, broadcast } known = layout::unknown;
    };
    void plan_direct(const type_of_fn& type_of);
    static constexpr std::size_t direct_max_registers = 32;
    /// `input(i)`: graph input i as a tensor (null: not a tensor); `out`: vector of ivalue or Tensor.
    template <class T, class Input, class Out>
    bool run_direct_typed(const Input& input, std::vector<Out>& out, bool guarded = false) const;

    const fusion_group* direct_ = nullptr;
    std::vector<direct_source> direct_sources_;  // per group input
    std::vector<int> direct_outputs_;  // per graph output: index into the group's outputs, or -1 - i: graph input i

    std::shared_ptr<const ir::Graph> graph_;
    build_options options_;
    std::map<const ir::Value*, int> slots_;
    std::size_t num_slots_ = 0;
    std::vector<int> input_slots_;
    block_plan top_;
    std::vector<const fusion_group*> groups_;
};

}  // namespace graft::jit::detail

#if GRAFT_HAS_GRAPH_CODE
#include "graft/jit/impl/plan.ipp"
#endif
