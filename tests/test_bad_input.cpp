// Bad input (issue 14): sizes that overflow, conversions without a value, allocations the
// machine cannot give. Each probe must throw graft::error with a clear message and leave
// graft usable, with no sanitizer report (CI runs this file under ASan and UBSan).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <limits>
#include <string>
#include <graft/graft.hpp>

using namespace graft;

namespace {

constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();

/// graft still works after a refused call: a small computation against its hand value.
void still_usable() {
    const Tensor x = ones({2, 3});
    CHECK((x * 2.0 + 1.0).sum().item<double>() == 18.0);
}

}  // namespace

TEST_CASE("bad input: factories refuse sizes whose element count overflows", "[bad_input]") {
    CHECK_THROWS_WITH(empty({std::int64_t{1} << 31, std::int64_t{1} << 31}),  // 2^62 floats: 2^64 bytes
                      Catch::Contains("empty") && Catch::Contains("cannot be addressed"));
    CHECK_THROWS_WITH(ones({(std::int64_t{1} << 62) + 1, 4}), Catch::Contains("more elements than an int64 can count"));
    CHECK_THROWS_WITH(zeros({int64_max, 2}), Catch::Contains("[9223372036854775807, 2]"));
    // Zero elements, but contiguous strides would still overflow.
    CHECK_THROWS_AS(empty({0, int64_max, 4}), graft::error);
    CHECK_THROWS_WITH(empty({-3, 2}), Catch::Contains("negative dimension -3"));
    still_usable();
}

TEST_CASE("bad input: an allocation beyond the machine's memory throws instead of aborting", "[bad_input]") {
    // 4 TiB: representable, addressable, but no machine this runs on has it.
    CHECK_THROWS_WITH(empty({std::int64_t{1} << 40}, dtype::float32),
                      Catch::Contains("out of memory allocating") && Catch::Contains("bytes for a tensor"));
    still_usable();
}

TEST_CASE("bad input: arange whose element count overflows", "[bad_input]") {
    CHECK_THROWS_WITH(arange(std::numeric_limits<std::int64_t>::min(), int64_max, 1, dtype::int64),
                      Catch::Contains("more elements than an int64 can count"));
    CHECK_THROWS_WITH(arange(0.0, 1e300, 1e-300), Catch::Contains("arange"));
    // The extreme step still counts right: one element.
    const Tensor one = arange(std::int64_t{0}, int64_max, int64_max, dtype::int64);
    CHECK(one.numel() == 1);
    still_usable();
}

TEST_CASE("bad input: views whose sizes, strides or offsets overflow", "[bad_input]") {
    const Tensor x = arange(std::int64_t{0}, std::int64_t{12}, std::int64_t{1}, dtype::int64).reshape({3, 4});
    CHECK_THROWS_WITH(x.narrow(0, 1, int64_max), Catch::Contains("exceeds dimension size"));
    CHECK_THROWS_WITH(empty({0}).reshape({std::int64_t{1} << 32, std::int64_t{1} << 32}),
                      Catch::Contains("more elements than an int64 can count"));
    CHECK_THROWS_WITH(ones({1}).expand({std::int64_t{1} << 32, std::int64_t{1} << 32}),
                      Catch::Contains("more elements than an int64 can count"));
    CHECK_THROWS_WITH(ones({1}).expand({-5}), Catch::Contains("expanded size -5"));
    CHECK_THROWS_WITH(x.as_strided({2, 2}, {std::int64_t{1} << 62, 1}, 0), Catch::Contains("as_strided"));
    CHECK_THROWS_WITH(x.as_strided({3, 3}, {int64_max, int64_max}, 0), Catch::Contains("as_strided"));
    // slice with the largest step: one element, the first (Python's x[::2**63-1]).
    const Tensor s = x.slice(1, 0, 4, int64_max);
    REQUIRE(s.sizes() == int_list{3, 1});
    CHECK(s.select(0, 2).item<std::int64_t>() == 8);
    const Tensor none = x.slice(1, 4, 4, int64_max);
    CHECK(none.sizes() == int_list{3, 0});
    still_usable();
}

TEST_CASE("bad input: NaN and infinities converted to int64 give INT64_MIN (x86-64 PyTorch), no UB", "[bad_input]") {
    constexpr std::int64_t int64_min = std::numeric_limits<std::int64_t>::min();
    constexpr double inf = std::numeric_limits<double>::infinity();
    const Tensor f = tensor({std::nan(""), inf, -inf, 1e19, -2.5, 3.9}, {-1}, dtype::float64);
    const Tensor i = f.to(dtype::int64);
    const std::vector<std::int64_t> want{int64_min, int64_min, int64_min, int64_min, -2, 3};
    for (std::size_t k = 0; k < want.size(); ++k) CHECK(i.data_ptr<std::int64_t>()[k] == want[k]);
    CHECK(full({2}, std::nan(""), dtype::int64).data_ptr<std::int64_t>()[1] == int64_min);
    CHECK(full({1}, -7.9, dtype::int64).item<std::int64_t>() == -7);
    still_usable();
}

