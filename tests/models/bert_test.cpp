#include "models/bert.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/train/autocast.h"
#include "models/bert_attention.h"
#include "models/bert_config.h"
#include "models/registry.h"

namespace batchlab::models {
namespace {

int64_t count(const torch::nn::Module& m) { return count_parameters(m); }

config::ModelConfig tiny_config(int64_t vocab = 97, int64_t max_len = 32) {
  config::ModelConfig m;
  m.arch = "bert_tiny";
  m.vocab_size = vocab;
  m.max_seq_len = max_len;
  m.dropout = 0.0;
  return m;
}

std::shared_ptr<BertForPretraining> make_tiny(const config::ModelConfig& m) {
  auto net = std::dynamic_pointer_cast<BertForPretraining>(make_bert(m));
  EXPECT_NE(net, nullptr);
  return net;
}

// Published sizes (Devlin et al. 2019; HF's bert-base-uncased / bert-large-uncased): the encoder
// with pooler, 30,522 tokens, 512 positions, 2 segments. The MLM and NSP heads come on top.
TEST(Bert, ParameterCountsMatchThePublishedOnes) {
  config::ModelConfig m;  // vocab 30522, 512 positions
  m.arch = "bert_base";
  const BertConfig base = bert_config_from(m);
  EXPECT_EQ(count(*BertModel(base, /*add_pooler=*/true)), 109'482'240);

  // The heads on top (built alone: a second bert_base would only repeat the encoder). MLM:
  // transform dense H x H + H, LayerNorm 2H, decoder bias V (the decoder weight is the token
  // embedding); NSP: 2H + 2.
  const int64_t mlm_head = 768 * 768 + 768 + 2 * 768 + 30522, nsp_head = 2 * 768 + 2;
  BertConfig heads = base;
  EXPECT_EQ(count(*BertPretrainingHeads(heads)), mlm_head);
  heads.next_sentence = true;
  EXPECT_EQ(count(*BertPretrainingHeads(heads)), mlm_head + nsp_head);
  // The full model is encoder + heads; without the next-sentence head there is no pooler.
  for (const bool nsp : {false, true}) {
    config::ModelConfig t = tiny_config();
    t.next_sentence = nsp;
    const BertConfig c = bert_config_from(t);
    EXPECT_EQ(count(*make_bert(t)),
              count(*BertModel(c, /*add_pooler=*/nsp)) + count(*BertPretrainingHeads(c)));
  }

  m.arch = "bert_large";  // ~1.3 GB of weights; no forward
  EXPECT_EQ(count(*BertModel(bert_config_from(m), /*add_pooler=*/true)), 335'141'888);
}

TEST(Bert, PresetsAndConfig) {
  std::vector<std::string> names;
  for (const auto& p : bert_presets()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"bert_tiny", "bert_mini", "bert_small", "bert_medium",
                                             "bert_base", "bert_large"}));
  config::ModelConfig m;
  m.arch = "bert_medium";
  m.vocab_size = 8000;
  m.max_seq_len = 128;
  m.norm_first = true;
  m.dropout = 0.0;
  const BertConfig c = bert_config_from(m);
  EXPECT_EQ(c.num_layers, 8);
  EXPECT_EQ(c.hidden, 512);
  EXPECT_EQ(c.num_heads, 8);
  EXPECT_EQ(c.intermediate, 2048);
  EXPECT_EQ(c.type_vocab_size, 2);
  EXPECT_EQ(c.layer_norm_eps, 1e-12);
  EXPECT_EQ(c.vocab_size, 8000);
  EXPECT_EQ(c.max_seq_len, 128);
  EXPECT_TRUE(c.norm_first);
  // The trained tokenizer's vocabulary wins over model.vocab_size.
  EXPECT_EQ(bert_config_from(m, 5000).vocab_size, 5000);
  EXPECT_EQ(make_bert(tiny_config(97), 61)->vocab_size(), 61);
  EXPECT_EQ(make_bert(tiny_config(97, 40))->max_seq_len(), 40);
}

TEST(Bert, BadConfigIsAnInputError) {
  config::ModelConfig m = tiny_config();
  m.arch = "bert_huge";
  try {
    make_bert(m);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "model.arch = \"bert_huge\": not a BERT architecture; valid: bert_tiny, bert_mini, "
              "bert_small, bert_medium, bert_base, bert_large");
  }
  m = tiny_config();
  m.max_seq_len = 0;
  EXPECT_THROW(make_bert(m), InputError);
  m = tiny_config();
  m.vocab_size = 0;
  EXPECT_THROW(make_bert(m), InputError);
  m = tiny_config();
  m.dropout = 1.0;
  EXPECT_THROW(make_bert(m), InputError);
  BertConfig c;
  c.hidden = 128;
  c.num_heads = 5;
  try {
    validate_bert_config(c);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not divisible by 5 attention heads"), std::string::npos);
  }
  EXPECT_THROW(BertModel(c, false), InputError);

  // Sequences longer than the position embedding are the user's config, not a crash.
  auto net = make_tiny(tiny_config(97, 8));
  try {
    net->forward(torch::zeros({1, 9}, torch::kInt64), {}, {}, {});
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("model.max_seq_len = 8"), std::string::npos) << e.what();
  }
}

