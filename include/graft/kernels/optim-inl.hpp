// graft/kernels/optim-inl.hpp: per-target fused optimizer steps (graft::optim::SGD, Adam,
// AdamW). Re-included once per target via graft/kernels/all-inl.hpp. Each call reads the
// parameter, its gradient and its state once and writes the parameter and the state back in
// the same pass (PyTorch's fused/foreach idea: no temporaries, one sweep over memory).
//
// Per element, in the parameter's type T (the double scalars of sgd_args / adam_args are
// rounded to T once, as PyTorch's ops round a Python float for a float32 tensor):
//   SGD:  g = maximize ? -grad : grad;  g = g + wd * p                     (weight_decay != 0)
//         momentum != 0:  buf = first ? g : buf * momentum + (1 - dampening) * g
//                         g = nesterov ? g + momentum * buf : buf
//         p = p + (-lr) * g
//   Adam: g = maximize ? -grad : grad
//         weight_decay != 0:  AdamW (decoupled): p = p * (1 - lr * wd);  Adam: g = g + wd * p
//         m = lerp(m, g, 1 - beta1)            (PyTorch's lerp: w < 0.5: m + w (g - m),
//                                               else g - (g - m)(1 - w))
//         v = v * beta2 + ((1 - beta2) * g) * g
//         amsgrad: vmax = maximum(vmax, v) (NaN-propagating) and vmax replaces v below
//         p = p + ((-step_size) * m) / (sqrt(v) / bias_correction2_sqrt + eps)
// Numeric contract: every operation is one IEEE operation of T (sqrt and div correctly
// rounded), in the order above; graft/kernels/reference.hpp (optim_sgd, optim_adam) is the
// same sequence in scalar C++. On FMA targets the compiler may contract a multiply and an add
// into one FMA (one rounding instead of two), so targets agree to a few ULP of the operands,
// not bitwise (tested on every target in tests/test_optim.cpp).

#include "graft/kernels/api.hpp"

#include <hwy/highway.h>

// graft-amalgamate: per-target
#if defined(GRAFT_KERNELS_OPTIM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GRAFT_KERNELS_OPTIM_INL_H_
#undef GRAFT_KERNELS_OPTIM_INL_H_
#else
#define GRAFT_KERNELS_OPTIM_INL_H_
#endif

