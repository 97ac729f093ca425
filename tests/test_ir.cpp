// The runtime graph IR: text round trip, parser errors, lint, copy, DOT and the
// interpreter (against eager graft, with autograd).
#include <catch2/catch.hpp>

#include <graft/graft.hpp>
#include <graft/ir/ir.hpp>

using namespace graft;

namespace {

const char* const if_graph = R"(graph(%x : Float(2, 3), %flag : bool):
  %1 : Float(2, 3) = tanh(%x)
  %2 : float = prim::Constant[value=0.5]()
  %y : Tensor = prim::If(%flag)
    block0():
      %4 : Tensor = mul(%1, %2)
      -> (%4)
    block1():
      -> (%1)
  %s : Float() = sum(%y)
  return (%y, %s)
)";

Tensor as_tensor(const ir::ivalue& v) { return std::get<Tensor>(v); }

}  // namespace

TEST_CASE("ir: text form round-trips exactly", "[ir]") {
    const std::vector<std::string> texts = {
        if_graph,
        "graph():\n  return ()\n",
        R"(graph(%a : Tensor, %b : Double(*, 4), %n : int, %f : float):
  %c : Tensor(..., requires_grad=1) = add(%a, %b)
  %d : Double(3, 4, strides=[4, 1], requires_grad=0) = where(%e, %c, %b)
  return (%d)
)",
        R"(graph(%x : Long(2)):
  %k : Tensor = prim::Constant[value=tensor(Long(2, 2), [1, -2, 3, 9223372036854775807])]()
  %b : Tensor = prim::Constant[value=tensor(Bool(3), [true, false, true])]()
  %d : Tensor = prim::Constant[value=tensor(Double(2), [0.1, -1e-300])]()
  %s : Tensor = prim::Constant[value=tensor(Float(), [3.4028235e+38])]()
  %r : Tensor = reshape[sizes=[4, -1]](%k)
  %t : Tensor = narrow[dim=0, length=1, start=-1](%r)
  %q : float = prim::Constant[value=-0.]()
  %w : float = prim::Constant[value=inf]()
  %z : Tensor = sum[dims=[], keepdim=true](%t)
  %str : Tensor = prim::Constant[name="a \"quoted\" \\ name", value=2, weights=[1.5, 2., -inf]]()
  return (%z, %k)
)",
    };
    for (const auto& text : texts) {
        // The third graph uses %e before its definition: parsing rejects it.
        if (text.find("%e") != std::string::npos) {
            REQUIRE_THROWS_WITH(ir::parse(text), Catch::Contains("line 3") && Catch::Contains("undefined value %e"));
            continue;
        }
        auto g = ir::parse(text);
        CHECK(ir::to_string(*g) == text);
        auto c = g->copy();
        CHECK(ir::to_string(*c) == text);
    }
}

TEST_CASE("ir: floats print as the shortest text that reads back to the same value", "[ir]") {
    for (double v : {0.1, 1.0 / 3.0, 1e-320, -2.5e300, 123456789.0, 0.0, -0.0}) {
        ir::Graph g;
        g.append<ir::kinds::constant>()->set_attr("value", v)->add_output(ir::Type::float_type());
        auto back = ir::parse(ir::to_string(g));
        const double r = std::get<double>(back->block()->nodes().front()->attr("value"));
        CHECK(std::bit_cast<std::uint64_t>(r) == std::bit_cast<std::uint64_t>(v));
    }
}

TEST_CASE("ir: print_options abbreviate long tensor constants for reading, the default prints all", "[ir]") {
    const auto text_of = [](const Tensor& t, std::int64_t limit) {
        ir::Graph g;
        g.append<ir::kinds::constant>()->set_attr("value", t)->add_output(ir::Type::tensor_type());
        return ir::to_string(g, {.max_tensor_elements = limit});
    };
    const Tensor ten = arange(0, 10, 1, dtype::int64);
    CHECK_THAT(text_of(ten, 4), Catch::Contains("tensor(Long(10), [0, 1, ..., 8, 9])"));
    CHECK_THAT(text_of(ten, 5), Catch::Contains("tensor(Long(10), [0, 1, 2, ..., 8, 9])"));
    CHECK_THAT(text_of(ten, 1), Catch::Contains("[0, ...]"));
    CHECK_THAT(text_of(ten, 0), Catch::Contains("[...]"));
    CHECK_THAT(text_of(ten, 10), Catch::Contains("[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]"));
    const std::string all = text_of(ten, -1);
    CHECK_THAT(all, Catch::Contains("[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]"));
    ir::Graph g;
    g.append<ir::kinds::constant>()->set_attr("value", ten)->add_output(ir::Type::tensor_type());
    CHECK(ir::to_string(g) == all);  // the parseable form
    CHECK_THROWS_AS(ir::parse(text_of(ten, 4)), graft::error);
}

