#pragma once
// Whole-tensor comparisons: allclose and equal.
#include <cmath>

#include "graft/core/tensor.hpp"

namespace graft {

/// True when |a - b| <= atol + rtol * |b| for every element after broadcasting
/// (torch.allclose). NaNs compare equal only when equal_nan; infinities must match exactly.
[[nodiscard]] inline bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
                                   bool equal_nan = false) {
    detail::check(a.defined() && b.defined(), "allclose: got an undefined tensor");
    const int_list shape = broadcast_shapes(a.sizes(), b.sizes());
    const auto x = detail::raw::expand(a, shape).to_vector<double>();
    const auto y = detail::raw::expand(b, shape).to_vector<double>();
    for (std::size_t i = 0; i < x.size(); ++i) {
        if (std::isnan(x[i]) || std::isnan(y[i])) {
            if (!(equal_nan && std::isnan(x[i]) && std::isnan(y[i]))) return false;
            continue;
        }
        if (x[i] == y[i]) continue;
        if (std::isinf(x[i]) || std::isinf(y[i])) return false;
        if (!(std::fabs(x[i] - y[i]) <= atol + rtol * std::fabs(y[i]))) return false;
    }
    return true;
}

/// True when both tensors have the same sizes and equal elements (torch.equal); NaN != NaN.
[[nodiscard]] inline bool equal(const Tensor& a, const Tensor& b) {
    detail::check(a.defined() && b.defined(), "equal: got an undefined tensor");
    if (a.sizes() != b.sizes()) return false;
    if (is_floating_point(a.type()) || is_floating_point(b.type()))
        return a.to_vector<double>() == b.to_vector<double>();
    return a.to_vector<std::int64_t>() == b.to_vector<std::int64_t>();
}

}  // namespace graft
