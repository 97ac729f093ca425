#pragma once
// Definitions for graft/nn/functional.hpp (compiled once in compiled mode; see graft/config.hpp).
// Everything is composed of differentiable ops; the comments give the formula each follows.
#include "graft/nn/functional.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "graft/core/detail/op_observer.hpp"
#include "graft/core/error.hpp"

namespace graft::nn::functional {
namespace detail {

using graft::detail::check;
using graft::detail::concat;

inline void check_defined(const char* op, const char* what, const Tensor& t) {
    check(t.defined(), op, ": ", what, " is an undefined tensor");
}

inline void check_floating(const char* op, const char* what, const Tensor& t) {
    check_defined(op, what, t);
    check(is_floating_point(t.type()), op, ": expected a floating-point ", what, ", got dtype ", t.type());
}

/// input and target of an elementwise loss: defined, floating, the same shape.
inline void check_pair(const char* op, const Tensor& input, const Tensor& target) {
    check_floating(op, "input", input);
    check_floating(op, "target", target);
    check(input.sizes() == target.sizes(), op, ": target size (", target.sizes(), ") must be the same as input size (",
          input.sizes(), ")");
}

/// An optional operand that must broadcast to the input's sizes without growing it.
inline void check_broadcasts_to(const char* op, const char* what, const Tensor& t, const Tensor& input) {
    if (!t.defined()) return;
    check_floating(op, what, t);
    bool ok = t.dim() <= input.dim();
    for (std::int64_t i = 1; ok && i <= t.dim(); ++i) ok = t.size(-i) == 1 || t.size(-i) == input.size(-i);
    check(ok, op, ": ", what, " of sizes ", t.sizes(), " must broadcast to the input's sizes ", input.sizes());
}

inline Tensor reduce(const Tensor& loss, reduction how) {
    switch (how) {
        case reduction::none: return loss;
        case reduction::sum: return graft::sum(loss);
        case reduction::mean: return graft::mean(loss);
    }
    graft::detail::fail("nn::functional: unknown reduction");
}

/// log(1 + exp(z)) without overflow and with the exact gradient sigmoid(z) everywhere
/// (z = 0 included): z + log(1 + exp(-z)) for z > 0, log(1 + exp(z)) otherwise, each branch
/// fed a clamped z so that neither ever sees a positive exponent.
inline Tensor log1p_exp(const Tensor& z) {
    const Tensor pos = clamp_min(z, 0.0), neg = clamp_max(z, 0.0);
    return where(z > 0.0, pos + log(1.0 + exp(-pos)), log(1.0 + exp(neg)));
}

/// The sizes a per-class weight [C] is viewed as to broadcast along `class_dim` of `input`.
inline int_list class_view(const Tensor& input, std::int64_t class_dim, std::int64_t classes) {
    int_list s(static_cast<int_list::size_type>(input.dim()), 1);
    s[static_cast<int_list::size_type>(class_dim)] = classes;
    return s;
}

/// Checks nll_loss's shapes and dtypes and every target value (outside graph capture: a
/// captured graph still checks its indices in gather); returns the class dimension.
inline std::int64_t check_nll(const char* op, const Tensor& input, const Tensor& target, const Tensor& weight,
                              std::int64_t ignore_index) {
    check_floating(op, "input", input);
    check_defined(op, "target", target);
    check(target.type() == dtype::int64, op, ": expected a target of dtype int64 (class indices), got ", target.type());
    check(input.dim() >= 1, op, ": expected an input of 1 or more dimensions, got a 0-dim tensor");
    const std::int64_t cd = input.dim() == 1 ? 0 : 1;
    const std::int64_t classes = input.size(cd);
    if (input.dim() == 1) {
        check(target.dim() == 0, op, ": a 1-D input (one sample of ", classes,
              " classes) needs a 0-dim target, got sizes ", target.sizes());
    } else {
        check(target.dim() >= 1 && target.size(0) == input.size(0), op, ": Expected input batch_size (", input.size(0),
              ") to match target batch_size (", target.dim() >= 1 ? target.size(0) : 0, ")");
        int_list want;
        for (std::int64_t d = 0; d < input.dim(); ++d)
            if (d != cd) want.push_back(input.size(d));
        check(target.sizes() == want, op, ": expected target size ", want, ", got ", target.sizes());
    }
    if (weight.defined()) {
        check_floating(op, "weight", weight);
        check(weight.dim() == 1 && weight.numel() == classes, op, ": weight tensor should be defined either for all ",
              classes, " classes or no classes but got weight tensor of shape: ", weight.sizes());
    }
    std::vector<std::int64_t> values;
    {
        graft::detail::observer_paused paused;  // validation only: not part of a captured graph
        values = target.to_vector<std::int64_t>();
    }
    for (const std::int64_t v : values)
        check(v == ignore_index || (v >= 0 && v < classes), op, ": Target ", v, " is out of bounds (", classes,
              " classes; ignore_index ", ignore_index, ")");
    return cd;
}

struct nll_parts {
    Tensor loss;    // per element, 0 where ignored
    Tensor weight;  // the weight of each element's target, 0 where ignored
    Tensor keep;    // bool: target != ignore_index
};

inline nll_parts nll_elements(const Tensor& input, const Tensor& target, const Tensor& weight,
                              std::int64_t ignore_index, std::int64_t cd) {
    nll_parts p;
    p.keep = target.ne(ignore_index);
    const Tensor safe = where(p.keep, target, scalar(std::int64_t{0}));  // ignored: any valid class
    const Tensor picked = gather(input, cd, safe.unsqueeze(cd)).squeeze(cd);
    if (weight.defined()) {
        const Tensor w = index_select(weight, 0, safe.reshape({-1})).reshape(target.sizes());
        p.weight = where(p.keep, w, scalar(0.0));
        p.loss = where(p.keep, -picked * w, scalar(0.0));
    } else {
        p.weight = p.keep.to(input.type());
        p.loss = where(p.keep, -picked, scalar(0.0));
    }
    return p;
}

}  // namespace detail

// ---------------------------------------------------------------- layers and activations

GRAFT_INLINE Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
    detail::check_defined("linear", "input", x);
    detail::check_defined("linear", "weight", weight);
    graft::detail::check(weight.dim() == 2, "linear: expected a 2-D weight [out_features, in_features], got sizes ",
                         weight.sizes());
    graft::detail::check(x.dim() >= 1 && x.size(-1) == weight.size(1), "linear: input sizes ", x.sizes(),
                         " do not match weight sizes ", weight.sizes(), " (the last input dimension must be ",
                         weight.size(1), ")");
    const Tensor y = matmul(x, weight.t());
    if (!bias.defined()) return y;
    graft::detail::check(bias.dim() == 1 && bias.size(0) == weight.size(0), "linear: expected a bias of sizes [",
                         weight.size(0), "], got sizes ", bias.sizes());
    return y + bias;
}

