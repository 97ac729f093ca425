#pragma once
// graft/config.hpp: supported compilers and the build mode. Included first by every
// graft header.
//
// Build modes (see docs/build.md):
//  * header-only (default): every function is an inline definition in the headers and
//    every translation unit that includes graft compiles the SIMD kernels it needs.
//  * compiled (GRAFT_COMPILED_LIB defined in every TU of the program, which linking the
//    CMake target graft::compiled does): graft's non-template functions and its SIMD
//    kernels are only declared by the headers and compiled once, in the graft library
//    (src/kernels.cpp, src/graft.cpp). Templates stay in the headers. With the single
//    header, one TU of the program defines GRAFT_IMPLEMENTATION before including it to
//    hold that compiled part.

#if defined(__clang__)
#if !defined(__apple_build_version__) && __clang_major__ < 19
#error "graft needs Clang 19 or newer (or GCC 12 or newer); Clang 14 cannot compile it"
#endif
#elif defined(__GNUC__)
#if __GNUC__ < 12
#error "graft needs GCC 12 or newer (or Clang 19 or newer)"
#endif
#endif

#if !defined(__cplusplus) || (__cplusplus < 202002L && !(defined(_MSVC_LANG) && _MSVC_LANG >= 202002L))
#error "graft needs C++20: compile with -std=c++20"
#endif

#if defined(GRAFT_KERNELS_EXTERN) || defined(GRAFT_KERNELS_IMPLEMENTATION)
#error "GRAFT_KERNELS_EXTERN/GRAFT_KERNELS_IMPLEMENTATION were replaced by GRAFT_COMPILED_LIB (link graft::compiled, or define GRAFT_IMPLEMENTATION in one TU with the single header)"
#endif

#if defined(GRAFT_IMPLEMENTATION)
#ifndef GRAFT_COMPILED_LIB
#define GRAFT_COMPILED_LIB
#endif
#ifndef GRAFT_IMPLEMENTATION_PART_KERNELS
#define GRAFT_IMPLEMENTATION_PART_KERNELS
#endif
#ifndef GRAFT_IMPLEMENTATION_PART_CODE
#define GRAFT_IMPLEMENTATION_PART_CODE
#endif
#endif

#if defined(GRAFT_IMPLEMENTATION_PART_KERNELS) || defined(GRAFT_IMPLEMENTATION_PART_CODE) || \
    defined(GRAFT_IMPLEMENTATION_PART_CODE_BASE) || defined(GRAFT_IMPLEMENTATION_PART_CODE_GRAPH)
#ifndef GRAFT_COMPILED_LIB
#define GRAFT_COMPILED_LIB
#endif
#endif

// GRAFT_INLINE marks a non-template function declared in a header and defined in an
// impl/*.ipp file: inline in header-only mode, an ordinary (external) function of the
// graft library in compiled mode.
// GRAFT_HAS_CODE: this TU defines graft's non-template functions (header-only mode, or
// the library TU that compiles them) other than the graph layers' (ir, capture, jit), which
// GRAFT_HAS_GRAPH_CODE guards: the CMake library compiles the two halves in two TUs
// (src/graft.cpp: PART_CODE_BASE, src/graft_graph.cpp: PART_CODE_GRAPH) so that a parallel
// build compiles them at once; PART_CODE (the single header's GRAFT_IMPLEMENTATION) is both.
// GRAFT_HAS_KERNELS: this TU compiles the kernels.
#if defined(GRAFT_COMPILED_LIB)
#define GRAFT_INLINE
#if defined(GRAFT_IMPLEMENTATION_PART_CODE) || defined(GRAFT_IMPLEMENTATION_PART_CODE_BASE)
#define GRAFT_HAS_CODE 1
#else
#define GRAFT_HAS_CODE 0
#endif
#if defined(GRAFT_IMPLEMENTATION_PART_CODE) || defined(GRAFT_IMPLEMENTATION_PART_CODE_GRAPH)
#define GRAFT_HAS_GRAPH_CODE 1
#else
#define GRAFT_HAS_GRAPH_CODE 0
#endif
#if defined(GRAFT_IMPLEMENTATION_PART_KERNELS)
#define GRAFT_HAS_KERNELS 1
#else
#define GRAFT_HAS_KERNELS 0
#endif
#else
#define GRAFT_INLINE inline
#define GRAFT_HAS_CODE 1
#define GRAFT_HAS_GRAPH_CODE 1
#define GRAFT_HAS_KERNELS 1
#endif