TEST(Bert, ParameterNamesFollowHuggingFace) {
  config::ModelConfig m = tiny_config();
  m.next_sentence = true;
  auto net = make_tiny(m);
  std::set<std::string> names;
  for (const auto& p : net->named_parameters()) names.insert(p.key());
  std::set<std::string> expected = {"bert.embeddings.word_embeddings.weight",
                                    "bert.embeddings.position_embeddings.weight",
                                    "bert.embeddings.token_type_embeddings.weight",
                                    "bert.embeddings.LayerNorm.weight",
                                    "bert.embeddings.LayerNorm.bias",
                                    "bert.pooler.dense.weight",
                                    "bert.pooler.dense.bias",
                                    "cls.predictions.bias",
                                    "cls.predictions.transform.dense.weight",
                                    "cls.predictions.transform.dense.bias",
                                    "cls.predictions.transform.LayerNorm.weight",
                                    "cls.predictions.transform.LayerNorm.bias",
                                    "cls.seq_relationship.weight",
                                    "cls.seq_relationship.bias"};
  for (int layer = 0; layer < 2; ++layer) {
    const std::string p = "bert.encoder.layer." + std::to_string(layer) + ".";
    for (const char* s : {"attention.self.query", "attention.self.key", "attention.self.value",
                          "attention.output.dense", "attention.output.LayerNorm",
                          "intermediate.dense", "output.dense", "output.LayerNorm"}) {
      expected.insert(p + s + ".weight");
      expected.insert(p + s + ".bias");
    }
  }
  EXPECT_EQ(names, expected);

  // BERT's initialization: std 0.02 weights and embeddings, zero biases, LayerNorm 1 / 0.
  auto params = net->named_parameters();
  EXPECT_NEAR(params["bert.embeddings.word_embeddings.weight"].std().item<double>(), 0.02, 2e-3);
  EXPECT_NEAR(params["bert.encoder.layer.1.intermediate.dense.weight"].std().item<double>(), 0.02,
              2e-3);
  EXPECT_EQ(params["bert.encoder.layer.0.attention.self.query.bias"].abs().max().item<float>(), 0);
  EXPECT_EQ(params["cls.predictions.bias"].abs().max().item<float>(), 0);
  EXPECT_TRUE(params["bert.encoder.layer.0.output.LayerNorm.weight"].eq(1).all().item<bool>());
}

TEST(Bert, DecoderWeightIsTheTokenEmbedding) {
  torch::manual_seed(0);
  auto net = make_tiny(tiny_config(97));
  const torch::Tensor embedding = net->named_parameters()["bert.embeddings.word_embeddings.weight"];
  // One tensor: same TensorImpl and storage, registered once.
  EXPECT_EQ(net->decoder_weight().unsafeGetTensorImpl(), embedding.unsafeGetTensorImpl());
  EXPECT_TRUE(net->decoder_weight().is_same(embedding));
  int64_t occurrences = 0;
  for (const auto& p : net->parameters()) {
    if (p.unsafeGetTensorImpl() == embedding.unsafeGetTensorImpl()) ++occurrences;
  }
  EXPECT_EQ(occurrences, 1);

  // Inputs use tokens 0..49 only; rows 50..96 of the embedding get gradient only through the
  // decoder, so non-zero gradient there means the MLM loss reaches the shared tensor.
  const torch::Tensor ids = torch::randint(0, 50, {2, 10}, torch::kInt64);
  const torch::Tensor positions = torch::tensor({1, 4, 12, 17}, torch::kInt64);
  const torch::Tensor targets = torch::randint(0, 97, {4}, torch::kInt64);
  const MlmOutput out = net->forward(ids, {}, {}, positions);
  ASSERT_EQ(out.mlm_logits.sizes(), (std::vector<int64_t>{4, 97}));
  EXPECT_FALSE(out.nsp_logits.defined());
  torch::nn::functional::cross_entropy(out.mlm_logits, targets).backward();
  ASSERT_TRUE(embedding.grad().defined());
  EXPECT_GT(embedding.grad().slice(0, 50).abs().sum(1).gt(0).sum().item<int64_t>(), 40);

  // Writing the embedding changes the decoder: there is no copy to go stale.
  torch::NoGradGuard no_grad;
  net->eval();
  const torch::Tensor before = net->forward(ids, {}, {}, positions).mlm_logits;
  embedding.slice(0, 90).add_(1.0);
  const torch::Tensor after = net->forward(ids, {}, {}, positions).mlm_logits;
  EXPECT_TRUE(torch::equal(before.slice(1, 0, 50), after.slice(1, 0, 50)));
  EXPECT_FALSE(torch::allclose(before.slice(1, 90), after.slice(1, 90)));
}

