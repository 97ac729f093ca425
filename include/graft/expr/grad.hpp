#pragma once
// Compile-time reverse-mode differentiation. Derivatives come only from the op
// table: each op's generic `grad_<i>(g, inputs..., out)` is instantiated with
// expression values (`ref` to graph instructions; numbers in the formulas become
// compile-time constants, zeros_like(g) the constant 0), and the expression it
// returns is appended to the graph.
//
//   grad<wrt...>(e)   backward graph. Inputs: the N inputs of e, then one gradient
//                     per output of e (input<N + j> is d(loss)/d(output j)).
//                     Outputs: d(loss)/d(input w) for each w in wrt, of the
//                     outputs' broadcast shape (sum back to the input's shape).
//                     Forward values the backward reads are recomputed in it.
//   joint(e, policy)  forward graph: inputs -> outputs of e, then the saved values;
//                     backward graph: inputs (e's N inputs, M output gradients,
//                     S saved values, in this order) -> one gradient per input.
//                     The policy decides per forward value the backward reads:
//                     save it (an extra forward output) or recompute it in the
//                     backward from inputs and other values.
// Results are cse'd and dce'd; run your own pipeline on them with optimize<>.
#include <algorithm>
#include <concepts>
#include <cstddef>
#include <string_view>
#include <vector>

#include "graft/expr/graph.hpp"
#include "graft/expr/passes.hpp"
#include "graft/expr/program.hpp"
#include "graft/expr/trace.hpp"

namespace graft::expr {

namespace detail {

inline constexpr std::size_t no_id = static_cast<std::size_t>(-1);

struct grad_state {
    program p;                     // forward instructions (ids < n), then the backward ones
    std::size_t n = 0;             // number of forward instructions
    std::size_t num_inputs = 0;    // N
    std::size_t num_outputs = 0;   // M
    std::size_t bad_output = no_id;  // an output that is not differentiable (bool)
};

/// Calls Op::grad_K with refs, if the op defines that derivative.
template <std::size_t K, class Op>
constexpr bool call_grad(program& q, const instr_data& d, std::size_t self, std::size_t adj, std::size_t& result) {
    const ref g{adj}, y{self};
    if constexpr (Op::arity == 1) {
        if constexpr (K == 0 && requires { Op::grad_0(g, g, y); }) {
            result = emitter{q, true}(Op::grad_0(g, ref{d.args[0]}, y));
            return true;
        }
    } else if constexpr (Op::arity == 2) {
        const ref a{d.args[0]}, b{d.args[1]};
        if constexpr (K == 0 && requires { Op::grad_0(g, a, b, y); }) {
            result = emitter{q, true}(Op::grad_0(g, a, b, y));
            return true;
        } else if constexpr (K == 1 && requires { Op::grad_1(g, a, b, y); }) {
            result = emitter{q, true}(Op::grad_1(g, a, b, y));
            return true;
        }
    } else {
        const ref c{d.args[0]}, a{d.args[1]}, b{d.args[2]};
        if constexpr (K == 1 && requires { Op::grad_1(g, c, a, b, y); }) {
            result = emitter{q, true}(Op::grad_1(g, c, a, b, y));
            return true;
        } else if constexpr (K == 2 && requires { Op::grad_2(g, c, a, b, y); }) {
            result = emitter{q, true}(Op::grad_2(g, c, a, b, y));
            return true;
        }
    }
    return false;
}

/// Reverse-mode sweep over program p for the inputs in `wrt`. Not cse'd.
[[nodiscard]] constexpr grad_state build_grad(const program& p, const std::vector<std::size_t>& wrt) {
    grad_state s;
    s.p = p;
    s.n = p.nodes.size();
    s.num_inputs = p.num_inputs();
    s.num_outputs = p.outs.size();
    program& q = s.p;
    const std::size_t n = s.n;
    constexpr std::size_t add = op_index_v<ops::def::add_op>;

    // char, not bool: clang cannot constant-evaluate libstdc++'s std::vector<bool> (its
    // _M_allocate assigns to words it never constructed; llvm/llvm-project#85553).
    std::vector<char> needs(n, false);
    for (std::size_t i = 0; i < n; ++i) {
        const instr_data& d = p.nodes[i];
        if (d.kind == instr_kind::input) {
            needs[i] = std::find(wrt.begin(), wrt.end(), d.index) != wrt.end();
        } else if (d.kind == instr_kind::apply && !p.is_bool(i)) {
            bool diff = false;
            visit_op(d.index, [&](auto op) { diff = decltype(op)::differentiable; });
            for (std::size_t k = 0; k < d.nargs; ++k) needs[i] = needs[i] || (diff && needs[d.args[k]]);
        }
    }
    for (std::size_t j = 0; j < s.num_outputs; ++j)
        if (p.is_bool(p.outs[j]) && s.bad_output == no_id) s.bad_output = j;

    std::vector<std::size_t> adj(n, no_id);
    auto accumulate = [&](std::size_t target, std::size_t contribution) {
        adj[target] = adj[target] == no_id ? contribution : q.push(make_apply(add, adj[target], contribution));
    };
    for (std::size_t j = 0; j < s.num_outputs; ++j) {
        const std::size_t g = q.push(make_input(s.num_inputs + j));
        if (needs[p.outs[j]]) accumulate(p.outs[j], g);
    }
    for (std::size_t i = n; i-- > 0;) {
        const instr_data d = p.nodes[i];
        if (d.kind != instr_kind::apply || adj[i] == no_id) continue;
        visit_op(d.index, [&](auto op) {
            using Op = decltype(op);
            if constexpr (Op::differentiable) {
                auto one = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
                    if constexpr (K < static_cast<std::size_t>(Op::arity)) {
                        if (!needs[d.args[K]]) return;
                        std::size_t r = no_id;
                        if (call_grad<K, Op>(q, d, i, adj[i], r)) accumulate(d.args[K], r);
                    }
                };
                one(std::integral_constant<std::size_t, 0>{});
                one(std::integral_constant<std::size_t, 1>{});
                one(std::integral_constant<std::size_t, 2>{});
            }
        });
    }
    std::vector<std::size_t> outs;
    for (std::size_t w : wrt) {
        std::size_t r = no_id;
        for (std::size_t i = 0; i < n; ++i)
            if (p.nodes[i].kind == instr_kind::input && p.nodes[i].index == w) r = adj[i];
        outs.push_back(r == no_id ? q.push(make_constant(0.0)) : r);
    }
    q.outs = outs;
    return s;
}

template <class G, std::size_t... Wrt>
struct grad_builder {
    static constexpr grad_state state() { return build_grad(encode<G>(), {Wrt...}); }
    static constexpr std::size_t bad_output = state().bad_output;
    static constexpr std::size_t num_inputs = encode<G>().num_inputs();
    static constexpr program build() { return dce_program(cse_program(state().p)); }
};

}  // namespace detail

