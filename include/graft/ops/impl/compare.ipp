#pragma once
// Definitions for graft/ops/compare.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/ops/compare.hpp"

#include <cmath>

namespace graft {

GRAFT_INLINE bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
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

GRAFT_INLINE bool equal(const Tensor& a, const Tensor& b) {
    detail::check(a.defined() && b.defined(), "equal: got an undefined tensor");
    if (a.sizes() != b.sizes()) return false;
    if (is_floating_point(a.type()) || is_floating_point(b.type()))
        return a.to_vector<double>() == b.to_vector<double>();
    return a.to_vector<std::int64_t>() == b.to_vector<std::int64_t>();
}

}  // namespace graft