TEST(Bert, MlmHeadRunsAtTheMaskedPositionsOnly) {
  torch::manual_seed(1);
  auto net = make_tiny(tiny_config());
  net->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor ids = torch::randint(0, 97, {3, 8}, torch::kInt64);
  const torch::Tensor all = net->forward(ids, {}, {}, {}).mlm_logits;  // [24, 97]
  ASSERT_EQ(all.sizes(), (std::vector<int64_t>{24, 97}));
  const torch::Tensor positions = torch::tensor({0, 9, 23}, torch::kInt64);
  const torch::Tensor some = net->forward(ids, {}, {}, positions).mlm_logits;
  EXPECT_TRUE(torch::allclose(some, all.index_select(0, positions), 1e-5, 1e-6));
}

// Outputs at real positions must not depend on what sits at padded ones, in both block orders.
TEST(Bert, PaddedTokensDoNotChangeRealPositions) {
  for (const bool norm_first : {false, true}) {
    SCOPED_TRACE(norm_first ? "pre-LN" : "post-LN");
    torch::manual_seed(2);
    config::ModelConfig m = tiny_config();
    m.norm_first = norm_first;
    m.next_sentence = true;
    auto net = make_tiny(m);
    net->eval();
    torch::NoGradGuard no_grad;
    torch::Tensor ids = torch::randint(0, 97, {2, 12}, torch::kInt64);
    torch::Tensor segments = torch::zeros({2, 12}, torch::kInt64);
    segments.slice(1, 6).fill_(1);
    torch::Tensor padding = torch::zeros({2, 12}, torch::kBool);
    padding[0].slice(0, 8).fill_(true);  // sequence 0: 8 real tokens, 4 padding
    const BertOutput a = net->bert()->forward(ids, segments, padding);

    torch::Tensor other_ids = ids.clone(), other_segments = segments.clone();
    other_ids[0].slice(0, 8).copy_(torch::randint(0, 97, {4}, torch::kInt64));
    other_segments[0].slice(0, 8).fill_(0);
    const BertOutput b = net->bert()->forward(other_ids, other_segments, padding);
    EXPECT_TRUE(
        torch::allclose(a.sequence[0].slice(0, 0, 8), b.sequence[0].slice(0, 0, 8), 1e-6, 1e-6));
    EXPECT_TRUE(torch::allclose(a.sequence[1], b.sequence[1], 1e-6, 1e-6));
    EXPECT_TRUE(torch::allclose(a.pooled, b.pooled, 1e-6, 1e-6));

    // Without the mask the same change does reach the real positions (the test can fail).
    const BertOutput c = net->bert()->forward(ids, segments, {});
    const BertOutput d = net->bert()->forward(other_ids, other_segments, {});
    EXPECT_FALSE(
        torch::allclose(c.sequence[0].slice(0, 0, 8), d.sequence[0].slice(0, 0, 8), 1e-4, 1e-4));

    // A fully padded sequence stays finite (the mask is a large finite negative, not -inf).
    padding[1].fill_(true);
    const MlmOutput e = net->forward(ids, segments, padding, {});
    EXPECT_TRUE(torch::isfinite(e.mlm_logits).all().item<bool>());
    EXPECT_TRUE(torch::isfinite(e.nsp_logits).all().item<bool>());
  }
}

