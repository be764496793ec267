// The BERT family in the models table: listed after the image models, built through
// make_masked_lm, counted without being built, priced per sequence, and kept apart from the image
// architectures with errors that name the valid choices.
#include <gtest/gtest.h>

#include "core/errors.h"
#include "models/bert_config.h"
#include "models/registry.h"

namespace batchlab::models {
namespace {

config::ModelConfig bert(const std::string& arch) {
  config::ModelConfig m;
  m.arch = arch;
  return m;
}

TEST(ModelRegistryText, ListsEveryBertPresetAsText) {
  std::vector<std::string> text;
  for (const auto& m : list_models()) {
    if (m.family == "text") {
      text.push_back(m.name);
      EXPECT_EQ(m.seq_len, 128);
    }
  }
  EXPECT_EQ(text, (std::vector<std::string>{"bert_tiny", "bert_mini", "bert_small", "bert_medium",
                                            "bert_base", "bert_large"}));
}

TEST(ModelRegistryText, AnalyticParameterCountEqualsTheBuiltModel) {
  // Defaults, the vocabulary override, pre-LN (an extra final LN) and the NSP head (pooler +
  // classifier) each change the count.
  struct Case {
    std::string arch;
    bool norm_first;
    bool next_sentence;
    int64_t vocab;
  };
  for (const Case& c :
       {Case{"bert_tiny", false, false, 0}, Case{"bert_tiny", true, true, 0},
        Case{"bert_mini", false, true, 8000}, Case{"bert_tiny", true, false, 517}}) {
    auto cfg = bert(c.arch);
    cfg.norm_first = c.norm_first;
    cfg.next_sentence = c.next_sentence;
    const auto net = make_masked_lm(cfg, c.vocab);
    EXPECT_EQ(masked_lm_parameters(cfg, c.vocab), count_parameters(*net))
        << c.arch << " norm_first " << c.norm_first << " nsp " << c.next_sentence << " vocab "
        << c.vocab;
    EXPECT_EQ(net->vocab_size(), c.vocab > 0 ? c.vocab : 30522);
  }
}

TEST(ModelRegistryText, BertBaseAndLargeMatchThePublishedEncoderCounts) {
  // The published counts are the encoder with its pooler (Hugging Face BertModel: 109,482,240 and
  // 335,141,888); the pretraining model adds the MLM transform, its LN and the decoder bias, and
  // has the pooler only with the next-sentence head (which adds 2 x hidden + 2).
  for (const auto& [arch, hidden, encoder] :
       {std::tuple<std::string, int64_t, int64_t>{"bert_base", 768, 109482240},
        std::tuple<std::string, int64_t, int64_t>{"bert_large", 1024, 335141888}}) {
    auto cfg = bert(arch);
    cfg.next_sentence = true;
    const int64_t mlm_head = hidden * hidden + hidden + 2 * hidden + 30522;
    const int64_t nsp = 2 * hidden + 2;
    EXPECT_EQ(masked_lm_parameters(cfg), encoder + mlm_head + nsp) << arch;
  }
}

TEST(ModelRegistryText, SummaryAndCostPerSequence) {
  for (const auto& m : list_models()) {
    if (m.name != "bert_base") continue;
    const auto s = summarize_model(m);
    EXPECT_EQ(s.parameters, masked_lm_parameters(bert("bert_base")));
    EXPECT_EQ(s.training_flops, estimate_masked_lm_cost(bert("bert_base"), 128).training_flops);
    // 6 x parameters x tokens is the usual estimate; attention and the 15% MLM head move it a bit.
    const double six_nd = 6.0 * 85e6 * 128;  // non-embedding parameters of bert_base x tokens
    EXPECT_NEAR(static_cast<double>(s.training_flops) / six_nd, 1.0, 0.1);
    EXPECT_EQ(s.input, "128 tokens, 30522-token vocabulary");
  }
}

TEST(ModelRegistryText, FamiliesDoNotMix) {
  try {
    make_masked_lm(bert("resnet50"));
    FAIL() << "an image model built as a masked LM";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("an image classifier"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bert_tiny"), std::string::npos) << e.what();
  }
  try {
    make_image_classifier(bert("bert_tiny"), 3, 32, 32, 10);
    FAIL() << "a BERT built as an image classifier";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("masked-language model"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("resnet50"), std::string::npos) << e.what();
  }
  try {
    make_masked_lm(bert("bert_huge"));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bert_large"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace batchlab::models
