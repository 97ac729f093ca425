// graft::nn's conv1d, conv_transpose2d, adaptive pools, interpolate and dropout2d, and their
// layers (Conv1d, ConvTranspose2d, AdaptiveAvgPool2d, AdaptiveMaxPool2d, Upsample, Dropout2d).
// Checked against PyTorch 1.13's outputs and gradients over a grid of options
// (tests/fixtures/conv_family.txt, written by tests/fixtures/gen_conv_family.py), against finite
// differences (first and second derivatives), hand-computed values, across eager, nn::script and
// nn::aot, and for their errors. Also randint_like, the one *_like factory graft lacked.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <graft/graft.hpp>

#include "fixture_common.hpp"
#include "grad_test_common.hpp"

using namespace graft;
namespace F = graft::nn::functional;

namespace {

// ------------------------------------------------------------------ the PyTorch fixture

struct fixture_case {
    std::string fn;
    std::map<std::string, std::string> options;  // as written by gen_conv_family.py
    std::map<std::string, Tensor> results;       // y, gx, gw, gb
    std::string text;                            // the case line, for messages
};

std::vector<fixture_case> read_fixture() {
    std::ifstream file(std::string(GRAFT_SOURCE_DIR) + "/tests/fixtures/conv_family.txt");
    REQUIRE(file.good());
    std::vector<fixture_case> cases;
    std::string line;
    while (std::getline(file, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream in(line);
        std::string tag;
        in >> tag;
        if (tag == "case") {
            fixture_case c;
            c.text = line;
            in >> c.fn;
            std::string kv;
            while (in >> kv) {
                const auto eq = kv.find('=');
                REQUIRE(eq != std::string::npos);
                c.options[kv.substr(0, eq)] = kv.substr(eq + 1);
            }
            cases.push_back(std::move(c));
        } else if (tag == "t") {
            std::string label;
            in >> label;
            cases.back().results[label] = fx::read_tensor(in);
        }
    }
    REQUIRE(cases.size() == 49);
    return cases;
}

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> parts;
    std::istringstream in(s);
    std::string p;
    while (std::getline(in, p, ',')) parts.push_back(p);
    return parts;
}
std::vector<std::int64_t> ints(const std::string& s) {
    std::vector<std::int64_t> v;
    for (const auto& p : split(s)) v.push_back(std::stoll(p));
    return v;
}
int_list int_list_of(const std::string& s) {
    const auto v = ints(s);
    return {v.begin(), v.end()};
}
F::int_pair pair_of(const std::map<std::string, std::string>& o, const std::string& key, std::int64_t dflt) {
    if (!o.count(key)) return dflt;
    const auto v = ints(o.at(key));
    return v.size() == 1 ? F::int_pair(v[0]) : F::int_pair(v[0], v[1]);
}
std::int64_t int_of(const std::map<std::string, std::string>& o, const std::string& key, std::int64_t dflt) {
    return o.count(key) ? std::stoll(o.at(key)) : dflt;
}
std::optional<bool> flag_of(const std::map<std::string, std::string>& o, const std::string& key) {
    if (!o.count(key)) return std::nullopt;
    return o.at(key) == "1";
}

using fx::formula;  // the fixture's formulas (see gen_conv_family.py), float64
Tensor input_of(const fixture_case& c) {
    const bool ties = c.options.count("ties") != 0;
    return formula(int_list_of(c.options.at("x")), [ties](std::int64_t i) {
        const double v = 1.5 * std::sin(0.37 * static_cast<double>(i) + 0.2);
        return ties ? std::nearbyint(v * 4.0) / 4.0 : v;  // torch.round: half to even
    });
}
Tensor weight_of(const fixture_case& c) {
    return formula(int_list_of(c.options.at("w")), [](std::int64_t i) { return 0.5 * std::cos(0.41 * i + 0.3); });
}

/// The case's call, with the options PyTorch was given.
Tensor call(const fixture_case& c, const Tensor& x, const Tensor& w, const Tensor& b) {
    const auto& o = c.options;
    if (c.fn == "conv1d") {
        const std::string p = o.count("padding") ? o.at("padding") : "0";
        const F::conv_padding pad = p == "same" ? F::conv_padding("same")
                                    : p == "valid" ? F::conv_padding("valid")
                                                   : F::conv_padding(static_cast<std::int64_t>(std::stoll(p)));
        return F::conv1d(x, w, b, int_of(o, "stride", 1), pad, int_of(o, "dilation", 1), int_of(o, "groups", 1));
    }
    if (c.fn == "conv_transpose2d")
        return F::conv_transpose2d(x, w, b, pair_of(o, "stride", 1), pair_of(o, "padding", 0),
                                   pair_of(o, "output_padding", 0), int_of(o, "groups", 1), pair_of(o, "dilation", 1));
    if (c.fn == "adaptive_avg_pool2d" || c.fn == "adaptive_max_pool2d") {
        const auto parts = split(o.at("output_size"));
        const auto opt = [](const std::string& s) -> std::optional<std::int64_t> {
            if (s == "none") return std::nullopt;
            return std::stoll(s);
        };
        const F::adaptive_size size = parts.size() == 1 ? F::adaptive_size(static_cast<std::int64_t>(std::stoll(parts[0])))
                                                        : F::adaptive_size(opt(parts[0]), opt(parts[1]));
        return c.fn == "adaptive_avg_pool2d" ? F::adaptive_avg_pool2d(x, size) : F::adaptive_max_pool2d(x, size);
    }
    REQUIRE(c.fn == "interpolate");
    F::size_list size;
    F::scale_list scale;
    if (o.count("size")) size = int_list_of(o.at("size"));
    if (o.count("scale_factor"))
        for (const auto& p : split(o.at("scale_factor"))) scale.values.push_back(std::strtod(p.c_str(), nullptr));
    return F::interpolate(x, size, scale, o.at("mode"), flag_of(o, "align_corners"),
                          flag_of(o, "recompute_scale_factor"));
}

using fx::close_to;

}  // namespace

