// Every op the eager layer has is capturable: each op-table entry (enumerated from
// ops::all_elementwise_ops) and each op of a table of the other public ops (nn::functional and
// graft's tensor functions) runs through capture::aot (forward and backward graphs) and
// jit::script (profiled, then its optimized plans), in float32 and float64, against eager.
// A last case reads nn/functional.hpp and autograd/functions.hpp and checks that every
// function they declare has a case here, so a new op cannot skip this test.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <graft/graft.hpp>

using namespace graft;
namespace F = graft::nn::functional;

namespace {

/// An input of a case: floating values in [lo, hi) (of the case's dtype), requiring grad or not.
struct input_spec {
    int_list sizes;
    double lo = -1.5, hi = 1.5;
    bool grad = true;
};

struct op_case {
    std::vector<std::string> ops;  // the public functions the case exercises
    std::function<std::vector<Tensor>(const std::vector<Tensor>&)> f;
    std::vector<input_spec> inputs;
};

/// max |a - b| / (1 + |b|).
double rel_diff(const Tensor& a, const Tensor& b) {
    const auto x = a.detach().to(dtype::float64).contiguous().to_vector<double>();
    const auto y = b.detach().to(dtype::float64).contiguous().to_vector<double>();
    double m = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        if (std::isnan(x[i]) && std::isnan(y[i])) continue;
        m = std::max(m, std::abs(x[i] - y[i]) / (1.0 + std::abs(y[i])));
    }
    return m;
}

/// A fixed-weight sum of the floating outputs (so gradients are not all ones).
Tensor weighted_loss(const std::vector<Tensor>& outs) {
    Tensor loss;
    double k = 1.0;
    for (const Tensor& o : outs) {
        if (!is_floating_point(o.type()) || !o.requires_grad()) continue;
        const Tensor term = (o * o * 0.5 + o * k).sum();
        loss = loss.defined() ? loss + term : term;
        k += 0.25;
    }
    return loss;
}

void check_case(const op_case& c, dtype t) {
    std::vector<Tensor> in;
    std::uint64_t seed = 1;
    for (const input_spec& s : c.inputs) {
        generator g(seed++);
        Tensor x = (rand(s.sizes, t, g) * (s.hi - s.lo) + s.lo).detach();
        if (s.grad) x.requires_grad_();
        in.push_back(x);
    }
    std::vector<autograd::grad_input> grad_in;
    for (const Tensor& x : in)
        if (x.requires_grad()) grad_in.emplace_back(x);
    const double tol = t == dtype::float32 ? 2e-5 : 1e-11;
    const std::vector<Tensor> want = c.f(in);
    const Tensor want_loss = weighted_loss(want);
    const auto want_grads = want_loss.defined() ? autograd::grad({want_loss}, grad_in, {}, false, false, true)
                                                : std::vector<Tensor>{};
    const auto compare = [&](const std::vector<Tensor>& got, const char* path) {
        INFO(path);
        REQUIRE(got.size() == want.size());
        for (std::size_t i = 0; i < got.size(); ++i) {
            REQUIRE(got[i].sizes() == want[i].sizes());
            REQUIRE(got[i].type() == want[i].type());
            CHECK(got[i].requires_grad() == want[i].requires_grad());
            CHECK(rel_diff(got[i], want[i]) <= tol);
        }
        const Tensor loss = weighted_loss(got);
        REQUIRE(loss.defined() == want_loss.defined());
        if (!loss.defined()) return;
        const auto grads = autograd::grad({loss}, grad_in, {}, false, false, true);
        for (std::size_t i = 0; i < grads.size(); ++i) {
            INFO("gradient " << i);
            REQUIRE(grads[i].defined() == want_grads[i].defined());
            if (grads[i].defined()) CHECK(rel_diff(grads[i], want_grads[i]) <= tol);
        }
    };
    const auto aot = capture::aot(c.f, in);
    compare(aot(in), "capture::aot");
    jit::options o;
    o.fusion = {{jit::fusion_behavior::static_, 2}};
    o.num_profiled_runs = 1;
    auto fn = jit::script(c.f, o);
    for (int call = 0; call < 3; ++call) compare(fn(in), "jit::script");
}

