// Runtime IR passes, each tested on graphs written in the text form: the
// expected text after the pass, and identical results from the interpreter.
#include <catch2/catch.hpp>

#include <cstring>

#include <graft/graft.hpp>
#include <graft/ir/ir.hpp>
#include <graft/ir/passes.hpp>

using namespace graft;

namespace {

template <class Pass>
void check_pass(const std::string& before, const std::string& after, const std::vector<ir::ivalue>& inputs = {}) {
    auto g = ir::parse(before);
    g->lint();
    auto original = g->copy();
    Pass::run(*g);
    g->lint();
    CHECK(ir::to_string(*g) == after);
    // The pass is idempotent on its own output.
    auto again = g->copy();
    CHECK_FALSE(Pass::run(*again));
    if (inputs.empty()) return;
    // Same values, bit for bit.
    const auto expect = ir::interpret(*original, inputs);
    const auto got = ir::interpret(*g, inputs);
    REQUIRE(expect.size() == got.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        const Tensor e = std::get<Tensor>(expect[i]).contiguous(), r = std::get<Tensor>(got[i]).contiguous();
        REQUIRE(e.sizes() == r.sizes());
        REQUIRE(e.type() == r.type());
        CHECK(std::memcmp(e.raw_data(), r.raw_data(), static_cast<std::size_t>(e.numel()) * element_size(e.type())) == 0);
    }
}

std::vector<ir::ivalue> randn_inputs(std::initializer_list<int_list> shapes, std::uint64_t seed = 1) {
    manual_seed(seed);
    std::vector<ir::ivalue> r;
    for (const auto& s : shapes) r.emplace_back(randn(s));
    return r;
}

/// A user-written pass that corrupts the graph (for the lint test).
struct breaks_graph {
    static constexpr std::string_view name = "breaks_graph";
    static bool run(ir::Graph& graph) {
        graph.block()->nodes().front()->add_input(graph.inputs()[0]);
        return true;
    }
};

}  // namespace

TEST_CASE("ir passes: dce removes unused pure nodes, keeps mutations", "[ir][passes]") {
    check_pass<ir::dce>(R"(graph(%x : Float(3), %y : Float(3)):
  %a : Float(3) = exp(%x)
  %b : Float(3) = tanh(%a)
  %c : Float(3) = mul(%x, %y)
  %d : Float(3) = copy_(%y, %x)
  %e : Float(3) = add(%c, %c)
  return (%c)
)",
                        R"(graph(%x : Float(3), %y : Float(3)):
  %c : Float(3) = mul(%x, %y)
  %d : Float(3) = copy_(%y, %x)
  return (%c)
)");
}

TEST_CASE("ir passes: dce inside and of If blocks", "[ir][passes]") {
    check_pass<ir::dce>(R"(graph(%x : Float(3), %f : bool):
  %u : Tensor = prim::If(%f)
    block0():
      %a : Float(3) = exp(%x)
      -> (%a)
    block1():
      %b : Float(3) = sin(%x)
      -> (%b)
  %v : Tensor = prim::If(%f)
    block0():
      %dead : Float(3) = cos(%x)
      %c : Float(3) = neg(%x)
      -> (%c)
    block1():
      -> (%x)
  return (%v)
)",
                        R"(graph(%x : Float(3), %f : bool):
  %v : Tensor = prim::If(%f)
    block0():
      %c : Float(3) = neg(%x)
      -> (%c)
    block1():
      -> (%x)
  return (%v)
)");
}

