// Expansion: grid x zip x exclude x when, seeds first, duplicates collapsing to one run id, derived
// values, and every invalid job reported at once with its coordinates and the spec position.
#include "sweeps/expand.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/config/loader.h"
#include "tests/sweeps/sweep_test_util.h"

namespace batchlab::sweeps {
namespace {

using testing::config_error;
using testing::SweepFiles;

const Job* find_job(const Plan& plan, const std::string& coords) {
  for (const auto& job : plan.jobs) {
    if (plan.describe(job) == coords) return &job;
  }
  return nullptr;
}

config::ExperimentConfig config_of(const Job& job) {
  return config::parse_experiment(job.config_toml, "job.toml");
}

TEST(Expand, GridTimesZipTimesExcludeTimesWhenWithSeedsFirst) {
  SweepFiles files(R"(schema_version = 1
[sweep]
name = "mix"
experiment = "base.toml"
seeds = [0, 1]
[grid]
"batch.global" = [64, 128]
[[zip]]
"optim.name" = ["sgd", "lamb"]
"optim.scaling" = ["linear", "sqrt"]
[[exclude]]
"optim.name" = "lamb"
"batch.global" = 64
[when."optim.name=lamb"]
"optim.base_lr" = 0.004
)");
  const Plan plan = files.plan();
  EXPECT_EQ(plan.combinations, 2u * 2u * 2u);
  EXPECT_EQ(plan.excluded, 2u);
  EXPECT_EQ(plan.collapsed, 0u);
  ASSERT_EQ(plan.jobs.size(), 6u);
  EXPECT_EQ(plan.coordinate_keys, (std::vector<std::string>{"train.seed", "batch.global",
                                                            "optim.name", "optim.scaling"}));
  // Seed 0 of every batch size and optimizer before any seed 1.
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(plan.jobs[i].seed, 0) << i;
  for (size_t i = 3; i < 6; ++i) EXPECT_EQ(plan.jobs[i].seed, 1) << i;
  EXPECT_EQ(plan.describe(plan.jobs[0]),
            "train.seed=0 batch.global=64 optim.name=sgd optim.scaling=linear");
  EXPECT_EQ(find_job(plan, "train.seed=0 batch.global=64 optim.name=lamb optim.scaling=sqrt"),
            nullptr);

  const Job* lamb =
      find_job(plan, "train.seed=1 batch.global=128 optim.name=lamb optim.scaling=sqrt");
  ASSERT_NE(lamb, nullptr);
  const auto lamb_cfg = config_of(*lamb);
  EXPECT_EQ(lamb_cfg.optim.name, "lamb");
  EXPECT_DOUBLE_EQ(lamb_cfg.optim.base_lr, 0.004);
  EXPECT_EQ(lamb_cfg.train.seed, 1);
  EXPECT_NEAR(lamb->derived.peak_lr, 0.004 * std::sqrt(128.0 / 256.0), 1e-15);

  const Job* sgd =
      find_job(plan, "train.seed=0 batch.global=128 optim.name=sgd optim.scaling=linear");
  ASSERT_NE(sgd, nullptr);
  EXPECT_DOUBLE_EQ(config_of(*sgd).optim.base_lr, 0.5);  // the when-clause did not touch sgd
  EXPECT_NEAR(sgd->derived.peak_lr, 0.5 * 128.0 / 256.0, 1e-15);
  // Every run id distinct and equal to what `batchlab train` computes from the job's config.
  for (const auto& job : plan.jobs) EXPECT_EQ(job.run_id, config::run_id(config_of(job)));
}

TEST(Expand, DerivedValuesFollowTheTrainersRules) {
  SweepFiles files(R"(schema_version = 1
[sweep]
name = "derived"
experiment = "base.toml"
[grid]
"batch.global" = [64, 256]
)");
  const Plan plan = files.plan();
  ASSERT_EQ(plan.jobs.size(), 2u);
  const auto& d64 = plan.jobs[0].derived;
  EXPECT_EQ(d64.train_size, 1000);
  EXPECT_EQ(d64.micro_batch, 32);
  EXPECT_EQ(d64.accum_steps, 2);
  EXPECT_EQ(d64.steps_per_epoch, 15);    // floor(1000 / 64)
  EXPECT_EQ(d64.dropped_per_epoch, 40);  // 1000 - 15 * 64
  EXPECT_EQ(d64.warmup_steps, 15);       // warmup_epochs = 1
  EXPECT_EQ(d64.total_steps, 30);        // epochs = 2
  EXPECT_NEAR(d64.peak_lr, 0.5 * std::sqrt(64.0 / 256.0), 1e-15);
  const auto& d256 = plan.jobs[1].derived;
  EXPECT_EQ(d256.accum_steps, 8);
  EXPECT_EQ(d256.steps_per_epoch, 3);
  EXPECT_EQ(d256.dropped_per_epoch, 232);
  EXPECT_DOUBLE_EQ(d256.peak_lr, 0.5);
}

TEST(Expand, CombinationsWithTheSameCanonicalConfigCollapse) {
  // "1h", "60m" and "3600s" are one budget: one run id, not three runs.
  std::string base = testing::kBase;
  base.replace(base.find("epochs = 2\n"), 11, "");
  base.replace(base.find("warmup_epochs = 1\n"), 18, "warmup_fraction = 0.1\n");
  SweepFiles files(R"(schema_version = 1
[sweep]
name = "dup"
experiment = "base.toml"
seeds = [3]
[grid]
"schedule.budget" = ["1h", "60m", "3600s", "2h"]
)",
                   base);
  const Plan plan = files.plan();
  EXPECT_EQ(plan.combinations, 4u);
  EXPECT_EQ(plan.collapsed, 2u);
  ASSERT_EQ(plan.jobs.size(), 2u);
  EXPECT_EQ(plan.jobs[0].coordinates[1], "1h");
  EXPECT_EQ(plan.jobs[0].duplicates, 2u);
  EXPECT_EQ(plan.jobs[1].coordinates[1], "2h");
  EXPECT_EQ(plan.jobs[0].derived.total_steps, 0);  // budgeted: no step count
}

TEST(Expand, SeveralConditionsMustAllHoldAndLaterClausesWin) {
  SweepFiles files(R"(schema_version = 1
[sweep]
name = "when"
experiment = "base.toml"
[grid]
"optim.name" = ["sgd", "lars"]
"batch.global" = [64, 128]
[when."optim.name=lars"]
"optim.base_lr" = 2.0
"optim.trust_coefficient" = 0.002
[when."optim.name=lars,batch.global=128"]
"optim.base_lr" = 3.0
)");
  const Plan plan = files.plan();
  ASSERT_EQ(plan.jobs.size(), 4u);
  auto lr = [&](const char* coords) {
    const Job* job = find_job(plan, coords);
    EXPECT_NE(job, nullptr) << coords;
    return job ? config_of(*job).optim.base_lr : -1.0;
  };
  EXPECT_DOUBLE_EQ(lr("optim.name=sgd batch.global=64"), 0.5);
  EXPECT_DOUBLE_EQ(lr("optim.name=sgd batch.global=128"), 0.5);
  EXPECT_DOUBLE_EQ(lr("optim.name=lars batch.global=64"), 2.0);
  EXPECT_DOUBLE_EQ(lr("optim.name=lars batch.global=128"), 3.0);
  EXPECT_DOUBLE_EQ(
      config_of(*find_job(plan, "optim.name=lars batch.global=128")).optim.trust_coefficient,
      0.002);
}

TEST(Expand, AnAxisOverOneWarmupKeyReplacesTheBasesOther) {
  // The base says warmup_epochs = 1 and epochs = 2; the spec sweeps warmup_steps and sets steps.
  SweepFiles files(R"(schema_version = 1
[sweep]
name = "warmup"
experiment = "base.toml"
[set]
"schedule.steps" = 40
[grid]
"schedule.warmup_steps" = [0, 10]
)");
  const Plan plan = files.plan();
  ASSERT_EQ(plan.jobs.size(), 2u);
  for (const auto& job : plan.jobs) {
    const auto config = config_of(job);
    EXPECT_FALSE(config.schedule.warmup_epochs.has_value());
    EXPECT_FALSE(config.schedule.epochs.has_value());
    EXPECT_EQ(config.schedule.steps, 40);
  }
  EXPECT_EQ(config_of(plan.jobs[1]).schedule.warmup_steps, 10);
}

TEST(Expand, AWhenClauseReplacesTheBasesWarmupOnlyForItsJobs) {
  SweepFiles files(R"(schema_version = 1
[sweep]
name = "warmup"
experiment = "base.toml"
[grid]
"optim.name" = ["sgd", "lars"]
[when."optim.name=lars"]
"schedule.warmup_steps" = 7
)");
  const Plan plan = files.plan();
  ASSERT_EQ(plan.jobs.size(), 2u);
  const auto sgd = config_of(*find_job(plan, "optim.name=sgd"));
  EXPECT_EQ(sgd.schedule.warmup_epochs, 1.0);  // the base's, untouched
  EXPECT_FALSE(sgd.schedule.warmup_steps.has_value());
  const auto lars = config_of(*find_job(plan, "optim.name=lars"));
  EXPECT_EQ(lars.schedule.warmup_steps, 7);
  EXPECT_FALSE(lars.schedule.warmup_epochs.has_value());
}

TEST(Expand, TwoWarmupKeysFromTheSpecStillConflict) {
  SweepFiles files(R"(schema_version = 1
[sweep]
name = "warmup"
experiment = "base.toml"
[grid]
"schedule.warmup_steps" = [0, 10]
"optim.name" = ["sgd", "lars"]
[when."optim.name=lars"]
"schedule.warmup_fraction" = 0.1
)");
  const std::string error = config_error([&] { files.plan(); });
  EXPECT_NE(error.find("set at most one of"), std::string::npos) << error;
  EXPECT_NE(error.find("in 2 of 4 jobs"), std::string::npos) << error;
  EXPECT_EQ(error.find("also set: schedule.warmup_epochs"), std::string::npos) << error;
}

TEST(Expand, SetAndNestedTablesApplyToEveryJob) {
  SweepFiles files(R"(schema_version = 1
[sweep]
name = "nested"
experiment = "base.toml"
[set]
data.train_size = 640
[grid.optim]
name = ["sgd", "adamw"]
)");
  const Plan plan = files.plan();
  ASSERT_EQ(plan.jobs.size(), 2u);
  EXPECT_EQ(plan.coordinate_keys, std::vector<std::string>{"optim.name"});
  for (const auto& job : plan.jobs) {
    EXPECT_EQ(config_of(job).data.train_size, 640);
    EXPECT_EQ(job.derived.steps_per_epoch, 10);
  }
  EXPECT_EQ(plan.jobs[1].optimizer, "adamw");
}

TEST(Expand, EveryInvalidJobIsReportedAtOnceWithItsCoordinates) {
  SweepFiles files(R"(schema_version = 1
[sweep]
name = "bad"
experiment = "base.toml"
seeds = [0, 1]
[grid]
"batch.global" = [64, 100, 2048]
"optim.name" = ["sgd", "lamb"]
[when."optim.name=lamb"]
"optim.momentum" = 1.5
)");
  const std::string message = config_error([&] { files.plan(); });
  // 100 is not 32 x a whole accumulation: in 4 jobs (2 seeds x 2 optimizers), at the grid value.
  EXPECT_NE(message.find("spec.toml:7:"), std::string::npos) << message;
  EXPECT_NE(message.find("batch.global = 100"), std::string::npos) << message;
  EXPECT_NE(message.find("in 4 of 12 jobs"), std::string::npos) << message;
  EXPECT_NE(message.find("train.seed=0 batch.global=100 optim.name=sgd"), std::string::npos)
      << message;
  // 2048 is more than the 1000 training samples.
  EXPECT_NE(message.find("batch.global = 2048"), std::string::npos) << message;
  EXPECT_NE(message.find("larger than the training set (1000 examples)"), std::string::npos)
      << message;
  // The when-clause's value, located in the spec (line 10).
  EXPECT_NE(message.find("spec.toml:10:"), std::string::npos) << message;
  EXPECT_NE(message.find("optim.momentum = 1.5"), std::string::npos) << message;
}

TEST(Expand, ProblemsOfTheBaseArePlacedInTheBaseFile) {
  std::string base = testing::kBase;
  base += "warmup = 3\n";  // line 23, in [train]
  SweepFiles files(R"(schema_version = 1
[sweep]
name = "base"
experiment = "base.toml"
[grid]
"batch.global" = [64, 128]
)",
                   base);
  const std::string message = config_error([&] { files.plan(); });
  EXPECT_NE(message.find("base.toml:23:1: train.warmup"), std::string::npos) << message;
  EXPECT_NE(message.find("in 2 of 2 jobs"), std::string::npos) << message;
}

