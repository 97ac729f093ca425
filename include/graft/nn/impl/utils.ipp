#pragma once
// Definitions for graft/nn/utils.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/nn/utils.hpp"

#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "graft/autograd/grad_mode.hpp"
#include "graft/autograd/tensor_methods.hpp"
#include "graft/core/error.hpp"
#include "graft/core/factories.hpp"

namespace graft::nn::utils {
namespace detail {

/// Running vector norm of order p over values fed one by one (torch.linalg.vector_norm's
/// orders: inf, -inf, 0, any other p via sum |x|^p), accumulated in double.
struct norm_acc {
    double p;
    double acc;
    explicit norm_acc(double order)
        : p(order), acc(std::isinf(order) && order < 0 ? std::numeric_limits<double>::infinity() : 0.0) {}
    void add(double x) {
        const double a = std::fabs(x);
        if (std::isinf(p)) {
            if (a != a || acc != acc)
                acc = std::numeric_limits<double>::quiet_NaN();
            else
                acc = p > 0 ? (a > acc ? a : acc) : (a < acc ? a : acc);
        } else if (p == 0) {
            acc += x != 0 ? 1.0 : 0.0;  // NaN counts as nonzero
        } else if (p == 1) {
            acc += a;
        } else if (p == 2) {
            acc += a * a;
        } else {
            acc += std::pow(a, p);
        }
    }
    [[nodiscard]] double result() const {
        if (std::isinf(p) || p == 0 || p == 1) return acc;
        if (p == 2) return std::sqrt(acc);
        return std::pow(acc, 1.0 / p);
    }
};

template <class T>
double grad_norm(const Tensor& g, double p) {
    const Tensor c = g.is_contiguous() ? g : g.contiguous();
    const T* x = c.data_ptr<T>();
    norm_acc acc(p);
    for (std::int64_t i = 0, n = c.numel(); i < n; ++i) acc.add(static_cast<double>(x[i]));
    return acc.result();
}

}  // namespace detail

GRAFT_INLINE Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                                    bool error_if_nonfinite) {
    using graft::detail::check;
    constexpr const char* op = "clip_grad_norm_";
    check(norm_type == norm_type, op, ": norm_type is NaN");
    check(max_norm == max_norm, op, ": max_norm is NaN");
    std::vector<Tensor> grads;
    bool any_f64 = false;
    for (std::size_t i = 0; i < parameters.size(); ++i) {
        check(parameters[i].defined(), op, ": parameter ", i, " is an undefined tensor");
        Tensor g = parameters[i].grad();
        if (!g.defined()) continue;
        check(g.type() == dtype::float32 || g.type() == dtype::float64, op, ": the gradient of parameter ", i,
              " has dtype ", g.type(), "; expected float32 or float64");
        any_f64 = any_f64 || g.type() == dtype::float64;
        grads.push_back(g);
    }
    const dtype out = any_f64 ? dtype::float64 : dtype::float32;
    if (grads.empty()) return full({}, 0.0, out);
    detail::norm_acc total(norm_type);
    for (const Tensor& g : grads) {
        double n = g.type() == dtype::float32 ? detail::grad_norm<float>(g, norm_type)
                                              : detail::grad_norm<double>(g, norm_type);
        if (g.type() == dtype::float32) n = static_cast<double>(static_cast<float>(n));  // the norm in g's dtype
        total.add(n);
    }
    double t = total.result();
    if (out == dtype::float32) t = static_cast<double>(static_cast<float>(t));
    if (error_if_nonfinite)
        check(std::isfinite(t), op, ": The total norm of order ", norm_type,
              " for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error and "
              "scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`");
    // clip_coef = max_norm / (total + 1e-6), clamped to at most 1 (NaN stays NaN), in the
    // total norm's dtype.
    double coef;
    if (out == dtype::float32) {
        const float c = static_cast<float>(max_norm) / (static_cast<float>(t) + 1e-6f);
        coef = c > 1.0f ? 1.0 : static_cast<double>(c);
    } else {
        const double c = max_norm / (t + 1e-6);
        coef = c > 1.0 ? 1.0 : c;
    }
    {
        autograd::no_grad guard;
        for (Tensor& g : grads) g.mul_(coef);
    }
    return full({}, t, out);
}

GRAFT_INLINE Tensor clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type,
                                    bool error_if_nonfinite) {
    return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}

}  // namespace graft::nn::utils
