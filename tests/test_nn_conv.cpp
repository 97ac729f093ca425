// graft::nn::functional convolution, pooling, normalization, embedding and dropout (issue 16):
// unfold / fold (im2col / col2im), conv2d, max_pool2d, avg_pool2d, layer_norm, embedding,
// dropout against scalar reference loops written here from PyTorch's documented definitions,
// gradcheck / gradgradcheck in float64, bad input, and the graph layers against eager.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <graft/graft.hpp>

#include "grad_test_common.hpp"

using namespace graft;
using gt::leaf;
using gt::check_grads;
namespace F = graft::nn::functional;
using autograd::gradcheck;
using autograd::gradgradcheck;
using autograd::tensor_list;

namespace {

using i64 = std::int64_t;

std::vector<double> dvec(const Tensor& t) { return t.detach().to(dtype::float64).to_vector<double>(); }

void check_error(const std::function<void()>& f, const std::string& part) {
    try {
        f();
        FAIL("no graft::error; expected one containing: " << part);
    } catch (const graft::error& e) {
        INFO(e.what());
        CHECK(std::string(e.what()).find(part) != std::string::npos);
    }
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        INFO("element " << i << ": " << got[i] << " vs " << want[i]);
        if (std::isnan(want[i])) {
            CHECK(std::isnan(got[i]));
        } else {
            CHECK(std::abs(got[i] - want[i]) <= tol * (1.0 + std::abs(want[i])));
        }
    }
}

struct geom {
    i64 kh, kw, dh = 1, dw = 1, ph = 0, pw = 0, sh = 1, sw = 1;
};

i64 blocks(i64 size, i64 k, i64 d, i64 p, i64 s) { return (size + 2 * p - d * (k - 1) - 1) / s + 1; }

/// im2col by definition: out[n][(c kh + i) kw + j][y ow + x] = in[n][c][y sh - ph + i dh][x sw - pw + j dw] or 0.
std::vector<double> ref_unfold(const std::vector<double>& in, i64 n, i64 c, i64 h, i64 w, const geom& g) {
    const i64 oh = blocks(h, g.kh, g.dh, g.ph, g.sh), ow = blocks(w, g.kw, g.dw, g.pw, g.sw);
    std::vector<double> out;
    for (i64 b = 0; b < n; ++b)
        for (i64 ch = 0; ch < c; ++ch)
            for (i64 i = 0; i < g.kh; ++i)
                for (i64 j = 0; j < g.kw; ++j)
                    for (i64 y = 0; y < oh; ++y)
                        for (i64 x = 0; x < ow; ++x) {
                            const i64 iy = y * g.sh - g.ph + i * g.dh, ix = x * g.sw - g.pw + j * g.dw;
                            const bool inside = iy >= 0 && iy < h && ix >= 0 && ix < w;
                            out.push_back(inside ? in[static_cast<std::size_t>(((b * c + ch) * h + iy) * w + ix)]
                                                 : 0.0);
                        }
    return out;
}

/// col2im by definition: every column value added at the input position it was taken from.
std::vector<double> ref_fold(const std::vector<double>& cols, i64 n, i64 c, i64 h, i64 w, const geom& g) {
    const i64 oh = blocks(h, g.kh, g.dh, g.ph, g.sh), ow = blocks(w, g.kw, g.dw, g.pw, g.sw);
    std::vector<double> out(static_cast<std::size_t>(n * c * h * w), 0.0);
    std::size_t k = 0;
    for (i64 b = 0; b < n; ++b)
        for (i64 ch = 0; ch < c; ++ch)
            for (i64 i = 0; i < g.kh; ++i)
                for (i64 j = 0; j < g.kw; ++j)
                    for (i64 y = 0; y < oh; ++y)
                        for (i64 x = 0; x < ow; ++x, ++k) {
                            const i64 iy = y * g.sh - g.ph + i * g.dh, ix = x * g.sw - g.pw + j * g.dw;
                            if (iy >= 0 && iy < h && ix >= 0 && ix < w)
                                out[static_cast<std::size_t>(((b * c + ch) * h + iy) * w + ix)] += cols[k];
                        }
    return out;
}

/// Direct convolution (cross-correlation) with separate top/bottom/left/right padding.
std::vector<double> ref_conv(const std::vector<double>& in, const std::vector<double>& wt,
                             const std::vector<double>& bias, i64 n, i64 c, i64 h, i64 w, i64 o, i64 kh, i64 kw, i64 sh,
                             i64 sw, i64 pt, i64 pb, i64 pl, i64 pr, i64 dh, i64 dw, i64 groups, i64& oh, i64& ow) {
    oh = (h + pt + pb - dh * (kh - 1) - 1) / sh + 1;
    ow = (w + pl + pr - dw * (kw - 1) - 1) / sw + 1;
    const i64 cg = c / groups, og = o / groups;
    std::vector<double> out;
    for (i64 b = 0; b < n; ++b)
        for (i64 oc = 0; oc < o; ++oc)
            for (i64 y = 0; y < oh; ++y)
                for (i64 x = 0; x < ow; ++x) {
                    double acc = bias.empty() ? 0.0 : bias[static_cast<std::size_t>(oc)];
                    const i64 grp = oc / og;
                    for (i64 ci = 0; ci < cg; ++ci)
                        for (i64 i = 0; i < kh; ++i)
                            for (i64 j = 0; j < kw; ++j) {
                                const i64 iy = y * sh - pt + i * dh, ix = x * sw - pl + j * dw;
                                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                                acc += in[static_cast<std::size_t>(((b * c + grp * cg + ci) * h + iy) * w + ix)] *
                                       wt[static_cast<std::size_t>(((oc * cg + ci) * kh + i) * kw + j)];
                            }
                    out.push_back(acc);
                }
    return out;
}

