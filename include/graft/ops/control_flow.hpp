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
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/autograd/tensor_methods.hpp"  // fori_loop's counter arithmetic
#include "graft/core/detail/op_observer.hpp"
#include "graft/core/factories.hpp"
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

/// while_loop's non-template part.
[[nodiscard]] GRAFT_INLINE std::vector<Tensor> while_loop_impl(const branch_ref& cond_fn, const branch_ref& body_fn,
                                                               const std::vector<Tensor>& carried);

/// The one-element bool tensor a loop condition must give, as a bool (graft::error otherwise).
[[nodiscard]] GRAFT_INLINE bool loop_condition(const std::vector<Tensor>& c);

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

/// while cond_fn(carried...) (a one-element bool tensor) holds: carried = body_fn(carried...);
/// returns the last carried values (torch._higher_order_ops.while_loop, JAX's lax.while_loop).
/// body_fn returns as many tensors as it takes, of the same dtypes. Eagerly the loop just runs
/// (autograd records every iteration); under graph capture it becomes a prim::Loop whose trip
/// count is decided by the data of each run. Returns a Tensor for one carried value, else a
/// std::vector<Tensor>.
template <class CondFn, class BodyFn, class... Ts>
    requires(sizeof...(Ts) > 0 && (std::is_convertible_v<const Ts&, const Tensor&> && ...) &&
             std::is_invocable_v<const CondFn&, decltype((void)sizeof(Ts), Tensor())...> &&
             std::is_invocable_v<const BodyFn&, decltype((void)sizeof(Ts), Tensor())...>)
[[nodiscard]] auto while_loop(const CondFn& cond_fn, const BodyFn& body_fn, const Ts&... carried) {
    auto r = detail::while_loop_impl(detail::make_branch<sizeof...(Ts)>(cond_fn), detail::make_branch<sizeof...(Ts)>(body_fn),
                                     std::vector<Tensor>{Tensor(carried)...});
    if constexpr (sizeof...(Ts) == 1) return Tensor(std::move(r.at(0)));
    else return r;
}

/// for i in [lower, upper): carried = body_fn(i, carried...), with i a 0-dim int64 tensor
/// (JAX's lax.fori_loop); a while_loop on a counter, so capture records one prim::Loop.
template <class BodyFn, class... Ts>
    requires(sizeof...(Ts) > 0 && (std::is_convertible_v<const Ts&, const Tensor&> && ...) &&
             std::is_invocable_v<const BodyFn&, Tensor, decltype((void)sizeof(Ts), Tensor())...>)
[[nodiscard]] auto fori_loop(std::int64_t lower, std::int64_t upper, const BodyFn& body_fn, const Ts&... carried) {
    const auto cond_fn = [upper](const Tensor& i, const decltype((void)sizeof(Ts), Tensor())&...) { return i < upper; };
    const auto step = [&body_fn](const Tensor& i, const decltype((void)sizeof(Ts), Tensor())&... c) {
        std::vector<Tensor> next{i + std::int64_t{1}};
        for (Tensor& t : detail::branch_results(body_fn(i, c...))) next.push_back(std::move(t));
        return next;
    };
    auto r = detail::while_loop_impl(detail::make_branch<sizeof...(Ts) + 1>(cond_fn),
                                     detail::make_branch<sizeof...(Ts) + 1>(step),
                                     std::vector<Tensor>{full({}, lower, dtype::int64), Tensor(carried)...});
    r.erase(r.begin());
    if constexpr (sizeof...(Ts) == 1) return Tensor(std::move(r.at(0)));
    else return r;
}

}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/ops/impl/control_flow.ipp"
#endif
