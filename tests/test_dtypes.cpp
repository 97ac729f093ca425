// The storage dtypes float16, bfloat16 and int32 (graft/core/dtype.hpp, graft/core/half.hpp):
// conversion rounding checked against a reference that searches the neighbours by hand, ops
// against PyTorch 1.13's results (tests/fixtures/dtypes.txt, written by
// tests/fixtures/gen_dtypes.py, which names the ops as this table does), type promotion as
// torch.promote_types' table, printing, safetensors bytes, and the graph paths (jit::script,
// capture::aot) giving eager's values.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <graft/graft.hpp>

using namespace graft;
namespace F = graft::nn::functional;

namespace {

// ------------------------------------------------------------ conversion references

/// The finite values of a 16-bit format in increasing order, read through `to_float`.
std::vector<double> finite_values(float (*to_float)(std::uint16_t)) {
    std::vector<double> v;
    for (std::uint32_t b = 0; b < 0x10000u; ++b) {
        const float f = to_float(static_cast<std::uint16_t>(b));
        if (std::isfinite(f) && !(f == 0.0f && std::signbit(f))) v.push_back(f);
    }
    std::sort(v.begin(), v.end());
    return v;
}

/// Round to nearest, ties to the value whose last mantissa bit is 0, by searching the
/// sorted finite values; beyond the largest finite value by half an ulp or more: inf.
double reference_round(double x, const std::vector<double>& finite, float (*to_float)(std::uint16_t),
                       std::uint16_t (*bits_of)(double)) {
    const double top = finite.back(), ulp_top = top - finite[finite.size() - 2];
    if (std::fabs(x) >= top + ulp_top / 2) return x > 0 ? INFINITY : -INFINITY;
    const auto hi = std::lower_bound(finite.begin(), finite.end(), x);
    if (hi == finite.end()) return finite.back();  // within half an ulp above the largest
    if (hi == finite.begin()) return finite.front();
    if (*hi == x) return x;
    const double above = *hi, below = *(hi - 1);
    const double da = above - x, db = x - below;
    if (da < db) return above;
    if (db < da) return below;
    (void)to_float;
    return (bits_of(above) & 1u) == 0 ? above : below;  // the tie: the even one
}

std::uint16_t half_bits_of(double v) { return half(static_cast<float>(v)).bits; }
std::uint16_t bf16_bits_of(double v) { return bfloat16(static_cast<float>(v)).bits; }
float half_to_float(std::uint16_t b) { return static_cast<float>(half::from_bits(b)); }
float bf16_to_float(std::uint16_t b) { return static_cast<float>(bfloat16::from_bits(b)); }

/// Floats to round: every float near the 16-bit values (each value, the midpoints to its
/// neighbours and one float either side of them) and a sweep of float bit patterns.
std::vector<float> probe_floats(const std::vector<double>& finite) {
    std::vector<float> out;
    for (std::size_t i = 0; i + 1 < finite.size(); i += 7) {
        const double mid = (finite[i] + finite[i + 1]) / 2;
        for (double v : {finite[i], mid}) {
            const auto f = static_cast<float>(v);
            out.push_back(f);
            out.push_back(std::nextafter(f, INFINITY));
            out.push_back(std::nextafter(f, -INFINITY));
        }
    }
    for (std::uint64_t b = 0; b < 0x80000000ull; b += 0x7FFFull * 97) out.push_back(std::bit_cast<float>(std::uint32_t(b)));
    return out;
}

// ------------------------------------------------------------ the fixture

struct fixture_line {
    std::string in_type, op, source, out_type;
    Tensor want;  // float64 (or int64 for integer results)
};

std::vector<fixture_line> read_fixture() {
    std::ifstream file(std::string(GRAFT_SOURCE_DIR) + "/tests/fixtures/dtypes.txt");
    REQUIRE(file.good());
    std::vector<fixture_line> r;
    std::string line;
    while (std::getline(file, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream in(line);
        fixture_line f;
        in >> f.in_type >> f.op >> f.source >> f.out_type;
        std::int64_t rank = 0;
        in >> rank;
        int_list sizes(static_cast<std::size_t>(rank));
        for (auto& s : sizes) in >> s;
        std::vector<std::string> tokens;
        std::string v;
        while (in >> v) tokens.push_back(v);
        if (f.out_type == "int32" || f.out_type == "int64") {
            std::vector<std::int64_t> values;
            for (const auto& t : tokens) values.push_back(std::stoll(t));
            f.want = from_vector(values).reshape(sizes);
        } else {
            std::vector<double> values;
            for (const auto& t : tokens) values.push_back(std::strtod(t.c_str(), nullptr));
            f.want = from_vector(values).reshape(sizes);
        }
        r.push_back(std::move(f));
    }
    return r;
}

dtype dtype_named(const std::string& s) {
    for (dtype t : {dtype::bool_, dtype::int64, dtype::float32, dtype::float64, dtype::int32, dtype::float16,
                    dtype::bfloat16})
        if (name(t) == s) return t;
    FAIL("unknown dtype " << s);
    return dtype::float32;
}

Tensor grid() { return arange(0, 12, 1, dtype::float64).reshape({3, 4}); }

using float_op = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;

Tensor grad_case(const std::string& name, const Tensor& a, const Tensor& b) {
    const Tensor x = a.detach().requires_grad_();
    Tensor y = name == "grad_mul_tanh" ? (x * b).tanh().sum()
                                       : F::softmax(matmul(x, b.t()), 1).sum() + matmul(x, b.t()).index({indexing::Slice(), 0}).sum();
    return autograd::grad({y}, {x})[0];
}

const std::map<std::string, float_op>& float_ops() {
    static const std::map<std::string, float_op> ops = {
        {"convert", [](auto& a, auto&, auto&) { return a; }},
        {"convert_big", [](auto&, auto&, auto& c) { return c; }},
        {"add", [](auto& a, auto& b, auto&) { return a + b; }},
        {"sub", [](auto& a, auto& b, auto&) { return a - b; }},
        {"mul", [](auto& a, auto& b, auto&) { return a * b; }},
        {"div", [](auto& a, auto& b, auto&) { return a / b; }},
        {"mul_number", [](auto& a, auto&, auto&) { return a * 0.1; }},
        {"add_number", [](auto& a, auto&, auto&) { return a + 0.3; }},
        {"rsub_number", [](auto& a, auto&, auto&) { return 1.7 - a; }},
        {"square_big", [](auto&, auto&, auto& c) { return c * c; }},
        {"pow2", [](auto& a, auto&, auto&) { return a.pow(2); }},
        {"with_float32", [](auto& a, auto& b, auto&) { return a * b.to(dtype::float32); }},
        {"with_int64", [](auto& a, auto&, auto&) { return a + arange(0, 4, 1, dtype::int64); }},
        {"with_float32_0dim", [](auto& a, auto&, auto&) { return a * full({}, 0.1, dtype::float32); }},
        {"lt", [](auto& a, auto& b, auto&) { return a < b; }},
        {"eq_number", [](auto& a, auto&, auto&) { return a == 0.22; }},
        {"neg", [](auto& a, auto&, auto&) { return -a; }},
        {"abs", [](auto& a, auto&, auto&) { return a.abs(); }},
        {"exp", [](auto& a, auto&, auto&) { return a.exp(); }},
        {"log", [](auto& a, auto&, auto&) { return (a * a).log(); }},  // the fixture's c is a * a here
        {"tanh", [](auto& a, auto&, auto&) { return a.tanh(); }},
        {"sigmoid", [](auto& a, auto&, auto&) { return sigmoid(a); }},
        {"relu", [](auto& a, auto&, auto&) { return relu(a); }},
        {"sqrt", [](auto& a, auto&, auto&) { return a.abs().sqrt(); }},
        {"sum", [](auto& a, auto&, auto&) { return a.sum(); }},
        {"sum_dim", [](auto&, auto&, auto& c) { return c.sum(int_list{1}); }},
        {"mean", [](auto& a, auto&, auto&) { return a.mean(); }},
        {"amax", [](auto& a, auto&, auto&) { return a.amax(int_list{1}); }},
        {"argmax", [](auto& a, auto&, auto&) { return a.argmax(1); }},
        {"softmax", [](auto& a, auto&, auto&) { return F::softmax(a, 1); }},
        {"log_softmax", [](auto& a, auto&, auto&) { return F::log_softmax(a, 1); }},
        {"matmul", [](auto& a, auto& b, auto&) { return matmul(a, b.t()); }},
        {"cat", [](auto& a, auto& b, auto&) { return cat({a, b}, 0); }},
        {"where", [](auto& a, auto& b, auto&) { return where(a > 0, a, b); }},
        {"column", [](auto& a, auto&, auto&) { return a.index({indexing::Slice(), 1}); }},
        {"index_select", [](auto& a, auto&, auto&) { return a.index_select(0, from_vector(std::vector<std::int64_t>{2, 0})); }},
        {"transpose_contiguous", [](auto& a, auto&, auto&) { return a.t().contiguous(); }},
        {"var", [](auto& a, auto&, auto&) { return a.var(int_list{1}); }},
        {"linear", [](auto& a, auto& b, auto&) { return F::linear(a, b); }},
        {"grad_mul_tanh", [](auto& a, auto& b, auto&) { return grad_case("grad_mul_tanh", a, b); }},
        {"grad_matmul_softmax", [](auto& a, auto& b, auto&) { return grad_case("grad_matmul_softmax", a, b); }},
    };
    return ops;
}

const std::map<std::string, float_op>& int_ops() {
    static const std::map<std::string, float_op> ops = {
        {"convert", [](auto& a, auto&, auto&) { return a; }},
        {"add", [](auto& a, auto& b, auto&) { return a + b; }},
        {"mul", [](auto& a, auto& b, auto&) { return a * b; }},
        {"sub_number", [](auto& a, auto&, auto&) { return a - 7; }},
        {"wrap_add", [](auto&, auto&, auto& big) { return big + 1; }},
        {"wrap_mul", [](auto&, auto&, auto& big) { return big * 3; }},
        {"neg_big", [](auto&, auto&, auto& big) { return -big; }},
        {"div", [](auto& a, auto& b, auto&) { return a / b; }},
        {"with_int64", [](auto& a, auto&, auto&) { return a + arange(0, 4, 1, dtype::int64); }},
        {"with_float16", [](auto& a, auto&, auto&) {
             return a * from_vector(std::vector<double>{0.5, 1.5, 2.0, -1.0}).to(dtype::float16);
         }},
        {"with_float_number", [](auto& a, auto&, auto&) { return a * 0.5; }},
        {"abs", [](auto& a, auto&, auto&) { return a.abs(); }},
        {"sum", [](auto& a, auto&, auto&) { return a.sum(); }},
        {"sum_big", [](auto&, auto&, auto& big) { return big.sum(); }},
        {"amax", [](auto& a, auto&, auto&) { return a.amax(int_list{1}); }},
        {"max", [](auto&, auto&, auto& big) { return max(big); }},
        {"argmax", [](auto& a, auto&, auto&) { return a.argmax(1); }},
        {"lt", [](auto& a, auto& b, auto&) { return a < b; }},
        {"cat", [](auto& a, auto& b, auto&) { return cat({a, b}, 1); }},
        {"embedding", [](auto&, auto&, auto&) {
             const Tensor ids = from_vector(std::vector<std::int64_t>{2, 0, 1, 2}, {2, 2}).to(dtype::int32);
             return F::embedding(ids, arange(0, 15, 1, dtype::float32).reshape({3, 5}));
         }},
        {"exp", [](auto&, auto& b, auto&) { return (b - 20).exp(); }},
    };
    return ops;
}

/// Ops whose result is one rounding of an exactly computed value: graft must equal torch
/// bit for bit. The others (sums in another order, transcendental kernels) may differ by one
/// unit in the last place of the result dtype.
bool exact_op(const std::string& op) {
    static const std::vector<std::string> exact = {
        "convert", "convert_big", "add", "sub", "mul", "div", "mul_number", "add_number", "rsub_number",
        "square_big", "pow2", "with_float32", "with_int64", "with_float32_0dim", "lt", "eq_number", "neg", "abs",
        "relu", "amax", "argmax", "cat", "where", "column", "index_select", "transpose_contiguous", "sub_number",
        "wrap_add", "wrap_mul", "neg_big", "with_float16", "with_float_number", "sum", "sum_big",
        "max", "embedding"};
    return std::find(exact.begin(), exact.end(), op) != exact.end();
}

/// One unit in the last place of `type` at magnitude |v| (normal range).
double ulp_at(double v, dtype type) {
    const int mantissa_bits = type == dtype::float16 ? 10 : type == dtype::bfloat16 ? 7 : 23;
    const double m = std::max(std::fabs(v), type == dtype::float16 ? 6.103515625e-05 : 1.17549435e-38);
    return std::ldexp(1.0, std::ilogb(m) - mantissa_bits);
}

}  // namespace

TEST_CASE("dtypes: float32 to float16 and bfloat16 rounds to nearest even, as a neighbour search", "[dtypes]") {
    for (int which = 0; which < 2; ++which) {
        const bool is_half = which == 0;
        float (*to_float)(std::uint16_t) = is_half ? half_to_float : bf16_to_float;
        std::uint16_t (*bits_of)(double) = is_half ? half_bits_of : bf16_bits_of;
        const auto finite = finite_values(to_float);
        std::size_t mismatches = 0, checked = 0;
        for (const float f : probe_floats(finite)) {
            if (!std::isfinite(f)) continue;
            for (const float x : {f, -f}) {
                const double want = reference_round(x, finite, to_float, bits_of);
                const double got = to_float(bits_of(x));
                ++checked;
                if (!(got == want && std::signbit(got) == std::signbit(x))) {
                    if (++mismatches < 5) INFO(x);
                    CHECK(got == want);
                }
            }
        }
        INFO((is_half ? "float16" : "bfloat16") << ": " << checked << " values");
        CHECK(mismatches == 0);
        CHECK(checked > 20000);
        // Every finite 16-bit value converts to float and back unchanged; NaN stays NaN.
        for (std::uint32_t b = 0; b < 0x10000u; ++b) {
            const float v = to_float(static_cast<std::uint16_t>(b));
            if (std::isnan(v)) CHECK(std::isnan(to_float(bits_of(v))));
            else CHECK(bits_of(v) == b);
        }
    }
}

TEST_CASE("dtypes: hand values of the 16-bit formats", "[dtypes]") {
    CHECK(half(1.0f).bits == 0x3C00);
    CHECK(half(-2.0f).bits == 0xC000);
    CHECK(half(65504.0f).bits == 0x7BFF);
    CHECK(half(65520.0f).bits == 0x7C00);           // the midpoint to 2^16 rounds to inf
    CHECK(half(5.960464477539063e-08f).bits == 1);  // 2^-24, the smallest subnormal
    CHECK(half(2.98023223876953125e-08f).bits == 0);  // 2^-25: a tie, to the even 0
    CHECK(bfloat16(1.0f).bits == 0x3F80);
    CHECK(bfloat16(1.00390625f).bits == 0x3F80);    // 1 + 2^-8: a tie, to the even 1
    CHECK(bfloat16(1.01171875f).bits == 0x3F82);    // 1 + 3 * 2^-8: a tie, to the even 1 + 2^-6
    // float64 converts through float32 (PyTorch's order): 1 + 2^-11 + 2^-40 is 1 + 2^-11 in
    // float32, a tie in float16, to the even 1.
    const Tensor x = from_vector(std::vector<double>{1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)});
    CHECK(x.to(dtype::float16).item<double>() == 1.0);
    // Float to int32: truncation; NaN and out of range give INT32_MIN (PyTorch on x86).
    const Tensor f = from_vector(std::vector<double>{2.9, -2.9, 1e10, std::nan("")});
    CHECK(f.to(dtype::int32).to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{2, -2, -2147483648LL, -2147483648LL});
    // int64 to int32 wraps.
    CHECK(from_vector(std::vector<std::int64_t>{(1LL << 32) + 5, 2147483648LL}).to(dtype::int32).to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{5, -2147483648LL});
}

