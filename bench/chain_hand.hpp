// bench/chain_hand.hpp: the hand-written Highway loops of the benchmark chain
// y = tanh(x*w + b) * sigmoid(x) (forward; forward + backward for an upstream gradient g),
// shared by bench_expr and bench_jit: the reference the fused paths are measured against.
// One definition per x86 target, with that target's attributes (the way Highway compiles
// per-target code), using graft's lane functors, so results are graft's bits.
#pragma once
#include <graft/graft.hpp>

#include <cmath>
#include <cstddef>

#define GRAFT_BENCH_HAND_LOOPS(NS)                                                                            \
    namespace hand_##NS {                                                                                     \
    namespace hn = hwy::NS;                                                                                   \
    namespace lanes = graft::kernels::NS;                                                                     \
    HWY_NOINLINE void fwd(const float* HWY_RESTRICT x, const float* HWY_RESTRICT w, const float* HWY_RESTRICT b, \
                          float* HWY_RESTRICT y, std::size_t n) {                                             \
        const hn::ScalableTag<float> d;                                                                       \
        const std::size_t L = hn::Lanes(d);                                                                   \
        std::size_t i = 0;                                                                                    \
        for (; i + L <= n; i += L) {                                                                          \
            const auto vx = hn::LoadU(d, x + i);                                                              \
            const auto t = lanes::u_tanh{}(d, hn::Add(hn::Mul(vx, hn::LoadU(d, w + i)), hn::LoadU(d, b + i))); \
            hn::StoreU(hn::Mul(t, lanes::u_sigmoid{}(d, vx)), d, y + i);                                      \
        }                                                                                                     \
        for (; i < n; ++i) y[i] = std::tanh(x[i] * w[i] + b[i]) / (1.0f + std::exp(-x[i]));                   \
    }                                                                                                         \
    HWY_NOINLINE void fwdbwd(const float* HWY_RESTRICT x, const float* HWY_RESTRICT w,                        \
                             const float* HWY_RESTRICT b, const float* HWY_RESTRICT g, float* HWY_RESTRICT y,  \
                             float* HWY_RESTRICT dx, float* HWY_RESTRICT dw, float* HWY_RESTRICT db,          \
                             std::size_t n) {                                                                 \
        const hn::ScalableTag<float> d;                                                                       \
        const std::size_t L = hn::Lanes(d);                                                                   \
        const auto one = hn::Set(d, 1.0f);                                                                    \
        std::size_t i = 0;                                                                                    \
        for (; i + L <= n; i += L) {                                                                          \
            const auto vx = hn::LoadU(d, x + i), vw = hn::LoadU(d, w + i), vg = hn::LoadU(d, g + i);          \
            const auto t = lanes::u_tanh{}(d, hn::Add(hn::Mul(vx, vw), hn::LoadU(d, b + i)));                 \
            const auto s = lanes::u_sigmoid{}(d, vx);                                                         \
            hn::StoreU(hn::Mul(t, s), d, y + i);                                                              \
            const auto dp = hn::Mul(hn::Mul(vg, s), hn::Sub(one, hn::Mul(t, t)));                             \
            const auto ds = hn::Mul(hn::Mul(hn::Mul(vg, t), s), hn::Sub(one, s));                             \
            hn::StoreU(hn::Add(hn::Mul(dp, vw), ds), d, dx + i);                                              \
            hn::StoreU(hn::Mul(dp, vx), d, dw + i);                                                           \
            hn::StoreU(dp, d, db + i);                                                                        \
        }                                                                                                     \
        for (; i < n; ++i) {                                                                                  \
            const float t = std::tanh(x[i] * w[i] + b[i]), s = 1.0f / (1.0f + std::exp(-x[i]));               \
            y[i] = t * s;                                                                                     \
            const float dp = g[i] * s * (1 - t * t);                                                          \
            dx[i] = dp * w[i] + g[i] * t * s * (1 - s);                                                       \
            dw[i] = dp * x[i];                                                                                \
            db[i] = dp;                                                                                       \
        }                                                                                                     \
    }                                                                                                         \
    }

#if HWY_TARGETS & HWY_AVX3
HWY_PUSH_ATTRIBUTES(HWY_TARGET_STR_AVX3)
GRAFT_BENCH_HAND_LOOPS(N_AVX3)
HWY_POP_ATTRIBUTES
#endif
#if HWY_TARGETS & HWY_AVX2
HWY_PUSH_ATTRIBUTES(HWY_TARGET_STR_AVX2)
GRAFT_BENCH_HAND_LOOPS(N_AVX2)
HWY_POP_ATTRIBUTES
#endif
#if HWY_TARGETS & HWY_SCALAR
GRAFT_BENCH_HAND_LOOPS(N_SCALAR)
#endif

namespace chain_hand {


using fwd_fn = void (*)(const float*, const float*, const float*, float*, std::size_t);
using fwdbwd_fn = void (*)(const float*, const float*, const float*, const float*, float*, float*, float*, float*,
                           std::size_t);

struct hand_fns {
    fwd_fn fwd;
    fwdbwd_fn fwdbwd;
};

hand_fns hand_for_current_target() {
    switch (graft::kernels::current_target()) {
#if HWY_TARGETS & HWY_AVX3
        case graft::kernels::target::avx3: return {&hand_N_AVX3::fwd, &hand_N_AVX3::fwdbwd};
#endif
#if HWY_TARGETS & HWY_AVX2
        case graft::kernels::target::avx2: return {&hand_N_AVX2::fwd, &hand_N_AVX2::fwdbwd};
#endif
        default: break;
    }
#if HWY_TARGETS & HWY_SCALAR
    return {&hand_N_SCALAR::fwd, &hand_N_SCALAR::fwdbwd};
#else
    return {nullptr, nullptr};
#endif
}

}  // namespace chain_hand