/// PyTorch's pooling output size (ceil_mode: the last window must start inside the input or
/// the left padding).
i64 pool_size(i64 size, i64 k, i64 s, i64 p, i64 d, bool ceil_mode) {
    const i64 num = size + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    i64 out = num / s + 1;
    if (ceil_mode && (out - 1) * s >= size + p) --out;
    return out;
}

/// Max pooling by definition: start from -inf, take a value when it is larger or NaN; the
/// argmax (first maximal tap in scan order) goes to `arg`.
std::vector<double> ref_max_pool(const std::vector<double>& in, i64 nc, i64 h, i64 w, i64 kh, i64 kw, i64 sh, i64 sw,
                                 i64 ph, i64 pw, i64 dh, i64 dw, bool ceil_mode, std::vector<i64>* arg = nullptr) {
    const i64 oh = pool_size(h, kh, sh, ph, dh, ceil_mode), ow = pool_size(w, kw, sw, pw, dw, ceil_mode);
    std::vector<double> out;
    for (i64 p = 0; p < nc; ++p)
        for (i64 y = 0; y < oh; ++y)
            for (i64 x = 0; x < ow; ++x) {
                double m = -std::numeric_limits<double>::infinity();
                i64 at = -1;
                for (i64 i = 0; i < kh; ++i)
                    for (i64 j = 0; j < kw; ++j) {
                        const i64 iy = y * sh - ph + i * dh, ix = x * sw - pw + j * dw;
                        if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                        const double v = in[static_cast<std::size_t>((p * h + iy) * w + ix)];
                        if (at < 0 || v > m || (std::isnan(v) && !std::isnan(m))) {
                            m = v;
                            at = (p * h + iy) * w + ix;
                        }
                    }
                out.push_back(m);
                if (arg) arg->push_back(at);
            }
    return out;
}

/// Average pooling by PyTorch's definition of the divisor.
std::vector<double> ref_avg_pool(const std::vector<double>& in, i64 nc, i64 h, i64 w, i64 kh, i64 kw, i64 sh, i64 sw,
                                 i64 ph, i64 pw, bool ceil_mode, bool include_pad, i64 divisor) {
    const i64 oh = pool_size(h, kh, sh, ph, 1, ceil_mode), ow = pool_size(w, kw, sw, pw, 1, ceil_mode);
    std::vector<double> out;
    for (i64 p = 0; p < nc; ++p)
        for (i64 y = 0; y < oh; ++y)
            for (i64 x = 0; x < ow; ++x) {
                i64 hs = y * sh - ph, ws = x * sw - pw;
                i64 he = std::min(hs + kh, h + ph), we = std::min(ws + kw, w + pw);
                const i64 full = (he - hs) * (we - ws);
                hs = std::max<i64>(hs, 0);
                ws = std::max<i64>(ws, 0);
                he = std::min(he, h);
                we = std::min(we, w);
                double s = 0.0;
                for (i64 iy = hs; iy < he; ++iy)
                    for (i64 ix = ws; ix < we; ++ix) s += in[static_cast<std::size_t>((p * h + iy) * w + ix)];
                const i64 d = divisor != 0 ? divisor : include_pad ? full : (he - hs) * (we - ws);
                out.push_back(s / static_cast<double>(d));
            }
    return out;
}

}  // namespace

// ---------------------------------------------------------------- unfold / fold

TEST_CASE("unfold and fold match the im2col / col2im definitions", "[nn][conv]") {
    struct cfg {
        i64 n, c, h, w;
        geom g;
    };
    const std::vector<cfg> cases = {
        {2, 3, 5, 4, {2, 2}},
        {1, 2, 6, 7, {3, 2, 1, 2, 1, 0, 2, 1}},
        {2, 1, 7, 5, {2, 3, 2, 1, 2, 1, 3, 2}},
        {1, 2, 3, 3, {1, 1, 1, 1, 1, 1, 1, 1}},
        {1, 1, 4, 4, {4, 4}},
    };
    std::uint64_t seed = 1;
    for (const auto& k : cases)
        for (dtype type : {dtype::float64, dtype::float32}) {
            const geom& g = k.g;
            INFO("input " << k.n << "x" << k.c << "x" << k.h << "x" << k.w << " kernel " << g.kh << "x" << g.kw);
            const Tensor x = leaf({k.n, k.c, k.h, k.w}, seed++, type).detach();
            const Tensor u = F::unfold(x, {g.kh, g.kw}, {g.dh, g.dw}, {g.ph, g.pw}, {g.sh, g.sw});
            const i64 l = blocks(k.h, g.kh, g.dh, g.ph, g.sh) * blocks(k.w, g.kw, g.dw, g.pw, g.sw);
            CHECK(u.sizes() == int_list{k.n, k.c * g.kh * g.kw, l});
            CHECK(u.type() == type);
            check_close(dvec(u), ref_unfold(dvec(x), k.n, k.c, k.h, k.w, g), 0.0);
            const Tensor cols = leaf(u.sizes(), seed++, type).detach();
            const Tensor f = F::fold(cols, {k.h, k.w}, {g.kh, g.kw}, {g.dh, g.dw}, {g.ph, g.pw}, {g.sh, g.sw});
            CHECK(f.sizes() == int_list{k.n, k.c, k.h, k.w});
            check_close(dvec(f), ref_fold(dvec(cols), k.n, k.c, k.h, k.w, g), type == dtype::float32 ? 1e-6 : 1e-14);
        }
    // Unbatched forms drop the batch dimension; a non-contiguous input gives the same patches.
    const Tensor x = leaf({2, 5, 4}, 99).detach();
    const Tensor u = F::unfold(x, 2, 1, 1, {2, 1});
    CHECK(u.dim() == 2);
    CHECK(allclose(u, F::unfold(x.unsqueeze(0), 2, 1, 1, {2, 1}).squeeze(0), 0.0, 0.0));
    CHECK(allclose(F::fold(u, {5, 4}, 2, 1, 1, {2, 1}), F::fold(u.unsqueeze(0), {5, 4}, 2, 1, 1, {2, 1}).squeeze(0),
                   0.0, 0.0));
    const Tensor xt = leaf({1, 1, 4, 5}, 98).detach().transpose(2, 3);
    CHECK(allclose(F::unfold(xt, 2), F::unfold(xt.contiguous(), 2), 0.0, 0.0));
    // fold is unfold's adjoint: <unfold(x), y> = <x, fold(y)>.
    const Tensor a = leaf({2, 2, 5, 6}, 97).detach();
    const Tensor ua = F::unfold(a, {3, 2}, {1, 2}, 1, 2);
    const Tensor y = leaf(ua.sizes(), 96).detach();
    CHECK((ua * y).sum().item<double>() ==
          Approx((a * F::fold(y, {5, 6}, {3, 2}, {1, 2}, 1, 2)).sum().item<double>()).epsilon(1e-12));
}

