#pragma once
// Definitions for graft/data/progress.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/data/progress.hpp"

#include <algorithm>
#include <iostream>
#include <ostream>
#include <sstream>
#include <string>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#elif defined(_WIN32)
#include <io.h>
#endif

#include "graft/core/error.hpp"

namespace graft::data {

namespace detail {
GRAFT_INLINE bool is_terminal(const std::ostream& os) {
    int fd = -1;
    if (&os == &std::cout) fd = 1;
    else if (&os == &std::cerr || &os == &std::clog) fd = 2;
    if (fd < 0) return false;
#if defined(__unix__) || defined(__APPLE__)
    return isatty(fd) != 0;
#elif defined(_WIN32)
    return _isatty(fd) != 0;
#else
    return false;  // no way to tell: one line per bar
#endif
}
}  // namespace detail

GRAFT_INLINE progress::progress(std::ostream& os, std::int64_t total, std::string label, display mode, int width)
    : os_(os),
      total_(total),
      label_(std::move(label)),
      width_(width),
      redraw_(mode == display::terminal || (mode == display::automatic && detail::is_terminal(os))) {
    graft::detail::check(total >= 0, "data::progress: total must be non-negative, got ", total);
    graft::detail::check(width >= 1, "data::progress: width must be positive, got ", width);
    if (redraw_) draw();
}

GRAFT_INLINE progress::~progress() {
    try {
        close();
    } catch (...) {  // a stream that throws: nothing more to do in a destructor
    }
}

GRAFT_INLINE void progress::update(std::int64_t n) {
    graft::detail::check(!closed_, "data::progress::update: the bar is closed");
    count_ += n;
    if (redraw_) draw();
}

GRAFT_INLINE void progress::set_postfix(std::initializer_list<std::pair<std::string_view, double>> values) {
    std::ostringstream text;
    text.precision(4);
    bool first = true;
    for (const auto& [name, value] : values) {
        text << (first ? "" : " ") << name << ' ' << value;
        first = false;
    }
    postfix_ = text.str();
}

GRAFT_INLINE void progress::close() {
    if (closed_) return;
    closed_ = true;
    if (redraw_) draw();
    else os_ << line();
    os_ << '\n';
    os_.flush();
}

GRAFT_INLINE std::string progress::line() const {
    std::string s = label_;
    if (!s.empty()) s += ' ';
    const std::int64_t shown = std::clamp<std::int64_t>(count_, 0, total_);
    // total 0: nothing to do, so the bar is full.
    const std::int64_t filled = total_ == 0 ? width_ : shown * width_ / total_;
    const bool head = shown > 0 && shown < total_ && filled < width_;
    s += '[';
    s.append(static_cast<std::size_t>(filled), '=');
    if (head) s += '>';
    s.append(static_cast<std::size_t>(width_ - filled - (head ? 1 : 0)), ' ');
    s += "] ";
    s += std::to_string(count_);
    s += '/';
    s += std::to_string(total_);
    if (!postfix_.empty()) {
        s += ' ';
        s += postfix_;
    }
    return s;
}

GRAFT_INLINE void progress::draw() {
    std::string s = line();
    if (s == drawn_) return;
    os_ << '\r' << s;
    // Blanks over the rest of a longer line drawn before (a shorter postfix).
    if (s.size() < columns_) os_ << std::string(columns_ - s.size(), ' ');
    columns_ = std::max(columns_, s.size());
    drawn_ = std::move(s);
    os_.flush();
}

}  // namespace graft::data