GRAFT_INLINE Tensor relu(const Tensor& x) { return graft::relu(x); }
GRAFT_INLINE Tensor gelu(const Tensor& x, std::string_view approximate) { return graft::gelu(x, approximate); }
GRAFT_INLINE Tensor silu(const Tensor& x) { return x * graft::sigmoid(x); }

GRAFT_INLINE Tensor softplus(const Tensor& x, double beta, double threshold) {
    detail::check_floating("softplus", "input", x);
    // PyTorch: x where beta x > threshold, else log1p(exp(beta x)) / beta.
    const Tensor bx = x * beta;
    const Tensor soft = detail::log1p_exp(clamp_max(bx, threshold)) / beta;
    return where(bx > threshold, x, soft);
}

GRAFT_INLINE Tensor leaky_relu(const Tensor& x, double negative_slope) {
    detail::check_floating("leaky_relu", "input", x);
    return where(x > 0.0, x, x * negative_slope);
}

GRAFT_INLINE Tensor sigmoid(const Tensor& x) { return graft::sigmoid(x); }
GRAFT_INLINE Tensor tanh(const Tensor& x) { return graft::tanh(x); }
GRAFT_INLINE Tensor softmax(const Tensor& x, std::int64_t dim) { return graft::softmax(x, dim); }
GRAFT_INLINE Tensor log_softmax(const Tensor& x, std::int64_t dim) { return graft::log_softmax(x, dim); }

// ---------------------------------------------------------------- losses

GRAFT_INLINE Tensor mse_loss(const Tensor& input, const Tensor& target, reduction how) {
    detail::check_pair("mse_loss", input, target);
    const Tensor d = input - target;
    return detail::reduce(d * d, how);
}

GRAFT_INLINE Tensor l1_loss(const Tensor& input, const Tensor& target, reduction how) {
    detail::check_pair("l1_loss", input, target);
    return detail::reduce(abs(input - target), how);
}

GRAFT_INLINE Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, reduction how, double beta) {
    detail::check_pair("smooth_l1_loss", input, target);
    graft::detail::check(beta >= 0.0, "smooth_l1_loss does not support negative values for beta (got ", beta, ")");
    if (beta == 0.0) return l1_loss(input, target, how);
    const Tensor d = input - target;
    const Tensor z = abs(d);
    return detail::reduce(where(z < beta, d * d * (0.5 / beta), z - 0.5 * beta), how);
}