TEST_CASE("unfold and fold: gradients of every order", "[nn][conv]") {
    const Tensor x = leaf({1, 2, 4, 3}, 11);
    check_grads([](const tensor_list& in) { return tensor_list{F::unfold(in[0], {2, 2}, {1, 2}, 1, {2, 1})}; }, {x});
    const Tensor c = leaf({1, 4, 6}, 12);  // 1 channel of 2x2 blocks, 2x3 windows on a 3x4 image
    check_grads(
        [](const tensor_list& in) {
            return tensor_list{F::fold(in[0], {3, 4}, 2, 1, 0, 1) * F::fold(in[0], {3, 4}, 2)};
        },
        {c});
    // unfold's gradient is fold of the incoming gradient.
    const Tensor xg = leaf({1, 1, 4, 4}, 13);
    const Tensor g = leaf({1, 4, 4}, 14).detach();
    const auto grads = autograd::grad({F::unfold(xg, 2, 1, 0, 2)}, {xg}, {g});
    CHECK(allclose(grads[0], F::fold(g, 4, 2, 1, 0, 2), 1e-15, 0.0));
}

TEST_CASE("unfold and fold: bad input", "[nn][conv]") {
    const Tensor x = zeros({1, 2, 4, 4}, dtype::float64);
    check_error([&] { (void)F::unfold(zeros({4, 4}), 2); }, "unfold: Input Error: Only 3D or 4D");
    check_error(
        [&] {
            (void)F::unfold(zeros({1, 1, 4, 4}, dtype::int64), 2);
        },
        "unfold: expected a floating-point input");
    check_error([&] { (void)F::unfold(x, 0); }, "kernel size should be greater than zero");
    check_error([&] { (void)F::unfold(x, 2, 0); }, "dilation should be greater than zero");
    check_error([&] { (void)F::unfold(x, 2, 1, -1); }, "padding should be non-negative");
    check_error([&] { (void)F::unfold(x, 2, 1, 0, 0); }, "stride should be greater than zero");
    check_error([&] { (void)F::unfold(x, 5); }, "components must be at least one");
    check_error([&] { (void)F::unfold(x, {2, 3}, {1, 3}); }, "components must be at least one");
    check_error([&] { (void)F::unfold(Tensor{}, 2); }, "unfold");
    const Tensor c = zeros({1, 8, 9}, dtype::float64);
    check_error([&] { (void)F::fold(zeros({8}), 4, 2); }, "fold: Input Error");
    check_error([&] { (void)F::fold(c, 4, 3); }, "divisible by the product of kernel_size");
    check_error([&] { (void)F::fold(c, 5, 2); }, "calculated number of sliding blocks");
    check_error([&] { (void)F::fold(c, 0, 2); }, "output_size must be positive");
    check_error([&] { (void)graft::im2col(x, {2}, {1, 1}, {0, 0}, {1, 1}); }, "kernel_size equals to 2");
    check_error([&] { (void)graft::im2col(x, {i64{1} << 50, 2}, {1, 1}, {0, 0}, {1, 1}); }, "too large");
    check_error([&] { (void)graft::im2col(x, {2, 2}, {i64{1} << 62, 1}, {0, 0}, {1, 1}); }, "too large");
    // Objects stay usable after an error.
    CHECK(F::unfold(x, 2).sizes() == int_list{1, 8, 9});
    CHECK(F::fold(c, 4, 2).sizes() == int_list{1, 2, 4, 4});
}

TEST_CASE("im2col / col2im under capture::trace, aot and jit::script", "[nn][conv][capture][jit]") {
    const auto f = [](Tensor x, Tensor w) {
        const Tensor u = F::unfold(x * w, {2, 3}, 1, {1, 0}, {1, 2});
        return (F::fold(u * u, {x.size(2), x.size(3)}, {2, 3}, 1, {1, 0}, {1, 2}) * x).sum();
    };
    manual_seed(21);
    const Tensor x0 = randn({2, 2, 4, 5}, dtype::float64), w0 = randn({1, 2, 1, 1}, dtype::float64);
    auto cap = capture::trace(f, x0, w0);
    cap.graph().lint();
    const std::string text = ir::to_string(cap.graph());
    INFO(text);
    CHECK(text.find("im2col[") != std::string::npos);
    CHECK(text.find("col2im[") != std::string::npos);
    auto back = ir::parse(text);
    CHECK(ir::to_string(*back) == text);
    CHECK(
        allclose(std::get<Tensor>(ir::interpret(*back, std::vector<ir::ivalue>{x0, w0})[0]), f(x0, w0), 1e-12, 1e-12));

    const Tensor x = randn({2, 2, 4, 5}, dtype::float64).requires_grad_(),
                 w = randn({1, 2, 1, 1}, dtype::float64).requires_grad_();
    auto a = capture::aot(f, {x, w});
    a.forward->lint();
    a.backward->lint();
    CHECK(ir::to_string(*a.backward).find("col2im[") != std::string::npos);
    auto fn = jit::script(f);
    for (int i = 0; i < 3; ++i) {
        Tensor x2 = randn({2, 2, 4, 5}, dtype::float64).requires_grad_(),
               w2 = randn({1, 2, 1, 1}, dtype::float64).requires_grad_();
        Tensor eager = f(x2, w2);
        const auto want = autograd::grad({eager}, {x2, w2});
        Tensor out = a({x2, w2})[0];
        CHECK(allclose(out.detach(), eager.detach(), 1e-12, 1e-12));
        const auto got = autograd::grad({out}, {x2, w2});
        CHECK(allclose(got[0], want[0], 1e-12, 1e-12));
        CHECK(allclose(got[1], want[1], 1e-12, 1e-12));
        Tensor y = fn(x2, w2);
        CHECK(allclose(y.detach(), eager.detach(), 1e-12, 1e-12));
        const auto jg = autograd::grad({y}, {x2, w2});
        CHECK(allclose(jg[0], want[0], 1e-12, 1e-12));
        CHECK(allclose(jg[1], want[1], 1e-12, 1e-12));
    }
}

