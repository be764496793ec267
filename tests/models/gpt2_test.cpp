// The GPT-2-family decoder: shapes, Hugging Face's names and Conv1D layouts, causality (a later
// token never changes an earlier position's logits), the tied output layer, the two attention
// kernels, GPT-2's initialization and the presets' sizes and errors.
#include "models/gpt2.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <set>
#include <string>

#include "core/errors.h"
#include "models/registry.h"
#include "models/state_dict.h"

namespace batchlab::models {
namespace {

Gpt2Config tiny_gpt2(int64_t vocab = 97, int64_t positions = 32) {
  Gpt2Config c;
  c.name = "gpt2_tiny";
  c.num_layers = 2;
  c.hidden = 32;
  c.num_heads = 4;
  c.vocab_size = vocab;
  c.max_positions = positions;
  c.dropout = 0.0;
  return c;
}

TEST(Gpt2, LogitsHaveOneRowPerPositionAndVocabularyEntry) {
  torch::manual_seed(0);
  Gpt2LMHeadModel model(tiny_gpt2());
  model.eval();
  const auto ids = torch::randint(0, 97, {3, 11}, torch::kLong);
  const auto logits = model.forward(ids);
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{3, 11, 97}));
  EXPECT_EQ(logits.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::isfinite(logits).all().item<bool>());
  // A sequence longer than the position embedding is refused, naming the key.
  try {
    model.forward(torch::zeros({1, 33}, torch::kLong));
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("model.max_seq_len = 32"), std::string::npos) << e.what();
  }
}

TEST(Gpt2, StateDictHasHuggingFaceNamesAndConv1DShapes) {
  Gpt2LMHeadModel model(tiny_gpt2());
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& [name, tensor] : state_dict(model)) shapes[name] = tensor.sizes().vec();
  const int64_t h = 32;
  const std::map<std::string, std::vector<int64_t>> expected_block = {
      {"ln_1.weight", {h}},
      {"ln_1.bias", {h}},
      {"attn.c_attn.weight", {h, 3 * h}},
      {"attn.c_attn.bias", {3 * h}},
      {"attn.c_proj.weight", {h, h}},
      {"attn.c_proj.bias", {h}},
      {"ln_2.weight", {h}},
      {"ln_2.bias", {h}},
      {"mlp.c_fc.weight", {h, 4 * h}},
      {"mlp.c_fc.bias", {4 * h}},
      {"mlp.c_proj.weight", {4 * h, h}},
      {"mlp.c_proj.bias", {h}},
  };
  std::map<std::string, std::vector<int64_t>> expected = {
      {"transformer.wte.weight", {97, h}},
      {"transformer.wpe.weight", {32, h}},
      {"transformer.ln_f.weight", {h}},
      {"transformer.ln_f.bias", {h}},
  };
  for (int layer = 0; layer < 2; ++layer) {
    for (const auto& [name, shape] : expected_block) {
      expected["transformer.h." + std::to_string(layer) + "." + name] = shape;
    }
  }
  EXPECT_EQ(shapes, expected);
  EXPECT_EQ(count_parameters(model), gpt2_parameters(tiny_gpt2()));
}

TEST(Gpt2, ALaterTokenNeverChangesAnEarlierPositionsLogits) {
  torch::manual_seed(1);
  Gpt2LMHeadModel model(tiny_gpt2());
  model.eval();
  torch::NoGradGuard no_grad;
  const auto ids = torch::randint(0, 97, {2, 16}, torch::kLong);
  for (const auto kernel : {AttentionKernel::kExplicit, AttentionKernel::kFused}) {
    if (kernel == AttentionKernel::kFused && !fused_attention_available()) continue;
    model.transformer()->set_attention_kernel(kernel);
    const auto before = model.forward(ids);
    for (const int64_t t : {0, 5, 15}) {
      auto changed = ids.clone();
      changed.select(1, t).add_(1).remainder_(97);
      const auto after = model.forward(changed);
      // Positions before t see the same tokens: the same logits (to float rounding of kernels
      // that may block the sequence differently).
      if (t > 0) {
        EXPECT_TRUE(torch::allclose(before.narrow(1, 0, t), after.narrow(1, 0, t), 0.0, 1e-6))
            << "position < " << t;
      }
      // Position t and later do see the change.
      EXPECT_GT(
          (before.narrow(1, t, 16 - t) - after.narrow(1, t, 16 - t)).abs().max().item<float>(),
          1e-4)
          << "position " << t;
    }
  }
}