// Under bf16 autocast (train.precision = "bf16") the attention runs in bfloat16 while the mask is
// built for the float32 stream: padding must still be hidden, and a fully padded row stay finite.
TEST(Bert, PaddingMaskWorksUnderBf16Autocast) {
  torch::manual_seed(7);
  auto net = make_tiny(tiny_config());
  net->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor ids = torch::randint(0, 97, {3, 10}, torch::kInt64);
  torch::Tensor padding = torch::zeros({3, 10}, torch::kBool);
  padding[1].slice(0, 6).fill_(true);
  padding[2].fill_(true);
  torch::Tensor other_ids = ids.clone();
  other_ids[1].slice(0, 6).fill_(5);
  torch::Tensor a, b, c;
  {
    // The trainer's guard (core/train/autocast.h), which speaks both LibTorch autocast APIs.
    train::AutocastGuard autocast(train::mixed_precision("bf16", c10::DeviceType::CPU));
    a = net->bert()->forward(ids, {}, padding).sequence;
    b = net->bert()->forward(other_ids, {}, padding).sequence;
    c = net->bert()->forward(other_ids, {}, {}).sequence;
  }
  // Autocast was on: the same forward in float32 gives other numbers.
  const torch::Tensor a32 = net->bert()->forward(ids, {}, padding).sequence;
  EXPECT_FALSE(torch::allclose(a.to(torch::kFloat32), a32, 1e-6, 1e-6));
  EXPECT_TRUE(torch::isfinite(a).all().item<bool>());
  EXPECT_TRUE(torch::equal(a[1].slice(0, 0, 6), b[1].slice(0, 0, 6)));
  EXPECT_FALSE(torch::equal(b[1].slice(0, 0, 6), c[1].slice(0, 0, 6)));  // the mask did something
}

// The whole pretraining model, MLM head included, trains under bf16 autocast on the CPU
// (train.precision = "bf16"): the head's LayerNorm gets a bf16 input there.
TEST(Bert, PretrainingForwardAndBackwardRunUnderBf16Autocast) {
  torch::manual_seed(5);
  auto net = make_tiny(tiny_config());
  const torch::Tensor ids = torch::randint(0, 97, {2, 12}, torch::kInt64);
  const torch::Tensor positions = torch::tensor({1, 4, 13, 20}, torch::kInt64);
  MlmOutput out;
  {
    train::AutocastGuard autocast(train::mixed_precision("bf16", c10::DeviceType::CPU));
    out = net->forward(ids, {}, {}, positions);
  }
  ASSERT_EQ(out.mlm_logits.sizes(), (std::vector<int64_t>{4, 97}));
  const auto loss = torch::nn::functional::cross_entropy(
      out.mlm_logits.to(torch::kFloat32), torch::tensor({3, 5, 7, 9}, torch::kInt64));
  loss.backward();
  EXPECT_TRUE(std::isfinite(loss.item<double>()));
  for (const auto& p : net->parameters()) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_EQ(p.grad().scalar_type(), torch::kFloat32);
  }
}

TEST(Bert, PreLnAndPostLnDifferAndBothTrain) {
  std::vector<torch::Tensor> outputs;
  std::vector<int64_t> counts;
  for (const bool norm_first : {false, true}) {
    torch::manual_seed(3);
    config::ModelConfig m = tiny_config();
    m.norm_first = norm_first;
    m.next_sentence = true;
    auto net = make_tiny(m);
    EXPECT_EQ(net->named_parameters().contains("bert.encoder.final_layer_norm.weight"), norm_first);
    {
      // At BERT's initialization (std 0.02) the residual branches are tiny next to the stream, so
      // both orders compute nearly LayerNorm(embeddings); larger weights make the order matter.
      torch::NoGradGuard no_grad;
      for (auto& p : net->named_parameters()) {
        if (p.key().find("encoder.layer") != std::string::npos && p.value().dim() == 2) {
          p.value().mul_(20.0);
        }
      }
    }
    counts.push_back(count(*net));
    torch::manual_seed(4);
    const torch::Tensor ids = torch::randint(0, 97, {2, 16}, torch::kInt64);
    const MlmOutput out = net->forward(ids, {}, {}, torch::arange(0, 32, 3, torch::kInt64));
    namespace F = torch::nn::functional;
    const torch::Tensor loss =
        F::cross_entropy(out.mlm_logits, torch::randint(0, 97, {11}, torch::kInt64)) +
        F::cross_entropy(out.nsp_logits, torch::tensor({0, 1}, torch::kInt64));
    ASSERT_TRUE(std::isfinite(loss.item<double>()));
    loss.backward();
    // Every parameter gets a gradient (with NSP on, nothing is left unused).
    for (const auto& p : net->named_parameters()) {
      ASSERT_TRUE(p.value().grad().defined()) << p.key();
      EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0.0) << p.key();
    }
    outputs.push_back(out.mlm_logits.detach());
  }
  EXPECT_EQ(counts[1], counts[0] + 2 * 128);  // the final LayerNorm
  // Same seed, same weights (the final LayerNorm starts at 1 / 0), different block order.
  EXPECT_GT((outputs[0] - outputs[1]).abs().max().item<double>(),
            0.1 * outputs[0].abs().max().item<double>());
}