// ---------------------------------------------------------------- conv2d

TEST_CASE("conv2d matches a direct convolution loop", "[nn][conv]") {
    struct cfg {
        i64 n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw, groups;
        bool bias;
    };
    const std::vector<cfg> cases = {
        {2, 3, 7, 6, 4, 3, 2, 1, 1, 0, 0, 1, 1, 1, true},   // plain
        {2, 3, 7, 6, 4, 3, 2, 2, 1, 1, 0, 1, 2, 1, true},   // stride, padding, dilation
        {1, 4, 6, 6, 6, 3, 3, 1, 2, 1, 1, 1, 1, 2, true},   // groups = 2
        {2, 3, 5, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 3, false},  // depthwise, multiplier 2
        {1, 2, 5, 4, 2, 1, 1, 2, 2, 0, 0, 1, 1, 1, true},   // 1x1, strided
        {3, 1, 8, 8, 5, 3, 3, 2, 2, 1, 1, 2, 2, 1, true},   // dilated and strided
    };
    std::uint64_t seed = 100;
    for (const auto& k : cases)
        for (dtype type : {dtype::float64, dtype::float32}) {
            INFO("case c=" << k.c << " o=" << k.o << " groups=" << k.groups << " dtype " << type);
            const Tensor x = leaf({k.n, k.c, k.h, k.w}, seed++, type).detach();
            const Tensor wt = leaf({k.o, k.c / k.groups, k.kh, k.kw}, seed++, type).detach();
            const Tensor b = k.bias ? leaf({k.o}, seed++, type).detach() : Tensor{};
            const Tensor y = F::conv2d(x, wt, b, {k.sh, k.sw}, {k.ph, k.pw}, {k.dh, k.dw}, k.groups);
            i64 oh = 0, ow = 0;
            const auto want =
                ref_conv(dvec(x), dvec(wt), k.bias ? dvec(b) : std::vector<double>{}, k.n, k.c, k.h, k.w, k.o, k.kh,
                         k.kw, k.sh, k.sw, k.ph, k.ph, k.pw, k.pw, k.dh, k.dw, k.groups, oh, ow);
            CHECK(y.sizes() == int_list{k.n, k.o, oh, ow});
            CHECK(y.type() == type);
            check_close(dvec(y), want, type == dtype::float32 ? 1e-5 : 1e-13);
        }
}

TEST_CASE("conv2d: 'same' and 'valid' padding, unbatched input", "[nn][conv]") {
    const Tensor x = leaf({2, 2, 5, 6}, 31).detach();
    for (const auto& [kh, kw, dh, dw] : std::vector<std::array<i64, 4>>{{3, 3, 1, 1}, {4, 2, 1, 1}, {2, 3, 2, 1}}) {
        INFO("kernel " << kh << "x" << kw << " dilation " << dh << "x" << dw);
        const Tensor wt = leaf({3, 2, kh, kw}, 32).detach();
        const Tensor y = F::conv2d(x, wt, {}, 1, "same", {dh, dw});
        CHECK(y.sizes() == int_list{2, 3, 5, 6});
        // PyTorch's "same": total padding d (k - 1), the odd one at the bottom / right.
        const i64 th = dh * (kh - 1), tw = dw * (kw - 1);
        i64 oh = 0, ow = 0;
        const auto want = ref_conv(dvec(x), dvec(wt), {}, 2, 2, 5, 6, 3, kh, kw, 1, 1, th / 2, th - th / 2, tw / 2,
                                   tw - tw / 2, dh, dw, 1, oh, ow);
        check_close(dvec(y), want, 1e-13);
    }
    const Tensor wt = leaf({3, 2, 2, 3}, 33).detach();
    CHECK(allclose(F::conv2d(x, wt, {}, 1, "valid"), F::conv2d(x, wt), 0.0, 0.0));
    const Tensor b = leaf({3}, 34).detach();
    const Tensor y3 = F::conv2d(x.select(0, 1), wt, b, 2, 1);
    CHECK(y3.dim() == 3);
    CHECK(allclose(y3, F::conv2d(x, wt, b, 2, 1).select(0, 1), 1e-15, 0.0));
}

TEST_CASE("conv2d: gradients of every order", "[nn][conv]") {
    const Tensor x = leaf({1, 2, 4, 4}, 41), w = leaf({2, 1, 2, 2}, 42), b = leaf({2}, 43);
    check_grads([](const tensor_list& in) { return tensor_list{F::conv2d(in[0], in[1], in[2], 1, 1, 1, 2)}; },
                {x, w, b});
    const Tensor x2 = leaf({2, 2, 4, 3}, 44), w2 = leaf({3, 2, 2, 2}, 45);
    check_grads(
        [](const tensor_list& in) {
            return tensor_list{F::conv2d(in[0], in[1], {}, {2, 1}, {1, 0}, {1, 2})};
        },
        {x2, w2});
    check_grads([](const tensor_list& in) { return tensor_list{F::conv2d(in[0], in[1], {}, 1, "same")}; }, {x2, w2});
}

