// Spec parsing: the sections and keys of a sweep spec, with every mistake reported at once as
// file:line:col and a did-you-mean where a key is misspelled.
#include "sweeps/spec.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/sweeps/sweep_test_util.h"

namespace batchlab::sweeps {
namespace {

using testing::config_error;
using testing::contains;
using testing::SweepFiles;

TEST(SweepSpec, ReadsEverySectionWithDefaults) {
  SweepFiles files(R"(schema_version = 1
[sweep]
name = "ladder"
experiment = "base.toml"
seeds = [0, 1]
[grid]
"batch.global" = [64, 128]
[[zip]]
"optim.name" = ["sgd", "lamb"]
"optim.scaling" = ["linear", "sqrt"]
)");
  const SweepSpec spec = files.spec();
  EXPECT_EQ(spec.name, "ladder");
  EXPECT_EQ(std::filesystem::path(spec.experiment).filename(), "base.toml");
  EXPECT_TRUE(std::filesystem::exists(spec.experiment));  // resolved against the spec's folder
  EXPECT_EQ(spec.results, "results/ladder.db");
  EXPECT_EQ(spec.runs_dir, "runs/ladder");
  ASSERT_EQ(spec.dimensions.size(), 3u);
  EXPECT_EQ(spec.dimensions[0].kind, Dimension::Kind::seeds);
  EXPECT_EQ(spec.dimensions[2].kind, Dimension::Kind::zip);
  EXPECT_EQ(spec.swept_keys(), (std::vector<std::string>{"train.seed", "batch.global", "optim.name",
                                                         "optim.scaling"}));
  EXPECT_EQ(spec.dimensions[2].axes[1].values[1].text, "sqrt");
}

TEST(SweepSpec, ZipWithUnequalLengthsIsRejected) {
  SweepFiles files(R"(schema_version = 1
[sweep]
name = "zip"
experiment = "base.toml"
[[zip]]
"optim.name" = ["sgd", "lars", "lamb"]
"optim.base_lr" = [0.1, 2.0]
)");
  const std::string message = config_error([&] { files.spec(); });
  EXPECT_TRUE(contains(message, "spec.toml:5:1: zip")) << message;
  EXPECT_TRUE(contains(message, "must have equal lengths")) << message;
  EXPECT_TRUE(contains(message, "optim.name has 3 and optim.base_lr has 2")) << message;
}

TEST(SweepSpec, UnknownKeysInAWhenClauseAreRejectedWithSuggestions) {
  SweepFiles files(R"(schema_version = 1
[sweep]
name = "when"
experiment = "base.toml"
[grid]
"optim.name" = ["sgd", "lars"]
[when."optim.name=lars"]
"optim.bsae_lr" = 2.0
[when."optim.nmae=lars"]
"optim.base_lr" = 2.0
[when."optim.name=adam"]
"optim.base_lr" = 0.001
[when."optim.name"]
"optim.base_lr" = 0.001
)");
  const std::string message = config_error([&] { files.spec(); });
  EXPECT_TRUE(contains(message, "spec.toml:8:1: [when.\"optim.name=lars\"] optim.bsae_lr = 2.0"))
      << message;
  EXPECT_TRUE(contains(message, "did you mean optim.base_lr?")) << message;
  EXPECT_TRUE(contains(message, "spec.toml:9:")) << message;
  EXPECT_TRUE(contains(message, "optim.nmae")) << message;
  EXPECT_TRUE(contains(message, "did you mean optim.name?")) << message;
  EXPECT_TRUE(contains(message, "matches none of the swept values (sgd and lars)")) << message;
  EXPECT_TRUE(contains(message, "is not key=value")) << message;
}

TEST(SweepSpec, EveryProblemOfTheSpecIsReportedAtOnce) {
  SweepFiles files(R"(schema_version = 1
[sweep]
name = "bad name!"
experiment = "missing.toml"
seedz = [0]
[grd]
x = 1
[grid]
"batch.globl" = [64]
"optim.name" = "sgd"
"optim.momentum" = [0.9, 0.9]
[[zip]]
"optim.base_lr" = [0.1]
"schedule.epochs" = [1]
[[zip]]
"optim.base_lr" = [0.2]
[set]
"schedule.epochs" = 3
[[exclude]]
"optim.weight_decay" = 0.0
)");
  const std::string message = config_error([&] { files.spec(); });
  EXPECT_TRUE(contains(message, "spec.toml:3:8: sweep.name")) << message;
  EXPECT_TRUE(contains(message, "spec.toml:4:14: sweep.experiment")) << message;
  EXPECT_TRUE(contains(message, "file not found")) << message;
  EXPECT_TRUE(contains(message, "sweep.seedz")) << message;
  EXPECT_TRUE(contains(message, "did you mean sweep.seeds?")) << message;
  EXPECT_TRUE(contains(message, "grd")) << message;
  EXPECT_TRUE(contains(message, "did you mean grid?")) << message;
  EXPECT_TRUE(contains(message, "spec.toml:9:1: [grid] batch.globl")) << message;
  EXPECT_TRUE(contains(message, "did you mean batch.global?")) << message;
  EXPECT_TRUE(contains(message, "must be a non-empty array")) << message;
  EXPECT_TRUE(contains(message, "value listed twice")) << message;
  EXPECT_TRUE(contains(message, "swept twice")) << message;
  EXPECT_TRUE(contains(message, "a fixed value cannot override a swept key")) << message;
  EXPECT_TRUE(contains(message, "optim.weight_decay = 0.0: is not swept")) << message;
}

TEST(SweepSpec, SchemaVersionAndSyntax) {
  SweepFiles missing("[sweep]\nname = \"x\"\nexperiment = \"base.toml\"\n");
  EXPECT_TRUE(contains(config_error([&] { missing.spec(); }), "schema_version: missing"));
  SweepFiles syntax("schema_version = 1\n[sweep\n");
  EXPECT_TRUE(contains(config_error([&] { syntax.spec(); }), "spec.toml:2:"));
  EXPECT_THROW(load_sweep_spec("/nonexistent/spec.toml"), InputError);
}

TEST(SweepSpec, ExplicitPathsAndNumericEquality) {
  SweepFiles files(R"(schema_version = 1
[sweep]
name = "paths"
experiment = "base.toml"
results = "/tmp/somewhere/x.db"
runs_dir = "/tmp/somewhere/runs"
[grid]
"batch.global" = [64, 128]
[[exclude]]
"batch.global" = 128.0
)");
  const SweepSpec spec = files.spec();
  SweepFiles default_runs(
      "schema_version = 1\n[sweep]\nname = \"d\"\nexperiment = \"base.toml\"\n"
      "results = \"/scratch/sweeps/d.db\"\n");
  EXPECT_EQ(default_runs.spec().runs_dir, "/scratch/sweeps/runs/d");
  EXPECT_EQ(spec.results, "/tmp/somewhere/x.db");
  EXPECT_EQ(spec.runs_dir, "/tmp/somewhere/runs");
  ASSERT_EQ(spec.excludes.size(), 1u);  // 128.0 matches the integer 128
}

}  // namespace
}  // namespace batchlab::sweeps