HWY_BEFORE_NAMESPACE();
namespace graft {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// One vector (Lanes(d) elements at offset i) of the SGD step; the tail uses a one-lane tag,
// so every element goes through the same operations.
template <class D>
HWY_INLINE void sgd_lanes(D d, const sgd_args& a, hn::TFromD<D>* HWY_RESTRICT p, const hn::TFromD<D>* HWY_RESTRICT g,
                          hn::TFromD<D>* HWY_RESTRICT buf, std::size_t i) {
    using T = hn::TFromD<D>;
    auto vp = hn::LoadU(d, p + i);
    auto vg = hn::LoadU(d, g + i);
    if (a.maximize) vg = hn::Neg(vg);
    if (a.weight_decay != 0) vg = hn::Add(vg, hn::Mul(hn::Set(d, static_cast<T>(a.weight_decay)), vp));
    if (a.momentum != 0) {
        const auto mom = hn::Set(d, static_cast<T>(a.momentum));
        auto vb = vg;
        if (!a.first)
            vb = hn::Add(hn::Mul(hn::LoadU(d, buf + i), mom),
                         hn::Mul(hn::Set(d, static_cast<T>(1 - a.dampening)), vg));
        hn::StoreU(vb, d, buf + i);
        vg = a.nesterov ? hn::Add(vg, hn::Mul(mom, vb)) : vb;
    }
    vp = hn::Add(vp, hn::Mul(hn::Set(d, static_cast<T>(-a.lr)), vg));
    hn::StoreU(vp, d, p + i);
}

template <class T>
HWY_NOINLINE void sgd_impl(const sgd_args& args, T* HWY_RESTRICT p, const T* HWY_RESTRICT g, T* HWY_RESTRICT buf,
                           std::size_t n) {
    const sgd_args a = args;  // a local copy: the stores below cannot alias it
    const hn::ScalableTag<T> d;
    const std::size_t N = hn::Lanes(d);
    std::size_t i = 0;
    for (; i + N <= n; i += N) sgd_lanes(d, a, p, g, buf, i);
    const hn::CappedTag<T, 1> d1;
    for (; i < n; ++i) sgd_lanes(d1, a, p, g, buf, i);
}

template <class D>
HWY_INLINE void adam_lanes(D d, const adam_args& a, hn::TFromD<D>* HWY_RESTRICT p,
                           const hn::TFromD<D>* HWY_RESTRICT g, hn::TFromD<D>* HWY_RESTRICT m,
                           hn::TFromD<D>* HWY_RESTRICT v, hn::TFromD<D>* HWY_RESTRICT vmax, std::size_t i) {
    using T = hn::TFromD<D>;
    auto vp = hn::LoadU(d, p + i);
    auto vg = hn::LoadU(d, g + i);
    if (a.maximize) vg = hn::Neg(vg);
    if (a.weight_decay != 0) {
        if (a.decoupled)
            vp = hn::Mul(vp, hn::Set(d, static_cast<T>(1 - a.lr * a.weight_decay)));
        else
            vg = hn::Add(vg, hn::Mul(hn::Set(d, static_cast<T>(a.weight_decay)), vp));
    }
    // exp_avg.lerp_(grad, 1 - beta1), with PyTorch's two-sided lerp formula.
    const double w = 1 - a.beta1;
    auto vm = hn::LoadU(d, m + i);
    if (w < 0.5 && w > -0.5)
        vm = hn::Add(vm, hn::Mul(hn::Set(d, static_cast<T>(w)), hn::Sub(vg, vm)));
    else
        vm = hn::Sub(vg, hn::Mul(hn::Sub(vg, vm), hn::Set(d, static_cast<T>(1 - w))));
    hn::StoreU(vm, d, m + i);
    // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2)
    auto vv = hn::Mul(hn::LoadU(d, v + i), hn::Set(d, static_cast<T>(a.beta2)));
    vv = hn::Add(vv, hn::Mul(hn::Mul(hn::Set(d, static_cast<T>(1 - a.beta2)), vg), vg));
    hn::StoreU(vv, d, v + i);
    if (a.amsgrad) {
        const auto old = hn::LoadU(d, vmax + i);
        vv = hn::IfThenElse(hn::Or(hn::Lt(old, vv), hn::IsNaN(vv)), vv, old);
        hn::StoreU(vv, d, vmax + i);
    }
    const auto denom = hn::Add(hn::Div(hn::Sqrt(vv), hn::Set(d, static_cast<T>(a.bias_correction2_sqrt))),
                               hn::Set(d, static_cast<T>(a.eps)));
    vp = hn::Add(vp, hn::Div(hn::Mul(hn::Set(d, static_cast<T>(-a.step_size)), vm), denom));
    hn::StoreU(vp, d, p + i);
}

template <class T>
HWY_NOINLINE void adam_impl(const adam_args& args, T* HWY_RESTRICT p, const T* HWY_RESTRICT g, T* HWY_RESTRICT m,
                            T* HWY_RESTRICT v, T* HWY_RESTRICT vmax, std::size_t n) {
    const adam_args a = args;  // a local copy: the stores below cannot alias it
    const hn::ScalableTag<T> d;
    const std::size_t N = hn::Lanes(d);
    std::size_t i = 0;
    for (; i + N <= n; i += N) adam_lanes(d, a, p, g, m, v, vmax, i);
    const hn::CappedTag<T, 1> d1;
    for (; i < n; ++i) adam_lanes(d1, a, p, g, m, v, vmax, i);
}

inline void sgd_f32(const sgd_args& a, float* p, const float* g, float* buf, std::size_t n) {
    sgd_impl<float>(a, p, g, buf, n);
}
inline void sgd_f64(const sgd_args& a, double* p, const double* g, double* buf, std::size_t n) {
    sgd_impl<double>(a, p, g, buf, n);
}
inline void adam_f32(const adam_args& a, float* p, const float* g, float* m, float* v, float* vmax, std::size_t n) {
    adam_impl<float>(a, p, g, m, v, vmax, n);
}
inline void adam_f64(const adam_args& a, double* p, const double* g, double* m, double* v, double* vmax,
                     std::size_t n) {
    adam_impl<double>(a, p, g, m, v, vmax, n);
}

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace graft
HWY_AFTER_NAMESPACE();

#endif  // toggle guard