TEST(Gpt2, FusedAndExplicitAttentionAgree) {
  if (!fused_attention_available()) GTEST_SKIP() << "LibTorch < 2.0 has no fused kernel";
  torch::manual_seed(2);
  Gpt2LMHeadModel model(tiny_gpt2());
  model.eval();
  torch::NoGradGuard no_grad;
  const auto ids = torch::randint(0, 97, {2, 20}, torch::kLong);
  model.transformer()->set_attention_kernel(AttentionKernel::kExplicit);
  const auto explicit_logits = model.forward(ids);
  model.transformer()->set_attention_kernel(AttentionKernel::kFused);
  EXPECT_TRUE(torch::allclose(model.forward(ids), explicit_logits, 1e-5, 1e-5));
}

TEST(Gpt2, TheOutputLayerIsTheTokenEmbedding) {
  torch::manual_seed(3);
  Gpt2LMHeadModel model(tiny_gpt2());
  // One tensor, registered once.
  EXPECT_EQ(model.lm_head_weight().data_ptr(), model.transformer()->wte->weight.data_ptr());
  for (const auto& p : model.named_parameters()) {
    EXPECT_EQ(p.key().find("lm_head"), std::string::npos) << p.key();
  }
  // The logits are hidden states times the embedding: changing a row of wte changes that
  // token's logit at every position.
  model.eval();
  const auto ids = torch::randint(0, 97, {1, 6}, torch::kLong);
  torch::NoGradGuard no_grad;
  const auto hidden = model.transformer()->forward(ids);
  const auto logits = model.forward(ids);
  EXPECT_TRUE(
      torch::allclose(logits, torch::matmul(hidden, model.lm_head_weight().t()), 1e-5, 1e-5));
}

TEST(Gpt2, TheTiedEmbeddingGetsTheLookupsAndTheOutputLayersGradient) {
  torch::manual_seed(4);
  Gpt2LMHeadModel model(tiny_gpt2());
  const auto ids = torch::randint(0, 97, {2, 8}, torch::kLong);
  model.forward(ids).sum().backward();
  const auto grad = model.transformer()->wte->weight.grad();
  ASSERT_TRUE(grad.defined());
  // Tokens that never appear in the input still get the output layer's gradient.
  std::set<int64_t> seen;
  for (int64_t i = 0; i < ids.numel(); ++i) seen.insert(ids.view({-1})[i].item<int64_t>());
  for (int64_t token = 0; token < 97; ++token) {
    if (seen.count(token) == 0) {
      EXPECT_GT(grad[token].abs().sum().item<float>(), 0.0f) << token;
      break;
    }
  }
}