TEST_CASE("dtypes: promotion as torch.promote_types and the result dtypes of mixed ops", "[dtypes]") {
    CHECK(promote_types(dtype::float16, dtype::bfloat16) == dtype::float32);
    CHECK(promote_types(dtype::float16, dtype::float32) == dtype::float32);
    CHECK(promote_types(dtype::bfloat16, dtype::int64) == dtype::bfloat16);
    CHECK(promote_types(dtype::int32, dtype::int64) == dtype::int64);
    CHECK(promote_types(dtype::int32, dtype::bool_) == dtype::int32);
    CHECK(promote_types(dtype::int32, dtype::float16) == dtype::float16);
    CHECK(promote_types(dtype::float64, dtype::bfloat16) == dtype::float64);
    const Tensor h = ones({2}, dtype::float16), i = ones({2}, dtype::int32);
    CHECK((h + 1.5).type() == dtype::float16);               // a number keeps the tensor's float dtype
    CHECK((h + full({}, 1.0, dtype::float64)).type() == dtype::float16);  // so does a 0-dim tensor
    CHECK((i + 1).type() == dtype::int32);
    CHECK((i + 1.5).type() == dtype::float32);               // int tensor with a float number: default float
    CHECK((i + ones({2}, dtype::int64)).type() == dtype::int64);
    CHECK((h + ones({2}, dtype::bfloat16)).type() == dtype::float32);
    CHECK(is_floating_point(dtype::bfloat16));
    CHECK_FALSE(is_floating_point(dtype::int32));
    CHECK(element_size(dtype::float16) == 2);
    CHECK(element_size(dtype::int32) == 4);
}

