// Forward values and gradients at special inputs (NaN, +-inf, +-0, 1e-300, large and ordinary
// values) against PyTorch 1.13's: tests/fixtures/special_values.txt, written by
// tests/fixtures/gen_special_values.py (its header gives the format). Each fixture case names an
// op of the table below, which maps it to the graft call with the same argument meanings; the
// gradient is that of sum(out * seed) with the fixture's fixed seed, run through eager autograd.
// Values agree when both are NaN, when infinities are equal, or when finite values are within
// a relative tolerance (1e-12 in float64, 2e-5 in float32) plus an absolute one; -0.0 and 0.0
// count as equal. The absolute tolerance is 1e-300 (none to speak of) for the elementwise ops,
// whose results are single roundings of one formula, and 1e-14 for reductions, losses and
// matmul, whose sums cancel terms of magnitude up to 30 (torch and graft add in different
// orders). gelu and normal_cdf allow 1e-190: torch.special.ndtr computes 0.5 * (1 + erf(x / sqrt 2)),
// which is 2% low at x = -8 and 0 below -8.5, where graft's erfc keeps the tail (4.9e-198 at
// -30): graft is the accurate one there. Every disagreeing element is a failed check whose
// message gives the op, its parameters, the inputs at that element, torch's value and graft's.
//
// Set GRAFT_SPECIAL_VALUES_REPORT to a file name to also get every mismatch as one line of a
// list there (appended), the form the mismatch report is made from.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <graft/graft.hpp>

