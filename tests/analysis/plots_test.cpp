// `batchlab plot` draws every figure from the mini sweep's database (mini_sweep.h) as an 800 x 500
// PNG; bad figure names, databases without the needed rows and bad paths are exit 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "tests/analysis/mini_sweep.h"
#include "tests/cli/cli_runner.h"

namespace batchlab::analysis {
namespace {

using cli::testing::run_batchlab;
using cli::testing::shell_quote;
using cli::testing::TempDir;

// Width and height from a PNG's IHDR chunk (bytes 16..23, big-endian); {0, 0} if not a PNG.
std::array<uint32_t, 2> png_size(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::array<unsigned char, 24> head{};
  in.read(reinterpret_cast<char*>(head.data()), head.size());
  const std::array<unsigned char, 8> magic = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (!in || !std::equal(magic.begin(), magic.end(), head.begin())) return {0, 0};
  auto be32 = [&](int at) {
    return (uint32_t{head[at]} << 24) | (uint32_t{head[at + 1]} << 16) |
           (uint32_t{head[at + 2]} << 8) | uint32_t{head[at + 3]};
  };
  return {be32(16), be32(20)};
}

class Plot : public ::testing::TestWithParam<const char*> {};

TEST_P(Plot, DrawsAnExpectedSizePng) {
  const std::string db = testing::mini_sweep_db();
  TempDir dir("plot");
  const std::string out = (dir.path / (std::string(GetParam()) + ".png")).string();
  const auto r = run_batchlab("plot --db " + shell_quote(db) + " --figure " + GetParam() +
                              " --out " + shell_quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(std::filesystem::exists(out));
  EXPECT_GT(std::filesystem::file_size(out), 5000u);  // a drawn figure, not an empty canvas
  const auto size = png_size(out);
  EXPECT_EQ(size[0], 800u);
  EXPECT_EQ(size[1], 500u);
}

INSTANTIATE_TEST_SUITE_P(EveryFigure, Plot,
                         ::testing::Values("accuracy-vs-batch", "steps-to-target", "gap-vs-batch",
                                           "layer-ratios", "noise-scale", "lr-schedule"),
                         [](const ::testing::TestParamInfo<const char*>& param_info) {
                           std::string name = param_info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(PlotInput, BadArgumentsAreExit2) {
  const std::string db = testing::mini_sweep_db();
  TempDir dir("plotbad");
  const std::string out = (dir.path / "x.png").string();
  auto r = run_batchlab("plot --db " + shell_quote(db) + " --figure acc --out " + shell_quote(out));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("accuracy-vs-batch"), std::string::npos) << r.output;  // lists figures
  r = run_batchlab("plot --db /nonexistent.db --figure lr-schedule --out " + shell_quote(out));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("/nonexistent.db"), std::string::npos) << r.output;
  r = run_batchlab("plot --db " + shell_quote(db) +
                   " --figure lr-schedule --out /nonexistent/x.png");
  EXPECT_EQ(r.exit_code, 2);
  r = run_batchlab("plot --db " + shell_quote(db) + " --figure layer-ratios --run ffff --out " +
                   shell_quote(out));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--run ffff"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(PlotInput, FigureWithoutItsDataIsExit2) {
  // A database whose runs recorded no layer statistics cannot give the layer-ratio figure.
  TempDir dir("plotempty");
  const std::string db = (dir.path / "one.db").string();
  const std::string config = dir.file("c.toml", cli::testing::kTinyConfig);
  ASSERT_EQ(run_batchlab("train " + shell_quote(config) + " --db " + shell_quote(db)).exit_code, 0);
  const auto r = run_batchlab("plot --db " + shell_quote(db) + " --figure layer-ratios --out " +
                              shell_quote((dir.path / "l.png").string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("layer_stats"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace batchlab::analysis