TEST_CASE("dtypes: ops on float16, bfloat16 and int32 give PyTorch's dtypes and values", "[dtypes]") {
    const auto lines = read_fixture();
    REQUIRE(lines.size() > 100);
    std::size_t checked = 0;
    for (const fixture_line& f : lines) {
        INFO(f.in_type << " " << f.op << " (" << f.source << ")");
        const dtype type = dtype_named(f.in_type);
        Tensor out;
        if (type == dtype::int32) {
            const Tensor a = (arange(0, 12, 1, dtype::int64).reshape({3, 4}) * 397 - 2000).to(type);
            const Tensor b = (arange(0, 12, 1, dtype::int64).reshape({3, 4}) * -3 + 5).to(type);
            const Tensor big = from_vector(std::vector<std::int64_t>{2147483647, -2147483648LL, 1, -1}).to(type);
            const auto it = int_ops().find(f.op);
            REQUIRE(it != int_ops().end());
            out = it->second(a, b, big);
        } else {
            const Tensor a = (grid() * 0.37 - 2.0).to(type), b = (grid() * -0.21 + 1.0).to(type),
                         c = (grid() * 1234.5 - 7000.0).to(type);
            const auto it = float_ops().find(f.op);
            REQUIRE(it != float_ops().end());
            out = it->second(a, b, c);
        }
        CHECK(name(out.type()) == f.out_type);
        REQUIRE(out.sizes() == f.want.sizes());
        if (f.want.type() == dtype::int64) {
            CHECK(out.to(dtype::int64).to_vector<std::int64_t>() == f.want.to_vector<std::int64_t>());
        } else {
            const auto got = out.to(dtype::float64).to_vector<double>(), want = f.want.to_vector<double>();
            for (std::size_t k = 0; k < want.size(); ++k) {
                INFO("element " << k << ": graft " << got[k] << ", torch " << want[k]);
                if (exact_op(f.op) || out.type() == dtype::bool_)
                    CHECK((got[k] == want[k] || (std::isnan(got[k]) && std::isnan(want[k]))));
                else if (f.op.rfind("grad_", 0) == 0)
                    // Documented (docs/tensor.md#dtypes): graft's derivative formulas round after
                    // each op, PyTorch's fused backward kernels (tanh_backward, ...) once.
                    CHECK(std::fabs(got[k] - want[k]) <= 8 * ulp_at(want[k], out.type()));
                else
                    CHECK(std::fabs(got[k] - want[k]) <= ulp_at(want[k], out.type()));
            }
        }
        ++checked;
    }
    CHECK(checked == lines.size());
}

