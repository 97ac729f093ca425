#pragma once
// Definitions for graft/nn/functional.hpp (compiled once in compiled mode; see graft/config.hpp).
// Everything is composed of differentiable ops; the comments give the formula each follows.
#include "graft/nn/functional.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
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

/// Refuses reduction::batchmean, which only kl_div accepts (PyTorch: a ValueError elsewhere).
inline void check_reduction(const char* op, reduction how) {
    check(how != reduction::batchmean, op, ": reduction::batchmean is only valid for kl_div (PyTorch: batchmean is not ",
          "a valid value for reduction)");
}

inline Tensor reduce(const Tensor& loss, reduction how) {
    switch (how) {
        case reduction::none: return loss;
        case reduction::sum: return graft::sum(loss);
        case reduction::mean: return graft::mean(loss);
        case reduction::batchmean: break;  // kl_div's own; refused by check_reduction before
    }
    graft::detail::fail("nn::functional: unknown reduction");
}

/// smooth_l1_loss's and huber_loss's PyTorch branches of d: linear(|d|) where |d| >= threshold,
/// else quadratic(d). The quadratic branch is fed d only where it is taken (an infinite d would
/// give it a 0 * inf = NaN gradient), and NaN takes it (a NaN gradient, as PyTorch's backward).
template <class Linear, class Quadratic>
Tensor quadratic_then_linear(const Tensor& d, double threshold, Linear linear, Quadratic quadratic) {
    const Tensor z = abs(d);
    const Tensor is_linear = z >= threshold;
    return where(is_linear, linear(z), quadratic(where(is_linear, 0.0, d)));
}

/// log(1 + exp(z)) without overflow and with the exact gradient sigmoid(z) everywhere
/// (z = 0 included): z + log1p(exp(-z)) for z > 0, log1p(exp(z)) otherwise (log1p: exact
/// where exp(z) is tiny, softplus(-30) = 9.3576e-14 as PyTorch's), each branch
/// fed a z cut to its side so that neither ever sees a positive exponent. The cut is a
/// `where`, not a clamp: clamp's gradient is 0 at NaN, and PyTorch's formulas built on
/// sigmoid(z) (softplus, binary_cross_entropy_with_logits) give NaN there.
inline Tensor log1p_exp(const Tensor& z) {
    const Tensor positive = z > 0.0;
    const Tensor pos = where(positive, z, 0.0), neg = where(positive, 0.0, z);
    return where(positive, pos + log1p(exp(-pos)), log1p(exp(neg)));
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
    // PyTorch: x where beta x > threshold, else log1p(exp(beta x)) / beta; the gradient
    // sigmoid(beta x) (1 above the threshold) is NaN at NaN, hence a where and not clamp_max
    // (whose gradient is 0 at NaN) to keep the unselected branch finite.
    const Tensor bx = x * beta;
    const Tensor linear = bx > threshold;
    const Tensor soft = detail::log1p_exp(where(linear, threshold, bx)) / beta;
    return where(linear, x, soft);
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
    detail::check_reduction("mse_loss", how);
    const Tensor d = input - target;
    return detail::reduce(d * d, how);
}

GRAFT_INLINE Tensor l1_loss(const Tensor& input, const Tensor& target, reduction how) {
    detail::check_pair("l1_loss", input, target);
    detail::check_reduction("l1_loss", how);
    return detail::reduce(abs(input - target), how);
}

GRAFT_INLINE Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, reduction how, double beta) {
    detail::check_pair("smooth_l1_loss", input, target);
    detail::check_reduction("smooth_l1_loss", how);
    graft::detail::check(beta >= 0.0, "smooth_l1_loss does not support negative values for beta (got ", beta, ")");
    if (beta == 0.0) return l1_loss(input, target, how);
    return detail::reduce(detail::quadratic_then_linear(
                              input - target, beta, [&](const Tensor& z) { return z - 0.5 * beta; },
                              [&](const Tensor& dq) { return dq * dq * (0.5 / beta); }),
                          how);
}

GRAFT_INLINE Tensor huber_loss(const Tensor& input, const Tensor& target, reduction how, double delta) {
    detail::check_pair("huber_loss", input, target);
    detail::check_reduction("huber_loss", how);
    graft::detail::check(delta > 0.0, "huber_loss does not support non-positive values for delta (got ", delta, ")");
    return detail::reduce(detail::quadratic_then_linear(
                              input - target, delta, [&](const Tensor& z) { return (z - 0.5 * delta) * delta; },
                              [](const Tensor& dq) { return dq * dq * 0.5; }),
                          how);
}

GRAFT_INLINE Tensor kl_div(const Tensor& input, const Tensor& target, reduction how, bool log_target) {
    detail::check_pair("kl_div", input, target);
    // PyTorch 1.13's composite: exp(t) (t - input) or xlogy(t, t) - t input, xlogy(t, t) being
    // 0 where t = 0 (NaN stays NaN). Its gradient in t is xlogy(t != 0, t) + t / t - input, NaN
    // at t = 0; here the unselected branch t log t gets a zero gradient there, and
    // 0 * log(0) = NaN gives the same NaN.
    Tensor loss;
    if (log_target) {
        loss = exp(target) * (target - input);
    } else {
        loss = where(target == 0.0, 0.0, target * log(target)) - target * input;
    }
    if (how != reduction::batchmean) return detail::reduce(loss, how);
    const Tensor total = graft::sum(loss);
    return input.dim() == 0 ? total : total / static_cast<double>(input.size(0));
}

GRAFT_INLINE Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                                         reduction how) {
    constexpr const char* op = "binary_cross_entropy";
    detail::check_pair(op, input, target);
    detail::check_reduction(op, how);
    detail::check_broadcasts_to(op, "weight", weight, input);
    graft::detail::check(!weight.defined() || !weight.requires_grad(), op,
                         ": The function 'binary_cross_entropy' is not differentiable with respect to argument "
                         "'weight'. This input cannot have requires_grad True.");
    Tensor loss = autograd::detail::binary_cross_entropy_elements(input, target);
    if (weight.defined()) loss = loss * weight;
    return detail::reduce(loss, how);
}

GRAFT_INLINE Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                                     reduction how, const Tensor& pos_weight) {
    constexpr const char* op = "binary_cross_entropy_with_logits";
    detail::check_pair(op, input, target);
    detail::check_reduction(op, how);
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
    detail::check_reduction("nll_loss", how);
    const std::int64_t cd = detail::check_nll("nll_loss", log_probs, target, weight, ignore_index);
    const detail::nll_parts p = detail::nll_elements(log_probs, target, weight, ignore_index, cd);
    switch (how) {
        case reduction::none: return p.loss;
        case reduction::sum: return graft::sum(p.loss);
        case reduction::mean: return graft::sum(p.loss) / graft::sum(p.weight);
        case reduction::batchmean: break;  // refused above
    }
    graft::detail::fail("nll_loss: unknown reduction");
}

GRAFT_INLINE Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                                  std::int64_t ignore_index, reduction how, double label_smoothing) {
    constexpr const char* op = "cross_entropy";
    detail::check_reduction(op, how);
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
            case reduction::batchmean: break;  // refused above
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
        case reduction::batchmean: break;  // refused above
    }
    if (label_smoothing == 0.0) return nll;
    const Tensor weighted = weight.defined() ? logp * weight.reshape(detail::class_view(input, cd, classes)) : logp;
    const Tensor smooth = where(p.keep, -graft::sum(weighted, {cd}, false), scalar(0.0));
    Tensor reduced;
    switch (how) {
        case reduction::none: reduced = smooth; break;
        case reduction::sum: reduced = graft::sum(smooth); break;
        case reduction::mean: reduced = graft::sum(smooth) / denom; break;
        case reduction::batchmean: break;  // refused above
    }
    return nll * (1.0 - label_smoothing) + reduced * (label_smoothing / static_cast<double>(classes));
}

// ---------------------------------------------------------------- distances and normalization

namespace detail {

/// ||x||_p along dim d (kept), with PyTorch's gradient (linalg_vector_norm's backward): 0 for a
/// zero vector (and for zero elements when p < 1), where the plain composite would give
/// 0 * inf = NaN. The cuts are `where`s that feed the unselected branches safe values. A zero
/// element's term is a * 0, not a constant 0: its gradient is 0 times the incoming one, NaN when
/// that is NaN or infinite (a row [inf, 0, 0]: norm inf, x / norm NaN), as PyTorch's
/// x |x|^(p-2) * (g / norm^(p-1)) gives; a constant would cut the NaN off.
inline Tensor vector_norm(const Tensor& x, double p, std::int64_t d) {
    if (p == 1.0) return graft::sum(abs(x), {d}, true);
    if (std::isinf(p)) return amax(abs(x), {d}, true);
    Tensor s;
    if (p == 2.0) {
        s = graft::sum(x * x, {d}, true);
    } else {
        const Tensor a = abs(x);
        const Tensor zero = a == 0.0;
        s = graft::sum(where(zero, a * 0.0, pow(where(zero, 1.0, a), p)), {d}, true);
    }
    const Tensor zero = s == 0.0;
    const Tensor safe = where(zero, 1.0, s);
    return where(zero, 0.0, p == 2.0 ? sqrt(safe) : pow(safe, 1.0 / p));
}

/// dim wrapped for a reduction over `rank` dimensions, with PyTorch's message.
inline std::int64_t reduce_dim(const char* op, std::int64_t dim, std::int64_t rank) {
    const std::int64_t r = std::max<std::int64_t>(rank, 1);
    check(dim >= -r && dim < r, op, ": Dimension out of range (expected to be in range of [", -r, ", ", r - 1,
          "], but got ", dim, ")");
    return dim < 0 ? dim + r : dim;
}

}  // namespace detail

