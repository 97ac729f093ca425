#pragma once
// Definitions for graft/optim/lbfgs.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/optim/lbfgs.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "graft/autograd/grad_mode.hpp"
#include "graft/autograd/tensor_methods.hpp"
#include "graft/core/error.hpp"
#include "graft/core/factories.hpp"

namespace graft::optim {
namespace detail {

using lbfgs_vec = std::vector<double>;

[[nodiscard]] inline double dot(const lbfgs_vec& a, const lbfgs_vec& b) {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

/// max |a_i * scale| as torch's abs().max(): NaN if any element is NaN; 0 for an empty vector
/// (PyTorch fails on it: LBFGS always has elements here).
[[nodiscard]] inline double max_abs(const lbfgs_vec& a, double scale = 1) {
    double m = 0;
    for (double v : a) {
        const double x = std::fabs(v * scale);
        if (std::isnan(x)) return x;
        m = std::max(m, x);
    }
    return m;
}

/// Python's max(a, b) and min(a, b): the first argument unless the second compares greater
/// (smaller), so a NaN first argument is kept.
[[nodiscard]] inline double py_max(double a, double b) { return b > a ? b : a; }
[[nodiscard]] inline double py_min(double a, double b) { return b < a ? b : a; }

/// The minimizer of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2, clamped to
/// [lo, hi] (by default the interval between x1 and x2); the middle when the cubic has none.
[[nodiscard]] inline double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2,
                                              const std::array<double, 2>* bounds = nullptr) {
    double lo = 0, hi = 0;
    if (bounds != nullptr) {
        lo = (*bounds)[0], hi = (*bounds)[1];
    } else if (x1 <= x2) {
        lo = x1, hi = x2;
    } else {
        lo = x2, hi = x1;
    }
    const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
    const double d2_square = d1 * d1 - g1 * g2;
    if (d2_square >= 0) {
        const double d2 = std::sqrt(d2_square);
        const double min_pos = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                                        : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
        return py_min(py_max(min_pos, lo), hi);
    }
    return (lo + hi) / 2;
}

struct wolfe_result {
    double f;
    lbfgs_vec g;
    double t;
    std::int64_t evals;
};

/// The strong-Wolfe line search of minFunc as PyTorch's LBFGS runs it: from step t along d,
/// bracket a step satisfying the Wolfe conditions (sufficient decrease c1, curvature c2), then
/// zoom into the bracket with safeguarded cubic interpolation; at most max_ls evaluations
/// beyond the first. `obj(t)` returns the loss and the flat gradient at x + t d.
template <class Obj>
wolfe_result strong_wolfe(Obj&& obj, double t, const lbfgs_vec& d, double f, const lbfgs_vec& g, double gtd,
                          double tolerance_change, double c1 = 1e-4, double c2 = 0.9, int max_ls = 25) {
    const double d_norm = max_abs(d);
    double f_new = 0;
    lbfgs_vec g_new;
    std::tie(f_new, g_new) = obj(t);
    std::int64_t evals = 1;
    double gtd_new = dot(g_new, d);

    double t_prev = 0, f_prev = f, gtd_prev = gtd;
    lbfgs_vec g_prev = g;
    bool done = false;
    int ls_iter = 0;
    // The bracket: one point (done) or two.
    std::array<double, 2> bracket{}, bracket_f{}, bracket_gtd{};
    std::array<lbfgs_vec, 2> bracket_g;
    bool single = false;
    auto bracket_two = [&] {
        bracket = {t_prev, t};
        bracket_f = {f_prev, f_new};
        bracket_g = {g_prev, g_new};
        bracket_gtd = {gtd_prev, gtd_new};
    };
    while (ls_iter < max_ls) {
        if (f_new > f + c1 * t * gtd || (ls_iter > 1 && f_new >= f_prev)) {
            bracket_two();
            break;
        }
        if (std::fabs(gtd_new) <= -c2 * gtd) {
            bracket[0] = t;
            bracket_f[0] = f_new;
            bracket_g[0] = g_new;
            single = true;
            done = true;
            break;
        }
        if (gtd_new >= 0) {
            bracket_two();
            break;
        }
        // Extrapolate: a cubic step within [t + 0.01 (t - t_prev), 10 t].
        const std::array<double, 2> bounds{t + 0.01 * (t - t_prev), t * 10};
        const double tmp = t;
        t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, &bounds);
        t_prev = tmp;
        f_prev = f_new;
        g_prev = g_new;
        gtd_prev = gtd_new;
        std::tie(f_new, g_new) = obj(t);
        ++evals;
        gtd_new = dot(g_new, d);
        ++ls_iter;
    }
    if (ls_iter == max_ls) {  // no bracket found within max_ls evaluations
        bracket = {0, t};
        bracket_f = {f, f_new};
        bracket_g = {g, g_new};
        bracket_gtd = {gtd, gtd_new};
    }