TEST_CASE("ir passes: cse merges identical pure nodes, respecting scope and attributes", "[ir][passes]") {
    check_pass<ir::cse>(R"(graph(%x : Float(2, 3), %f : bool):
  %a : Float(2, 3) = exp(%x)
  %b : Float(2, 3) = exp(%x)
  %s1 : Float(3) = sum[dims=[0]](%a)
  %s2 : Float(2) = sum[dims=[1]](%b)
  %s3 : Float(3) = sum[dims=[0]](%b)
  %v : Tensor = prim::If(%f)
    block0():
      %c : Float(2, 3) = exp(%x)
      %d : Float(2, 3) = tanh(%c)
      -> (%d)
    block1():
      %e : Float(2, 3) = tanh(%x)
      -> (%e)
  %w : Float(2, 3) = tanh(%x)
  %m : Float(2, 3) = copy_(%x, %w)
  %n : Float(2, 3) = copy_(%x, %w)
  return (%s1, %s2, %s3, %v, %w)
)",
                        R"(graph(%x : Float(2, 3), %f : bool):
  %a : Float(2, 3) = exp(%x)
  %s1 : Float(3) = sum[dims=[0]](%a)
  %s2 : Float(2) = sum[dims=[1]](%a)
  %v : Tensor = prim::If(%f)
    block0():
      %d : Float(2, 3) = tanh(%a)
      -> (%d)
    block1():
      %e : Float(2, 3) = tanh(%x)
      -> (%e)
  %w : Float(2, 3) = tanh(%x)
  %m : Float(2, 3) = copy_(%x, %w)
  %n : Float(2, 3) = copy_(%x, %w)
  return (%s1, %s2, %s1, %v, %w)
)");
}

TEST_CASE("ir passes: cse keeps constants that differ only in the sign of zero", "[ir][passes]") {
    const std::string text = R"(graph(%x : Float(2)):
  %p : float = prim::Constant[value=0.]()
  %n : float = prim::Constant[value=-0.]()
  %a : Float(2) = add(%x, %p)
  %b : Float(2) = add(%x, %n)
  return (%a, %b)
)";
    check_pass<ir::cse>(text, text, {tensor({-0.0f, 1.0f})});
}

TEST_CASE("ir passes: constant propagation folds constant subgraphs and constant If", "[ir][passes]") {
    check_pass<ir::constant_propagation>(R"(graph(%x : Float(2)):
  %k : Tensor = prim::Constant[value=tensor(Float(2), [1., 4.])]()
  %s : Tensor = sqrt(%k)
  %two : float = prim::Constant[value=2.]()
  %t : Tensor = mul(%s, %two)
  %y : Tensor = add(%x, %t)
  %f : bool = prim::Constant[value=true]()
  %z : Tensor = prim::If(%f)
    block0():
      %e : Tensor = exp(%y)
      -> (%e)
    block1():
      -> (%y)
  return (%z)
)",
                                         R"(graph(%x : Float(2)):
  %k : Tensor = prim::Constant[value=tensor(Float(2), [1., 4.])]()
  %s : Tensor = prim::Constant[value=tensor(Float(2), [1., 2.])]()
  %two : float = prim::Constant[value=2.]()
  %t : Tensor = prim::Constant[value=tensor(Float(2), [2., 4.])]()
  %y : Tensor = add(%x, %t)
  %f : bool = prim::Constant[value=true]()
  %e : Tensor = exp(%y)
  return (%e)
)",
                                         randn_inputs({{2}}));
}

TEST_CASE("ir passes: constant pooling hoists and merges constants", "[ir][passes]") {
    check_pass<ir::constant_pooling>(R"(graph(%x : Float(2), %f : bool):
  %a : Float(2) = exp(%x)
  %c1 : float = prim::Constant[value=2.]()
  %b : Float(2) = mul(%a, %c1)
  %v : Tensor = prim::If(%f)
    block0():
      %c2 : float = prim::Constant[value=2.]()
      %c3 : float = prim::Constant[value=3.]()
      %d : Float(2) = mul(%b, %c2)
      %e : Float(2) = add(%d, %c3)
      -> (%e)
    block1():
      -> (%b)
  return (%v)
)",
                                     R"(graph(%x : Float(2), %f : bool):
  %c1 : float = prim::Constant[value=2.]()
  %c3 : float = prim::Constant[value=3.]()
  %a : Float(2) = exp(%x)
  %b : Float(2) = mul(%a, %c1)
  %v : Tensor = prim::If(%f)
    block0():
      %d : Float(2) = mul(%b, %c1)
      %e : Float(2) = add(%d, %c3)
      -> (%e)
    block1():
      -> (%b)
  return (%v)
)",
                                     std::vector<ir::ivalue>{randn({2}), true});
}