TEST_CASE("bad input: graph text with constants whose sizes overflow or do not match is refused before allocating",
          "[bad_input]") {
    // Sizes that wrap to 4 elements, with 4 values.
    CHECK_THROWS_WITH(ir::parse("graph():\n  %c : Tensor = prim::Constant[value=tensor(Float(4611686018427387905, 4), "
                                "[1., 2., 3., 4.])]()\n  return (%c)\n"),
                      Catch::Contains("line 2") && Catch::Contains("more elements than an int64 can count"));
    // 1 TiB of floats announced by a 80-byte text: counted, not allocated.
    CHECK_THROWS_WITH(ir::parse("graph():\n  %c : Tensor = prim::Constant[value=tensor(Float(262144, 1048576), [1.])]()\n"
                                "  return (%c)\n"),
                      Catch::Contains("1 values for 274877906944 elements"));
    // Trailing garbage after a number, in a float32 tensor constant and in a float attribute.
    CHECK_THROWS_WITH(ir::parse("graph():\n  %c : Tensor = prim::Constant[value=tensor(Float(1), [1.5x])]()\n  return (%c)\n"),
                      Catch::Contains("bad number '1.5x'") && Catch::Contains("column"));
    CHECK_THROWS_WITH(ir::parse("graph():\n  %c : float = prim::Constant[value=1.5x]()\n  return (%c)\n"),
                      Catch::Contains("bad number '1.5x'"));
    still_usable();
}

TEST_CASE("bad input: lint checks constants and elementwise results against their declared types", "[bad_input]") {
    // An elementwise result declared with a rank its inputs cannot broadcast to.
    auto g = ir::parse("graph(%x : Float(2)):\n  %y : Long(7, 7) = tanh(%x)\n  return (%y)\n");
    CHECK_THROWS_WITH(g->lint(), Catch::Contains("tanh of inputs of rank 1 cannot produce %y"));
    // ... or with a dtype the op does not compute (tanh of float32 is float32; float32 * float64
    // is float64; a comparison gives bool; a 0-dim float64 does not promote a float32 tensor).
    CHECK_THROWS_WITH(ir::parse("graph(%x : Float(2)):\n  %y : Long(2) = tanh(%x)\n  return (%y)\n")->lint(),
                      Catch::Contains("tanh of the declared input types computes float32, but %y is declared Long(2)"));
    CHECK_THROWS_WITH(ir::parse("graph(%x : Float(2), %w : Double(2)):\n  %y : Float(2) = mul(%x, %w)\n"
                                "  return (%y)\n")->lint(),
                      Catch::Contains("computes float64"));
    CHECK_NOTHROW(ir::parse("graph(%x : Float(2), %w : Double()):\n  %y : Float(2) = mul(%x, %w)\n  return (%y)\n")->lint());
    CHECK_NOTHROW(ir::parse("graph(%x : Float(2), %w : Float(2)):\n  %y : Bool(2) = lt(%x, %w)\n  return (%y)\n")->lint());
    // A constant whose value is a string, used as an If condition.
    CHECK_THROWS_WITH(ir::parse("graph(%x : Float):\n  %c : bool = prim::Constant[value=\"yes\"]()\n"
                                "  %r : Float = prim::If(%c)\n    block0():\n      -> (%x)\n    block1():\n"
                                "      -> (%x)\n  return (%r)\n")
                          ->lint(),
                      Catch::Contains("'value' must be a tensor or a number"));
    ir::Graph h;
    h.append<ir::kinds::constant>()->set_attr("value", std::int64_t{3})->add_output(ir::Type::float_type());
    CHECK_THROWS_WITH(h.lint(), Catch::Contains("is declared float but its value is a int"));
    still_usable();
}

TEST_CASE("bad input: a graph with a use before its definition (a cycle) is refused by passes and the interpreter",
          "[bad_input]") {
    auto g = ir::parse("graph(%x : Float):\n  %a : Float = tanh(%x)\n  %b : Float = neg(%a)\n  return (%b)\n");
    ir::Node* tanh_node = g->block()->nodes().front();
    ir::Node* neg_node = *std::next(g->block()->nodes().begin());
    // tanh now reads neg's output and neg reads tanh's: a cycle.
    tanh_node->replace_input(0, neg_node->output());
    CHECK_THROWS_WITH(ir::default_pipeline::run(*g), Catch::Contains("invalid before any pass ran") &&
                                                         Catch::Contains("before it is defined"));
    CHECK_THROWS_WITH(ir::interpret(*g, std::vector<ir::ivalue>{ones({2})}),
                      Catch::Contains("is used before it is defined"));
    CHECK_THROWS_WITH(jit::executor(*g), Catch::Contains("before it is defined"));
    CHECK_THROWS_WITH(jit::executor(g->copy()), Catch::Contains("before it is defined"));
    CHECK_THROWS_WITH(jit::executor(std::unique_ptr<ir::Graph>()), Catch::Contains("the graph is null"));
    still_usable();
}

