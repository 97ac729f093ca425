#pragma once
// graft::nn attention layers: MultiheadAttention, TransformerEncoderLayer, TransformerEncoder,
// TransformerDecoderLayer and TransformerDecoder (torch.nn's), with PyTorch's arguments,
// defaults, parameter names (so state_dicts move both ways) and initialization. Built on
// linear, softmax and layer_norm, so autograd, capture and the executor see ordinary ops.
// Sequence layout: [L, N, E] by default, [N, L, E] with batch_first, [L, E] unbatched.
// Manual: docs/nn.md#attention-and-transformer-layers.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "graft/nn/functional.hpp"
#include "graft/nn/layers.hpp"
#include "graft/nn/modules.hpp"

namespace graft::nn {

/// torch.nn.MultiheadAttention: num_heads heads of embed_dim / num_heads each. Parameters:
/// in_proj_weight [3E, E] (xavier_uniform_) and in_proj_bias [3E] (zeros) when kdim and vdim
/// equal embed_dim, else q_proj_weight [E, E], k_proj_weight [E, kdim], v_proj_weight
/// [E, vdim]; out_proj (a Linear, its bias zeros). add_bias_kv and add_zero_attn are not
/// offered (a graft::error).
class MultiheadAttention : public Module {
public:
    GRAFT_INLINE MultiheadAttention(std::int64_t embed_dim, std::int64_t num_heads, double dropout = 0.0,
                                    bool bias = true, bool add_bias_kv = false, bool add_zero_attn = false,
                                    std::optional<std::int64_t> kdim = std::nullopt,
                                    std::optional<std::int64_t> vdim = std::nullopt, bool batch_first = false,
                                    dtype type = dtype::float32);
    /// PyTorch's _reset_parameters.
    GRAFT_INLINE void reset_parameters(generator& gen = default_generator());

    /// Attention of query [L, N, E] (batch_first: [N, L, E]; unbatched [L, E]) over key [S, N,
    /// kdim] and value [S, N, vdim]: (output [L, N, E], weights). key_padding_mask [N, S] (or
    /// [S]): bool, true for keys to ignore, or floating, added. attn_mask [L, S] or
    /// [N * num_heads, L, S]: bool, true where attention is not allowed, or floating, added.
    /// Weights (need_weights): [N, L, S] averaged over the heads, or [N, num_heads, L, S]
    /// (average_attn_weights false); undefined otherwise. Dropout on the weights in training.
    GRAFT_INLINE std::pair<Tensor, Tensor> operator()(const Tensor& query, const Tensor& key, const Tensor& value,
                                                      const Tensor& key_padding_mask = {}, bool need_weights = true,
                                                      const Tensor& attn_mask = {},
                                                      bool average_attn_weights = true);
    using Module::operator();
    /// Self-attention of `input` (query, key and value), without weights: for Sequential.
    Tensor forward(const Tensor& input) override { return (*this)(input, input, input, {}, false).first; }
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;

    const std::int64_t embed_dim, kdim, vdim, num_heads, head_dim;
    const double dropout;
    const bool batch_first;
    Tensor& in_proj_weight;  // undefined when kdim or vdim differ from embed_dim
    Tensor& q_proj_weight;   // defined only then
    Tensor& k_proj_weight;
    Tensor& v_proj_weight;
    Tensor& in_proj_bias;  // undefined without bias
    std::shared_ptr<Linear> out_proj;
};

/// A transformer layer's activation: "relu", "gelu", or any function of a tensor.
struct transformer_activation {
    std::string name;  // "relu", "gelu", or "" for a function
    std::function<Tensor(const Tensor&)> fn;
    transformer_activation(const char* n) : transformer_activation(std::string(n)) {}  // NOLINT: PyTorch's str form
    GRAFT_INLINE transformer_activation(std::string n);                                 // NOLINT
    transformer_activation(std::function<Tensor(const Tensor&)> f) : fn(std::move(f)) {}  // NOLINT: a callable
    Tensor operator()(const Tensor& x) const { return fn(x); }
};

/// A transformer layer's settings (TransformerEncoderLayer's and TransformerDecoderLayer's
/// arguments after d_model and nhead, with PyTorch's defaults), for designated initializers:
/// `{.dim_feedforward = 512, .dropout = 0.0, .batch_first = true}`.
struct transformer_layer_options {
    std::int64_t dim_feedforward = 2048;
    double dropout = 0.1;
    transformer_activation activation = "relu";
    double layer_norm_eps = 1e-5;
    bool batch_first = false;
    bool norm_first = false;
    dtype type = dtype::float32;
};

/// torch.nn.TransformerEncoderLayer: self-attention then a feed-forward block (linear1,
/// activation, dropout, linear2), each with a residual connection, dropout and a LayerNorm
/// (after the residual; before the block with norm_first). Children self_attn, linear1,
/// dropout, linear2, norm1, norm2, dropout1, dropout2, as PyTorch's.
class TransformerEncoderLayer : public Module {
public:
    GRAFT_INLINE TransformerEncoderLayer(std::int64_t d_model, std::int64_t nhead,
                                         transformer_layer_options options = {});
    /// src [S, N, E] ([N, S, E] with batch_first; [S, E] unbatched); src_mask and
    /// src_key_padding_mask as MultiheadAttention's attn_mask and key_padding_mask.
    GRAFT_INLINE Tensor operator()(const Tensor& src, const Tensor& src_mask,
                                   const Tensor& src_key_padding_mask = {});
    using Module::operator();
    Tensor forward(const Tensor& src) override { return (*this)(src, Tensor{}); }