GRAFT_INLINE Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                                     reduction how, const Tensor& pos_weight) {
    constexpr const char* op = "binary_cross_entropy_with_logits";
    detail::check_pair(op, input, target);
    detail::check_broadcasts_to(op, "weight", weight, input);
    detail::check_broadcasts_to(op, "pos_weight", pos_weight, input);
    const Tensor sp = detail::log1p_exp(-input);  // -log(sigmoid(x))
    Tensor loss = pos_weight.defined() ? (1.0 - target) * input + (1.0 + (pos_weight - 1.0) * target) * sp
                                       : (1.0 - target) * input + sp;
    if (weight.defined()) loss = loss * weight;
    return detail::reduce(loss, how);
}

GRAFT_INLINE Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight,
                             std::int64_t ignore_index, reduction how) {
    const std::int64_t cd = detail::check_nll("nll_loss", log_probs, target, weight, ignore_index);
    const detail::nll_parts p = detail::nll_elements(log_probs, target, weight, ignore_index, cd);
    switch (how) {
        case reduction::none: return p.loss;
        case reduction::sum: return graft::sum(p.loss);
        case reduction::mean: return graft::sum(p.loss) / graft::sum(p.weight);
    }
    graft::detail::fail("nll_loss: unknown reduction");
}

GRAFT_INLINE Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                                  std::int64_t ignore_index, reduction how, double label_smoothing) {
    constexpr const char* op = "cross_entropy";
    detail::check_floating(op, "input", input);
    detail::check_defined(op, "target", target);
    graft::detail::check(input.dim() >= 1, op, ": expected an input of 1 or more dimensions, got a 0-dim tensor");
    graft::detail::check(label_smoothing >= 0.0 && label_smoothing <= 1.0, op,
                         ": label_smoothing must be between 0.0 and 1.0. Got: ", label_smoothing);
    const std::int64_t cd = input.dim() == 1 ? 0 : 1;
    const std::int64_t classes = input.size(cd);
    const Tensor logp = graft::log_softmax(input, cd);

    if (input.sizes() == target.sizes()) {
        // Class probabilities: -sum_c w_c y_c log p_c per element, where y is mixed with the
        // uniform distribution: y (1 - eps) + eps / C. "mean" divides by the element count N d...
        graft::detail::check(is_floating_point(target.type()), op,
                             ": expected a floating-point target for class probabilities (a target of the "
                             "input's shape), got dtype ",
                             target.type());
        graft::detail::check(ignore_index < 0, op,
                             ": ignore_index is not supported for floating point target (class probabilities)");
        Tensor y = target;
        if (label_smoothing > 0.0)
            y = target * (1.0 - label_smoothing) + label_smoothing / static_cast<double>(classes);
        Tensor prod = logp * y;
        if (weight.defined()) {
            detail::check_floating(op, "weight", weight);
            graft::detail::check(weight.dim() == 1 && weight.numel() == classes, op,
                                 ": weight tensor should be defined either for all ", classes,
                                 " classes or no classes but got weight tensor of shape: ", weight.sizes());
            prod = prod * weight.reshape(detail::class_view(input, cd, classes));
        }
        switch (how) {
            case reduction::none: return -graft::sum(prod, {cd}, false);
            case reduction::sum: return -graft::sum(prod);
            case reduction::mean: {
                const double count = classes > 0 ? static_cast<double>(input.numel() / classes) : 0.0;
                return -graft::sum(prod) / count;
            }
        }
        graft::detail::fail("cross_entropy: unknown reduction");
    }

    // Class indices: nll_loss of log_softmax. With label smoothing eps, PyTorch's formula is
    // (1 - eps) nll + (eps / C) smooth, smooth = -sum_c w_c log p_c per counted element (0 where
    // ignored), reduced as nll is ("mean": divided by the summed weights of the counted targets).
    detail::check_nll(op, logp, target, weight, ignore_index);
    const detail::nll_parts p = detail::nll_elements(logp, target, weight, ignore_index, cd);
    Tensor nll, denom;
    switch (how) {
        case reduction::none: nll = p.loss; break;
        case reduction::sum: nll = graft::sum(p.loss); break;
        case reduction::mean:
            denom = graft::sum(p.weight);
            nll = graft::sum(p.loss) / denom;
            break;
    }
    if (label_smoothing == 0.0) return nll;
    const Tensor weighted = weight.defined() ? logp * weight.reshape(detail::class_view(input, cd, classes)) : logp;
    const Tensor smooth = where(p.keep, -graft::sum(weighted, {cd}, false), scalar(0.0));
    Tensor reduced;
    switch (how) {
        case reduction::none: reduced = smooth; break;
        case reduction::sum: reduced = graft::sum(smooth); break;
        case reduction::mean: reduced = graft::sum(smooth) / denom; break;
    }
    return nll * (1.0 - label_smoothing) + reduced * (label_smoothing / static_cast<double>(classes));
}

}  // namespace graft::nn::functional