TEST_CASE("dtypes: printing shows the dtype and the values as PyTorch does", "[dtypes]") {
    std::ostringstream s;
    s << from_vector(std::vector<double>{0.1, 1.5, -2.0}).to(dtype::float16);
    CHECK(s.str() == "tensor([ 0.1000,  1.5000, -2.0000], dtype=float16)");
    s.str("");
    s << from_vector(std::vector<double>{1.0, 2.0}).to(dtype::bfloat16);
    CHECK(s.str() == "tensor([1., 2.], dtype=bfloat16)");
    s.str("");
    s << from_vector(std::vector<std::int64_t>{-2147483648LL, 7}).to(dtype::int32);
    CHECK(s.str() == "tensor([-2147483648,           7], dtype=int32)");
    CHECK(ones({1}, dtype::float16).item<float>() == 1.0f);
    CHECK(from_vector(std::vector<double>{0.1}).to(dtype::float16).item<double>() == 0.0999755859375);
}

TEST_CASE("dtypes: factories and random draws of the storage dtypes", "[dtypes]") {
    CHECK(zeros({2, 3}, dtype::bfloat16).type() == dtype::bfloat16);
    CHECK(full({2}, 0.1, dtype::float16).to(dtype::float64).to_vector<double>() ==
          std::vector<double>{0.0999755859375, 0.0999755859375});
    CHECK(arange(0, 5, 2, dtype::int32).to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 2, 4});
    const Tensor u = rand({4096}, dtype::float16);
    CHECK(u.type() == dtype::float16);
    CHECK((u >= 0.0).sum().item<std::int64_t>() == 4096);
    CHECK((u < 1.0).sum().item<std::int64_t>() == 4096);  // a float32 draw that rounds up to 1 stays below 1
    CHECK(randn({8}, dtype::bfloat16).type() == dtype::bfloat16);
    CHECK(randint(0, 10, {16}, dtype::int32).type() == dtype::int32);
    const Tensor h = from_vector(std::vector<half>{half(1.5f), half(-0.25f)});
    CHECK(h.type() == dtype::float16);
    CHECK(h.to_vector<float>() == std::vector<float>{1.5f, -0.25f});
    CHECK(h.data_ptr<half>()[0].bits == 0x3E00);
}

