#include "models/gpt2_block.h"

#include <ATen/Dispatch.h>
#include <ATen/ops/scaled_dot_product_attention.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <fmt/format.h>
#include <torch/nn/functional/dropout.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "core/errors.h"

namespace batchlab::models {
namespace {

// The most negative finite value of a floating dtype: transformers' eager attention masks with
// it (not -inf), so no row of scores is ever all -inf.
double lowest_of(torch::ScalarType dtype) {
  double lowest = 0.0;
  AT_DISPATCH_FLOATING_TYPES_AND2(torch::kHalf, torch::kBFloat16, dtype, "lowest_of", [&] {
    lowest = static_cast<double>(std::numeric_limits<scalar_t>::lowest());
  });
  return lowest;
}

torch::nn::LayerNorm gpt2_layer_norm(const Gpt2Config& config) {
  return torch::nn::LayerNorm(
      torch::nn::LayerNormOptions({config.hidden}).eps(config.layer_norm_eps));
}

}  // namespace

Gpt2Conv1DImpl::Gpt2Conv1DImpl(int64_t in_features, int64_t out_features) {
  weight = register_parameter("weight", torch::empty({in_features, out_features}));
  bias = register_parameter("bias", torch::zeros({out_features}));
}

torch::Tensor Gpt2Conv1DImpl::forward(const torch::Tensor& x) {
  // As transformers' Conv1D: one addmm over the flattened leading dimensions.
  std::vector<int64_t> out_shape(x.sizes().begin(), x.sizes().end());
  out_shape.back() = weight.size(1);
  return torch::addmm(bias, x.reshape({-1, x.size(-1)}), weight).view(out_shape);
}

torch::Tensor causal_attention(const torch::Tensor& query, const torch::Tensor& key,
                               const torch::Tensor& value, double dropout_p, bool training,
                               AttentionKernel kernel) {
  const double p = training ? dropout_p : 0.0;
  if (kernel == AttentionKernel::kFused) {
#if BATCHLAB_HAVE_FUSED_ATTENTION
    return at::scaled_dot_product_attention(query, key, value, c10::nullopt, p,
                                            /*is_causal=*/true);
#else
    throw Error("fused scaled_dot_product_attention needs LibTorch >= 2.0");
#endif
  }
  const int64_t t = query.size(-2);
  const torch::Tensor future =
      torch::ones({t, t}, query.options().dtype(torch::kBool)).triu(1);  // key j > query i
  const double scale = 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  torch::Tensor scores = torch::matmul(query, key.transpose(-2, -1)) * scale;  // [B, h, T, T]
  scores = scores.masked_fill(future, lowest_of(scores.scalar_type()));
  torch::Tensor probs = torch::softmax(scores, -1);
  if (p > 0.0) probs = torch::dropout(probs, p, /*train=*/true);
  return torch::matmul(probs, value);
}

Gpt2AttentionImpl::Gpt2AttentionImpl(const Gpt2Config& config)
    : num_heads_(config.num_heads), dropout_(config.dropout) {
  c_attn = register_module("c_attn", Gpt2Conv1D(config.hidden, 3 * config.hidden));
  c_proj = register_module("c_proj", Gpt2Conv1D(config.hidden, config.hidden));
}

torch::Tensor Gpt2AttentionImpl::forward(const torch::Tensor& x) {
  const int64_t b = x.size(0), t = x.size(1), h = x.size(2);
  const auto qkv = c_attn->forward(x).split(h, /*dim=*/2);  // query, key, value: [B, T, H] each
  const auto heads = [&](const torch::Tensor& y) {
    return y.view({b, t, num_heads_, h / num_heads_}).transpose(1, 2);  // [B, heads, T, d]
  };
  torch::Tensor context = causal_attention(heads(qkv[0]), heads(qkv[1]), heads(qkv[2]), dropout_,
                                           is_training(), kernel_);
  context = context.transpose(1, 2).reshape({b, t, h});
  return torch::dropout(c_proj->forward(context), dropout_, is_training());
}

Gpt2MlpImpl::Gpt2MlpImpl(const Gpt2Config& config) : dropout_(config.dropout) {
  c_fc = register_module("c_fc", Gpt2Conv1D(config.hidden, config.inner()));
  c_proj = register_module("c_proj", Gpt2Conv1D(config.inner(), config.hidden));
}

torch::Tensor Gpt2MlpImpl::forward(const torch::Tensor& x) {
  const torch::Tensor up = torch::gelu(c_fc->forward(x), "tanh");  // GPT-2's gelu_new
  return torch::dropout(c_proj->forward(up), dropout_, is_training());
}

Gpt2BlockImpl::Gpt2BlockImpl(const Gpt2Config& config) {
  ln_1 = register_module("ln_1", gpt2_layer_norm(config));
  attn = register_module("attn", Gpt2Attention(config));
  ln_2 = register_module("ln_2", gpt2_layer_norm(config));
  mlp = register_module("mlp", Gpt2Mlp(config));
}

torch::Tensor Gpt2BlockImpl::forward(const torch::Tensor& x) {
  // The LayerNorms' inputs are residual sums, float32 even under bf16 autocast.
  torch::Tensor h = x + attn->forward(ln_1->forward(x));
  return h + mlp->forward(ln_2->forward(h));
}

}  // namespace batchlab::models