GRAFT_INLINE Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, std::int64_t dim, double eps) {
    constexpr const char* op = "cosine_similarity";
    detail::check_floating(op, "x1", x1);
    detail::check_floating(op, "x2", x2);
    graft::detail::check(eps >= 0.0, op, ": eps must be non-negative, got ", eps);
    int_list shape;
    graft::detail::check(graft::detail::try_broadcast_shapes(x1.sizes(), x2.sizes(), shape), op, ": the sizes ",
                         x1.sizes(), " of x1 and ", x2.sizes(), " of x2 do not broadcast");
    const std::int64_t d = detail::reduce_dim(op, dim, static_cast<std::int64_t>(shape.size()));
    const dtype t = promote_types(x1.type(), x2.type());
    std::vector<Tensor> b = broadcast_tensors({x1.type() == t ? x1 : x1.to(t), x2.type() == t ? x2 : x2.to(t)});
    const bool scalar_input = shape.empty();
    if (scalar_input) b = {b[0].unsqueeze(0), b[1].unsqueeze(0)};
    // PyTorch 1.13: n = sqrt(s), s = sum(x^2, dim) clamped in place to eps^2 under no_grad, so
    // the value is sqrt(max(s, eps^2)) and the gradient that of sqrt(s) taken at the clamped
    // value: s - detach(s) + eps^2 below eps^2 (exactly eps^2, gradient 1 in s).
    const double e2 = eps * eps;
    const auto norm = [&](const Tensor& x) {
        const Tensor s = graft::sum(x * x, {d}, true);
        return sqrt(where(s < e2, s - s.detach() + e2, s));
    };
    const Tensor out = graft::sum((b[0] / norm(b[0])) * (b[1] / norm(b[1])), {d}, false);
    return scalar_input ? out.squeeze(0) : out;
}

GRAFT_INLINE Tensor normalize(const Tensor& input, double p, std::int64_t dim, double eps) {
    constexpr const char* op = "normalize";
    detail::check_floating(op, "input", input);
    graft::detail::check(p > 0.0, op, ": p must be positive (or infinity), got ", p,
                         " (PyTorch's p = 0 and negative p are not supported)");
    graft::detail::check(eps >= 0.0, op, ": eps must be non-negative, got ", eps);
    const std::int64_t d = detail::reduce_dim(op, dim, input.dim());
    const Tensor x = input.dim() == 0 ? input.unsqueeze(0) : input;
    // PyTorch: input / norm(input, p, dim, keepdim).clamp_min(eps) (clamp_min's gradient is 0
    // below eps and at NaN, graft's as PyTorch's).
    const Tensor out = x / clamp_min(detail::vector_norm(x, p, d), eps);
    return input.dim() == 0 ? out.squeeze(0) : out;
}

namespace detail {

/// pad's "reflect", "replicate" and "circular" modes (PyTorch's reflection_pad, replication_pad
/// and _pad_circular): each padded dimension is one index_select of the positions PyTorch reads,
/// so the gradient (index_select's: summed where a position is read twice) is PyTorch's.
inline Tensor pad_indexed(const Tensor& input, const int_list& pad, std::string_view mode, double value) {
    constexpr const char* op = "pad";
    const auto n = static_cast<std::int64_t>(pad.size()) / 2;
    check(value == 0.0, op, ": Padding mode \"", mode, "\" doesn't take in value argument");
    check(n >= 1 && n <= 3 && (input.dim() == n + 1 || input.dim() == n + 2), op,
          ": Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now (", 2 * n,
          " padding values for an input of ", input.dim(), " dimensions: expected ", n + 1, " or ", n + 2, ")");
    const bool circular = mode == "circular";
    if (circular)
        check(2 * n == 2 * (input.dim() - 2), op, ": Invalid padding size, expected ", 2 * (input.dim() - 2),
              " but got ", 2 * n, " (circular pads every dimension after the batch and channel ones)");
    Tensor out = input;
    for (std::int64_t k = 0; k < n; ++k) {
        const std::int64_t d = input.dim() - 1 - k, size = out.size(d);
        const std::int64_t left = pad[static_cast<std::size_t>(2 * k)], right = pad[static_cast<std::size_t>(2 * k + 1)];
        check(size + left + right >= 0 && std::max<std::int64_t>(-left, 0) + std::max<std::int64_t>(-right, 0) <= size,
              op, ": the input size ", size, " of dimension ", d, ", plus negative padding ", left, " and ", right,
              " resulted in a negative output size, which is invalid");
        std::vector<std::int64_t> idx;
        if (circular) {
            // PyTorch crops first, then wraps the cropped part around.
            const std::int64_t lo = std::max<std::int64_t>(-left, 0), kept = size - lo - std::max<std::int64_t>(-right, 0);
            const std::int64_t pl = std::max<std::int64_t>(left, 0), pr = std::max<std::int64_t>(right, 0);
            check(pl <= kept && pr <= kept, op, ": Padding value causes wrapping around more than once (padding (", left,
                  ", ", right, ") of dimension ", d, " of size ", size, ")");
            for (std::int64_t i = -pl; i < kept + pr; ++i) idx.push_back(lo + ((i % kept) + kept) % kept);
        } else {
            check(size > 0, op, ": ", mode, " padding needs a non-empty dimension ", d, ", got input sizes ",
                  input.sizes());
            if (mode == "reflect")
                check(left < size && right < size, op,
                      ": Padding size should be less than the corresponding input dimension, but got: padding (", left,
                      ", ", right, ") at dimension ", d, " of input ", input.sizes());
            for (std::int64_t i = -left; i < size + right; ++i) {
                std::int64_t j = i;
                if (mode == "reflect") j = i < 0 ? -i : i >= size ? 2 * (size - 1) - i : i;
                else j = std::clamp<std::int64_t>(i, 0, size - 1);
                idx.push_back(j);
            }
        }
        out = index_select(out, d, from_vector(idx));
    }
    return out;
}

}  // namespace detail

GRAFT_INLINE Tensor pad(const Tensor& input, const int_list& pad, std::string_view mode, double value) {
    constexpr const char* op = "pad";
    detail::check_defined(op, "input", input);
    graft::detail::check(mode == "constant" || mode == "reflect" || mode == "replicate" || mode == "circular", op,
                         ": Unrecognised padding mode ", mode,
                         " (one of \"constant\", \"reflect\", \"replicate\", \"circular\")");
    const auto n = static_cast<std::int64_t>(pad.size());
    graft::detail::check(n % 2 == 0, op, ": Padding length must be divisible by 2 (got ", n, " values)");
    graft::detail::check(n / 2 <= input.dim(), op, ": Padding length too large (", n, " values for an input of ",
                         input.dim(), " dimensions)");
    if (mode != "constant") return detail::pad_indexed(input, pad, mode, value);
    // From the last dimension backwards: crop the negative amounts (narrow), then cat the
    // constant blocks on either side (PyTorch's constant_pad_nd). The result is a new tensor.
    Tensor out = input;
    bool copied = false;
    for (std::int64_t k = 0; k < n / 2; ++k) {
        const std::int64_t d = input.dim() - 1 - k, size = out.size(d);
        const std::int64_t left = pad[static_cast<std::size_t>(2 * k)], right = pad[static_cast<std::size_t>(2 * k + 1)];
        const std::int64_t crop_l = std::max<std::int64_t>(-left, 0), crop_r = std::max<std::int64_t>(-right, 0);
        graft::detail::check(crop_l <= size && crop_r <= size - crop_l, op, ": the input size ", size,
                             " of dimension ", d, ", plus negative padding ", left, " and ", right,
                             " resulted in a negative output size, which is invalid");
        if (crop_l > 0 || crop_r > 0) out = out.narrow(d, crop_l, size - crop_l - crop_r);
        std::vector<Tensor> parts;
        int_list sizes = out.sizes();
        if (left > 0) {
            sizes[static_cast<std::size_t>(d)] = left;
            parts.push_back(full(sizes, value, input.type()));
        }
        parts.push_back(out);
        if (right > 0) {
            sizes[static_cast<std::size_t>(d)] = right;
            parts.push_back(full(sizes, value, input.type()));
        }
        if (parts.size() > 1) {
            out = cat(parts, d);
            copied = true;
        }
    }
    return copied ? out : out.clone();
}

// ---------------------------------------------------------------- convolution and pooling