/// Backward graph of e with respect to inputs Wrt... (see the top of this file).
template <std::size_t... Wrt, class G>
[[nodiscard]] auto grad(const traced<G>& e) {
    using B = detail::grad_builder<G, Wrt...>;
    static_assert(sizeof...(Wrt) > 0, "graft::expr::grad<wrt...>(e): name at least one input to differentiate by");
    static_assert(((Wrt < B::num_inputs) && ...),
                  "graft::expr::grad<wrt...>(e): every wrt index must be an input of e (0 <= wrt < N)");
    static_assert(B::bad_output == detail::no_id,
                  "graft::expr::grad: an output of the expression is a comparison or logical (bool) result, "
                  "which is not differentiable");
    if constexpr (sizeof...(Wrt) > 0 && B::bad_output == detail::no_id && ((Wrt < B::num_inputs) && ...))
        return traced<program_graph_t<B>>{e.literals};
}

// ---------------------------------------------------------------- joint forward + backward

namespace save_policy {
/// Save every forward value the backward reads (least recomputation, most memory).
struct save_all_t {
    static constexpr bool save(std::string_view /*op*/) { return true; }
};
/// Save nothing: the backward recomputes every forward value from the inputs.
struct recompute_t {
    static constexpr bool save(std::string_view /*op*/) { return false; }
};
/// Save results of transcendental ops, recompute cheap arithmetic.
struct recompute_cheap_t {
    static constexpr bool save(std::string_view op) {
        constexpr std::string_view costly[] = {"exp", "log",  "sqrt",  "rsqrt", "tanh", "sigmoid",
                                               "sin", "cos", "log1p", "expm1", "pow"};
        for (auto c : costly)
            if (c == op) return true;
        return false;
    }
};
inline constexpr save_all_t save_all{};
inline constexpr recompute_t recompute{};
inline constexpr recompute_cheap_t recompute_cheap{};
}  // namespace save_policy

