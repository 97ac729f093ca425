// einsum for one and two operands (issue 16): each common contraction against a scalar
// reference loop over its letters, gradcheck / gradgradcheck, the implicit output form,
// errors for malformed equations and the cases graft does not implement, and capture.
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <graft/graft.hpp>

#include "grad_test_common.hpp"

using namespace graft;
using gt::leaf;
using autograd::gradcheck;
using autograd::gradgradcheck;
using autograd::tensor_list;
using Catch::Matchers::Contains;

namespace {

/// The einsum of "A,B->O" by brute force: every assignment of values to the letters, the
/// product of the two elements added to the output element.
std::vector<double> reference(const std::string& sa, const Tensor& a, const std::string& sb, const Tensor& b,
                              const std::string& so) {
    std::map<char, std::int64_t> size;
    for (std::size_t i = 0; i < sa.size(); ++i) size[sa[i]] = a.size(static_cast<std::int64_t>(i));
    for (std::size_t i = 0; i < sb.size(); ++i) size[sb[i]] = b.size(static_cast<std::int64_t>(i));
    std::string letters;
    for (const auto& [c, n] : size) letters += c;
    const auto av = a.contiguous().to_vector<double>();
    const auto bv = b.defined() ? b.contiguous().to_vector<double>() : std::vector<double>{};
    std::int64_t out_n = 1;
    for (char c : so) out_n *= size[c];
    std::vector<double> out(static_cast<std::size_t>(out_n), 0.0);
    std::map<char, std::int64_t> v;
    for (char c : letters) v[c] = 0;
    const auto flat = [&](const std::string& s) {
        std::int64_t f = 0;
        for (char c : s) f = f * size[c] + v[c];
        return static_cast<std::size_t>(f);
    };
    while (true) {
        const double x = av[flat(sa)] * (b.defined() ? bv[flat(sb)] : 1.0);
        out[flat(so)] += x;
        std::size_t k = letters.size();
        while (k > 0) {
            --k;
            if (++v[letters[k]] < size[letters[k]]) break;
            v[letters[k]] = 0;
            if (k == 0) return out;
        }
        if (letters.empty()) return out;
    }
}

bool close(const std::vector<double>& a, const std::vector<double>& b, double tol = 1e-12) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::abs(a[i] - b[i]) > tol * (1.0 + std::abs(b[i]))) return false;
    return true;
}

}  // namespace

TEST_CASE("einsum: two-operand contractions against a reference loop", "[ops][einsum]") {
    struct case_ {
        std::string a, b, out;
        int_list sa, sb;
    };
    const std::vector<case_> cases{
        {"ij", "jk", "ik", {2, 3}, {3, 4}},        {"bij", "bjk", "bik", {2, 3, 2}, {2, 2, 4}},
        {"ij", "ij", "", {2, 3}, {2, 3}},          {"i", "j", "ij", {3}, {4}},
        {"bi", "bi", "b", {3, 4}, {3, 4}},         {"ij", "kj", "ik", {2, 3}, {4, 3}},
        {"ij", "jk", "ki", {2, 3}, {3, 4}},        {"bij", "bjk", "kbi", {2, 3, 2}, {2, 2, 4}},
        {"ij", "j", "i", {3, 2}, {2}},             {"ij", "jk", "i", {2, 3}, {3, 4}},
        {"abc", "cd", "bd", {2, 3, 2}, {2, 3}},    {"ij", "ij", "ij", {2, 3}, {2, 3}},
    };
    std::uint64_t seed = 1;
    for (const auto& c : cases) {
        const std::string eq = c.a + "," + c.b + "->" + c.out;
        INFO(eq);
        const Tensor a = leaf(c.sa, seed++).detach(), b = leaf(c.sb, seed++).detach();
        const Tensor r = einsum(eq, a, b);
        CHECK(close(r.contiguous().to_vector<double>(), reference(c.a, a, c.b, b, c.out)));
        CHECK(r.dim() == static_cast<std::int64_t>(c.out.size()));
    }
    // Spaces are ignored, the vector form is PyTorch C++'s, the implicit output is the
    // letters that appear once, in alphabetical order ("ij,jk" is "ij,jk->ik"; "ba,ac" is "->bc").
    const Tensor a = leaf({2, 3}, 50).detach(), b = leaf({3, 4}, 51).detach();
    CHECK(close(einsum(" ij , jk -> ik ", {a, b}).to_vector<double>(), reference("ij", a, "jk", b, "ik")));
    CHECK(close(einsum("ij,jk", a, b).to_vector<double>(), reference("ij", a, "jk", b, "ik")));
    const Tensor c = leaf({2, 4}, 52).detach();
    CHECK(einsum("ba,ac", a.t(), c).sizes() == int_list{3, 4});
    CHECK(close(einsum("ba,ac", a.t(), c).contiguous().to_vector<double>(), reference("ba", a.t(), "ac", c, "bc")));
}

