#pragma once
// graft/expr/function.hpp: a traced expression as ONE node of the eager autograd graph.
//
//   auto f = ex::function(e);                       // or ex::function(e, ex::save_policy::recompute)
//   Tensor y = f(x, w);                             // fused forward; y.grad_fn()->name() == "FusedBackward"
//   y.sum().backward();                             // fused backward, gradients summed to x's and w's shapes
//
// * Forward: when grad mode is on and a tensor argument requires grad, the forward graph of
//   ex::joint(e, policy) runs fused: it writes e's outputs and the values the backward
//   reads (per the save policy) in the same pass. Otherwise e itself runs (nothing saved).
// * The node saves (through function_node::save, so saved-tensor hooks apply) the tensor
//   arguments the backward graph reads and the saved values; numbers are kept by value.
// * Backward: the joint backward graph runs fused on (inputs, output gradients, saved
//   values); each gradient is summed back to its input's shape (graft::sum_to_size) and
//   converted to its dtype. Gradients of outputs that did not reach the loss are zeros.
// * Double backward (create_graph = true): the backward graph is interpreted with eager
//   graft ops (ex::interpret_all), so the gradients are themselves differentiable.
// * Several outputs: f(...) returns std::array<Tensor, M>; one output: a Tensor.
// * Reductions (sum/mean outputs) are 0-dim outputs; the backward runs over the forward's
//   evaluation domain (the broadcast shape of the arguments), so a 0-dim output gradient
//   broadcasts over it like a number.
#include <array>
#include <cstddef>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "graft/autograd/engine.hpp"
#include "graft/autograd/functions.hpp"
#include "graft/autograd/grad_mode.hpp"
#include "graft/core/tensor.hpp"
#include "graft/expr/eval.hpp"
#include "graft/expr/grad.hpp"
#include "graft/expr/interpret.hpp"

namespace graft::expr {

namespace detail {

/// Does graph G read input K?
template <class G, std::size_t K>
struct reads_input;
template <class... Is, class O, std::size_t L, std::size_t K>
struct reads_input<graph<instrs<Is...>, O, L>, K> : std::bool_constant<(std::is_same_v<Is, input<K>> || ...)> {};

/// grad<0, ..., N-1>(e): every input's gradient, recomputing forward values (used for
/// differentiable backward passes, where saved values would be constants).
template <class G, std::size_t... Is>
[[nodiscard]] auto full_grad(const traced<G>& e, std::index_sequence<Is...>) {
    return grad<Is...>(e);
}

template <class A>
[[nodiscard]] bool arg_requires_grad(const A& a) {
    if constexpr (is_number_v<A>) {
        (void)a;
        return false;
    } else {
        return a.requires_grad();
    }
}

}  // namespace detail

/// A callable that evaluates traced expression `G` fused and records one eager autograd
/// node ("FusedBackward") whose backward is the fused backward graph.
template <class G, class Policy = save_policy::save_all_t>
class function_t {
public:
    using graph_type = G;
    using joint_type = decltype(joint(std::declval<const traced<G>&>(), Policy{}));
    static constexpr std::size_t num_outputs = G::results::size;

    explicit function_t(const traced<G>& e)
        : e_(e), j_(joint(e, Policy{})), r_(detail::full_grad(e, std::make_index_sequence<joint_type::num_inputs>{})) {}

    /// The traced expression and its joint forward/backward graphs.
    [[nodiscard]] const traced<G>& expression() const noexcept { return e_; }
    [[nodiscard]] const joint_type& joint_graphs() const noexcept { return j_; }

    template <detail::argument... Args>
    [[nodiscard]] auto operator()(const Args&... args) const {
        static_assert(sizeof...(Args) == joint_type::num_inputs,
                      "graft::expr::function(e)(args...): the number of arguments must equal e's arity");
        std::array<Tensor, num_outputs> outs = forward(args...);
        if constexpr (num_outputs == 1) return outs[0];
        else return outs;
    }

private:
    static constexpr std::size_t N = joint_type::num_inputs;
    static constexpr std::size_t M = joint_type::num_outputs;
    static constexpr std::size_t S = joint_type::num_saved;
    using F = typename decltype(std::declval<joint_type>().forward)::graph_type;
    using B = typename decltype(std::declval<joint_type>().backward)::graph_type;
    using R_traced = decltype(detail::full_grad(std::declval<const traced<G>&>(), std::make_index_sequence<N>{}));
    using R = typename R_traced::graph_type;
    // Tensor argument K is saved when the fused backward or the differentiable one reads it.
    template <std::size_t K>
    static constexpr bool keeps_input = detail::reads_input<B, K>::value || detail::reads_input<R, K>::value;

