// Rules relative to the machine (core/config/host_rules.h): train.threads past 2 x the cores a
// job's processes share is warned about, located like a diagnostic, and never refused (validation
// gives the same answer everywhere).
#include "core/config/host_rules.h"

#include <gtest/gtest.h>

#include "core/config/loader.h"
#include "tests/core/config/config_test_util.h"

namespace batchlab::config {
namespace {

using testing::doc;
using testing::kSource;
using testing::parse_ok;

ExperimentConfig with_threads(int64_t threads) {
  ExperimentConfig config;
  config.train.threads = threads;
  return config;
}

TEST(HostRules, ThreadsPastTwiceTheCoresAreWarnedAbout) {
  EXPECT_TRUE(host_warnings(with_threads(4), {2, 1}).empty());
  const auto w = host_warnings(with_threads(1000), {2, 1});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].key, "train.threads");
  EXPECT_EQ(w[0].value, "1000");
  EXPECT_NE(w[0].rule.find("more than 2 x the 2 cores of this machine: LibTorch runs one OS thread "
                           "per intra-op thread"),
            std::string::npos)
      << w[0].rule;
  EXPECT_NE(w[0].rule.find("use at most 4, or 0 for one per core"), std::string::npos) << w[0].rule;
  EXPECT_NE(w[0].rule.find("a warning, not an error"), std::string::npos) << w[0].rule;
}

TEST(HostRules, TheProcessesOfAJobShareTheCores) {
  // 4 ranks on 8 cores: 4 threads each is the most.
  EXPECT_TRUE(host_warnings(with_threads(4), {8, 4}).empty());
  const auto w = host_warnings(with_threads(5), {8, 4});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].rule.find("shared by the 4 processes of this job"), std::string::npos);
  EXPECT_NE(w[0].rule.find("use at most 4"), std::string::npos) << w[0].rule;
}

TEST(HostRules, OneThreadPerCoreAndUnknownMachinesNeverWarn) {
  EXPECT_TRUE(host_warnings(with_threads(0), {2, 1}).empty());     // one per core
  EXPECT_TRUE(host_warnings(with_threads(1000), {0, 1}).empty());  // cores unknown
}

TEST(HostRules, BenchThreadsPastTwiceTheCoresAreWarnedAboutToo) {
  BenchConfig bench;
  bench.threads = 4;
  EXPECT_TRUE(bench_host_warnings(bench, {2, 1}).empty());
  bench.threads = 0;
  EXPECT_TRUE(bench_host_warnings(bench, {2, 1}).empty());
  bench.threads = 64;
  const auto w = bench_host_warnings(bench, {2, 1});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].key, "--threads");
  EXPECT_EQ(w[0].value, "64");
  EXPECT_NE(w[0].rule.find("more than 2 x the 2 cores of this machine"), std::string::npos)
      << w[0].rule;
  EXPECT_NE(w[0].rule.find("use at most 4, or 0 for one per core"), std::string::npos) << w[0].rule;
}

TEST(HostRules, TheLoaderLocatesTheWarningAndStillAcceptsTheConfig) {
  std::vector<Diagnostic> warnings;
  LoadOptions options;
  options.host_cores = 2;
  options.warnings = &warnings;
  parse_ok(doc("train", "threads = 1000"), options);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].file, kSource);
  EXPECT_EQ(warnings[0].line, 3);
  EXPECT_EQ(warnings[0].column, 11);
  // Without a host (validation alone, a sweep plan) nothing is said.
  warnings.clear();
  options.host_cores = 0;
  parse_ok(doc("train", "threads = 1000"), options);
  EXPECT_TRUE(warnings.empty());
}

}  // namespace
}  // namespace batchlab::config
