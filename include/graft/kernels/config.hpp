#pragma once
// graft/kernels/config.hpp: Highway configuration that must be seen before the first
// Highway header in a translation unit. Included first by graft/kernels/dispatch.hpp.
//
// Compiled SIMD targets. Unless the user defines HWY_DISABLED_TARGETS (or
// GRAFT_KERNELS_ALL_TARGETS), graft compiles only SCALAR, AVX2 and AVX3 on x86, with g++
// and clang alike (SSSE3, SSE4 and AVX3_DL are disabled) to keep compile time down. Disabling
// AVX3_DL also avoids Highway 1.0.3's "#error Logic error: best baseline should be
// included in dynamic targets" under -march=native on AVX-512 CPUs. On other
// architectures Highway's defaults apply (minus those x86 bits).
//
// Rules (same as any Highway dynamic-dispatch header):
//  * every translation unit of a program must see the same HWY_* macros and -m flags
//    (the kernel tables are inline variables; ODR);
//  * include graft (or this header) before any Highway header, and do not include
//    hwy/foreach_target.h yourself in a TU that includes graft (Highway 1.0.3 allows
//    only one foreach_target pass per TU).
#include "graft/config.hpp"

#if !defined(HWY_DISABLED_TARGETS) && !defined(GRAFT_KERNELS_ALL_TARGETS)
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
// The portable fallback target is SCALAR (one lane) with every compiler, as g++ < 12.3
// already forces (Highway's GCC-bug opt-out of EMU128). Clang would otherwise compile
// EMU128: its emulated 128-bit vectors made clang-19 -O2 take 53 s for the kernels instead
// of 16 s, and it would test a different fallback than g++ does.
#if !defined(HWY_BROKEN_EMU128)
#define HWY_BROKEN_EMU128 1
#endif
#endif