TEST(Expand, ManyJobsExpandInParallelInOrder) {
  SweepFiles files(R"(schema_version = 1
[sweep]
name = "many"
experiment = "base.toml"
seeds = [0, 1, 2, 3]
[grid]
"optim.base_lr" = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
"optim.momentum" = [0.0, 0.5, 0.8, 0.9, 0.95]
"optim.weight_decay" = [0.0, 1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 5e-2, 1e-1, 0.2, 0.3]
)");
  auto options = testing::plan_options();
  options.threads = 1;
  const Plan serial = expand(files.spec(), options);
  options.threads = 4;
  const Plan parallel = expand(files.spec(), options);
  ASSERT_EQ(serial.jobs.size(), 2000u);
  ASSERT_EQ(parallel.jobs.size(), serial.jobs.size());
  for (size_t i = 0; i < serial.jobs.size(); ++i) {
    ASSERT_EQ(parallel.jobs[i].run_id, serial.jobs[i].run_id) << i;
  }
}

TEST(Expand, SeedsDerivedFromTheFirstSeedEqualFullParses) {
  // data.seed follows train.seed unless pinned; a when-clause and an exclusion on other keys.
  const std::string body = R"(schema_version = 1
[sweep]
name = "seeds"
experiment = "base.toml"
seeds = [0, 7, 3]
[grid]
"batch.global" = [64, 128]
"optim.name" = ["sgd", "lamb"]
[[exclude]]
"optim.name" = "lamb"
"batch.global" = 64
[when."optim.name=lamb"]
"optim.base_lr" = 0.004
)";
  for (const std::string pin : {"", "data.seed = 5\n"}) {
    std::string spec = body;
    if (!pin.empty()) spec += "[set]\n" + pin;
    SweepFiles files(spec);
    auto options = testing::plan_options();
    options.reuse_across_seeds = false;
    const Plan full = expand(files.spec(), options);
    options.reuse_across_seeds = true;
    const Plan reused = expand(files.spec(), options);
    ASSERT_EQ(full.jobs.size(), 9u);
    ASSERT_EQ(reused.jobs.size(), full.jobs.size());
    EXPECT_EQ(reused.excluded, full.excluded);
    for (size_t i = 0; i < full.jobs.size(); ++i) {
      EXPECT_EQ(reused.jobs[i].config_toml, full.jobs[i].config_toml) << i;
      EXPECT_EQ(reused.jobs[i].run_id, full.jobs[i].run_id) << i;
      EXPECT_EQ(reused.describe(reused.jobs[i]), full.describe(full.jobs[i])) << i;
    }
    EXPECT_EQ(config_of(full.jobs[8]).data.seed, pin.empty() ? 3 : 5);
  }
}

TEST(Expand, AnExclusionOnTheSeedIsHonoured) {
  SweepFiles files(R"(schema_version = 1
[sweep]
name = "seedx"
experiment = "base.toml"
seeds = [0, 1]
[grid]
"batch.global" = [64, 128]
[[exclude]]
"train.seed" = 1
"batch.global" = 128
[when."train.seed=1"]
"optim.base_lr" = 0.2
)");
  const Plan plan = files.plan();
  ASSERT_EQ(plan.jobs.size(), 3u);
  EXPECT_EQ(plan.describe(plan.jobs[2]), "train.seed=1 batch.global=64");
  EXPECT_DOUBLE_EQ(config_of(plan.jobs[2]).optim.base_lr, 0.2);
  EXPECT_DOUBLE_EQ(config_of(plan.jobs[0]).optim.base_lr, 0.5);
}

}  // namespace
}  // namespace batchlab::sweeps