TEST_CASE("bad input: malformed fusion strategies and environment numbers", "[bad_input]") {
    CHECK_THROWS_WITH(jit::parse_strategy("STATIC:99999999999999999999999"), Catch::Contains("cannot parse fusion strategy"));
    CHECK_THROWS_WITH(jit::parse_strategy("STATIC:20000"), Catch::Contains("more than 10000"));
    CHECK_THROWS_WITH(jit::parse_strategy("STATIC:2x"), Catch::Contains("cannot parse fusion strategy"));
    CHECK_THROWS_WITH(jit::parse_strategy("STATIC:-2"), Catch::Contains("cannot parse fusion strategy"));
    const jit::strategy ok = jit::parse_strategy("static:2,DYNAMIC:10");
    CHECK(ok == jit::default_fusion_strategy::value());
}

TEST_CASE("bad input: in-place ops refuse a result type that cannot be cast back (PyTorch's rule)", "[bad_input]") {
    Tensor i = tensor({1, 2});
    CHECK_THROWS_WITH(i.mul_(0.5), Catch::Contains("result type float32 can't be cast to the desired output type int64"));
    CHECK_THROWS_WITH(i.add_(1.5), Catch::Contains("can't be cast"));
    CHECK(i.data_ptr<std::int64_t>()[0] == 1);  // untouched
    CHECK(i.mul_(3).data_ptr<std::int64_t>()[1] == 6);
    Tensor b = tensor({true, false});
    CHECK_THROWS_WITH(b.add_(1), Catch::Contains("can't be cast"));
    Tensor f = tensor({1.0, 2.0});
    CHECK(f.mul_(2).data_ptr<float>()[1] == 4.0f);  // an int on a float tensor is fine
    still_usable();
}

TEST_CASE("bad input: hooks that change a gradient's dtype or shape, or return the wrong number of gradients",
          "[bad_input]") {
    Tensor x = randn({3});
    x.requires_grad_();
    SECTION("a tensor hook returning another dtype (PyTorch: hook has changed the type of value)") {
        const Tensor y = x * 2.0;
        (void)y.register_hook([](const Tensor& g) { return g.to(dtype::float64); });
        CHECK_THROWS_WITH(y.sum().backward(),
                          Catch::Contains("a tensor hook of") && Catch::Contains("from float32 [3] to float64 [3]"));
    }
    SECTION("a tensor hook returning another shape") {
        const Tensor y = x * 2.0;
        (void)y.register_hook([](const Tensor& g) { return g.sum(); });
        CHECK_THROWS_WITH(y.sum().backward(), Catch::Contains("from float32 [3] to float32 []"));
    }
    SECTION("a node pre-hook returning two gradients for one output") {
        const Tensor y = x * 2.0;
        (void)y.grad_fn()->register_prehook(
            [](const autograd::tensor_list& g) { return std::optional<autograd::tensor_list>(autograd::tensor_list{g[0], g[0]}); });
        CHECK_THROWS_WITH(y.sum().backward(), Catch::Contains("returned 2 gradients for a node with 1 outputs"));
    }
    SECTION("a hook that keeps dtype and shape works") {
        const Tensor y = x * 2.0;
        (void)y.register_hook([](const Tensor& g) { return g * 3.0; });
        y.sum().backward();
        REQUIRE(x.grad().defined());
        CHECK(allclose(x.grad(), full({3}, 6.0)));
    }
    still_usable();
}

TEST_CASE("bad input: under AddressSanitizer the large-buffer cache is off (use after free stays visible)",
          "[bad_input]") {
    bool asan = false;
#if defined(__SANITIZE_ADDRESS__)
    asan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    asan = true;
#endif
#endif
    if (std::getenv("GRAFT_BUFFER_CACHE_MB") != nullptr) return;  // set by hand: whatever it says
    if (asan) CHECK(graft::detail::buffer_cache::instance().limit() == 0);
    else CHECK(graft::detail::buffer_cache::instance().limit() > 0);
}

