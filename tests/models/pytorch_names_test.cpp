// The one mapping between batchlab's module names and PyTorch's (torchvision, Hugging Face BERT).
#include "models/pytorch_names.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>

#include "core/errors.h"
#include "models/bert.h"
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

}  // namespace
}  // namespace batchlab::models
