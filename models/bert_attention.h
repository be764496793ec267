// Multi-head self-attention of a BERT layer ("attention.self" in Hugging Face's names: query, key
// and value projections), the padding mask, and the two ways of computing softmax(Q K^T / sqrt(d) +
// mask) V: LibTorch's fused scaled_dot_product_attention (LibTorch 2.0 and later) and an explicit
// sequence of matrix products (every version; the only one on LibTorch 1.13).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>
#include <torch/version.h>

#include <cstdint>

// at::scaled_dot_product_attention (flash / memory-efficient / math kernels, chosen by LibTorch)
// exists from LibTorch 2.0 on; 1.13 only has a private prototype with another signature.
#if TORCH_VERSION_MAJOR >= 2
#define BATCHLAB_HAVE_FUSED_ATTENTION 1
#else
#define BATCHLAB_HAVE_FUSED_ATTENTION 0
#endif

namespace batchlab::models {

enum class AttentionKernel {
  kExplicit,  // matmul, add mask, softmax, dropout, matmul: available everywhere
  kFused,     // at::scaled_dot_product_attention: LibTorch >= 2.0 only
};

// Whether this build's LibTorch has the fused kernel.
constexpr bool fused_attention_available() { return BATCHLAB_HAVE_FUSED_ATTENTION != 0; }

// The fused kernel where available, else the explicit one.
constexpr AttentionKernel default_attention_kernel() {
  return fused_attention_available() ? AttentionKernel::kFused : AttentionKernel::kExplicit;
}

// padding_mask: bool [B, T], true at padding -> additive mask of `dtype` [B, 1, 1, T]: 0 at real
// tokens, the dtype's lowest finite value at padding. A finite value (not -inf) keeps a fully
// padded row finite: its scores are all equally low, softmax spreads uniformly, no NaN. An
// undefined padding_mask gives an undefined result (no masking).
torch::Tensor additive_padding_mask(const torch::Tensor& padding_mask, torch::ScalarType dtype);

// query, key, value: [B, heads, T, head_dim]; mask: additive [B, 1, 1, T] (or undefined);
// dropout_p: attention-probability dropout, applied only when `training`.
// Returns [B, heads, T, head_dim]. kFused throws batchlab::Error where LibTorch lacks it.
torch::Tensor scaled_dot_product_attention(const torch::Tensor& query, const torch::Tensor& key,
                                           const torch::Tensor& value, const torch::Tensor& mask,
                                           double dropout_p, bool training, AttentionKernel kernel);

class BertSelfAttentionImpl : public torch::nn::Module {
 public:
  // Throws InputError when hidden is not divisible by num_heads.
  BertSelfAttentionImpl(int64_t hidden, int64_t num_heads, double attention_dropout);

  // x: float [B, T, hidden]; mask: additive [B, 1, 1, T] from additive_padding_mask (or
  // undefined). Returns the concatenated heads' context, float [B, T, hidden] (before the output
  // projection, which belongs to attention.output in BERT's names).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask);

  // Tests switch kernels to compare them; models start with default_attention_kernel().
  void set_kernel(AttentionKernel kernel);
  AttentionKernel kernel() const { return kernel_; }

  torch::nn::Linear query{nullptr};
  torch::nn::Linear key{nullptr};
  torch::nn::Linear value{nullptr};

 private:
  int64_t num_heads_;
  int64_t head_dim_;
  double attention_dropout_;
  AttentionKernel kernel_ = default_attention_kernel();
};
TORCH_MODULE(BertSelfAttention);

}  // namespace batchlab::models