/// Int64 index constants used by the indexing cases.
Tensor ids(std::initializer_list<std::int64_t> v, int_list sizes = {-1}) { return tensor(v, std::move(sizes)); }

std::vector<op_case> public_ops() {
    using V = std::vector<Tensor>;
    const input_spec m34{{3, 4}}, m43{{4, 3}}, v4{{4}}, pos34{{3, 4}, 0.5, 2.0};
    const input_spec img{{2, 3, 6, 6}}, kern{{4, 3, 3, 3}}, bias4{{4}};
    return {
        {{"matmul"}, [](const V& x) { return V{matmul(x[0], x[1])}; }, {m34, m43}},
        {{"linear"}, [](const V& x) { return V{F::linear(x[0], x[1], x[2])}; }, {m34, {{5, 4}}, {{5}}}},
        {{"sum", "sum_to_size", "square"},
         [](const V& x) { return V{x[0].sum(), sum(x[0], {1}, true), sum_to_size(x[0], {1, 4}), square(x[0])}; },
         {m34}},
        {{"mean"}, [](const V& x) { return V{mean(x[0], {0})}; }, {m34}},
        {{"amax", "amin"}, [](const V& x) { return V{amax(x[0], {1}), amin(x[0], {0}, true)}; }, {m34}},
        {{"logsumexp"}, [](const V& x) { return V{logsumexp(x[0], {1})}; }, {m34}},
        {{"var", "std"}, [](const V& x) { return V{var(x[0], {1}), graft::std(x[0], {0}, 0.0)}; }, {m34}},
        {{"softmax", "log_softmax"},
         [](const V& x) { return V{F::softmax(x[0], 1), F::log_softmax(x[0], 0)}; }, {m34}},
        {{"relu", "sigmoid", "tanh", "silu"},
         [](const V& x) { return V{F::relu(x[0]), F::sigmoid(x[0]), F::tanh(x[0]), F::silu(x[0])}; }, {m34}},
        {{"gelu", "normal_cdf"},
         [](const V& x) { return V{F::gelu(matmul(x[0], x[1])), F::gelu(x[0], "tanh"), normal_cdf(x[0])}; },
         {m34, {{4, 4}}}},
        {{"softplus", "leaky_relu"},
         [](const V& x) { return V{F::softplus(x[0], 2.0), F::leaky_relu(x[0], 0.1)}; }, {m34}},
        {{"abs", "sign", "exp", "log", "sqrt", "rsqrt", "neg", "sin", "cos"},
         [](const V& x) {
             return V{abs(x[0]), sign(x[0]), exp(x[0]), log(x[1]), sqrt(x[1]), rsqrt(x[1]), neg(x[0]), sin(x[0]), cos(x[0])};
         },
         {m34, pos34}},
        {{"log1p", "expm1"},
         [](const V& x) { return V{log1p(x[0]), expm1(x[0]), x[0].log1p() * x[0].expm1()}; },
         {{{3, 4}, -0.9, 2.0}}},
        {{"clamp", "clamp_min", "clamp_max"},
         [](const V& x) {
             return V{clamp(x[0], scalar(-0.5), scalar(0.7)), clamp_min(x[0], 0.1), clamp_max(x[0], 0.2)};
         },
         {m34}},
        {{"where"}, [](const V& x) { return V{where(x[0] > 0.0, x[0] * 2.0, x[1])}; }, {m34, m34}},
        {{"masked_fill", "tril", "triu"},
         [](const V& x) { return V{masked_fill(x[0], x[0] < 0.0, -1.0), tril(x[0], 1), triu(x[0])}; }, {m34}},
        {{"cat", "stack"}, [](const V& x) { return V{cat({x[0], x[1]}, 1), stack({x[0], x[0] * 2.0}, 0)}; },
         {m34, {{3, 2}}}},
        {{"index_select", "gather", "scatter_add"},
         [](const V& x) {
             return V{index_select(x[0], 1, ids({3, 0, 0})), gather(x[0], 1, ids({0, 3, 1, 1, 2, 0}, {3, 2})),
                      scatter_add(x[0], 1, ids({0, 0, 2, 1, 3, 3}, {3, 2}), x[1])};
         },
         {m34, {{3, 2}}}},
        {{"index", "index_put"},
         [](const V& x) {
             return V{index(x[0], {ids({2, 0, 2})}), index_put(x[0], {ids({1, 1})}, x[1], true)};
         },
         {m34, v4}},
        {{"einsum", "outer", "flatten"},
         [](const V& x) {
             return V{einsum("ij,jk->ik", {x[0], x[1]}), outer(x[2], x[2]), flatten((x[0] * 2.0).unsqueeze(0), 0, 1)};
         },
         {m34, m43, v4}},
        {{"mse_loss", "l1_loss", "smooth_l1_loss"},
         [](const V& x) {
             return V{F::mse_loss(x[0], x[1]), F::l1_loss(x[0], x[1]), F::smooth_l1_loss(x[0], x[1])};
         },
         {m34, {m34.sizes, -1.5, 1.5, false}}},
        {{"huber_loss", "kl_div"},
         [](const V& x) {
             return V{F::huber_loss(x[0], x[1], F::reduction::mean, 0.6), F::huber_loss(x[0], x[1], F::reduction::none),
                      F::kl_div(x[0], x[2], F::reduction::batchmean), F::kl_div(x[0], x[1], F::reduction::sum, true)};
         },
         {m34, {m34.sizes, -1.5, 1.5, true}, {m34.sizes, 0.05, 1.0, true}}},
        {{"cosine_similarity", "normalize", "broadcast_tensors"},
         [](const V& x) {
             const auto b = broadcast_tensors({x[0], x[1]});
             return V{F::cosine_similarity(x[0], x[1]), F::cosine_similarity(x[0], x[2], 0), F::normalize(x[0]),
                      F::normalize(x[0], 3.0, 0), F::normalize(x[0], 1.0), b[0] * b[1]};
         },
         {m34, m34, {{3, 1}}}},
        {{"pad"},
         [](const V& x) {
             return V{F::pad(x[0], {1, 2}), F::pad(x[0], {-1, 2, 1, -1}, "constant", 0.5),
                      F::pad(x[0], {2, 1}, "reflect"), F::pad(x[0], {1, 3}, "replicate"),
                      F::pad(x[0].unsqueeze(0), {2, -1}, "circular")};
         },
         {m34}},
        {{"binary_cross_entropy_with_logits"},
         [](const V& x) { return V{F::binary_cross_entropy_with_logits(x[0], x[1])}; },
         {m34, {m34.sizes, 0.0, 1.0, false}}},
        {{"binary_cross_entropy", "binary_cross_entropy_elements"},
         [](const V& x) {
             const Tensor w = from_vector(std::vector<double>{1.0, 0.5, 2.0, 1.5}, {4}).to(x[0].type());
             return V{F::binary_cross_entropy(x[0], x[1]), F::binary_cross_entropy(x[0], x[1], w, F::reduction::sum)};
         },
         {{m34.sizes, 0.05, 0.95, true}, {m34.sizes, 0.0, 1.0, true}}},
        // The recurrent cells' fused gate ops (graft/ops/rnn_cell.hpp; their backward ops are in
        // the backward graphs): (h', c') of an LSTM step and h' of a GRU step.
        {{"fused_lstm_cell", "fused_lstm_cell_backward"},
         [](const V& x) { return V{autograd::detail::fused_lstm_cell(x[0], x[1], x[2])}; },
         {{{3, 8}}, {{3, 8}}, {{3, 2}}}},
        {{"fused_gru_cell", "fused_gru_cell_backward"},
         [](const V& x) { return V{autograd::detail::fused_gru_cell(x[0], x[1], x[2])}; },
         {{{3, 6}}, {{3, 6}}, {{3, 2}}}},
        {{"cross_entropy", "nll_loss"},
         [](const V& x) {
             const Tensor target = ids({3, 0, 2});
             return V{F::cross_entropy(x[0], target), F::nll_loss(F::log_softmax(x[0], 1), target)};
         },
         {m34}},
        {{"layer_norm"}, [](const V& x) { return V{F::layer_norm(x[0], {4}, x[1], x[2])}; }, {m34, v4, v4}},
        {{"batch_norm", "batch_norm_with_factor", "instance_norm", "group_norm"},
         [](const V& x) {
             // Running statistics as inputs (written back: graph outputs of their own).
             Tensor rm = x[3].detach().clone(), rv = x[4].detach().clone();
             const Tensor factor = full({}, 0.25, x[0].type());
             return V{F::batch_norm(x[0], {}, {}, x[1], x[2], true),
                      F::batch_norm(x[0], x[3], x[4], x[1], x[2], false),
                      F::detail::batch_norm_with_factor(x[0], rm, rv, x[1], x[2], true, factor, 1e-5, false),
                      rm,
                      rv,
                      F::instance_norm(x[0], {}, {}, x[1], x[2]),
                      F::group_norm(x[0], 3, x[1], x[2])};
         },
         {img, {{3}, 0.5, 1.5}, {{3}}, {{3}, -0.5, 0.5, false}, {{3}, 0.5, 2.0, false}}},
        {{"scaled_dot_product_attention"},
         [](const V& x) {
             const Tensor mask = from_vector(std::vector<double>{1, 0, 1, 1, 1, 0}, {2, 3}).ne(0.0);
             return V{F::scaled_dot_product_attention(x[0], x[1], x[2]),
                      F::scaled_dot_product_attention(x[0], x[1], x[2], mask),
                      F::scaled_dot_product_attention(x[0], x[0], x[0], x[3], 0.0, false, 0.5),
                      F::scaled_dot_product_attention(x[0], x[1], x[2], {}, 0.0, true)};
         },
         {{{2, 2, 4}}, {{2, 3, 4}}, {{2, 3, 5}}, {{2, 2}, -1.0, 1.0, false}}},
        {{"embedding"}, [](const V& x) { return V{F::embedding(ids({2, 0, 2, 4}, {2, 2}), x[0])}; }, {{{5, 3}}}},
        {{"conv2d"}, [](const V& x) { return V{F::conv2d(x[0], x[1], x[2], 1, 1)}; }, {img, kern, bias4}},
        {{"max_pool2d", "avg_pool2d"},
         [](const V& x) { return V{F::max_pool2d(x[0], 2), F::avg_pool2d(x[0], 3, 2, 1)}; }, {img}},
        {{"unfold", "fold"},
         [](const V& x) {
             const Tensor cols = F::unfold(x[0], 3, 1, 1, 2);
             return V{cols, F::fold(cols, {6, 6}, 3, 1, 1, 2)};
         },
         {img}},
        {{"dropout"},  // p = 0 and eval return their input (random masks: test_capture_random.cpp)
         [](const V& x) { return V{F::dropout(x[0] * 2.0, 0.0), F::dropout(x[0] * 3.0, 0.3, false)}; }, {m34}},
        {{"conv1d"}, [](const V& x) { return V{F::conv1d(x[0], x[1], x[2], 2, 1, 1, 2)}; },
         {{{2, 4, 7}}, {{6, 2, 3}}, {{6}}}},
        {{"conv_transpose2d"},
         [](const V& x) { return V{F::conv_transpose2d(x[0], x[1], x[2], 2, 1, 1, 1, {1, 2})}; },
         {{{2, 3, 4, 3}}, {{3, 2, 3, 2}}, {{2}}}},
        {{"adaptive_avg_pool2d", "adaptive_max_pool2d"},
         [](const V& x) { return V{F::adaptive_avg_pool2d(x[0], {4, 5}), F::adaptive_max_pool2d(x[0], {4, std::nullopt})}; },
         {img}},
        {{"interpolate"},
         [](const V& x) {
             return V{F::interpolate(x[0], {}, 1.5, "bilinear"), F::interpolate(x[0], {4, 9}),
                      F::interpolate(x[0], {3, 3}, {}, "area")};
         },
         {img}},
        {{"dropout2d"},  // p = 0 and eval return their input (random masks: test_capture_random.cpp's dropout)
         [](const V& x) { return V{F::dropout2d(x[0] * 2.0, 0.0), F::dropout2d(x[0] * 3.0, 0.3, false)}; }, {img}},
    };
}