TEST_CASE("conv2d: bad input", "[nn][conv]") {
    const Tensor x = zeros({1, 4, 5, 5}, dtype::float64), w = zeros({2, 4, 3, 3}, dtype::float64);
    check_error([&] { (void)F::conv2d(zeros({4, 5}, dtype::float64), w); }, "conv2d: Expected 3D (unbatched) or 4D");
    check_error([&] { (void)F::conv2d(x, zeros({2, 4, 3}, dtype::float64)); }, "conv2d: Expected 4-dimensional weight");
    check_error([&] { (void)F::conv2d(x, zeros({2, 4, 3, 3}, dtype::float32)); }, "same dtype");
    check_error([&] { (void)F::conv2d(x, zeros({2, 3, 3, 3}, dtype::float64)); }, "to have 3 channels, but got 4");
    check_error(
        [&] {
            (void)F::conv2d(x, zeros({3, 2, 3, 3}, dtype::float64), {}, 1, 0, 1, 2);
        },
        "expected weight to be divisible by 2");
    check_error([&] { (void)F::conv2d(x, w, {}, 1, 0, 1, 0); }, "non-positive groups");
    check_error([&] { (void)F::conv2d(x, w, zeros({3}, dtype::float64)); }, "expected bias of size [2]");
    check_error([&] { (void)F::conv2d(x, w, {}, 0); }, "conv2d: stride should be greater than zero");
    check_error([&] { (void)F::conv2d(x, w, {}, 1, -1); }, "conv2d: padding should be non-negative");
    check_error([&] { (void)F::conv2d(x, w, {}, 1, 0, 3); }, "Kernel size can't be greater than actual input size");
    check_error([&] { (void)F::conv2d(x, w, {}, 2, "same"); }, "not supported for strided convolutions");
    check_error([&] { (void)F::conv2d(x, w, {}, 1, "full"); }, "Invalid padding string 'full'");
    check_error([&] { (void)F::conv2d(x, w, {}, 1, 0, i64{1} << 62); }, "too large");
    check_error([&] { (void)F::conv2d(x, w, {}, 1, i64{1} << 62); }, "too large");
    check_error([&] { (void)F::conv2d(x, w, {}, 1, 0, 1, i64{1} << 62); }, "expected weight to be divisible");
    check_error(
        [&] {
            (void)F::conv2d(zeros({1, 4, 5, 5}, dtype::int64), w);
        },
        "conv2d: expected a floating-point input");
    CHECK(F::conv2d(x, w).sizes() == int_list{1, 2, 3, 3});
}

// ---------------------------------------------------------------- pooling

TEST_CASE("max_pool2d matches the definition: padding, dilation, ceil_mode, NaN", "[nn][pool]") {
    struct cfg {
        i64 h, w, kh, kw, sh, sw, ph, pw, dh, dw;
        bool ceil;
    };
    const std::vector<cfg> cases = {
        {6, 6, 2, 2, 2, 2, 0, 0, 1, 1, false}, {7, 5, 3, 3, 2, 2, 1, 1, 1, 1, false},
        {7, 5, 3, 3, 2, 2, 1, 1, 1, 1, true},  {5, 5, 2, 2, 2, 2, 1, 1, 1, 1, true},
        {8, 7, 3, 2, 1, 2, 1, 0, 2, 2, false}, {8, 7, 3, 2, 3, 2, 1, 1, 2, 1, true},
        {5, 6, 2, 3, 3, 2, 0, 1, 1, 1, true},
    };
    std::uint64_t seed = 200;
    for (const auto& k : cases)
        for (dtype type : {dtype::float64, dtype::float32}) {
            INFO("h " << k.h << " w " << k.w << " k " << k.kh << "x" << k.kw << " s " << k.sh << "x" << k.sw << " p "
                      << k.ph << "x" << k.pw << " d " << k.dh << "x" << k.dw << " ceil " << k.ceil);
            Tensor x = leaf({2, 3, k.h, k.w}, seed++, type).detach();
            x = where(x.gt(1.3), scalar(std::nan("")), x);  // a few NaNs propagate
            const Tensor y = F::max_pool2d(x, {k.kh, k.kw}, {k.sh, k.sw}, {k.ph, k.pw}, {k.dh, k.dw}, k.ceil);
            const auto want =
                ref_max_pool(dvec(x), 6, k.h, k.w, k.kh, k.kw, k.sh, k.sw, k.ph, k.pw, k.dh, k.dw, k.ceil);
            CHECK(y.sizes() == int_list{2, 3, pool_size(k.h, k.kh, k.sh, k.ph, k.dh, k.ceil),
                                        pool_size(k.w, k.kw, k.sw, k.pw, k.dw, k.ceil)});
            check_close(dvec(y), want, 0.0);
        }
    // ceil_mode keeps a window that starts inside the input, drops one that would start in the
    // right padding: 5 wide, kernel 2, stride 2, padding 1 gives 3 either way.
    CHECK(F::max_pool2d(zeros({1, 1, 5, 5}), 2, std::nullopt, 1, 1, true).sizes() == int_list{1, 1, 3, 3});
    CHECK(F::max_pool2d(zeros({1, 1, 5, 5}), 2, std::nullopt, 0, 1, true).sizes() == int_list{1, 1, 3, 3});
    CHECK(F::max_pool2d(zeros({1, 1, 5, 5}), 2).sizes() == int_list{1, 1, 2, 2});
    // Unbatched input; stride defaults to the kernel size.
    const Tensor u = leaf({2, 4, 4}, 250).detach();
    CHECK(allclose(F::max_pool2d(u, 2), F::max_pool2d(u.unsqueeze(0), 2, 2).squeeze(0), 0.0, 0.0));
}