TEST_CASE("ir passes: peephole rewrites only what is exact", "[ir][passes]") {
    check_pass<ir::peephole>(R"(graph(%x : Float(4), %i : Long(4), %u : Tensor):
  %one : float = prim::Constant[value=1.]()
  %zero : float = prim::Constant[value=0.]()
  %nzero : float = prim::Constant[value=-0.]()
  %a : Float(4) = mul(%x, %one)
  %b : Float(4) = mul(%one, %a)
  %c : Float(4) = div(%b, %one)
  %d : Float(4) = sub(%c, %zero)
  %e : Float(4) = add(%d, %nzero)
  %f : Float(4) = add(%e, %zero)
  %g : Float(4) = neg(%f)
  %h : Float(4) = neg(%g)
  %p : Float(4) = mul(%i, %one)
  %q : Tensor = mul(%u, %one)
  %t1 : Tensor = transpose[dim0=0, dim1=1](%u)
  %t2 : Tensor = transpose[dim0=1, dim1=0](%t1)
  return (%h, %p, %q, %t2)
)",
                             R"(graph(%x : Float(4), %i : Long(4), %u : Tensor):
  %one : float = prim::Constant[value=1.]()
  %zero : float = prim::Constant[value=0.]()
  %nzero : float = prim::Constant[value=-0.]()
  %f : Float(4) = add(%x, %zero)
  %g : Float(4) = neg(%f)
  %p : Float(4) = mul(%i, %one)
  %q : Tensor = mul(%u, %one)
  %t1 : Tensor = transpose[dim0=0, dim1=1](%u)
  return (%f, %p, %q, %u)
)",
                             std::vector<ir::ivalue>{tensor({-0.0f, 1.5f, -2.0f, 0.0f}), arange(1, 5), randn({2, 2})});
}

TEST_CASE("ir passes: no-op views are removed when sizes are known", "[ir][passes]") {
    check_pass<ir::remove_noop_views>(R"(graph(%x : Float(2, 3), %u : Tensor):
  %a : Float(2, 3) = expand[sizes=[2, 3]](%x)
  %b : Float(2, 3) = reshape[sizes=[2, 3]](%a)
  %c : Float(2, 3) = narrow[dim=-1, length=3, start=0](%b)
  %d : Float(2, 3) = permute[dims=[0, 1]](%c)
  %e : Float(2, 3) = transpose[dim0=1, dim1=1](%d)
  %f : Float(2, 2) = narrow[dim=1, length=2, start=0](%e)
  %g : Tensor = expand[sizes=[2, 3]](%u)
  %h : Float(3, 2) = reshape[sizes=[3, 2]](%x)
  return (%e, %f, %g, %h)
)",
                                      R"(graph(%x : Float(2, 3), %u : Tensor):
  %f : Float(2, 2) = narrow[dim=1, length=2, start=0](%x)
  %g : Tensor = expand[sizes=[2, 3]](%u)
  %h : Float(3, 2) = reshape[sizes=[3, 2]](%x)
  return (%x, %f, %g, %h)
)",
                                      std::vector<ir::ivalue>{randn({2, 3}), randn({1, 3})});
}

TEST_CASE("ir passes: inlining splices called graphs", "[ir][passes]") {
    check_pass<ir::inline_calls>(R"(graph(%x : Float(3), %y : Float(3)):
  %r : Float(3), %s : Float(3) = prim::Call(%x, %y)
    block0(%a : Float(3), %b : Float(3)):
      %m : Float(3) = mul(%a, %b)
      %t : Float(3) = prim::Call(%m)
        block0(%p : Float(3)):
          %q : Float(3) = tanh(%p)
          -> (%q)
      -> (%t, %m)
  %z : Float(3) = add(%r, %s)
  return (%z)
)",
                                 R"(graph(%x : Float(3), %y : Float(3)):
  %m : Float(3) = mul(%x, %y)
  %q : Float(3) = tanh(%m)
  %z : Float(3) = add(%q, %m)
  return (%z)
)",
                                 randn_inputs({{3}, {3}}));
}

TEST_CASE("ir passes: canonicalize orders commutative operands and renumbers", "[ir][passes]") {
    check_pass<ir::canonicalize>(R"(graph(%x : Float(3), %y : Float(3)):
  %7 : Float(3) = exp(%y)
  %3 : Float(3) = mul(%7, %x)
  %named : Float(3) = sub(%3, %x)
  %1 : Float(3) = add(%named, %x)
  return (%1)
)",
                                 R"(graph(%x : Float(3), %y : Float(3)):
  %0 : Float(3) = exp(%y)
  %1 : Float(3) = mul(%x, %0)
  %named : Float(3) = sub(%1, %x)
  %2 : Float(3) = add(%x, %named)
  return (%2)
)",
                                 randn_inputs({{3}, {3}}));
}