/// Names declared `Tensor name(` at namespace level in one of graft's headers.
std::set<std::string> declared_functions(const std::string& path) {
    std::ifstream in(path);
    REQUIRE(in.good());
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    std::set<std::string> names;
    const std::regex decl(R"(\n(?:\[\[nodiscard\]\] )?(?:GRAFT_INLINE|inline) Tensor ([a-z_0-9]+)\()");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), decl); it != std::sregex_iterator(); ++it)
        names.insert((*it)[1].str());
    return names;
}

}  // namespace

TEST_CASE("capture: every op-table entry captures, forward and backward, in float32 and float64",
          "[capture][ops]") {
    std::apply(
        [](auto... op) {
            const auto one = [](auto o) {
                using Op = decltype(o);
                INFO(Op::name);
                if constexpr (Op::arity == 3) {
                    return;  // where: in the public table (its condition is a bool tensor)
                } else {
                    op_case c;
                    c.ops = {std::string(Op::name)};
                    // Positive inputs: every entry's domain (log, sqrt, pow's base).
                    const input_spec s{{3, 4}, 0.5, 2.0, Op::differentiable};
                    if constexpr (Op::arity == 1) {
                        c.f = [](const std::vector<Tensor>& x) { return std::vector<Tensor>{Op::call(x[0])}; };
                        c.inputs = {s};
                    } else {
                        c.f = [](const std::vector<Tensor>& x) { return std::vector<Tensor>{Op::call(x[0], x[1])}; };
                        c.inputs = {s, input_spec{{4}, 0.5, 2.0, Op::differentiable}};  // broadcast
                    }
                    for (dtype t : {dtype::float32, dtype::float64}) {
                        INFO(name(t));
                        check_case(c, t);
                    }
                }
            };
            (one(op), ...);
        },
        ops::all_elementwise_ops{});
}