TEST_CASE("max_pool2d: the gradient goes to the first maximal element, gradients of every order", "[nn][pool]") {
    // Ties: every window of a constant image has its first tap (scan order) as the argmax.
    const Tensor c = full({1, 1, 4, 4}, 2.0, dtype::float64).requires_grad_();
    auto g = autograd::grad({F::max_pool2d(c, 2, 1).sum()}, {c});
    std::vector<double> want(16, 0.0);
    for (i64 y = 0; y < 3; ++y)
        for (i64 x = 0; x < 3; ++x) want[static_cast<std::size_t>(y * 4 + x)] += 1.0;
    check_close(dvec(g[0]), want, 0.0);
    // Random input with padding and dilation: the gradient is 1 at each window's argmax.
    const Tensor x = leaf({1, 2, 6, 5}, 260);
    std::vector<i64> arg;
    (void)ref_max_pool(dvec(x), 2, 6, 5, 3, 2, 2, 1, 1, 1, 1, 2, true, &arg);
    g = autograd::grad({F::max_pool2d(x, {3, 2}, {2, 1}, 1, {1, 2}, true).sum()}, {x});
    std::vector<double> want2(60, 0.0);
    for (const i64 a : arg) want2[static_cast<std::size_t>(a)] += 1.0;
    check_close(dvec(g[0]), want2, 0.0);
    check_grads(
        [](const tensor_list& in) {
            return tensor_list{F::max_pool2d(in[0], {3, 2}, {2, 1}, 1, {1, 2}, true)};
        },
        {x});
}

TEST_CASE("avg_pool2d matches PyTorch's divisor rules", "[nn][pool]") {
    struct cfg {
        i64 h, w, kh, kw, sh, sw, ph, pw;
        bool ceil, include_pad;
        i64 divisor;
    };
    const std::vector<cfg> cases = {
        {6, 6, 2, 2, 2, 2, 0, 0, false, true, 0},  {7, 5, 3, 3, 2, 2, 1, 1, false, true, 0},
        {7, 5, 3, 3, 2, 2, 1, 1, false, false, 0}, {7, 5, 3, 3, 2, 2, 1, 1, true, true, 0},
        {7, 5, 3, 3, 2, 2, 1, 1, true, false, 0},  {5, 5, 2, 2, 2, 2, 1, 1, true, false, 0},
        {6, 7, 3, 2, 1, 2, 1, 1, true, true, 5},   {5, 6, 2, 3, 3, 2, 0, 1, true, true, 0},
    };
    std::uint64_t seed = 300;
    for (const auto& k : cases)
        for (dtype type : {dtype::float64, dtype::float32}) {
            INFO("h " << k.h << " w " << k.w << " k " << k.kh << "x" << k.kw << " ceil " << k.ceil << " include_pad "
                      << k.include_pad << " divisor " << k.divisor);
            const Tensor x = leaf({2, 2, k.h, k.w}, seed++, type).detach();
            const Tensor y = F::avg_pool2d(x, {k.kh, k.kw}, {k.sh, k.sw}, {k.ph, k.pw}, k.ceil, k.include_pad,
                                           k.divisor != 0 ? std::optional<i64>(k.divisor) : std::nullopt);
            const auto want = ref_avg_pool(dvec(x), 4, k.h, k.w, k.kh, k.kw, k.sh, k.sw, k.ph, k.pw, k.ceil,
                                           k.include_pad, k.divisor);
            CHECK(y.sizes() == int_list{2, 2, pool_size(k.h, k.kh, k.sh, k.ph, 1, k.ceil),
                                        pool_size(k.w, k.kw, k.sw, k.pw, 1, k.ceil)});
            check_close(dvec(y), want, type == dtype::float32 ? 1e-6 : 1e-14);
        }
    const Tensor x = leaf({1, 1, 5, 4}, 350);
    check_grads([](const tensor_list& in) { return tensor_list{F::avg_pool2d(in[0], 3, 2, 1, true, false)}; }, {x});
    const Tensor u = leaf({2, 4, 4}, 351).detach();
    CHECK(allclose(F::avg_pool2d(u, 2), F::avg_pool2d(u.unsqueeze(0), 2).squeeze(0), 0.0, 0.0));
}

TEST_CASE("pooling: bad input", "[nn][pool]") {
    const Tensor x = zeros({1, 1, 4, 4}, dtype::float64);
    check_error([&] { (void)F::max_pool2d(x, 2, {}, 2); }, "max_pool2d: pad should be at most half");
    check_error([&] { (void)F::avg_pool2d(x, 3, {}, 2); }, "avg_pool2d: pad should be at most half");
    check_error([&] { (void)F::max_pool2d(x, 0); }, "max_pool2d: kernel_size should be greater than zero");
    check_error([&] { (void)F::max_pool2d(x, 2, 0); }, "max_pool2d: stride should be greater than zero");
    check_error([&] { (void)F::max_pool2d(x, 2, {}, 0, 0); }, "max_pool2d: dilation should be greater than zero");
    check_error([&] { (void)F::max_pool2d(x, 5); }, "Output size is too small");
    check_error([&] { (void)F::max_pool2d(zeros({4, 4}), 2); }, "max_pool2d: Expected 3D (unbatched) or 4D");
    check_error(
        [&] {
            (void)F::avg_pool2d(zeros({1, 1, 4, 4}, dtype::int64), 2);
        },
        "avg_pool2d: expected a floating-point input");
    check_error([&] { (void)F::avg_pool2d(x, 2, {}, 0, false, true, 0); }, "divisor must be not zero");
    check_error([&] { (void)F::max_pool2d(zeros({1, 0, 4, 4}), 2); }, "non-empty");
    check_error([&] { (void)F::max_pool2d(x, 2, {}, 0, i64{1} << 62); }, "too large");
    check_error([&] { (void)F::avg_pool2d(x, {2, i64{1} << 62}); }, "too large");
    CHECK(F::max_pool2d(x, 2).sizes() == int_list{1, 1, 2, 2});
}