namespace detail {

/// A 4-D view of a [N, C, H, W] or unbatched [C, H, W] floating input.
inline Tensor batched4(const char* op, const Tensor& input, bool& unbatched) {
    check_floating(op, "input", input);
    check(input.dim() == 3 || input.dim() == 4, op,
          ": Expected 3D (unbatched) or 4D (batched) input, but got input of size: ", input.sizes());
    unbatched = input.dim() == 3;
    return unbatched ? input.unsqueeze(0) : input;
}

inline void check_positive(const char* op, const char* what, int_pair v) {
    check(v.h > 0 && v.w > 0, op, ": ", what, " should be greater than zero, but got (", v.h, ", ", v.w, ")");
}
inline void check_padding(const char* op, int_pair v) {
    check(v.h >= 0 && v.w >= 0, op, ": padding should be non-negative, but got (", v.h, ", ", v.w, ")");
}

inline int_list pair_list(int_pair v) { return {v.h, v.w}; }

/// Window sizes at or above this are refused (so that their products cannot overflow).
constexpr std::int64_t size_limit = std::int64_t{1} << 31;

/// x [N, C, H, W] with eh zero rows appended at the bottom and ew zero columns at the right.
inline Tensor pad_bottom_right(const Tensor& x, std::int64_t eh, std::int64_t ew) {
    Tensor out = x;
    if (eh > 0) out = cat({out, zeros({x.size(0), x.size(1), eh, x.size(3)}, x.type())}, 2);
    if (ew > 0) out = cat({out, zeros({x.size(0), x.size(1), out.size(2), ew}, x.type())}, 3);
    return out;
}

inline std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/// PyTorch's pooling output size along one dimension, with ceil_mode's rule that the last
/// window must start inside the input or the left padding.
inline std::int64_t pool_out(std::int64_t size, std::int64_t k, std::int64_t s, std::int64_t p, std::int64_t d,
                             bool ceil_mode) {
    std::int64_t out = floor_div(size + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0), s) + 1;
    if (ceil_mode && (out - 1) * s >= size + p) --out;
    return out;
}

struct pool_geometry {
    std::int64_t oh, ow, eh, ew;  // output size; zeros appended at the bottom / right (ceil_mode)
};

inline pool_geometry check_pool(const char* op, const Tensor& x, int_pair k, int_pair s, int_pair p, int_pair d,
                                bool ceil_mode) {
    check_positive(op, "kernel_size", k);
    check_positive(op, "stride", s);
    check_positive(op, "dilation", d);
    check_padding(op, p);
    check(p.h <= k.h / 2 && p.w <= k.w / 2, op, ": pad should be at most half of effective kernel size, but got pad=(",
          p.h, ", ", p.w, ") and kernel_size=(", k.h, ", ", k.w, ")");
    check(k.h < size_limit && k.w < size_limit && s.h < size_limit && s.w < size_limit && d.h < size_limit &&
              d.w < size_limit && x.size(2) < size_limit && x.size(3) < size_limit,
          op, ": kernel_size, stride, dilation or input size too large (limit 2^31)");
    const std::int64_t h = x.size(2), w = x.size(3);
    check(x.size(1) > 0 && h > 0 && w > 0, op, ": Expected non-empty channel and spatial dimensions, got input sizes ",
          x.sizes());
    pool_geometry g{pool_out(h, k.h, s.h, p.h, d.h, ceil_mode), pool_out(w, k.w, s.w, p.w, d.w, ceil_mode), 0, 0};
    check(g.oh >= 1 && g.ow >= 1, op, ": Given input size: (", x.size(1), "x", h, "x", w,
          "). Calculated output size: (", x.size(1), "x", g.oh, "x", g.ow, "). Output size is too small");
    g.eh = std::max<std::int64_t>(0, (g.oh - 1) * s.h + d.h * (k.h - 1) + 1 - (h + 2 * p.h));
    g.ew = std::max<std::int64_t>(0, (g.ow - 1) * s.w + d.w * (k.w - 1) + 1 - (w + 2 * p.w));
    return g;
}

/// The windows of a pooling op as [N, C, kh * kw, oh * ow] (zero padding).
inline Tensor pool_windows(const Tensor& x, const pool_geometry& g, int_pair k, int_pair s, int_pair p, int_pair d) {
    const Tensor cols = im2col(pad_bottom_right(x, g.eh, g.ew), pair_list(k), pair_list(d), pair_list(p), pair_list(s));
    check(cols.size(2) == g.oh * g.ow, "pooling: internal window count mismatch");
    return cols.reshape({x.size(0), x.size(1), k.h * k.w, g.oh * g.ow});
}

}  // namespace detail

GRAFT_INLINE Tensor unfold(const Tensor& input, int_pair kernel_size, int_pair dilation, int_pair padding,
                           int_pair stride) {
    detail::check_floating("unfold", "input", input);
    graft::detail::check(input.dim() == 3 || input.dim() == 4,
                         "unfold: Input Error: Only 3D or 4D input Tensors are supported (got ", input.dim(), "D)");
    const bool unbatched = input.dim() == 3;
    const Tensor out = im2col(unbatched ? input.unsqueeze(0) : input, detail::pair_list(kernel_size),
                              detail::pair_list(dilation), detail::pair_list(padding), detail::pair_list(stride));
    return unbatched ? out.squeeze(0) : out;
}

GRAFT_INLINE Tensor fold(const Tensor& input, int_pair output_size, int_pair kernel_size, int_pair dilation,
                         int_pair padding, int_pair stride) {
    detail::check_floating("fold", "input", input);
    graft::detail::check(input.dim() == 2 || input.dim() == 3,
                         "fold: Input Error: Only unbatched (2D) or batched (3D) input Tensors are "
                         "supported (got ",
                         input.dim(), "D)");
    const bool unbatched = input.dim() == 2;
    const Tensor out =
        col2im(unbatched ? input.unsqueeze(0) : input, detail::pair_list(output_size), detail::pair_list(kernel_size),
               detail::pair_list(dilation), detail::pair_list(padding), detail::pair_list(stride));
    return unbatched ? out.squeeze(0) : out;
}

GRAFT_INLINE Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, int_pair stride,
                           conv_padding padding, int_pair dilation, std::int64_t groups) {
    const char* op = "conv2d";
    bool unbatched = false;
    const Tensor x = detail::batched4(op, input, unbatched);
    detail::check_floating(op, "weight", weight);
    graft::detail::check(weight.type() == input.type(), op, ": expected input and weight to have the same dtype, got ",
                         input.type(), " and ", weight.type());
    graft::detail::check(weight.dim() == 4, op,
                         ": Expected 4-dimensional weight [out_channels, in_channels / groups, kH, kW], but got "
                         "weight of size ",
                         weight.sizes());
    graft::detail::check(groups > 0, op, ": non-positive groups is not supported (got ", groups, ")");
    const std::int64_t n = x.size(0), c = x.size(1), o = weight.size(0), kh = weight.size(2), kw = weight.size(3);
    graft::detail::check(o > 0 && o % groups == 0, op, ": Given groups=", groups,
                         ", expected weight to be divisible by ", groups, " at dimension 0, but got weight of size ",
                         weight.sizes());
    graft::detail::check(weight.size(1) * groups == c, op, ": Given groups=", groups, ", weight of size ",
                         weight.sizes(), ", expected input", x.sizes(), " to have ", weight.size(1) * groups,
                         " channels, but got ", c, " channels instead");
    graft::detail::check(kh > 0 && kw > 0 && c > 0, op, ": empty kernel or channels (weight ", weight.sizes(), ")");
    if (bias.defined()) {
        detail::check_floating(op, "bias", bias);
        graft::detail::check(bias.type() == input.type(), op, ": expected bias of dtype ", input.type(), ", got ",
                             bias.type());
        graft::detail::check(bias.dim() == 1 && bias.numel() == o, op, ": expected bias of size [", o, "], got ",
                             bias.sizes());
    }
    detail::check_positive(op, "stride", stride);
    detail::check_positive(op, "dilation", dilation);
    const auto lim = detail::size_limit;
    graft::detail::check(stride.h < lim && stride.w < lim && dilation.h < lim && dilation.w < lim &&
                             padding.size.h < lim && padding.size.w < lim && kh < lim && kw < lim && x.size(2) < lim &&
                             x.size(3) < lim,
                         op, ": stride, padding, dilation, kernel or input size too large (limit 2^31)");
    int_pair pad = padding.size;
    std::int64_t eh = 0, ew = 0;  // one more row / column at the bottom / right ("same" with an odd total)
    if (!padding.mode.empty()) {
        if (padding.mode == "valid") {
            pad = int_pair{0};
        } else if (padding.mode == "same") {
            graft::detail::check(stride.h == 1 && stride.w == 1, op,
                                 ": padding='same' is not supported for strided convolutions");
            const std::int64_t th = dilation.h * (kh - 1), tw = dilation.w * (kw - 1);
            pad = int_pair{th / 2, tw / 2};
            eh = th - 2 * (th / 2);
            ew = tw - 2 * (tw / 2);
        } else {
            graft::detail::fail(graft::detail::concat(op, ": Invalid padding string '", padding.mode,
                                                      "', should be one of {'valid', 'same'}"));
        }
    }
    detail::check_padding(op, pad);
    const std::int64_t ph = x.size(2) + eh + 2 * pad.h, pw = x.size(3) + ew + 2 * pad.w;
    const std::int64_t sh = dilation.h * (kh - 1) + 1, sw = dilation.w * (kw - 1) + 1;
    graft::detail::check(ph >= sh && pw >= sw, op, ": Calculated padded input size per channel: (", ph, " x ", pw,
                         "). Kernel size: (", sh, " x ", sw, "). Kernel size can't be greater than actual input size");
    const std::int64_t oh = (ph - sh) / stride.h + 1, ow = (pw - sw) / stride.w + 1;
    const Tensor cols = im2col(detail::pad_bottom_right(x, eh, ew), {kh, kw}, detail::pair_list(dilation),
                               detail::pair_list(pad), detail::pair_list(stride));  // [N, C kh kw, L]
    const std::int64_t k = weight.size(1) * kh * kw, l = oh * ow;
    Tensor out;
    if (groups == 1) {
        out = matmul(weight.reshape({o, k}), cols);  // [N, O, L]
    } else {
        out = matmul(weight.reshape({groups, o / groups, k}), cols.reshape({n, groups, k, l})).reshape({n, o, l});
    }
    out = out.reshape({n, o, oh, ow});
    if (bias.defined()) out = out + bias.reshape({1, o, 1, 1});
    return unbatched ? out.squeeze(0) : out;
}

