#include "models/bert_attention.h"

#include <ATen/Dispatch.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <limits>

#include "core/errors.h"

namespace batchlab::models {

namespace {

// The most negative finite value of a floating dtype.
double lowest_value(torch::ScalarType dtype) {
  double lowest = 0.0;
  AT_DISPATCH_FLOATING_TYPES_AND2(torch::kHalf, torch::kBFloat16, dtype, "lowest_value", [&] {
    lowest = static_cast<double>(std::numeric_limits<scalar_t>::lowest());
  });
  return lowest;
}

}  // namespace

torch::Tensor additive_padding_mask(const torch::Tensor& padding_mask, torch::ScalarType dtype) {
  if (!padding_mask.defined()) return {};
  if (padding_mask.dim() != 2 || padding_mask.scalar_type() != torch::kBool) {
    throw Error(fmt::format("padding mask: expected bool [B, T], got {} [{}]",
                            c10::toString(padding_mask.scalar_type()),
                            fmt::join(padding_mask.sizes(), ", ")));
  }
  torch::Tensor mask = torch::zeros(padding_mask.sizes(), padding_mask.options().dtype(dtype));
  mask.masked_fill_(padding_mask, lowest_value(dtype));
  // [B, T] -> [B, 1, 1, T]: broadcast over heads and query positions (a padded key is hidden from
  // every query; padded queries still attend to the real keys, their outputs are simply unused).
  return mask.view({padding_mask.size(0), 1, 1, padding_mask.size(1)});
}

torch::Tensor scaled_dot_product_attention(const torch::Tensor& query, const torch::Tensor& key,
                                           const torch::Tensor& value, const torch::Tensor& mask,
                                           double dropout_p, bool training,
                                           AttentionKernel kernel) {
  const double p = training ? dropout_p : 0.0;
  torch::Tensor mask_q = mask;
  if (mask.defined() && mask.scalar_type() != query.scalar_type()) {
    // Under bf16 autocast Q, K, V are bfloat16 while the mask was made for the float32 residual
    // stream. A plain cast would round float32's lowest to -inf (NaN for a fully padded row), so
    // the mask is rebuilt at the query dtype's own lowest value.
    mask_q = torch::zeros_like(mask, mask.options().dtype(query.scalar_type()))
                 .masked_fill_(mask.lt(0), lowest_value(query.scalar_type()));
  }
  if (kernel == AttentionKernel::kFused) {
#if BATCHLAB_HAVE_FUSED_ATTENTION
    // LibTorch picks flash, memory-efficient or math kernels; a float mask is added to the scores
    // exactly as below, and the scale defaults to 1/sqrt(head_dim).
    const c10::optional<torch::Tensor> attn_mask =
        mask_q.defined() ? c10::optional<torch::Tensor>(mask_q) : c10::nullopt;
    return at::scaled_dot_product_attention(query, key, value, attn_mask, p, /*is_causal=*/false);
#else
    throw Error(fmt::format(
        "fused scaled_dot_product_attention needs LibTorch >= 2.0; this build has {}.{}",
        TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR));
#endif
  }
  // Scaling Q (T x d per head) is cheaper than scaling the T x T scores, and is what PyTorch's
  // own multi-head attention does.
  const double scale = 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  torch::Tensor scores = torch::matmul(query * scale, key.transpose(-2, -1));  // [B, h, T, T]
  // In place: matmul's backward needs its inputs, not its output.
  if (mask_q.defined()) scores.add_(mask_q);
  torch::Tensor probs = torch::softmax(scores, -1);  // [B, h, T, T]
  if (p > 0.0) probs = torch::dropout(probs, p, /*train=*/true);
  return torch::matmul(probs, value);  // [B, h, T, head_dim]
}

BertSelfAttentionImpl::BertSelfAttentionImpl(int64_t hidden, int64_t num_heads,
                                             double attention_dropout)
    : num_heads_(num_heads), attention_dropout_(attention_dropout) {
  if (num_heads < 1 || hidden < 1 || hidden % num_heads != 0) {
    throw InputError(fmt::format("BERT attention: hidden size {} is not divisible by {} heads",
                                 hidden, num_heads));
  }
  head_dim_ = hidden / num_heads;
  query = register_module("query", torch::nn::Linear(hidden, hidden));
  key = register_module("key", torch::nn::Linear(hidden, hidden));
  value = register_module("value", torch::nn::Linear(hidden, hidden));
}

void BertSelfAttentionImpl::set_kernel(AttentionKernel kernel) {
  if (kernel == AttentionKernel::kFused && !fused_attention_available()) {
    throw Error(fmt::format(
        "fused scaled_dot_product_attention needs LibTorch >= 2.0; this build has {}.{}",
        TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR));
  }
  kernel_ = kernel;
}

torch::Tensor BertSelfAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& mask) {
  const int64_t B = x.size(0), T = x.size(1);
  // [B, T, hidden] -> [B, heads, T, head_dim]
  const auto split_heads = [&](const torch::Tensor& t) {
    return t.view({B, T, num_heads_, head_dim_}).transpose(1, 2);
  };
  torch::Tensor context = scaled_dot_product_attention(
      split_heads(query->forward(x)), split_heads(key->forward(x)), split_heads(value->forward(x)),
      mask, attention_dropout_, is_training(), kernel_);
  // [B, heads, T, head_dim] -> [B, T, hidden]
  return context.transpose(1, 2).reshape({B, T, num_heads_ * head_dim_});
}

}  // namespace batchlab::models
