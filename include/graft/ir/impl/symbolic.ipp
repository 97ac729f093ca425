#pragma once
// Definitions for graft/ir/symbolic.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/ir/symbolic.hpp"

#include <cmath>
#include <cstring>
#include <map>
#include <sstream>

namespace graft::ir {

GRAFT_INLINE double size_expr::eval(std::span<const std::int64_t> values) const {
    double v = coeff;
    for (std::size_t s : symbols) v *= static_cast<double>(values[s]);
    return v;
}

GRAFT_INLINE std::vector<std::int64_t> symbolic_sizes::bind(std::span<const ivalue> inputs) const {
    std::vector<std::int64_t> r;
    r.reserve(symbols.size());
    for (std::size_t k = 0; k < symbols.size(); ++k) {
        const size_symbol& s = symbols[k];
        const Tensor* t = s.input < inputs.size() ? std::get_if<Tensor>(&inputs[s.input]) : nullptr;
        graft::detail::check(t != nullptr && t->defined() && s.dim < t->sizes().size(), "symbolic sizes: s", k,
                             " is dimension ", s.dim, " of input ", s.input, ", which is not a tensor of that rank");
        r.push_back(t->sizes()[s.dim]);
    }
    return r;
}

GRAFT_INLINE bool symbolic_sizes::patches_node(const Node* n) const {
    for (const size_patch& p : patches)
        if (p.node == n) return true;
    return false;
}

GRAFT_INLINE attribute_map symbolic_sizes::attributes(const Node* n, std::span<const std::int64_t> values) const {
    attribute_map a = n->attributes();
    for (const size_patch& p : patches) {
        if (p.node != n) continue;
        const double v = p.expr.eval(values);
        attribute& at = a.at(p.attr);
        if (auto* list = std::get_if<std::vector<std::int64_t>>(&at)) (*list)[static_cast<std::size_t>(p.index)] = std::llround(v);
        else if (auto* i = std::get_if<std::int64_t>(&at)) *i = std::llround(v);
        else if (auto* d = std::get_if<double>(&at)) *d = v;
    }
    return a;
}

GRAFT_INLINE void symbolic_sizes::relax_input_types(Graph& g) const {
    for (const auto& [j, d] : dims) {
        Type t = g.inputs()[j]->type();
        if (!t.is_tensor() || !t.tensor.sizes || d >= t.tensor.sizes->size()) continue;
        (*t.tensor.sizes)[d] = std::nullopt;
        t.tensor.strides.reset();
        g.inputs()[j]->set_type(std::move(t));
    }
}

GRAFT_INLINE std::string symbolic_sizes::describe(const Graph& g) const {
    std::ostringstream os;
    for (std::size_t k = 0; k < symbols.size(); ++k)
        os << (k ? "; s" : "s") << k << " = %" << g.inputs()[symbols[k].input]->name() << ".size(" << symbols[k].dim
           << ')';
    for (const size_patch& p : patches) {
        os << "; %" << (p.node->outputs().empty() ? std::string("?") : p.node->outputs()[0]->name()) << ' '
           << p.node->kind().name << '.' << p.attr;
        if (p.index >= 0) os << '[' << p.index << ']';
        os << " = ";
        if (p.expr.coeff != 1 || p.expr.symbols.empty()) os << p.expr.coeff << (p.expr.symbols.empty() ? "" : " * ");
        for (std::size_t k = 0; k < p.expr.symbols.size(); ++k) os << (k ? " * s" : "s") << p.expr.symbols[k];
    }
    return os.str();
}

namespace detail {

[[nodiscard]] inline std::optional<std::vector<std::int64_t>> known_sizes(const Value* v) {
    const Type& t = v->type();
    if (!t.is_tensor() || !t.tensor.sizes) return std::nullopt;
    std::vector<std::int64_t> r;
    for (const auto& d : *t.tensor.sizes) {
        if (!d) return std::nullopt;
        r.push_back(*d);
    }
    return r;
}

[[nodiscard]] inline bool same_attribute(const attribute& a, const attribute& b) {
    if (a.index() != b.index()) return false;
    if (const auto* ta = std::get_if<Tensor>(&a)) {
        const Tensor& tb = std::get<Tensor>(b);
        if (ta->defined() != tb.defined()) return false;
        if (!ta->defined()) return true;
        if (ta->type() != tb.type() || ta->sizes() != tb.sizes()) return false;
        const Tensor ca = ta->contiguous(), cb = tb.contiguous();
        return std::memcmp(ca.raw_data(), cb.raw_data(), static_cast<std::size_t>(ca.numel()) * ca.element_size()) == 0;
    }
    return std::visit(
        [&](const auto& x) {
            using X = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<X, Tensor>) return false;
            else return x == std::get<X>(b);
        },
        a);
}

/// An expression of the symbols taking value vals[k] in trace k, or nullopt.
[[nodiscard]] inline std::optional<size_expr> explain(const std::vector<double>& vals,
                                                      const std::vector<std::vector<std::int64_t>>& sym_values) {
    const auto fits = [&](const size_expr& e) {
        for (std::size_t k = 0; k < vals.size(); ++k) {
            double v = e.coeff;
            for (std::size_t s : e.symbols) v *= static_cast<double>(sym_values[s][k]);
            if (!(std::fabs(v - vals[k]) <= 1e-9 * std::max(1.0, std::fabs(vals[k])))) return false;
        }
        return true;
    };
    const std::size_t n = sym_values.size();
    for (std::size_t s = 0; s < n; ++s) {
        size_expr e{vals[0] / static_cast<double>(sym_values[s][0]), {s}};
        if (fits(e)) return e;
    }
    for (std::size_t s = 0; s < n; ++s)
        for (std::size_t t = s; t < n; ++t) {
            size_expr e{vals[0] / (static_cast<double>(sym_values[s][0]) * static_cast<double>(sym_values[t][0])),
                        {s, t}};
            if (fits(e)) return e;
        }
    return std::nullopt;
}

[[nodiscard]] inline std::optional<double> number_of(const attribute& a) {
    if (const auto* i = std::get_if<std::int64_t>(&a)) return static_cast<double>(*i);
    if (const auto* d = std::get_if<double>(&a)) return *d;
    return std::nullopt;
}

}  // namespace detail

