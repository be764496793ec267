// One GPT-2 decoder block (Hugging Face's GPT2Block): pre-LN causal self-attention and a GELU MLP,
// each a residual branch,
//
//   x = x + drop(c_proj(attention(ln_1(x))))
//   x = x + drop(mlp.c_proj(gelu_tanh(mlp.c_fc(ln_2(x)))))
//
// with Hugging Face's module and parameter names, so a GPT2LMHeadModel state_dict maps by name:
//
//   ln_1.{weight,bias}, ln_2.{weight,bias}
//   attn.c_attn.{weight,bias}      weight [H, 3H]: query, key and value side by side (in that
//   order) attn.c_proj.{weight,bias}      weight [H, H] mlp.c_fc.{weight,bias}         weight [H,
//   4H] mlp.c_proj.{weight,bias}       weight [4H, H]
//
// The projections are Hugging Face's Conv1D (OpenAI's original TensorFlow layout): y = x W + b with
// W stored [in, out], the transpose of torch.nn.Linear's [out, in]. batchlab stores them the same
// way, so the state_dict's shapes are transformers' own and nothing is transposed on the way in
// or out. GELU is GPT-2's "gelu_new", the tanh approximation (torch's gelu(approximate="tanh")).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>

#include "models/bert_attention.h"
#include "models/gpt2_config.h"

namespace batchlab::models {

// Hugging Face's Conv1D: y = x W + b, W float [in, out], b float [out].
class Gpt2Conv1DImpl : public torch::nn::Module {
 public:
  Gpt2Conv1DImpl(int64_t in_features, int64_t out_features);

  // x: float [..., in] -> [..., out].
  torch::Tensor forward(const torch::Tensor& x);

  torch::Tensor weight;  // [in, out]
  torch::Tensor bias;    // [out]
};
TORCH_MODULE(Gpt2Conv1D);

// softmax(Q K^T / sqrt(d) + causal mask) V, query i attending to keys 0..i. query, key, value:
// [B, heads, T, head_dim] -> [B, heads, T, head_dim]. kFused is LibTorch's
// scaled_dot_product_attention with is_causal (it skips the masked half where it can); kExplicit
// adds a mask of the dtype's lowest value above the diagonal, as transformers' eager path does.
torch::Tensor causal_attention(const torch::Tensor& query, const torch::Tensor& key,
                               const torch::Tensor& value, double dropout_p, bool training,
                               AttentionKernel kernel);

// "attn": causal multi-head self-attention with its input and output projections.
class Gpt2AttentionImpl : public torch::nn::Module {
 public:
  explicit Gpt2AttentionImpl(const Gpt2Config& config);

  // x: float [B, T, hidden] -> [B, T, hidden] (after c_proj and the residual dropout).
  torch::Tensor forward(const torch::Tensor& x);

  void set_kernel(AttentionKernel kernel) { kernel_ = kernel; }

  Gpt2Conv1D c_attn{nullptr};
  Gpt2Conv1D c_proj{nullptr};

 private:
  int64_t num_heads_;
  double dropout_;
  AttentionKernel kernel_ = default_attention_kernel();
};
TORCH_MODULE(Gpt2Attention);

// "mlp": c_fc (hidden -> 4 hidden), tanh GELU, c_proj (4 hidden -> hidden), dropout.
class Gpt2MlpImpl : public torch::nn::Module {
 public:
  explicit Gpt2MlpImpl(const Gpt2Config& config);

  torch::Tensor forward(const torch::Tensor& x);

  Gpt2Conv1D c_fc{nullptr};
  Gpt2Conv1D c_proj{nullptr};

 private:
  double dropout_;
};
TORCH_MODULE(Gpt2Mlp);

class Gpt2BlockImpl : public torch::nn::Module {
 public:
  explicit Gpt2BlockImpl(const Gpt2Config& config);

  // x: float [B, T, hidden] -> [B, T, hidden].
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::LayerNorm ln_1{nullptr};
  Gpt2Attention attn{nullptr};
  torch::nn::LayerNorm ln_2{nullptr};
  Gpt2Mlp mlp{nullptr};
};
TORCH_MODULE(Gpt2Block);

}  // namespace batchlab::models