/// A save policy: `static constexpr bool save(std::string_view op_name)` says whether
/// the result of a forward op that the backward reads is saved (else recomputed).
template <class P>
concept save_policy_type = requires(std::string_view name) {
    { P::save(name) } -> std::convertible_to<bool>;
};

namespace detail {

struct joint_state {
    program forward;
    program backward;
    std::size_t num_saved = 0;
};

template <class Policy>
[[nodiscard]] constexpr joint_state build_joint(const program& p) {
    const std::size_t N = p.num_inputs(), M = p.outs.size();
    std::vector<std::size_t> wrt;
    for (std::size_t i = 0; i < N; ++i) wrt.push_back(i);
    grad_state s = build_grad(p, wrt);
    const program& q = s.p;
    const std::size_t n = s.n, total = q.nodes.size();

    std::vector<char> live(total, false);  // char, not bool: see build_grad
    for (std::size_t o : q.outs) live[o] = true;
    for (std::size_t i = total; i-- > 0;)
        if (live[i])
            for (std::size_t k = 0; k < q.nodes[i].nargs; ++k) live[q.nodes[i].args[k]] = true;

    // 0 undecided, 1 saved, 2 recomputed
    std::vector<int> decision(n, 0);
    std::vector<std::size_t> work;
    for (std::size_t i = n; i < total; ++i)
        if (live[i])
            for (std::size_t k = 0; k < q.nodes[i].nargs; ++k) work.push_back(q.nodes[i].args[k]);
    while (!work.empty()) {
        const std::size_t f = work.back();
        work.pop_back();
        if (f >= n || !q.is_apply(f) || decision[f] != 0) continue;
        if (Policy::save(q.op_name(f))) {
            decision[f] = 1;
        } else {
            decision[f] = 2;
            for (std::size_t k = 0; k < q.nodes[f].nargs; ++k) work.push_back(q.nodes[f].args[k]);
        }
    }
    joint_state r;
    r.forward = p;
    program b = q;
    for (std::size_t f = 0; f < n; ++f) {
        if (decision[f] != 1) continue;
        r.forward.outs.push_back(f);
        b.nodes[f] = make_input(N + M + r.num_saved);
        ++r.num_saved;
    }
    r.forward = dce_program(r.forward);
    r.backward = dce_program(cse_program(b));
    return r;
}

template <class G, class Policy>
struct joint_builder {
    static constexpr joint_state state() { return build_joint<Policy>(encode<G>()); }
    static constexpr std::size_t num_saved = state().num_saved;
    static constexpr bool bad = build_grad(encode<G>(), {}).bad_output != no_id;
    struct forward_builder {
        static constexpr program build() { return state().forward; }
    };
    struct backward_builder {
        static constexpr program build() { return state().backward; }
    };
};

}  // namespace detail

/// Forward and backward graphs of a joint differentiation (see the top of this file).
template <class Forward, class Backward, std::size_t N, std::size_t M, std::size_t S>
struct joint_graphs {
    traced<Forward> forward;    // inputs -> (outputs..., saved...)
    traced<Backward> backward;  // (inputs..., output grads..., saved...) -> input grads
    static constexpr std::size_t num_inputs = N;
    static constexpr std::size_t num_outputs = M;
    static constexpr std::size_t num_saved = S;
};

/// Joint forward + backward graphs of e, with respect to every input, under a save policy.
template <class G, class Policy>
[[nodiscard]] auto joint(const traced<G>& e, Policy) {
    static_assert(save_policy_type<Policy>,
                  "graft::expr::joint(e, policy): policy must be a save policy (graft::expr::save_policy::save_all, "
                  "::recompute, ::recompute_cheap or a type with static constexpr bool save(std::string_view op))");
    if constexpr (save_policy_type<Policy>) {
        using J = detail::joint_builder<G, Policy>;
        static_assert(!J::bad, "graft::expr::joint: an output of the expression is a comparison or logical (bool) "
                               "result, which is not differentiable");
        if constexpr (!J::bad) {
            using F = program_graph_t<typename J::forward_builder>;
            using B = program_graph_t<typename J::backward_builder>;
            constexpr std::size_t N = encode<G>().num_inputs();
            return joint_graphs<F, B, N, G::results::size, J::num_saved>{traced<F>{e.literals},
                                                                          traced<B>{e.literals}};
        }
    }
}

}  // namespace graft::expr