TEST_CASE("conv1d, conv_transpose2d, adaptive pools, interpolate: outputs and gradients equal PyTorch 1.13's",
          "[nn][conv]") {
    for (const fixture_case& c : read_fixture()) {
        INFO(c.text);
        Tensor x = input_of(c).requires_grad_();
        Tensor w, b;
        if (c.options.count("w")) {
            w = weight_of(c).requires_grad_();
            if (c.options.at("bias") == "1") {
                const auto ws = ints(c.options.at("w"));
                const std::int64_t n = c.fn == "conv1d" ? ws[0] : ws[1] * int_of(c.options, "groups", 1);
                b = formula({n}, [](std::int64_t i) { return 0.1 * i - 0.2; }).requires_grad_();
            }
        }
        const Tensor y = call(c, x, w, b);
        const Tensor g = formula(y.sizes(), [](std::int64_t i) { return std::cos(0.23 * i); });
        (y * g).sum().backward();
        std::map<std::string, Tensor> got{{"y", y.detach()}, {"gx", x.grad()}};
        if (w.defined()) got["gw"] = w.grad();
        if (b.defined()) got["gb"] = b.grad();
        REQUIRE(got.size() == c.results.size());
        if (c.options.count("torch_grad_differs")) {
            // PyTorch's backward is not its forward's adjoint here (see gen_conv_family.py):
            // the input gradient must be, as finite differences say.
            CHECK(!close_to(got.at("gx"), c.results.at("gx"), 1e-12));
            using L = autograd::tensor_list;
            gt::check_grads([&c](const L& in) { return L{call(c, in[0], {}, {})}; },
                            {input_of(c).requires_grad_()});
        }
        for (const auto& [label, expected] : c.results) {
            if (label == "gx" && c.options.count("torch_grad_differs")) continue;
            INFO(label << ": got sizes " << got.at(label).sizes() << ", PyTorch's " << expected.sizes());
            CHECK(close_to(got.at(label), expected, 1e-12));
        }
    }
}

