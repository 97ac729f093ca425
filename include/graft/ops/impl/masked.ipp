#pragma once
// Definitions for graft/ops/masked.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/ops/masked.hpp"

#include <algorithm>
#include <cstring>

namespace graft {

namespace detail {

/// tril (lower) or triu of t: a contiguous copy whose elements outside the triangle are
/// zeroed (all-zero bytes are 0 in every dtype graft has).
[[nodiscard]] GRAFT_INLINE Tensor triangle(const char* op, const Tensor& t, std::int64_t diagonal, bool lower) {
    check(t.defined(), op, ": got an undefined tensor");
    check(t.dim() >= 2, op, ": input tensor must have at least 2 dimensions, got ", t.dim(), " (sizes ", t.sizes(),
          ")");
    Tensor out = raw::clone(t);
    if (out.numel() == 0) return out;
    const std::int64_t rows = t.sizes()[t.sizes().size() - 2], cols = t.sizes().back();
    const std::int64_t batches = t.numel() / (rows * cols);
    // Diagonals beyond the matrix give the same result as the matrix's last one: clamping
    // keeps i + diagonal within int64.
    const std::int64_t d = std::clamp<std::int64_t>(diagonal, -rows - 1, cols + 1);
    const std::size_t item = element_size(t.type());
    auto* base = static_cast<char*>(out.raw_data());
    for (std::int64_t b = 0; b < batches; ++b)
        for (std::int64_t i = 0; i < rows; ++i) {
            char* row = base + static_cast<std::size_t>((b * rows + i) * cols) * item;
            // tril zeroes the columns j > i + d, triu the columns j < i + d.
            const std::int64_t lo = lower ? std::clamp<std::int64_t>(i + d + 1, 0, cols) : 0;
            const std::int64_t hi = lower ? cols : std::clamp<std::int64_t>(i + d, 0, cols);
            if (hi > lo) std::memset(row + static_cast<std::size_t>(lo) * item, 0, static_cast<std::size_t>(hi - lo) * item);
        }
    return out;
}

}  // namespace detail

namespace ops {

GRAFT_INLINE Tensor tril(const Tensor& t, std::int64_t diagonal) {
    const graft::detail::observed_op obs;
    return obs.done(graft::detail::triangle("tril", t, diagonal, true), "tril", {t}, {{"diagonal", diagonal}});
}

GRAFT_INLINE Tensor triu(const Tensor& t, std::int64_t diagonal) {
    const graft::detail::observed_op obs;
    return obs.done(graft::detail::triangle("triu", t, diagonal, false), "triu", {t}, {{"diagonal", diagonal}});
}

GRAFT_INLINE Tensor masked_fill(const Tensor& t, const Tensor& mask, const scalar& value) {
    const graft::detail::observed_op obs;
    graft::detail::check(t.defined(), "masked_fill: got an undefined tensor");
    graft::detail::check(mask.defined(), "masked_fill: got an undefined mask");
    graft::detail::check(mask.type() == dtype::bool_, "masked_fill: only supports boolean masks, but got mask with dtype ",
                         mask.type());
    // The value takes t's dtype (PyTorch's masked_fill never promotes).
    Tensor out = where_unobserved(mask, graft::detail::as_tensor(value, t.type()), t);
    // One variant alternative per branch, each constructed in place (a ?: of three variants
    // made g++ 12 -O1 warn that the copied variant may be uninitialized).
    if (value.is_floating_point()) return obs.done(out, "masked_fill", {t, mask}, {{"value", value.to_double()}});
    if (value.kind() == dtype::bool_)
        return obs.done(out, "masked_fill", {t, mask}, {{"value", value.to_double() != 0.0}});
    return obs.done(out, "masked_fill", {t, mask}, {{"value", value.to_int64()}});
}

}  // namespace ops
}  // namespace graft
