// A Hugging Face config.json against batchlab's BERT (models/hf_bert_config.h): what export writes
// reads back with no difference, and a folder of another shape is listed key by key with the
// experiment key that sets each size; files that are no config.json are InputErrors naming them.
#include "models/hf_bert_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/config/model_config.h"
#include "core/errors.h"
#include "tests/temp_dir.h"

namespace batchlab::models {
namespace {

BertConfig tiny() {
  config::ModelConfig model;
  model.arch = "bert_tiny";
  model.vocab_size = 2048;
  model.max_seq_len = 64;
  return bert_config_from(model);
}

std::string written(const test_support::TempDir& dir, const std::string& text) {
  const std::string path = dir.file("config.json");
  std::ofstream(path) << text;
  return path;
}

bool has(const std::vector<std::string>& lines, const std::string& line) {
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

TEST(HfBertConfig, WhatExportWritesReadsBackWithNoDifference) {
  const BertConfig c = tiny();
  const auto j = nlohmann::json::parse(hf_bert_config_json(c));
  EXPECT_EQ(j["model_type"], "bert");
  EXPECT_EQ(j["architectures"][0], "BertForMaskedLM");
  EXPECT_EQ(j["hidden_size"], 128);
  EXPECT_EQ(j["num_hidden_layers"], 2);
  EXPECT_EQ(j["num_attention_heads"], 2);
  EXPECT_EQ(j["vocab_size"], 2048);
  EXPECT_EQ(j["max_position_embeddings"], 64);
  EXPECT_EQ(j["hidden_act"], "gelu");
  EXPECT_EQ(j["pad_token_id"], 0);
  test_support::TempDir dir("hfcfg");
  EXPECT_TRUE(hf_bert_config_differences(written(dir, hf_bert_config_json(c)), c).empty());
  BertConfig pretraining = c;
  pretraining.next_sentence = true;
  EXPECT_EQ(nlohmann::json::parse(hf_bert_config_json(pretraining))["architectures"][0],
            "BertForPreTraining");
}

TEST(HfBertConfig, AnotherShapeIsListedKeyByKeyWithTheKeyThatSetsIt) {
  const BertConfig c = tiny();
  auto j = nlohmann::json::parse(hf_bert_config_json(c));
  j["num_hidden_layers"] = 4;
  j["vocab_size"] = 30522;
  j.erase("max_position_embeddings");
  j["hidden_act"] = "relu";
  // Another double than 1e-12 but the same float32, which the LayerNorms hold: no difference.
  j["layer_norm_eps"] = 1.0000000000000002e-12;
  test_support::TempDir dir("hfcfg");
  const auto diffs = hf_bert_config_differences(written(dir, j.dump()), c);
  EXPECT_EQ(diffs.size(), 4u) << ::testing::PrintToString(diffs);
  EXPECT_TRUE(
      has(diffs, "num_hidden_layers: config.json 4, the experiment 2 (model.arch = \"bert_tiny\")"))
      << ::testing::PrintToString(diffs);
  EXPECT_TRUE(has(diffs,
                  "vocab_size: config.json 30522, the experiment 2048 (the tokenizer's "
                  "vocabulary)"));
  EXPECT_TRUE(has(diffs,
                  "max_position_embeddings: missing from config.json, the experiment 64 "
                  "(model.max_seq_len)"));
  EXPECT_TRUE(has(diffs, "hidden_act: config.json \"relu\", batchlab's BERT computes only gelu"));
}

TEST(HfBertConfig, AFileThatIsNoConfigJsonIsAnInputErrorNamingIt) {
  test_support::TempDir dir("hfcfg");
  const BertConfig c = tiny();
  for (const char* text : {"[1, 2]", "{not json", ""}) {
    const std::string path = written(dir, text);
    try {
      hf_bert_config_differences(path, c);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(path + ": not a JSON object"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(hf_bert_config_differences(dir.file("absent.json"), c), InputError);
}

// A value nested 200,000 deep where a key's value belongs was printed recursively into the list
// of differences and overflowed the stack; now the file is refused by depth, and a file of more
// than a megabyte by size.
TEST(HfBertConfig, ADeeplyNestedOrHugeFileIsRefusedNamingItNotACrash) {
  test_support::TempDir dir("hfcfg");
  const BertConfig c = tiny();
  const size_t levels = 200'000;
  const std::string deep =
      written(dir, "{\"hidden_act\": " + std::string(levels, '[') + std::string(levels, ']') + "}");
  try {
    hf_bert_config_differences(deep, c);
    ADD_FAILURE() << "accepted a config.json nested 200,000 deep";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(deep + ": the config.json nests arrays and objects more "
                                                "than 128 levels deep"),
              std::string::npos)
        << e.what();
  }
  const std::string huge =
      written(dir, "{\"hidden_act\": \"" + std::string(size_t{2} << 20, 'x') + "\"}");
  try {
    hf_bert_config_differences(huge, c);
    ADD_FAILURE() << "accepted a 2 MB config.json";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("more than the 1048576 a config.json may have"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace batchlab::models
