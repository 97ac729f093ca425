#pragma once
// Definitions for graft/jit/options.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/jit/options.hpp"

#include <charconv>
#include <system_error>

#include <cstdlib>
#include <ostream>
#include <string>

namespace graft::jit {

GRAFT_INLINE std::size_t bailout_depth(const strategy& s) {
    std::size_t d = 0;
    for (const auto& [b, n] : s) d += n;
    return d;
}

GRAFT_INLINE fusion_behavior current_behavior(const strategy& s, std::size_t remaining) {
    std::size_t depth = 0;
    for (std::size_t i = s.size(); i-- > 0;) {
        depth += s[i].second;
        if (remaining <= depth) return s[i].first;
    }
    return s.empty() ? fusion_behavior::static_ : s.front().first;
}

GRAFT_INLINE std::ostream& operator<<(std::ostream& os, const strategy& s) {
    os << '[';
    for (std::size_t i = 0; i < s.size(); ++i)
        os << (i ? ", " : "") << '(' << to_string(s[i].first) << ", " << s[i].second << ')';
    return os << ']';
}

GRAFT_INLINE strategy parse_strategy(std::string_view text) {
    strategy r;
    std::size_t pos = 0;
    const auto bad = [&] {
        graft::detail::fail(graft::detail::concat("jit: cannot parse fusion strategy '", text,
                                                  "': expected e.g. STATIC:2,DYNAMIC:10"));
    };
    while (pos < text.size()) {
        std::size_t end = text.find(',', pos);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view item = text.substr(pos, end - pos);
        const std::size_t colon = item.find(':');
        if (colon == std::string_view::npos) bad();
        std::string name(item.substr(0, colon));
        for (char& c : name) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
        fusion_behavior b{};
        if (name == "STATIC") b = fusion_behavior::static_;
        else if (name == "DYNAMIC") b = fusion_behavior::dynamic_;
        else bad();
        const std::string_view digits = item.substr(colon + 1);
        std::size_t depth = 0;
        const auto [end_of_number, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), depth);
        if (digits.empty() || ec != std::errc{} || end_of_number != digits.data() + digits.size()) bad();
        graft::detail::check(depth <= max_strategy_depth, "jit: fusion strategy '", text, "': depth ", digits,
                             " is more than ", max_strategy_depth, " specializations");
        r.emplace_back(b, depth);
        pos = end + 1;
    }
    if (r.empty()) bad();
    return r;
}

namespace detail {

GRAFT_INLINE bool env_flag(const char* name, bool fallback) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    const std::string s(v);
    if (s == "1" || s == "true" || s == "TRUE" || s == "on" || s == "ON") return true;
    if (s == "0" || s == "false" || s == "FALSE" || s == "off" || s == "OFF") return false;
    graft::detail::fail(graft::detail::concat("jit: environment variable ", name, "='", s, "' is not a boolean (0 or 1)"));
}

GRAFT_INLINE std::uint64_t env_number(const char* name, std::uint64_t fallback) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    const std::string s(v);
    std::uint64_t r = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), r);
    graft::detail::check(ec == std::errc{} && end == s.data() + s.size(), "jit: environment variable ", name, "='", s,
                         "' is not a non-negative integer below 2^64");
    return r;
}

GRAFT_INLINE options options_from_env() {
    options o;
    o.num_profiled_runs = env_number("GRAFT_JIT_NUM_PROFILED_RUNS", o.num_profiled_runs);
    if (const char* s = std::getenv("GRAFT_JIT_FUSION_STRATEGY"); s && *s) o.fusion = parse_strategy(s);
    o.enable_fusion = env_flag("GRAFT_JIT_ENABLE_FUSION", o.enable_fusion);
    o.release_profiling_after_optimization =
        env_flag("GRAFT_JIT_RELEASE_PROFILING_GRAPH_AFTER_OPTIMIZATION", o.release_profiling_after_optimization);
    o.release_profiling_delay_ms =
        env_number("GRAFT_JIT_RELEASE_PROFILING_GRAPH_DELAY_MS", o.release_profiling_delay_ms);
    o.collect_timings = env_flag("GRAFT_JIT_COLLECT_TIMINGS", o.collect_timings);
    o.automatic_dynamic = env_flag("GRAFT_JIT_AUTOMATIC_DYNAMIC", o.automatic_dynamic);
    o.num_threads = env_number("GRAFT_JIT_NUM_THREADS", o.num_threads);
    if (o.num_threads == 0) o.num_threads = 1;
    return o;
}

GRAFT_INLINE global_options& globals() {
    static global_options g;
    return g;
}

}  // namespace detail

GRAFT_INLINE options default_options() {
    auto& g = detail::globals();
    std::lock_guard lock(g.mutex);
    return g.value;
}

GRAFT_INLINE strategy set_fusion_strategy(strategy s) {
    graft::detail::check(!s.empty(), "jit::set_fusion_strategy: the strategy is empty");
    auto& g = detail::globals();
    std::lock_guard lock(g.mutex);
    std::swap(g.value.fusion, s);
    return s;
}

GRAFT_INLINE std::size_t set_num_profiled_runs(std::size_t n) {
    auto& g = detail::globals();
    std::lock_guard lock(g.mutex);
    std::swap(g.value.num_profiled_runs, n);
    return n;
}

GRAFT_INLINE options set_default_options(options o) {
    graft::detail::check(!o.fusion.empty(), "jit::set_default_options: the fusion strategy is empty");
    auto& g = detail::globals();
    std::lock_guard lock(g.mutex);
    std::swap(g.value, o);
    return o;
}

}  // namespace graft::jit