TEST_CASE("einsum: one operand (transpose, sums)", "[ops][einsum]") {
    const Tensor x = leaf({2, 3, 4}, 60).detach();
    CHECK(close(einsum("ijk->kji", x).contiguous().to_vector<double>(), reference("ijk", x, "", Tensor{}, "kji")));
    CHECK(close(einsum("ijk->j", x).to_vector<double>(), reference("ijk", x, "", Tensor{}, "j")));
    CHECK(close(einsum("ijk->", x).to_vector<double>(), reference("ijk", x, "", Tensor{}, "")));
    const Tensor m = leaf({2, 3}, 61).detach();
    CHECK(close(einsum("ij->ji", m).contiguous().to_vector<double>(), m.t().contiguous().to_vector<double>()));
    // Implicit output in alphabetical order: "ji" is "ji->ij", a transpose.
    CHECK(einsum("ji", m).sizes() == int_list{3, 2});
    CHECK(close(einsum("ji", m).contiguous().to_vector<double>(), m.t().contiguous().to_vector<double>()));
}

TEST_CASE("einsum: gradcheck and gradgradcheck", "[ops][einsum][autograd]") {
    for (const char* eq : {"ij,jk->ik", "bij,bjk->bik", "ij,ij->", "i,j->ij", "bi,bi->b", "ij,kj->ik", "ij,jk->i"}) {
        INFO(eq);
        const std::string s(eq);
        const auto comma = s.find(','), arrow = s.find("->");
        const std::string sa = s.substr(0, comma), sb = s.substr(comma + 1, arrow - comma - 1);
        std::map<char, std::int64_t> size{{'i', 2}, {'j', 3}, {'k', 2}, {'b', 2}};
        int_list za, zb;
        for (char c : sa) za.push_back(size[c]);
        for (char c : sb) zb.push_back(size[c]);
        const auto f = [&](const tensor_list& in) { return tensor_list{einsum(eq, in[0], in[1])}; };
        CHECK(gradcheck(f, {leaf(za, 70), leaf(zb, 71)}));
        CHECK(gradgradcheck(f, {leaf(za, 72), leaf(zb, 73)}));
    }
    const auto t = [](const tensor_list& in) { return tensor_list{einsum("ijk->kj", in[0])}; };
    CHECK(gradcheck(t, {leaf({2, 3, 2}, 74)}));
}

TEST_CASE("einsum: errors", "[ops][einsum][errors]") {
    const Tensor a = zeros({2, 3}, dtype::float64), b = zeros({3, 4}, dtype::float64), c = zeros({4}, dtype::float64);
    REQUIRE_THROWS_WITH(einsum("ij,jk,k->i", {a, b, c}), Contains("3 operands are not implemented"));
    REQUIRE_THROWS_WITH(einsum("...j,jk->...k", a, b), Contains("ellipsis ('...') is not implemented"));
    REQUIRE_THROWS_WITH(einsum("ii->i", zeros({2, 2})), Contains("repeated in operand 0") && Contains("not implemented"));
    REQUIRE_THROWS_WITH(einsum("ij,jk->ii", a, b), Contains("output subscript 'i' appears more than once"));
    REQUIRE_THROWS_WITH(einsum("ij,jk->iz", a, b), Contains("output subscript 'z' does not appear"));
    REQUIRE_THROWS_WITH(einsum("ij,jk->ik", a, a), Contains("subscript 'j' has size 2 for operand 1") &&
                                                       Contains("previously seen size 3"));
    REQUIRE_THROWS_WITH(einsum("ijk,jk->ik", a, b), Contains("does not match the number of dimensions (2) for operand 0"));
    REQUIRE_THROWS_WITH(einsum("ij,jk->ik", {a}), Contains("has 2 operand(s) but 1 tensor(s)"));
    REQUIRE_THROWS_WITH(einsum("i1,jk->ik", a, b), Contains("invalid subscript '1'"));
    REQUIRE_THROWS_WITH(einsum("ij,jk->i-k", a, b), Contains("invalid subscript '-'"));
    REQUIRE_THROWS_WITH(einsum("ij,jk->ik", a, Tensor{}), Contains("operand 1 is undefined"));
}

TEST_CASE("einsum under capture::aot: composed ops, gradients as eager", "[capture][einsum]") {
    const auto f = [](Tensor x, Tensor w) { return einsum("bij,bjk->bik", x, w).sum() + einsum("bi,bi->b", x.sum({2}), x.sum({2})).sum(); };
    manual_seed(80);
    const Tensor x = randn({2, 3, 4}, dtype::float64).requires_grad_(), w = randn({2, 4, 2}, dtype::float64).requires_grad_();
    auto a = capture::aot(f, {x, w});
    Tensor eager = f(x, w);
    const auto want = autograd::grad({eager}, {x, w});
    Tensor out = a({x, w})[0];
    CHECK(allclose(out.detach(), eager.detach(), 1e-12, 1e-12));
    const auto got = autograd::grad({out}, {x, w});
    CHECK(allclose(got[0], want[0], 1e-12, 1e-12));
    CHECK(allclose(got[1], want[1], 1e-12, 1e-12));
}