    // Zoom: shrink the bracket until a point satisfies the conditions.
    bool insuf_progress = false;
    int low = 0, high = 1;
    if (!single && !(bracket_f[0] <= bracket_f[1])) low = 1, high = 0;
    while (!done && ls_iter < max_ls) {
        if (std::fabs(bracket[1] - bracket[0]) * d_norm < tolerance_change) break;
        t = cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1]);
        // A trial too close to an end of the bracket (twice in a row, or outside it) is moved
        // to 0.1 of the bracket's length from the nearer end.
        const double b_max = py_max(bracket[0], bracket[1]), b_min = py_min(bracket[0], bracket[1]);
        const double eps = 0.1 * (b_max - b_min);
        if (py_min(b_max - t, t - b_min) < eps) {
            if (insuf_progress || t >= b_max || t <= b_min) {
                t = std::fabs(t - b_max) < std::fabs(t - b_min) ? b_max - eps : b_min + eps;
                insuf_progress = false;
            } else {
                insuf_progress = true;
            }
        } else {
            insuf_progress = false;
        }
        std::tie(f_new, g_new) = obj(t);
        ++evals;
        gtd_new = dot(g_new, d);
        ++ls_iter;
        if (f_new > f + c1 * t * gtd || f_new >= bracket_f[low]) {
            // Not sufficiently lower, or not below the low end: the new high end.
            bracket[high] = t;
            bracket_f[high] = f_new;
            bracket_g[high] = g_new;
            bracket_gtd[high] = gtd_new;
            if (bracket_f[0] <= bracket_f[1])
                low = 0, high = 1;
            else
                low = 1, high = 0;
        } else {
            if (std::fabs(gtd_new) <= -c2 * gtd) {
                done = true;
            } else if (gtd_new * (bracket[high] - bracket[low]) >= 0) {
                bracket[high] = bracket[low];  // the old low end becomes the high end
                bracket_f[high] = bracket_f[low];
                bracket_g[high] = bracket_g[low];
                bracket_gtd[high] = bracket_gtd[low];
            }
            bracket[low] = t;
            bracket_f[low] = f_new;
            bracket_g[low] = g_new;
            bracket_gtd[low] = gtd_new;
        }
    }
    const auto l = static_cast<std::size_t>(low);
    return {bracket_f[l], std::move(bracket_g[l]), bracket[l], evals};
}

/// PyTorch's max_iter * 5 // 4, without overflow (a max_iter out of range fails check_options).
[[nodiscard]] inline std::int64_t default_max_eval(std::int64_t max_iter) {
    return max_iter > 0 && max_iter <= (std::int64_t{1} << 53) ? max_iter + max_iter / 4 : max_iter;
}

/// An integer option (a count): a whole number in [min, 2^53].
inline void check_count_option(const options_map& o, std::string_view key, double min) {
    const double v = option(o, key);
    graft::detail::check(v >= min && v <= 9007199254740992.0 && v == std::floor(v), "LBFGS: ", key,
                         " must be an integer >= ", min, ", got ", v);
}

}  // namespace detail

GRAFT_INLINE LBFGS::LBFGS(std::vector<Tensor> params, double lr, std::int64_t max_iter,
                          std::optional<std::int64_t> max_eval, double tolerance_grad, double tolerance_change,
                          std::int64_t history_size, std::string_view line_search_fn)
    : Optimizer("LBFGS",
                {{"lr", lr},
                 {"max_iter", static_cast<double>(max_iter)},
                 {"max_eval", static_cast<double>(max_eval ? *max_eval : detail::default_max_eval(max_iter))},
                 {"tolerance_grad", tolerance_grad},
                 {"tolerance_change", tolerance_change},
                 {"history_size", static_cast<double>(history_size)},
                 {"line_search_fn", line_search_fn.empty() ? 0.0 : 1.0}},
                /*single_group=*/true) {
    graft::detail::check(line_search_fn.empty() || line_search_fn == "strong_wolfe",
                         "LBFGS: only 'strong_wolfe' is supported as line_search_fn (or none), got '",
                         line_search_fn, "'");
    check_options(defaults());
    init_groups(std::vector<ParamGroup>{ParamGroup{std::move(params)}});
}

