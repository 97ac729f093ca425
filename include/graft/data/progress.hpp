#pragma once
// data::progress: a text progress bar for training loops,
//   epoch 3/10 [==================>           ] 120/200 loss 0.1234
// redrawn in place (carriage return) on a terminal, written once as a line when it closes
// otherwise (a log file, a pipe, CTest's output), so logs get one line per bar.
// Manual: docs/data.md.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>

#include "graft/config.hpp"

namespace graft::data {

class progress {
public:
    /// How the bar is drawn: `automatic` redraws in place when the stream is std::cout,
    /// std::cerr or std::clog and that file is a terminal, else `lines`; `terminal` always
    /// redraws in place; `lines` writes one line when the bar closes.
    enum class display { automatic, terminal, lines };

    /// A bar for `total` steps (>= 0) written to `os`; `label` leads the line ("epoch 3/10").
    /// `width`: the bar's characters between the brackets (>= 1).
    GRAFT_INLINE progress(std::ostream& os, std::int64_t total, std::string label = {},
                          display mode = display::automatic, int width = 30);
    progress(const progress&) = delete;
    progress& operator=(const progress&) = delete;
    /// Closes the bar (close()) if it is still open.
    GRAFT_INLINE ~progress();

    /// Advances by n steps; on a terminal redraws the line.
    GRAFT_INLINE void update(std::int64_t n = 1);
    /// The text after the counts ("loss 0.1234"), shown from the next update or close.
    void set_postfix(std::string text) { postfix_ = std::move(text); }
    /// The postfix as name value pairs, values with 4 significant digits: {{"loss", 0.1234}}.
    GRAFT_INLINE void set_postfix(std::initializer_list<std::pair<std::string_view, double>> values);
    /// Writes the final line and a newline (once; later calls do nothing).
    GRAFT_INLINE void close();

    [[nodiscard]] std::int64_t count() const noexcept { return count_; }
    [[nodiscard]] std::int64_t total() const noexcept { return total_; }
    /// Whether the bar redraws in place.
    [[nodiscard]] bool redraws() const noexcept { return redraw_; }
    /// The line as it is drawn now: label, bar, count/total, postfix.
    [[nodiscard]] GRAFT_INLINE std::string line() const;

private:
    GRAFT_INLINE void draw();

    std::ostream& os_;
    std::int64_t total_;
    std::string label_;
    std::string postfix_;
    int width_;
    bool redraw_;
    bool closed_ = false;
    std::int64_t count_ = 0;
    std::string drawn_;      // the line last drawn in place
    std::size_t columns_ = 0;  // the longest line drawn in place (its columns are ours)
};

namespace detail {
/// Whether `os` is std::cout, std::cerr or std::clog writing to a terminal.
[[nodiscard]] GRAFT_INLINE bool is_terminal(const std::ostream& os);
}  // namespace detail

}  // namespace graft::data

#if GRAFT_HAS_CODE
#include "graft/data/impl/progress.ipp"
#endif