TEST(Bert, TrainModeIsDeterministicWithoutDropout) {
  const torch::Tensor ids = torch::randint(0, 97, {2, 10}, torch::kInt64);
  const torch::Tensor positions = torch::arange(0, 20, 2, torch::kInt64);
  for (const double dropout : {0.0, 0.1}) {
    torch::manual_seed(5);
    config::ModelConfig m = tiny_config();
    m.dropout = dropout;
    auto net = make_tiny(m);
    net->train();
    const torch::Tensor a = net->forward(ids, {}, {}, positions).mlm_logits;
    const torch::Tensor b = net->forward(ids, {}, {}, positions).mlm_logits;
    EXPECT_EQ(torch::equal(a, b), dropout == 0.0) << "dropout " << dropout;
  }
}

TEST(Bert, AttentionKernelsAgree) {
  if (!fused_attention_available()) {
    // LibTorch 1.13 has no public scaled_dot_product_attention: only the explicit path exists,
    // and asking for the fused one is an error rather than a silent fallback.
    BertSelfAttention attention(64, 4, 0.0);
    EXPECT_EQ(attention->kernel(), AttentionKernel::kExplicit);
    EXPECT_THROW(attention->set_kernel(AttentionKernel::kFused), Error);
    GTEST_SKIP() << "LibTorch " << TORCH_VERSION_MAJOR << "." << TORCH_VERSION_MINOR
                 << " has only the explicit attention path; nothing to compare";
  }
  torch::manual_seed(6);
  auto net = make_tiny(tiny_config());
  net->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor ids = torch::randint(0, 97, {2, 12}, torch::kInt64);
  torch::Tensor padding = torch::zeros({2, 12}, torch::kBool);
  padding[1].slice(0, 7).fill_(true);
  net->bert()->encoder->set_attention_kernel(AttentionKernel::kFused);
  const torch::Tensor fused = net->bert()->forward(ids, {}, padding).sequence;
  net->bert()->encoder->set_attention_kernel(AttentionKernel::kExplicit);
  const torch::Tensor explicit_path = net->bert()->forward(ids, {}, padding).sequence;
  const torch::Tensor real = padding.logical_not();
  EXPECT_LT((fused.index({real}) - explicit_path.index({real})).abs().max().item<double>() /
                explicit_path.abs().max().item<double>(),
            1e-5);
}

// Cost model: the formula's value for bert_base at 128 tokens, and agreement with the
// "6 x parameters x tokens + attention" convention.
TEST(Bert, ForwardMacs) {
  config::ModelConfig m;
  m.arch = "bert_base";
  const BertConfig base = bert_config_from(m);
  EXPECT_EQ(default_mlm_positions(128), 19);
  EXPECT_EQ(default_mlm_positions(512), 77);
  // 12 x (4*128*768^2 + 2*128^2*768 + 2*128*768*3072) + 19 x (768^2 + 768*30522)
  EXPECT_EQ(bert_forward_macs(base, 128, 19), 11'630'209'536);
  EXPECT_THROW(bert_forward_macs(base, 513, 19), InputError);
  EXPECT_THROW(bert_forward_macs(base, 128, 129), InputError);

  const auto attention_flops = [](const BertConfig& c, int64_t t) {
    return 6.0 * 2.0 * static_cast<double>(c.num_layers * t * t * c.hidden);
  };
  // Decoder on every token: 6 x (parameters that multiply: all but position/segment embeddings)
  // x tokens + attention. Biases, norms and the decoder bias are the difference (< 2%).
  for (const char* arch : {"bert_tiny", "bert_mini"}) {
    m.arch = arch;
    const BertConfig c = bert_config_from(m);
    BertForPretraining net(c);
    const int64_t t = 128;
    const double params =
        static_cast<double>(count(net) - c.max_seq_len * c.hidden - c.type_vocab_size * c.hidden);
    const double convention = 6.0 * params * t + attention_flops(c, t);
    const double ours = 6.0 * static_cast<double>(bert_forward_macs(c, t, t));
    EXPECT_NEAR(ours / convention, 1.0, 0.02) << arch;
  }
  // BERT's 15% of tokens through the head, against Kaplan et al.'s non-embedding parameters:
  // within a few % at bert_base.
  BertModel encoder_only(base, /*add_pooler=*/false);
  const double non_embedding = static_cast<double>(count(*encoder_only->encoder));
  const double convention = 6.0 * non_embedding * 128 + attention_flops(base, 128);
  EXPECT_NEAR(6.0 * static_cast<double>(bert_forward_macs(base, 128, 19)) / convention, 1.0, 0.05);
}

}  // namespace
}  // namespace batchlab::models
