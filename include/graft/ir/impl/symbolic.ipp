#pragma once
// Definitions for graft/ir/symbolic.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/ir/symbolic.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <limits>
#include <optional>
#include <sstream>

namespace graft::ir {

namespace detail {

/// a op b for a size program: integer arithmetic when both are whole (exact, as SymInt's),
/// doubles otherwise.
[[nodiscard]] inline double apply_size_op(size_term::op k, double a, double b) {
    constexpr double exact = 9.0e15;
    const bool whole = a == std::trunc(a) && b == std::trunc(b) && std::fabs(a) < exact && std::fabs(b) < exact;
    switch (k) {
        case size_term::op::add: return a + b;
        case size_term::op::sub: return a - b;
        case size_term::op::mul: return a * b;
        case size_term::op::div:
            if (b == 0) return std::numeric_limits<double>::quiet_NaN();  // size_expr::eval reports it
            if (whole) return static_cast<double>(static_cast<std::int64_t>(a) / static_cast<std::int64_t>(b));
            return std::trunc(a / b);
        case size_term::op::mod:
            if (b == 0) return std::numeric_limits<double>::quiet_NaN();
            if (whole) return static_cast<double>(static_cast<std::int64_t>(a) % static_cast<std::int64_t>(b));
            return std::fmod(a, b);
        default: return 0;
    }
}

/// Runs a postfix program whose symbol terms read `leaf(k)`; nullopt when it is malformed.
template <class Leaf>
[[nodiscard]] std::optional<double> run_size_program(std::span<const size_term> program, Leaf&& leaf) {
    std::vector<double> stack;
    for (const size_term& t : program) {
        if (t.kind == size_term::op::constant) stack.push_back(t.value);
        else if (t.kind == size_term::op::symbol) stack.push_back(leaf(t.symbol));
        else {
            if (stack.size() < 2) return std::nullopt;
            const double b = stack.back();
            stack.pop_back();
            stack.back() = apply_size_op(t.kind, stack.back(), b);
        }
    }
    if (stack.size() != 1) return std::nullopt;
    return stack[0];
}

}  // namespace detail

GRAFT_INLINE std::optional<double> size_expr::try_eval(std::span<const std::int64_t> values) const {
    if (!program.empty()) {
        const auto v = detail::run_size_program(program, [&](std::size_t s) { return static_cast<double>(values[s]); });
        if (v && std::isnan(*v)) return std::nullopt;  // a zero divisor
        return v ? *v : 0.0;
    }
    double v = coeff;
    for (std::size_t s : symbols) v *= static_cast<double>(values[s]);
    return v;
}

GRAFT_INLINE double size_expr::eval(std::span<const std::int64_t> values) const {
    const auto v = try_eval(values);
    graft::detail::check(v.has_value(), "the size expression ", str(),
                         " divides by zero for this call's sizes (SymInt division or modulo by zero)");
    return *v;
}

GRAFT_INLINE bool symbolic_sizes::guards_hold(std::span<const Tensor> inputs) const {
    if (guards.empty()) return true;
    std::vector<std::int64_t> values(symbols.size(), 0);
    for (std::size_t k = 0; k < symbols.size(); ++k) {
        const size_symbol& s = symbols[k];
        if (s.context || s.input >= inputs.size() || s.dim >= inputs[s.input].sizes().size()) return false;
        values[k] = inputs[s.input].sizes()[s.dim];
    }
    for (const size_guard& g : guards) {
        const auto v = g.expr.try_eval(values);
        if (!v || *v != static_cast<double>(g.value)) return false;
    }
    return true;
}

GRAFT_INLINE std::string size_expr::str() const {
    const auto number = [](double x) {
        std::ostringstream os;
        os.precision(17);
        os << x;
        return os.str();
    };
    if (program.empty()) {
        std::string r;
        if (coeff != 1 || symbols.empty()) r = number(coeff) + (symbols.empty() ? "" : " * ");
        for (std::size_t k = 0; k < symbols.size(); ++k) r += (k ? " * s" : "s") + std::to_string(symbols[k]);
        return r;
    }
    // Infix with parentheses where precedence needs them: (text, precedence) per stack entry.
    std::vector<std::pair<std::string, int>> stack;
    for (const size_term& t : program) {
        if (t.kind == size_term::op::constant) stack.emplace_back(number(t.value), 3);
        else if (t.kind == size_term::op::symbol) stack.emplace_back("s" + std::to_string(t.symbol), 3);
        else {
            if (stack.size() < 2) return "?";
            auto b = std::move(stack.back());
            stack.pop_back();
            auto& a = stack.back();
            const bool additive = t.kind == size_term::op::add || t.kind == size_term::op::sub;
            const int prec = additive ? 1 : 2;
            const char* sym = t.kind == size_term::op::add   ? " + "
                              : t.kind == size_term::op::sub ? " - "
                              : t.kind == size_term::op::mul ? " * "
                              : t.kind == size_term::op::div ? " / "
                                                             : " % ";
            // Left operand: parenthesize lower precedence; right: also equal precedence unless
            // the operation is + or * (associative).
            const bool assoc = t.kind == size_term::op::add || t.kind == size_term::op::mul;
            std::string lhs = a.second < prec ? "(" + a.first + ")" : a.first;
            std::string rhs = b.second < prec || (b.second == prec && !assoc) ? "(" + b.first + ")" : b.first;
            a = {lhs + sym + rhs, prec};
        }
    }
    return stack.size() == 1 ? stack[0].first : "?";
}

GRAFT_INLINE std::vector<size_hint> merge_size_hints(const std::vector<const std::vector<size_hint>*>& traces) {
    if (traces.empty() || traces[0] == nullptr) return {};
    std::vector<size_hint> r = *traces[0];
    for (std::size_t t = 1; t < traces.size(); ++t) {
        const std::vector<size_hint>* h = traces[t];
        if (h == nullptr || h->size() != r.size()) return {};
        for (std::size_t k = 0; k < r.size(); ++k) {
            const size_hint& a = r[k];
            const size_hint& b = (*h)[k];
            bool same = a.program.size() == b.program.size() && a.leaves.size() == b.leaves.size();
            for (std::size_t q = 0; same && q < a.program.size(); ++q)
                same = a.program[q].kind == b.program[q].kind && a.program[q].symbol == b.program[q].symbol &&
                       (a.program[q].kind != size_term::op::constant || a.program[q].value == b.program[q].value);
            if (!same) return {};
            for (std::size_t q = 0; q < a.leaves.size(); ++q)
                r[k].leaves[q].insert(r[k].leaves[q].end(), b.leaves[q].begin(), b.leaves[q].end());
        }
    }
    return r;
}

GRAFT_INLINE std::vector<std::int64_t> symbolic_sizes::bind(std::span<const ivalue> inputs) const {
    std::vector<std::int64_t> r;
    r.reserve(symbols.size());
    for (std::size_t k = 0; k < symbols.size(); ++k) {
        const size_symbol& s = symbols[k];
        if (s.context) {
            const std::vector<int_list>* c = detail::tl_size_context;
            graft::detail::check(c != nullptr && s.input < c->size() && s.dim < (*c)[s.input].size(), "symbolic sizes: s",
                                 k, " is dimension ", s.dim, " of the forward's input ", s.input,
                                 ", and no forward's sizes are given (ir::size_context_scope)");
            r.push_back((*c)[s.input][s.dim]);
            continue;
        }
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

GRAFT_INLINE std::vector<size_hint> symbolic_sizes::as_hints(const std::vector<std::vector<std::int64_t>>& values) const {
    std::vector<size_hint> r;
    for (const size_patch& p : patches) {
        if (p.expr.program.empty()) continue;  // products of sizes are found without hints
        size_hint h;
        h.program = p.expr.program;
        h.leaves.assign(symbols.size(), {});
        for (const auto& v : values)
            for (std::size_t k = 0; k < symbols.size() && k < v.size(); ++k) h.leaves[k].push_back(v[k]);
        r.push_back(std::move(h));
    }
    return r;
}

GRAFT_INLINE std::string symbolic_sizes::describe(const Graph& g) const {
    std::ostringstream os;
    for (std::size_t k = 0; k < symbols.size(); ++k) {
        os << (k ? "; s" : "s") << k << " = ";
        if (symbols[k].context) os << "forward input " << symbols[k].input;
        else os << '%' << g.inputs()[symbols[k].input]->name();
        os << ".size(" << symbols[k].dim << ')';
    }
    for (const size_patch& p : patches) {
        os << "; %" << (p.node->outputs().empty() ? std::string("?") : p.node->outputs()[0]->name()) << ' '
           << p.node->kind().name << '.' << p.attr;
        if (p.index >= 0) os << '[' << p.index << ']';
        os << " = " << p.expr.str();
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
        std::vector<std::int64_t> at(sym_values.size());
        for (std::size_t k = 0; k < vals.size(); ++k) {
            for (std::size_t s = 0; s < sym_values.size(); ++s) at[s] = sym_values[s][k];
            const auto v = e.try_eval(at);  // nullopt: divides by zero here, not the expression
            if (!v || !(std::fabs(*v - vals[k]) <= 1e-9 * std::max(1.0, std::fabs(vals[k])))) return false;
        }
        return true;
    };
    const std::size_t n = sym_values.size();
    for (std::size_t s = 0; s < n; ++s) {
        size_expr e{vals[0] / static_cast<double>(sym_values[s][0]), {s}, {}};
        if (fits(e)) return e;
    }
    for (std::size_t s = 0; s < n; ++s)
        for (std::size_t t = s; t < n; ++t) {
            size_expr e{vals[0] / (static_cast<double>(sym_values[s][0]) * static_cast<double>(sym_values[t][0])),
                        {s, t}, {}};
            if (fits(e)) return e;
        }
    // a * s + b with whole a and b (a backward whose inputs are x.narrow(1, 1, n - 2) saved
    // rebuilds n = s + 2): fitted on two traces, checked on the others (three or more).
    if (vals.size() >= 3)
        for (std::size_t s = 0; s < n; ++s) {
            const double x0 = static_cast<double>(sym_values[s][0]), x1 = static_cast<double>(sym_values[s][1]);
            if (x0 == x1) continue;
            const double a = (vals[1] - vals[0]) / (x1 - x0), b = vals[0] - a * x0;
            if (a == 0 || a != std::trunc(a) || b != std::trunc(b) || std::fabs(a) > 1e9 || std::fabs(b) > 1e15) continue;
            size_expr e;
            e.program.push_back({size_term::op::symbol, 0, s});
            if (a != 1) {
                e.program.push_back({size_term::op::constant, a, 0});
                e.program.push_back({size_term::op::mul, 0, 0});
            }
            if (b != 0) {
                e.program.push_back({size_term::op::constant, std::fabs(b), 0});
                e.program.push_back({b > 0 ? size_term::op::add : size_term::op::sub, 0, 0});
            }
            if (fits(e)) return e;
        }
    return std::nullopt;
}

/// The hints as expressions of the symbols: each leaf (a size the code read) explained by
/// explain(), or a constant when it did not change; hints with a leaf not explained are dropped.
[[nodiscard]] inline std::vector<size_expr> hint_expressions(const std::vector<size_hint>& hints,
                                                             const std::vector<std::vector<std::int64_t>>& sym_values,
                                                             std::size_t traces) {
    std::vector<size_expr> r;
    for (const size_hint& h : hints) {
        std::vector<size_expr> leaves;
        bool ok = true;
        for (const auto& lv : h.leaves) {
            if (lv.size() != traces) {
                ok = false;
                break;
            }
            std::vector<double> vals(lv.begin(), lv.end());
            if (std::all_of(lv.begin(), lv.end(), [&](std::int64_t v) { return v == lv[0]; })) {
                leaves.push_back(size_expr{vals[0], {}, {}});
                continue;
            }
            auto e = explain(vals, sym_values);
            if (!e) {
                ok = false;
                break;
            }
            leaves.push_back(std::move(*e));
        }
        if (!ok) continue;
        size_expr e;
        for (const size_term& t : h.program) {
            if (t.kind != size_term::op::symbol) {
                e.program.push_back(t);
                continue;
            }
            if (t.symbol >= leaves.size()) {
                ok = false;
                break;
            }
            const size_expr& leaf = leaves[t.symbol];
            if (!leaf.program.empty()) {
                e.program.insert(e.program.end(), leaf.program.begin(), leaf.program.end());
                continue;
            }
            const bool unit = leaf.coeff == 1 && !leaf.symbols.empty();
            if (!unit) e.program.push_back({size_term::op::constant, leaf.coeff, 0});
            for (std::size_t q = 0; q < leaf.symbols.size(); ++q) {
                e.program.push_back({size_term::op::symbol, 0, leaf.symbols[q]});
                if (!unit || q > 0) e.program.push_back({size_term::op::mul, 0, 0});
            }
        }
        if (ok && !e.program.empty()) r.push_back(std::move(e));
    }
    return r;
}

/// explain(), trying the hints first.
[[nodiscard]] inline std::optional<size_expr> explain_with(const std::vector<double>& vals,
                                                           const std::vector<std::vector<std::int64_t>>& sym_values,
                                                           const std::vector<size_expr>& hints) {
    for (const size_expr& h : hints) {
        bool fits = true;
        for (std::size_t k = 0; fits && k < vals.size(); ++k) {
            std::vector<std::int64_t> at(sym_values.size());
            for (std::size_t s = 0; s < sym_values.size(); ++s) at[s] = sym_values[s][k];
            const auto v = h.try_eval(at);
            fits = v && std::fabs(*v - vals[k]) <= 1e-9 * std::max(1.0, std::fabs(vals[k]));
        }
        if (fits) return h;
    }
    return explain(vals, sym_values);
}

[[nodiscard]] inline std::optional<double> number_of(const attribute& a) {
    if (const auto* i = std::get_if<std::int64_t>(&a)) return static_cast<double>(*i);
    if (const auto* d = std::get_if<double>(&a)) return *d;
    return std::nullopt;
}

}  // namespace detail

GRAFT_INLINE std::optional<symbolic_sizes> infer_symbolic_sizes(const Graph& g, const std::vector<const Graph*>& others,
                                                                std::string& why, const std::vector<size_hint>& hints,
                                                                const std::vector<const Graph*>& context) {
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
    // Context symbols: the forward's input dimensions that differ, when no graph input's does.
    if (!context.empty()) {
        if (context.size() != others.size() + 1 || context[0] == nullptr) {
            why = "the context has another number of traces";
            return std::nullopt;
        }
        for (std::size_t j = 0; j < context[0]->inputs().size(); ++j) {
            std::vector<std::optional<std::vector<std::int64_t>>> st;
            for (const Graph* c : context) {
                if (c == nullptr || c->inputs().size() != context[0]->inputs().size()) {
                    why = "the context's traces have different numbers of inputs";
                    return std::nullopt;
                }
                st.push_back(detail::known_sizes(c->inputs()[j]));
            }
            if (!st[0]) continue;
            bool same_rank = true;
            for (const auto& x : st) same_rank = same_rank && x && x->size() == st[0]->size();
            if (!same_rank) continue;
            for (std::size_t d = 0; d < st[0]->size(); ++d) {
                std::vector<std::int64_t> t;
                bool varies = false;
                for (const auto& x : st) {
                    t.push_back((*x)[d]);
                    varies = varies || (*x)[d] != (*st[0])[d];
                }
                if (!varies || std::find(sym_values.begin(), sym_values.end(), t) != sym_values.end()) continue;
                r.symbols.push_back({j, d, true});
                sym_values.push_back(std::move(t));
            }
        }
    }
    const std::vector<size_expr> hinted = detail::hint_expressions(hints, sym_values, others.size() + 1);
    // SymInt expressions of symbols that gave one value in every trace: whatever took that value
    // holds it as a number, so the graph serves only sizes where they still give it.
    for (const size_expr& e : hinted) {
        const bool reads_symbol = std::any_of(e.program.begin(), e.program.end(),
                                              [](const size_term& t) { return t.kind == size_term::op::symbol; });
        if (!reads_symbol) continue;
        std::optional<double> first;
        bool constant = true;
        for (std::size_t t = 0; constant && t < others.size() + 1; ++t) {
            std::vector<std::int64_t> at(sym_values.size());
            for (std::size_t q = 0; q < sym_values.size(); ++q) at[q] = sym_values[q][t];
            const auto v = e.try_eval(at);
            constant = v.has_value() && (!first || *v == *first);
            if (!first) first = v;
        }
        if (constant && first && std::abs(*first) < 9.0e15) r.guards.push_back({e, static_cast<std::int64_t>(*first)});
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
                      " node differs between the traces and " +
                      (sym_values.empty() ? "the graph's inputs do not carry the sizes it depends on"
                                          : "is not a function of input sizes graft can infer (a product of sizes, "
                                            "a * size + b, or a SymInt expression)");
                return std::nullopt;
            };
            if (const auto x = detail::number_of(value)) {
                std::vector<double> vals{*x};
                for (std::size_t k = 0; k < others.size(); ++k) {
                    const auto y = detail::number_of(b[k][i]->attr(name));
                    if (!y || b[k][i]->attr(name).index() != value.index()) return fail();
                    vals.push_back(*y);
                }
                const auto e = detail::explain_with(vals, sym_values, hinted);
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
                const auto ex = detail::explain_with(vals, sym_values, hinted);
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
    // Context symbols no patch uses are dropped (a graph that needs none runs without context).
    std::vector<bool> used(r.symbols.size(), false);
    for (const size_patch& p : r.patches) {
        for (std::size_t x : p.expr.symbols) used[x] = true;
        for (const size_term& t : p.expr.program)
            if (t.kind == size_term::op::symbol) used[t.symbol] = true;
    }
    std::vector<std::size_t> renamed(r.symbols.size());
    std::vector<size_symbol> kept;
    r.traced.clear();
    for (std::size_t k = 0; k < r.symbols.size(); ++k) {
        renamed[k] = kept.size();
        if (!r.symbols[k].context || used[k]) {
            kept.push_back(r.symbols[k]);
            r.traced.push_back(sym_values[k][0]);
        }
    }
    if (kept.size() != r.symbols.size()) {
        for (size_patch& p : r.patches) {
            for (std::size_t& x : p.expr.symbols) x = renamed[x];
            for (size_term& t : p.expr.program)
                if (t.kind == size_term::op::symbol) t.symbol = renamed[t.symbol];
        }
        r.symbols = std::move(kept);
    }
    return r;
}

namespace detail {

[[nodiscard]] inline std::string size_error(std::size_t line, const std::string& what) {
    return "ir::parse_symbolic: sizes line " + std::to_string(line) + ": " + what;
}

/// Infix size expressions: sums of products of factors (numbers, s<k>, parenthesized).
class size_expr_parser {
public:
    size_expr_parser(std::string_view text, std::size_t line, std::size_t num_symbols)
        : s_(text), line_(line), n_(num_symbols) {}

    size_expr parse() {
        size_expr e;
        sum(e.program);
        skip();
        if (i_ != s_.size()) fail("unexpected '" + std::string(s_.substr(i_)) + "' in the expression");
        return e;
    }

private:
    [[noreturn]] void fail(const std::string& what) const { graft::detail::fail(size_error(line_, what)); }
    void skip() {
        while (i_ < s_.size() && s_[i_] == ' ') ++i_;
    }
    bool accept(char c) {
        skip();
        if (i_ < s_.size() && s_[i_] == c) {
            ++i_;
            return true;
        }
        return false;
    }
    void sum(std::vector<size_term>& out) {
        product(out);
        for (;;) {
            if (accept('+')) {
                product(out);
                out.push_back({size_term::op::add, 0, 0});
            } else if (accept('-')) {
                product(out);
                out.push_back({size_term::op::sub, 0, 0});
            } else {
                return;
            }
        }
    }
    void product(std::vector<size_term>& out) {
        factor(out);
        for (;;) {
            size_term::op k;
            if (accept('*')) k = size_term::op::mul;
            else if (accept('/')) k = size_term::op::div;
            else if (accept('%')) k = size_term::op::mod;
            else return;
            factor(out);
            out.push_back({k, 0, 0});
        }
    }
    void factor(std::vector<size_term>& out) {
        if (++depth_ > 64) fail("the expression nests too deeply");
        skip();
        if (accept('(')) {
            sum(out);
            if (!accept(')')) fail("expected ')'");
        } else if (i_ < s_.size() && s_[i_] == 's') {
            ++i_;
            const std::size_t start = i_;
            while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
            std::size_t k = 0;
            const auto r = std::from_chars(s_.data() + start, s_.data() + i_, k);
            if (start == i_ || r.ec != std::errc{} || k >= n_) fail("unknown symbol s" + std::string(s_.substr(start, i_ - start)));
            out.push_back({size_term::op::symbol, 0, k});
        } else {
            const std::size_t start = i_;
            while (i_ < s_.size() && ((s_[i_] >= '0' && s_[i_] <= '9') || s_[i_] == '.' || s_[i_] == 'e' ||
                                      s_[i_] == 'E' || ((s_[i_] == '-' || s_[i_] == '+') && i_ > start &&
                                                        (s_[i_ - 1] == 'e' || s_[i_ - 1] == 'E'))))
                ++i_;
            double v = 0;
            const auto r = std::from_chars(s_.data() + start, s_.data() + i_, v);
            if (start == i_ || r.ec != std::errc{} || r.ptr != s_.data() + i_ || !std::isfinite(v))
                fail("expected a number, a symbol or '(' at '" + std::string(s_.substr(start)) + "'");
            out.push_back({size_term::op::constant, v, 0});
        }
        --depth_;
    }

    std::string_view s_;
    std::size_t i_ = 0, line_, n_;
    int depth_ = 0;
};

[[nodiscard]] inline std::string_view trim(std::string_view t) {
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t' || t.front() == '\r')) t.remove_prefix(1);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t' || t.back() == '\r')) t.remove_suffix(1);
    return t;
}

[[nodiscard]] inline bool read_index(std::string_view t, std::size_t& v) {
    const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
    return !t.empty() && r.ec == std::errc{} && r.ptr == t.data() + t.size();
}

}  // namespace detail

GRAFT_INLINE std::string to_string(const Graph& g, const symbolic_sizes& sizes) {
    std::ostringstream os;
    os << g;
    if (sizes.symbols.empty() && sizes.patches.empty()) return os.str();
    graft::detail::check(sizes.traced.size() == sizes.symbols.size(), "ir::to_string: the symbolic sizes have ",
                         sizes.symbols.size(), " symbols and ", sizes.traced.size(), " traced values");
    os << "sizes:\n";
    for (std::size_t k = 0; k < sizes.symbols.size(); ++k) {
        const size_symbol& s = sizes.symbols[k];
        os << "  s" << k << " = ";
        if (s.context) {
            os << "forward(" << s.input << ')';
        } else {
            graft::detail::check(s.input < g.inputs().size(), "ir::to_string: symbol s", k, " reads input ", s.input,
                                 " of a graph with ", g.inputs().size(), " inputs");
            os << '%' << g.inputs()[s.input]->name();
        }
        os << ".size(" << s.dim << ") = " << sizes.traced[k] << '\n';
    }
    for (const size_patch& p : sizes.patches) {
        graft::detail::check(p.node != nullptr && !p.node->outputs().empty(), "ir::to_string: a ",
                             p.node ? std::string(p.node->kind().name) : std::string("null"),
                             " node with computed sizes has no output to name it by");
        os << "  %" << p.node->outputs()[0]->name() << '.' << p.attr;
        if (p.index >= 0) os << '[' << p.index << ']';
        os << " = " << p.expr.str() << '\n';
    }
    return os.str();
}

GRAFT_INLINE symbolic_graph parse_symbolic(std::string_view text) {
    // The section starts at a line "sizes:" (string attributes print newlines escaped).
    std::size_t at = std::string_view::npos;
    for (std::size_t pos = 0; pos < text.size();) {
        const std::size_t eol = std::min(text.find('\n', pos), text.size());
        if (detail::trim(text.substr(pos, eol - pos)) == "sizes:") {
            at = pos;
            break;
        }
        pos = eol + 1;
    }
    symbolic_graph r;
    r.graph = parse(text.substr(0, at));
    if (at == std::string_view::npos) return r;
    std::size_t line = 0;  // the graph's lines, then the section's
    for (std::size_t k = 0; k < at; ++k) line += text[k] == '\n';
    ++line;  // "sizes:"
    std::map<std::string, const Value*> values;
    for (const Value* v : r.graph->inputs()) values.emplace(v->name(), v);
    for (const Node* n : r.graph->block()->nodes())
        for (const Value* v : n->outputs()) values.emplace(v->name(), v);
    symbolic_sizes& sz = r.sizes;
    bool patches_started = false;
    std::size_t pos = text.find('\n', at);
    pos = pos == std::string_view::npos ? text.size() : pos + 1;
    while (pos < text.size()) {
        const std::size_t eol = std::min(text.find('\n', pos), text.size());
        const std::string_view ln = detail::trim(text.substr(pos, eol - pos));
        pos = eol + 1;
        ++line;
        if (ln.empty()) continue;
        const auto fail = [&](const std::string& what) { graft::detail::fail(detail::size_error(line, what)); };
        const std::size_t eq = ln.find(" = ");
        if (eq == std::string_view::npos) fail("expected 'name = ...'");
        const std::string_view lhs = detail::trim(ln.substr(0, eq)), rhs = detail::trim(ln.substr(eq + 3));
        if (!lhs.empty() && lhs[0] == 's') {
            // s<k> = %input.size(d) = value, or s<k> = forward(j).size(d) = value
            if (patches_started) fail("symbols come before the computed attributes");
            std::size_t k = 0;
            if (!detail::read_index(lhs.substr(1), k) || k != sz.symbols.size())
                fail("expected symbol s" + std::to_string(sz.symbols.size()) + ", got '" + std::string(lhs) + "'");
            const std::size_t eq2 = rhs.find(" = ");
            const std::size_t dot = rhs.find(".size(");
            if (eq2 == std::string_view::npos || dot == std::string_view::npos || dot > eq2 || rhs[eq2 - 1] != ')')
                fail("expected 's" + std::to_string(k) + " = %input.size(d) = value'");
            const std::string_view src = rhs.substr(0, dot);
            std::size_t d = 0;
            if (!detail::read_index(rhs.substr(dot + 6, eq2 - 1 - (dot + 6)), d)) fail("expected a dimension in size(...)");
            std::int64_t value = 0;
            const std::string_view vt = detail::trim(rhs.substr(eq2 + 3));
            const auto vr = std::from_chars(vt.data(), vt.data() + vt.size(), value);
            if (vt.empty() || vr.ec != std::errc{} || vr.ptr != vt.data() + vt.size() || value < 0)
                fail("expected the symbol's traced size, a number >= 0");
            size_symbol sym;
            sym.dim = d;
            if (src.substr(0, 8) == "forward(" && !src.empty() && src.back() == ')') {
                sym.context = true;
                if (!detail::read_index(src.substr(8, src.size() - 9), sym.input)) fail("expected forward(<input>)");
            } else {
                if (src.empty() || src[0] != '%') fail("expected %input or forward(j) before .size(");
                const auto it = values.find(std::string(src.substr(1)));
                std::size_t j = 0;
                while (j < r.graph->inputs().size() && (it == values.end() || r.graph->inputs()[j] != it->second)) ++j;
                if (j == r.graph->inputs().size()) fail("'" + std::string(src) + "' is not an input of the graph");
                sym.input = j;
                const Type& t = r.graph->inputs()[j]->type();
                if (!t.is_tensor() || !t.tensor.sizes || d >= t.tensor.sizes->size())
                    fail("input " + std::string(src) + " has no known dimension " + std::to_string(d));
                const auto& declared = (*t.tensor.sizes)[d];
                if (declared && *declared != value)
                    fail("input " + std::string(src) + " has size " + std::to_string(*declared) + " at dimension " +
                         std::to_string(d) + ", not " + std::to_string(value));
                sz.dims.emplace_back(j, d);
                sz.dim_symbols.push_back(k);
            }
            sz.symbols.push_back(sym);
            sz.traced.push_back(value);
            continue;
        }
        // %value.attr = expr, or %value.attr[i] = expr
        patches_started = true;
        if (lhs.empty() || lhs[0] != '%') fail("expected a symbol (s<k>) or a computed attribute (%value.attr)");
        const std::size_t dot = lhs.find('.');
        if (dot == std::string_view::npos) fail("expected %value.attr");
        const auto it = values.find(std::string(lhs.substr(1, dot - 1)));
        if (it == values.end() || it->second->node() == nullptr || it->second->node()->outputs()[0] != it->second)
            fail("'" + std::string(lhs.substr(0, dot)) + "' is not the first output of a node of the graph");
        const Node* n = it->second->node();
        std::string_view attr = lhs.substr(dot + 1);
        std::ptrdiff_t index = -1;
        if (!attr.empty() && attr.back() == ']') {
            const std::size_t open = attr.find('[');
            std::size_t e = 0;
            if (open == std::string_view::npos || !detail::read_index(attr.substr(open + 1, attr.size() - open - 2), e))
                fail("expected attr[index]");
            index = static_cast<std::ptrdiff_t>(e);
            attr = attr.substr(0, open);
        }
        const std::string name(attr);
        if (!n->has_attr(name)) fail("the " + std::string(n->kind().name) + " node has no attribute '" + name + "'");
        const attribute& a = n->attr(name);
        double have = 0;
        if (const auto* list = std::get_if<std::vector<std::int64_t>>(&a)) {
            if (index < 0 || static_cast<std::size_t>(index) >= list->size())
                fail("attribute '" + name + "' is a list of " + std::to_string(list->size()) + ": name an element");
            have = static_cast<double>((*list)[static_cast<std::size_t>(index)]);
        } else if (const auto x = detail::number_of(a)) {
            if (index >= 0) fail("attribute '" + name + "' is a number, not a list");
            have = *x;
        } else {
            fail("attribute '" + name + "' is neither a number nor a list of ints");
        }
        size_patch p{n, name, index, detail::size_expr_parser(rhs, line, sz.symbols.size()).parse()};
        const double want = p.expr.eval(sz.traced);
        if (!(std::fabs(want - have) <= 1e-9 * std::max(1.0, std::fabs(have))))
            fail(std::string(lhs) + " = " + p.expr.str() + " is " + std::to_string(want) +
                 " at the traced sizes, but the graph has " + std::to_string(have));
        sz.patches.push_back(std::move(p));
    }
    return r;
}

}  // namespace graft::ir
