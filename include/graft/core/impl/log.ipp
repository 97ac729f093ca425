#pragma once
// Definitions for graft/core/log.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/core/log.hpp"

#include <iostream>
#include <mutex>
#include <string>
#include <utility>

namespace graft {

namespace detail {
struct log_state {
    std::mutex mutex;
    log_handler handler = [](log_level level, std::string_view message) {
        std::cerr << (level == log_level::warning ? "graft: warning: " : "graft: ") << message << '\n';
    };
};
GRAFT_INLINE log_state& logging() {
    static log_state s;
    return s;
}
}  // namespace detail

GRAFT_INLINE log_handler set_log_handler(log_handler handler) {
    detail::log_state& s = detail::logging();
    std::lock_guard lock(s.mutex);
    return std::exchange(s.handler, std::move(handler));
}

GRAFT_INLINE void log_message(log_level level, std::string_view message) {
    detail::log_state& s = detail::logging();
    log_handler h;
    {
        std::lock_guard lock(s.mutex);
        h = s.handler;
    }
    if (h) h(level, message);
}

}  // namespace graft
