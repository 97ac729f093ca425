#pragma once
// A simple eager interpreter for expression graphs: runs each instruction with
// the op table's `call` on graft::Tensor values (so autograd records it when an
// argument requires grad). It is the reference the fused evaluator is tested
// against, and how the graph and gradient tests check graphs numerically.
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

template <class I>
struct interpret_instr;
template <std::size_t I>
struct interpret_instr<input<I>> {
    template <std::size_t L>
    static Tensor run(const std::vector<Tensor>&, const std::vector<Tensor>& args, const std::array<double, L>&,
                      dtype) {
        return args[I];
    }
};
template <double V>
struct interpret_instr<constant<V>> {
    template <std::size_t L>
    static Tensor run(const std::vector<Tensor>&, const std::vector<Tensor>&, const std::array<double, L>&, dtype t) {
        return scalar_tensor(V, t);
    }
};
template <std::size_t K>
struct interpret_instr<literal<K>> {
    template <std::size_t L>
    static Tensor run(const std::vector<Tensor>&, const std::vector<Tensor>&, const std::array<double, L>& lits,
                      dtype t) {
        return scalar_tensor(lits[K], t);
    }
};
template <class Op, std::size_t... A>
struct interpret_instr<apply<Op, A...>> {
    template <std::size_t L>
    static Tensor run(const std::vector<Tensor>& vals, const std::vector<Tensor>&, const std::array<double, L>&,
                      dtype) {
        return Op::call(vals[A]...);
    }
};

template <class... Is, std::size_t... O, std::size_t L, class... Args>
std::array<Tensor, sizeof...(O)> interpret_graph(graph<instrs<Is...>, outputs<O...>, L>*,
                                                 const std::array<double, L>& lits, const Args&... args) {
    dtype type = default_float_dtype;
    bool found = false;
    (first_tensor_type(args, type, found), ...);
    const std::vector<Tensor> in{interpret_arg(args, type)...};
    std::vector<Tensor> vals;
    vals.reserve(sizeof...(Is));
    (vals.push_back(interpret_instr<Is>::run(vals, in, lits, type)), ...);
    return {vals[O]...};
}

}  // namespace detail

/// Every output of `e` computed eagerly from `args` (Tensors or numbers; numbers
/// and constants become 0-dim tensors of the first Tensor argument's dtype).
template <class G, class... Args>
[[nodiscard]] auto interpret_all(const traced<G>& e, const Args&... args) {
    static_assert(((std::is_same_v<Args, Tensor> || std::is_arithmetic_v<Args>) && ...),
                  "graft::expr::interpret(e, args...): arguments must be graft::Tensor or numbers");
    return detail::interpret_graph(static_cast<G*>(nullptr), e.literals, args...);
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