TEST_CASE("ir passes: a pipeline is a type, it lints after every pass", "[ir][passes]") {
    auto g = ir::parse(R"(graph(%x : Float(3)):
  %one : float = prim::Constant[value=1.]()
  %a : Float(3) = mul(%x, %one)
  %b : Float(3) = exp(%a)
  %c : Float(3) = exp(%x)
  %d : Float(3) = add(%b, %c)
  %one2 : float = prim::Constant[value=1.]()
  %unused : Float(3) = mul(%d, %one2)
  return (%d)
)");
    const Tensor x = randn({3});
    const Tensor before = ir::interpret(*g, std::vector<Tensor>{x})[0];
    CHECK(ir::default_pipeline::run(*g, {.lint = true}));
    CHECK(ir::to_string(*g) == R"(graph(%x : Float(3)):
  %b : Float(3) = exp(%x)
  %d : Float(3) = add(%b, %b)
  return (%d)
)");
    CHECK(equal(ir::interpret(*g, std::vector<Tensor>{x})[0], before));

    // A user pass that breaks the graph is caught by the lint between passes.
    static_assert(ir::pass<breaks_graph>);
    static_assert(!ir::pass<int>);
    CHECK_THROWS_WITH((ir::pipeline<ir::dce, breaks_graph>::run(*g, {.lint = true})),
                      Catch::Contains("ir pass breaks_graph broke the graph") && Catch::Contains("exp takes 1 inputs"));
}

TEST_CASE("ir passes: unroll_loops unrolls loops with small constant trip counts, bit for bit", "[ir][passes]") {
    const auto count_loops = [](const ir::Graph& g) {
        std::size_t n = 0;
        for (const ir::Node* m : g.block()->nodes()) n += m->is<ir::kinds::loop>();
        return n;
    };
    const auto counted = [](std::int64_t trips) {
        return [trips](Tensor x) {
            return fori_loop(0, trips, [](Tensor i, Tensor acc) { return tanh(acc) * 1.5 + i.to(dtype::float64); }, x);
        };
    };
    const Tensor x = randn({5}, dtype::float64), x2 = randn({5}, dtype::float64);
    for (std::int64_t trips : {0, 1, 3, 8, 9}) {
        INFO("trips " << trips);
        const auto cap = capture::trace(counted(trips), x);
        auto g = cap.graph().copy();
        REQUIRE(count_loops(*g) == 1);
        const Tensor before = ir::interpret(*g, std::vector<Tensor>{x2})[0];
        const bool changed = ir::unroll_loops::run(*g);
        g->lint();
        CHECK(changed == (trips <= 8));
        CHECK(count_loops(*g) == (trips <= 8 ? 0 : 1));
        const Tensor after = ir::interpret(*g, std::vector<Tensor>{x2})[0];
        CHECK(allclose(before, after, 0, 0));
        CHECK(allclose(after, counted(trips)(x2), 0, 0));
    }
    // A trip count that depends on the inputs is left to run time.
    const auto data_dependent = capture::trace(
        [](Tensor v) { return while_loop([](Tensor a) { return a.abs().sum() > 1.0; }, [](Tensor a) { return a * 0.5; }, v); },
        full({3}, 2.0, dtype::float64));
    auto g = data_dependent.graph().copy();
    CHECK_FALSE(ir::unroll_loops::run(*g));
    CHECK(count_loops(*g) == 1);
    // The default pipeline unrolls (and the jit's executor runs it).
    auto h = capture::trace(counted(3), x).graph().copy();
    ir::default_pipeline::run(*h);
    CHECK(count_loops(*h) == 0);
    CHECK(allclose(ir::interpret(*h, std::vector<Tensor>{x2})[0], counted(3)(x2), 0, 0));
}