TEST(Gpt2, InitializationIsGpt2s) {
  torch::manual_seed(5);
  Gpt2Config c = tiny_gpt2(4000, 512);
  c.hidden = 128;
  c.num_heads = 4;
  c.num_layers = 8;
  Gpt2LMHeadModel model(c);
  const auto std_of = [](const torch::Tensor& t) { return t.std().item<double>(); };
  auto& block = *model.transformer()->h->ptr<Gpt2BlockImpl>(0);
  EXPECT_NEAR(std_of(model.transformer()->wte->weight), 0.02, 0.001);
  EXPECT_NEAR(std_of(model.transformer()->wpe->weight), 0.02, 0.001);
  EXPECT_NEAR(std_of(block.attn->c_attn->weight), 0.02, 0.001);
  EXPECT_NEAR(std_of(block.mlp->c_fc->weight), 0.02, 0.001);
  // The projections that end a residual branch: 0.02 / sqrt(2 x 8 layers) = 0.005.
  EXPECT_NEAR(std_of(block.attn->c_proj->weight), 0.005, 0.0005);
  EXPECT_NEAR(std_of(block.mlp->c_proj->weight), 0.005, 0.0005);
  EXPECT_TRUE(torch::equal(block.attn->c_attn->bias, torch::zeros({3 * 128})));
  EXPECT_TRUE(torch::equal(block.ln_1->weight, torch::ones({128})));
}

TEST(Gpt2, PresetsComeFromModelArchWithTheExperimentsPositionsAndVocabulary) {
  config::ModelConfig m;
  m.arch = "gpt2_small";
  m.max_seq_len = 1024;
  const Gpt2Config small = gpt2_config_from(m, kGpt2Vocabulary);
  EXPECT_EQ(small.num_layers, 12);
  EXPECT_EQ(small.hidden, 768);
  EXPECT_EQ(small.num_heads, 12);
  EXPECT_EQ(small.max_positions, 1024);
  // GPT-2 small's 124,439,808 parameters (transformers' GPT2LMHeadModel, tied output layer).
  EXPECT_EQ(gpt2_parameters(small), 124439808);
  m.arch = "gpt2_tiny";
  m.max_seq_len = 128;
  const Gpt2Config tiny = gpt2_config_from(m, 2048);
  EXPECT_EQ(tiny.vocab_size, 2048);
  EXPECT_EQ(tiny.num_layers, 2);
  EXPECT_EQ(tiny.hidden, 128);
  m.arch = "bert_tiny";
  try {
    gpt2_config_from(m);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("gpt2_tiny, gpt2_mini, gpt2_small"), std::string::npos)
        << e.what();
  }
  Gpt2Config bad = tiny_gpt2();
  bad.num_heads = 5;
  EXPECT_THROW(validate_gpt2_config(bad), InputError);
}

TEST(Gpt2, TheRegistryBuildsItForTextAndPricesIt) {
  config::ModelConfig m;
  m.arch = "gpt2_tiny";
  m.max_seq_len = 64;
  m.dropout = 0.0;
  EXPECT_TRUE(is_causal_lm_arch("gpt2_tiny"));
  EXPECT_FALSE(is_causal_lm_arch("bert_tiny"));
  const auto net = make_causal_lm(m, 500);
  EXPECT_EQ(net->vocab_size(), 500);
  EXPECT_EQ(net->max_seq_len(), 64);
  EXPECT_THROW(make_masked_lm(m, 500), InputError);
  m.arch = "bert_tiny";
  EXPECT_THROW(make_causal_lm(m, 500), InputError);
  m.arch = "gpt2_tiny";
  // 6 x parameters x tokens + attention, up to the positions, biases and norms.
  const auto cost = estimate_causal_lm_cost(m, 64, 500);
  const Gpt2Config c = gpt2_config_from(m, 500);
  const double approx = 6.0 * static_cast<double>(count_parameters(*net)) * 64.0;
  EXPECT_GT(static_cast<double>(cost.training_flops), 0.9 * approx);
  EXPECT_LT(static_cast<double>(cost.training_flops), 1.2 * approx);
  EXPECT_EQ(cost.forward_macs, gpt2_forward_macs(c, 64));
  bool listed = false;
  for (const auto& info : list_models()) {
    if (info.name == "gpt2_small") {
      listed = true;
      EXPECT_EQ(info.family, "causal_lm");
      EXPECT_EQ(info.seq_len, 1024);
      EXPECT_EQ(summarize_model(info).parameters, 124439808);
    }
  }
  EXPECT_TRUE(listed);
}

}  // namespace
}  // namespace batchlab::models