GRAFT_INLINE Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, std::int64_t stride,
                           conv_padding padding, std::int64_t dilation, std::int64_t groups) {
    const char* op = "conv1d";
    using graft::detail::check;
    detail::check_floating(op, "input", input);
    check(input.dim() == 2 || input.dim() == 3, op,
          ": Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: ", input.sizes());
    detail::check_floating(op, "weight", weight);
    check(weight.dim() == 3, op,
          ": Expected 3-dimensional weight [out_channels, in_channels / groups, kW], but got weight of size ",
          weight.sizes());
    check(groups > 0, op, ": non-positive groups is not supported (got ", groups, ")");
    const std::int64_t c = input.size(-2), l = input.size(-1), k = weight.size(2);
    check(weight.size(0) > 0 && weight.size(0) % groups == 0, op, ": Given groups=", groups,
          ", expected weight to be divisible by ", groups, " at dimension 0, but got weight of size ", weight.sizes());
    check(weight.size(1) * groups == c, op, ": Given groups=", groups, ", weight of size ", weight.sizes(),
          ", expected input", input.sizes(), " to have ", weight.size(1) * groups, " channels, but got ", c,
          " channels instead");
    check(stride > 0, op, ": stride should be greater than zero, but got ", stride);
    check(dilation > 0, op, ": dilation should be greater than zero, but got ", dilation);
    conv_padding p2 = padding;
    std::int64_t total = 0;  // padding at both sides ("same" always fits)
    if (padding.mode.empty()) {
        check(padding.size.h == padding.size.w, op, ": padding is one int, got (", padding.size.h, ", ",
              padding.size.w, ")");
        check(padding.size.h >= 0, op, ": padding should be non-negative, but got ", padding.size.h);
        p2 = conv_padding(int_pair{0, padding.size.w});
        total = 2 * std::min(padding.size.w, detail::size_limit);
    } else {
        check(padding.mode == "valid" || padding.mode == "same", op, ": Invalid padding string '", padding.mode,
              "', should be one of {'valid', 'same'}");
        check(padding.mode != "same" || stride == 1, op, ": padding='same' is not supported for strided convolutions");
    }
    const auto lim = detail::size_limit;
    check(stride < lim && dilation < lim && padding.size.w < lim && k < lim && l < lim, op,
          ": stride, padding, dilation, kernel or input size too large (limit 2^31)");
    check(padding.mode == "same" || l + total >= dilation * (k - 1) + 1, op,
          ": Calculated padded input size per channel: (", l + total, "). Kernel size: (", dilation * (k - 1) + 1,
          "). Kernel size can't be greater than actual input size");
    // A height-1 image: [N, C, 1, L] with weight [O, C / groups, 1, k].
    const Tensor out = conv2d(input.unsqueeze(-2), weight.unsqueeze(2), bias, int_pair{1, stride}, p2,
                              int_pair{1, dilation}, groups);
    return out.squeeze(-2);
}

GRAFT_INLINE Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias, int_pair stride,
                                     int_pair padding, int_pair output_padding, std::int64_t groups,
                                     int_pair dilation) {
    const char* op = "conv_transpose2d";
    using graft::detail::check;
    bool unbatched = false;
    const Tensor x = detail::batched4(op, input, unbatched);
    detail::check_floating(op, "weight", weight);
    check(weight.type() == input.type(), op, ": expected input and weight to have the same dtype, got ", input.type(),
          " and ", weight.type());
    check(weight.dim() == 4, op,
          ": Expected 4-dimensional weight [in_channels, out_channels / groups, kH, kW], but got weight of size ",
          weight.sizes());
    check(groups > 0, op, ": non-positive groups is not supported (got ", groups, ")");
    const std::int64_t n = x.size(0), c = x.size(1), kh = weight.size(2), kw = weight.size(3);
    check(weight.size(0) == c, op, ": Given transposed=1, weight of size ", weight.sizes(), ", expected input",
          x.sizes(), " to have ", weight.size(0), " channels, but got ", c, " channels instead");
    check(c > 0 && c % groups == 0, op, ": Given groups=", groups, ", expected weight to be divisible by ", groups,
          " at dimension 0, but got weight of size ", weight.sizes());
    check(weight.size(1) > 0 && kh > 0 && kw > 0, op, ": empty kernel or channels (weight ", weight.sizes(), ")");
    const std::int64_t o = weight.size(1) * groups;
    if (bias.defined()) {
        detail::check_floating(op, "bias", bias);
        check(bias.type() == input.type(), op, ": expected bias of dtype ", input.type(), ", got ", bias.type());
        check(bias.dim() == 1 && bias.numel() == o, op, ": expected bias of size [", o, "], got ", bias.sizes());
    }
    detail::check_positive(op, "stride", stride);
    detail::check_positive(op, "dilation", dilation);
    detail::check_padding(op, padding);
    check(output_padding.h >= 0 && output_padding.w >= 0, op, ": output_padding should be non-negative, but got (",
          output_padding.h, ", ", output_padding.w, ")");
    check((output_padding.h < stride.h || output_padding.h < dilation.h) &&
              (output_padding.w < stride.w || output_padding.w < dilation.w),
          op, ": output padding must be smaller than either stride or dilation, but got output_padding (",
          output_padding.h, ", ", output_padding.w, "), stride (", stride.h, ", ", stride.w, ") and dilation (",
          dilation.h, ", ", dilation.w, ")");
    const auto lim = detail::size_limit;
    check(stride.h < lim && stride.w < lim && dilation.h < lim && dilation.w < lim && padding.h < lim &&
              padding.w < lim && kh < lim && kw < lim && x.size(2) < lim && x.size(3) < lim,
          op, ": stride, padding, dilation, kernel or input size too large (limit 2^31)");
    const std::int64_t h = x.size(2), w = x.size(3);
    check(h > 0 && w > 0, op, ": Expected non-empty spatial dimensions, got input sizes ", x.sizes());
    // The uncropped output (padding 0), which col2im builds from H x W blocks.
    const std::int64_t fh = (h - 1) * stride.h + dilation.h * (kh - 1) + 1;
    const std::int64_t fw = (w - 1) * stride.w + dilation.w * (kw - 1) + 1;
    const std::int64_t oh = fh - 2 * padding.h + output_padding.h, ow = fw - 2 * padding.w + output_padding.w;
    check(oh > 0 && ow > 0, op, ": Given input size per channel: (", h, " x ", w,
          "). Calculated output size per channel: (", oh, " x ", ow, "). Output size is too small");
    const std::int64_t cg = c / groups, k = (o / groups) * kh * kw, l = h * w;
    Tensor cols;  // [N, O kh kw, L]: every input pixel's contribution to its output block
    if (groups == 1) {
        cols = matmul(weight.reshape({c, k}).transpose(0, 1), x.reshape({n, c, l}));
    } else {
        cols = matmul(weight.reshape({groups, cg, k}).transpose(1, 2), x.reshape({n, groups, cg, l}))
                   .reshape({n, o * kh * kw, l});
    }
    const Tensor full = col2im(cols, {fh, fw}, {kh, kw}, detail::pair_list(dilation), {0, 0},
                               detail::pair_list(stride));  // [N, O, fh, fw]
    // Crop `padding` at the top / left; output_padding may reach past the uncropped bottom / right.
    const std::int64_t th = std::min(padding.h, fh), tw = std::min(padding.w, fw);
    const std::int64_t kept_h = std::min(oh, fh - th), kept_w = std::min(ow, fw - tw);
    Tensor out = full.narrow(2, th, kept_h).narrow(3, tw, kept_w);
    out = detail::pad_bottom_right(out, oh - kept_h, ow - kept_w);
    if (bias.defined()) out = out + bias.reshape({1, o, 1, 1});
    return unbatched ? out.squeeze(0) : out;
}

