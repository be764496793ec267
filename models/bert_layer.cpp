#include "models/bert_layer.h"

namespace batchlab::models {

BertDenseImpl::BertDenseImpl(int64_t in_features, int64_t out_features, double layer_norm_eps) {
  dense = register_module("dense", torch::nn::Linear(in_features, out_features));
  if (layer_norm_eps > 0.0) {
    layer_norm = register_module(
        "LayerNorm",
        torch::nn::LayerNorm(torch::nn::LayerNormOptions({out_features}).eps(layer_norm_eps)));
  }
}

BertAttentionImpl::BertAttentionImpl(const BertConfig& config)
    : norm_first_(config.norm_first), dropout_(config.dropout) {
  self_attention = register_module(
      "self", BertSelfAttention(config.hidden, config.num_heads, config.attention_dropout));
  output =
      register_module("output", BertDense(config.hidden, config.hidden, config.layer_norm_eps));
}

torch::Tensor BertAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& mask) {
  if (norm_first_) {
    torch::Tensor branch = self_attention->forward(output->layer_norm->forward(x), mask);
    branch = torch::dropout(output->dense->forward(branch), dropout_, is_training());
    return x + branch;  // [B, T, hidden]
  }
  torch::Tensor branch = self_attention->forward(x, mask);
  branch = torch::dropout(output->dense->forward(branch), dropout_, is_training());
  return output->layer_norm->forward(x + branch);  // [B, T, hidden]
}

BertLayerImpl::BertLayerImpl(const BertConfig& config)
    : norm_first_(config.norm_first), dropout_(config.dropout) {
  attention = register_module("attention", BertAttention(config));
  intermediate =
      register_module("intermediate", BertDense(config.hidden, config.intermediate, 0.0));
  output = register_module("output",
                           BertDense(config.intermediate, config.hidden, config.layer_norm_eps));
}

torch::Tensor BertLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& mask) {
  torch::Tensor h = attention->forward(x, mask);  // [B, T, hidden]
  torch::Tensor ffn_in = norm_first_ ? output->layer_norm->forward(h) : h;
  // Exact GELU (erf), as BERT and torch.nn.TransformerEncoderLayer(activation="gelu").
  torch::Tensor branch = torch::gelu(intermediate->dense->forward(ffn_in), "none");  // [B, T, I]
  branch = torch::dropout(output->dense->forward(branch), dropout_, is_training());  // [B, T, H]
  return norm_first_ ? h + branch : output->layer_norm->forward(h + branch);
}

}  // namespace batchlab::models