GRAFT_INLINE void LBFGS::check_options(const options_map& o) const {
    using graft::detail::check;
    using detail::option;
    check(option(o, "lr") >= 0, "LBFGS: Invalid learning rate: ", option(o, "lr"));
    detail::check_count_option(o, "max_iter", 1);
    detail::check_count_option(o, "max_eval", 1);
    detail::check_count_option(o, "history_size", 1);
    check(!std::isnan(option(o, "tolerance_grad")), "LBFGS: tolerance_grad is NaN");
    check(!std::isnan(option(o, "tolerance_change")), "LBFGS: tolerance_change is NaN");
    detail::check_flag_option("LBFGS", o, "line_search_fn");
}

GRAFT_INLINE void LBFGS::update(const options_map&, Tensor&, const Tensor&, ParamState&) {
    graft::detail::fail("LBFGS: internal error: the per-parameter update is not used");
}

GRAFT_INLINE void LBFGS::step() {
    graft::detail::fail(
        "LBFGS: step() needs a closure that re-evaluates the loss (zero_grad, forward, backward, return the "
        "loss): LBFGS evaluates it several times per step; call step(closure)");
}

GRAFT_INLINE std::int64_t LBFGS::numel() const {
    std::int64_t n = 0;
    for (const Tensor& p : param_groups()[0].params) n += p.numel();
    return n;
}

GRAFT_INLINE LBFGS::vec LBFGS::gather_flat_grad() const {
    const auto& params = param_groups()[0].params;
    vec flat;
    flat.reserve(static_cast<std::size_t>(numel()));
    for (std::size_t i = 0; i < params.size(); ++i) {
        const Tensor& p = params[i];
        const Tensor g = p.grad();
        if (!g.defined()) {  // no gradient: zeros, as PyTorch
            flat.insert(flat.end(), static_cast<std::size_t>(p.numel()), 0.0);
            continue;
        }
        graft::detail::check(g.sizes() == p.sizes(), "LBFGS: step: the gradient of parameter ", i, " has shape ",
                             g.sizes(), " but the parameter has shape ", p.sizes());
        graft::detail::check(is_floating_point(g.type()), "LBFGS: step: the gradient of parameter ", i,
                             " has dtype ", g.type());
        const vec v = g.to_vector<double>();
        flat.insert(flat.end(), v.begin(), v.end());
    }
    return flat;
}

GRAFT_INLINE void LBFGS::add_grad(double t, const vec& d) {
    std::size_t offset = 0;
    for (Tensor& p : param_groups()[0].params) {
        const auto n = static_cast<std::size_t>(p.numel());
        Tensor c = p.is_contiguous() ? p : p.contiguous();
        auto apply = [&]<class T>(T* x) {
            for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<T>(x[i] + t * d[offset + i]);
        };
        if (c.type() == dtype::float32)
            apply(c.data_ptr<float>());
        else
            apply(c.data_ptr<double>());
        if (c.is_same(p))
            p.bump_version();
        else
            p.copy_(c);
        offset += n;
    }
}

GRAFT_INLINE std::vector<Tensor> LBFGS::clone_params() const {
    std::vector<Tensor> r;
    for (const Tensor& p : param_groups()[0].params) r.push_back(p.detach().clone());
    return r;
}

GRAFT_INLINE void LBFGS::set_params(const std::vector<Tensor>& values) {
    auto& params = param_groups()[0].params;
    for (std::size_t i = 0; i < params.size(); ++i) params[i].copy_(values[i]);
}

GRAFT_INLINE Tensor LBFGS::step(const std::function<Tensor()>& closure) {
    graft::detail::check(static_cast<bool>(closure), "LBFGS: step: the closure is empty");
    check_options(param_groups()[0].options);  // options may have been changed through param_groups()
    autograd::no_grad guard;
    // A failure inside (the closure throws, or returns no loss) restores the parameters and
    // leaves the committed state as it was.
    const std::vector<Tensor> start = clone_params();
    history work = lbfgs_state_;
    try {
        Tensor loss = run(closure, work);
        lbfgs_state_ = std::move(work);
        return loss;
    } catch (...) {
        set_params(start);
        throw;
    }
}

