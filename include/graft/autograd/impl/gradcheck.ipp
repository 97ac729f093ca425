#pragma once
// Definitions for graft/autograd/gradcheck.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/autograd/gradcheck.hpp"

#include <cmath>
#include <cstring>
#include <sstream>
#include <string>

namespace graft::autograd {
namespace detail {

GRAFT_INLINE char* element_address(const Tensor& t, std::int64_t flat) {
    std::int64_t offset = 0;
    for (std::int64_t d = t.dim() - 1; d >= 0; --d) {
        const std::int64_t size = t.size(d);
        offset += (flat % size) * t.stride(d);
        flat /= size;
    }
    return static_cast<char*>(t.raw_data()) + offset * static_cast<std::int64_t>(t.element_size());
}

GRAFT_INLINE double read_element(const Tensor& t, std::int64_t flat) {
    char* p = element_address(t, flat);
    if (t.type() == dtype::float64) {
        double v;
        std::memcpy(&v, p, sizeof v);
        return v;
    }
    float v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

GRAFT_INLINE void write_element(const Tensor& t, std::int64_t flat, double value) {
    char* p = element_address(t, flat);
    if (t.type() == dtype::float64) {
        std::memcpy(p, &value, sizeof value);
    } else {
        const auto f = static_cast<float>(value);
        std::memcpy(p, &f, sizeof f);
    }
}

GRAFT_INLINE std::vector<double> flatten_outputs(const tensor_list& outs) {
    std::vector<double> v;
    for (const auto& o : outs) {
        if (!o.defined()) continue;
        const auto part = o.to_vector<double>();
        v.insert(v.end(), part.begin(), part.end());
    }
    return v;
}

}  // namespace detail

GRAFT_INLINE bool gradcheck(const std::function<tensor_list(const tensor_list&)>& f, const tensor_list& inputs,
                            const gradcheck_options& opt) {
    std::vector<std::size_t> diff;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        graft::detail::check(inputs[i].defined(), "gradcheck: input ", i, " is undefined");
        if (!inputs[i].requires_grad()) continue;
        graft::detail::check(is_floating_point(inputs[i].type()), "gradcheck: input ", i, " must be floating point");
        diff.push_back(i);
    }
    graft::detail::check(!diff.empty(), "gradcheck: at least one input must require grad");
    const tensor_list outputs = f(inputs);
    std::vector<std::size_t> out_sizes;
    std::size_t n_out = 0;
    for (const auto& o : outputs) {
        out_sizes.push_back(o.defined() ? static_cast<std::size_t>(o.numel()) : 0);
        n_out += out_sizes.back();
    }
    auto fail = [&](const std::string& msg) {
        if (opt.raise) throw error("gradcheck: " + msg);
        return false;
    };
    for (std::size_t k : diff) {
        const Tensor& x = inputs[k];
        const std::int64_t n_in = x.numel();
        // Numerical Jacobian columns, one per input element.
        std::vector<std::vector<double>> numerical(static_cast<std::size_t>(n_in));
        for (std::int64_t j = 0; j < n_in; ++j) {
            const double orig = detail::read_element(x, j);
            std::vector<double> plus, minus;
            {
                no_grad guard;
                detail::write_element(x, j, orig + opt.eps);
                plus = detail::flatten_outputs(f(inputs));
                detail::write_element(x, j, orig - opt.eps);
                minus = detail::flatten_outputs(f(inputs));
                detail::write_element(x, j, orig);
            }
            if (plus.size() != n_out || minus.size() != n_out)
                return fail("the function returned outputs of different sizes for perturbed inputs");
            auto& col = numerical[static_cast<std::size_t>(j)];
            col.resize(n_out);
            for (std::size_t r = 0; r < n_out; ++r) col[r] = (plus[r] - minus[r]) / (2 * opt.eps);
        }
        // Analytical Jacobian rows, one vector-Jacobian product per output element.
        std::size_t row = 0;
        for (std::size_t o = 0; o < outputs.size(); ++o) {
            if (!outputs[o].defined() || !outputs[o].requires_grad()) {
                for (std::size_t e = 0; e < out_sizes[o]; ++e, ++row)
                    for (std::int64_t j = 0; j < n_in; ++j)
                        if (std::fabs(numerical[static_cast<std::size_t>(j)][row]) > opt.atol)
                            return fail(graft::detail::concat("output ", o, " does not require grad but its "
                                                              "numerical gradient w.r.t. input ", k, " is nonzero"));
                continue;
            }
            for (std::size_t e = 0; e < out_sizes[o]; ++e, ++row) {
                Tensor onehot = zeros_like(outputs[o]);
                detail::write_element(onehot, static_cast<std::int64_t>(e), 1.0);
                const tensor_list g = grad({outputs[o]}, {x}, {onehot}, true, false, true);
                const std::vector<double> analytic =
                    g[0].defined() ? g[0].to_vector<double>() : std::vector<double>(static_cast<std::size_t>(n_in), 0.0);
                for (std::int64_t j = 0; j < n_in; ++j) {
                    const double a = analytic[static_cast<std::size_t>(j)];
                    const double num = numerical[static_cast<std::size_t>(j)][row];
                    if (!(std::fabs(a - num) <= opt.atol + opt.rtol * std::fabs(num)))
                        return fail(graft::detail::concat("Jacobian mismatch for output ", o, " element ", e,
                                                          " with respect to input ", k, " element ", j,
                                                          ": numerical ", num, ", analytical ", a));
                }
            }
        }
    }
    return true;
}

GRAFT_INLINE bool gradgradcheck(const std::function<tensor_list(const tensor_list&)>& f, const tensor_list& inputs,
                                const gradcheck_options& opt) {
    const tensor_list outs = f(inputs);
    tensor_list v;
    generator gen(1234);
    for (const auto& o : outs) v.push_back(o.defined() ? randn(o.sizes(), o.type(), gen) : Tensor{});
    std::vector<std::size_t> diff;
    for (std::size_t i = 0; i < inputs.size(); ++i)
        if (inputs[i].requires_grad()) diff.push_back(i);
    auto first_order = [&, diff, v](const tensor_list& xs) {
        enable_grad guard;  // gradcheck evaluates perturbed points under no_grad
        const tensor_list ys = f(xs);
        tensor_list out_req, v_req;
        for (std::size_t i = 0; i < ys.size(); ++i)
            if (ys[i].defined() && ys[i].requires_grad()) {
                out_req.push_back(ys[i]);
                v_req.push_back(v[i]);
            }
        std::vector<grad_input> wrt;
        for (auto i : diff) wrt.emplace_back(xs[i]);
        return grad(out_req, wrt, v_req, true, true, true);
    };
    return gradcheck(first_order, inputs, opt);
}

}  // namespace graft::autograd
