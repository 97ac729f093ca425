#pragma once
// Definitions for graft/kernels/dispatch.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/kernels/dispatch.hpp"

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace graft::kernels {

GRAFT_INLINE const char* target_name(target t) noexcept {
    switch (t) {
        case target::scalar: return "SCALAR";
        case target::emu128: return "EMU128";
        case target::ssse3: return "SSSE3";
        case target::sse4: return "SSE4";
        case target::avx2: return "AVX2";
        case target::avx3: return "AVX3";
        case target::avx3_dl: return "AVX3_DL";
        case target::neon: return "NEON";
        case target::sve: return "SVE";
        case target::sve2: return "SVE2";
        case target::wasm: return "WASM";
        case target::rvv: return "RVV";
        case target::unknown: break;
    }
    return "UNKNOWN";
}

}  // namespace graft::kernels

namespace graft::kernels::detail {

GRAFT_INLINE const kernel_table* find_compiled(target t) noexcept {
    for (const auto& e : compiled_entries())
        if (e.t == t) return e.table;
    return nullptr;
}

GRAFT_INLINE bool cpu_supports(target t) noexcept {
    if (t == target::scalar || t == target::emu128) return true;
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    const bool ssse3 = __builtin_cpu_supports("ssse3");
    // Highway 1.0.3 requires AES and PCLMUL for SSE4 and above.
    const bool sse4 = ssse3 && __builtin_cpu_supports("sse4.1") && __builtin_cpu_supports("sse4.2") &&
                      __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("aes") &&
                      __builtin_cpu_supports("pclmul");
    const bool avx2 = sse4 && __builtin_cpu_supports("avx") && __builtin_cpu_supports("avx2") &&
                      __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi") &&
                      __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("f16c");
    const bool avx3 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
    switch (t) {
        case target::ssse3: return ssse3;
        case target::sse4: return sse4;
        case target::avx2: return avx2;
        case target::avx3: return avx3;
        case target::avx3_dl:
            return avx3 && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vbmi") &&
                   __builtin_cpu_supports("avx512vbmi2") && __builtin_cpu_supports("avx512bitalg") &&
                   __builtin_cpu_supports("avx512vpopcntdq") && __builtin_cpu_supports("vpclmulqdq") &&
                   __builtin_cpu_supports("vaes") && __builtin_cpu_supports("gfni");
        default: return false;
    }
#else
    // No run-time detection elsewhere: only the compile-time (static) target is trusted.
    // Only the best compiled target, which the compiler flags guarantee, is trusted.
    return compiled_entries().size > 0 && compiled_entries().data[0].t == t;
#endif
}

GRAFT_INLINE std::vector<target> available() {
    std::vector<target> v;
    for (const auto& e : compiled_entries())
        if (e.t == target::unknown || cpu_supports(e.t)) v.push_back(e.t);
    return v;
}

GRAFT_INLINE bool parse_target(std::string_view s, target& out) noexcept {
    std::string low;
    for (char ch : s) low.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
    for (int i = 0; i <= static_cast<int>(target::unknown); ++i) {
        std::string name = target_name(static_cast<target>(i));
        for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        if (name == low) {
            out = static_cast<target>(i);
            return true;
        }
    }
    return false;
}

GRAFT_INLINE dispatch_state::dispatch_state() {
    const std::vector<target> av = available();
    target best = av.empty() ? compiled_entries().data[0].t : av.front();
    if (const char* env = std::getenv("GRAFT_SIMD_TARGET"); env != nullptr && *env != '\0') {
        target want{};
        bool ok = parse_target(env, want);
        if (ok) {
            ok = false;
            for (target t : av) ok = ok || t == want;
        }
        if (ok) {
            best = want;
        } else {
            std::fprintf(stderr, "graft: ignoring GRAFT_SIMD_TARGET=%s (not compiled or not supported); using %s\n",
                         env, target_name(best));
        }
    }
    table.store(find_compiled(best), std::memory_order_relaxed);
    current.store(best, std::memory_order_relaxed);
}

GRAFT_INLINE dispatch_state& state() {
    static dispatch_state s;
    return s;
}

}  // namespace graft::kernels::detail

namespace graft::kernels {

GRAFT_INLINE std::vector<target> compiled_targets() {
    std::vector<target> v;
    for (const auto& e : detail::compiled_entries()) v.push_back(e.t);
    return v;
}

GRAFT_INLINE std::vector<target> available_targets() { return detail::available(); }

GRAFT_INLINE target current_target() { return detail::state().current.load(std::memory_order_relaxed); }

GRAFT_INLINE void set_target(target t) {
    detail::dispatch_state& s = detail::state();
    const detail::kernel_table* tab = detail::find_compiled(t);
    if (tab == nullptr)
        throw graft::error(std::string("graft::kernels::set_target: target ") + target_name(t) +
                           " is not compiled into this program");
    if (t != target::unknown && !detail::cpu_supports(t))
        throw graft::error(std::string("graft::kernels::set_target: target ") + target_name(t) +
                           " is not supported by this CPU");
    s.table.store(tab, std::memory_order_relaxed);
    s.current.store(t, std::memory_order_relaxed);
}

}  // namespace graft::kernels