GRAFT_INLINE Tensor max_pool2d(const Tensor& input, int_pair kernel_size, optional_int_pair stride, int_pair padding,
                               int_pair dilation, bool ceil_mode) {
    const char* op = "max_pool2d";
    bool unbatched = false;
    const Tensor x = detail::batched4(op, input, unbatched);
    const int_pair s = stride.value.value_or(kernel_size);
    const auto g = detail::check_pool(op, x, kernel_size, s, padding, dilation, ceil_mode);
    // The windows as [N, C, kh * kw, oh * ow], gathered from the flattened input. A tap outside
    // the input (padding, ceil_mode) reads the window's first element inside it, which is where
    // PyTorch's kernel starts (index of the first inside element, value -inf): a copy never
    // changes the maximum, and where it wins a tie (a window of -inf) its gradient goes to that
    // element, as PyTorch's, not into the padding.
    const std::int64_t kk = kernel_size.h * kernel_size.w, l = g.oh * g.ow, h = x.size(2), w = x.size(3);
    std::vector<std::int64_t> taps(static_cast<std::size_t>(kk * l)), tap_ids(taps.size());
    for (std::int64_t oy = 0; oy < g.oh; ++oy)
        for (std::int64_t ox = 0; ox < g.ow; ++ox) {
            const auto inside = [&](std::int64_t ki, std::int64_t kj) {
                const std::int64_t iy = oy * s.h - padding.h + ki * dilation.h;
                const std::int64_t ix = ox * s.w - padding.w + kj * dilation.w;
                return iy >= 0 && iy < h && ix >= 0 && ix < w ? iy * w + ix : std::int64_t{-1};
            };
            std::int64_t first = -1;
            for (std::int64_t t = 0; t < kk && first < 0; ++t) first = inside(t / kernel_size.w, t % kernel_size.w);
            graft::detail::check(first >= 0, op, ": internal error: a window with no input element");
            for (std::int64_t t = 0; t < kk; ++t) {
                const std::int64_t at = inside(t / kernel_size.w, t % kernel_size.w);
                taps[static_cast<std::size_t>(t * l + oy * g.ow + ox)] = at >= 0 ? at : first;
                tap_ids[static_cast<std::size_t>(t * l + oy * g.ow + ox)] = at >= 0 ? t : -1;
            }
        }
    const Tensor v = x.reshape({x.size(0), x.size(1), h * w})
                         .index_select(2, from_vector(taps))  // a constant of the sizes (captured as one)
                         .reshape({x.size(0), x.size(1), kk, l});
    // The first maximal tap in scan order, except that PyTorch's kernel keeps the last NaN of a
    // window inside the input (it takes a NaN whenever it meets one): the largest tap number
    // among the NaN taps (tap_ids: the tap's number, -1 outside the input). The output is the
    // tap gathered at that index, so the gradient goes there.
    const auto [values, first_max] = graft::max(v, 2, true);
    const Tensor last_nan = amax(where(v != v, from_vector(tap_ids, {kk, l}), std::int64_t{-1}), {2}, true);
    const Tensor pick = where(values != values, last_nan, first_max);
    const Tensor out = gather(v, 2, pick).reshape({x.size(0), x.size(1), g.oh, g.ow});
    return unbatched ? out.squeeze(0) : out;
}

GRAFT_INLINE Tensor avg_pool2d(const Tensor& input, int_pair kernel_size, optional_int_pair stride, int_pair padding,
                               bool ceil_mode, bool count_include_pad, std::optional<std::int64_t> divisor_override) {
    const char* op = "avg_pool2d";
    bool unbatched = false;
    const Tensor x = detail::batched4(op, input, unbatched);
    const int_pair s = stride.value.value_or(kernel_size);
    graft::detail::check(!divisor_override || *divisor_override != 0, op, ": divisor must be not zero");
    const auto g = detail::check_pool(op, x, kernel_size, s, padding, int_pair{1}, ceil_mode);
    const Tensor v = detail::pool_windows(x, g, kernel_size, s, padding, int_pair{1});
    // The divisor of each window, as PyTorch computes it.
    const std::int64_t l = g.oh * g.ow, h = x.size(2), w = x.size(3);
    std::vector<double> d(static_cast<std::size_t>(l));
    for (std::int64_t oy = 0; oy < g.oh; ++oy)
        for (std::int64_t ox = 0; ox < g.ow; ++ox) {
            std::int64_t hs = oy * s.h - padding.h, ws = ox * s.w - padding.w;
            std::int64_t he = std::min(hs + kernel_size.h, h + padding.h),
                         we = std::min(ws + kernel_size.w, w + padding.w);
            const std::int64_t pool_size = (he - hs) * (we - ws);
            hs = std::max<std::int64_t>(hs, 0);
            ws = std::max<std::int64_t>(ws, 0);
            he = std::min(he, h);
            we = std::min(we, w);
            std::int64_t count = divisor_override    ? *divisor_override
                                 : count_include_pad ? pool_size
                                                     : (he - hs) * (we - ws);
            if (hs >= he || ws >= we) count = 1;  // an empty window averages to 0
            d[static_cast<std::size_t>(oy * g.ow + ox)] = static_cast<double>(count);
        }
    const Tensor div = from_vector(d);  // a constant of the sizes (captured as one)
    const Tensor out = (sum(v, {2}, false) / div.to(x.type())).reshape({x.size(0), x.size(1), g.oh, g.ow});
    return unbatched ? out.squeeze(0) : out;
}

namespace detail {

/// Adaptive pooling's window i of `out` over `in` elements: [floor(i in / out), ceil((i + 1) in / out)).
inline std::int64_t adaptive_start(std::int64_t i, std::int64_t in, std::int64_t out) { return i * in / out; }
inline std::int64_t adaptive_end(std::int64_t i, std::int64_t in, std::int64_t out) {
    return ((i + 1) * in + out - 1) / out;
}

/// The output sizes of an adaptive pooling of x [N, C, H, W] (nullopt keeps the input's).
inline int_pair adaptive_out(const char* op, const Tensor& x, adaptive_size s) {
    const std::int64_t oh = s.h.value_or(x.size(2)), ow = s.w.value_or(x.size(3));
    check(oh > 0 && ow > 0, op, ": output_size must be positive, got (", oh, ", ", ow, ")");
    check(oh < size_limit && ow < size_limit && x.size(2) < size_limit && x.size(3) < size_limit, op,
          ": output or input size too large (limit 2^31)");
    check(x.size(1) > 0 && x.size(2) > 0 && x.size(3) > 0, op,
          ": Expected input to have non-zero size for non-batch dimensions, but input has sizes ", x.sizes());
    return {oh, ow};
}

/// The longest adaptive window of `out` over `in` elements.
inline std::int64_t adaptive_longest(std::int64_t in, std::int64_t out) {
    std::int64_t k = 0;
    for (std::int64_t i = 0; i < out; ++i) k = std::max(k, adaptive_end(i, in, out) - adaptive_start(i, in, out));
    return k;
}

/// The maximum over adaptive windows of dimension d of x: the windows' elements selected into
/// [..., out * k, ...] (each window padded to the longest, k, by repeating its last element,
/// which never changes the maximum nor which element is first), then max over k.
inline Tensor adaptive_max_along(const Tensor& x, std::int64_t d, std::int64_t out) {
    const std::int64_t in = x.size(d);
    if (in == out) return x;  // windows of one element
    std::int64_t k = 0;
    for (std::int64_t i = 0; i < out; ++i) k = std::max(k, adaptive_end(i, in, out) - adaptive_start(i, in, out));
    std::vector<std::int64_t> idx(static_cast<std::size_t>(out * k));
    for (std::int64_t i = 0; i < out; ++i) {
        const std::int64_t s = adaptive_start(i, in, out), e = adaptive_end(i, in, out);
        for (std::int64_t j = 0; j < k; ++j) idx[static_cast<std::size_t>(i * k + j)] = std::min(s + j, e - 1);
    }
    const Tensor picked = x.index_select(d, from_vector(idx));
    int_list sizes = x.sizes();
    sizes[static_cast<std::size_t>(d)] = out;
    sizes.insert(sizes.begin() + d + 1, k);
    return std::get<0>(graft::max(picked.reshape(sizes), d + 1));
}

}  // namespace detail