namespace {

namespace F = graft::nn::functional;
using graft::Tensor;

// ---------------------------------------------------------------- the fixture

struct fixture_input {
    char kind = 'f';  // f: floating (the case's dtype), i: int64, b: bool
    graft::int_list sizes;
    std::vector<double> values;
};

struct fixture_grad {
    std::size_t input = 0;
    std::optional<std::vector<double>> values;  // nullopt: torch gives none (zeros)
};

struct fixture_case {
    int line = 0;
    std::string op;
    graft::dtype type = graft::dtype::float64;
    std::vector<double> params;
    std::vector<fixture_input> inputs;
    graft::int_list out_sizes;
    std::vector<double> out;
    std::vector<fixture_grad> grads;
};

/// The fixture's seed: grad_output[i] = seed_pattern[i % 4].
constexpr double seed_pattern[4] = {1.5, -0.75, 1.25, 2.0};

double parse_number(const std::string& token, int line) {
    char* end = nullptr;
    const double v = std::strtod(token.c_str(), &end);
    if (end == token.c_str() || *end != '\0') FAIL("special_values.txt line " << line << ": bad number '" << token << "'");
    return v;
}

graft::int_list read_sizes(std::istringstream& in) {
    std::size_t rank = 0;
    in >> rank;
    graft::int_list sizes(rank);
    for (auto& s : sizes) in >> s;
    return sizes;
}

std::int64_t numel_of(const graft::int_list& sizes) {
    std::int64_t n = 1;
    for (const auto s : sizes) n *= s;
    return n;
}

std::vector<double> read_values(std::istringstream& in, std::int64_t n, int line) {
    std::vector<double> v;
    std::string token;
    for (std::int64_t i = 0; i < n && in >> token; ++i) v.push_back(parse_number(token, line));
    if (static_cast<std::int64_t>(v.size()) != n)
        FAIL("special_values.txt line " << line << ": expected " << n << " values, got " << v.size());
    return v;
}

std::vector<fixture_case> read_fixture() {
    const std::string path = std::string(GRAFT_SOURCE_DIR) + "/tests/fixtures/special_values.txt";
    std::ifstream file(path);
    if (!file) FAIL("cannot open " << path);
    std::vector<fixture_case> cases;
    std::optional<fixture_case> current;
    std::string text;
    int line = 0;
    while (std::getline(file, text)) {
        ++line;
        if (text.empty() || text[0] == '#') continue;
        std::istringstream in(text);
        std::string key;
        in >> key;
        if (key == "case") {
            if (current) FAIL("special_values.txt line " << line << ": case inside a case");
            current.emplace();
            current->line = line;
            std::string type;
            std::size_t nparams = 0;
            in >> current->op >> type >> nparams;
            current->type = type == "float32" ? graft::dtype::float32 : graft::dtype::float64;
            current->params = read_values(in, static_cast<std::int64_t>(nparams), line);
        } else if (!current) {
            FAIL("special_values.txt line " << line << ": '" << key << "' outside a case");
        } else if (key == "in") {
            fixture_input x;
            in >> x.kind;
            x.sizes = read_sizes(in);
            x.values = read_values(in, numel_of(x.sizes), line);
            current->inputs.push_back(std::move(x));
        } else if (key == "out") {
            current->out_sizes = read_sizes(in);
            current->out = read_values(in, numel_of(current->out_sizes), line);
        } else if (key == "grad") {
            fixture_grad g;
            in >> g.input;
            if (g.input >= current->inputs.size()) FAIL("special_values.txt line " << line << ": no input " << g.input);
            if (text.find(" none") == std::string::npos)
                g.values = read_values(in, numel_of(current->inputs[g.input].sizes), line);
            current->grads.push_back(std::move(g));
        } else if (key == "end") {
            if (current->type == graft::dtype::float32) {
                // The shortest repr of a float32 read as a double: round it back to that float32.
                const auto to_f32 = [](std::vector<double>& v) {
                    for (double& d : v) d = static_cast<double>(static_cast<float>(d));
                };
                to_f32(current->out);
                for (auto& g : current->grads)
                    if (g.values) to_f32(*g.values);
            }
            cases.push_back(std::move(*current));
            current.reset();
        } else {
            FAIL("special_values.txt line " << line << ": unknown record '" << key << "'");
        }
    }
    if (current) FAIL("special_values.txt: the case at line " << current->line << " has no end");
    return cases;
}

const std::vector<fixture_case>& fixture() {
    static const std::vector<fixture_case> cases = read_fixture();
    return cases;
}

// ---------------------------------------------------------------- the ops

using op_fn = Tensor (*)(const std::vector<Tensor>&, const std::vector<double>&);

struct op_entry {
    const char* family;  // the TEST_CASE that runs it
    op_fn fn;
    double abs_tol = 0.0;  // float64 absolute tolerance, if larger than the family's
};

F::reduction reduction_of(double p) {
    return p == 0.0   ? F::reduction::none
           : p == 1.0 ? F::reduction::mean
           : p == 2.0 ? F::reduction::sum
                      : F::reduction::batchmean;
}

/// The fixture's integer parameters p[from], p[from + 1], ... as an int_list.
graft::int_list ints_of(const std::vector<double>& p, std::size_t from) {
    graft::int_list v;
    for (std::size_t i = from; i < p.size(); ++i) v.push_back(static_cast<std::int64_t>(p[i]));
    return v;
}

std::int64_t int_of(double p) { return static_cast<std::int64_t>(p); }

// NOLINTBEGIN(readability-function-size): one table
const std::map<std::string, op_entry>& op_table() {
    using V = std::vector<Tensor>;
    using P = std::vector<double>;
    using graft::scalar;
    static const std::map<std::string, op_entry> table{
        // Unary ops and a tensor with a number (params: the op's numbers).
        {"neg", {"unary", [](const V& x, const P&) { return graft::neg(x[0]); }}},
        {"abs", {"unary", [](const V& x, const P&) { return graft::abs(x[0]); }}},
        {"exp", {"unary", [](const V& x, const P&) { return graft::exp(x[0]); }}},
        {"log", {"unary", [](const V& x, const P&) { return graft::log(x[0]); }}},
        {"sqrt", {"unary", [](const V& x, const P&) { return graft::sqrt(x[0]); }}},
        {"rsqrt", {"unary", [](const V& x, const P&) { return graft::rsqrt(x[0]); }}},
        {"tanh", {"unary", [](const V& x, const P&) { return graft::tanh(x[0]); }}},
        {"sigmoid", {"unary", [](const V& x, const P&) { return graft::sigmoid(x[0]); }}},
        {"relu", {"unary", [](const V& x, const P&) { return graft::relu(x[0]); }}},
        {"sin", {"unary", [](const V& x, const P&) { return graft::sin(x[0]); }}},
        {"cos", {"unary", [](const V& x, const P&) { return graft::cos(x[0]); }}},
        {"log1p", {"unary", [](const V& x, const P&) { return graft::log1p(x[0]); }}},
        {"expm1", {"unary", [](const V& x, const P&) { return graft::expm1(x[0]); }}},
        {"sign", {"unary", [](const V& x, const P&) { return graft::sign(x[0]); }}},
        {"square", {"unary", [](const V& x, const P&) { return graft::square(x[0]); }}},
        // torch.special.ndtr; torch's underflows to 0 (see the top)
        {"normal_cdf", {"unary", [](const V& x, const P&) { return graft::normal_cdf(x[0]); }, 1e-190}},
        {"gelu", {"unary", [](const V& x, const P&) { return F::gelu(x[0], "none"); }, 1e-190}},
        {"gelu_tanh", {"unary", [](const V& x, const P&) { return F::gelu(x[0], "tanh"); }}},
        {"silu", {"unary", [](const V& x, const P&) { return F::silu(x[0]); }}},
        {"softplus", {"unary", [](const V& x, const P& p) { return F::softplus(x[0], p[0], p[1]); }}},
        {"leaky_relu", {"unary", [](const V& x, const P& p) { return F::leaky_relu(x[0], p[0]); }}},
        {"clamp", {"unary", [](const V& x, const P& p) { return graft::clamp(x[0], scalar(p[0]), scalar(p[1])); }}},
        {"clamp_min", {"unary", [](const V& x, const P& p) { return graft::clamp_min(x[0], scalar(p[0])); }}},
        {"clamp_max", {"unary", [](const V& x, const P& p) { return graft::clamp_max(x[0], scalar(p[0])); }}},
        {"pow_scalar", {"unary", [](const V& x, const P& p) { return graft::pow(x[0], scalar(p[0])); }}},
        {"rpow_scalar", {"unary", [](const V& x, const P& p) { return graft::pow(scalar(p[0]), x[0]); }}},
        {"add_scalar", {"unary", [](const V& x, const P& p) { return graft::add(x[0], scalar(p[0])); }}},
        {"sub_scalar", {"unary", [](const V& x, const P& p) { return graft::sub(x[0], scalar(p[0])); }}},
        {"rsub_scalar", {"unary", [](const V& x, const P& p) { return graft::sub(scalar(p[0]), x[0]); }}},
        {"mul_scalar", {"unary", [](const V& x, const P& p) { return graft::mul(x[0], scalar(p[0])); }}},
        {"div_scalar", {"unary", [](const V& x, const P& p) { return graft::div(x[0], scalar(p[0])); }}},
        {"rdiv_scalar", {"unary", [](const V& x, const P& p) { return graft::div(scalar(p[0]), x[0]); }}},
        {"maximum_scalar", {"unary", [](const V& x, const P& p) { return graft::maximum(x[0], scalar(p[0])); }}},
        {"minimum_scalar", {"unary", [](const V& x, const P& p) { return graft::minimum(x[0], scalar(p[0])); }}},
        // Binary ops on the grid of special values.
        {"add", {"binary", [](const V& x, const P&) { return graft::add(x[0], x[1]); }}},
        {"sub", {"binary", [](const V& x, const P&) { return graft::sub(x[0], x[1]); }}},
        {"mul", {"binary", [](const V& x, const P&) { return graft::mul(x[0], x[1]); }}},
        {"div", {"binary", [](const V& x, const P&) { return graft::div(x[0], x[1]); }}},
        {"pow", {"binary", [](const V& x, const P&) { return graft::pow(x[0], x[1]); }}},
        {"maximum", {"binary", [](const V& x, const P&) { return graft::maximum(x[0], x[1]); }}},
        {"minimum", {"binary", [](const V& x, const P&) { return graft::minimum(x[0], x[1]); }}},
        {"where", {"binary", [](const V& x, const P&) { return graft::where(x[0], x[1], x[2]); }}},
        {"where_scalar_other", {"binary", [](const V& x, const P& p) { return graft::where(x[0], x[1], scalar(p[0])); }}},
        {"where_scalar_self", {"binary", [](const V& x, const P& p) { return graft::where(x[0], scalar(p[0]), x[1]); }}},
        // Reductions over dim 1 of [1, 4] (_dim), over every dim (_all); softmax, layer_norm.
        {"sum_dim", {"reduction", [](const V& x, const P&) { return graft::sum(x[0], {1}, false); }}},
        {"mean_dim", {"reduction", [](const V& x, const P&) { return graft::mean(x[0], {1}); }}},
        {"amax_dim", {"reduction", [](const V& x, const P&) { return graft::amax(x[0], {1}); }}},
        {"amin_dim", {"reduction", [](const V& x, const P&) { return graft::amin(x[0], {1}); }}},
        {"max_dim", {"reduction", [](const V& x, const P&) { return std::get<0>(graft::max(x[0], 1)); }}},
        {"min_dim", {"reduction", [](const V& x, const P&) { return std::get<0>(graft::min(x[0], 1)); }}},
        {"var_dim", {"reduction", [](const V& x, const P& p) { return graft::var(x[0], {1}, p[0]); }}},
        {"std_dim", {"reduction", [](const V& x, const P& p) { return graft::std(x[0], {1}, p[0]); }}},
        {"logsumexp_dim", {"reduction", [](const V& x, const P&) { return graft::logsumexp(x[0], {1}); }}},
        {"softmax", {"reduction", [](const V& x, const P&) { return F::softmax(x[0], 1); }}},
        {"log_softmax", {"reduction", [](const V& x, const P&) { return F::log_softmax(x[0], 1); }}},
        {"layer_norm", {"reduction", [](const V& x, const P&) { return F::layer_norm(x[0], {x[0].size(-1)}); }}},
        {"layer_norm_affine",
         {"reduction", [](const V& x, const P&) { return F::layer_norm(x[0], {x[0].size(-1)}, x[1], x[2], 1e-5); }}},
        {"sum_all", {"reduction", [](const V& x, const P&) { return graft::sum(x[0]); }}},
        {"mean_all", {"reduction", [](const V& x, const P&) { return graft::mean(x[0]); }}},
        {"amax_all", {"reduction", [](const V& x, const P&) { return graft::amax(x[0]); }}},
        {"amin_all", {"reduction", [](const V& x, const P&) { return graft::amin(x[0]); }}},
        {"max_all", {"reduction", [](const V& x, const P&) { return graft::max(x[0]); }}},
        {"min_all", {"reduction", [](const V& x, const P&) { return graft::min(x[0]); }}},
        {"var_all", {"reduction", [](const V& x, const P& p) { return graft::var(x[0], {}, p[0]); }}},
        {"std_all", {"reduction", [](const V& x, const P& p) { return graft::std(x[0], {}, p[0]); }}},
        {"logsumexp_all", {"reduction", [](const V& x, const P&) { return graft::logsumexp(x[0], {}); }}},
        // Losses (params: reduction 0 none / 1 mean / 2 sum, then the op's other numbers).
        {"mse_loss", {"loss", [](const V& x, const P& p) { return F::mse_loss(x[0], x[1], reduction_of(p[0])); }}},
        {"l1_loss", {"loss", [](const V& x, const P& p) { return F::l1_loss(x[0], x[1], reduction_of(p[0])); }}},
        {"smooth_l1_loss",
         {"loss", [](const V& x, const P& p) { return F::smooth_l1_loss(x[0], x[1], reduction_of(p[0]), p[1]); }}},
        {"bce_logits",
         {"loss",
          [](const V& x, const P& p) { return F::binary_cross_entropy_with_logits(x[0], x[1], {}, reduction_of(p[0])); }}},
        {"bce_logits_weighted", {"loss", [](const V& x, const P& p) {
                                     return F::binary_cross_entropy_with_logits(x[0], x[1], x[2], reduction_of(p[0]), x[3]);
                                 }}},
        {"cross_entropy", {"loss", [](const V& x, const P& p) {
                               return F::cross_entropy(x[0], x[1], {}, static_cast<std::int64_t>(p[1]), reduction_of(p[0]),
                                                       p[2]);
                           }}},
        {"cross_entropy_weighted", {"loss", [](const V& x, const P& p) {
                                        return F::cross_entropy(x[0], x[1], x[2], static_cast<std::int64_t>(p[1]),
                                                                reduction_of(p[0]), p[2]);
                                    }}},
        {"cross_entropy_probs",
         {"loss", [](const V& x, const P& p) { return F::cross_entropy(x[0], x[1], {}, -100, reduction_of(p[0]), p[1]); }}},
        {"nll_loss", {"loss", [](const V& x, const P& p) {
                          return F::nll_loss(x[0], x[1], {}, static_cast<std::int64_t>(p[1]), reduction_of(p[0]));
                      }}},
        {"nll_loss_weighted", {"loss", [](const V& x, const P& p) {
                                   return F::nll_loss(x[0], x[1], x[2], static_cast<std::int64_t>(p[1]), reduction_of(p[0]));
                               }}},
        // matmul: mm, mv and dot with one special entry.
        {"matmul", {"matmul", [](const V& x, const P&) { return graft::matmul(x[0], x[1]); }}},
        // nn::functional losses (params: reduction, 3 = batchmean, then the op's numbers).
        {"huber_loss",
         {"loss", [](const V& x, const P& p) { return F::huber_loss(x[0], x[1], reduction_of(p[0]), p[1]); }}},
        {"kl_div", {"loss", [](const V& x, const P& p) { return F::kl_div(x[0], x[1], reduction_of(p[0]), p[1] != 0.0); }}},
        {"binary_cross_entropy",
         {"loss", [](const V& x, const P& p) { return F::binary_cross_entropy(x[0], x[1], {}, reduction_of(p[0])); }}},
        {"binary_cross_entropy_weighted",
         {"loss", [](const V& x, const P& p) { return F::binary_cross_entropy(x[0], x[1], x[2], reduction_of(p[0])); }}},
        // Distances and normalization layers.
        {"cosine_similarity",
         {"norm", [](const V& x, const P& p) { return F::cosine_similarity(x[0], x[1], int_of(p[0]), p[1]); }}},
        {"normalize", {"norm", [](const V& x, const P& p) { return F::normalize(x[0], p[0], int_of(p[1]), p[2]); }}},
        {"batch_norm_train", {"norm", [](const V& x, const P& p) {
                                  return F::batch_norm(x[0], {}, {}, x[1], x[2], true, p[0], p[1]);
                              }}},
        {"batch_norm_eval", {"norm", [](const V& x, const P& p) {
                                 return F::batch_norm(x[0], x[1], x[2], x[3], x[4], false, p[0], p[1]);
                             }}},
        {"instance_norm",
         {"norm", [](const V& x, const P& p) { return F::instance_norm(x[0], {}, {}, x[1], x[2], true, 0.1, p[0]); }}},
        {"group_norm",
         {"norm", [](const V& x, const P& p) { return F::group_norm(x[0], int_of(p[0]), x[1], x[2], p[1]); }}},
        // Attention (no mask, no dropout, the default scale).
        {"sdpa", {"attention", [](const V& x, const P& p) {
                      return F::scaled_dot_product_attention(x[0], x[1], x[2], {}, 0.0, p[0] != 0.0);
                  }}},
        // Pooling, resizing, padding.
        {"avg_pool2d", {"pool", [](const V& x, const P& p) {
                            return F::avg_pool2d(x[0], int_of(p[0]), int_of(p[1]), int_of(p[2]), p[3] != 0.0,
                                                 p[4] != 0.0);
                        }}},
        {"max_pool2d", {"pool", [](const V& x, const P& p) {
                            return F::max_pool2d(x[0], int_of(p[0]), int_of(p[1]), int_of(p[2]), 1, p[3] != 0.0);
                        }}},
        {"adaptive_avg_pool2d", {"pool", [](const V& x, const P& p) {
                                     return F::adaptive_avg_pool2d(
                                         x[0], F::adaptive_size{std::optional<std::int64_t>(int_of(p[0])),
                                                                std::optional<std::int64_t>(int_of(p[1]))});
                                 }}},
        {"interpolate_nearest", {"pool", [](const V& x, const P& p) {
                                     return F::interpolate(x[0], graft::int_list{int_of(p[0]), int_of(p[1])}, {},
                                                           "nearest");
                                 }}},
        {"interpolate_bilinear", {"pool", [](const V& x, const P& p) {
                                      return F::interpolate(x[0], graft::int_list{int_of(p[0]), int_of(p[1])}, {},
                                                            "bilinear", p[2] != 0.0);
                                  }}},
        {"pad_constant", {"pool", [](const V& x, const P& p) { return F::pad(x[0], ints_of(p, 1), "constant", p[0]); }}},
        // Convolution (a special value in the input or the weight) and embedding (in the weight).
        {"conv1d", {"conv", [](const V& x, const P& p) {
                        return F::conv1d(x[0], x[1], x[2], int_of(p[0]), int_of(p[1]));
                    }}},
        {"conv2d", {"conv", [](const V& x, const P& p) {
                        return F::conv2d(x[0], x[1], x[2], int_of(p[0]), int_of(p[1]));
                    }}},
        {"embedding", {"conv", [](const V& x, const P& p) {
                           return F::embedding(x[0], x[1],
                                               p.empty() ? std::nullopt : std::optional<std::int64_t>(int_of(p[0])));
                       }}},
    };
    return table;
}
// NOLINTEND(readability-function-size)

// ---------------------------------------------------------------- comparing

bool is_elementwise_family(const std::string& family) { return family == "unary" || family == "binary"; }

struct tolerance {
    double rel = 1e-12, abs = 1e-300;
};

tolerance tolerance_of(const fixture_case& c, const op_entry& e) {
    if (c.type == graft::dtype::float32) return {2e-5, 1e-30};
    tolerance t;
    if (!is_elementwise_family(e.family)) t.abs = 1e-14;
    t.abs = std::max(t.abs, e.abs_tol);
    return t;
}

bool same_value(double want, double got, tolerance tol) {
    if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
    if (std::isinf(want) || std::isinf(got)) return want == got;
    return std::abs(want - got) <= tol.abs + tol.rel * std::max(std::abs(want), std::abs(got));
}

std::string show(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    std::ostringstream s;
    s.precision(17);
    s << v;
    return s.str();
}

std::string show_values(const std::vector<double>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + show(v[i]);
    return s + "]";
}

std::string describe_case(const fixture_case& c) {
    std::string s = c.op + " " + (c.type == graft::dtype::float32 ? "float32" : "float64");
    if (!c.params.empty()) s += " params " + show_values(c.params);
    return s + " (fixture line " + std::to_string(c.line) + ")";
}

/// The inputs behind element i of a result with n elements: the i-th element of each input
/// when the op is elementwise (an elementwise op, or a loss whose inputs all have n elements),
/// else the inputs whole.
std::string describe_inputs(const fixture_case& c, const op_entry& e, std::size_t i, std::size_t n) {
    const bool elementwise = is_elementwise_family(e.family) ||
                             (std::string(e.family) == "loss" &&
                              std::all_of(c.inputs.begin(), c.inputs.end(),
                                          [n](const fixture_input& x) { return x.values.size() == n; }));
    std::string s;
    for (std::size_t k = 0; k < c.inputs.size(); ++k) {
        s += (k ? ", " : "") + std::string("in") + std::to_string(k) + "=";
        s += elementwise ? show(c.inputs[k].values[i]) : show_values(c.inputs[k].values);
    }
    return s;
}

std::ofstream* report_file() {
    static std::ofstream file;
    static const bool open = [] {
        const char* path = std::getenv("GRAFT_SPECIAL_VALUES_REPORT");
        if (path && *path) file.open(path, std::ios::app);
        return file.is_open();
    }();
    return open ? &file : nullptr;
}

/// Where graft deliberately differs from torch 1.13 (docs/autograd.md, "Special values"), the
/// reason; else empty. Only these elements may differ:
/// - pow with a tensor exponent: graft computes x ** 0.5 as sqrt(x) (and -0.5, 2, 3, -1, -2 as
///   PyTorch does for a number exponent) whichever way the exponent comes, so that eager
///   kernels, fused programs and compiled graphs agree; torch uses std::pow for a tensor
///   exponent (pow(-inf, 0.5) = inf, pow(-0, 0.5) = +0 there).
/// - binary_cross_entropy_with_logits at an infinite logit: torch's max-shift form gives NaN
///   (inf - inf) for the loss and +-inf for the target's gradient with pos_weight, which its
///   own loss does not have; graft's softplus form gives the limits (or NaN for both).
/// - smooth_l1_loss with beta 0 is l1_loss, as in PyTorch 2 (torch 1.13 runs the smooth
///   kernel with beta 0: NaN gradients at NaN, -g where x == t); checked against
///   l1_loss instead (run_case).
/// - batch_norm with an infinite weight: torch's CPU kernel folds the affine transform into
///   x * a + b' (a = weight / sqrt(var + eps), b' = bias - mean * a), which is inf - inf = NaN
///   wherever (x - mean) / sqrt(var + eps) * weight + bias, graft's formula, is +-inf (in one
///   channel torch gives +inf for some elements and NaN for others of the same sign of
///   x - mean). Only the forward value differs (the gradients agree).
/// - adaptive_avg_pool2d where a window's sum overflows part-way: torch adds a window's
///   elements row by row (1e308 + 1e308 is inf before the -1e308 after it is added); graft's
///   sum reduction adds in another order and can stay finite. Only windows holding a finite
///   value above half the largest double are concerned.
std::string documented_deviation(const fixture_case& c, const std::string& what, std::size_t i, std::size_t n) {
    if (c.op == "pow" && c.inputs.size() == 2 && c.inputs[0].values.size() == n && c.inputs[1].values.size() == n) {
        const double x = c.inputs[0].values[i], p = c.inputs[1].values[i];
        const bool special_exponent = p == 0.5 || p == -0.5 || p == 2 || p == 3 || p == -1 || p == -2;
        if (special_exponent && (std::isinf(x) || x == 0.0)) return "pow: PyTorch's number-exponent forms";
    }
    if (c.op.rfind("bce_logits", 0) == 0 && !c.inputs.empty() && c.inputs[0].values.size() == n &&
        std::isinf(c.inputs[0].values[i]))
        return "binary_cross_entropy_with_logits at an infinite logit";
    if (c.op == "smooth_l1_loss" && c.params.size() > 1 && c.params[1] == 0.0) return "smooth_l1_loss beta 0";
    if (what != "forward") return {};  // the checks below concern forward values only
    if ((c.op == "batch_norm_train" || c.op == "batch_norm_eval") && !c.inputs.empty() &&
        c.inputs[0].sizes.size() == 2 && n == c.inputs[0].values.size()) {
        const std::size_t weight = c.op == "batch_norm_train" ? 1 : 3;
        const auto channels = static_cast<std::size_t>(c.inputs[0].sizes[1]);
        if (c.inputs.size() > weight && std::isinf(c.inputs[weight].values[i % channels]))
            return "batch_norm: torch's folded affine transform at an infinite weight";
    }
    if (c.op == "adaptive_avg_pool2d" && c.out_sizes.size() == 4 && n == c.out.size() && !c.inputs.empty() &&
        c.inputs[0].sizes.size() == 4) {
        const auto per_image_out = static_cast<std::size_t>(c.out_sizes[2] * c.out_sizes[3]);
        const auto& x = c.inputs[0];
        const auto per_image_in = static_cast<std::size_t>(x.sizes[2] * x.sizes[3]);
        const std::size_t image = i / per_image_out;
        for (std::size_t k = image * per_image_in; k < (image + 1) * per_image_in; ++k)
            if (std::isfinite(x.values[k]) && std::abs(x.values[k]) > 0.5 * std::numeric_limits<double>::max())
                return "adaptive_avg_pool2d: the order of a window's sum at overflow";
    }
    return {};
}

/// Checks graft's values against torch's, element by element.
void compare(const fixture_case& c, const op_entry& e, const std::string& what, const std::vector<double>& want,
             const std::vector<double>& got) {
    INFO(what);  // run_case has named the case
    CHECK(got.size() == want.size());
    if (got.size() != want.size()) return;
    const tolerance tol = tolerance_of(c, e);
    for (std::size_t i = 0; i < want.size(); ++i) {
        if (same_value(want[i], got[i], tol)) continue;
        if (!documented_deviation(c, what, i, want.size()).empty()) continue;
        const std::string at = describe_inputs(c, e, i, want.size());
        if (auto* f = report_file())
            *f << describe_case(c) << " | " << what << "[" << i << "] | " << at << " | torch " << show(want[i])
               << " | graft " << show(got[i]) << "\n";
        INFO("element " << i << " at " << at);
        const std::string torch_value = show(want[i]), graft_value = show(got[i]);
        CHECK(graft_value == torch_value);
    }
}

Tensor make_input(const fixture_input& x, graft::dtype type) {
    if (x.kind == 'i') {
        std::vector<std::int64_t> v(x.values.begin(), x.values.end());
        return graft::from_vector(v, x.sizes);
    }
    if (x.kind == 'b') {
        std::vector<bool> v;
        for (const double d : x.values) v.push_back(d != 0.0);
        return graft::from_vector(v, x.sizes);
    }
    return graft::from_vector(x.values, x.sizes).to(type);
}

std::vector<double> values_of(const Tensor& t) { return t.to(graft::dtype::float64).contiguous().to_vector<double>(); }

/// Runs one fixture case through eager graft and compares the forward value and the gradients.
void run_case(const fixture_case& c) {
    const auto it = op_table().find(c.op);
    INFO(describe_case(c));
    REQUIRE(it != op_table().end());
    std::vector<Tensor> inputs;
    for (const auto& x : c.inputs) inputs.push_back(make_input(x, c.type));
    std::vector<graft::autograd::grad_input> wrt;
    for (const auto& g : c.grads) {
        inputs[g.input].requires_grad_();
        wrt.emplace_back(inputs[g.input]);
    }
    Tensor out;
    try {
        out = it->second.fn(inputs, c.params);
    } catch (const std::exception& e) {
        FAIL_CHECK("graft threw in the forward: " << e.what());
        return;
    }
    CHECK(out.type() == c.type);
    CHECK(out.sizes() == c.out_sizes);
    if (out.sizes() != c.out_sizes) return;
    if (c.op == "smooth_l1_loss" && c.params.size() > 1 && c.params[1] == 0.0) {
        // beta 0: exactly l1_loss, values and gradients (documented_deviation).
        const auto same = [](const Tensor& x, const Tensor& y) {
            const std::vector<double> a = values_of(x), b = values_of(y);
            return a.size() == b.size() &&
                   std::equal(a.begin(), a.end(), b.begin(), [](double u, double v) { return u == v || (u != u && v != v); });
        };
        const Tensor a = inputs[0].detach().requires_grad_(), b = inputs[1].detach().requires_grad_();
        const Tensor l1 = F::l1_loss(a, b, reduction_of(c.params[0]));
        CHECK(same(out, l1));
        REQUIRE((inputs[0].requires_grad() && inputs[1].requires_grad()));
        const Tensor g = graft::ones_like(out);
        const auto smooth_grads = graft::autograd::grad({out}, {inputs[0], inputs[1]}, {g}, true);
        const auto l1_grads = graft::autograd::grad({l1}, {a, b}, {g});
        CHECK(same(smooth_grads[0], l1_grads[0]));
        CHECK(same(smooth_grads[1], l1_grads[1]));
    }
    compare(c, it->second, "forward", c.out, values_of(out));
    if (c.grads.empty()) return;
    std::vector<double> seed_values(c.out.size());
    for (std::size_t i = 0; i < seed_values.size(); ++i) seed_values[i] = seed_pattern[i % 4];
    const Tensor seed = graft::from_vector(seed_values).reshape(c.out_sizes).to(c.type);
    graft::autograd::tensor_list grads;
    try {
        grads = graft::autograd::grad({out}, wrt, {seed}, {}, false, true);
    } catch (const std::exception& e) {
        FAIL_CHECK("graft threw in the backward: " << e.what());
        return;
    }
    REQUIRE(grads.size() == c.grads.size());
    for (std::size_t k = 0; k < c.grads.size(); ++k) {
        const auto& want = c.grads[k];
        const std::size_t n = c.inputs[want.input].values.size();
        const std::vector<double> expected = want.values ? *want.values : std::vector<double>(n, 0.0);
        // An undefined gradient (graft found no path) is zeros, as torch's None.
        const std::vector<double> got = grads[k].defined() ? values_of(grads[k]) : std::vector<double>(n, 0.0);
        compare(c, it->second, "grad of input " + std::to_string(want.input), expected, got);
    }
}

void run_family(const char* family, std::optional<graft::dtype> type = std::nullopt) {
    std::size_t ran = 0;
    for (const auto& c : fixture()) {
        const auto it = op_table().find(c.op);
        if (it == op_table().end() || std::string(it->second.family) != family) continue;
        if (type && c.type != *type) continue;
        run_case(c);
        ++ran;
    }
    CHECK(ran > 0);
}

}  // namespace

