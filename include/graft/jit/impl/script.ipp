#pragma once
// Definitions for graft/jit/script.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/jit/script.hpp"

#include <sstream>

namespace graft::jit::detail {

GRAFT_INLINE script_state::script_state(options o) : options_(std::move(o)) {
    graft::detail::check(!options_.fusion.empty(), "jit::script: the fusion strategy is empty");
}

GRAFT_INLINE std::vector<Tensor> script_state::call(const std::vector<Tensor>& inputs, capture::detail::traced_fn f) {
    const compiled& c = get(inputs, f);
    graft::detail::check(inputs.size() == c.cap.meta().num_inputs, "jit::script: the function was captured with ",
                         c.cap.meta().num_inputs, " inputs, got ", inputs.size());
    return c.cap.finish(inputs, c.exec(inputs));
}

GRAFT_INLINE jit::debug_state script_state::debug_state() const {
    const compiled* c = compiled_.load(std::memory_order_acquire);
    return c ? c->exec.state() : jit::debug_state{options_.fusion, bailout_depth(options_.fusion), 0, {}, {}};
}

GRAFT_INLINE std::string script_state::debug_string() const {
    std::ostringstream os;
    os << debug_state();
    return os.str();
}

GRAFT_INLINE std::string script_state::chrome_trace() const {
    const compiled* c = compiled_.load(std::memory_order_acquire);
    return c ? c->exec.chrome_trace() : std::string("{\"traceEvents\": []}\n");
}

GRAFT_INLINE void script_state::flush_compilation_cache() {
    if (const compiled* c = compiled_.load(std::memory_order_acquire)) c->exec.flush_compilation_cache();
}

GRAFT_INLINE const ir::Graph* script_state::graph() const {
    const compiled* c = compiled_.load(std::memory_order_acquire);
    return c ? &c->exec.graph() : nullptr;
}

GRAFT_INLINE const script_state::compiled& script_state::get(const std::vector<Tensor>& inputs,
                                                             capture::detail::traced_fn f) {
    if (const compiled* c = compiled_.load(std::memory_order_acquire)) return *c;
    std::lock_guard lock(mutex_);
    if (const compiled* c = compiled_.load(std::memory_order_acquire)) return *c;
    capture::captured cap = capture::detail::trace_impl(inputs, f);
    executor exec(cap.graph(), options_);
    owned_ = std::make_unique<compiled>(compiled{std::move(cap), std::move(exec)});
    compiled_.store(owned_.get(), std::memory_order_release);
    return *owned_;
}

}  // namespace graft::jit::detail
