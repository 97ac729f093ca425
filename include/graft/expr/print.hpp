#pragma once
// Printing graphs, at compile time (`name_v<G>`, `listing_v<G>`: std::string_view
// into static constexpr char arrays) and at run time (`to_string`).
//   name_v:    the outputs as nested expressions: "mul(tanh(add(mul(%0, %1), #0)), sigmoid(%0))";
//              several outputs print as "(e0, e1)". %i is input i, #k literal k,
//              numbers are compile-time constants, `numel` the domain's element count;
//              reductions print as "sum(...)" / "mean(...)".
//   listing_v: one instruction per line in SSA form ("%2 = mul(%0, %1)"), then
//              "return %7" - compact for graphs with much sharing (gradients).
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graft/expr/graph.hpp"
#include "graft/expr/program.hpp"

namespace graft::expr {

namespace detail {

/// Minimal constexpr string builder (std::vector<char>: g++ 12 mishandles constexpr std::string growth).
struct text {
    std::vector<char> chars;
    constexpr text& operator+=(char c) {
        chars.push_back(c);
        return *this;
    }
    constexpr text& operator+=(std::string_view v) {
        for (char c : v) chars.push_back(c);
        return *this;
    }
    [[nodiscard]] constexpr std::size_t size() const { return chars.size(); }
};

constexpr void append_uint(text& s, std::uint64_t v) {
    char buf[24]{};
    std::size_t n = 0;
    do {
        buf[n++] = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0) s += buf[--n];
}

/// Decimal form of a double: integers exactly, other values with up to 17 significant digits.
constexpr void append_double(text& s, double v) {
    if (v != v) {
        s += "nan";
        return;
    }
    if (v < 0 || (v == 0 && std::bit_cast<std::uint64_t>(v) >> 63 != 0)) {
        s += '-';
        v = -v;
    }
    if (v > 1.7e308) {
        s += "inf";
        return;
    }
    if (v >= 1e17) {  // large: d.ddddde+XX
        int e = 0;
        while (v >= 10) {
            v /= 10;
            ++e;
        }
        append_double(s, v);
        s += "e+";
        append_uint(s, static_cast<std::uint64_t>(e));
        return;
    }
    const auto ip = static_cast<std::uint64_t>(v);
    append_uint(s, ip);
    double frac = v - static_cast<double>(ip);
    if (frac == 0) return;
    s += '.';
    int digits = ip == 0 ? 0 : 1;
    for (std::uint64_t t = ip; t >= 10; t /= 10) ++digits;
    bool leading = ip == 0;
    for (int k = 0; k < 40 && frac != 0 && digits < 17; ++k) {
        frac *= 10;
        const auto d = static_cast<int>(frac);
        s += static_cast<char>('0' + d);
        frac -= d;
        if (d != 0) leading = false;
        if (!leading) ++digits;
    }
    while (s.chars.back() == '0') s.chars.pop_back();
}

constexpr void append_leaf(text& s, const program& p, std::size_t id) {
    const instr_data& d = p.nodes[id];
    switch (d.kind) {
        case instr_kind::input:
            s += '%';
            append_uint(s, d.index);
            return;
        case instr_kind::literal:
            s += '#';
            append_uint(s, d.index);
            return;
        case instr_kind::constant: append_double(s, d.value); return;
        case instr_kind::numel: s += "numel"; return;
        case instr_kind::apply: return;
    }
}

constexpr void append_expr(text& s, const program& p, std::size_t id) {
    const instr_data& d = p.nodes[id];
    if (d.kind != instr_kind::apply) {
        append_leaf(s, p, id);
        return;
    }
    s += p.op_name(id);
    s += '(';
    for (std::size_t k = 0; k < d.nargs; ++k) {
        if (k != 0) s += ", ";
        append_expr(s, p, d.args[k]);
    }
    s += ')';
}

[[nodiscard]] constexpr text render_name(const program& p) {
    text s;
    if (p.outs.size() != 1) s += '(';
    for (std::size_t j = 0; j < p.outs.size(); ++j) {
        if (j != 0) s += ", ";
        append_expr(s, p, p.outs[j]);
    }
    if (p.outs.size() != 1) s += ')';
    return s;
}

constexpr void append_ssa_name(text& s, const program& p, std::size_t id) {
    if (p.nodes[id].kind == instr_kind::apply) {
        s += 'v';
        append_uint(s, id);
    } else {
        append_leaf(s, p, id);
    }
}

[[nodiscard]] constexpr text render_listing(const program& p) {
    text s;
    for (std::size_t i = 0; i < p.nodes.size(); ++i) {
        const instr_data& d = p.nodes[i];
        if (d.kind != instr_kind::apply) continue;
        s += 'v';
        append_uint(s, i);
        s += " = ";
        s += p.op_name(i);
        s += '(';
        for (std::size_t k = 0; k < d.nargs; ++k) {
            if (k != 0) s += ", ";
            append_ssa_name(s, p, d.args[k]);
        }
        s += ")\n";
    }
    s += "return ";
    for (std::size_t j = 0; j < p.outs.size(); ++j) {
        if (j != 0) s += ", ";
        append_ssa_name(s, p, p.outs[j]);
    }
    return s;
}

template <class G, bool Listing>
struct printed {
    static constexpr text render() {
        const program p = encode<G>();
        if constexpr (Listing) return render_listing(p);
        else return render_name(p);
    }
    static constexpr std::size_t size = render().size();
    static constexpr std::array<char, size + 1> chars = [] {
        std::array<char, size + 1> a{};
        const text s = render();
        for (std::size_t i = 0; i < size; ++i) a[i] = s.chars[i];
        return a;
    }();
    static constexpr std::string_view view{chars.data(), size};
};

}  // namespace detail

/// The outputs of graph G as nested expressions (a constant expression).
template <class G>
inline constexpr std::string_view name_v = detail::printed<G, false>::view;

/// Graph G in SSA form, one apply instruction per line (a constant expression).
template <class G>
inline constexpr std::string_view listing_v = detail::printed<G, true>::view;

/// Run-time copies of name_v / listing_v.
template <class G>
[[nodiscard]] std::string to_string(const traced<G>&) {
    return std::string(name_v<G>);
}
template <class G>
[[nodiscard]] std::string to_listing(const traced<G>&) {
    return std::string(listing_v<G>);
}

}  // namespace graft::expr