GRAFT_INLINE std::optional<symbolic_sizes> infer_symbolic_sizes(const Graph& g, const std::vector<const Graph*>& others,
                                                                std::string& why) {
    symbolic_sizes r;
    const std::size_t n_in = g.inputs().size();
    for (const Graph* o : others)
        if (o->inputs().size() != n_in || o->outputs().size() != g.outputs().size()) {
            why = "the traces have different numbers of inputs or outputs";
            return std::nullopt;
        }
    // Symbols: input dimensions that differ between the traces; equal value tuples share one.
    std::vector<std::vector<std::int64_t>> sym_values;
    for (std::size_t j = 0; j < n_in; ++j) {
        const auto s0 = detail::known_sizes(g.inputs()[j]);
        if (!s0) continue;
        std::vector<std::vector<std::int64_t>> so;
        for (const Graph* o : others) {
            auto s = detail::known_sizes(o->inputs()[j]);
            if (!s || s->size() != s0->size()) {
                why = "input " + std::to_string(j) + " has another rank or unknown sizes in another trace";
                return std::nullopt;
            }
            so.push_back(std::move(*s));
        }
        for (std::size_t d = 0; d < s0->size(); ++d) {
            std::vector<std::int64_t> t{(*s0)[d]};
            bool varies = false;
            for (const auto& s : so) {
                t.push_back(s[d]);
                varies = varies || s[d] != (*s0)[d];
            }
            if (!varies) continue;
            std::size_t k = 0;
            while (k < sym_values.size() && sym_values[k] != t) ++k;
            if (k == sym_values.size()) {
                r.symbols.push_back({j, d});
                sym_values.push_back(std::move(t));
            }
            r.dims.emplace_back(j, d);
            r.dim_symbols.push_back(k);
        }
    }
    // Nodes in lockstep: same kinds, inputs and attribute names; differing attributes explained.
    const auto nodes_of = [](const Graph& x) {
        return std::vector<const Node*>(x.block()->nodes().begin(), x.block()->nodes().end());
    };
    const auto ids_of = [](const Graph& x) {
        std::map<const Value*, std::size_t> ids;
        for (const Value* v : x.inputs()) ids.emplace(v, ids.size());
        for (const Node* n : x.block()->nodes())
            for (const Value* v : n->outputs()) ids.emplace(v, ids.size());
        return ids;
    };
    const std::vector<const Node*> a = nodes_of(g);
    const auto ida = ids_of(g);
    std::vector<std::vector<const Node*>> b;
    std::vector<std::map<const Value*, std::size_t>> idb;
    for (const Graph* o : others) {
        b.push_back(nodes_of(*o));
        idb.push_back(ids_of(*o));
        if (b.back().size() != a.size()) {
            why = "the traces have different numbers of nodes";
            return std::nullopt;
        }
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
        const Node* n = a[i];
        if (!n->blocks().empty()) {
            why = "the graph has control flow";
            return std::nullopt;
        }
        for (std::size_t k = 0; k < others.size(); ++k) {
            const Node* m = b[k][i];
            bool same = &m->kind() == &n->kind() && m->inputs().size() == n->inputs().size() &&
                        m->outputs().size() == n->outputs().size() && m->attributes().size() == n->attributes().size();
            for (std::size_t q = 0; same && q < n->inputs().size(); ++q)
                same = ida.at(n->input(q)) == idb[k].at(m->input(q));
            for (const auto& [name, value] : n->attributes()) same = same && m->has_attr(name);
            if (!same) {
                why = std::string("the traces differ in structure at a ") + std::string(n->kind().name) + " node";
                return std::nullopt;
            }
        }
        for (const auto& [name, value] : n->attributes()) {
            bool all_equal = true;
            for (std::size_t k = 0; k < others.size(); ++k)
                all_equal = all_equal && detail::same_attribute(value, b[k][i]->attr(name));
            if (all_equal) continue;
            const auto fail = [&] {
                why = std::string("attribute '") + name + "' of a " + std::string(n->kind().name) +
                      " node differs between the traces and is not a product of input sizes";
                return std::nullopt;
            };
            if (const auto x = detail::number_of(value)) {
                std::vector<double> vals{*x};
                for (std::size_t k = 0; k < others.size(); ++k) {
                    const auto y = detail::number_of(b[k][i]->attr(name));
                    if (!y || b[k][i]->attr(name).index() != value.index()) return fail();
                    vals.push_back(*y);
                }
                const auto e = detail::explain(vals, sym_values);
                if (!e) return fail();
                r.patches.push_back({n, name, -1, *e});
                continue;
            }
            const auto* list = std::get_if<std::vector<std::int64_t>>(&value);
            if (!list) return fail();
            for (std::size_t e = 0; e < list->size(); ++e) {
                std::vector<double> vals{static_cast<double>((*list)[e])};
                bool differs = false;
                for (std::size_t k = 0; k < others.size(); ++k) {
                    const auto* other = std::get_if<std::vector<std::int64_t>>(&b[k][i]->attr(name));
                    if (!other || other->size() != list->size()) return fail();
                    vals.push_back(static_cast<double>((*other)[e]));
                    differs = differs || (*other)[e] != (*list)[e];
                }
                if (!differs) continue;
                const auto ex = detail::explain(vals, sym_values);
                if (!ex) return fail();
                r.patches.push_back({n, name, static_cast<std::ptrdiff_t>(e), *ex});
            }
        }
    }
    for (std::size_t q = 0; q < g.outputs().size(); ++q)
        for (std::size_t k = 0; k < others.size(); ++k)
            if (ida.at(g.outputs()[q]) != idb[k].at(others[k]->outputs()[q])) {
                why = "the traces return different values";
                return std::nullopt;
            }
    return r;
}

}  // namespace graft::ir
