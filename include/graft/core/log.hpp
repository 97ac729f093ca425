#pragma once
// graft's messages to the program (PyTorch's TORCH_WARN): things that are not errors but change
// what a user expected, such as a compiled graph that runs eagerly. By default a warning goes to
// stderr as "graft: warning: ..."; set_log_handler routes messages elsewhere (or drops them).
#include <functional>
#include <string_view>

#include "graft/config.hpp"

namespace graft {

enum class log_level { info, warning };

/// Receives every message; called on the thread that logs it.
using log_handler = std::function<void(log_level, std::string_view)>;

/// Installs `handler` (an empty handler silences graft) and returns the previous one.
GRAFT_INLINE log_handler set_log_handler(log_handler handler);

/// Sends a message to the installed handler.
GRAFT_INLINE void log_message(log_level level, std::string_view message);

}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/core/impl/log.ipp"
#endif
