// Store tests: run lifecycle (plan, start, retry, resume, finish), rewrite-not-duplicate keys,
// delete_rows_after for resume, and foreign keys.
#include "results/store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "results/errors.h"
#include "tests/results/test_support.h"

namespace batchlab::results {
namespace {

using testing::RawDb;
using testing::TempDir;

RunRow planned_run(const std::string& id) {
  RunRow run;
  run.run_id = id;
  run.status = "planned";
  run.config_toml = "[model]\narch = \"resnet20\"\n";
  run.model = "resnet20";
  run.dataset = "cifar10";
  run.optimizer = "lars";
  run.global_batch = 8192;
  run.micro_batch = 256;
  run.accum_steps = 32;
  run.world_size = 1;
  run.base_lr = 0.1;
  run.peak_lr = 3.2;
  run.scaling = "linear";
  run.warmup_steps = 50;
  run.seed = 0;
  return run;
}

RunRow started_run(const std::string& id) {
  RunRow run;
  run.run_id = id;
  run.status = "running";
  run.host = "node1";
  run.device = "cpu";
  run.threads = 2;
  run.bn_group = 32;
  run.train_size = 50000;
  run.steps_per_epoch = 6;
  run.total_steps = 600;
  run.samples_dropped_per_epoch = 848;
  return run;
}

StepRow step_row(const std::string& run, std::int64_t step, double loss) {
  StepRow row;
  row.run_id = run;
  row.step = step;
  row.epoch = static_cast<double>(step) / 6.0;
  row.samples = step * 8192;
  row.wall_s = static_cast<double>(step) * 1.5;
  row.lr = 0.1 * static_cast<double>(step);
  row.train_loss = loss;
  row.grad_norm = 1.0;
  row.samples_per_s = 5000.0;
  return row;
}

TEST(Store, UpsertRunKeepsEveryColumn) {
  TempDir dir;
  Store store(dir.file("runs.db"));
  store.upsert_sweep({"s1", "bs", "[sweep]", std::nullopt});
  RunRow run = planned_run("r1");
  run.sweep_id = "s1";
  run.git_sha = "abc123";
  run.torch_version = "1.13.1";
  run.train_s = 12.5;
  run.last_step = 3;
  store.upsert_run(run);

  const auto got = store.get_run("r1");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->sweep_id, "s1");
  EXPECT_EQ(got->status, "planned");
  EXPECT_EQ(got->config_toml, run.config_toml);
  EXPECT_EQ(got->optimizer, "lars");
  EXPECT_EQ(got->global_batch, 8192);
  EXPECT_EQ(got->micro_batch, 256);
  EXPECT_EQ(got->accum_steps, 32);
  EXPECT_EQ(got->world_size, 1);
  EXPECT_EQ(got->base_lr, 0.1);
  EXPECT_EQ(got->peak_lr, 3.2);
  EXPECT_EQ(got->scaling, "linear");
  EXPECT_EQ(got->warmup_steps, 50);
  EXPECT_EQ(got->seed, 0);
  EXPECT_EQ(got->attempts, 0);
  EXPECT_EQ(got->git_sha, "abc123");
  EXPECT_EQ(got->torch_version, "1.13.1");
  EXPECT_EQ(got->train_s, 12.5);
  EXPECT_EQ(got->last_step, 3);
  EXPECT_FALSE(got->started_at.has_value());
  EXPECT_FALSE(got->finished_at.has_value());
  EXPECT_TRUE(store.run_exists("r1"));
  EXPECT_FALSE(store.run_exists("r2"));
  EXPECT_FALSE(store.get_run("r2").has_value());
  ASSERT_TRUE(store.get_sweep("s1").has_value());
  EXPECT_TRUE(store.get_sweep("s1")->created_at.has_value());
}

TEST(Store, LifecyclePlanStartFailRetryResumeFinish) {
  TempDir dir;
  Store store(dir.file("life.db"));
  store.upsert_run(planned_run("r1"));

  // First attempt: the job does not know planner fields; they must survive.
  RunRow start = started_run("r1");
  start.started_at = "2024-01-01T00:00:00.000Z";
  store.upsert_run(start);
  auto run = store.get_run("r1").value();
  EXPECT_EQ(run.status, "running");
  EXPECT_EQ(run.attempts, 1);
  EXPECT_EQ(run.model, "resnet20");
  EXPECT_EQ(run.peak_lr, 3.2);
  EXPECT_EQ(run.threads, 2);
  EXPECT_EQ(run.samples_dropped_per_epoch, 848);
  EXPECT_EQ(run.started_at, "2024-01-01T00:00:00.000Z");

  store.set_run_status("r1", "failed", std::string("segfault in worker"));
  run = store.get_run("r1").value();
  EXPECT_EQ(run.status, "failed");
  EXPECT_EQ(run.error, "segfault in worker");
  EXPECT_TRUE(run.finished_at.has_value());

  // Re-planning the sweep must not forget the failure.
  store.upsert_run(planned_run("r1"));
  EXPECT_EQ(store.get_run("r1")->status, "failed");
  EXPECT_EQ(store.get_run("r1")->attempts, 1);

  // Retry: a second attempt; error and finished_at cleared, first started_at kept.
  RunRow retry = started_run("r1");
  retry.started_at = "2024-01-02T00:00:00.000Z";
  store.upsert_run(retry);
  run = store.get_run("r1").value();
  EXPECT_EQ(run.attempts, 2);
  EXPECT_EQ(run.started_at, "2024-01-01T00:00:00.000Z");
  EXPECT_FALSE(run.error.has_value());
  EXPECT_FALSE(run.finished_at.has_value());

  store.set_run_status("r1", "preempted");
  store.upsert_run(started_run("r1"));  // resume
  store.set_run_progress("r1", 600, 321.5);
  store.set_run_status("r1", "done", std::nullopt, std::string("2024-01-03T00:00:00.000Z"));
  run = store.get_run("r1").value();
  EXPECT_EQ(run.status, "done");
  EXPECT_EQ(run.attempts, 3);
  EXPECT_EQ(run.last_step, 600);
  EXPECT_EQ(run.train_s, 321.5);
  EXPECT_EQ(run.finished_at, "2024-01-03T00:00:00.000Z");
  EXPECT_EQ(run.started_at, "2024-01-01T00:00:00.000Z");
}

TEST(Store, GivenAttemptsAreStoredAsIsForIdempotentIngest) {
  TempDir dir;
  Store store(dir.file("ingest.db"));
  RunRow run = started_run("r1");
  run.attempts = 4;
  store.upsert_run(run);
  store.upsert_run(run);
  EXPECT_EQ(store.get_run("r1")->attempts, 4);
}

TEST(Store, StartingANewRunSetsStartedAt) {
  TempDir dir;
  Store store(dir.file("start.db"));
  store.upsert_run(started_run("r1"));
  const auto run = store.get_run("r1").value();
  EXPECT_EQ(run.attempts, 1);
  ASSERT_TRUE(run.started_at.has_value());
  EXPECT_THAT(
      *run.started_at,
      ::testing::MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z"));
}

TEST(Store, UnknownStatusAndMissingRunAreErrors) {
  TempDir dir;
  Store store(dir.file("bad.db"));
  RunRow run = planned_run("r1");
  run.status = "finished";
  EXPECT_THROW(store.upsert_run(run), StoreError);
  EXPECT_THROW(store.set_run_status("nope", "done"), StoreError);
  EXPECT_THROW(store.set_run_progress("nope", 1, 1.0), StoreError);
  store.upsert_run(planned_run("r1"));
  EXPECT_THROW(store.set_run_status("r1", "finished"), StoreError);
}

TEST(Store, TheSchedulerJobIsKeptByWritesThatDoNotKnowIt) {
  TempDir dir;
  Store store(dir.file("jobs.db"));
  store.upsert_run(planned_run("r1"));
  EXPECT_FALSE(store.get_run("r1")->scheduler_job.has_value());
  store.set_scheduler_job("r1", "41_0");
  // The run's own records (an ingest) know nothing of Slurm: the job stays.
  RunRow running = planned_run("r1");
  running.status = "running";
  store.upsert_run(running);
  EXPECT_EQ(store.get_run("r1")->scheduler_job, "41_0");
  store.set_scheduler_job("r1", "57");  // submitted again
  EXPECT_EQ(store.get_run("r1")->scheduler_job, "57");
  EXPECT_THROW(store.set_scheduler_job("nope", "1"), StoreError);
}

// runs.started_over (schema v6): set by the attempt that started over because no checkpoint could
// be read; kept by later attempts and by the final status, since the recorded series begins there.
TEST(Store, StartedOverIsKeptOnceAnAttemptStartedOver) {
  TempDir dir;
  Store store(dir.file("over.db"));
  RunRow attempt = planned_run("r1");
  attempt.status = "running";
  store.upsert_run(attempt);
  EXPECT_FALSE(store.get_run("r1")->started_over.has_value());
  attempt.started_over = "no checkpoint of this run could be read (2 files in d, all unreadable)";
  store.upsert_run(attempt);
  store.set_run_status("r1", "preempted", "stopped by a signal");
  attempt.started_over.reset();  // the next attempt resumed from a checkpoint it wrote since
  store.upsert_run(attempt);
  store.set_run_status("r1", "done");
  const auto row = store.get_run("r1");
  EXPECT_EQ(row->attempts, 3);
  EXPECT_EQ(row->started_over,
            "no checkpoint of this run could be read (2 files in d, all unreadable)");
}

TEST(Store, RunOfUnknownSweepViolatesForeignKey) {
  TempDir dir;
  Store store(dir.file("fk.db"));
  RunRow run = planned_run("r1");
  run.sweep_id = "no-such-sweep";
  EXPECT_THROW(store.upsert_run(run), StoreError);
}

TEST(Store, SameStepWrittenTwiceKeepsOneRowWithNewerValues) {
  TempDir dir;
  const std::string path = dir.file("rewrite.db");
  Store store(path);
  store.upsert_run(started_run("r1"));
  store.write_steps({step_row("r1", 1, 2.5), step_row("r1", 2, 2.4)});
  store.write_steps({step_row("r1", 2, 1.9)});

  EvalRow eval;
  eval.run_id = "r1";
  eval.step = 2;
  eval.train_loss = 1.0;
  eval.test_loss = 1.5;
  eval.train_acc = 0.9;
  eval.test_acc = 0.8;
  store.write_evals({eval});
  eval.test_acc = 0.85;
  eval.eval_s = 3.0;
  store.write_evals({eval});

  const auto steps = store.read_steps("r1");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[1].step, 2);
  EXPECT_EQ(steps[1].train_loss, 1.9);
  const auto evals = store.read_evals("r1");
  ASSERT_EQ(evals.size(), 1u);
  EXPECT_EQ(evals[0].test_acc, 0.85);
  EXPECT_EQ(evals[0].eval_s, 3.0);
  // Gaps follow DESIGN.md's definitions when the writer leaves them out.
  EXPECT_DOUBLE_EQ(evals[0].gap_loss.value(), 0.5);
  EXPECT_DOUBLE_EQ(evals[0].gap_acc.value(), 0.9 - 0.85);

  RawDb db(path);
  EXPECT_EQ(db.integer("SELECT count(*) FROM steps"), 2);
  EXPECT_EQ(db.integer("SELECT last_step FROM runs WHERE run_id = 'r1'"), 2);
}

TEST(Store, WriteBatchIsAtomic) {
  TempDir dir;
  const std::string path = dir.file("atomic.db");
  Store store(path);
  store.upsert_run(started_run("r1"));
  RowBatch batch;
  batch.steps = {step_row("r1", 1, 1.0), step_row("r1", 2, 1.0)};
  batch.evals.push_back(EvalRow{"r1", 2, 0.3, 16384, 3.0, {}, {}, 1.0, 0.5, {}, {}, 0.1, {}, {}});
  batch.steps.push_back(step_row("unknown-run", 3, 1.0));  // foreign key violation
  try {
    store.write_batch(batch);
    FAIL() << "foreign key violation expected";
  } catch (const StoreError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("unknown-run"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("FOREIGN KEY"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr(path));
  }
  EXPECT_TRUE(store.read_steps("r1").empty());
  EXPECT_TRUE(store.read_evals("r1").empty());
  // The Store stays usable after a failed batch.
  batch.steps.pop_back();
  store.write_batch(batch);
  EXPECT_EQ(store.read_steps("r1").size(), 2u);
  EXPECT_EQ(store.read_evals("r1").size(), 1u);
}

TEST(Store, DeleteRowsAfterRemovesEveryPerStepTableForResume) {
  TempDir dir;
  const std::string path = dir.file("resume.db");
  Store store(path);
  store.upsert_run(started_run("r1"));
  store.upsert_run(started_run("r2"));
  RowBatch batch;
  for (std::int64_t s = 1; s <= 10; ++s) {
    batch.steps.push_back(step_row("r1", s, 1.0));
    batch.steps.push_back(step_row("r2", s, 1.0));
    batch.evals.push_back(EvalRow{"r1", s, 0.0, 0, 0.0, {}, {}, {}, 0.5, {}, {}, {}, {}, {}});
    batch.layer_stats.push_back(LayerStatRow{"r1", s, "fc.weight", 10, 1.0, 0.1, 10.0, 1.0, 0.01});
    batch.layer_stats.push_back(LayerStatRow{"r1", s, "fc.bias", 10, 1.0, 0.1, 10.0, 1.0, 0.01});
    batch.noise.push_back(NoiseRow{"r1", s, 256, 8192, 0.5, 10.0, 20.0});
  }
  batch.milestones.push_back(MilestoneRow{"r1", "test_acc", 0.5, 3, 0.5, 24576, 4.5});
  batch.milestones.push_back(MilestoneRow{"r1", "test_acc", 0.7, 8, 1.3, 65536, 12.0});
  store.write_batch(batch);
  EXPECT_EQ(store.get_run("r1")->last_step, 10);

  store.delete_rows_after("r1", 5);
  EXPECT_EQ(store.read_steps("r1").size(), 5u);
  EXPECT_EQ(store.read_steps("r1").back().step, 5);
  EXPECT_EQ(store.read_evals("r1").size(), 5u);
  EXPECT_EQ(store.read_layer_stats("r1").size(), 10u);
  EXPECT_EQ(store.read_noise("r1").size(), 5u);
  ASSERT_EQ(store.read_milestones("r1").size(), 1u);
  EXPECT_EQ(store.read_milestones("r1")[0].target, 0.5);
  EXPECT_EQ(store.get_run("r1")->last_step, 5);
  EXPECT_EQ(store.read_steps("r2").size(), 10u);  // other runs untouched
  EXPECT_EQ(store.get_run("r2")->last_step, 10);

  // The resumed job rewrites steps 6.. from the checkpoint: no duplicates.
  store.write_steps({step_row("r1", 6, 0.5), step_row("r1", 7, 0.4)});
  EXPECT_EQ(store.read_steps("r1").size(), 7u);
  EXPECT_EQ(store.get_run("r1")->last_step, 7);

  store.delete_rows_after("r1", -1);  // retry from scratch
  EXPECT_TRUE(store.read_steps("r1").empty());
  EXPECT_TRUE(store.read_layer_stats("r1").empty());
  EXPECT_FALSE(store.get_run("r1")->last_step.has_value());
}

TEST(Store, MilestoneKeepsTheEarliestStep) {
  TempDir dir;
  Store store(dir.file("milestone.db"));
  store.upsert_run(started_run("r1"));
  store.write_milestones({MilestoneRow{"r1", "test_acc", 0.9, 40, 6.0, 1000, 50.0}});
  store.write_milestones({MilestoneRow{"r1", "test_acc", 0.9, 55, 9.0, 2000, 70.0}});
  auto rows = store.read_milestones("r1");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].step, 40);
  store.write_milestones({MilestoneRow{"r1", "test_acc", 0.9, 30, 5.0, 900, 45.0}});
  rows = store.read_milestones("r1");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].step, 30);
  EXPECT_EQ(rows[0].wall_s, 45.0);
}