GRAFT_INLINE Tensor LBFGS::run(const std::function<Tensor()>& closure, history& st) {
    using detail::dot;
    using detail::max_abs;
    const options_map& o = param_groups()[0].options;
    const double lr = detail::option(o, "lr");
    const auto max_iter = static_cast<std::int64_t>(detail::option(o, "max_iter"));
    const auto max_eval = static_cast<std::int64_t>(detail::option(o, "max_eval"));
    const double tolerance_grad = detail::option(o, "tolerance_grad");
    const double tolerance_change = detail::option(o, "tolerance_change");
    const auto history_size = static_cast<std::size_t>(detail::option(o, "history_size"));
    const bool wolfe = detail::option(o, "line_search_fn") != 0;

    Tensor orig_loss;
    auto evaluate = [&]() -> double {
        Tensor l;
        {
            autograd::enable_grad g;
            l = closure();
        }
        if (!l.defined() || l.numel() != 1)
            graft::detail::fail(graft::detail::concat(
                "LBFGS: the closure must return the loss as a one-element tensor, got ",
                l.defined() ? graft::detail::concat("a tensor of shape ", l.sizes()) : "an undefined tensor"));
        if (!orig_loss.defined()) orig_loss = l;
        return l.item<double>();
    };

    st.started = true;
    double loss = evaluate();
    std::int64_t current_evals = 1;
    st.func_evals += 1;
    vec flat_grad = gather_flat_grad();
    bool opt_cond = max_abs(flat_grad) <= tolerance_grad;
    if (opt_cond) return orig_loss;  // already optimal

    vec d = st.d, prev_flat_grad = st.prev_flat_grad;
    double t = st.t, H_diag = st.H_diag, prev_loss = st.prev_loss;
    auto& old_dirs = st.old_dirs;
    auto& old_stps = st.old_stps;
    auto& ro = st.ro;

    std::int64_t n_iter = 0;
    while (n_iter < max_iter) {
        ++n_iter;
        ++st.n_iter;
        // The direction: steepest descent on the very first iteration, else L-BFGS.
        if (st.n_iter == 1) {
            d.resize(flat_grad.size());
            for (std::size_t i = 0; i < d.size(); ++i) d[i] = -flat_grad[i];
            old_dirs.clear();
            old_stps.clear();
            ro.clear();
            H_diag = 1;
        } else {
            auto y = std::make_shared<vec>(flat_grad.size());
            auto s = std::make_shared<vec>(flat_grad.size());
            for (std::size_t i = 0; i < d.size(); ++i) {
                (*y)[i] = flat_grad[i] - prev_flat_grad[i];
                (*s)[i] = d[i] * t;
            }
            const double ys = dot(*y, *s);
            if (ys > 1e-10) {  // curvature condition: keep the pair
                while (old_dirs.size() >= history_size) {
                    old_dirs.erase(old_dirs.begin());
                    old_stps.erase(old_stps.begin());
                    ro.erase(ro.begin());
                }
                old_dirs.push_back(y);
                old_stps.push_back(s);
                ro.push_back(1. / ys);
                H_diag = ys / dot(*y, *y);  // scale of the initial inverse Hessian
            }
            // Two-loop recursion: d = -H g.
            const std::size_t num_old = old_dirs.size();
            vec al(num_old);
            vec q(flat_grad.size());
            for (std::size_t i = 0; i < q.size(); ++i) q[i] = -flat_grad[i];
            for (std::size_t k = num_old; k-- > 0;) {
                al[k] = dot(*old_stps[k], q) * ro[k];
                const vec& dir = *old_dirs[k];
                for (std::size_t i = 0; i < q.size(); ++i) q[i] += -al[k] * dir[i];
            }
            d.resize(q.size());
            for (std::size_t i = 0; i < q.size(); ++i) d[i] = q[i] * H_diag;
            for (std::size_t k = 0; k < num_old; ++k) {
                const double be_i = dot(*old_dirs[k], d) * ro[k];
                const vec& stp = *old_stps[k];
                for (std::size_t i = 0; i < d.size(); ++i) d[i] += (al[k] - be_i) * stp[i];
            }
        }
        prev_flat_grad = flat_grad;
        prev_loss = loss;

        // The step length: lr, scaled down on the very first iteration for a large gradient.
        if (st.n_iter == 1) {
            double sum = 0;
            for (double g : flat_grad) sum += std::fabs(g);
            t = detail::py_min(1., 1. / sum) * lr;
        } else {
            t = lr;
        }
        const double gtd = dot(flat_grad, d);  // directional derivative
        if (gtd > -tolerance_change) break;    // not a descent direction (any more)

        std::int64_t ls_func_evals = 0;
        if (wolfe) {
            const std::vector<Tensor> x_init = clone_params();
            auto obj = [&](double step) -> std::pair<double, vec> {
                add_grad(step, d);
                const double f = evaluate();
                vec g = gather_flat_grad();
                set_params(x_init);
                return {f, std::move(g)};
            };
            detail::wolfe_result r = detail::strong_wolfe(obj, t, d, loss, flat_grad, gtd, tolerance_change);
            loss = r.f;
            flat_grad = std::move(r.g);
            t = r.t;
            ls_func_evals = r.evals;
            add_grad(t, d);
            opt_cond = max_abs(flat_grad) <= tolerance_grad;
        } else {
            add_grad(t, d);
            if (n_iter != max_iter) {  // no re-evaluation after the last iteration, as PyTorch
                loss = evaluate();
                flat_grad = gather_flat_grad();
                opt_cond = max_abs(flat_grad) <= tolerance_grad;
                ls_func_evals = 1;
            }
        }
        current_evals += ls_func_evals;
        st.func_evals += ls_func_evals;

        if (n_iter == max_iter) break;
        if (current_evals >= max_eval) break;
        if (opt_cond) break;
        if (max_abs(d, t) <= tolerance_change) break;  // lack of progress
        if (std::fabs(loss - prev_loss) < tolerance_change) break;
    }
    st.d = std::move(d);
    st.t = t;
    st.H_diag = H_diag;
    st.prev_flat_grad = std::move(prev_flat_grad);
    st.prev_loss = prev_loss;
    st.has_direction = true;
    return orig_loss;
}

