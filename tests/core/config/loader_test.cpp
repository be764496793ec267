// The loader as a whole: every problem at once, resolution of derived defaults, files, tables.
#include "core/config/loader.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/core/config/config_test_util.h"

namespace batchlab::config {
namespace {

using testing::describe;
using testing::diagnostics_of;
using testing::doc;
using testing::parse_ok;

TEST(Loader, ReportsAllProblemsAtOnceWithPositions) {
  const auto diagnostics = diagnostics_of(R"(schema_version = 1
[optim]
name = "lars"
lrr = 0.1
momentum = "high"
[batch]
global = 1000
micro = 48
[schedule]
epochs = 10
)");
  ASSERT_EQ(diagnostics.size(), 3u) << describe(diagnostics);
  EXPECT_EQ(diagnostics[0].key, "optim.lrr");
  EXPECT_EQ(diagnostics[0].line, 4);
  EXPECT_EQ(diagnostics[0].column, 1);
  EXPECT_NE(diagnostics[0].rule.find("did you mean optim.base_lr?"), std::string::npos);
  EXPECT_EQ(diagnostics[1].key, "optim.momentum");
  EXPECT_EQ(diagnostics[1].line, 5);
  EXPECT_EQ(diagnostics[1].column, 12);
  EXPECT_NE(diagnostics[1].rule.find("expected a float, found a string"), std::string::npos);
  EXPECT_EQ(diagnostics[2].key, "batch.global");
  EXPECT_EQ(diagnostics[2].line, 7);
  EXPECT_EQ(diagnostics[2].column, 10);
  EXPECT_NE(diagnostics[2].rule.find("micro (48)"), std::string::npos);
  // The printed form is the one DESIGN.md fixes.
  EXPECT_EQ(diagnostics[1].to_string(),
            "test.toml:5:12: optim.momentum = \"high\": expected a float, found a string");
}

TEST(Loader, ErrorMessageListsEveryDiagnostic) {
  try {
    parse_experiment("schema_version = 1\n[optim]\nbase_lr = -1\neps = 0\n", "exp.toml");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("exp.toml:3:11: optim.base_lr = -1.0: must be > 0"), std::string::npos)
        << what;
    EXPECT_NE(what.find("exp.toml:4:7: optim.eps = 0.0: must be > 0"), std::string::npos) << what;
    EXPECT_NE(what.find("batch.global"), std::string::npos) << what;  // absent: default 0
  }
}

TEST(Loader, MinimalDocumentGivesStructDefaults) {
  const ExperimentConfig config = parse_ok(doc("model", "width = 32"));
  ExperimentConfig expected;
  expected.batch.global = 256;
  expected.schedule.epochs = 10.0;
  testing::expect_same_config(config, expected);
}

TEST(Loader, EpsAndGradClipFollowTheOptimizer) {
  const ExperimentConfig lamb = parse_ok(doc("optim", "name = \"lamb\""));
  EXPECT_EQ(lamb.optim.eps, 1e-6);
  EXPECT_EQ(lamb.optim.grad_clip, 1.0);
  const ExperimentConfig adam = parse_ok(doc("optim", "name = \"adam\""));
  EXPECT_EQ(adam.optim.eps, 1e-8);
  EXPECT_EQ(adam.optim.grad_clip, 0.0);
  // Given values win over the derived defaults.
  const ExperimentConfig explicit_lamb =
      parse_ok(doc("optim", "name = \"lamb\"\neps = 1e-8\ngrad_clip = 0"));
  EXPECT_EQ(explicit_lamb.optim.eps, 1e-8);
  EXPECT_EQ(explicit_lamb.optim.grad_clip, 0.0);
}

TEST(Loader, DerivedDefaultsSeeOverrides) {
  LoadOptions options;
  options.overrides = {"optim.name=lamb", "train.seed=7"};
  const ExperimentConfig config = parse_ok(doc("optim", "name = \"sgd\""), options);
  EXPECT_EQ(config.optim.eps, 1e-6);
  EXPECT_EQ(config.data.seed, 7);
}

TEST(Loader, DataSeedDefaultsToTrainSeed) {
  EXPECT_EQ(parse_ok(doc("train", "seed = 42")).data.seed, 42);
  EXPECT_EQ(parse_ok(doc("train", "seed = 42\n[data]\nseed = 3")).data.seed, 3);
}

TEST(Loader, NesterovOptimizerSetsFlag) {
  EXPECT_TRUE(parse_ok(doc("optim", "name = \"nesterov\"")).optim.nesterov);
  EXPECT_FALSE(parse_ok(doc("optim", "name = \"sgd\"")).optim.nesterov);
}

TEST(Loader, ParameterGroupsAsArrayOfTables) {
  const ExperimentConfig config = parse_ok(R"(schema_version = 1
[optim]
name = "lars"
[[optim.groups]]
match = "*.bias"
weight_decay = 0
adapt = false
[[optim.groups]]
match = "fc.*"
lr_scale = 10
[batch]
global = 256
[schedule]
epochs = 1
)");
  ASSERT_EQ(config.optim.groups.size(), 2u);
  EXPECT_EQ(config.optim.groups[0].match, "*.bias");
  EXPECT_EQ(config.optim.groups[0].weight_decay, 0.0);
  EXPECT_EQ(config.optim.groups[0].adapt, false);
  EXPECT_EQ(config.optim.groups[0].lr_scale, 1.0);
  EXPECT_EQ(config.optim.groups[1].match, "fc.*");
  EXPECT_FALSE(config.optim.groups[1].weight_decay.has_value());
  EXPECT_FALSE(config.optim.groups[1].adapt.has_value());
  EXPECT_EQ(config.optim.groups[1].lr_scale, 10.0);
}

TEST(Loader, TargetAsOneTableOrAnArray) {
  const auto one = parse_ok(doc("train", "target = { metric = \"test_acc\", value = 0.759 }"));
  ASSERT_EQ(one.train.targets.size(), 1u);
  EXPECT_EQ(one.train.targets[0].metric, "test_acc");
  EXPECT_EQ(one.train.targets[0].value, 0.759);
  const auto many = parse_ok(doc("train",
                                 "target = [{ metric = \"test_acc\", value = 0.9 }, { metric = "
                                 "\"train_loss\", value = 0.2 }]"));
  ASSERT_EQ(many.train.targets.size(), 2u);
  EXPECT_EQ(many.train.targets[1].metric, "train_loss");
}

TEST(Loader, MissingFileIsAnInputErrorNamingThePath) {
  const std::string path = "/nonexistent/dir/experiment.toml";
  try {
    load_experiment_file(path);
    FAIL() << "expected an InputError";
  } catch (const ConfigError&) {
    FAIL() << "a missing file is not a config problem";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(Loader, FileDiagnosticsCarryThePath) {
  const auto path = std::filesystem::temp_directory_path() / "batchlab_loader_test.toml";
  {
    std::ofstream out(path);
    out << "schema_version = 1\n[batch]\nglobal = 256\n[schedule]\nepochs = 0\n";
  }
  try {
    load_experiment_file(path.string());
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.diagnostics().size(), 1u);
    EXPECT_EQ(e.diagnostics()[0].file, path.string());
    EXPECT_EQ(e.diagnostics()[0].line, 5);
  }
  std::filesystem::remove(path);
}

TEST(Loader, TableInputIsNotModifiedByOverrides) {
  const std::string text = doc("optim", "base_lr = 0.1");
  toml::table table = toml::parse(std::string_view(text), std::string_view("sweep.toml"));
  LoadOptions options;
  options.overrides = {"optim.base_lr=0.5"};
  const ExperimentConfig config = parse_experiment(table, "sweep.toml", options);
  EXPECT_EQ(config.optim.base_lr, 0.5);
  EXPECT_EQ(table["optim"]["base_lr"].value<double>(), 0.1);
  // Positions survive for tables parsed from text.
  table.insert_or_assign("schema_version", 3);
  try {
    parse_experiment(table, "sweep.toml");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.diagnostics().size(), 1u);
    EXPECT_EQ(e.diagnostics()[0].file, "sweep.toml");
    EXPECT_EQ(e.diagnostics()[0].line, 0);  // a node built in code has no position
  }
}

}  // namespace
}  // namespace batchlab::config