TEST_CASE("conv1d, conv_transpose2d, adaptive pools, interpolate, dropout2d: first and second derivatives",
          "[nn][conv][gradcheck]") {
    using L = autograd::tensor_list;
    const Tensor x1 = gt::leaf({2, 4, 7}, 21), w1 = gt::leaf({6, 2, 3}, 22), b1 = gt::leaf({6}, 23);
    gt::check_grads([](const L& in) { return L{F::conv1d(in[0], in[1], in[2], 2, 1, 2, 2)}; }, {x1, w1, b1});
    gt::check_grads([](const L& in) { return L{F::conv1d(in[0], in[1], {}, 1, "same")}; },
                    {gt::leaf({1, 2, 5}, 24), gt::leaf({3, 2, 4}, 25)});

    const Tensor x2 = gt::leaf({2, 4, 3, 2}, 26), w2 = gt::leaf({4, 2, 2, 3}, 27), b2 = gt::leaf({4}, 28);
    gt::check_grads(
        [](const L& in) { return L{F::conv_transpose2d(in[0], in[1], in[2], {2, 1}, {1, 0}, {1, 0}, 2, {1, 2})}; },
        {x2, w2, b2});
    gt::check_grads([](const L& in) { return L{F::conv_transpose2d(in[0], in[1], {}, 3, 0, 2)}; },
                    {gt::leaf({1, 2, 2, 2}, 29), gt::leaf({2, 1, 2, 2}, 30)});

    const Tensor x3 = gt::leaf({2, 2, 5, 7}, 31);
    gt::check_grads([](const L& in) { return L{F::adaptive_avg_pool2d(in[0], {3, 4})}; }, {x3});
    gt::check_grads([](const L& in) { return L{F::adaptive_max_pool2d(in[0], {3, std::nullopt})}; }, {x3});
    gt::check_grads([](const L& in) { return L{F::adaptive_max_pool2d(in[0], {7, 9})}; }, {gt::leaf({1, 2, 4, 5}, 32)});
    gt::check_grads([](const L& in) { return L{F::interpolate(in[0], {7, 3}, {}, "bilinear", true)}; }, {x3});
    gt::check_grads([](const L& in) { return L{F::interpolate(in[0], {}, {1.6, 0.7}, "bilinear")}; }, {x3});
    gt::check_grads([](const L& in) { return L{F::interpolate(in[0], {}, 1.7, "nearest")}; }, {x3});
    gt::check_grads([](const L& in) { return L{F::interpolate(in[0], 9, {}, "linear")}; }, {gt::leaf({2, 3, 5}, 33)});
    gt::check_grads([](const L& in) { return L{F::interpolate(in[0], {2, 3}, {}, "area")}; }, {x3});
    // dropout2d: a mask fixed by the seed (the same draw on every evaluation of f).
    gt::check_grads(
        [](const L& in) {
            generator g(5);
            return L{F::dropout2d(in[0], 0.4, true, false, g)};
        },
        {x3});
}

TEST_CASE("adaptive_max_pool2d: ties send the gradient to the first maximum of each window, row-major",
          "[nn][conv]") {
    // Every element equal: windows [0, 2) and [1, 3) in each dimension; the first element of
    // each window gets its gradient (overlapping windows add up), none is split.
    Tensor x = ones({1, 1, 3, 3}, dtype::float64).requires_grad_();
    F::adaptive_max_pool2d(x, 2).sum().backward();
    CHECK(x.grad().reshape({9}).to_vector<double>() == std::vector<double>{1, 1, 0, 1, 1, 0, 0, 0, 0});
    // A tie at (0, 1) and (1, 0) of one window: row-major order picks (0, 1).
    Tensor y = from_vector(std::vector<double>{0, 5, 5, 1}).reshape({1, 2, 2}).requires_grad_();
    F::adaptive_max_pool2d(y, 1).sum().backward();
    CHECK(y.grad().reshape({4}).to_vector<double>() == std::vector<double>{0, 1, 0, 0});
    // Windows of unequal sizes: 5 rows into 3 gives [0, 2), [1, 4), [3, 5).
    const Tensor r = arange(0.0, 5.0, 1.0, dtype::float64).reshape({1, 1, 5, 1});
    CHECK(F::adaptive_max_pool2d(r, {3, 1}).reshape({3}).to_vector<double>() == std::vector<double>{1, 3, 4});
    CHECK(F::adaptive_avg_pool2d(r, {3, 1}).reshape({3}).to_vector<double>() == std::vector<double>{0.5, 2, 3.5});
}