TEST_CASE("special values: the fixture's ops are the table's", "[autograd][nan]") {
    std::map<std::string, int> seen;
    for (const auto& c : fixture()) {
        INFO(describe_case(c));
        CHECK(op_table().count(c.op) == 1);
        ++seen[c.op];
    }
    for (const auto& [name, entry] : op_table()) {
        INFO("op " << name << " has no case in special_values.txt");
        CHECK(seen.count(name) == 1);
    }
}

TEST_CASE("special values: unary ops and ops with a number, float64, as PyTorch", "[autograd][nan]") {
    run_family("unary", graft::dtype::float64);
}

TEST_CASE("special values: unary ops, float32, as PyTorch", "[autograd][nan]") {
    run_family("unary", graft::dtype::float32);
}

TEST_CASE("special values: binary ops over the grid of special values, as PyTorch", "[autograd][nan]") {
    run_family("binary");
}

TEST_CASE("special values: reductions, softmax and layer_norm, as PyTorch", "[autograd][nan]") {
    run_family("reduction");
}

TEST_CASE("special values: losses, as PyTorch", "[autograd][nan]") { run_family("loss"); }

TEST_CASE("special values: matmul with a NaN or infinite entry, as PyTorch", "[autograd][nan]") {
    run_family("matmul");
}

TEST_CASE("special values: cosine_similarity, normalize, batch, instance and group norm, as PyTorch",
          "[autograd][nan]") {
    run_family("norm");
}

TEST_CASE("special values: scaled_dot_product_attention, as PyTorch 2's math form", "[autograd][nan]") {
    run_family("attention");
}

TEST_CASE("special values: pooling, interpolate and constant pad, as PyTorch", "[autograd][nan]") {
    run_family("pool");
}

TEST_CASE("special values: conv1d, conv2d and embedding, as PyTorch", "[autograd][nan]") { run_family("conv"); }