    template <class... Args>
    std::array<Tensor, M> forward(const Args&... args) const {
        const bool record = autograd::is_grad_enabled() && (detail::arg_requires_grad(args) || ...);
        if (!record) {
            autograd::no_grad guard;
            return evaluate_all(e_, args...);
        }
        std::array<Tensor, M + S> all;
        {
            autograd::no_grad guard;
            all = evaluate_all(j_.forward, args...);
        }
        auto node = std::make_shared<autograd::function_node>("FusedBackward");
        // One edge per argument (numbers get an invalid edge, as inputs that need no gradient).
        (node->add_next_edge(edge_of(args)), ...);
        // Saved: the tensor arguments the backward reads, then the saved values.
        [&]<std::size_t... Ks>(std::index_sequence<Ks...>) {
            (save_arg<Ks>(*node, args), ...);
        }(std::make_index_sequence<N>{});
        std::array<Tensor, M> outs;
        for (std::size_t j = 0; j < M; ++j) {
            outs[j] = all[j];
            autograd::detail::set_history(outs[j], node);
        }
        for (std::size_t s = 0; s < S; ++s) {
            // A saved value that is also an output is saved as this node's output.
            bool is_output = false;
            for (std::size_t j = 0; j < M; ++j) is_output = is_output || all[M + s].is_same(all[j]);
            node->save(all[M + s], is_output);
        }
        std::array<int_list, N> in_sizes;
        std::array<dtype, N> in_types{};
        std::size_t k = 0;
        (
            [&] {
                if constexpr (!detail::is_number_v<Args>) {
                    in_sizes[k] = args.sizes();
                    in_types[k] = args.type();
                }
                ++k;
            }(),
            ...);
        std::array<int_list, M> out_sizes;
        std::array<dtype, M> out_types{};
        for (std::size_t j = 0; j < M; ++j) {
            out_sizes[j] = outs[j].sizes();
            out_types[j] = outs[j].type();
        }
        // The forward's evaluation domain: the broadcast shape of the tensor arguments.
        int_list domain;
        for (std::size_t q = 0; q < N; ++q) domain = broadcast_shapes(domain, in_sizes[q]);
        node->backward = backward_fn<Args...>{j_.backward, r_, std::make_tuple(number_or_zero(args)...),
                                              std::move(in_sizes), in_types, std::move(out_sizes), out_types,
                                              std::move(domain)};
        return outs;
    }

    template <class A>
    static autograd::Edge edge_of(const A& a) {
        if constexpr (detail::is_number_v<A>) {
            (void)a;
            return autograd::Edge{};
        } else {
            return autograd::detail::gradient_edge(a);
        }
    }

    template <std::size_t K, class A>
    static void save_arg(autograd::function_node& node, const A& a) {
        if constexpr (!detail::is_number_v<A> && keeps_input<K>) node.save(a);
    }

    template <class A>
    static auto number_or_zero(const A& a) {
        if constexpr (detail::is_number_v<A>) return a;
        else return 0.0;
    }

    /// The node's backward: the fused backward graph on (inputs, grads, saved).
    template <class... Args>
    struct backward_fn {
        traced<B> bwd;
        R_traced rec;
        std::tuple<decltype(number_or_zero(std::declval<const Args&>()))...> numbers;
        std::array<int_list, N> in_sizes;
        std::array<dtype, N> in_types;
        std::array<int_list, M> out_sizes;
        std::array<dtype, M> out_types;
        int_list domain;