GRAFT_INLINE OptimizerStateDict LBFGS::state_dict() const {
    OptimizerStateDict sd;
    const ParamGroup& group = param_groups()[0];
    OptimizerStateDict::Group g;
    g.options = group.options;
    for (std::size_t i = 0; i < group.params.size(); ++i) g.params.push_back(static_cast<std::int64_t>(i));
    sd.param_groups.push_back(std::move(g));
    const history& st = lbfgs_state_;
    if (!st.started) return sd;
    auto& e = sd.state[0];
    e["func_evals"] = full({}, st.func_evals, dtype::int64);
    e["n_iter"] = full({}, st.n_iter, dtype::int64);
    if (!st.has_direction) return sd;
    const auto n = static_cast<std::int64_t>(st.d.size());
    const auto k = static_cast<std::int64_t>(st.old_dirs.size());
    auto stack = [&](const std::vector<std::shared_ptr<const vec>>& rows) {
        vec all;
        all.reserve(static_cast<std::size_t>(k * n));
        for (const auto& r : rows) all.insert(all.end(), r->begin(), r->end());
        return from_vector(all, {k, n});
    };
    e["d"] = from_vector(st.d, {n});
    e["t"] = full({}, st.t, dtype::float64);
    e["old_dirs"] = stack(st.old_dirs);
    e["old_stps"] = stack(st.old_stps);
    e["ro"] = from_vector(st.ro, {k});
    e["H_diag"] = full({}, st.H_diag, dtype::float64);
    e["prev_flat_grad"] = from_vector(st.prev_flat_grad, {n});
    e["prev_loss"] = full({}, st.prev_loss, dtype::float64);
    return sd;
}