TEST(Store, ListRunsBySweep) {
  TempDir dir;
  Store store(dir.file("list.db"));
  store.upsert_sweep({"s1", "a", std::nullopt, std::nullopt});
  store.upsert_sweep({"s2", "b", std::nullopt, std::nullopt});
  for (const char* id : {"r3", "r1", "r2"}) {
    RunRow run = planned_run(id);
    run.sweep_id = std::string(id) == "r2" ? "s2" : "s1";
    store.upsert_run(run);
  }
  const auto all = store.list_runs();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].run_id, "r1");
  const auto s1 = store.list_runs(std::string("s1"));
  ASSERT_EQ(s1.size(), 2u);
  EXPECT_EQ(s1[1].run_id, "r3");
}

TEST(Store, PragmasAreSetOnOpen) {
  TempDir dir;
  const std::string path = dir.file("nested/folder/pragmas.db");  // parent folders created
  Store store(path);
  store.upsert_run(started_run("r1"));
  RawDb db(path);
  EXPECT_EQ(db.value("PRAGMA journal_mode"), "wal");
  // foreign_keys and synchronous are per connection: check Store's through their effect.
  EXPECT_THROW(store.write_steps({step_row("ghost", 1, 1.0)}), StoreError);
}

}  // namespace
}  // namespace batchlab::results
