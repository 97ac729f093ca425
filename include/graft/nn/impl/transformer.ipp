#pragma once
// Definitions for graft/nn/transformer.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/nn/transformer.hpp"

#include <cmath>
#include <limits>

#include "graft/nn/init.hpp"

namespace graft::nn {

namespace detail {

inline std::int64_t checked_heads(std::int64_t embed_dim, std::int64_t num_heads) {
    graft::detail::check(embed_dim > 0, "MultiheadAttention: embed_dim must be positive, got ", embed_dim);
    graft::detail::check(num_heads > 0, "MultiheadAttention: num_heads must be positive, got ", num_heads);
    graft::detail::check(embed_dim % num_heads == 0, "MultiheadAttention: embed_dim must be divisible by num_heads (",
                         embed_dim, " and ", num_heads, ")");
    return embed_dim / num_heads;
}

/// A mask as scores to add: bool true -> -inf (false -> 0), floating as it is (of `type`).
inline Tensor additive_mask(const char* what, const Tensor& mask, dtype type) {
    graft::detail::check(mask.type() == dtype::bool_ || mask.type() == type, "MultiheadAttention: ", what,
                         " must be bool or of the query's dtype ", type, ", got ", mask.type());
    if (mask.type() != dtype::bool_) return mask;
    return where(mask, -std::numeric_limits<double>::infinity(), zeros({}, type));
}

}  // namespace detail

GRAFT_INLINE MultiheadAttention::MultiheadAttention(std::int64_t embed_dim_, std::int64_t num_heads_, double dropout_,
                                                    bool bias, bool add_bias_kv, bool add_zero_attn,
                                                    std::optional<std::int64_t> kdim_,
                                                    std::optional<std::int64_t> vdim_, bool batch_first_, dtype type)
    : Module("MultiheadAttention"),
      embed_dim(embed_dim_),
      kdim(kdim_.value_or(embed_dim_)),
      vdim(vdim_.value_or(embed_dim_)),
      num_heads(num_heads_),
      head_dim(detail::checked_heads(embed_dim_, num_heads_)),
      dropout(dropout_),
      batch_first(batch_first_),
      in_proj_weight(register_parameter(
          "in_proj_weight", kdim == embed_dim && vdim == embed_dim
                                ? empty({3 * embed_dim, embed_dim}, detail::checked_float("MultiheadAttention", type))
                                : Tensor{})),
      q_proj_weight(register_parameter("q_proj_weight", in_proj_weight.defined() ? Tensor{} : empty({embed_dim, embed_dim}, type))),
      k_proj_weight(register_parameter("k_proj_weight", in_proj_weight.defined() ? Tensor{} : empty({embed_dim, kdim}, type))),
      v_proj_weight(register_parameter("v_proj_weight", in_proj_weight.defined() ? Tensor{} : empty({embed_dim, vdim}, type))),
      in_proj_bias(register_parameter("in_proj_bias", bias ? empty({3 * embed_dim}, type) : Tensor{})),
      out_proj(register_module("out_proj", std::make_shared<Linear>(embed_dim, embed_dim, bias, type))) {
    (void)detail::checked_float("MultiheadAttention", type);
    graft::detail::check(!add_bias_kv && !add_zero_attn,
                         "MultiheadAttention: add_bias_kv and add_zero_attn are not implemented in graft");
    graft::detail::check(kdim > 0 && vdim > 0, "MultiheadAttention: kdim and vdim must be positive");
    graft::detail::check(dropout >= 0.0 && dropout <= 1.0,
                         "MultiheadAttention: dropout probability has to be between 0 and 1, but got ", dropout);
    reset_parameters();
}

GRAFT_INLINE void MultiheadAttention::reset_parameters(generator& gen) {
    for (Tensor* w : {&in_proj_weight, &q_proj_weight, &k_proj_weight, &v_proj_weight})
        if (w->defined()) init::xavier_uniform_(*w, 1.0, gen);
    if (in_proj_bias.defined()) init::zeros_(in_proj_bias);
    if (out_proj->bias.defined()) init::zeros_(out_proj->bias);
}

GRAFT_INLINE std::string MultiheadAttention::extra_repr() const {
    // PyTorch prints only out_proj as a child; the sizes make the line useful.
    return graft::detail::concat("embed_dim=", embed_dim, ", num_heads=", num_heads,
                                 kdim != embed_dim ? graft::detail::concat(", kdim=", kdim) : std::string(),
                                 vdim != embed_dim ? graft::detail::concat(", vdim=", vdim) : std::string(),
                                 dropout != 0.0 ? graft::detail::concat(", dropout=", dropout) : std::string(),
                                 batch_first ? ", batch_first=True" : "");
}

GRAFT_INLINE std::pair<Tensor, Tensor> MultiheadAttention::operator()(const Tensor& query, const Tensor& key,
                                                                      const Tensor& value,
                                                                      const Tensor& key_padding_mask,
                                                                      bool need_weights, const Tensor& attn_mask,
                                                                      bool average_attn_weights) {
    const char* name = "MultiheadAttention";
    const dtype type = out_proj->weight.type();
    for (const auto& [t, what] : {std::pair{&query, "query"}, std::pair{&key, "key"}, std::pair{&value, "value"}}) {
        graft::detail::check(t->defined(), name, ": ", what, " is an undefined tensor");
        graft::detail::check(t->type() == type, name, ": expected ", what, " of the layer's dtype ", type, ", got ",
                             t->type());
    }
    graft::detail::check(query.dim() == 2 || query.dim() == 3, name,
                         ": query should be unbatched 2D or batched 3D tensor but received ", query.dim(),
                         "-D query tensor");
    graft::detail::check(key.dim() == query.dim() && value.dim() == query.dim(), name,
                         ": key and value must have the query's ", query.dim(), " dimensions, got ", key.dim(), " and ",
                         value.dim());
    const bool unbatched = query.dim() == 2;
    // Work in [L, N, E], as PyTorch's multi_head_attention_forward.
    const auto seq_first = [&](const Tensor& t) {
        return unbatched ? t.unsqueeze(1) : batch_first ? t.transpose(0, 1) : t;
    };
    const Tensor q = seq_first(query), k = seq_first(key), v = seq_first(value);
    const std::int64_t L = q.size(0), N = q.size(1), S = k.size(0), H = num_heads, D = head_dim;
    graft::detail::check(q.size(2) == embed_dim, name, ": was expecting embedding dimension of ", embed_dim,
                         ", but got ", q.size(2));
    graft::detail::check(k.size(2) == kdim && v.size(2) == vdim, name, ": expected key [..., ", kdim,
                         "] and value [..., ", vdim, "], got sizes ", key.sizes(), " and ", value.sizes());
    graft::detail::check(k.size(1) == N && v.size(1) == N && v.size(0) == S, name,
                         ": key and value must have the query's batch and the same length, got query ",
                         query.sizes(), ", key ", key.sizes(), ", value ", value.sizes());
    // Masks as scores to add, broadcasting to [N, H, L, S].
    Tensor bias;
    if (attn_mask.defined()) {
        Tensor m = detail::additive_mask("attn_mask", attn_mask, type);
        if (m.dim() == 2) {
            graft::detail::check(m.size(0) == L && m.size(1) == S, name, ": The shape of the 2D attn_mask is ",
                                 attn_mask.sizes(), ", but should be [", L, ", ", S, "].");
        } else {
            graft::detail::check(m.dim() == 3 && m.size(0) == N * H && m.size(1) == L && m.size(2) == S, name,
                                 ": The shape of the 3D attn_mask is ", attn_mask.sizes(), ", but should be [",
                                 N * H, ", ", L, ", ", S, "] (attn_mask must be 2D or 3D)");
            m = m.reshape({N, H, L, S});
        }
        bias = m;
    }
    if (key_padding_mask.defined()) {
        Tensor m = detail::additive_mask("key_padding_mask", key_padding_mask, type);
        if (unbatched && m.dim() == 1) m = m.unsqueeze(0);
        graft::detail::check(m.dim() == 2 && m.size(0) == N && m.size(1) == S, name,
                             ": expecting key_padding_mask shape of [", N, ", ", S, "], but got ",
                             key_padding_mask.sizes());
        m = m.reshape({N, 1, 1, S});
        bias = bias.defined() ? bias + m : m;
    }
    // Projections: the packed in_proj_weight's three row blocks, or the separate weights.
    const auto part = [&](const Tensor& t, std::int64_t i) { return t.defined() ? t.narrow(0, i * embed_dim, embed_dim) : t; };
    const Tensor wq = in_proj_weight.defined() ? part(in_proj_weight, 0) : q_proj_weight;
    const Tensor wk = in_proj_weight.defined() ? part(in_proj_weight, 1) : k_proj_weight;
    const Tensor wv = in_proj_weight.defined() ? part(in_proj_weight, 2) : v_proj_weight;
    const auto heads = [&](const Tensor& t, std::int64_t len) {  // [len, N, E] -> [N, H, len, D]
        return t.reshape({len, N, H, D}).permute({1, 2, 0, 3});
    };
    const Tensor qh = heads(functional::linear(q, wq, part(in_proj_bias, 0)), L);
    const Tensor kh = heads(functional::linear(k, wk, part(in_proj_bias, 1)), S);
    const Tensor vh = heads(functional::linear(v, wv, part(in_proj_bias, 2)), S);
    Tensor scores = matmul(qh / std::sqrt(static_cast<double>(D)), kh.transpose(-2, -1));
    if (bias.defined()) scores = scores + bias;
    Tensor weights = softmax(scores, -1);
    if (is_training() && dropout > 0.0) weights = functional::dropout(weights, dropout, true);
    const Tensor heads_out = matmul(weights, vh);  // [N, H, L, D]
    Tensor out = (*out_proj)(heads_out.permute({2, 0, 1, 3}).reshape({L, N, embed_dim}));
    out = unbatched ? out.squeeze(1) : batch_first ? out.transpose(0, 1) : out;
    Tensor w;
    if (need_weights) {
        w = average_attn_weights ? weights.mean({1}) : weights;
        if (unbatched) w = w.squeeze(0);
    }
    return {out, w};
}

GRAFT_INLINE transformer_activation::transformer_activation(std::string n) : name(std::move(n)) {
    if (name == "relu") fn = [](const Tensor& x) { return functional::relu(x); };
    else if (name == "gelu") fn = [](const Tensor& x) { return functional::gelu(x); };
    else graft::detail::fail("transformer layer: activation should be relu/gelu, not " + name);
}

namespace detail {
inline void check_layer_options(const char* layer, std::int64_t d_model, std::int64_t nhead,
                                const transformer_layer_options& o) {
    graft::detail::check(d_model > 0 && nhead > 0 && o.dim_feedforward > 0, layer,
                         ": d_model, nhead and dim_feedforward must be positive");
    graft::detail::check(static_cast<bool>(o.activation.fn), layer, ": the activation function is empty");
}
}  // namespace detail

GRAFT_INLINE TransformerEncoderLayer::TransformerEncoderLayer(std::int64_t d_model_, std::int64_t nhead_,
                                                              transformer_layer_options o)
    : Module("TransformerEncoderLayer"),
      d_model(d_model_),
      nhead(nhead_),
      options((detail::check_layer_options("TransformerEncoderLayer", d_model_, nhead_, o), std::move(o))) {
    const dtype t = options.type;
    self_attn = register_module("self_attn", std::make_shared<MultiheadAttention>(
                                                 d_model, nhead, options.dropout, true, false, false, std::nullopt,
                                                 std::nullopt, options.batch_first, t));
    linear1 = register_module("linear1", std::make_shared<Linear>(d_model, options.dim_feedforward, true, t));
    dropout = register_module("dropout", std::make_shared<Dropout>(options.dropout));
    linear2 = register_module("linear2", std::make_shared<Linear>(options.dim_feedforward, d_model, true, t));
    norm1 = register_module("norm1", std::make_shared<LayerNorm>(d_model, options.layer_norm_eps, true, true, t));
    norm2 = register_module("norm2", std::make_shared<LayerNorm>(d_model, options.layer_norm_eps, true, true, t));
    dropout1 = register_module("dropout1", std::make_shared<Dropout>(options.dropout));
    dropout2 = register_module("dropout2", std::make_shared<Dropout>(options.dropout));
}

GRAFT_INLINE Tensor TransformerEncoderLayer::operator()(const Tensor& src, const Tensor& src_mask,
                                                        const Tensor& src_key_padding_mask) {
    const auto sa = [&](const Tensor& x) {
        return (*dropout1)((*self_attn)(x, x, x, src_key_padding_mask, false, src_mask).first);
    };
    const auto ff = [&](const Tensor& x) {
        return (*dropout2)((*linear2)((*dropout)(options.activation((*linear1)(x)))));
    };
    Tensor x = src;
    if (options.norm_first) {
        x = x + sa((*norm1)(x));
        x = x + ff((*norm2)(x));
    } else {
        x = (*norm1)(x + sa(x));
        x = (*norm2)(x + ff(x));
    }
    return x;
}

GRAFT_INLINE TransformerDecoderLayer::TransformerDecoderLayer(std::int64_t d_model_, std::int64_t nhead_,
                                                              transformer_layer_options o)
    : Module("TransformerDecoderLayer"),
      d_model(d_model_),
      nhead(nhead_),
      options((detail::check_layer_options("TransformerDecoderLayer", d_model_, nhead_, o), std::move(o))) {
    const dtype t = options.type;
    const auto attention = [&] {
        return std::make_shared<MultiheadAttention>(d_model, nhead, options.dropout, true, false, false, std::nullopt,
                                                    std::nullopt, options.batch_first, t);
    };
    self_attn = register_module("self_attn", attention());
    multihead_attn = register_module("multihead_attn", attention());
    linear1 = register_module("linear1", std::make_shared<Linear>(d_model, options.dim_feedforward, true, t));
    dropout = register_module("dropout", std::make_shared<Dropout>(options.dropout));
    linear2 = register_module("linear2", std::make_shared<Linear>(options.dim_feedforward, d_model, true, t));
    norm1 = register_module("norm1", std::make_shared<LayerNorm>(d_model, options.layer_norm_eps, true, true, t));
    norm2 = register_module("norm2", std::make_shared<LayerNorm>(d_model, options.layer_norm_eps, true, true, t));
    norm3 = register_module("norm3", std::make_shared<LayerNorm>(d_model, options.layer_norm_eps, true, true, t));
    dropout1 = register_module("dropout1", std::make_shared<Dropout>(options.dropout));
    dropout2 = register_module("dropout2", std::make_shared<Dropout>(options.dropout));
    dropout3 = register_module("dropout3", std::make_shared<Dropout>(options.dropout));
}

GRAFT_INLINE Tensor TransformerDecoderLayer::operator()(const Tensor& tgt, const Tensor& memory,
                                                        const Tensor& tgt_mask, const Tensor& memory_mask,
                                                        const Tensor& tgt_key_padding_mask,
                                                        const Tensor& memory_key_padding_mask) {
    const auto sa = [&](const Tensor& x) {
        return (*dropout1)((*self_attn)(x, x, x, tgt_key_padding_mask, false, tgt_mask).first);
    };
    const auto mha = [&](const Tensor& x) {
        return (*dropout2)((*multihead_attn)(x, memory, memory, memory_key_padding_mask, false, memory_mask).first);
    };
    const auto ff = [&](const Tensor& x) {
        return (*dropout3)((*linear2)((*dropout)(options.activation((*linear1)(x)))));
    };
    Tensor x = tgt;
    if (options.norm_first) {
        x = x + sa((*norm1)(x));
        x = x + mha((*norm2)(x));
        x = x + ff((*norm3)(x));
    } else {
        x = (*norm1)(x + sa(x));
        x = (*norm2)(x + mha(x));
        x = (*norm3)(x + ff(x));
    }
    return x;
}

GRAFT_INLINE Tensor TransformerDecoderLayer::forward(const Tensor&) {
    graft::detail::fail("TransformerDecoderLayer: forward(tgt) alone is not defined: call (tgt, memory, ...)");
}

namespace detail {
/// `n` layers made by `make`, each loaded with `first`'s values and mode (PyTorch deep-copies).
template <class L, class Make>
std::shared_ptr<ModuleList> cloned_layers(const L& first, std::int64_t n, Make make) {
    graft::detail::check(n > 0, first.type_name(), " stack: num_layers must be positive, got ", n);
    auto list = std::make_shared<ModuleList>();
    const named_tensor_list state = first.state_dict();
    for (std::int64_t i = 0; i < n; ++i) {
        std::shared_ptr<L> layer = make();
        (void)layer->load_state_dict(state);
        layer->train(first.is_training());
        list->push_back(layer);
    }
    return list;
}
}  // namespace detail

GRAFT_INLINE TransformerEncoder::TransformerEncoder(const TransformerEncoderLayer& layer, std::int64_t n,
                                                    std::shared_ptr<LayerNorm> norm_)
    : Module("TransformerEncoder"), num_layers(n) {
    layers = register_module("layers", detail::cloned_layers(layer, n, [&] {
                                 return std::make_shared<TransformerEncoderLayer>(layer.d_model, layer.nhead,
                                                                                  layer.options);
                             }));
    if (norm_) norm = register_module("norm", std::move(norm_));
}

GRAFT_INLINE Tensor TransformerEncoder::operator()(const Tensor& src, const Tensor& mask,
                                                   const Tensor& src_key_padding_mask) {
    Tensor x = src;
    for (std::size_t i = 0; i < layers->size(); ++i)
        x = (*layers->at<TransformerEncoderLayer>(static_cast<std::int64_t>(i)))(x, mask, src_key_padding_mask);
    return norm ? (*norm)(x) : x;
}

GRAFT_INLINE TransformerDecoder::TransformerDecoder(const TransformerDecoderLayer& layer, std::int64_t n,
                                                    std::shared_ptr<LayerNorm> norm_)
    : Module("TransformerDecoder"), num_layers(n) {
    layers = register_module("layers", detail::cloned_layers(layer, n, [&] {
                                 return std::make_shared<TransformerDecoderLayer>(layer.d_model, layer.nhead,
                                                                                  layer.options);
                             }));
    if (norm_) norm = register_module("norm", std::move(norm_));
}

GRAFT_INLINE Tensor TransformerDecoder::operator()(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                                   const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                                   const Tensor& memory_key_padding_mask) {
    Tensor x = tgt;
    for (std::size_t i = 0; i < layers->size(); ++i)
        x = (*layers->at<TransformerDecoderLayer>(static_cast<std::int64_t>(i)))(
            x, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask);
    return norm ? (*norm)(x) : x;
}

GRAFT_INLINE Tensor TransformerDecoder::forward(const Tensor&) {
    graft::detail::fail("TransformerDecoder: forward(tgt) alone is not defined: call (tgt, memory, ...)");
}

GRAFT_INLINE Tensor generate_square_subsequent_mask(std::int64_t sz, dtype type) {
    graft::detail::check(sz >= 0, "generate_square_subsequent_mask: sz must be non-negative, got ", sz);
    return where(triu(ones({sz, sz}, dtype::bool_), 1), -std::numeric_limits<double>::infinity(), zeros({}, type));
}

}  // namespace graft::nn