TEST_CASE("interpolate: hand-computed values and PyTorch's scale rules", "[nn][conv]") {
    const Tensor x = from_vector(std::vector<double>{1, 2, 4}).reshape({1, 1, 3});
    CHECK(F::interpolate(x, 6).reshape({6}).to_vector<double>() == std::vector<double>{1, 1, 2, 2, 4, 4});
    CHECK(F::interpolate(x, 5, {}, "linear", true).reshape({5}).to_vector<double>() ==
          std::vector<double>{1, 1.5, 2, 3, 4});
    // Half-pixel centers: output 0 of 6 samples 0.25 - 0.5 < 0 -> clamped to x[0].
    const auto lin = F::interpolate(x, 6, {}, "linear").reshape({6}).to_vector<double>();
    CHECK(lin[0] == 1.0);
    CHECK(lin[1] == Approx(1.25).epsilon(1e-15));
    CHECK(lin[5] == 4.0);
    // scale_factor 1.1 of 5 keeps 5 elements, but the source indices use the scale: floor(i / 1.1).
    const Tensor five = arange(0.0, 5.0, 1.0, dtype::float64).reshape({1, 1, 5});
    CHECK(F::interpolate(five, {}, 1.1).reshape({5}).to_vector<double>() == std::vector<double>{0, 0, 1, 2, 3});
    CHECK(F::interpolate(five.unsqueeze(2), {}, 1.1).reshape({5}).to_vector<double>() ==
          std::vector<double>{0, 0, 1, 2, 3});
    // With recompute_scale_factor the scale is in / out.
    CHECK(F::interpolate(five, {}, 0.5, "nearest", std::nullopt, true).reshape({2}).to_vector<double>() ==
          std::vector<double>{0, 2});
    // A result is never the input itself.
    CHECK(!F::interpolate(five, 5).is_same(five));
}

TEST_CASE("dropout2d and Dropout2d: whole channels, scaled, 3-D input as [N, C, L] (PyTorch 1.13)", "[nn][conv]") {
    generator g(7);
    const Tensor x = ones({4, 6, 3, 2}, dtype::float64);
    const Tensor y = F::dropout2d(x, 0.5, true, false, g);
    const Tensor per_channel = y.amax({2, 3});
    CHECK(equal(y.amin({2, 3}), per_channel));  // constant over each channel
    const auto v = per_channel.reshape({24}).to_vector<double>();
    int zeros_seen = 0;
    for (double e : v) {
        CHECK((e == 0.0 || e == 2.0));
        zeros_seen += e == 0.0;
    }
    CHECK(zeros_seen > 0);
    CHECK(zeros_seen < 24);
    // 3-D: [N, C, L], a mask per (sample, channel), as PyTorch 1.13 (it warns; graft documents it).
    const Tensor y3 = F::dropout2d(ones({3, 8, 5}, dtype::float64), 0.5, true, false, g);
    CHECK(equal(y3.amin({2}), y3.amax({2})));
    CHECK(y3.amax({2}).eq(0.0).to(dtype::float64).sum().item<double>() > 0);
    // Gradient: the mask.
    Tensor xg = ones({2, 3, 2, 2}, dtype::float64).requires_grad_();
    const Tensor yg = F::dropout2d(xg, 0.25, true, false, g);
    yg.sum().backward();
    CHECK(equal(xg.grad(), yg.detach()));
    // p = 1 zeroes everything; eval and p = 0 return the input; inplace writes it.
    CHECK(F::dropout2d(x, 1.0).abs().sum().item<double>() == 0.0);
    CHECK(F::dropout2d(x, 0.5, false).is_same(x));
    CHECK(F::dropout2d(x, 0.0).is_same(x));
    Tensor z = ones({2, 4, 2, 2}, dtype::float64);
    const Tensor r = F::dropout2d(z, 1.0, true, true);
    CHECK(r.is_same(z));
    CHECK(z.abs().sum().item<double>() == 0.0);
    // Captured in training: a rand_like node draws a channel mask on every call.
    const Tensor o = ones({4, 6, 2, 2}, dtype::float64);
    auto cap = capture::trace([](const Tensor& a) { return F::dropout2d(a, 0.5); }, o);
    const Tensor c1 = cap(o)[0], c2 = cap(o)[0];
    CHECK(equal(c1.amin({2, 3}), c1.amax({2, 3})));
    CHECK(!equal(c1, c2));
    auto m = std::make_shared<nn::Dropout2d>(0.3);
    CHECK(m->to_string() == "Dropout2d(p=0.3, inplace=False)");
    m->eval();
    CHECK((*m)(x).is_same(x));
    CHECK_THROWS_WITH(F::dropout2d(ones({2, 3}), 0.5), Catch::Contains("expected a 3-D [N, C, L] or 4-D"));
    CHECK_THROWS_WITH(F::dropout2d(ones({2, 3, 2}), 1.5), Catch::Contains("between 0 and 1"));
    CHECK_THROWS_WITH(nn::Dropout2d(-0.1), Catch::Contains("between 0 and 1"));
}