TEST_CASE("capture: every public op captures, forward and backward, in float32 and float64", "[capture][ops]") {
    for (const op_case& c : public_ops()) {
        INFO(c.ops.front());
        for (dtype t : {dtype::float32, dtype::float64}) {
            INFO(name(t));
            check_case(c, t);
        }
    }
}

TEST_CASE("capture: the op cases cover every function nn/functional.hpp and autograd/functions.hpp declare",
          "[capture][ops]") {
    std::set<std::string> covered;
    for (const op_case& c : public_ops()) covered.insert(c.ops.begin(), c.ops.end());
    std::apply([&](auto... op) { (covered.insert(std::string(decltype(op)::name)), ...); }, ops::all_elementwise_ops{});
    // Building blocks of other ops' derivatives, not user-facing ops (each is captured through
    // the op whose backward calls it).
    const std::set<std::string> internal{"clamp_backward", "record_binary", "record_binary_scalar",
                                         "record_extremum", "reduce_grad",  "unsqueeze_reduced"};
    for (const char* header : {"/include/graft/nn/functional.hpp", "/include/graft/autograd/functions.hpp"}) {
        const auto names = declared_functions(std::string(GRAFT_SOURCE_DIR) + header);
        CHECK(names.size() >= 20);  // the reader found the declarations
        for (const std::string& n : names) {
            INFO(header << ": " << n);
            CHECK((covered.count(n) || internal.count(n)));
        }
    }
}