// ---------------------------------------------------------------- layer_norm

TEST_CASE("layer_norm matches the definition with biased variance", "[nn][norm]") {
    for (dtype type : {dtype::float64, dtype::float32}) {
        const Tensor x = leaf({3, 2, 4}, 400, type).detach();
        const Tensor w = leaf({2, 4}, 401, type).detach(), b = leaf({2, 4}, 402, type).detach();
        const double eps = 1e-3;
        const Tensor y = F::layer_norm(x, {2, 4}, w, b, eps);
        const auto xv = dvec(x), wv = dvec(w), bv = dvec(b);
        std::vector<double> want;
        for (std::size_t r = 0; r < 3; ++r) {
            double m = 0.0, v = 0.0;
            for (std::size_t i = 0; i < 8; ++i) m += xv[r * 8 + i] / 8.0;
            for (std::size_t i = 0; i < 8; ++i) v += (xv[r * 8 + i] - m) * (xv[r * 8 + i] - m) / 8.0;
            for (std::size_t i = 0; i < 8; ++i)
                want.push_back((xv[r * 8 + i] - m) / std::sqrt(v + eps) * wv[i] + bv[i]);
        }
        CHECK(y.sizes() == x.sizes());
        check_close(dvec(y), want, type == dtype::float32 ? 1e-5 : 1e-13);
        // Without weight and bias, over the last dimension only: zero mean, variance v / (v + eps).
        const Tensor z = F::layer_norm(x, {4});
        const auto zv = dvec(z);
        for (std::size_t r = 0; r < 6; ++r) {
            double m = 0.0;
            for (std::size_t i = 0; i < 4; ++i) m += zv[r * 4 + i];
            CHECK(std::abs(m) < 1e-5);
        }
    }
    const Tensor x = leaf({2, 3, 2}, 410), w = leaf({3, 2}, 411), b = leaf({3, 2}, 412);
    check_grads(
        [](const tensor_list& in) {
            return tensor_list{F::layer_norm(in[0], {3, 2}, in[1], in[2])};
        },
        {x, w, b});
    check_grads([](const tensor_list& in) { return tensor_list{F::layer_norm(in[0], {2})}; }, {x});
}

TEST_CASE("layer_norm: bad input", "[nn][norm]") {
    const Tensor x = zeros({2, 3}, dtype::float64);
    check_error([&] { (void)F::layer_norm(x, {2}); }, "layer_norm: Given normalized_shape=");
    check_error([&] { (void)F::layer_norm(x, {2, 2, 3}); }, "layer_norm: Given normalized_shape=");
    check_error([&] { (void)F::layer_norm(x, {}); }, "at least 1-dimensional");
    check_error([&] { (void)F::layer_norm(x, {3}, zeros({2}, dtype::float64)); },
                "Expected weight to be of same shape");
    check_error([&] { (void)F::layer_norm(x, {3}, {}, zeros({4}, dtype::float64)); },
                "Expected bias to be of same shape");
    check_error(
        [&] {
            (void)F::layer_norm(zeros({2, 3}, dtype::int64), {3});
        },
        "layer_norm: expected a floating-point");
}

// ---------------------------------------------------------------- embedding

TEST_CASE("embedding picks rows, padding_idx gets no gradient", "[nn][embedding]") {
    const Tensor w = leaf({5, 3}, 500);
    const Tensor idx = tensor({4, 0, 2, 2, 1, 4}, {2, 3});
    const Tensor y = F::embedding(idx, w);
    CHECK(y.sizes() == int_list{2, 3, 3});
    const auto wv = dvec(w), yv = dvec(y);
    const std::vector<i64> iv = {4, 0, 2, 2, 1, 4};
    for (std::size_t k = 0; k < 6; ++k)
        for (std::size_t j = 0; j < 3; ++j) CHECK(yv[k * 3 + j] == wv[static_cast<std::size_t>(iv[k]) * 3 + j]);
    // The gradient of sum(y * g) for row r is the sum of g over the positions holding r,
    // except the padding row (also given as -1 = 4).
    const Tensor g = leaf({2, 3, 3}, 501).detach();
    for (const i64 pad : {i64{4}, i64{-1}, i64{2}}) {
        const auto grad = autograd::grad({(F::embedding(idx, w, pad) * g).sum()}, {w})[0];
        const i64 row_pad = pad < 0 ? pad + 5 : pad;
        std::vector<double> want(15, 0.0);
        const auto gv = dvec(g);
        for (std::size_t k = 0; k < 6; ++k)
            if (iv[k] != row_pad)
                for (std::size_t j = 0; j < 3; ++j) want[static_cast<std::size_t>(iv[k]) * 3 + j] += gv[k * 3 + j];
        check_close(dvec(grad), want, 1e-15);
        CHECK(allclose(F::embedding(idx, w, pad), y, 0.0, 0.0));  // values unchanged by padding_idx
    }
    CHECK(F::embedding(tensor({3}, {1}).reshape({}), w).sizes() == int_list{3});
    const Tensor w32 = leaf({5, 3}, 502, dtype::float32);
    CHECK(F::embedding(idx, w32).type() == dtype::float32);
    check_grads([&](const tensor_list& in) { return tensor_list{F::embedding(idx, in[0]) * F::embedding(idx, in[0])}; },
                {w});
}