GRAFT_INLINE void LBFGS::load_state_dict(const OptimizerStateDict& sd) {
    using graft::detail::check;
    const std::string op = "LBFGS: load_state_dict";
    const ParamGroup& group = param_groups()[0];
    check(sd.param_groups.size() == 1, op, ": loaded state dict has ", sd.param_groups.size(),
          " parameter groups; LBFGS has exactly one");
    const auto& saved = sd.param_groups[0];
    check(saved.params.size() == group.params.size(), op, ": loaded state dict contains a parameter group of ",
          saved.params.size(), " parameters that doesn't match the size of optimizer's group (", group.params.size(),
          ")");
    for (const auto& [key, value] : saved.options)
        check(defaults().count(key) != 0 || detail::is_scheduler_option(key), op, ": unknown option '", key, "'");
    for (const auto& [key, value] : defaults())
        check(saved.options.count(key) != 0, op, ": the parameter group lacks the option '", key, "'");
    check_options(saved.options);

    history st;
    check(sd.state.size() <= 1, op, ": LBFGS keeps one state entry (its first parameter's), got ", sd.state.size());
    if (!sd.state.empty()) {
        const auto& [index, entry] = *sd.state.begin();
        check(!saved.params.empty() && index == saved.params[0], op, ": the state is under parameter index ", index,
              "; LBFGS keeps it under its first parameter's");
        const auto n = numel();
        auto get = [&](const char* key) -> const Tensor* {
            auto it = entry.find(key);
            if (it == entry.end()) return nullptr;
            check(it->second.defined(), op, ": state '", key, "' is an undefined tensor");
            return &it->second;
        };
        auto scalar = [&](const char* key) {
            const Tensor* t = get(key);
            check(t != nullptr, op, ": the state lacks '", key, "'");
            check(t->numel() == 1, op, ": state '", key, "' must have one element, got shape ", t->sizes());
            return t->item<double>();
        };
        auto count = [&](const char* key) {
            const double v = scalar(key);
            check(v >= 0 && v < 9.0e15 && v == std::floor(v), op, ": state '", key,
                  "' must be a non-negative integer, got ", v);
            return static_cast<std::int64_t>(v);
        };
        auto read_vector = [&](const char* key, const int_list& sizes) {
            const Tensor* t = get(key);
            check(t != nullptr, op, ": the state lacks '", key, "'");
            check(t->sizes() == sizes, op, ": state '", key, "' has shape ", t->sizes(), ", expected ", sizes);
            check(is_floating_point(t->type()), op, ": state '", key, "' must be floating point, got dtype ",
                  t->type());
            return t->to_vector<double>();
        };
        static constexpr const char* direction_keys[] = {"d",   "t",      "old_dirs",       "old_stps",
                                                         "ro",  "H_diag", "prev_flat_grad", "prev_loss"};
        for (const auto& [key, t] : entry) {
            bool known = key == "func_evals" || key == "n_iter";
            for (const char* k : direction_keys) known = known || key == k;
            check(known, op, ": unknown state '", key, "'");
        }
        st.started = true;
        st.func_evals = count("func_evals");
        st.n_iter = count("n_iter");
        st.has_direction = get("d") != nullptr;
        for (const char* k : direction_keys)
            check((get(k) != nullptr) == st.has_direction, op, ": the state has ",
                  st.has_direction ? "'d' but not '" : "no 'd' but '", k, "'");
        check(st.has_direction == (st.n_iter > 0), op, ": the state has n_iter ", st.n_iter, " but ",
              st.has_direction ? "a direction 'd'" : "no direction 'd'");
        if (st.has_direction) {
            const Tensor* dirs = get("old_dirs");
            check(dirs->dim() == 2, op, ": state 'old_dirs' must be [k, ", n, "], got shape ", dirs->sizes());
            const std::int64_t k = dirs->size(0);
            check(k <= static_cast<std::int64_t>(detail::option(saved.options, "history_size")), op,
                  ": the state holds ", k, " history pairs, more than history_size");
            st.d = read_vector("d", {n});
            st.prev_flat_grad = read_vector("prev_flat_grad", {n});
            st.ro = read_vector("ro", {k});
            const vec y = read_vector("old_dirs", {k, n}), s = read_vector("old_stps", {k, n});
            for (std::int64_t r = 0; r < k; ++r) {
                st.old_dirs.push_back(std::make_shared<const vec>(y.begin() + r * n, y.begin() + (r + 1) * n));
                st.old_stps.push_back(std::make_shared<const vec>(s.begin() + r * n, s.begin() + (r + 1) * n));
            }
            st.t = scalar("t");
            st.H_diag = scalar("H_diag");
            st.prev_loss = scalar("prev_loss");
        }
    }
    param_groups()[0].options = saved.options;
    lbfgs_state_ = std::move(st);
}

}  // namespace graft::optim