GRAFT_INLINE Tensor adaptive_avg_pool2d(const Tensor& input, adaptive_size output_size) {
    const char* op = "adaptive_avg_pool2d";
    bool unbatched = false;
    const Tensor x = detail::batched4(op, input, unbatched);
    const int_pair o = detail::adaptive_out(op, x, output_size);
    const std::int64_t h = x.size(2), w = x.size(3);
    if (o.h == h && o.w == w) {
        const Tensor out = x * 1.0;  // a new tensor, as PyTorch's
        return unbatched ? out.squeeze(0) : out;
    }
    // PyTorch's kernel: the sum of each window's elements, divided by its height, then by its
    // width. The windows' elements are gathered into [N, C, kh * kw, oh * ow] (row-major in the
    // window, each padded to the longest with zeros). Only a window's own elements enter its
    // sum: a matrix product with 0 weights would turn an infinite element into NaN (0 * inf) in
    // every other window of its row or column.
    const std::int64_t kh = detail::adaptive_longest(h, o.h), kw = detail::adaptive_longest(w, o.w);
    const std::int64_t kk = kh * kw, l = o.h * o.w;
    std::vector<std::int64_t> taps(static_cast<std::size_t>(kk * l));
    std::vector<bool> inside(static_cast<std::size_t>(kk * l));
    std::vector<double> heights(static_cast<std::size_t>(l)), widths(static_cast<std::size_t>(l));
    for (std::int64_t oy = 0; oy < o.h; ++oy) {
        const std::int64_t hs = detail::adaptive_start(oy, h, o.h), he = detail::adaptive_end(oy, h, o.h);
        for (std::int64_t ox = 0; ox < o.w; ++ox) {
            const std::int64_t ws = detail::adaptive_start(ox, w, o.w), we = detail::adaptive_end(ox, w, o.w);
            const std::int64_t j = oy * o.w + ox;
            heights[static_cast<std::size_t>(j)] = static_cast<double>(he - hs);
            widths[static_cast<std::size_t>(j)] = static_cast<double>(we - ws);
            for (std::int64_t a = 0; a < kh; ++a)
                for (std::int64_t b = 0; b < kw; ++b) {
                    const bool in = hs + a < he && ws + b < we;
                    const auto at = static_cast<std::size_t>((a * kw + b) * l + j);
                    taps[at] = in ? (hs + a) * w + ws + b : hs * w + ws;
                    inside[at] = in;
                }
        }
    }
    const Tensor v = x.reshape({x.size(0), x.size(1), h * w})
                         .index_select(2, from_vector(taps))  // constants of the sizes (captured as such)
                         .reshape({x.size(0), x.size(1), kk, l});
    const Tensor sums = graft::sum(where(from_vector(inside, {kk, l}), v, 0.0), {2}, false);
    const Tensor out = (sums / from_vector(heights).to(x.type()) / from_vector(widths).to(x.type()))
                           .reshape({x.size(0), x.size(1), o.h, o.w});
    return unbatched ? out.squeeze(0) : out;
}

GRAFT_INLINE Tensor adaptive_max_pool2d(const Tensor& input, adaptive_size output_size) {
    const char* op = "adaptive_max_pool2d";
    bool unbatched = false;
    const Tensor x = detail::batched4(op, input, unbatched);
    const int_pair o = detail::adaptive_out(op, x, output_size);
    // Columns first, then rows: the first maximal element in row-major order wins ties.
    Tensor out = detail::adaptive_max_along(detail::adaptive_max_along(x, 3, o.w), 2, o.h);
    if (o.h == x.size(2) && o.w == x.size(3)) out = x * 1.0;
    return unbatched ? out.squeeze(0) : out;
}

namespace detail {

/// PyTorch's scale of a resized dimension: 1 / scale_factor when one is used, else in / out.
inline double resize_scale(std::int64_t in, std::int64_t out, std::optional<double> scale) {
    return scale && *scale > 0 ? 1.0 / *scale : static_cast<double>(in) / static_cast<double>(out);
}

/// The source index of each output index of a nearest resize, as PyTorch 1.13's forward kernel
/// for contiguous inputs computes it (in float). Its channels-last kernel and its backward
/// shortcut an unchanged size to the identity and a doubled one to dst / 2 whatever the scale;
/// graft does not, so its gradient is its forward's adjoint (docs/nn.md).
inline std::vector<std::int64_t> nearest_indices(std::int64_t in, std::int64_t out, std::optional<double> scale,
                                                 bool exact) {
    std::vector<std::int64_t> idx(static_cast<std::size_t>(out));
    const float s = scale && *scale > 0 ? static_cast<float>(1.0 / *scale)
                                        : static_cast<float>(in) / static_cast<float>(out);
    for (std::int64_t i = 0; i < out; ++i) {
        std::int64_t v = 0;
        if (exact) v = static_cast<std::int64_t>(std::floor((static_cast<float>(i) + 0.5f) * s));
        else v = static_cast<std::int64_t>(std::floor(static_cast<float>(i) * s));
        idx[static_cast<std::size_t>(i)] = std::min(v, in - 1);
    }
    return idx;
}

/// The two source indices of each output index of a linear resize and their weights (PyTorch's
/// source index rule): out[i] = x[i0[i]] * w0[i] + x[i1[i]] * w1[i], i1 = i0 at the last index.
struct linear_taps {
    std::vector<std::int64_t> i0, i1;
    std::vector<double> w0, w1;
};

inline linear_taps linear_weights(std::int64_t in, std::int64_t out, std::optional<double> scale,
                                  bool align_corners) {
    linear_taps t;
    const double s = align_corners ? (out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0)
                                   : resize_scale(in, out, scale);
    for (std::int64_t i = 0; i < out; ++i) {
        const double src = align_corners ? s * static_cast<double>(i)
                                         : std::max(s * (static_cast<double>(i) + 0.5) - 0.5, 0.0);
        const auto i0 = std::min(static_cast<std::int64_t>(src), in - 1);
        const std::int64_t i1 = i0 + (i0 < in - 1 ? 1 : 0);
        const double l1 = std::clamp(src - static_cast<double>(i0), 0.0, 1.0);
        t.i0.push_back(i0);
        t.i1.push_back(i1);
        t.w0.push_back(1.0 - l1);
        t.w1.push_back(l1);
    }
    return t;
}

}  // namespace detail

GRAFT_INLINE Tensor interpolate(const Tensor& input, size_list size, scale_list scale_factor, std::string_view mode,
                                std::optional<bool> align_corners, std::optional<bool> recompute_scale_factor) {
    const char* op = "interpolate";
    using graft::detail::check;
    detail::check_floating(op, "input", input);
    const bool nearest = mode == "nearest", exact = mode == "nearest-exact", area = mode == "area";
    const bool linear = mode == "linear", bilinear = mode == "bilinear";
    check(nearest || exact || area || linear || bilinear, op, ": mode '", mode,
          "' is not supported (graft offers nearest, nearest-exact, linear, bilinear and area)");
    check(input.dim() == 3 || input.dim() == 4, op,
          ": expected a 3-D [N, C, L] or 4-D [N, C, H, W] input (5-D is not supported), got sizes ", input.sizes());
    check(!(nearest || exact || area) || !align_corners, op,
          ": align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | "
          "trilinear");
    check(!linear || input.dim() == 3, op, ": Got ", input.dim(), "D input, but linear mode needs 3D input");
    check(!bilinear || input.dim() == 4, op, ": Got ", input.dim(), "D input, but bilinear mode needs 4D input");
    const std::int64_t dims = input.dim() - 2;
    const bool has_size = !size.values.empty(), has_scale = !scale_factor.values.empty();
    check(!(has_size && has_scale), op, ": only one of size or scale_factor should be defined");
    check(has_size || has_scale, op, ": either size or scale_factor should be defined");
    check(!(has_size && recompute_scale_factor.value_or(false)), op,
          ": recompute_scale_factor is not meaningful with an explicit size.");
    check(!has_size || size.values.size() == 1 || static_cast<std::int64_t>(size.values.size()) == dims, op,
          ": Input and output must have the same number of spatial dimensions, but got input of sizes ",
          input.sizes(), " and output size ", size.values);
    check(!has_scale || scale_factor.values.size() == 1 ||
              static_cast<std::int64_t>(scale_factor.values.size()) == dims,
          op, ": Input and scale_factor must have the same number of spatial dimensions, but got input of sizes ",
          input.sizes(), " and ", scale_factor.values.size(), " scale factors");
    // Per spatial dimension: the output size and the scale the source indices use.
    std::vector<std::int64_t> out(static_cast<std::size_t>(dims));
    std::vector<std::optional<double>> scales(static_cast<std::size_t>(dims));
    const bool recompute = recompute_scale_factor.value_or(false) || area;
    for (std::int64_t d = 0; d < dims; ++d) {
        const auto i = static_cast<std::size_t>(d);
        const std::int64_t in = input.size(2 + d);
        check(in < detail::size_limit, op, ": input size too large (limit 2^31)");
        if (has_size) {
            out[i] = size.values[size.values.size() == 1 ? 0 : i];
        } else {
            const double f = scale_factor.values[scale_factor.values.size() == 1 ? 0 : i];
            check(std::isfinite(f) && f > 0, op, ": scale_factor must be positive and finite, got ", f);
            const double o = std::floor(static_cast<double>(in) * f);
            check(o < static_cast<double>(detail::size_limit), op, ": output size too large (limit 2^31)");
            out[i] = static_cast<std::int64_t>(o);
            if (!recompute) scales[i] = f;
        }
        check(out[i] < detail::size_limit, op, ": output size too large (limit 2^31)");
    }
    bool positive = input.size(-1) > 0 && input.size(-2) > 0;
    for (const std::int64_t o : out) positive = positive && o > 0;
    check(positive, op, ": Input and output sizes should be greater than 0, but got input sizes ", input.sizes(),
          " and output size ", int_list(out.begin(), out.end()));
    if (area) {
        const Tensor x = dims == 1 ? input.unsqueeze(2) : input;
        const Tensor y = adaptive_avg_pool2d(x, dims == 1 ? adaptive_size{1, out[0]} : adaptive_size{out[0], out[1]});
        return dims == 1 ? y.squeeze(2) : y;
    }
    Tensor y = input;
    // The last dimension first: PyTorch's kernel interpolates along the width inside the height,
    // (x[h0, w0] w0 + x[h0, w1] w1) h0 + (x[h1, w0] w0 + x[h1, w1] w1) h1.
    for (std::int64_t d = dims - 1; d >= 0; --d) {
        const auto i = static_cast<std::size_t>(d);
        const std::int64_t dim = 2 + d, in = input.size(dim);
        if (nearest || exact) {
            const std::vector<std::int64_t> idx = detail::nearest_indices(in, out[i], scales[i], exact);
            bool identity = out[i] == in;
            for (std::int64_t j = 0; identity && j < in; ++j) identity = idx[static_cast<std::size_t>(j)] == j;
            if (!identity) y = y.index_select(dim, from_vector(idx));
        } else {
            // Each output reads its two neighbours only (index_select), as PyTorch's kernel: a
            // matrix product with the other weights 0 would spread an infinite input as
            // 0 * inf = NaN over the whole row or column.
            const detail::linear_taps t = detail::linear_weights(in, out[i], scales[i], align_corners.value_or(false));
            int_list wsizes(static_cast<std::size_t>(input.dim() - dim), 1);
            wsizes[0] = out[i];
            const auto weight = [&](const std::vector<double>& v) { return from_vector(v, wsizes).to(input.type()); };
            y = y.index_select(dim, from_vector(t.i0)) * weight(t.w0) + y.index_select(dim, from_vector(t.i1)) * weight(t.w1);
        }
    }
    return y.is_same(input) ? input * 1.0 : y;
}