TEST_CASE("ir passes: contiguous_results turns transposed products and keepdim sums into plain results",
          "[ir][passes]") {
    // transpose(matmul(a, b)) -> matmul(b^T, a^T), where b^T of a transposed value is that value;
    // reshape(sum(x, [0], keepdim)) that drops the summed dim -> sum(x, [0]). Same bits. (%wt
    // is left for dce.)
    check_pass<ir::contiguous_results>(R"(graph(%a : Float(3, 4), %w : Float(5, 4), %x : Float(6, 5)):
  %wt : Float(4, 5) = transpose[dim0=0, dim1=1](%w)
  %p : Float(3, 5) = matmul(%a, %wt)
  %pt : Float(5, 3) = transpose[dim0=-1, dim1=-2](%p)
  %s : Float(1, 5) = sum[dims=[0], keepdim=true](%x)
  %r : Float(5) = reshape[sizes=[5]](%s)
  return (%pt, %r)
)",
                                       R"(graph(%a : Float(3, 4), %w : Float(5, 4), %x : Float(6, 5)):
  %wt : Float(4, 5) = transpose[dim0=0, dim1=1](%w)
  %8 : Float(4, 3) = transpose[dim0=0, dim1=1](%a)
  %9 : Float(5, 3) = matmul(%w, %8)
  %s : Float(5) = sum[dims=[0], keepdim=false](%x)
  return (%9, %s)
)",
                                       randn_inputs({{3, 4}, {5, 4}, {6, 5}}));
    // Left alone: a product used twice, a 3-D product, a reshape that is not the keepdim=false
    // shape, a sum without keepdim.
    const std::string kept = R"(graph(%a : Float(3, 4), %b : Float(4, 5), %c : Float(2, 3, 4), %d : Float(2, 4, 5), %x : Float(6, 5)):
  %p : Float(3, 5) = matmul(%a, %b)
  %pt : Float(5, 3) = transpose[dim0=0, dim1=1](%p)
  %q : Float(2, 3, 5) = matmul(%c, %d)
  %qt : Float(2, 5, 3) = transpose[dim0=1, dim1=2](%q)
  %s : Float(1, 5) = sum[dims=[0], keepdim=true](%x)
  %r : Float(5, 1) = reshape[sizes=[5, 1]](%s)
  %u : Float(5) = sum[dims=[0]](%x)
  %v : Float(5) = reshape[sizes=[5]](%u)
  return (%p, %pt, %qt, %r, %v)
)";
    auto g = ir::parse(kept);
    CHECK_FALSE(ir::contiguous_results::run(*g));
    CHECK(ir::to_string(*g) == kept);
}

TEST_CASE("ir passes: lower_clamp runs clamp as maximum then minimum, bit for bit, NaN and -0.0 included",
          "[ir][passes]") {
    const std::string before = R"(graph(%x : Float(8), %y : Double(8), %n : Long(8)):
  %a : Float(8) = clamp[max=0.5, min=-0.5](%x)
  %b : Double(8) = clamp[min=0](%y)
  %c : Long(8) = clamp[max=2](%n)
  return (%a, %b, %c)
)";
    const std::string after = R"(graph(%x : Float(8), %y : Double(8), %n : Long(8)):
  %6 : float = prim::Constant[value=-0.5]()
  %7 : Float(8) = maximum(%x, %6)
  %8 : float = prim::Constant[value=0.5]()
  %9 : Float(8) = minimum(%7, %8)
  %10 : int = prim::Constant[value=0]()
  %11 : Double(8) = maximum(%y, %10)
  %c : Long(8) = clamp[max=2](%n)
  return (%9, %11, %c)
)";
    const double nan = std::nan("");
    const std::vector<ir::ivalue> in{tensor({-1.0f, -0.5f, -0.0f, 0.0f, 0.25f, 0.75f, std::nanf(""), 3.0f}),
                                     tensor({-2.0, -0.0, 0.0, nan, 1.0, -1e-300, 5.0, -7.0}).to(dtype::float64),
                                     tensor({-3, 0, 1, 2, 3, 4, 5, 6}, {8}, dtype::int64)};
    check_pass<ir::lower_clamp>(before, after, in);
}

