// The one mapping between batchlab's module names and PyTorch's (torchvision, Hugging Face BERT).
#include "models/pytorch_names.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>

#include "core/errors.h"
#include "models/bert.h"
#include "models/gpt2.h"
#include "models/resnet.h"

namespace batchlab::models {
namespace {

config::ModelConfig tiny_bert() {
  config::ModelConfig m;
  m.arch = "bert_tiny";
  m.vocab_size = 50;
  m.max_seq_len = 16;
  return m;
}

std::vector<std::string> names_of(const StateDict& entries) {
  std::vector<std::string> out;
  for (const auto& e : entries) out.push_back(e.first);
  return out;
}

const torch::Tensor& entry(const StateDict& entries, const std::string& name) {
  for (const auto& e : entries) {
    if (e.first == name) return e.second;
  }
  throw std::runtime_error("no entry " + name);
}

TEST(PytorchNames, NamingFollowsTheArchitecture) {
  EXPECT_EQ(pytorch_naming("resnet50"), "torchvision");
  EXPECT_EQ(pytorch_naming("bert_base"), "huggingface");
  EXPECT_EQ(pytorch_naming("resnet20"), "batchlab");
  EXPECT_EQ(pytorch_naming("small_resnet"), "batchlab");
}

TEST(PytorchNames, ResNetNamesAreTorchvisionsAlready) {
  ResNetOptions o;
  o.depth = 18;
  ResNet net(o);
  EXPECT_EQ(names_of(to_pytorch_state_dict("resnet18", net)), names_of(state_dict(net)));
  const StateDict entries = state_dict(net);
  EXPECT_EQ(names_of(from_pytorch_state_dict("resnet18", entries, "f.pt")), names_of(entries));
}

TEST(PytorchNames, BertExportAddsTheTiedDecoderWhereHuggingFaceListsIt) {
  auto bert = make_bert(tiny_bert());
  const StateDict own = state_dict(*bert);
  const StateDict hf = to_pytorch_state_dict("bert_tiny", *bert);
  ASSERT_EQ(hf.size(), own.size() + 2);
  const auto names = names_of(hf);
  const auto at = std::find(names.begin(), names.end(), "cls.predictions.decoder.weight");
  ASSERT_NE(at, names.end());
  EXPECT_EQ(*(at + 1), "cls.predictions.decoder.bias");
  // Right after the prediction head's own entries (transform.LayerNorm last).
  EXPECT_EQ(*(at - 1), "cls.predictions.transform.LayerNorm.bias");
  EXPECT_TRUE(torch::equal(entry(hf, "cls.predictions.decoder.weight"),
                           entry(own, "bert.embeddings.word_embeddings.weight")));
  EXPECT_TRUE(
      torch::equal(entry(hf, "cls.predictions.decoder.bias"), entry(own, "cls.predictions.bias")));
}

TEST(PytorchNames, BertImportDropsTiedEntriesAndPositionIds) {
  auto bert = make_bert(tiny_bert());
  StateDict hf = to_pytorch_state_dict("bert_tiny", *bert);
  hf.emplace_back("bert.embeddings.position_ids", torch::arange(16).unsqueeze(0));
  const StateDict back = from_pytorch_state_dict("bert_tiny", hf, "hf.pt");
  EXPECT_EQ(names_of(back), names_of(state_dict(*bert)));
  // And it loads strictly.
  auto other = make_bert(tiny_bert());
  load_state_dict(*other, back, "hf.pt");
}

TEST(PytorchNames, AnUntiedDecoderIsRefusedByName) {
  auto bert = make_bert(tiny_bert());
  StateDict hf = to_pytorch_state_dict("bert_tiny", *bert);
  for (auto& [name, tensor] : hf) {
    if (name == "cls.predictions.decoder.weight") tensor = tensor + 1.0;
  }
  try {
    from_pytorch_state_dict("bert_tiny", hf, "untied.pt");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("untied.pt"), std::string::npos) << m;
    EXPECT_NE(m.find("cls.predictions.decoder.weight differs from "
                     "bert.embeddings.word_embeddings.weight"),
              std::string::npos)
        << m;
  }
}

// GPT-2: export adds lm_head.weight (the tied token embedding) last, where GPT2LMHeadModel lists
// it; import drops it (after checking the tie), drops older files' causal-mask buffers and
// prefixes a GPT2Model file's names.
config::ModelConfig tiny_gpt2_names() {
  config::ModelConfig m;
  m.arch = "gpt2_tiny";
  m.vocab_size = 50;
  m.max_seq_len = 16;
  return m;
}

TEST(PytorchNames, Gpt2ExportAddsTheTiedLmHeadLast) {
  EXPECT_EQ(pytorch_naming("gpt2_small"), "huggingface");
  const auto model = make_gpt2(tiny_gpt2_names());
  const StateDict exported = to_pytorch_state_dict("gpt2_tiny", *model);
  ASSERT_EQ(exported.size(), state_dict(*model).size() + 1);
  EXPECT_EQ(exported.back().first, "lm_head.weight");
  EXPECT_TRUE(torch::equal(exported.back().second, entry(exported, "transformer.wte.weight")));
  EXPECT_TRUE(pytorch_module("gpt2_tiny", exported).promised);
  EXPECT_NE(pytorch_module("gpt2_tiny", exported).describe.find("GPT2LMHeadModel"),
            std::string::npos);
  // Back in: exactly the module's own entries.
  EXPECT_EQ(names_of(from_pytorch_state_dict("gpt2_tiny", exported, "gpt2.pt")),
            names_of(state_dict(*model)));
}

TEST(PytorchNames, Gpt2ImportReadsOpenAIsNamesAndDropsTheMaskBuffers) {
  const auto model = make_gpt2(tiny_gpt2_names());
  StateDict bare;  // GPT2Model's names, as OpenAI's released checkpoints have them
  for (const auto& [name, tensor] : state_dict(*model)) {
    bare.emplace_back(name.substr(std::string("transformer.").size()), tensor);
    if (name.find(".attn.c_attn.weight") != std::string::npos) {
      const std::string block = name.substr(12, name.find(".attn.") - 12);  // "h.N"
      bare.emplace_back(block + ".attn.bias", torch::ones({1, 1, 16, 16}).tril());
      bare.emplace_back(block + ".attn.masked_bias", torch::tensor(-1e4));
    }
  }
  EXPECT_EQ(names_of(from_pytorch_state_dict("gpt2_tiny", bare, "gpt2.bin")),
            names_of(state_dict(*model)));
}

TEST(PytorchNames, AnUntiedGpt2LmHeadIsRefusedByName) {
  const auto model = make_gpt2(tiny_gpt2_names());
  StateDict exported = to_pytorch_state_dict("gpt2_tiny", *model);
  exported.back().second = exported.back().second + 1.0;
  try {
    from_pytorch_state_dict("gpt2_tiny", exported, "untied.safetensors");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "untied.safetensors: lm_head.weight differs from transformer.wte.weight"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace batchlab::models