// ---------------------------------------------------------------- normalization, embedding, dropout

GRAFT_INLINE Tensor layer_norm(const Tensor& input, const int_list& normalized_shape, const Tensor& weight,
                               const Tensor& bias, double eps) {
    const char* op = "layer_norm";
    detail::check_floating(op, "input", input);
    const auto k = static_cast<std::int64_t>(normalized_shape.size());
    graft::detail::check(
        k >= 1, op, ": Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element");
    bool ok = input.dim() >= k;
    for (std::int64_t i = 1; ok && i <= k; ++i)
        ok = input.size(-i) == normalized_shape[static_cast<std::size_t>(k - i)];
    graft::detail::check(ok, op, ": Given normalized_shape=", normalized_shape, ", expected input with shape [*, ",
                         normalized_shape, "], but got input of size", input.sizes());
    for (const auto* t : {&weight, &bias}) {
        if (!t->defined()) continue;
        const char* what = t == &weight ? "weight" : "bias";
        detail::check_floating(op, what, *t);
        graft::detail::check(t->sizes() == normalized_shape, op, ": Expected ", what,
                             " to be of same shape as normalized_shape, but got ", what, " of shape ", t->sizes(),
                             " and normalized_shape = ", normalized_shape);
    }
    graft::detail::check(eps >= 0.0, op, ": eps must be non-negative, got ", eps);
    int_list dims;
    for (std::int64_t i = input.dim() - k; i < input.dim(); ++i) dims.push_back(i);
    const Tensor centered = input - mean(input, dims, true);
    const Tensor var = mean(centered * centered, dims, true);  // biased, as PyTorch
    Tensor out = centered * rsqrt(var + eps);
    if (weight.defined()) out = out * weight;
    if (bias.defined()) out = out + bias;
    return out;
}

namespace detail {

/// A per-channel vector [C] shaped to broadcast over an input of `rank` dimensions: [1, C, 1, ...].
inline Tensor channel_view(const Tensor& t, std::int64_t rank) {
    int_list sizes(static_cast<std::size_t>(rank), 1);
    sizes[1] = t.size(0);
    return t.reshape(sizes);
}

inline void check_channel_vector(const char* op, const char* what, const Tensor& t, std::int64_t channels,
                                 dtype input_type) {
    if (!t.defined()) return;
    check_floating(op, what, t);
    check(t.dim() == 1 && t.size(0) == channels, op, ": ", what, " should contain ", channels, " elements not ",
          t.numel(), " (sizes ", t.sizes(), ")");
    check(t.type() == input_type, op, ": expected ", what, " of the input's dtype ", input_type, ", got ", t.type());
}

/// How the running statistics move: (1 - f) * running + f * batch with f = `momentum`, or the
/// 0-dim tensor `factor` when it is defined.
struct running_factor {
    double momentum = 0.1;
    Tensor factor;
};

/// batch_norm (per_instance = false) and instance_norm (true): the statistics are taken over
/// dims {0, 2, ...} or {2, ...}; see their declarations.
inline Tensor normalize_per_channel(const char* op, const Tensor& input, const Tensor& running_mean,
                                    const Tensor& running_var, const Tensor& weight, const Tensor& bias,
                                    bool batch_stats, const running_factor& factor, double eps, bool per_instance) {
    check_floating(op, "input", input);
    check(input.dim() >= 2, op, ": expected an input [N, C, *] of at least 2 dimensions, got sizes ", input.sizes());
    const std::int64_t rank = input.dim();
    const std::int64_t channels = input.size(1);
    for (const auto& [t, what] : {std::pair{&running_mean, "running_mean"}, std::pair{&running_var, "running_var"},
                                   std::pair{&weight, "weight"}, std::pair{&bias, "bias"}})
        check_channel_vector(op, what, *t, channels, input.type());
    check(running_mean.defined() == running_var.defined(), op,
          ": running_mean and running_var must be both defined or both undefined");
    check(batch_stats || running_mean.defined(), op,
          ": running_mean and running_var are required when the input's statistics are not used (eval mode)");
    check(eps >= 0.0 && !std::isnan(eps), op, ": eps must be non-negative, got ", eps);
    if (factor.factor.defined())
        check(factor.factor.dim() == 0 && is_floating_point(factor.factor.type()), op,
              ": the running-statistics factor must be a 0-dim floating tensor");
    const auto affine = [&](Tensor out) {
        if (weight.defined()) out = out * channel_view(weight, rank);
        if (bias.defined()) out = out + channel_view(bias, rank);
        return out;
    };
    if (input.numel() == 0) return affine(input.clone());  // nothing to normalize; statistics untouched (PyTorch)
    if (!batch_stats) {
        Tensor scale = rsqrt(channel_view(running_var, rank) + eps);
        if (weight.defined()) scale = scale * channel_view(weight, rank);
        Tensor out = (input - channel_view(running_mean, rank)) * scale;
        return bias.defined() ? out + channel_view(bias, rank) : out;
    }
    int_list dims;
    if (!per_instance) dims.push_back(0);
    std::int64_t count = per_instance ? 1 : input.size(0);
    for (std::int64_t d = 2; d < rank; ++d) {
        dims.push_back(d);
        count *= input.size(d);
    }
    check(count > 1, op,
          per_instance ? ": Expected more than 1 spatial element when training, got input size "
                       : ": Expected more than 1 value per channel when training, got input size ",
          input.sizes());
    const Tensor mu = mean(input, dims, true);
    const Tensor centered = input - mu;
    const Tensor var = mean(centered * centered, dims, true);  // biased, as PyTorch normalizes
    Tensor scale = rsqrt(var + eps);
    if (weight.defined()) scale = scale * channel_view(weight, rank);
    Tensor out = centered * scale;
    if (bias.defined()) out = out + channel_view(bias, rank);
    if (running_mean.defined()) {
        const autograd::no_grad guard;
        // The unbiased variance, n / (n - 1) of the biased one, taken by var() so that n is
        // the graph's (a captured module serves other batch sizes).
        Tensor batch_mean = mu.detach();
        Tensor batch_var = graft::var(input.detach(), dims, 1.0, true);
        if (per_instance) {  // the mean over the batch of the slices' statistics
            const sym_int_list nc{input.sym_size(0), SymInt(channels)};
            batch_mean = mean(batch_mean.reshape_symint(nc), {0});
            batch_var = mean(batch_var.reshape_symint(nc), {0});
        } else {
            batch_mean = batch_mean.reshape({channels});
            batch_var = batch_var.reshape({channels});
        }
        const auto update = [&](Tensor running, const Tensor& batch) {
            const Tensor b = batch.to(running.type());
            if (factor.factor.defined()) {
                const Tensor f = factor.factor.to(running.type());
                running.copy_(running * (1.0 - f) + b * f);
            } else {
                running.copy_(running * (1.0 - factor.momentum) + b * factor.momentum);
            }
        };
        update(running_mean, batch_mean);
        update(running_var, batch_var);
    }
    return out;
}

}  // namespace detail

GRAFT_INLINE Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                               const Tensor& weight, const Tensor& bias, bool training, double momentum, double eps) {
    return detail::normalize_per_channel("batch_norm", input, running_mean, running_var, weight, bias, training,
                                         {momentum, {}}, eps, false);
}

