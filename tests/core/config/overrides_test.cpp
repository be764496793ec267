// --set key.path=value.
#include "core/config/overrides.h"

#include <gtest/gtest.h>

#include "core/config/loader.h"
#include "tests/core/config/config_test_util.h"

namespace batchlab::config {
namespace {

using testing::describe;
using testing::diagnostics_of;
using testing::doc;
using testing::parse_ok;

ParsedOverride parsed(const char* text) {
  std::string error;
  auto out = parse_override(text, error);
  EXPECT_TRUE(out.has_value()) << text << ": " << error;
  return out.value_or(ParsedOverride{});
}

TEST(Overrides, ValuesAreTomlValues) {
  EXPECT_EQ(parsed("optim.base_lr=1e-3").value().value<double>(), 1e-3);
  EXPECT_EQ(parsed("batch.global=4096").value().value<int64_t>(), 4096);
  EXPECT_EQ(parsed("train.noise_scale=true").value().value<bool>(), true);
  EXPECT_EQ(parsed("optim.name=\"lars\"").value().value<std::string>(), "lars");
  const ParsedOverride array = parsed("schedule.milestones=[1, 2]");
  ASSERT_TRUE(array.value().is_array());
  EXPECT_EQ(array.value().as_array()->size(), 2u);
  const ParsedOverride table = parsed("train.target={metric=\"test_acc\", value=0.9}");
  ASSERT_TRUE(table.value().is_table());
  EXPECT_EQ(table.path, "train.target");
}

TEST(Overrides, BareWordsAreStrings) {
  EXPECT_EQ(parsed("optim.name=lars").value().value<std::string>(), "lars");
  EXPECT_EQ(parsed("schedule.budget=1h30m").value().value<std::string>(), "1h30m");
  EXPECT_EQ(parsed("train.device=cuda:1").value().value<std::string>(), "cuda:1");
  // Split at the first '=': the rest is the value.
  EXPECT_EQ(parsed("data.path=/a=b").value().value<std::string>(), "/a=b");
  // A second line cannot smuggle in another key.
  EXPECT_EQ(parsed("optim.name=lars\nbase_lr = 3").value().value<std::string>(),
            "lars\nbase_lr = 3");
}

TEST(Overrides, KeyAndValueAreTrimmed) {
  const ParsedOverride p = parsed(" optim.base_lr = 0.5 ");
  EXPECT_EQ(p.path, "optim.base_lr");
  EXPECT_EQ(p.value().value<double>(), 0.5);
}

TEST(Overrides, MalformedOverrideIsADiagnostic) {
  std::string error;
  EXPECT_FALSE(parse_override("optim.base_lr", error).has_value());
  EXPECT_NE(error.find("expected key.path=value"), std::string::npos);
  EXPECT_FALSE(parse_override("=3", error).has_value());

  LoadOptions options;
  options.overrides = {"optim.base_lr"};
  const auto diagnostics = diagnostics_of(doc("model", "width = 8"), options);
  ASSERT_EQ(diagnostics.size(), 1u) << describe(diagnostics);
  EXPECT_EQ(diagnostics[0].file, "--set");
  EXPECT_NE(diagnostics[0].rule.find("'optim.base_lr'"), std::string::npos);
}

TEST(Overrides, ReplaceTheFileValue) {
  LoadOptions options;
  options.overrides = {"optim.base_lr=0.5", "optim.name=lars", "schedule.budget=2h",
                       "schedule.epochs=2", "schedule.epochs=3"};
  // schedule.budget plus schedule.epochs is a length conflict: drop the budget for this check.
  options.overrides.erase(options.overrides.begin() + 2);
  const ExperimentConfig config = parse_ok(doc("optim", "base_lr = 0.1"), options);
  EXPECT_EQ(config.optim.base_lr, 0.5);
  EXPECT_EQ(config.optim.name, "lars");
  EXPECT_EQ(config.schedule.epochs, 3.0);  // the later override wins
}

TEST(Overrides, OneKeyOfAnExclusiveGroupReplacesTheFilesChoice) {
  // The file says epochs = 10 and warmup_epochs = 1; --set says steps and warmup_steps instead.
  LoadOptions options;
  options.overrides = {"schedule.steps=500", "schedule.warmup_steps=50"};
  const ExperimentConfig config = parse_ok(doc("schedule", "warmup_epochs = 1"), options);
  EXPECT_EQ(config.schedule.steps, 500);
  EXPECT_FALSE(config.schedule.epochs.has_value());
  EXPECT_EQ(config.schedule.warmup_steps, 50);
  EXPECT_FALSE(config.schedule.warmup_epochs.has_value());
  // Keys of other groups stay.
  options.overrides = {"schedule.warmup_fraction=0.05"};
  const ExperimentConfig kept = parse_ok(doc("schedule", "warmup_epochs = 1"), options);
  EXPECT_EQ(kept.schedule.epochs, 10.0);
  EXPECT_EQ(kept.schedule.warmup_fraction, 0.05);
  EXPECT_FALSE(kept.schedule.warmup_epochs.has_value());
}

TEST(Overrides, TwoKeysOfOneGroupFromTheOverridesStillConflict) {
  LoadOptions options;
  options.overrides = {"schedule.warmup_steps=50", "schedule.warmup_epochs=1"};
  const auto diagnostics = diagnostics_of(doc("model", "width = 8"), options);
  ASSERT_EQ(diagnostics.size(), 1u) << describe(diagnostics);
  EXPECT_NE(diagnostics[0].rule.find("set at most one of"), std::string::npos);
  EXPECT_NE(diagnostics[0].rule.find("from --set"), std::string::npos);
}

TEST(Overrides, CreateMissingSections) {
  LoadOptions options;
  options.overrides = {"model.width=64", "train.target={metric=\"test_acc\", value=0.9}"};
  const ExperimentConfig config = parse_ok(doc("optim", "base_lr = 0.1"), options);
  EXPECT_EQ(config.model.width, 64);
  ASSERT_EQ(config.train.targets.size(), 1u);
  EXPECT_EQ(config.train.targets[0].value, 0.9);
}

TEST(Overrides, UnknownKeyQuotesTheOverride) {
  LoadOptions options;
  options.overrides = {"optim.lrr=0.1"};
  const auto diagnostics = diagnostics_of(doc("model", "width = 8"), options);
  ASSERT_EQ(diagnostics.size(), 1u) << describe(diagnostics);
  EXPECT_EQ(diagnostics[0].file, "--set");
  EXPECT_EQ(diagnostics[0].key, "optim.lrr");
  EXPECT_EQ(diagnostics[0].line, 0);
  EXPECT_NE(diagnostics[0].rule.find("did you mean optim.base_lr?"), std::string::npos);
  EXPECT_NE(diagnostics[0].rule.find("(from --set 'optim.lrr=0.1')"), std::string::npos);
}

TEST(Overrides, UnknownSectionSuggestsFullPath) {
  LoadOptions options;
  options.overrides = {"optm.base_lr=0.1"};
  const auto diagnostics = diagnostics_of(doc("model", "width = 8"), options);
  ASSERT_EQ(diagnostics.size(), 1u) << describe(diagnostics);
  EXPECT_NE(diagnostics[0].rule.find("did you mean optim.base_lr?"), std::string::npos);
}

TEST(Overrides, WholeSectionIsRejected) {
  LoadOptions options;
  options.overrides = {"optim={name=\"lars\"}"};
  const auto diagnostics = diagnostics_of(doc("model", "width = 8"), options);
  ASSERT_EQ(diagnostics.size(), 1u) << describe(diagnostics);
  EXPECT_NE(diagnostics[0].rule.find("set one key at a time"), std::string::npos);
}

TEST(Overrides, TypeErrorQuotesTheOverride) {
  LoadOptions options;
  options.overrides = {"optim.base_lr=fast"};
  const auto diagnostics = diagnostics_of(doc("optim", "base_lr = 0.1"), options);
  ASSERT_EQ(diagnostics.size(), 1u) << describe(diagnostics);
  EXPECT_EQ(diagnostics[0].file, "--set");
  EXPECT_EQ(diagnostics[0].key, "optim.base_lr");
  EXPECT_EQ(diagnostics[0].value, "\"fast\"");
  EXPECT_NE(diagnostics[0].rule.find("expected a float, found a string"), std::string::npos);
  EXPECT_NE(diagnostics[0].rule.find("(from --set 'optim.base_lr=fast')"), std::string::npos);
}

TEST(Overrides, RuleViolationsPointAtTheOverride) {
  LoadOptions options;
  options.overrides = {"batch.global=1000", "batch.micro=48"};
  const auto diagnostics = diagnostics_of(doc("model", "width = 8"), options);
  ASSERT_EQ(diagnostics.size(), 1u) << describe(diagnostics);
  EXPECT_EQ(diagnostics[0].file, "--set");
  EXPECT_EQ(diagnostics[0].key, "batch.global");
  EXPECT_NE(diagnostics[0].rule.find("(from --set 'batch.global=1000')"), std::string::npos);
}

TEST(Overrides, DiagnosticsFollowTheOrderOfTheOverrides) {
  LoadOptions options;
  options.overrides = {"train.threads=-1", "optim.lrr=1", "batch.micro=x", "nope"};
  const auto diagnostics = diagnostics_of(doc("model", "width = 8"), options);
  ASSERT_EQ(diagnostics.size(), 4u) << describe(diagnostics);
  EXPECT_EQ(diagnostics[0].key, "train.threads");
  EXPECT_EQ(diagnostics[1].key, "optim.lrr");
  EXPECT_EQ(diagnostics[2].key, "batch.micro");
  EXPECT_EQ(diagnostics[3].key, "");
}

TEST(Overrides, FileAndOverrideProblemsTogether) {
  LoadOptions options;
  options.overrides = {"optim.lrr=1"};
  const auto diagnostics = diagnostics_of(doc("optim", "momentum = 2"), options);
  ASSERT_EQ(diagnostics.size(), 2u) << describe(diagnostics);
  EXPECT_EQ(diagnostics[0].file, testing::kSource);  // file positions first
  EXPECT_EQ(diagnostics[1].file, "--set");
}

}  // namespace
}  // namespace batchlab::config
