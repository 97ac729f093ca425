#pragma once
// Definitions for graft/core/print.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/core/print.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

namespace graft {
namespace detail {

GRAFT_INLINE print_value read_print_value(const Tensor& t) {
    if (t.type() == dtype::int64 || t.type() == dtype::int32) {
        const std::int64_t i = t.item<std::int64_t>();
        return {static_cast<double>(i), i};
    }
    return {t.item<double>(), 0};
}

GRAFT_INLINE element_formatter::element_formatter(dtype type, const std::vector<print_value>& shown) : type_(type) {
    if (is_floating_point(type)) {
        double lo = INFINITY, hi = 0.0;
        bool all_int = true;
        for (const print_value& e : shown) {
            const double v = e.real;
            if (!std::isfinite(v) || v == 0.0) continue;
            lo = std::min(lo, std::fabs(v));
            hi = std::max(hi, std::fabs(v));
            all_int = all_int && std::ceil(v) == v;
        }
        int_mode_ = all_int;
        const bool any = hi > 0.0;
        sci_ = any && (int_mode_ ? hi > 1e8 : (hi / lo > 1000.0 || hi > 1e8 || lo < 1e-4));
    }
    // Like PyTorch, floats are aligned on their nonzero finite values only.
    for (const print_value& v : shown)
        if (!is_floating_point(type) || (std::isfinite(v.real) && v.real != 0.0))
            width_ = std::max(width_, format_raw(v).size());
}

GRAFT_INLINE std::string element_formatter::format(const print_value& v) const {
    std::string s = format_raw(v);
    return std::string(width_ - std::min(width_, s.size()), ' ') + s;
}

GRAFT_INLINE std::string element_formatter::format_raw(const print_value& e) const {
    char buf[64];
    if (type_ == dtype::bool_) return e.real != 0.0 ? "True" : "False";
    if (type_ == dtype::int64 || type_ == dtype::int32) {
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(e.integer));
        return buf;
    }
    const double v = e.real;
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (sci_) std::snprintf(buf, sizeof buf, "%.4e", v);
    else if (int_mode_) std::snprintf(buf, sizeof buf, "%.0f.", v);
    else std::snprintf(buf, sizeof buf, "%.4f", v);
    return buf;
}

GRAFT_INLINE void collect_shown(const Tensor& t, bool summarize, const print_options& o, std::vector<print_value>& out) {
    if (t.dim() == 0) {
        out.push_back(read_print_value(t));
        return;
    }
    const std::int64_t n = t.size(0);
    auto visit = [&](std::int64_t i) {
        if (t.dim() == 1) out.push_back(read_print_value(raw::select(t, 0, i)));
        else collect_shown(raw::select(t, 0, i), summarize, o, out);
    };
    if (summarize && n > 2 * o.edgeitems) {
        for (std::int64_t i = 0; i < o.edgeitems; ++i) visit(i);
        for (std::int64_t i = n - o.edgeitems; i < n; ++i) visit(i);
    } else {
        for (std::int64_t i = 0; i < n; ++i) visit(i);
    }
}

GRAFT_INLINE std::string format_tensor(const Tensor& t, const element_formatter& f, std::size_t indent, bool summarize,
                                       const print_options& o) {
    if (t.dim() == 0) return f.format(read_print_value(t));
    const std::int64_t n = t.size(0);
    std::vector<std::int64_t> idx;
    bool ellipsis = summarize && n > 2 * o.edgeitems;
    if (ellipsis) {
        for (std::int64_t i = 0; i < o.edgeitems; ++i) idx.push_back(i);
        for (std::int64_t i = n - o.edgeitems; i < n; ++i) idx.push_back(i);
    } else {
        for (std::int64_t i = 0; i < n; ++i) idx.push_back(i);
    }
    if (t.dim() == 1) {
        std::vector<std::string> items;
        for (std::size_t k = 0; k < idx.size(); ++k) {
            if (ellipsis && k == static_cast<std::size_t>(o.edgeitems)) items.emplace_back(" ...");
            items.push_back(f.format(read_print_value(raw::select(t, 0, idx[k]))));
        }
        const auto elem_len = static_cast<std::int64_t>(f.width() + 2);
        const std::int64_t per_line =
            std::max<std::int64_t>(1, (o.linewidth - static_cast<std::int64_t>(indent)) / elem_len);
        std::string s = "[";
        for (std::size_t k = 0; k < items.size(); ++k) {
            if (k > 0) {
                s += ",";
                s += (k % static_cast<std::size_t>(per_line) == 0) ? "\n" + std::string(indent + 1, ' ') : " ";
            }
            s += items[k];
        }
        return s + "]";
    }
    const std::string sep = "," + std::string(static_cast<std::size_t>(t.dim() - 1), '\n') + std::string(indent + 1, ' ');
    std::string s = "[";
    for (std::size_t k = 0; k < idx.size(); ++k) {
        if (k > 0) s += sep;
        if (ellipsis && k == static_cast<std::size_t>(o.edgeitems)) s += "..." + sep;
        s += format_tensor(raw::select(t, 0, idx[k]), f, indent + 1, summarize, o);
    }
    return s + "]";
}

}  // namespace detail

GRAFT_INLINE std::ostream& operator<<(std::ostream& os, const Tensor& t) {
    if (!t.defined()) return os << "tensor(undefined)";
    const detail::print_options o;
    std::string body;
    bool show_size = false;
    if (t.numel() == 0) {
        body = "[]";
        show_size = t.dim() != 1;
    } else {
        const bool summarize = t.numel() > o.threshold;
        std::vector<detail::print_value> shown;
        detail::collect_shown(t, summarize, o, shown);
        const detail::element_formatter f(t.type(), shown);
        body = detail::format_tensor(t, f, 7, summarize, o);
    }
    os << "tensor(" << body;
    if (show_size) {
        os << ", size=(";
        for (std::size_t i = 0; i < t.sizes().size(); ++i) os << (i ? ", " : "") << t.sizes()[i];
        os << (t.sizes().size() == 1 ? ",)" : ")");
    }
    // As PyTorch: the dtype is shown unless it is the default float or int64 (or bool).
    if (t.type() != dtype::float32 && t.type() != dtype::int64 && t.type() != dtype::bool_)
        os << ", dtype=" << name(t.type());
    return os << ")";
}

}  // namespace graft