TEST_CASE("bad input: indexes past a node's inputs, outputs or saved tensors throw graft::error", "[bad_input]") {
    auto g = ir::parse("graph(%x : Float(2)):\n  %y : Float(2) = tanh(%x)\n  return (%y)\n");
    const ir::Node* n = g->block()->nodes().front();
    CHECK_THROWS_WITH(n->input(3), Catch::Contains("tanh: input 3 of 1"));
    CHECK_THROWS_WITH(n->output(1), Catch::Contains("tanh: output 1 of 1"));
    Tensor x = randn({2});
    x.requires_grad_();
    const Tensor y = x * 2.0;
    const auto fn = y.grad_fn();
    REQUIRE(fn);
    CHECK_THROWS_WITH(fn->output_metadata(4), Catch::Contains("output 4 of 1"));
    still_usable();
}

TEST_CASE("bad input: ops whose broadcast result has more elements than an int64 can count", "[bad_input]") {
    // Views of one element: no memory behind these shapes.
    const Tensor a = ones({1}).expand({std::int64_t{1} << 40, 1, 2, 2});
    const Tensor b = ones({1}).expand({1, std::int64_t{1} << 40, 2, 2});
    CHECK_THROWS_WITH(matmul(a, b), Catch::Contains("more elements than an int64 can count"));
    CHECK_THROWS_WITH(a + b, Catch::Contains("more elements than an int64 can count"));
    CHECK_THROWS_AS(tanh(a) * b, graft::error);
    CHECK_THROWS_WITH(a.to_vector<float>(), Catch::Contains("out of memory allocating") && Catch::Contains("to_vector"));
    still_usable();
}

TEST_CASE("bad input: random factories and random ops under capture", "[bad_input]") {
    CHECK_THROWS_WITH(randint(5, 5, {3}), Catch::Contains("expected low < high"));
    CHECK_THROWS_WITH(randint(std::numeric_limits<std::int64_t>::min(), 0, {2}, dtype::bool_),
                      Catch::Contains("dtype bool"));
    CHECK_THROWS_WITH(bernoulli(tensor({0.2, -0.1})), Catch::Contains("0 <= p <= 1"));
    CHECK_THROWS_WITH(bernoulli(tensor({std::nan("")})), Catch::Contains("0 <= p <= 1"));
    CHECK_THROWS_WITH(bernoulli(arange(3)), Catch::Contains("floating-point"));
    CHECK_THROWS_WITH(bernoulli(zeros({2}), 1.5), Catch::Contains("0 <= p <= 1"));
    CHECK_THROWS_AS(rand_like(Tensor()), graft::error);
    CHECK_THROWS_AS(randn_like(arange(2)), graft::error);
    // randint over the whole int64 range: no overflow in the range's width.
    const auto v = randint(std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(), {64})
                       .to_vector<std::int64_t>();
    CHECK(v.size() == 64);
    generator mine(3);
    const Tensor x = randn({3});
    CHECK_THROWS_WITH(capture::trace([&](const Tensor& a) { return a + randn({3}, dtype::float32, mine); }, {x}),
                      Catch::Contains("generator other than graft::default_generator()"));
    still_usable();
}

TEST_CASE("bad input: SymInt arithmetic that overflows or divides by zero", "[bad_input]") {
    const Tensor x = randn({4, 2});
    const SymInt n = x.sym_size(0);
    CHECK_THROWS_WITH(n / (n - 4), Catch::Contains("division by zero"));
    CHECK_THROWS_WITH(n % 0, Catch::Contains("division by zero"));
    CHECK_THROWS_WITH(SymInt(int64_max) * n, Catch::Contains("overflows int64"));
    CHECK_THROWS_WITH(SymInt(-int64_max - 1) - n, Catch::Contains("overflows int64"));
    // Under capture too: the trace stops with the same error, and capture still works after.
    CHECK_THROWS_WITH(capture::trace([](const Tensor& a) { return a.narrow_symint(0, 0, a.sym_size(0) / (a.sym_size(0) - 4)); },
                                     {x}),
                      Catch::Contains("division by zero"));
    CHECK(capture::trace([](const Tensor& a) { return a * 2.0; }, {x}).graph().outputs().size() == 1);
    still_usable();
}

TEST_CASE("bad input: a closed-over tensor that requires grad under capture::aot", "[bad_input]") {
    const Tensor w = randn({3}).requires_grad_();
    CHECK_THROWS_WITH(capture::aot([&](const Tensor& a) { return (a * w).sum(); }, {randn({3})}),
                      Catch::Contains("requires grad but is not one of its inputs"));
    // A view of a non-whole tensor that requires grad (a column of a non-leaf) under trace.
    const Tensor base = (randn({3, 3}) * 1.0).requires_grad_();
    CHECK_NOTHROW(capture::trace([&](const Tensor& a) { return a * base.select(1, 0); }, {randn({3})}));
    still_usable();
}