TEST_CASE("Conv1d and ConvTranspose2d: parameter names and shapes, PyTorch's initialization bounds, printing",
          "[nn][conv]") {
    manual_seed(11);
    nn::Conv1d c1(4, 6, 3, 2, 1, 1, 2);
    std::vector<std::string> keys;
    for (const auto& [k, v] : c1.state_dict()) keys.push_back(k);
    CHECK(keys == std::vector<std::string>{"weight", "bias"});
    CHECK(c1.weight.sizes() == int_list{6, 2, 3});
    CHECK(c1.bias.sizes() == int_list{6});
    const double b1 = 1.0 / std::sqrt(2.0 * 3.0);  // fan_in = in / groups * k
    CHECK(c1.weight.abs().amax().item<double>() <= b1);
    CHECK(c1.bias.abs().amax().item<double>() <= b1);
    CHECK(c1.to_string() == "Conv1d(4, 6, kernel_size=(3,), stride=(2,), padding=(1,), groups=2)");
    CHECK(nn::Conv1d(2, 2, 4, 1, "same", 1, 1, false).to_string() ==
          "Conv1d(2, 2, kernel_size=(4,), stride=(1,), padding=same, bias=False)");

    // in = 2, out = 8: fan_in is out / groups * kh * kw = 72 (bound 0.118), not in * 9 = 18 (0.236).
    nn::ConvTranspose2d t(2, 8, 3);
    CHECK(t.weight.sizes() == int_list{2, 8, 3, 3});
    CHECK(t.bias.sizes() == int_list{8});
    const double bt = 1.0 / std::sqrt(72.0);
    CHECK(t.weight.abs().amax().item<double>() <= bt);
    CHECK(t.weight.abs().amax().item<double>() > 0.9 * bt);  // 144 draws fill the range
    CHECK(t.bias.abs().amax().item<double>() <= bt);
    nn::ConvTranspose2d tg(4, 6, {2, 3}, 2, 1, 1, 2, false, 1, dtype::float64);
    CHECK(tg.weight.sizes() == int_list{4, 3, 2, 3});
    CHECK(!tg.bias.defined());
    CHECK(tg.state_dict().size() == 1);
    CHECK(tg.to_string() ==
          "ConvTranspose2d(4, 6, kernel_size=(2, 3), stride=(2, 2), padding=(1, 1), output_padding=(1, 1), groups=2, "
          "bias=False)");
    CHECK(tg(randn({1, 4, 3, 3}, dtype::float64)).sizes() ==
          int_list{1, 6, 5, 6});
    CHECK(nn::AdaptiveAvgPool2d({3, std::nullopt}).to_string() == "AdaptiveAvgPool2d(output_size=(3, None))");
    CHECK(nn::AdaptiveMaxPool2d(2).to_string() == "AdaptiveMaxPool2d(output_size=2)");
    CHECK(nn::Upsample({}, 2.0).to_string() == "Upsample(scale_factor=2.0, mode='nearest')");
    CHECK(nn::Upsample({7, 3}, {}, "bilinear").to_string() == "Upsample(size=(7, 3), mode='bilinear')");
    CHECK_THROWS_WITH(nn::Conv1d(3, 4, 3, 1, 0, 1, 2), Catch::Contains("divisible by groups"));
    CHECK_THROWS_WITH(nn::Conv1d(2, 4, 3, 2, "same"), Catch::Contains("strided"));
    CHECK_THROWS_WITH(nn::ConvTranspose2d(2, 2, 3, 1, 0, 1), Catch::Contains("smaller than either stride or dilation"));
    CHECK_THROWS_WITH(nn::ConvTranspose2d(2, 3, 3, 1, 0, 0, 2), Catch::Contains("divisible by groups"));
}