TEST_CASE("ir: the parser reports the line and what it expected", "[ir]") {
    CHECK_THROWS_WITH(ir::parse("graph(%x : Float):\n  %1 : Float = frobnicate(%x)\n  return (%1)\n"),
                      Catch::Contains("line 2") && Catch::Contains("unknown node kind 'frobnicate'"));
    CHECK_THROWS_WITH(ir::parse("graph(%x : Quux):\n  return (%x)\n"), Catch::Contains("unknown type 'Quux'"));
    CHECK_THROWS_WITH(ir::parse("graph(%x : Float):\n  %x : Float = tanh(%x)\n  return (%x)\n"),
                      Catch::Contains("defined twice"));
    CHECK_THROWS_WITH(ir::parse("graph(%x : Float):\n  %1 : Float = tanh(%x)\n"), Catch::Contains("expected 'return'"));
    CHECK_THROWS_WITH(ir::parse("graph(%x : Float):\n  return (%x)\n junk"), Catch::Contains("unexpected text"));
    CHECK_THROWS_WITH(ir::parse("graph():\n  %c : Tensor = prim::Constant[value=tensor(Float(2), [1.])]()\n  return (%c)\n"),
                      Catch::Contains("1 values for 2 elements"));
}

TEST_CASE("ir: lint accepts parsed graphs and reports broken invariants", "[ir]") {
    auto g = ir::parse(if_graph);
    REQUIRE_NOTHROW(g->lint());

    SECTION("use before definition") {
        // Move tanh after the If that uses its output.
        ir::Node* tanh_node = g->block()->nodes().front();
        ir::Node* sum_node = g->block()->nodes().back();
        tanh_node->move_before(sum_node);
        CHECK_THROWS_WITH(g->lint(), Catch::Contains("%1 is used by mul before it is defined"));
    }
    SECTION("If branches disagree with the node's outputs") {
        ir::Node* if_node = *std::next(g->block()->nodes().begin(), 2);
        REQUIRE(if_node->is<ir::kinds::if_>());
        if_node->blocks()[1]->register_output(g->inputs()[0]);
        CHECK_THROWS_WITH(g->lint(), Catch::Contains("prim::If has 1 outputs but a block returns 2"));
    }
    SECTION("wrong arity") {
        ir::Node* tanh_node = g->block()->nodes().front();
        tanh_node->add_input(g->inputs()[0]);
        CHECK_THROWS_WITH(g->lint(), Catch::Contains("tanh takes 1 inputs, has 2"));
    }
    SECTION("a tensor op producing a number") {
        ir::Node* tanh_node = g->block()->nodes().front();
        tanh_node->output()->set_type(ir::Type::int_type());
        CHECK_THROWS_WITH(g->lint(), Catch::Contains("tanh produces a tensor"));
    }
    SECTION("If on a float tensor condition (only bool tensors: graft::cond's predicate)") {
        auto bad = ir::parse(R"(graph(%x : Float):
  %y : Tensor = prim::If(%x)
    block0():
      -> (%x)
    block1():
      -> (%x)
  return (%y)
)");
        CHECK_THROWS_WITH(bad->lint(), Catch::Contains("prim::If needs a number or a bool tensor condition, got Float"));
    }
    SECTION("destroying a used node is refused and leaves the graph intact") {
        ir::Node* tanh_node = g->block()->nodes().front();
        CHECK_THROWS_WITH(tanh_node->destroy(), Catch::Contains("still has uses"));
        CHECK_NOTHROW(g->lint());
        CHECK(ir::to_string(*g) == if_graph);
    }
}

TEST_CASE("ir: graph editing keeps uses consistent", "[ir]") {
    auto g = ir::parse(R"(graph(%x : Float(3)):
  %a : Float(3) = exp(%x)
  %b : Float(3) = exp(%x)
  %c : Float(3) = add(%a, %b)
  return (%c, %b)
)");
    const auto nodes = std::vector<ir::Node*>(g->block()->nodes().begin(), g->block()->nodes().end());
    // CSE by hand: replace %b by %a and delete the second exp.
    nodes[1]->output()->replace_all_uses_with(nodes[0]->output());
    nodes[1]->destroy();
    g->lint();
    CHECK(ir::to_string(*g) == "graph(%x : Float(3)):\n  %a : Float(3) = exp(%x)\n  %c : Float(3) = add(%a, %a)\n"
                               "  return (%c, %a)\n");
    CHECK(nodes[0]->output()->uses().size() == 3);
}

