// A Hugging Face config.json against batchlab's GPT-2 (models/hf_gpt2_config.h): what export
// writes reads back with no difference and loads into transformers' GPT2Config names, a folder of
// another shape or computation is listed key by key, and what transformers leaves at its default
// (n_inner null, missing flags) is batchlab's computation.
#include "models/hf_gpt2_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/config/model_config.h"
#include "core/errors.h"
#include "tests/temp_dir.h"

namespace batchlab::models {
namespace {

Gpt2Config tiny_gpt2_config() {
  config::ModelConfig model;
  model.arch = "gpt2_tiny";
  model.vocab_size = 2048;
  model.max_seq_len = 128;
  model.dropout = 0.0;
  return gpt2_config_from(model);
}

std::string gpt2_config_file(const test_support::TempDir& dir, const nlohmann::json& j) {
  const std::string path = dir.file("config.json");
  std::ofstream(path) << j.dump(2);
  return path;
}

bool lists(const std::vector<std::string>& lines, const std::string& line) {
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

TEST(HfGpt2Config, WhatExportWritesReadsBackWithNoDifference) {
  const Gpt2Config c = tiny_gpt2_config();
  const auto j = nlohmann::json::parse(hf_gpt2_config_json(c, {3, 3, 0}));
  EXPECT_EQ(j["model_type"], "gpt2");
  EXPECT_EQ(j["architectures"][0], "GPT2LMHeadModel");
  EXPECT_EQ(j["n_embd"], 128);
  EXPECT_EQ(j["n_layer"], 2);
  EXPECT_EQ(j["n_head"], 2);
  EXPECT_EQ(j["n_positions"], 128);
  EXPECT_EQ(j["vocab_size"], 2048);
  EXPECT_TRUE(j["n_inner"].is_null());
  EXPECT_EQ(j["activation_function"], "gelu_new");
  EXPECT_EQ(j["eos_token_id"], 3);
  EXPECT_EQ(j["bos_token_id"], 3);
  EXPECT_EQ(j["pad_token_id"], 0);
  EXPECT_EQ(j["tie_word_embeddings"], true);
  EXPECT_EQ(j["resid_pdrop"], 0.0);
  test_support::TempDir dir("hfgpt2cfg");
  EXPECT_TRUE(hf_gpt2_config_differences(gpt2_config_file(dir, j), c).empty());
  // transformers' defaults stand for batchlab's computation: leaving them out changes nothing.
  auto sparse = j;
  for (const char* key : {"n_inner", "activation_function", "scale_attn_weights",
                          "add_cross_attention", "tie_word_embeddings"}) {
    sparse.erase(key);
  }
  EXPECT_TRUE(hf_gpt2_config_differences(gpt2_config_file(dir, sparse), c).empty());
  sparse["n_inner"] = 512;  // 4 x 128, spelled out
  EXPECT_TRUE(hf_gpt2_config_differences(gpt2_config_file(dir, sparse), c).empty());
}

TEST(HfGpt2Config, AnotherShapeOrComputationIsListedKeyByKey) {
  const Gpt2Config c = tiny_gpt2_config();
  auto j = nlohmann::json::parse(hf_gpt2_config_json(c, {3, 3, 0}));
  j["n_layer"] = 12;
  j["n_positions"] = 1024;
  j["vocab_size"] = 50257;
  j["activation_function"] = "relu";
  j["scale_attn_by_inverse_layer_idx"] = true;
  j["n_inner"] = 1000;
  j.erase("n_head");
  test_support::TempDir dir("hfgpt2cfg");
  const auto lines = hf_gpt2_config_differences(gpt2_config_file(dir, j), c);
  EXPECT_EQ(lines.size(), 7u);
  for (const char* line : {
           "n_layer: config.json 12, the experiment 2 (model.arch = \"gpt2_tiny\")",
           "n_positions: config.json 1024, the experiment 128 (model.max_seq_len)",
           "vocab_size: config.json 50257, the experiment 2048 (the tokenizer's vocabulary)",
           "n_head: missing from config.json, the experiment 2 (model.arch = \"gpt2_tiny\")",
           "activation_function: config.json \"relu\", batchlab's GPT-2 computes only gelu_new",
           "scale_attn_by_inverse_layer_idx: config.json true, batchlab's GPT-2 computes only "
           "false",
           "n_inner: config.json 1000, batchlab's GPT-2 computes only null (4 x n_embd = 512)",
       }) {
    EXPECT_TRUE(lists(lines, line)) << line;
  }
}

TEST(HfGpt2Config, AFileThatIsNoConfigJsonIsAnInputErrorNamingIt) {
  test_support::TempDir dir("hfgpt2cfg");
  const std::string path = dir.file("config.json", "[1, 2]");
  try {
    hf_gpt2_config_differences(path, tiny_gpt2_config());
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": not a JSON object"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace batchlab::models
