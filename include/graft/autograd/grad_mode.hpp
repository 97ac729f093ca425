#pragma once
// Thread-local gradient mode: whether ops record the backward graph.
namespace graft::autograd {

namespace detail {
inline bool& grad_enabled_flag() noexcept {
    thread_local bool enabled = true;
    return enabled;
}
}  // namespace detail

[[nodiscard]] inline bool is_grad_enabled() noexcept { return detail::grad_enabled_flag(); }
inline void set_grad_enabled(bool enabled) noexcept { detail::grad_enabled_flag() = enabled; }

/// RAII: sets grad mode for the current thread and restores the previous mode.
class grad_mode_guard {
public:
    explicit grad_mode_guard(bool enabled) noexcept : previous_(is_grad_enabled()) { set_grad_enabled(enabled); }
    grad_mode_guard(const grad_mode_guard&) = delete;
    grad_mode_guard& operator=(const grad_mode_guard&) = delete;
    ~grad_mode_guard() { set_grad_enabled(previous_); }

private:
    bool previous_;
};

/// RAII: no graph is recorded in this scope on this thread (torch.no_grad).
class no_grad : public grad_mode_guard {
public:
    no_grad() noexcept : grad_mode_guard(false) {}
};

/// RAII: graph recording is on in this scope, even inside no_grad (torch.enable_grad).
class enable_grad : public grad_mode_guard {
public:
    enable_grad() noexcept : grad_mode_guard(true) {}
};

}  // namespace graft::autograd

namespace graft {
// PyTorch's top-level spellings (torch.no_grad, torch.enable_grad, torch.is_grad_enabled,
// torch.set_grad_enabled): the same guards and functions as graft::autograd's.
using autograd::enable_grad;
using autograd::is_grad_enabled;
using autograd::no_grad;
using autograd::set_grad_enabled;
}  // namespace graft