TEST_CASE("dtypes: ops without an int32 kernel refuse as PyTorch does", "[dtypes]") {
    const Tensor i = ones({2, 2}, dtype::int32);
    CHECK_THROWS_WITH(i.mean(), Catch::Contains("int32"));
    CHECK_THROWS_WITH(F::softmax(i, 1), Catch::Contains("floating-point"));
    CHECK_THROWS_WITH(matmul(i, i), Catch::Contains("floating-point"));
    CHECK_THROWS_WITH(matmul(ones({2, 2}, dtype::float16), ones({2, 2}, dtype::bfloat16)),
                      Catch::Contains("same dtype"));
    CHECK(i.sum().item<std::int64_t>() == 4);  // the tensor is usable after the errors
}

TEST_CASE("dtypes: safetensors writes and loads F16, BF16 and I32 bit for bit", "[dtypes][io]") {
    // 1.0 in float16 is 0x3C00, -2.0 is 0xC000; in bfloat16 1.0 is 0x3F80; little-endian.
    const Tensor h = from_vector(std::vector<double>{1.0, -2.0}).to(dtype::float16);
    const Tensor b = from_vector(std::vector<double>{1.0}).to(dtype::bfloat16);
    const Tensor i = from_vector(std::vector<std::int64_t>{-1, 258}).to(dtype::int32);
    const auto bytes = io::save({{"h", h}, {"b", b}, {"i", i}});
    const std::string s(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    CHECK(s.find(R"("h":{"dtype":"F16","shape":[2])") != std::string::npos);
    CHECK(s.find(R"("b":{"dtype":"BF16","shape":[1])") != std::string::npos);
    CHECK(s.find(R"("i":{"dtype":"I32","shape":[2])") != std::string::npos);
    // Data in the reference writer's order (I32, BF16, F16): ff ff ff ff 02 01 00 00 | 80 3f | 00 3c 00 c0.
    const std::string data = s.substr(s.size() - 14);
    CHECK(data == std::string("\xff\xff\xff\xff\x02\x01\x00\x00\x80\x3f\x00\x3c\x00\xc0", 14));
    const io::tensor_map m = io::load(bytes);
    CHECK(m.at("h").type() == dtype::float16);
    CHECK(m.at("h").to_vector<double>() == std::vector<double>{1.0, -2.0});
    CHECK(m.at("b").type() == dtype::bfloat16);
    CHECK(m.at("i").type() == dtype::int32);
    CHECK(m.at("i").to_vector<std::int64_t>() == std::vector<std::int64_t>{-1, 258});
}

TEST_CASE("dtypes: jit::script and capture::aot on float16 and bfloat16 give eager's values", "[dtypes][jit]") {
    const auto f = [](const Tensor& x, const Tensor& w) {
        return (F::softmax(F::linear(x, w), 1) * 2.0 + x.index({indexing::Slice(), indexing::Slice(0, 3)})).tanh();
    };
    for (dtype type : {dtype::float16, dtype::bfloat16}) {
        INFO(name(type));
        const Tensor x = (grid() * 0.37 - 2.0).to(type), w = (grid() * -0.21 + 1.0).reshape({3, 4}).to(type);
        const Tensor eager = f(x, w);
        REQUIRE(eager.type() == type);
        auto scripted = jit::script(f);
        for (int k = 0; k < 3; ++k) {  // profiling runs, then the optimized plan
            const Tensor got = scripted(x, w);
            CHECK(got.type() == type);
            CHECK(equal(got, eager));
        }
        const Tensor xg = x.detach().requires_grad_(), wg = w.detach().requires_grad_();
        auto compiled = capture::aot([&](const Tensor& a, const Tensor& b) { return f(a, b).sum(); }, {xg, wg});
        const Tensor y = compiled({xg, wg})[0];
        CHECK(equal(y, f(xg, wg).sum()));
        const auto g_aot = autograd::grad({y}, {xg, wg});
        const auto g_eager = autograd::grad({f(xg, wg).sum()}, {xg, wg});
        CHECK(g_aot[0].type() == type);
        CHECK(equal(g_aot[0], g_eager[0]));
        CHECK(equal(g_aot[1], g_eager[1]));
    }
}

TEST_CASE("dtypes: a PyTorch checkpoint stored in float16 and bfloat16 loads into a float32 model", "[dtypes][io][nn]") {
    // tests/fixtures/gen_half_checkpoint.py: torch's Sequential(Linear(4, 3), Tanh, Linear(3, 2))
    // with its first layer stored as F16 and its second as BF16, and torch's output of the
    // float32 model after load_state_dict (which converts).
    const std::string dir = std::string(GRAFT_SOURCE_DIR) + "/tests/fixtures/";
    const io::tensor_map stored = io::load_file(dir + "half_checkpoint.safetensors");
    CHECK(stored.at("0.weight").type() == dtype::float16);
    CHECK(stored.at("2.weight").type() == dtype::bfloat16);
    auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::Tanh>(),
                                                  std::make_shared<nn::Linear>(3, 2));
    nn::load_state_dict(*model, dir + "half_checkpoint.safetensors");
    for (const auto& [n, t] : model->state_dict()) {
        INFO(n);
        CHECK(t.type() == dtype::float32);
        CHECK(equal(t, stored.at(n).to(dtype::float32)));  // float32 holds every 16-bit value
    }
    std::ifstream file(dir + "half_checkpoint.txt");
    REQUIRE(file.good());
    std::string line;
    std::vector<double> want;
    while (std::getline(file, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream in(line);
        double v = 0;
        while (in >> v) want.push_back(v);
    }
    const Tensor x = arange(0, 8, 1, dtype::float32).reshape({2, 4}) * 0.25 - 1.0;
    const auto got = model->forward(x).to(dtype::float64).to_vector<double>();
    REQUIRE(got.size() == want.size());
    for (std::size_t k = 0; k < want.size(); ++k) CHECK(std::fabs(got[k] - want[k]) <= 1e-6 * (1 + std::fabs(want[k])));
}
