// libFuzzer target for the IR text form (issue 14): whatever the text says, graft throws
// graft::error or works; it never crashes, leaks, trips a sanitizer or lets another exception
// out. For every text that parses it checks:
//   - the round trip: print -> parse -> print gives the same text;
//   - lint and the default pipeline on a copy (graft::error allowed);
//   - for small graphs without loops: ir::interpret on small inputs, and the profiling
//     executor (profile, compile, optimized run) gives bitwise the interpreter's results;
//   - texts with a `sizes:` section (symbolic sizes): the same through ir::parse_symbolic and
//     an executor built from the symbolic graph, at the traced sizes.
// Build: cmake -DGRAFT_BUILD_FUZZ=ON with clang (see docs/build.md#fuzzing).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <graft/graft.hpp>

namespace {

using namespace graft;

/// Seeds the default generator before each run compared, so graphs with random nodes compare.
constexpr std::uint64_t random_seed = 20261128;

[[noreturn]] void report(const char* what, const std::string& detail, const std::string& text) {
    std::fprintf(stderr, "fuzz_ir_parser: %s\n%s\n--- input ---\n%s\n", what, detail.c_str(), text.c_str());
    std::abort();
}

/// Nodes whose attributes could ask for large tensors, or loops that may not end, are not run.
bool small_and_finite(const ir::Block& b) {
    for (const ir::Node* n : b.nodes()) {
        if (n->is<ir::kinds::loop>()) return false;
        for (const auto& [name, a] : n->attributes()) {
            if (const auto* i = std::get_if<std::int64_t>(&a); i && (*i > 4096 || *i < -4096)) return false;
            if (const auto* l = std::get_if<std::vector<std::int64_t>>(&a)) {
                std::int64_t product = 1;
                for (std::int64_t v : *l) {
                    if (v > 4096 || v < -4096) return false;
                    product *= v > 1 ? v : 1;
                    if (product > (std::int64_t{1} << 20)) return false;
                }
            }
        }
        for (const ir::Block* inner : n->blocks())
            if (!small_and_finite(*inner)) return false;
    }
    return true;
}

/// Small inputs of the graph's declared types (unknown sizes: 3 per dimension, rank 1).
bool make_inputs(const ir::Graph& g, std::vector<ir::ivalue>& in) {
    std::uint64_t seed = 12345;
    for (const ir::Value* v : g.inputs()) {
        const ir::Type& t = v->type();
        switch (t.kind) {
            case ir::type_kind::float_: in.emplace_back(1.5); continue;
            case ir::type_kind::int_: in.emplace_back(std::int64_t{2}); continue;
            case ir::type_kind::bool_: in.emplace_back(true); continue;
            case ir::type_kind::tensor: break;
        }
        int_list sizes;
        if (t.tensor.sizes)
            for (const auto& s : *t.tensor.sizes) sizes.push_back(s ? *s : 3);
        else
            sizes.push_back(3);
        std::int64_t numel = 1;
        for (std::int64_t s : sizes) {
            if (s < 0 || s > 4096) return false;
            numel *= s;
            if (numel > 4096) return false;
        }
        const dtype type = t.tensor.scalar_type.value_or(dtype::float32);
        Tensor x = zeros(sizes, type);
        if (is_floating_point(type)) {
            manual_seed(seed++);
            x = randn(sizes, type);
        } else if (type == dtype::int64) {
            x = arange(std::int64_t{0}, numel, std::int64_t{1}, dtype::int64).reshape(sizes);
        }
        in.emplace_back(std::move(x));
    }
    return true;
}

/// Copies of the inputs: graphs may write into their inputs (copy_, add_), so every run gets its own.
std::vector<ir::ivalue> fresh_copies(const std::vector<ir::ivalue>& in) {
    std::vector<ir::ivalue> r;
    for (const auto& v : in) {
        if (const auto* t = std::get_if<Tensor>(&v)) r.emplace_back(t->clone());
        else r.push_back(v);
    }
    return r;
}

bool same_bits(const ir::ivalue& a, const ir::ivalue& b) {
    if (a.index() != b.index()) return false;
    const auto* ta = std::get_if<Tensor>(&a);
    if (!ta) {
        if (const auto* da = std::get_if<double>(&a)) {
            const double db = std::get<double>(b);
            return *da == db || (std::isnan(*da) && std::isnan(db));
        }
        if (const auto* ia = std::get_if<std::int64_t>(&a)) return *ia == std::get<std::int64_t>(b);
        return std::get<bool>(a) == std::get<bool>(b);
    }
    const Tensor& tb = std::get<Tensor>(b);
    if (ta->defined() != tb.defined()) return false;
    if (!ta->defined()) return true;
    if (ta->type() != tb.type() || ta->sizes() != tb.sizes()) return false;
    const Tensor ca = ta->contiguous(), cb = tb.contiguous();
    const auto n = static_cast<std::size_t>(ca.numel());
    if (ca.type() == dtype::float32 || ca.type() == dtype::float64) {
        const Tensor da = ca.to(dtype::float64), db = cb.to(dtype::float64);
        for (std::size_t i = 0; i < n; ++i) {
            const double x = da.data_ptr<double>()[i], y = db.data_ptr<double>()[i];
            if (!(std::memcmp(&x, &y, sizeof x) == 0 || (std::isnan(x) && std::isnan(y)))) return false;
        }
        return true;
    }
    return std::memcmp(ca.raw_data(), cb.raw_data(), n * ca.element_size()) == 0;
}

/// Texts with a `sizes:` section (symbolic sizes): the round trip through parse_symbolic, and
/// at the traced sizes the executor built from the symbolic graph gives the interpreter's bits.
void fuzz_symbolic(const std::string& text) {
    ir::symbolic_graph sg;
    try {
        sg = ir::parse_symbolic(text);
    } catch (const graft::error&) {
        return;
    }
    std::string printed;
    try {
        printed = ir::to_string(*sg.graph, sg.sizes);
        const ir::symbolic_graph again = ir::parse_symbolic(printed);
        if (ir::to_string(*again.graph, again.sizes) != printed)
            report("symbolic round trip changed the text", ir::to_string(*again.graph, again.sizes), text);
    } catch (const graft::error& e) {
        report("the printed symbolic graph does not parse", std::string(e.what()) + "\n--- printed ---\n" + printed,
               text);
    }
    try {
        sg.graph->lint();
    } catch (const graft::error&) {
        return;
    }
    if (!small_and_finite(*sg.graph->block())) return;
    for (std::int64_t v : sg.sizes.traced)
        if (v > 64) return;
    std::vector<ir::ivalue> in;
    {
        // The declared types with every symbolic dimension at its traced size.
        const auto h = sg.graph->copy();
        for (std::size_t q = 0; q < sg.sizes.dims.size(); ++q) {
            const auto [j, d] = sg.sizes.dims[q];
            ir::Type t = h->inputs()[j]->type();
            if (t.is_tensor() && t.tensor.sizes && d < t.tensor.sizes->size()) {
                (*t.tensor.sizes)[d] = sg.sizes.traced[sg.sizes.dim_symbols[q]];
                h->inputs()[j]->set_type(std::move(t));
            }
        }
        if (!make_inputs(*h, in)) return;
    }
    const auto fresh = [&in] { return fresh_copies(in); };
    std::vector<ir::ivalue> want;
    try {
        manual_seed(random_seed);  // random nodes (rand, dropout's rand_like) draw the same
        want = ir::interpret(*sg.graph, fresh(), &sg.sizes);
    } catch (const graft::error&) {
        return;
    }
    try {
        jit::options o;
        o.num_threads = 1;
        const jit::executor ex(ir::parse_symbolic(printed), o);
        for (int call = 0; call < 3; ++call) {
            manual_seed(random_seed);
            const auto got = ex.run(fresh());
            if (got.size() != want.size()) report("the symbolic executor gives another number of outputs", "", text);
            for (std::size_t k = 0; k < got.size(); ++k)
                if (!same_bits(got[k], want[k]))
                    report("the symbolic executor's result differs from the interpreter's",
                           "output " + std::to_string(k) + ", call " + std::to_string(call) + "\n" + ex.debug_string(),
                           text);
        }
    } catch (const graft::error&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > (std::size_t{1} << 16)) return 0;
    const std::string text(reinterpret_cast<const char*>(data), size);
    if (text.find("sizes:") != std::string::npos) {
        fuzz_symbolic(text);
        return 0;
    }
    std::unique_ptr<ir::Graph> g;
    try {
        g = ir::parse(text);
    } catch (const graft::error&) {
        return 0;
    }
    const std::string printed = ir::to_string(*g);
    try {
        const auto again = ir::parse(printed);
        if (ir::to_string(*again) != printed) report("round trip changed the text", ir::to_string(*again), text);
    } catch (const graft::error& e) {
        report("the printed graph does not parse", std::string(e.what()) + "\n--- printed ---\n" + printed, text);
    }
    try {
        g->lint();
    } catch (const graft::error&) {
        return 0;
    }
    try {
        const auto h = g->copy();
        ir::default_pipeline::run(*h);
        h->lint();
    } catch (const graft::error&) {
    }
    if (!small_and_finite(*g->block())) return 0;
    std::vector<ir::ivalue> in;
    if (!make_inputs(*g, in)) return 0;
    const auto fresh = [&in] { return fresh_copies(in); };
    std::vector<ir::ivalue> want;
    try {
        manual_seed(random_seed);  // random nodes (rand, dropout's rand_like) draw the same
        want = ir::interpret(*g, fresh());
    } catch (const graft::error&) {
        return 0;
    }
    try {
        jit::options o;
        o.release_profiling_after_optimization = false;
        o.num_threads = 1;
        const jit::executor ex(*g, o);
        for (int call = 0; call < 3; ++call) {  // profile, compile + run, optimized run
            manual_seed(random_seed);
            const auto got = ex.run(fresh());
            if (got.size() != want.size()) report("the executor gives another number of outputs", "", text);
            for (std::size_t k = 0; k < got.size(); ++k)
                if (!same_bits(got[k], want[k]))
                    report("the executor's result differs from the interpreter's",
                           "output " + std::to_string(k) + ", call " + std::to_string(call) + "\n" + ex.debug_string(),
                           text);
        }
    } catch (const graft::error&) {
        // The interpreter accepted what the executor refuses: allowed only for its own limits.
    }
    return 0;
}
