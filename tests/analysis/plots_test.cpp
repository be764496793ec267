// Smoke tests of `batchlab plot`: every sweep figure is drawn from the mini sweep's database
// (mini_sweep.h) as an 800 x 500 PNG of some content; what is drawn is not checked. Bad figure
// names, databases without the needed rows and bad paths are exit 2. (The study figures are drawn
// from a hand-built study database in study_plots_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "tests/analysis/mini_sweep.h"
#include "tests/analysis/png_size.h"
#include "tests/cli/cli_runner.h"

namespace batchlab::analysis {
namespace {

using cli::testing::run_batchlab;
using cli::testing::shell_quote;
using cli::testing::TempDir;

class PlotSmoke : public ::testing::TestWithParam<const char*> {};

TEST_P(PlotSmoke, DrawsAPngOfTheExpectedSize) {
  const std::string db = testing::mini_sweep_db();
  TempDir dir("plot");
  const std::string out = (dir.path / (std::string(GetParam()) + ".png")).string();
  const auto r = run_batchlab("plot --db " + shell_quote(db) + " --figure " + GetParam() +
                              " --out " + shell_quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(std::filesystem::exists(out));
  EXPECT_GT(std::filesystem::file_size(out), 5000u);  // a drawn figure, not an empty canvas
  const auto size = testing::png_size(out);
  EXPECT_EQ(size[0], 800u);
  EXPECT_EQ(size[1], 500u);
}

INSTANTIATE_TEST_SUITE_P(EverySweepFigure, PlotSmoke,
                         ::testing::Values("accuracy-vs-batch", "steps-to-target", "gap-vs-batch",
                                           "layer-ratios", "noise-scale", "lr-schedule"),
                         [](const ::testing::TestParamInfo<const char*>& param_info) {
                           std::string name = param_info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(PlotInputSmoke, BadArgumentsAreExit2) {
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

TEST(PlotInputSmoke, FigureWithoutItsDataIsExit2) {
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