TEST_CASE("a model of the new layers: nn::script and nn::aot give eager's outputs and gradients",
          "[nn][conv][jit][capture]") {
    manual_seed(4);
    const auto make = [] {
        generator g(9);
        return std::make_shared<nn::Sequential>(
            std::make_shared<nn::ConvTranspose2d>(3, 4, 3, 2, 1, 1, 1, true, 1, dtype::float64, g),
            std::make_shared<nn::AdaptiveMaxPool2d>(F::adaptive_size{5, std::nullopt}),
            std::make_shared<nn::Upsample>(F::size_list{}, F::scale_list{1.5}, "bilinear"),
            std::make_shared<nn::AdaptiveAvgPool2d>(3), std::make_shared<nn::Dropout2d>(0.5),
            std::make_shared<nn::Upsample>(F::size_list{4, 5}));
    };
    auto eager = make();
    eager->eval();  // Dropout2d: identity
    const Tensor x = randn({2, 3, 4, 3}, dtype::float64);
    const auto grads = [](nn::Module& m) {
        std::vector<Tensor> g;
        for (auto& [name, p] : m.named_parameters()) {
            g.push_back(p.grad());
            p.set_grad(Tensor());
        }
        return g;
    };
    const Tensor want = (*eager)(x);
    CHECK(want.sizes() == int_list{2, 4, 4, 5});
    (want * want).sum().backward();
    const auto want_grads = grads(*eager);
    for (int path = 0; path < 2; ++path) {
        INFO((path == 0 ? "nn::script" : "nn::aot"));
        auto m = make();
        m->eval();
        std::optional<nn::scripted_module> s;
        std::optional<nn::aot_module> a;
        if (path == 0) s.emplace(nn::script(m));
        else a.emplace(nn::aot(m, x));
        for (int call = 0; call < 3; ++call) {  // profiled, then optimized plans
            const Tensor y = path == 0 ? (*s)(x) : (*a)(x);
            CHECK(close_to(y, want, 1e-14));
            (y * y).sum().backward();
            const auto got = grads(*m);
            REQUIRE(got.size() == want_grads.size());
            for (std::size_t i = 0; i < got.size(); ++i) CHECK(close_to(got[i], want_grads[i], 1e-12));
        }
    }
    // Conv1d under nn::script, batch sizes varying.
    generator g(3);
    auto c = std::make_shared<nn::Conv1d>(2, 3, 3, 1, "same", 2, 1, true, dtype::float64, g);
    auto sc = nn::script(c);
    for (const std::int64_t n : {2, 2, 2, 5, 1}) {
        const Tensor xi = randn({n, 2, 7}, dtype::float64);
        CHECK(close_to(sc(xi), (*c)(xi), 1e-14));
    }
}

