#pragma once
// graft::cond: data-dependent control flow as a higher-order op, in the spirit of torch.cond
// and JAX's lax.cond. `cond(pred, true_fn, false_fn, operands...)` calls true_fn(operands...)
// when the one-element bool tensor `pred` holds true, else false_fn(operands...). Eagerly it
// just runs the branch (autograd records through it as through any code). Under graph capture
// (capture::trace, jit::script) both branches are recorded as the two blocks of a prim::If
// whose condition is `pred`'s graph value, so the captured graph takes the branch each call's
// data selects: no item(), no path baked into the graph.
//
// The branches take the operands as Tensor arguments and return a Tensor, a
// std::vector<Tensor> or a tuple of Tensors; both return the same number of tensors of the
// same dtypes. Under capture, branches must not write into tensors they did not create.
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/core/detail/op_observer.hpp"
#include "graft/core/tensor.hpp"

namespace graft {
namespace detail {

template <class R>
[[nodiscard]] std::vector<Tensor> branch_results(R&& r) {
    using T = std::decay_t<R>;
    if constexpr (std::is_same_v<T, Tensor>) return {std::forward<R>(r)};
    else if constexpr (std::is_same_v<T, std::vector<Tensor>>) return std::forward<R>(r);
    else return std::apply([](auto&&... ts) { return std::vector<Tensor>{Tensor(ts)...}; }, std::forward<R>(r));
}

/// A branch_ref calling f with the N operands as arguments.
template <std::size_t N, class F>
[[nodiscard]] branch_ref make_branch(const F& f) {
    branch_ref b;
    b.object = &f;
    b.invoke = [](const void* object, const std::vector<Tensor>& in) {
        const F& fn = *static_cast<const F*>(object);
        check(in.size() == N, "cond: a branch takes ", N, " operands, got ", in.size());
        return [&]<std::size_t... I>(std::index_sequence<I...>) { return branch_results(fn(in[I]...)); }(
            std::make_index_sequence<N>{});
    };
    return b;
}

/// cond's non-template part: checks `pred`, then runs the taken branch or lets the
/// installed op observer (graph capture) record both.
[[nodiscard]] GRAFT_INLINE std::vector<Tensor> cond_impl(const Tensor& pred, const branch_ref& true_branch,
                                                         const branch_ref& false_branch,
                                                         const std::vector<Tensor>& operands);

}  // namespace detail

/// true_fn(operands...) if the one-element bool tensor `pred` holds true, else
/// false_fn(operands...) (see the top of this header). Returns a Tensor when the branches
/// return one, else a std::vector<Tensor>.
template <class TrueFn, class FalseFn, class... Ts>
    requires((std::is_convertible_v<const Ts&, const Tensor&> && ...) &&
             std::is_invocable_v<const TrueFn&, decltype((void)sizeof(Ts), Tensor())...> &&
             std::is_invocable_v<const FalseFn&, decltype((void)sizeof(Ts), Tensor())...>)
[[nodiscard]] auto cond(const Tensor& pred, const TrueFn& true_fn, const FalseFn& false_fn, const Ts&... operands) {
    auto r = detail::cond_impl(pred, detail::make_branch<sizeof...(Ts)>(true_fn),
                               detail::make_branch<sizeof...(Ts)>(false_fn), std::vector<Tensor>{Tensor(operands)...});
    using R = std::decay_t<std::invoke_result_t<const TrueFn&, decltype((void)sizeof(Ts), Tensor())...>>;
    if constexpr (std::is_same_v<R, Tensor>) return Tensor(std::move(r.at(0)));
    else return r;
}

/// cond with a C++ bool: the taken branch only (a graph capture records the path taken, as
/// torch.cond does with a Python bool).
template <class TrueFn, class FalseFn, class... Ts>
    requires((std::is_convertible_v<const Ts&, const Tensor&> && ...) &&
             std::is_invocable_v<const TrueFn&, decltype((void)sizeof(Ts), Tensor())...> &&
             std::is_invocable_v<const FalseFn&, decltype((void)sizeof(Ts), Tensor())...>)
[[nodiscard]] auto cond(bool pred, const TrueFn& true_fn, const FalseFn& false_fn, const Ts&... operands) {
    using R = std::decay_t<std::invoke_result_t<const TrueFn&, decltype((void)sizeof(Ts), Tensor())...>>;
    auto r = pred ? detail::branch_results(true_fn(Tensor(operands)...))
                  : detail::branch_results(false_fn(Tensor(operands)...));
    if constexpr (std::is_same_v<R, Tensor>) return Tensor(std::move(r.at(0)));
    else return r;
}

}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/ops/impl/control_flow.ipp"
#endif