TEST_CASE("ir: the interpreter matches eager graft, with autograd and control flow", "[ir]") {
    auto g = ir::parse(if_graph);
    manual_seed(3);
    const Tensor x = randn({2, 3}).requires_grad_();
    for (bool flag : {true, false}) {
        auto out = ir::interpret(*g, std::vector<ir::ivalue>{x, flag});
        const Tensor expect_y = flag ? tanh(x) * 0.5 : tanh(x);
        CHECK(allclose(as_tensor(out[0]), expect_y));
        CHECK(allclose(as_tensor(out[1]), expect_y.sum()));
        // Gradients flow through the interpreted ops.
        as_tensor(out[1]).backward();
        const Tensor t = tanh(x.detach());
        CHECK(allclose(x.grad(), (1.0 - t * t) * (flag ? 0.5 : 1.0)));
        x.set_grad(Tensor{});
    }
    CHECK(std::string(as_tensor(ir::interpret(*g, std::vector<ir::ivalue>{x, true})[1]).grad_fn()->name()) ==
          "SumBackward0");
}

TEST_CASE("ir: interpreter runs views, reductions, matmul, softmax and constants", "[ir]") {
    auto g = ir::parse(R"(graph(%x : Double(2, 3), %w : Double(3, 4)):
  %m : Tensor = matmul(%x, %w)
  %t : Tensor = transpose[dim0=0, dim1=1](%m)
  %r : Tensor = reshape[sizes=[2, 4]](%t)
  %s : Tensor = softmax[dim=1](%r)
  %k : Tensor = prim::Constant[value=tensor(Double(4), [1., 2., 3., 4.])]()
  %p : Tensor = mul(%s, %k)
  %q : Tensor = sum[dims=[1], keepdim=true](%p)
  %n : Tensor = narrow[dim=1, length=2, start=1](%p)
  %a : Tensor = amax[dims=[0]](%n)
  return (%q, %a)
)");
    g->lint();
    manual_seed(7);
    const Tensor x = randn({2, 3}, dtype::float64), w = randn({3, 4}, dtype::float64);
    auto out = ir::interpret(*g, std::vector<Tensor>{x, w});
    const Tensor k = tensor({1.0, 2.0, 3.0, 4.0});
    const Tensor p = softmax(matmul(x, w).transpose(0, 1).reshape({2, 4}), 1) * k;
    CHECK(allclose(out[0], sum(p, {1}, true)));
    CHECK(allclose(out[1], amax(p.narrow(1, 1, 2), {0})));
}

TEST_CASE("ir: interpreter checks its inputs", "[ir]") {
    auto g = ir::parse(if_graph);
    CHECK_THROWS_WITH(ir::interpret(*g, std::vector<ir::ivalue>{ones({2, 3})}), Catch::Contains("takes 2 inputs, got 1"));
    CHECK_THROWS_WITH(ir::interpret(*g, std::vector<ir::ivalue>{ones({3, 2}), true}),
                      Catch::Contains("input %x expects Float(2, 3)"));
    CHECK_THROWS_WITH(ir::interpret(*g, std::vector<ir::ivalue>{ones({2, 3}, dtype::float64), true}),
                      Catch::Contains("input %x expects Float(2, 3)"));
    CHECK_THROWS_WITH(ir::interpret(*g, std::vector<ir::ivalue>{ones({2, 3}), ones({1})}),
                      Catch::Contains("input %flag expects bool"));
    auto missing = ir::parse("graph(%x : Tensor):\n  %y : Tensor = softmax(%x)\n  return (%y)\n");
    CHECK_THROWS_WITH(ir::interpret(*missing, std::vector<Tensor>{ones({2})}),
                      Catch::Contains("softmax: missing attribute 'dim'"));
}