GRAFT_INLINE Tensor instance_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                                  const Tensor& weight, const Tensor& bias, bool use_input_stats, double momentum,
                                  double eps) {
    return detail::normalize_per_channel("instance_norm", input, running_mean, running_var, weight, bias,
                                         use_input_stats, {momentum, {}}, eps, true);
}

GRAFT_INLINE Tensor detail::batch_norm_with_factor(const Tensor& input, const Tensor& running_mean,
                                                   const Tensor& running_var, const Tensor& weight, const Tensor& bias,
                                                   bool training, const Tensor& factor, double eps, bool per_instance) {
    detail::check_defined(per_instance ? "instance_norm" : "batch_norm", "factor", factor);
    return detail::normalize_per_channel(per_instance ? "instance_norm" : "batch_norm", input, running_mean,
                                         running_var, weight, bias, training, {0.0, factor}, eps, per_instance);
}

GRAFT_INLINE Tensor group_norm(const Tensor& input, std::int64_t num_groups, const Tensor& weight, const Tensor& bias,
                               double eps) {
    const char* op = "group_norm";
    detail::check_floating(op, "input", input);
    graft::detail::check(input.dim() >= 2, op, ": expected an input [N, C, *] of at least 2 dimensions, got sizes ",
                         input.sizes());
    const std::int64_t channels = input.size(1);
    graft::detail::check(num_groups > 0, op, ": num_groups must be positive, got ", num_groups);
    graft::detail::check(channels % num_groups == 0, op,
                         ": Expected number of channels in input to be divisible by num_groups, but got input of shape ",
                         input.sizes(), " and num_groups=", num_groups);
    detail::check_channel_vector(op, "weight", weight, channels, input.type());
    detail::check_channel_vector(op, "bias", bias, channels, input.type());
    graft::detail::check(eps >= 0.0 && !std::isnan(eps), op, ": eps must be non-negative, got ", eps);
    const std::int64_t rank = input.dim();
    Tensor out;
    if (input.numel() == 0) {
        out = input.clone();
    } else {
        SymInt per_group(channels / num_groups);
        for (std::int64_t d = 2; d < rank; ++d) per_group = per_group * input.sym_size(d);
        const Tensor x = input.reshape_symint({input.sym_size(0), SymInt(num_groups), per_group});
        const Tensor centered = x - mean(x, {2}, true);
        const Tensor var = mean(centered * centered, {2}, true);  // biased
        out = (centered * rsqrt(var + eps)).reshape_symint(input.sym_sizes());
    }
    if (weight.defined()) out = out * detail::channel_view(weight, rank);
    if (bias.defined()) out = out + detail::channel_view(bias, rank);
    return out;
}

GRAFT_INLINE Tensor embedding(const Tensor& input, const Tensor& weight, std::optional<std::int64_t> padding_idx) {
    const char* op = "embedding";
    detail::check_floating(op, "weight", weight);
    graft::detail::check(weight.dim() == 2, op, ": 'weight' must be 2-D, got sizes ", weight.sizes());
    detail::check_defined(op, "input", input);
    graft::detail::check(input.type() == dtype::int64 || input.type() == dtype::int32, op,
                         ": Expected tensor for argument 'indices' to have one of the following scalar types: Long, "
                         "Int; but got ", input.type());
    const std::int64_t num = weight.size(0);
    if (padding_idx) {
        graft::detail::check(*padding_idx >= -num && *padding_idx < num, op,
                             ": Padding_idx must be within num_embeddings (", num, "), got ", *padding_idx);
        if (*padding_idx < 0) *padding_idx += num;
    }
    std::vector<std::int64_t> values;
    {
        graft::detail::observer_paused paused;  // validation only: not part of a captured graph
        values = input.to_vector<std::int64_t>();
    }
    for (const std::int64_t v : values)
        graft::detail::check(v >= 0 && v < num, op, ": index ", v, " is out of range for num_embeddings ", num);
    int_list sizes = input.sizes();
    sizes.push_back(weight.size(1));
    Tensor out = index_select(weight, 0, input.reshape({-1})).reshape(sizes);
    if (padding_idx) out = where(input.ne(*padding_idx).unsqueeze(-1), out, out.detach());  // no gradient to that row
    return out;
}

GRAFT_INLINE Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                                 const Tensor& attn_mask, double dropout_p, bool is_causal,
                                                 std::optional<double> scale, generator& gen) {
    const char* op = "scaled_dot_product_attention";
    detail::check_floating(op, "query", query);
    detail::check_floating(op, "key", key);
    detail::check_floating(op, "value", value);
    graft::detail::check(query.type() == key.type() && key.type() == value.type(), op,
                         ": Expected query, key, and value to have the same dtype, but got query.dtype: ",
                         query.type(), ", key.dtype: ", key.type(), " and value.dtype: ", value.type());
    graft::detail::check(query.dim() >= 2 && key.dim() >= 2 && value.dim() >= 2, op,
                         ": query, key and value must have at least 2 dimensions, got sizes ", query.sizes(), ", ",
                         key.sizes(), ", ", value.sizes());
    graft::detail::check(query.size(-1) == key.size(-1), op, ": query's last size ", query.size(-1),
                         " differs from key's ", key.size(-1));
    graft::detail::check(key.size(-2) == value.size(-2), op, ": key has ", key.size(-2), " positions and value ",
                         value.size(-2));
    graft::detail::check(dropout_p >= 0.0 && dropout_p < 1.0, op, ": dropout_p must be in [0, 1), got ", dropout_p);
    graft::detail::check(!(is_causal && attn_mask.defined()), op,
                         ": Explicit attn_mask should not be set when is_causal=True");
    graft::detail::check(!scale || std::isfinite(*scale), op, ": scale must be finite");
    const std::int64_t L = query.size(-2), S = key.size(-2);
    if (attn_mask.defined()) {
        graft::detail::check(attn_mask.type() == dtype::bool_ || attn_mask.type() == query.type(), op,
                             ": attn_mask must be bool or of the query's dtype ", query.type(), ", got ",
                             attn_mask.type());
        bool ok = attn_mask.dim() >= 1;
        for (std::int64_t i = 1; ok && i <= attn_mask.dim(); ++i) {
            const std::int64_t want = i == 1 ? S : i == 2 ? L : 0;
            ok = attn_mask.size(-i) == 1 || i > 2 || attn_mask.size(-i) == want;
        }
        graft::detail::check(ok, op, ": attn_mask of sizes ", attn_mask.sizes(),
                             " does not broadcast to the scores' [..., ", L, ", ", S, "]");
    }
    const double s = scale.value_or(1.0 / std::sqrt(static_cast<double>(query.size(-1))));
    Tensor scores = matmul(query, key.transpose(-2, -1)) * s;
    if (is_causal) {
        scores = where(tril(ones({L, S}, dtype::bool_)), scores, -std::numeric_limits<double>::infinity());
    } else if (attn_mask.defined()) {
        scores = attn_mask.type() == dtype::bool_
                     ? where(attn_mask, scores, -std::numeric_limits<double>::infinity())
                     : scores + attn_mask;
    }
    Tensor weights = graft::softmax(scores, -1);
    if (dropout_p > 0.0) weights = dropout(weights, dropout_p, true, false, gen);
    return matmul(weights, value);
}

GRAFT_INLINE Tensor dropout(const Tensor& input, double p, bool training, bool inplace, generator& gen) {
    const char* op = "dropout";
    detail::check_floating(op, "input", input);
    graft::detail::check(p >= 0.0 && p <= 1.0, op, ": dropout probability has to be between 0 and 1, but got ", p);
    if (!training || p == 0.0) return input;
    Tensor scale;
    if (p == 1.0) {
        scale = zeros(input.sizes(), input.type());
    } else {
        scale = rand_like(input, gen).lt(1.0 - p).to(input.type()) * (1.0 / (1.0 - p));
    }
    if (inplace) {
        Tensor self = input;
        self.mul_(scale);
        return self;
    }
    return input * scale;
}

GRAFT_INLINE Tensor dropout2d(const Tensor& input, double p, bool training, bool inplace, generator& gen) {
    const char* op = "dropout2d";
    detail::check_floating(op, "input", input);
    graft::detail::check(input.dim() == 3 || input.dim() == 4, op,
                         ": expected a 3-D [N, C, L] or 4-D [N, C, H, W] input, got sizes ", input.sizes(),
                         " (PyTorch 1.13 deprecates other ranks; use dropout)");
    graft::detail::check(p >= 0.0 && p <= 1.0, op, ": dropout probability has to be between 0 and 1, but got ", p);
    if (!training || p == 0.0) return input;
    // The mask's sizes follow the input's (a view [N, C, 1(, 1)]), so a captured graph draws per call.
    Tensor like = input;
    for (std::int64_t d = 2; d < input.dim(); ++d) like = like.narrow(d, 0, std::min<std::int64_t>(1, input.size(d)));
    const Tensor scale = p == 1.0 ? zeros_like(like) : rand_like(like, gen).lt(1.0 - p).to(input.type()) * (1.0 / (1.0 - p));
    if (inplace) {
        Tensor self = input;
        self.mul_(scale);
        return self;
    }
    return input * scale;
}

}  // namespace graft::nn::functional
