#pragma once
// A simple eager interpreter for expression graphs: runs each instruction with
// the op table's `call` on graft::Tensor values (so autograd records it when an
// argument requires grad). It is the reference the fused evaluator is tested
// against, and how the graph and gradient tests check graphs numerically.
// Reductions run graft::sum / graft::mean over the evaluation domain (the broadcast
// shape of all tensor arguments: the operand is expanded to it first), and `numel` is
// that domain's element count, as in the fused evaluator.
#include <array>
#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/autograd/engine.hpp"
#include "graft/autograd/functions.hpp"
#include "graft/autograd/tensor_methods.hpp"
#include "graft/core/factories.hpp"
#include "graft/core/tensor.hpp"
#include "graft/expr/graph.hpp"

namespace graft::expr {

namespace detail {

template <class T>
Tensor interpret_arg(const T& a, dtype type) {
    if constexpr (std::is_same_v<std::remove_cvref_t<T>, Tensor>) return a;
    else return scalar_tensor(static_cast<double>(a), type);
}

template <class A>
void first_tensor_type(const A& a, dtype& t, bool& found) {
    if constexpr (std::is_same_v<std::remove_cvref_t<A>, Tensor>) {
        if (!found) {
            t = a.type();
            found = true;
        }
    }
}

/// What every instruction may read: argument tensors, literal values, the dtype of
/// numbers, and the evaluation domain (the broadcast shape of all arguments).
template <std::size_t L>
struct interpret_context {
    const std::vector<Tensor>& args;
    const std::array<double, L>& lits;
    dtype type;
    const int_list& domain;
};

template <class I>
struct interpret_instr;
template <std::size_t I>
struct interpret_instr<input<I>> {
    template <class Ctx>
    static Tensor run(const std::vector<Tensor>&, const Ctx& c) {
        return c.args[I];
    }
};
template <double V>
struct interpret_instr<constant<V>> {
    template <class Ctx>
    static Tensor run(const std::vector<Tensor>&, const Ctx& c) {
        return scalar_tensor(V, c.type);
    }
};
template <std::size_t K>
struct interpret_instr<literal<K>> {
    template <class Ctx>
    static Tensor run(const std::vector<Tensor>&, const Ctx& c) {
        return scalar_tensor(c.lits[K], c.type);
    }
};
template <>
struct interpret_instr<numel> {
    template <class Ctx>
    static Tensor run(const std::vector<Tensor>&, const Ctx& c) {
        return scalar_tensor(static_cast<double>(graft::detail::numel_of(c.domain)), c.type);
    }
};
template <class Op, std::size_t... A>
struct interpret_instr<apply<Op, A...>> {
    template <class Ctx>
    static Tensor run(const std::vector<Tensor>& vals, const Ctx& c) {
        if constexpr (reduction_op<Op>) {
            // Over the domain, as the fused evaluator: the operand broadcast to it first.
            constexpr std::size_t ids[] = {A...};
            const Tensor& v = vals[ids[0]];
            const Tensor x = v.sizes() == c.domain ? v : v.expand(c.domain);
            if constexpr (Op::divides_by_numel) return graft::mean(x);
            else return graft::sum(x);
        } else {
            return Op::call(vals[A]...);
        }
    }
};

/// The broadcast shape of the tensor arguments (and of `domain`, if given).
template <class... Args>
int_list interpret_domain(const int_list* domain, const Args&... args) {
    int_list shape = domain != nullptr ? *domain : int_list{};
    (
        [&] {
            if constexpr (std::is_same_v<std::remove_cvref_t<Args>, Tensor>) shape = broadcast_shapes(shape, args.sizes());
        }(),
        ...);
    return shape;
}

template <class... Is, std::size_t... O, std::size_t L, class... Args>
std::array<Tensor, sizeof...(O)> interpret_graph(graph<instrs<Is...>, outputs<O...>, L>*,
                                                 const std::array<double, L>& lits, const int_list* domain,
                                                 const Args&... args) {
    dtype type = default_float_dtype;
    bool found = false;
    (first_tensor_type(args, type, found), ...);
    const std::vector<Tensor> in{interpret_arg(args, type)...};
    const int_list shape = interpret_domain(domain, args...);
    const interpret_context<L> ctx{in, lits, type, shape};
    std::vector<Tensor> vals;
    vals.reserve(sizeof...(Is));
    (vals.push_back(interpret_instr<Is>::run(vals, ctx)), ...);
    return {vals[O]...};
}

/// interpret_all over the evaluation domain `domain` (broadcast with the arguments'
/// shapes): used for backward graphs, whose domain is their forward's.
template <class G, class... Args>
[[nodiscard]] auto interpret_all_in(const int_list& domain, const traced<G>& e, const Args&... args) {
    return interpret_graph(static_cast<G*>(nullptr), e.literals, &domain, args...);
}

}  // namespace detail

/// Every output of `e` computed eagerly from `args` (Tensors or numbers; numbers
/// and constants become 0-dim tensors of the first Tensor argument's dtype;
/// reductions are 0-dim tensors).
template <class G, class... Args>
[[nodiscard]] auto interpret_all(const traced<G>& e, const Args&... args) {
    static_assert(((std::is_same_v<Args, Tensor> || std::is_arithmetic_v<Args>) && ...),
                  "graft::expr::interpret(e, args...): arguments must be graft::Tensor or numbers");
    return detail::interpret_graph(static_cast<G*>(nullptr), e.literals, nullptr, args...);
}

/// The single output of `e` computed eagerly from `args`.
template <class G, class... Args>
[[nodiscard]] Tensor interpret(const traced<G>& e, const Args&... args) {
    static_assert(G::results::size == 1,
                  "graft::expr::interpret(e, args...): e has several outputs; use interpret_all");
    return interpret_all(e, args...)[0];
}

/// Sums (or broadcasts) a gradient of the outputs' shape to `sizes`, the shape of the input it belongs to.
[[nodiscard]] inline Tensor sum_to(const Tensor& g, const int_list& sizes) {
    const int_list full = broadcast_shapes(g.sizes(), sizes);
    const Tensor e = g.sizes() == full ? g : g.expand(full);
    return sum_to_size(e, sizes).contiguous();
}

}  // namespace graft::expr