    const std::int64_t d_model, nhead;
    const transformer_layer_options options;
    std::shared_ptr<MultiheadAttention> self_attn;
    std::shared_ptr<Linear> linear1, linear2;
    std::shared_ptr<Dropout> dropout, dropout1, dropout2;
    std::shared_ptr<LayerNorm> norm1, norm2;
};

/// torch.nn.TransformerDecoderLayer: self-attention, attention over the encoder's output
/// (memory), then the feed-forward block, each with residual, dropout and LayerNorm. Children
/// self_attn, multihead_attn, linear1, dropout, linear2, norm1-3, dropout1-3.
class TransformerDecoderLayer : public Module {
public:
    GRAFT_INLINE TransformerDecoderLayer(std::int64_t d_model, std::int64_t nhead,
                                         transformer_layer_options options = {});
    /// tgt [T, N, E] and memory [S, N, E] (batch_first: [N, T, E], [N, S, E]); the masks as
    /// MultiheadAttention's, for the self-attention (tgt_*) and the memory attention (memory_*).
    GRAFT_INLINE Tensor operator()(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {},
                                   const Tensor& memory_mask = {}, const Tensor& tgt_key_padding_mask = {},
                                   const Tensor& memory_key_padding_mask = {});
    using Module::operator();
    /// A decoder layer needs the memory: forward(tgt) alone is a graft::error.
    GRAFT_INLINE Tensor forward(const Tensor& tgt) override;

    const std::int64_t d_model, nhead;
    const transformer_layer_options options;
    std::shared_ptr<MultiheadAttention> self_attn, multihead_attn;
    std::shared_ptr<Linear> linear1, linear2;
    std::shared_ptr<Dropout> dropout, dropout1, dropout2, dropout3;
    std::shared_ptr<LayerNorm> norm1, norm2, norm3;
};

/// torch.nn.TransformerEncoder: num_layers copies of `encoder_layer` (children layers.0,
/// layers.1, ...; each starts with the given layer's values, as PyTorch's deepcopy), then
/// `norm` when given.
class TransformerEncoder : public Module {
public:
    GRAFT_INLINE TransformerEncoder(const TransformerEncoderLayer& encoder_layer, std::int64_t num_layers,
                                    std::shared_ptr<LayerNorm> norm = nullptr);
    GRAFT_INLINE Tensor operator()(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask = {});
    using Module::operator();
    Tensor forward(const Tensor& src) override { return (*this)(src, Tensor{}); }

    const std::int64_t num_layers;
    std::shared_ptr<ModuleList> layers;
    std::shared_ptr<LayerNorm> norm;  // null without a final norm
};

/// torch.nn.TransformerDecoder: num_layers copies of `decoder_layer` (as TransformerEncoder),
/// then `norm` when given.
class TransformerDecoder : public Module {
public:
    GRAFT_INLINE TransformerDecoder(const TransformerDecoderLayer& decoder_layer, std::int64_t num_layers,
                                    std::shared_ptr<LayerNorm> norm = nullptr);
    GRAFT_INLINE Tensor operator()(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {},
                                   const Tensor& memory_mask = {}, const Tensor& tgt_key_padding_mask = {},
                                   const Tensor& memory_key_padding_mask = {});
    using Module::operator();
    GRAFT_INLINE Tensor forward(const Tensor& tgt) override;

    const std::int64_t num_layers;
    std::shared_ptr<ModuleList> layers;
    std::shared_ptr<LayerNorm> norm;
};

/// A float [sz, sz] mask with -inf above the diagonal and 0 elsewhere
/// (nn.Transformer.generate_square_subsequent_mask), for src_mask / tgt_mask.
[[nodiscard]] GRAFT_INLINE Tensor generate_square_subsequent_mask(std::int64_t sz, dtype type = dtype::float32);

}  // namespace graft::nn

#if GRAFT_HAS_CODE
#include "graft/nn/impl/transformer.ipp"
#endif