TEST_CASE("ir passes: narrow_backwards_to_cat turns a chunk's backward into one cat, bit for bit", "[ir][passes]") {
    const auto count = [](const ir::Graph& g, std::string_view kind) {
        int n = 0;
        for (const ir::Node* node : g.block()->nodes()) n += node->kind().name == kind;
        return n;
    };
    // Pieces with -0.0 among their values: the adds of zeros gave +0.0 there, and so must the cat.
    manual_seed(3);
    const Tensor a = tensor({-0.0, 1.5, -0.0, -2.25}).to(dtype::float32).reshape({2, 2});
    const std::vector<ir::ivalue> in{a, randn({2, 2}), randn({2, 2})};
    const auto run = [&](const std::string& text, int cats, int embeds) {
        auto g = ir::parse(text);
        g->lint();
        auto original = g->copy();
        ir::narrow_backwards_to_cat::run(*g);
        g->lint();
        INFO(ir::to_string(*g));
        CHECK(count(*g, "cat") == cats);
        CHECK(count(*g, "narrow_backward") == embeds);
        const Tensor want = std::get<Tensor>(ir::interpret(*original, in)[0]);
        const Tensor got = std::get<Tensor>(ir::interpret(*g, in)[0]);
        REQUIRE(got.sizes() == want.sizes());
        CHECK(std::memcmp(got.contiguous().raw_data(), want.contiguous().raw_data(), static_cast<std::size_t>(got.numel()) * 4) == 0);
    };
    SECTION("three pieces tile the dimension, added in any order") {
        run(R"(graph(%a : Float(2, 2), %b : Float(2, 2), %c : Float(2, 2)):
  %x : Float(2, 6) = narrow_backward[sizes=[2, 6], dim=1, start=4, length=2](%c)
  %y : Float(2, 6) = narrow_backward[sizes=[2, 6], dim=1, start=0, length=2](%a)
  %z : Float(2, 6) = narrow_backward[sizes=[2, 6], dim=1, start=2, length=2](%b)
  %s : Float(2, 6) = add(%x, %y)
  %t : Float(2, 6) = add(%s, %z)
  return (%t)
)",
            1, 0);
    }
    SECTION("two pieces tile the middle of the dimension: one cat, embedded once") {
        run(R"(graph(%a : Float(2, 2), %b : Float(2, 2), %c : Float(2, 2)):
  %x : Float(2, 7) = narrow_backward[sizes=[2, 7], dim=1, start=1, length=2](%a)
  %y : Float(2, 7) = narrow_backward[sizes=[2, 7], dim=1, start=3, length=2](%c)
  %t : Float(2, 7) = add(%y, %x)
  return (%t)
)",
            1, 1);
    }
    SECTION("two sums sharing pieces (a GRU's gates): two cats, the shared pieces gone") {
        run(R"(graph(%a : Float(2, 2), %b : Float(2, 2), %c : Float(2, 2)):
  %x : Float(2, 4) = narrow_backward[sizes=[2, 4], dim=1, start=0, length=2](%a)
  %y : Float(2, 4) = narrow_backward[sizes=[2, 4], dim=1, start=2, length=2](%b)
  %z : Float(2, 4) = narrow_backward[sizes=[2, 4], dim=1, start=2, length=2](%c)
  %s : Float(2, 4) = add(%x, %y)
  %t : Float(2, 4) = add(%x, %z)
  %u : Float(2, 4) = mul(%s, %t)
  return (%u)
)",
            2, 0);
    }
    SECTION("a gap between the pieces, or pieces along other dimensions: left alone") {
        run(R"(graph(%a : Float(2, 2), %b : Float(2, 2), %c : Float(2, 2)):
  %x : Float(2, 7) = narrow_backward[sizes=[2, 7], dim=1, start=0, length=2](%a)
  %y : Float(2, 7) = narrow_backward[sizes=[2, 7], dim=1, start=3, length=2](%c)
  %t : Float(2, 7) = add(%y, %x)
  return (%t)
)",
            0, 2);
        run(R"(graph(%a : Float(2, 2), %b : Float(2, 2), %c : Float(2, 2)):
  %x : Float(2, 2) = narrow_backward[sizes=[2, 2], dim=0, start=0, length=2](%a)
  %y : Float(2, 2) = narrow_backward[sizes=[2, 2], dim=1, start=0, length=2](%c)
  %s : Float(2, 2) = add(%y, %x)
  return (%s)
)",
            0, 2);
    }
}