TEST_CASE("conv1d, conv_transpose2d, adaptive pools, interpolate: bad input is a clear graft::error", "[nn][conv][errors]") {
    const Tensor x3 = randn({2, 4, 9}, dtype::float64), w3 = randn({6, 2, 3}, dtype::float64);
    CHECK_THROWS_WITH(F::conv1d(randn({2, 4, 9, 1}), randn({6, 4, 3})), Catch::Contains("Expected 2D (unbatched) or 3D"));
    CHECK_THROWS_WITH(F::conv1d(x3, randn({6, 4, 3, 1}, dtype::float64)), Catch::Contains("3-dimensional weight"));
    CHECK_THROWS_WITH(F::conv1d(x3, w3), Catch::Contains("to have 2 channels, but got 4"));
    CHECK_THROWS_WITH(F::conv1d(x3, w3, {}, 1, 0, 1, 4), Catch::Contains("divisible by 4"));
    CHECK_THROWS_WITH(F::conv1d(x3, w3, {}, 2, "same", 1, 2), Catch::Contains("strided"));
    CHECK_THROWS_WITH(F::conv1d(x3, w3, {}, 1, {1, 2}, 1, 2), Catch::Contains("padding is one int"));
    CHECK_THROWS_WITH(F::conv1d(x3, w3, {}, 1, "full", 1, 2), Catch::Contains("conv1d: Invalid padding string 'full'"));
    CHECK_THROWS_WITH(F::conv1d(randn({2, 4, 2}, dtype::float64), w3, {}, 1, "valid", 1, 2),
                      Catch::Contains("conv1d: Calculated padded input size per channel: (2)"));
    CHECK_THROWS_WITH(F::conv1d(x3, w3, {}, 0, 0, 1, 2), Catch::Contains("stride should be greater than zero"));
    CHECK_THROWS_WITH(F::conv1d(x3, w3, {}, 1, 0, 5, 2), Catch::Contains("Kernel size can't be greater"));
    CHECK_THROWS_WITH(F::conv1d(x3, w3, zeros({5}, dtype::float64), 1, 0, 1, 2), Catch::Contains("bias of size [6]"));
    CHECK_THROWS_WITH(F::conv1d(ones({2, 4, 9}, dtype::int64), w3), Catch::Contains("floating"));

    const Tensor x4 = randn({1, 4, 3, 3}, dtype::float64), w4 = randn({4, 2, 3, 3}, dtype::float64);
    CHECK_THROWS_WITH(F::conv_transpose2d(x4, randn({3, 2, 3, 3}, dtype::float64)),
                      Catch::Contains("to have 3 channels, but got 4"));
    CHECK_THROWS_WITH(F::conv_transpose2d(x4, w4, {}, 1, 0, 0, 3), Catch::Contains("divisible by 3"));
    CHECK_THROWS_WITH(F::conv_transpose2d(x4, w4, {}, 2, 0, 2), Catch::Contains("smaller than either stride or dilation"));
    CHECK_THROWS_WITH(F::conv_transpose2d(x4, w4, {}, 1, 3), Catch::Contains("Output size is too small"));
    CHECK_THROWS_WITH(F::conv_transpose2d(x4, w4, {}, 1, -1), Catch::Contains("padding should be non-negative"));
    CHECK_THROWS_WITH(F::conv_transpose2d(x4, w4, zeros({4}, dtype::float64)), Catch::Contains("bias of size [2]"));
    CHECK_THROWS_WITH(F::conv_transpose2d(x4, w4.to(dtype::float32)), Catch::Contains("same dtype"));
    CHECK_THROWS_WITH(F::conv_transpose2d(randn({4, 3}), w4), Catch::Contains("Expected 3D (unbatched) or 4D"));

    CHECK_THROWS_WITH(F::adaptive_avg_pool2d(randn({2, 3}), 2), Catch::Contains("Expected 3D (unbatched) or 4D"));
    CHECK_THROWS_WITH(F::adaptive_max_pool2d(randn({1, 2, 3, 3}), {0, 2}), Catch::Contains("output_size must be positive"));
    CHECK_THROWS_WITH(F::adaptive_avg_pool2d(randn({1, 2, 0, 3}), 2), Catch::Contains("non-zero size"));

    const Tensor img = randn({1, 2, 4, 4});
    CHECK_THROWS_WITH(F::interpolate(img, 3, {}, "bicubic"), Catch::Contains("mode 'bicubic' is not supported"));
    CHECK_THROWS_WITH(F::interpolate(img, 3, {}, "linear"), Catch::Contains("Got 4D input, but linear mode needs 3D"));
    CHECK_THROWS_WITH(F::interpolate(randn({1, 2, 4}), 3, {}, "bilinear"),
                      Catch::Contains("Got 3D input, but bilinear mode needs 4D"));
    CHECK_THROWS_WITH(F::interpolate(img, 3, {}, "nearest", true), Catch::Contains("align_corners option can only"));
    CHECK_THROWS_WITH(F::interpolate(img, 3, 2.0), Catch::Contains("only one of size or scale_factor"));
    CHECK_THROWS_WITH(F::interpolate(img), Catch::Contains("either size or scale_factor"));
    CHECK_THROWS_WITH(F::interpolate(img, {1, 2, 3}), Catch::Contains("same number of spatial dimensions"));
    CHECK_THROWS_WITH(F::interpolate(img, 3, {}, "nearest", std::nullopt, true),
                      Catch::Contains("recompute_scale_factor is not meaningful"));
    CHECK_THROWS_WITH(F::interpolate(img, {}, 0.1), Catch::Contains("greater than 0"));
    CHECK_THROWS_WITH(F::interpolate(img, {}, -2.0), Catch::Contains("positive and finite"));
    CHECK_THROWS_WITH(F::interpolate(img, {}, std::nan("")), Catch::Contains("positive and finite"));
    CHECK_THROWS_WITH(F::interpolate(img, {}, 1e300), Catch::Contains("too large"));
    CHECK_THROWS_WITH(F::interpolate(randn({1, 2, 2, 2, 2}), 3), Catch::Contains("5-D is not supported"));
    CHECK_THROWS_WITH(nn::Upsample(3, {}, "trilinear")(img), Catch::Contains("mode 'trilinear' is not supported"));
}

