#pragma once
// Definitions for graft/autograd/einsum.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/autograd/einsum.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "graft/autograd/functions.hpp"
#include "graft/autograd/tensor_methods.hpp"

namespace graft {

namespace detail {

[[nodiscard]] inline bool einsum_letter(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/// Sums t over the subscripts of `subs` not in `keep`; returns the remaining subscripts.
[[nodiscard]] inline std::string einsum_sum_out(Tensor& t, const std::string& subs, const std::string& keep) {
    int_list dims;
    std::string rest;
    for (std::size_t i = 0; i < subs.size(); ++i) {
        if (keep.find(subs[i]) == std::string::npos) dims.push_back(static_cast<std::int64_t>(i));
        else rest += subs[i];
    }
    if (!dims.empty()) t = graft::sum(t, dims, false);
    return rest;
}

/// t (with subscripts `subs`) permuted to the order of `order` (same letters).
[[nodiscard]] inline Tensor einsum_permute(const Tensor& t, const std::string& subs, const std::string& order) {
    int_list perm;
    bool identity = true;
    for (std::size_t i = 0; i < order.size(); ++i) {
        const auto p = static_cast<std::int64_t>(subs.find(order[i]));
        perm.push_back(p);
        identity = identity && p == static_cast<std::int64_t>(i);
    }
    return identity ? t : t.permute(perm);
}

}  // namespace detail

GRAFT_INLINE Tensor einsum(std::string_view equation, const std::vector<Tensor>& operands) {
    using graft::detail::check;
    std::string eq;
    for (char c : equation)
        if (c != ' ') eq += c;
    check(eq.find("...") == std::string::npos, "einsum: ellipsis ('...') is not implemented in graft's einsum (",
          equation, "); write the dimensions out");
    const auto arrow = eq.find("->");
    const bool explicit_out = arrow != std::string::npos;
    const std::string lhs = eq.substr(0, arrow);
    std::vector<std::string> ins(1);
    for (char c : lhs) {
        if (c == ',') {
            ins.emplace_back();
            continue;
        }
        check(graft::detail::einsum_letter(c), "einsum: invalid subscript '", std::string(1, c), "' in equation '",
              equation, "': subscripts are letters a-z and A-Z");
        ins.back() += c;
    }
    check(ins.size() <= 2, "einsum: ", ins.size(), " operands are not implemented in graft's einsum (one or two); "
          "split the contraction into two-operand einsums");
    check(ins.size() == operands.size(), "einsum: the equation '", equation, "' has ", ins.size(),
          " operand(s) but ", operands.size(), " tensor(s) were given");
    std::array<std::int64_t, 128> size_of{};
    std::array<int, 128> count{};
    size_of.fill(-1);
    for (std::size_t k = 0; k < ins.size(); ++k) {
        const Tensor& t = operands[k];
        check(t.defined(), "einsum: operand ", k, " is undefined");
        check(static_cast<std::int64_t>(ins[k].size()) == t.dim(), "einsum: the number of subscripts in the equation (",
              ins[k].size(), ") does not match the number of dimensions (", t.dim(), ") for operand ", k);
        for (std::size_t i = 0; i < ins[k].size(); ++i) {
            const auto c = static_cast<unsigned char>(ins[k][i]);
            check(ins[k].find(ins[k][i]) == i, "einsum: subscript '", std::string(1, ins[k][i]), "' repeated in operand ",
                  k, " (a diagonal) is not implemented in graft's einsum");
            ++count[c];
            const std::int64_t n = t.size(static_cast<std::int64_t>(i));
            check(size_of[c] < 0 || size_of[c] == n, "einsum: subscript '", std::string(1, ins[k][i]),
                  "' has size ", n, " for operand ", k, " which does not match the previously seen size ", size_of[c]);
            size_of[c] = n;
        }
    }
    std::string out;
    if (explicit_out) {
        for (char c : eq.substr(arrow + 2)) {
            check(graft::detail::einsum_letter(c), "einsum: invalid subscript '", std::string(1, c),
                  "' in the output of '", equation, "'");
            check(out.find(c) == std::string::npos, "einsum: output subscript '", std::string(1, c),
                  "' appears more than once in the output");
            check(count[static_cast<unsigned char>(c)] > 0, "einsum: output subscript '", std::string(1, c),
                  "' does not appear in the equation for any input operand");
            out += c;
        }
    } else {
        for (int c = 0; c < 128; ++c)
            if (count[static_cast<std::size_t>(c)] == 1) out += static_cast<char>(c);
    }
    check(eq.find("->") == eq.rfind("->") && (!explicit_out || lhs.find('-') == std::string::npos),
          "einsum: malformed equation '", equation, "'");

    if (ins.size() == 1) {
        Tensor t = operands[0];
        const std::string rest = graft::detail::einsum_sum_out(t, ins[0], out);
        return graft::detail::einsum_permute(t, rest, out);
    }
    // Two operands: letters only one side has and the output doesn't are summed first.
    const std::string &sa = ins[0], &sb = ins[1];
    const auto in = [](const std::string& s, char c) { return s.find(c) != std::string::npos; };
    Tensor a = operands[0], b = operands[1];
    std::string keep_a, keep_b;
    for (char c : sa)
        if (in(out, c) || in(sb, c)) keep_a += c;
    for (char c : sb)
        if (in(out, c) || in(sa, c)) keep_b += c;
    const std::string ra = graft::detail::einsum_sum_out(a, sa, keep_a);
    const std::string rb = graft::detail::einsum_sum_out(b, sb, keep_b);
    // batch: both and out; contracted: both, not out; free: one side and out.
    std::string batch, contracted, free_a, free_b;
    for (char c : ra) {
        if (in(rb, c)) (in(out, c) ? batch : contracted) += c;
        else free_a += c;
    }
    for (char c : rb)
        if (!in(ra, c)) free_b += c;
    const auto prod = [&](const std::string& s) {
        std::int64_t p = 1;
        for (char c : s) p *= size_of[static_cast<unsigned char>(c)];
        return p;
    };
    const std::int64_t nb = prod(batch), m = prod(free_a), kk = prod(contracted), n = prod(free_b);
    const Tensor a3 = graft::detail::einsum_permute(a, ra, batch + free_a + contracted).reshape({nb, m, kk});
    const Tensor b3 = graft::detail::einsum_permute(b, rb, batch + contracted + free_b).reshape({nb, kk, n});
    int_list sizes;
    const std::string order = batch + free_a + free_b;
    for (char c : order) sizes.push_back(size_of[static_cast<unsigned char>(c)]);
    const Tensor r = matmul(a3, b3).reshape(sizes);
    return graft::detail::einsum_permute(r, order, out);
}

}  // namespace graft
