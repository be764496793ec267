// `batchlab train` on files made to crash readers (issue 45): a .safetensors header nested 200,000
// levels deep as model.init_from, and a config whose dotted key is 200,000 segments long. Each
// ended the process with a stack overflow (exit 139), the first after the run's banner; now each
// is bad input: exit 2, a message naming the file and the fix, no banner, no database.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/cli/cli_runner.h"

namespace batchlab::cli {
namespace {

using testing::contains;
using testing::run_batchlab;
using testing::shell_quote;
using testing::TempDir;

bool banner_printed(const std::string& output) { return contains(output, "| run "); }

// A safetensors file whose header is `{"a": [[[...]]]}`, `levels` deep, and no tensor data.
std::string deep_safetensors(const TempDir& dir, size_t levels) {
  const std::string header = "{\"a\": " + std::string(levels, '[') + std::string(levels, ']') + "}";
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  const std::string path = dir.file("deep.safetensors");
  std::ofstream(path, std::ios::binary) << bytes << header;
  return path;
}

TEST(HostileFiles, ADeeplyNestedSafetensorsHeaderAsInitFromIsBadInputBeforeTheBanner) {
  TempDir dir("deep-init");
  const std::string config = dir.file("tiny.toml", testing::kTinyConfig);
  const std::string weights = deep_safetensors(dir, 200'000);
  const std::string db = (dir.path / "r.db").string();
  const auto result = run_batchlab("train " + shell_quote(config) + " --db " + shell_quote(db) +
                                   " --set " + shell_quote("model.init_from=" + weights));
  EXPECT_EQ(result.exit_code, 2) << result.output.substr(0, 2000);
  EXPECT_TRUE(contains(result.output, weights + ": the safetensors header nests arrays and objects "
                                                "more than 128 levels deep"))
      << result.output.substr(0, 2000);
  EXPECT_TRUE(contains(result.output, "save_pretrained")) << result.output.substr(0, 2000);
  EXPECT_FALSE(banner_printed(result.output)) << result.output.substr(0, 2000);
  EXPECT_FALSE(std::filesystem::exists(db));
}

TEST(HostileFiles, AConfigNested200000DeepIsAConfigErrorAtItsLine) {
  TempDir dir("deep-toml");
  std::string key = "a";
  for (int i = 1; i < 200'000; ++i) key += ".a";
  const std::string config =
      dir.file("deep.toml", std::string(testing::kTinyConfig) + key + " = 1\n");
  const std::string db = (dir.path / "r.db").string();
  const auto result = run_batchlab("train " + shell_quote(config) + " --db " + shell_quote(db));
  EXPECT_EQ(result.exit_code, 2) << result.output.substr(0, 2000);
  EXPECT_TRUE(contains(result.output, config + ":20:")) << result.output.substr(0, 2000);
  EXPECT_TRUE(contains(result.output, "nested more than 128 levels deep"))
      << result.output.substr(0, 2000);
  EXPECT_FALSE(banner_printed(result.output)) << result.output.substr(0, 2000);
  EXPECT_FALSE(std::filesystem::exists(db));
}

}  // namespace
}  // namespace batchlab::cli
