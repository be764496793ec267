// One BERT encoder layer: self-attention and a GELU feed-forward network, each a residual branch
// with a LayerNorm, in the post-LN order of the original BERT or the pre-LN order of Cramming.
// Module and parameter names are Hugging Face's (BertLayer), so a checkpoint maps by name:
//
//   attention.self.{query,key,value}.{weight,bias}   BertSelfAttention (models/bert_attention.h)
//   attention.output.dense.{weight,bias}              output projection
//   attention.output.LayerNorm.{weight,bias}          the attention branch's LayerNorm
//   intermediate.dense.{weight,bias}                  FFN up (hidden -> intermediate)
//   output.dense.{weight,bias}                        FFN down (intermediate -> hidden)
//   output.LayerNorm.{weight,bias}                    the FFN branch's LayerNorm
//
// Post-LN (norm_first false):  x = LN_a(x + drop(dense_a(attn(x))))
//                              x = LN_f(x + drop(down(gelu(up(x)))))
// Pre-LN (norm_first true):    x = x + drop(dense_a(attn(LN_a(x))))
//                              x = x + drop(down(gelu(up(LN_f(x)))))
// so in both orders attention.output.LayerNorm is torch.nn.TransformerEncoderLayer's norm1 and
// output.LayerNorm its norm2. GELU is the exact (erf) one.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>

#include "models/bert_attention.h"
#include "models/bert_config.h"

namespace batchlab::models {

// A linear layer and, optionally, a LayerNorm, registered as "dense" and "LayerNorm": the building
// block BERT's names assume (attention.output, intermediate, output, pooler, the MLM transform).
// The owner decides what runs between them (residual add, activation), so there is no forward().
class BertDenseImpl : public torch::nn::Module {
 public:
  // layer_norm_eps <= 0: no LayerNorm.
  BertDenseImpl(int64_t in_features, int64_t out_features, double layer_norm_eps);

  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm layer_norm{nullptr};  // registered as "LayerNorm"; null when absent
};
TORCH_MODULE(BertDense);

// "attention": self-attention, output projection and the branch's LayerNorm.
class BertAttentionImpl : public torch::nn::Module {
 public:
  explicit BertAttentionImpl(const BertConfig& config);

  // x: float [B, T, hidden]; mask: additive [B, 1, 1, T] or undefined -> [B, T, hidden].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask);

  BertSelfAttention self_attention{nullptr};  // registered as "self"
  BertDense output{nullptr};

 private:
  bool norm_first_;
  double dropout_;
};
TORCH_MODULE(BertAttention);

class BertLayerImpl : public torch::nn::Module {
 public:
  explicit BertLayerImpl(const BertConfig& config);

  // x: float [B, T, hidden]; mask: additive [B, 1, 1, T] (additive_padding_mask) or undefined.
  // Returns float [B, T, hidden].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask);

  BertAttention attention{nullptr};
  BertDense intermediate{nullptr};  // dense only
  BertDense output{nullptr};        // dense + LayerNorm

 private:
  bool norm_first_;
  double dropout_;
};
TORCH_MODULE(BertLayer);

}  // namespace batchlab::models