        autograd::tensor_list operator()(autograd::function_node& n, const autograd::tensor_list& g) const {
            // Unpack saved tensors in save order.
            std::size_t slot = 0;
            std::array<Tensor, N> saved_in;
            [&]<std::size_t... Ks>(std::index_sequence<Ks...>) {
                (
                    [&] {
                        using A = std::tuple_element_t<Ks, std::tuple<Args...>>;
                        if constexpr (!detail::is_number_v<A> && keeps_input<Ks>) saved_in[Ks] = n.saved(slot++);
                    }(),
                    ...);
            }(std::make_index_sequence<N>{});
            std::array<Tensor, S> saved_vals;
            for (std::size_t s = 0; s < S; ++s) saved_vals[s] = n.saved(slot++);
            std::array<Tensor, M> grads;
            for (std::size_t j = 0; j < M; ++j)
                grads[j] = j < g.size() && g[j].defined() ? g[j] : zeros(out_sizes[j], out_types[j]);

            const bool create_graph = autograd::is_grad_enabled();
            std::array<Tensor, N> din = [&]<std::size_t... Ks, std::size_t... Js, std::size_t... Ss>(
                                            std::index_sequence<Ks...>, std::index_sequence<Js...>,
                                            std::index_sequence<Ss...>) {
                if (create_graph) {
                    // Differentiable backward: the recomputing gradient graph with eager ops
                    // (saved forward values would be constants to a second differentiation).
                    return detail::interpret_all_in(domain, rec, arg_for<Ks, R>(saved_in)..., grads[Js]...);
                }
                // Over the forward's domain: arguments the graph does not read are numbers here.
                return detail::evaluate_graph<B, N>(bwd.literals.data(), nullptr, &domain,
                                                    arg_for<Ks, B>(saved_in)..., grads[Js]..., saved_vals[Ss]...);
            }(std::make_index_sequence<N>{}, std::make_index_sequence<M>{}, std::make_index_sequence<S>{});

            autograd::tensor_list out(N);
            for (std::size_t k = 0; k < N; ++k) {
                if (!n.needs_input_grad(k) || !din[k].defined()) continue;
                // A gradient smaller than the domain (e.g. 0-dim: d sum(x)/dx = g) broadcasts first.
                const Tensor dk = din[k].sizes() == domain ? din[k] : din[k].expand(domain);
                Tensor gk = dk.sizes() == in_sizes[k] ? dk : sum_to_size(dk, in_sizes[k]);
                out[k] = gk.type() == in_types[k] ? gk : gk.to(in_types[k]);
            }
            return out;
        }

        // Argument K of the backward graph: the saved tensor, the number, or a 0.0
        // placeholder for a tensor input the backward does not read.
        template <std::size_t K, class Graph>
        auto arg_for(const std::array<Tensor, N>& saved_in) const {
            using A = std::tuple_element_t<K, std::tuple<Args...>>;
            if constexpr (!detail::is_number_v<A> && detail::reads_input<Graph, K>::value) return saved_in[K];
            else return std::get<K>(numbers);
        }
    };

    traced<G> e_;
    joint_type j_;
    R_traced r_;
};

namespace detail {

template <std::size_t Shift, class I>
struct shift_instr {
    using type = I;
};
template <std::size_t Shift, class Op, std::size_t... A>
struct shift_instr<Shift, apply<Op, A...>> {
    using type = apply<Op, (A + Shift)...>;
};

/// One graph computing G1's outputs then G2's (same inputs and literals), not yet cse'd.
template <class G1, class G2>
struct concat_graphs;
template <class... I1, std::size_t... O1, std::size_t L1, class... I2, std::size_t... O2, std::size_t L2>
struct concat_graphs<graph<instrs<I1...>, outputs<O1...>, L1>, graph<instrs<I2...>, outputs<O2...>, L2>> {
    static constexpr std::size_t shift = sizeof...(I1);
    using type = graph<instrs<I1..., typename shift_instr<shift, I2>::type...>, outputs<O1..., (O2 + shift)...>,
                       (L1 > L2 ? L1 : L2)>;
};

}  // namespace detail

/// Forward and backward as ONE graph, for a single fused pass when the output gradients
/// are known up front (no autograd): inputs (e's N inputs, then one gradient per output
/// of e) -> (e's outputs..., d/d(input w) for w in Wrt...). Gradients have the outputs'
/// broadcast shape (sum them back with graft::sum_to_size). Shared forward values are
/// computed once (cse).
template <std::size_t... Wrt, class G>
[[nodiscard]] auto value_and_grad(const traced<G>& e) {
    using R = typename decltype(grad<Wrt...>(e))::graph_type;
    using C = typename detail::concat_graphs<G, R>::type;
    return optimize<pipeline<cse, dce>>(traced<C>{e.literals});
}

/// Wraps traced expression `e` as a callable recording one "FusedBackward" autograd node.
/// `policy`: what the forward saves for the backward (ex::save_policy::save_all (default),
/// ::recompute, ::recompute_cheap or your own save policy type).
template <class G, class Policy = save_policy::save_all_t>
[[nodiscard]] function_t<G, Policy> function(const traced<G>& e, Policy = {}) {
    return function_t<G, Policy>(e);
}

}  // namespace graft::expr
