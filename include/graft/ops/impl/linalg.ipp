#pragma once
// Definitions for graft/ops/linalg.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/ops/linalg.hpp"

namespace graft {
namespace ops {

GRAFT_INLINE Tensor matmul(const Tensor& a, const Tensor& b) {
    const detail::observed_op obs;
    return obs.done(matmul_impl(a, b), "matmul", {a, b});
}

GRAFT_INLINE Tensor matmul_impl(const Tensor& a, const Tensor& b) {
    detail::check(a.defined() && b.defined(), "matmul: got an undefined tensor");
    detail::check(a.dim() >= 1 && b.dim() >= 1, "matmul: both arguments need at least 1 dimension, but got ",
                  a.dim(), "-D and ", b.dim(), "-D tensors");
    detail::check(a.type() == b.type(), "matmul: expected both operands to have the same dtype, but got ", a.type(),
                  " and ", b.type());
    detail::check(is_floating_point(a.type()), "matmul: expected floating-point operands, but got ", a.type());
    if (is_storage_dtype(a.type()))  // float16, bfloat16: float32 products and sums, rounded once
        return detail::raw::to(matmul_impl(detail::raw::to(a, dtype::float32), detail::raw::to(b, dtype::float32)),
                               a.type());
    if (a.dim() == 2 && b.dim() == 2) {
        // The common case, without batch views: the kernel reads both operands in place.
        const std::int64_t m = a.size(0), k = a.size(1), n = b.size(1);
        detail::check(b.size(0) == k, "matmul: shapes ", a.sizes(), " and ", b.sizes(), " cannot be multiplied (", m,
                      "x", k, " and ", b.size(0), "x", n, ")");
        Tensor out = empty({m, n}, a.type());
        detail::visit_dtype(a.type(), [&](auto z) {
            using T = decltype(z);
            if constexpr (std::is_floating_point_v<T>)
                kernels::matmul(a.data_ptr<T>(), a.stride(0), a.stride(1), b.data_ptr<T>(), b.stride(0), b.stride(1),
                                out.data_ptr<T>(), n, static_cast<std::size_t>(m), static_cast<std::size_t>(n),
                                static_cast<std::size_t>(k));
        });
        return out;
    }
    const Tensor x = a.dim() == 1 ? detail::raw::unsqueeze(a, 0) : a;   // [.., m, k]
    const Tensor y = b.dim() == 1 ? detail::raw::unsqueeze(b, 1) : b;   // [.., k, n]
    const std::int64_t m = x.size(-2), k = x.size(-1), k2 = y.size(-2), n = y.size(-1);
    detail::check(k == k2, "matmul: shapes ", a.sizes(), " and ", b.sizes(),
                  " cannot be multiplied (", m, "x", k, " and ", k2, "x", n, ")");
    const int_list xb(x.sizes().begin(), x.sizes().end() - 2), yb(y.sizes().begin(), y.sizes().end() - 2);
    const int_list batch = broadcast_shapes(xb, yb);
    int_list xs = batch, ys = batch, os = batch;
    xs.insert(xs.end(), {m, k});
    ys.insert(ys.end(), {k, n});
    os.insert(os.end(), {m, n});
    const std::int64_t nbatch = detail::checked_numel("matmul", batch);
    const Tensor xe = detail::raw::reshape(detail::raw::expand(x, xs), {nbatch, m, k});
    const Tensor ye = detail::raw::reshape(detail::raw::expand(y, ys), {nbatch, k, n});
    Tensor out = empty(os, a.type());
    detail::visit_dtype(a.type(), [&](auto z) {
        using T = decltype(z);
        if constexpr (std::is_floating_point_v<T>) {
            T* o = out.data_ptr<T>();
            for (std::int64_t i = 0; i < nbatch; ++i) {
                // Any strides (a transposed operand included): the kernel packs them in place.
                const Tensor xm = detail::raw::select(xe, 0, i);
                const Tensor ym = detail::raw::select(ye, 0, i);
                kernels::matmul(xm.data_ptr<T>(), xm.stride(0), xm.stride(1), ym.data_ptr<T>(), ym.stride(0),
                                ym.stride(1), o + i * m * n, n, static_cast<std::size_t>(m),
                                static_cast<std::size_t>(n), static_cast<std::size_t>(k));
            }
        }
    });
    if (a.dim() == 1 && b.dim() == 1) return detail::raw::view(out, {});
    if (a.dim() == 1) return detail::raw::squeeze(out, -2);
    if (b.dim() == 1) return detail::raw::squeeze(out, -1);
    return out;
}

}  // namespace ops
}  // namespace graft
