#pragma once
// Definitions for graft/ops/softmax.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/ops/softmax.hpp"

namespace graft {
namespace detail {

GRAFT_INLINE Tensor run_softmax(const char* op, const Tensor& t, std::int64_t dim, bool log) {
    check(t.defined(), op, ": got an undefined tensor");
    check(is_floating_point(t.type()), op, ": expected a floating-point tensor, but got ", t.type());
    if (is_storage_dtype(t.type()))  // computed in float32, rounded once
        return raw::to(run_softmax(op, raw::to(t, compute_dtype(t.type())), dim, log), t.type());
    const std::int64_t d = wrap_dim(op, dim, t.dim());
    if (t.dim() == 0) return raw::view(run_softmax(op, raw::view(t, {1}), 0, log), {});
    const Tensor moved = raw::contiguous(raw::transpose(t, d, -1));
    const std::int64_t cols = moved.size(-1);
    const std::int64_t rows = cols == 0 ? 0 : moved.numel() / cols;
    Tensor out = empty(moved.sizes(), t.type());
    visit_dtype(t.type(), [&](auto z) {
        using T = decltype(z);
        if constexpr (std::is_floating_point_v<T>)
            if (rows > 0)
                kernels::softmax_rows(moved.data_ptr<T>(), out.data_ptr<T>(), static_cast<std::size_t>(rows),
                                      static_cast<std::size_t>(cols), log);
    });
    return raw::contiguous(raw::transpose(out, d, -1));
}

}  // namespace detail

namespace ops {

GRAFT_INLINE Tensor softmax(const Tensor& t, std::int64_t dim) {
    const detail::observed_op obs;
    return obs.done(detail::run_softmax("softmax", t, dim, false), "softmax", {t}, {{"dim", dim}});
}

GRAFT_INLINE Tensor log_softmax(const Tensor& t, std::int64_t dim) {
    const detail::observed_op obs;
    return obs.done(detail::run_softmax("log_softmax", t, dim, true), "log_softmax", {t}, {{"dim", dim}});
}

}  // namespace ops
}  // namespace graft