TEST_CASE("randint_like: like's sizes and dtype, values from low up to (without) high, a random op under capture", "[factories][conv]") {
    manual_seed(2);
    const Tensor like = zeros({3, 50}, dtype::float64);
    const Tensor r = randint_like(like, -2, 3);
    CHECK(r.sizes() == like.sizes());
    CHECK(r.type() == dtype::float64);
    CHECK(r.amin().item<double>() == -2.0);
    CHECK(r.amax().item<double>() == 2.0);
    CHECK(equal(r, r.to(dtype::int64).to(dtype::float64)));
    const Tensor h = randint_like(arange(0, 40), 4);
    CHECK(h.type() == dtype::int64);
    CHECK(h.amin().item<std::int64_t>() == 0);
    CHECK(h.amax().item<std::int64_t>() == 3);
    // The same draws as randint of the same sizes and dtype.
    generator g1(8), g2(8);
    CHECK(equal(randint_like(like, 0, 10, g1), randint(0, 10, {3, 50}, dtype::float64, g2)));
    CHECK_THROWS_WITH(randint_like(like, 3, 3), Catch::Contains("randint_like: expected low < high"));
    CHECK_THROWS_WITH(randint_like(ones({2}, dtype::bool_), 3), Catch::Contains("bool"));
    CHECK_THROWS_WITH(randint_like(Tensor(), 3), Catch::Contains("undefined"));
    // Captured, it draws on every call (with the sizes of the call's input).
    auto f = capture::trace([](const Tensor& a) { return a + randint_like(a, 0, 1000); }, zeros({4, 4}, dtype::float64));
    const Tensor a1 = f(zeros({4, 4}, dtype::float64))[0], a2 = f(zeros({4, 4}, dtype::float64))[0];
    CHECK(!equal(a1, a2));
}
