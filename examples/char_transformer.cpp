// A character-level language model built from nn::TransformerEncoderLayer: token and position
// embeddings, two pre-norm encoder layers under a causal mask, a LayerNorm and a Linear head,
// trained with AdamW on every 24-character window of a short text (batched and shuffled by
// data::DataLoader), under nn::script with the mask as a graph input. Prints a progress bar
// per epoch, the loss per character against the uniform guess, and a greedy continuation
// of a prompt; exits 0 when the model learned the text (loss below a quarter of the uniform
// guess's).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <graft/graft.hpp>

using namespace graft;
namespace F = graft::nn::functional;

namespace {

const char* const text =
    "graft keeps the autograd graph of pytorch in plain c++. a model is a tree of modules, "
    "a module owns its parameters, and every forward records the ops that backward walks. "
    "the profiling executor watches the first calls, then compiles a plan for the shapes it saw, "
    "fuses the elementwise ops and guards every input. when a guard fails it falls back and learns. "
    "graft keeps the autograd graph of pytorch in plain c++, and the graph pays for itself.";

constexpr std::int64_t block = 24, width = 48, heads = 4;

struct CharModel : nn::Module {
    explicit CharModel(std::int64_t vocab)
        : Module("CharModel"),
          tokens(register_module("tokens", std::make_shared<nn::Embedding>(vocab, width))),
          positions(register_module("positions", std::make_shared<nn::Embedding>(block, width))),
          encoder(register_module(
              "encoder", std::make_shared<nn::TransformerEncoder>(
                             nn::TransformerEncoderLayer(width, heads, {.dim_feedforward = 4 * width, .dropout = 0.0,
                                                                        .activation = "gelu", .batch_first = true,
                                                                        .norm_first = true}),
                             2))),
          norm(register_module("norm", std::make_shared<nn::LayerNorm>(width))),
          head(register_module("head", std::make_shared<nn::Linear>(width, vocab))) {}
    /// ids [N, T] (T <= block) and a causal mask [T, T]: logits [N, T, vocab].
    Tensor run(const Tensor& ids, const Tensor& mask) {
        const std::int64_t t = ids.size(1);
        const Tensor pos = arange(0, t, 1, dtype::int64);
        const Tensor h = (*tokens)(ids) + (*positions)(pos);
        return (*head)((*norm)((*encoder)(h, mask)));
    }
    std::shared_ptr<nn::Embedding> tokens, positions;
    std::shared_ptr<nn::TransformerEncoder> encoder;
    std::shared_ptr<nn::LayerNorm> norm;
    std::shared_ptr<nn::Linear> head;
};

}  // namespace

int main() {
    const std::string corpus(text);
    std::vector<char> alphabet(corpus.begin(), corpus.end());
    std::sort(alphabet.begin(), alphabet.end());
    alphabet.erase(std::unique(alphabet.begin(), alphabet.end()), alphabet.end());
    std::map<char, std::int64_t> id;
    for (std::size_t i = 0; i < alphabet.size(); ++i) id[alphabet[i]] = static_cast<std::int64_t>(i);
    const auto vocab = static_cast<std::int64_t>(alphabet.size());
    std::vector<std::int64_t> encoded;
    for (char c : corpus) encoded.push_back(id[c]);

    // Every window: inputs text[i, i + block), targets text[i + 1, i + block + 1).
    const auto windows = static_cast<std::int64_t>(encoded.size()) - block;
    const Tensor all = from_vector(encoded);
    std::vector<Tensor> xs, ys;
    for (std::int64_t i = 0; i < windows; ++i) {
        xs.push_back(all.narrow(0, i, block));
        ys.push_back(all.narrow(0, i + 1, block));
    }
    std::printf("text: %zu characters, %lld distinct, %lld windows of %lld\n", corpus.size(),
                static_cast<long long>(vocab), static_cast<long long>(windows), static_cast<long long>(block));

    manual_seed(0);
    auto model = std::make_shared<CharModel>(vocab);
    auto step_logits = nn::script(model, [](CharModel& m, const Tensor& x, const Tensor& mask) { return m.run(x, mask); });
    const Tensor mask = nn::generate_square_subsequent_mask(block);
    data::DataLoader loader(data::TensorDataset(stack(xs), stack(ys)), {.batch_size = 32, .shuffle = true});
    optim::AdamW opt(model->parameters(), 3e-3);
    const int epochs = 12;
    double last = 0;
    for (int epoch = 1; epoch <= epochs; ++epoch) {
        data::progress bar(std::cout, loader.size(), "epoch " + std::to_string(epoch) + "/" + std::to_string(epochs));
        double sum = 0;
        std::int64_t seen = 0;
        for (auto& b : loader) {
            opt.zero_grad();
            const Tensor logits = step_logits(b[0], mask);
            const Tensor loss = F::cross_entropy(logits.reshape({-1, vocab}), b[1].reshape({-1}));
            loss.backward();
            opt.step();
            sum += loss.item<double>() * static_cast<double>(b[0].size(0));
            seen += b[0].size(0);
            char postfix[48];
            std::snprintf(postfix, sizeof postfix, "loss %.3f", sum / static_cast<double>(seen));
            bar.set_postfix(postfix);
            bar.update();
        }
        last = sum / static_cast<double>(seen);
    }
    const double uniform = std::log(static_cast<double>(vocab));
    std::printf("loss per character %.3f (uniform guess %.3f)\n", last, uniform);

    // Greedy continuation of a prompt, one character at a time over the last `block` ones.
    model->eval();
    const autograd::no_grad guard;
    std::string out = "the profiling ";
    for (int n = 0; n < 60; ++n) {
        std::vector<std::int64_t> ctx;
        const std::size_t from = out.size() > static_cast<std::size_t>(block) ? out.size() - block : 0;
        for (std::size_t i = from; i < out.size(); ++i) ctx.push_back(id[out[i]]);
        const auto t = static_cast<std::int64_t>(ctx.size());
        const Tensor logits = model->run(from_vector(ctx).reshape({1, t}), nn::generate_square_subsequent_mask(t));
        const std::int64_t next = argmax(logits.index({0, -1}), 0).item<std::int64_t>();
        out += alphabet[static_cast<std::size_t>(next)];
    }
    std::printf("greedy continuation: \"%s\"\n", out.c_str());
    return last < uniform / 4 ? 0 : 1;
}