TEST_CASE("ir: a prepared graph gives the interpreter's results and errors, and releases values after their last use",
          "[ir]") {
    // %m is read by two nodes, %t by none (released at once), %x is also an output, %q twice.
    std::shared_ptr<const ir::Graph> g = ir::parse(R"(graph(%x : Double(2, 3), %w : Double(3, 4)):
  %m : Tensor = matmul(%x, %w)
  %t : Tensor = transpose[dim0=0, dim1=1](%m)
  %e : Tensor = exp(%m)
  %s : Tensor = softmax[dim=1](%m)
  %p : Tensor = mul(%s, %e)
  %q : Tensor = sum[dims=[1], keepdim=true](%p)
  return (%q, %x, %q, %s)
)");
    manual_seed(8);
    const Tensor x = randn({2, 3}, dtype::float64), w = randn({3, 4}, dtype::float64);
    const ir::prepared_graph p(g);
    for (int call = 0; call < 2; ++call) {  // the same program twice: nothing left over from a run
        const auto want = ir::interpret(*g, std::vector<Tensor>{x, w});
        const auto got = p.run_tensors({x, w});
        REQUIRE(got.size() == 4);
        for (std::size_t k = 0; k < got.size(); ++k) CHECK(equal(got[k], want[k]));  // no NaN: equal is bitwise here
        CHECK(got[1].is_same(x));  // an input returned as an output is the caller's tensor
    }
    // A chain of eight 1 MiB intermediates: each is released once the next is computed, so
    // the buffer cache (buffers of 128 KiB and more) recycles two buffers; the interpreter
    // keeps all eight to the end and frees them together.
    std::string chain = "graph(%x : Float(512, 512)):\n  %v0 : Tensor = neg(%x)\n";
    for (int k = 1; k < 8; ++k)
        chain += "  %v" + std::to_string(k) + " : Tensor = neg(%v" + std::to_string(k - 1) + ")\n";
    chain += "  return (%v7)\n";
    std::shared_ptr<const ir::Graph> long_chain = ir::parse(chain);
    const Tensor big = ones({512, 512});
    const std::size_t mib = std::size_t{1} << 20;
    // The cache is off under AddressSanitizer (it must see every free): on for this check.
    auto& cache = graft::detail::buffer_cache::instance();
    const std::size_t limit = cache.limit();
    cache.set_limit(64 * mib);
    empty_buffer_cache();
    (void)ir::interpret(*long_chain, std::vector<Tensor>{big});
    CHECK(buffer_cache_size() >= 7 * mib);
    empty_buffer_cache();
    (void)ir::prepared_graph(long_chain).run_tensors({big});
    CHECK(buffer_cache_size() <= 2 * mib);
    empty_buffer_cache();
    cache.set_limit(limit);
    // Errors as the interpreter's.
    CHECK_THROWS_WITH(p.run_tensors({x}), Catch::Contains("takes 2 inputs, got 1"));
    CHECK_THROWS_WITH(p.run_tensors({ones({3, 2}, dtype::float64), w}), Catch::Contains("input %x expects Double(2, 3)"));
    auto missing = std::shared_ptr<const ir::Graph>(ir::parse("graph(%x : Tensor):\n  %y : Tensor = softmax(%x)\n  return (%y)\n"));
    CHECK_THROWS_WITH(ir::prepared_graph(missing).run_tensors({ones({2})}), Catch::Contains("softmax: missing attribute 'dim'"));
    // A graph with blocks runs through the interpreter.
    std::shared_ptr<const ir::Graph> branchy = ir::parse(if_graph);
    const ir::prepared_graph pb(branchy);
    for (const bool flag : {true, false}) {
        const auto want = ir::interpret(*branchy, std::vector<ir::ivalue>{ones({2, 3}), flag});
        const auto got = pb.run(std::vector<ir::ivalue>{ones({2, 3}), flag});
        REQUIRE(got.size() == want.size());
        for (std::size_t k = 0; k < got.size(); ++k)
            CHECK(equal(std::get<Tensor>(got[k]), std::get<Tensor>(want[k])));
    }
}

TEST_CASE("ir: every elementwise op of the op table is an IR kind", "[ir]") {
    const auto names = std::apply([](auto... op) { return std::vector<std::string_view>{decltype(op)::name...}; },
                                  ops::all_elementwise_ops{});
    CHECK(names.size() == std::tuple_size_v<ops::all_elementwise_ops>);
    for (auto name : names) {
        INFO(name);
        const ir::kind_info* k = ir::find_kind(name);
        REQUIRE(k != nullptr);
        CHECK(k->elementwise);
        CHECK(k->run != nullptr);
    }
    CHECK(ir::find_kind("prim::If") == &ir::kind_v<ir::kinds::if_>);
    CHECK(ir::find_kind("nope") == nullptr);
    CHECK(ir::op_kind_v<ops::def::add_op>.elementwise);
    CHECK(ir::kind_v<ir::kinds::transpose>.is_view);
    CHECK_FALSE(ir::kind_v<ir::kinds::copy_>.pure);
}

TEST_CASE("ir: DOT export names every node and edge", "[ir]") {
    auto g = ir::parse(if_graph);
    std::ostringstream os;
    ir::to_dot(*g, os);
    const std::string dot = os.str();
    CHECK(dot.rfind("digraph graft_ir {", 0) == 0);
    CHECK(dot.find("n0 [label=\"tanh\"]") != std::string::npos);
    CHECK(dot.find("\"in_x\" -> n0 [label=\"%x\"]") != std::string::npos);
    CHECK(dot.find("subgraph cluster_n2_0") != std::string::npos);
    CHECK(dot.find("prim::Constant\\nvalue=0.5") != std::string::npos);
    CHECK(dot.find("out1 [shape=ellipse, label=\"return 1\\nFloat()\"]") != std::string::npos);
    CHECK(dot.back() == '\n');
}
