// The published-study specs in sweeps/specs pass `sweep plan` without their data, and their job
// counts, peak learning rates and step budgets are the numbers their comments quote.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cli/cli_runner.h"
#include "tests/test_paths.h"

namespace batchlab::sweeps {
namespace {

using cli::testing::run_batchlab;
using cli::testing::shell_quote;

nlohmann::json plan(const std::string& spec) {
  const auto r =
      run_batchlab("sweep plan --format json " +
                   shell_quote(std::string(test_paths::source_dir()) + "/sweeps/specs/" + spec));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return nlohmann::json::parse(r.output, nullptr, /*allow_exceptions=*/false);
}

// Peak LRs in job order, compared with the values the spec's comment table quotes (4-5 significant
// digits there, so a relative tolerance).
void expect_peaks(const nlohmann::json& p, const std::vector<double>& quoted) {
  ASSERT_EQ(p["jobs"].size(), quoted.size());
  for (size_t i = 0; i < quoted.size(); ++i) {
    const double peak = p["jobs"][i]["peak_lr"].get<double>();
    EXPECT_NEAR(peak, quoted[i], 1e-4 * quoted[i]) << "job " << i + 1;
  }
}

TEST(PaperSpecs, LambBertLarge) {
  const auto p = plan("lamb_bert_large.toml");
  ASSERT_FALSE(p.is_discarded());
  EXPECT_EQ(p["count"], 8);
  expect_peaks(p, {0.000625, 0.0008839, 0.00125, 0.0017678, 0.0025, 0.0035355, 0.005, 0.0070711});
  const std::vector<int64_t> steps = {1000000, 500000, 250000, 125000, 62500, 31250, 15625, 7813};
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(p["jobs"][i]["total_steps"], steps[i]);
    EXPECT_EQ(p["jobs"][i]["warmup_steps"], 3125);
    // 5 / (2^x 10^3) with x = 3, 2.5, ..., as the paper writes its LRs.
    if (i < 7) {
      EXPECT_NEAR(p["jobs"][i]["peak_lr"].get<double>(), 5.0 / (std::pow(2.0, 3.0 - 0.5 * i) * 1e3),
                  1e-12);
    }
  }
}

TEST(PaperSpecs, GoyalImagenet) {
  const auto p = plan("goyal_imagenet.toml");
  ASSERT_FALSE(p.is_discarded());
  EXPECT_EQ(p["count"], 9);
  expect_peaks(p, {0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6});
  for (const auto& job : p["jobs"]) {
    // Every warmup starts at 0.1: warmup_start x peak.
    EXPECT_NEAR(
        job["coordinates"]["schedule.warmup_start"].get<double>() * job["peak_lr"].get<double>(),
        0.1, 1e-12);
  }
}

TEST(PaperSpecs, LarsResnet50) {
  const auto p = plan("lars_resnet50_imagenet.toml");
  ASSERT_FALSE(p.is_discarded());
  EXPECT_EQ(p["count"], 18);
  std::vector<double> quoted;
  const std::vector<std::vector<double>> table = {{1.0, 2.0, 4.0},  {1.414, 2.828, 5.657},
                                                  {2.0, 4.0, 8.0},  {2.828, 5.657, 11.31},
                                                  {4.0, 8.0, 16.0}, {5.657, 11.31, 22.63}};
  for (const auto& row : table) quoted.insert(quoted.end(), row.begin(), row.end());
  ASSERT_EQ(p["jobs"].size(), quoted.size());
  for (size_t i = 0; i < quoted.size(); ++i) {
    EXPECT_NEAR(p["jobs"][i]["peak_lr"].get<double>(), quoted[i], 5e-4 * quoted[i]) << i;
  }
}

TEST(PaperSpecs, Nado32k) {
  const auto p = plan("nado_32k.toml");
  ASSERT_FALSE(p.is_discarded());
  EXPECT_EQ(p["count"], 12);
  expect_peaks(p, {4, 8, 16, 0.002, 0.004, 0.008, 8, 16, 32, 0.005, 0.01, 0.02});
  for (const auto& job : p["jobs"]) {
    EXPECT_EQ(job["total_steps"], 2512);
    EXPECT_EQ(job["accum_steps"], 128);  // 32,768 as 128 micro-batches of 256
  }
}

TEST(PaperSpecs, MiniLarsVsLamb) {
  const auto p = plan("mini_lars_vs_lamb.toml");
  ASSERT_FALSE(p.is_discarded());
  EXPECT_EQ(p["count"], 40);
  // The comment's ranges: the first and last rung of each optimizer and rule.
  const std::vector<std::pair<double, double>> ranges = {{0.1, 12.8},  {0.1, 1.131},  {0.1, 12.8},
                                                         {0.1, 1.131}, {4, 512},      {4, 45.25},
                                                         {0.02, 2.56}, {0.02, 0.2263}};
  const std::vector<int64_t> steps = {1024, 256, 64, 16, 8};
  for (size_t g = 0; g < ranges.size(); ++g) {
    EXPECT_NEAR(p["jobs"][g * 5]["peak_lr"].get<double>(), ranges[g].first, 1e-3 * ranges[g].first);
    EXPECT_NEAR(p["jobs"][g * 5 + 4]["peak_lr"].get<double>(), ranges[g].second,
                1e-3 * ranges[g].second);
    for (size_t b = 0; b < steps.size(); ++b) {
      EXPECT_EQ(p["jobs"][g * 5 + b]["total_steps"], steps[b]);
    }
  }
}

}  // namespace
}  // namespace batchlab::sweeps