TEST_CASE("embedding: bad input", "[nn][embedding]") {
    const Tensor w = zeros({5, 3}, dtype::float64);
    check_error([&] { (void)F::embedding(tensor({5}), w); }, "embedding: index 5 is out of range");
    check_error([&] { (void)F::embedding(tensor({-1}), w); }, "embedding: index -1 is out of range");
    check_error([&] { (void)F::embedding(tensor({1.0}, {1}, dtype::float64), w); }, "scalar types: Long, Int");
    check_error([&] { (void)F::embedding(tensor({1}), zeros({5}, dtype::float64)); }, "'weight' must be 2-D");
    check_error([&] { (void)F::embedding(tensor({1}), w, 5); }, "Padding_idx must be within num_embeddings");
    check_error([&] { (void)F::embedding(tensor({1}), w, -6); }, "Padding_idx must be within num_embeddings");
    CHECK(F::embedding(tensor({1}), w).sizes() == int_list{1, 3});
}

// ---------------------------------------------------------------- dropout

TEST_CASE("dropout: kept fraction, scaling, gradient, reproducibility", "[nn][dropout]") {
    const i64 n = 100000;
    for (const double p : {0.1, 0.5, 0.8}) {
        INFO("p = " << p);
        generator gen(7);
        const Tensor x = full({n}, 3.0, dtype::float64).requires_grad_();
        const Tensor y = F::dropout(x, p, true, false, gen);
        const auto v = dvec(y);
        const double scale = 1.0 / (1.0 - p);
        i64 kept = 0, wrong = 0;
        for (const double e : v) {
            if (e != 0.0) {
                ++kept;
                if (std::abs(e - 3.0 * scale) > 1e-12) ++wrong;  // survivors are scaled by 1 / (1 - p)
            }
        }
        CHECK(wrong == 0);
        // Kept count ~ Binomial(n, 1 - p): within 5 standard deviations.
        const double mean = static_cast<double>(n) * (1.0 - p), sd = std::sqrt(static_cast<double>(n) * p * (1.0 - p));
        CHECK(std::abs(static_cast<double>(kept) - mean) < 5.0 * sd);
        // The gradient is mask * scale: y / x.
        const Tensor g = autograd::grad({y.sum()}, {x})[0];
        check_close(dvec(g), dvec(y / 3.0), 1e-15);
        // The same seed gives the same mask.
        generator again(7);
        CHECK(allclose(F::dropout(x, p, true, false, again), y, 0.0, 0.0));
        manual_seed(5);
        const Tensor d1 = F::dropout(x.detach(), p);
        manual_seed(5);
        CHECK(allclose(F::dropout(x.detach(), p), d1, 0.0, 0.0));
    }
    const Tensor x = leaf({3, 4}, 600, dtype::float32);
    CHECK(F::dropout(x, 0.0).is_same(x));
    CHECK(F::dropout(x, 0.7, false).is_same(x));
    const Tensor z = F::dropout(x, 1.0);
    CHECK(dvec(z) == std::vector<double>(12, 0.0));
    CHECK(dvec(autograd::grad({z.sum()}, {x})[0]) == std::vector<double>(12, 0.0));
    // inplace: the input itself is scaled (a non-leaf, so autograd allows it).
    generator g1(9), g2(9);
    const Tensor h = x * 2.0;
    const Tensor want = F::dropout(h, 0.5, true, false, g1);
    Tensor h2 = x * 2.0;
    const Tensor out = F::dropout(h2, 0.5, true, true, g2);
    CHECK(out.is_same(h2));
    CHECK(allclose(h2, want, 0.0, 0.0));
    CHECK(allclose(autograd::grad({out.sum()}, {x})[0], autograd::grad({want.sum()}, {x})[0], 0.0, 0.0));
    // With a freshly seeded generator per call the mask is fixed, so finite differences apply.
    check_grads(
        [](const tensor_list& in) {
            generator gen(11);
            return tensor_list{F::dropout(in[0] * in[0], 0.4, true, false, gen)};
        },
        {leaf({3, 5}, 601)});
    check_error([&] { (void)F::dropout(x, -0.1); }, "dropout: dropout probability has to be between 0 and 1");
    check_error([&] { (void)F::dropout(x, 1.5); }, "dropout: dropout probability has to be between 0 and 1");
    check_error([&] { (void)F::dropout(zeros({2}, dtype::int64), 0.5); }, "dropout: expected a floating-point");
}

// ---------------------------------------------------------------- a small CNN under the graph layers

TEST_CASE("conv2d + max_pool2d + avg_pool2d under capture::aot and jit::script", "[nn][conv][capture][jit]") {
    const auto f = [](Tensor x, Tensor w) {
        const Tensor h = F::relu(F::conv2d(x, w, {}, 1, 1));
        return (F::max_pool2d(h, 2, {}, 1, 1, true) * 2.0).sum() + F::avg_pool2d(h, 3, 2, 1).sum();
    };
    manual_seed(61);
    const Tensor x = randn({2, 2, 5, 6}, dtype::float64).requires_grad_(),
                 w = randn({3, 2, 3, 3}, dtype::float64).requires_grad_();
    auto a = capture::aot(f, {x, w});
    a.forward->lint();
    a.backward->lint();
    auto fn = jit::script(f);
    for (int i = 0; i < 3; ++i) {
        Tensor x2 = randn({2, 2, 5, 6}, dtype::float64).requires_grad_(),
               w2 = randn({3, 2, 3, 3}, dtype::float64).requires_grad_();
        Tensor eager = f(x2, w2);
        const auto want = autograd::grad({eager}, {x2, w2});
        Tensor out = a({x2, w2})[0];
        CHECK(allclose(out.detach(), eager.detach(), 1e-12, 1e-12));
        const auto got = autograd::grad({out}, {x2, w2});
        CHECK(allclose(got[0], want[0], 1e-12, 1e-12));
        CHECK(allclose(got[1], want[1], 1e-12, 1e-12));
        Tensor y = fn(x2, w2);
        CHECK(allclose(y.detach(), eager.detach(), 1e-12, 1e-12));
        const auto jg = autograd::grad({y}, {x2, w2});
        CHECK(allclose(jg[0], want[0], 1e-12, 1e-12));
        CHECK(allclose(jg[1], want[1], 1e-12, 1e-12));
    }
}
