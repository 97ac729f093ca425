#pragma once
// A thread-local observer of the raw ops, used by graph capture
// (graft/capture): when one is installed, every outermost raw op reports its
// kind, operands, attributes and result, every write into a tensor reports
// its destination before the write, and reading a value (item) reports
// itself. With no observer installed, an op pays one thread-local load.
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "graft/core/scalar.hpp"
#include "graft/core/symint.hpp"

namespace graft {
class Tensor;
class generator;

namespace detail {

/// One operand of an observed op: a tensor or a number.
struct op_operand {
    const Tensor* tensor = nullptr;  // null for a number
    scalar number{0.0};
    op_operand(const Tensor& t) : tensor(&t) {}            // NOLINT: implicit by design
    op_operand(const scalar& s) : number(s) {}             // NOLINT
};

/// An attribute of an observed op (int, float, bool, ints, or a string such as a dtype name).
using op_attr = std::variant<std::int64_t, double, bool, std::vector<std::int64_t>, std::string>;
struct op_attr_entry {
    const char* name;
    op_attr value;
};

/// A branch of graft::cond: the user's function called on the operands (not owned).
struct branch_ref {
    const void* object = nullptr;
    std::vector<Tensor> (*invoke)(const void* object, const std::vector<Tensor>& operands) = nullptr;

    // Defined in graft/core/impl/tensor.ipp (it needs Tensor complete).
    GRAFT_INLINE std::vector<Tensor> operator()(const std::vector<Tensor>& operands) const;
};

/// Receives the ops of the current thread while installed.
class op_observer {
public:
    virtual ~op_observer() = default;
    /// An op `kind` (an IR kind name) produced `result` from `operands` (a span: ops such as
    /// cat take a list whose length is known at run time only).
    virtual void on_op(std::string_view kind, std::span<const op_operand> operands,
                       std::initializer_list<op_attr_entry> attrs, const Tensor& result) = 0;
    /// A random op `kind` drew `result` from `gen` (operands: tensors whose sizes, dtype or
    /// values decide the draw). Graph capture records it as a node that draws when the graph
    /// runs, whether or not any operand is traced: never as a constant.
    virtual void on_random(std::string_view kind, std::span<const op_operand> operands,
                           std::initializer_list<op_attr_entry> attrs, const Tensor& result,
                           const generator& gen) = 0;
    /// `dst` is about to be overwritten with `src` (broadcast and converted to dst's dtype).
    virtual void on_write(const Tensor& dst, const op_operand& src) = 0;
    /// A tensor's value is being read into the program (e.g. item()).
    virtual void on_read(std::string_view what, const Tensor& t) = 0;
    /// Memory was allocated: by an op or factory (`by_op`), or outside any (empty() called by
    /// user code: its contents come from code the observer does not see).
    virtual void on_alloc(const Tensor&, bool by_op);
    /// graft::cond with a one-element bool tensor `pred`: the observer runs the branches its
    /// own way (graph capture records both as a prim::If). The default refuses.
    virtual std::vector<Tensor> on_cond(const Tensor& pred, const branch_ref& then_branch,
                                        const branch_ref& else_branch, const std::vector<Tensor>& operands);
    /// graft::while_loop: graph capture records the loop as a prim::Loop. The default refuses.
    virtual std::vector<Tensor> on_while_loop(const branch_ref& cond_fn, const branch_ref& body_fn,
                                              const std::vector<Tensor>& carried);
    /// Sizes given to an op as SymInts (view_symint, ...), reported before the op runs: graph
    /// capture keeps their expressions so that the graph computes them per call.
    virtual void on_symbolic_sizes(const sym_int_list& sizes) { (void)sizes; }
    /// `result` was made by Tensor::detach(): an alias of its source's memory that reads as
    /// the source's value without a gradient (graph capture records a detach node).
    virtual void on_detach(const Tensor& result) { (void)result; }
};

inline thread_local op_observer* tl_op_observer = nullptr;
inline thread_local int tl_op_depth = 0;

/// Uninstalls the thread's observer while alive (work the observer must not record).
class observer_paused {
public:
    observer_paused() noexcept : saved_(tl_op_observer) { tl_op_observer = nullptr; }
    ~observer_paused() { tl_op_observer = saved_; }
    observer_paused(const observer_paused&) = delete;
    observer_paused& operator=(const observer_paused&) = delete;

private:
    op_observer* saved_;
};

/// Marks one raw op: only the outermost op of a nest is reported.
class observed_op {
public:
    observed_op() noexcept : observer_(tl_op_observer) {
        if (observer_ && tl_op_depth++ != 0) outer_ = false;
    }
    ~observed_op() {
        if (observer_) --tl_op_depth;
    }
    observed_op(const observed_op&) = delete;
    observed_op& operator=(const observed_op&) = delete;

    /// Is this op observed (an observer is installed and this is the outermost op)?
    [[nodiscard]] bool active() const noexcept { return observer_ != nullptr && outer_; }
    void record(std::string_view kind, std::initializer_list<op_operand> operands, const Tensor& result,
                std::initializer_list<op_attr_entry> attrs = {}) const {
        if (active()) observer_->on_op(kind, std::span(operands.begin(), operands.size()), attrs, result);
    }
    /// Reports `out` (when active) and returns it.
    template <class T>
    T done(T out, std::string_view kind, std::initializer_list<op_operand> operands,
           std::initializer_list<op_attr_entry> attrs = {}) const {
        if (active()) observer_->on_op(kind, std::span(operands.begin(), operands.size()), attrs, out);
        return out;
    }
    /// done() for a random op drawing from `gen` (reported through on_random).
    template <class T>
    T random_done(T out, std::string_view kind, std::initializer_list<op_operand> operands,
                  std::initializer_list<op_attr_entry> attrs, const generator& gen) const {
        if (active()) observer_->on_random(kind, std::span(operands.begin(), operands.size()), attrs, out, gen);
        return out;
    }
    /// done() for an op whose operand count is known at run time only (cat).
    template <class T>
    T done_list(T out, std::string_view kind, std::span<const op_operand> operands,
                std::initializer_list<op_attr_entry> attrs = {}) const {
        if (active()) observer_->on_op(kind, operands, attrs, out);
        return out;
    }
    void write(const Tensor& dst, const op_operand& src) const {
        if (active()) observer_->on_write(dst, src);
    }

private:
    op_observer* observer_;
    bool outer_ = true;
};

/// Reports an allocation (made by an observed op or factory, or outside any), if an observer
/// is installed.
inline void observe_alloc(const Tensor& t) {
    if (tl_op_observer) tl_op_observer->on_alloc(t, tl_op_depth != 0);
}

/// Reports a detached alias (Tensor::detach) made outside any observed op, if an observer is installed.
inline void observe_detach(const Tensor& result) {
    if (tl_op_observer && tl_op_depth == 0) tl_op_observer->on_detach(result);
}

/// Reports a read of t's value to the installed observer, if any.
inline void observe_read(std::string_view what, const Tensor& t) {
    if (tl_op_observer && tl_op_depth == 0) tl_op_observer->on_read(what, t);
}

[[nodiscard]] inline std::vector<std::int64_t> to_vector(const auto& list) {
    return std::vector<std::int64_t>(list.begin(), list.end());
}

}  // namespace detail
}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/core/detail/impl/op_observer.ipp"
#endif
