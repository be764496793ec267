// Ingest tests: a job's own records file folds into a sweep database idempotently (rows replaced,
// never duplicated), the planner's columns survive, a resumed or retried job's shorter series wins,
// and the helpers for ended jobs (finalize_record) and other hosts (snapshot_database) work.
#include "results/ingest.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "results/errors.h"
#include "tests/results/test_support.h"

namespace batchlab::results {
namespace {

using testing::RawDb;
using testing::TempDir;

// What `batchlab train --db records.db` leaves behind: one run with `steps` step rows, an eval
// every 4 steps, a milestone, optionally a NaN loss at the last step.
void write_job(const std::string& path, const std::string& run_id, std::int64_t steps,
               const std::string& final_status = "done", bool nan_at_end = false) {
  Store store(path);
  RunRow run;
  run.run_id = run_id;
  run.status = "running";
  run.config_toml = "schema_version = 1\n";
  run.optimizer = "lars";
  run.global_batch = 512;
  run.peak_lr = 0.4;
  run.host = "node7";
  store.upsert_run(run);
  store.delete_rows_after(run_id, -1);
  RowBatch batch;
  for (std::int64_t s = 0; s < steps; ++s) {
    StepRow row;
    row.run_id = run_id;
    row.step = s;
    row.samples = (s + 1) * 512;
    row.train_loss = nan_at_end && s == steps - 1 ? std::numeric_limits<double>::quiet_NaN()
                                                  : 2.0 / static_cast<double>(s + 1);
    batch.steps.push_back(row);
    if ((s + 1) % 4 == 0) {
      EvalRow eval;
      eval.run_id = run_id;
      eval.step = s + 1;
      eval.train_acc = 0.5;
      eval.test_acc = 0.4;
      batch.evals.push_back(eval);
    }
  }
  MilestoneRow m;
  m.run_id = run_id;
  m.metric = "test_acc";
  m.target = 0.4;
  m.step = 4;
  batch.milestones.push_back(m);
  store.write_batch(batch);
  if (final_status != "running") {
    store.set_run_progress(run_id, steps, 1.5);
    store.set_run_status(run_id, final_status,
                         final_status == "done" ? std::nullopt : std::optional<std::string>("why"));
  }
}

void plan_run(const std::string& sweep_db, const std::string& run_id) {
  Store store(sweep_db);
  store.upsert_sweep(SweepRow{"demo", "demo", std::string("[sweep]"), std::nullopt});
  RunRow run;
  run.run_id = run_id;
  run.sweep_id = "demo";
  run.status = "planned";
  run.peak_lr = 0.4;
  run.warmup_steps = 7;  // the job does not record it in this test: the planned value must stay
  run.seed = 3;
  store.upsert_run(run);
}

long long count(const std::string& db, const std::string& sql) { return RawDb(db).integer(sql); }

TEST(Ingest, CopiesEveryRowAndKeepsThePlannersColumns) {
  TempDir dir;
  const auto job = dir.file("runs/a/records.db");
  const auto sweep = dir.file("sweep.db");
  write_job(job, "a", 10);
  plan_run(sweep, "a");
  Ingester ingester(sweep);
  auto runs = ingester.ingest(job);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, "done");
  EXPECT_EQ(runs[0].rows, 10 + 2 + 1);
  EXPECT_EQ(count(sweep, "SELECT count(*) FROM steps WHERE run_id = 'a'"), 10);
  EXPECT_EQ(count(sweep, "SELECT count(*) FROM evals WHERE run_id = 'a'"), 2);
  EXPECT_EQ(count(sweep, "SELECT count(*) FROM milestones WHERE run_id = 'a'"), 1);
  RawDb raw(sweep);
  auto row = raw.rows("SELECT sweep_id, status, warmup_steps, seed, host, last_step FROM runs");
  ASSERT_EQ(row.size(), 1u);
  EXPECT_EQ(row[0][0], "demo");
  EXPECT_EQ(row[0][1], "done");
  EXPECT_EQ(row[0][2], "7");
  EXPECT_EQ(row[0][3], "3");
  EXPECT_EQ(row[0][4], "node7");
  EXPECT_EQ(row[0][5], "10");
}

TEST(Ingest, IsIdempotentAndFollowsAShorterRetry) {
  TempDir dir;
  const auto job = dir.file("records.db");
  const auto sweep = dir.file("sweep.db");
  write_job(job, "a", 12, "running");
  Ingester ingester(sweep);
  ingester.ingest(job);
  ingester.ingest(job);
  EXPECT_EQ(count(sweep, "SELECT count(*) FROM steps"), 12);
  EXPECT_EQ(count(sweep,
                  "SELECT count(*) FROM (SELECT run_id, step FROM steps GROUP BY 1, 2 "
                  "HAVING count(*) > 1)"),
            0);
  // A retry from scratch rewrites the records file with fewer rows so far.
  write_job(job, "a", 5, "running");
  ingester.ingest(job);
  EXPECT_EQ(count(sweep, "SELECT count(*) FROM steps"), 5);
  EXPECT_EQ(count(sweep, "SELECT max(step) FROM steps"), 4);
  EXPECT_EQ(count(sweep, "SELECT count(*) FROM evals"), 1);
  EXPECT_EQ(RawDb(sweep).value("SELECT status FROM runs"), "running");
}

// Schema v3: the validation metrics and a `stopped` status travel from the job to the sweep.
TEST(Ingest, CarriesValidationMetricsAndStoppedStatus) {
  TempDir dir;
  const auto job = dir.file("records.db");
  const auto sweep = dir.file("sweep.db");
  {
    Store store(job);
    RunRow run;
    run.run_id = "a";
    run.status = "running";
    store.upsert_run(run);
    EvalRow eval;
    eval.run_id = "a";
    eval.step = 3;
    eval.val_loss = 0.5;
    eval.val_acc = 0.875;
    store.write_evals({eval});
    store.set_run_status("a", run_status::kStopped, std::string("pruned at step 3"));
  }
  Ingester ingester(sweep);
  auto runs = ingester.ingest(job);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, "stopped");
  EXPECT_EQ(runs[0].error, "pruned at step 3");
  Store store(sweep);
  const auto evals = store.read_evals("a");
  ASSERT_EQ(evals.size(), 1u);
  EXPECT_EQ(evals[0].val_loss, 0.5);
  EXPECT_EQ(evals[0].val_acc, 0.875);
}

TEST(Ingest, AttemptsComeFromTheCoordinatorWhenGiven) {
  TempDir dir;
  const auto job = dir.file("records.db");
  const auto sweep = dir.file("sweep.db");
  write_job(job, "a", 3);
  Ingester ingester(sweep);
  IngestOptions options;
  options.attempts = 4;
  ingester.ingest(job, options);
  EXPECT_EQ(count(sweep, "SELECT attempts FROM runs"), 4);
  ingester.ingest(job);  // no count given: the larger of the two files' counts stays
  EXPECT_EQ(count(sweep, "SELECT attempts FROM runs"), 4);
}

TEST(Ingest, RunRowOnlyUpdatesProgressWithoutCopyingSeries) {
  TempDir dir;
  const auto job = dir.file("records.db");
  const auto sweep = dir.file("sweep.db");
  write_job(job, "a", 6, "running");
  Ingester ingester(sweep);
  IngestOptions options;
  options.series = false;
  auto run = ingester.ingest_run(job, "a", options);
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->status, "running");
  EXPECT_EQ(run->last_step, 5);
  EXPECT_EQ(count(sweep, "SELECT count(*) FROM steps"), 0);
  EXPECT_EQ(count(sweep, "SELECT last_step FROM runs"), 5);
  EXPECT_FALSE(ingester.ingest_run(job, "not-there").has_value());
}

TEST(Ingest, NonFiniteValuesSurvive) {
  TempDir dir;
  const auto job = dir.file("records.db");
  const auto sweep = dir.file("sweep.db");
  write_job(job, "a", 4, "diverged", /*nan_at_end=*/true);
  Ingester(sweep).ingest(job);
  auto steps = Store(sweep).read_steps("a");
  ASSERT_EQ(steps.size(), 4u);
  ASSERT_TRUE(steps[3].train_loss.has_value());
  EXPECT_TRUE(std::isnan(*steps[3].train_loss));
  EXPECT_EQ(RawDb(sweep).value("SELECT status FROM runs"), "diverged");
}

TEST(Ingest, MissingEmptyAndForeignFiles) {
  TempDir dir;
  const auto sweep = dir.file("sweep.db");
  Ingester ingester(sweep);
  EXPECT_THROW(ingester.ingest(dir.file("nope.db")), StoreInputError);
  EXPECT_FALSE(std::filesystem::exists(dir.file("nope.db"))) << "ingest must not create files";
  // A job killed before its first write leaves an empty file.
  { RawDb empty(dir.file("empty.db")); }
  EXPECT_TRUE(ingester.ingest(dir.file("empty.db")).empty());
  {
    RawDb newer(dir.file("newer.db"));
    newer.exec("PRAGMA user_version = 999");
  }
  EXPECT_THROW(ingester.ingest(dir.file("newer.db")), StoreInputError);
}

// A records file whose runs table lacks a column the fold reads (an older batchlab's, or a schema
// that does not match its version, as fuzz_ingest made one) folds in with the column read as
// NULL; it ended `results ingest` with "no such column: error" (exit 1).
TEST(Ingest, ARunsTableWithoutAColumnTheFoldReadsStillFolds) {
  TempDir dir;
  const auto job = dir.file("records.db");
  const auto sweep = dir.file("sweep.db");
  write_job(job, "a", 8, "failed");
  RawDb(job).exec("ALTER TABLE runs DROP COLUMN error");
  plan_run(sweep, "a");
  const auto runs = Ingester(sweep).ingest(job);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, "failed");
  EXPECT_FALSE(runs[0].error.has_value());
  EXPECT_EQ(runs[0].last_step, 8);
  EXPECT_EQ(count(sweep, "SELECT count(*) FROM steps WHERE run_id = 'a'"), 8);
}

TEST(Ingest, IngestsEveryRunOfAFile) {
  TempDir dir;
  const auto job = dir.file("two.db");
  write_job(job, "a", 3);
  write_job(job, "b", 2);
  const auto sweep = dir.file("sweep.db");
  auto runs = Ingester(sweep).ingest(job);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(count(sweep, "SELECT count(*) FROM steps"), 5);
}

TEST(FinalizeRecord, OnlyChangesARunStillMarkedRunning) {
  TempDir dir;
  const auto job = dir.file("records.db");
  write_job(job, "a", 3, "running");
  EXPECT_TRUE(finalize_record(job, "a", "failed", "killed by signal 6 (SIGABRT)"));
  auto run = Store(job).get_run("a");
  EXPECT_EQ(run->status, "failed");
  EXPECT_EQ(run->error, "killed by signal 6 (SIGABRT)");
  EXPECT_TRUE(run->finished_at.has_value());
  EXPECT_FALSE(finalize_record(job, "a", "preempted", "later"));
  EXPECT_EQ(Store(job).get_run("a")->status, "failed");
  EXPECT_THROW(finalize_record(dir.file("none.db"), "a", "failed", "x"), StoreInputError);
}

TEST(Snapshot, CopiesAFileThatIsStillOpenForWriting) {
  TempDir dir;
  const auto job = dir.file("local/records.db");
  write_job(job, "a", 8, "running");
  Store writer(job);  // a live connection, as a running job has
  writer.delete_rows_after("a", 5);
  const auto out = dir.file("shared/records.db");
  std::filesystem::create_directories(dir.file("shared"));
  snapshot_database(job, out);
  EXPECT_EQ(RawDb(out).value("PRAGMA journal_mode"), "delete");
  EXPECT_EQ(count(out, "SELECT count(*) FROM steps"), 6);
  // Replacing an existing snapshot works, and the snapshot folds in like any records file.
  writer.delete_rows_after("a", 2);
  snapshot_database(job, out);
  EXPECT_EQ(count(out, "SELECT count(*) FROM steps"), 3);
  const auto sweep = dir.file("sweep.db");
  Ingester(sweep).ingest(out);
  EXPECT_EQ(count(sweep, "SELECT count(*) FROM steps"), 3);
}

TEST(RegisterPlan, PlansNewRunsAndNeverForgetsWhatARunRecorded) {
  TempDir dir;
  const auto sweep = dir.file("sweep.db");
  const auto job = dir.file("records.db");
  write_job(job, "a", 4);  // done, peak_lr 0.4, host node7
  Ingester ingester(sweep);
  ingester.ingest(job);
  RunRow a;
  a.run_id = "a";
  a.peak_lr = 9.9;      // the job's own value stays
  a.warmup_steps = 12;  // a column the job did not record is filled in
  RunRow b;
  b.run_id = "b";
  b.peak_lr = 0.2;
  ingester.register_plan(SweepRow{"s", "s", std::string("spec v1"), std::nullopt}, {a, b});
  ingester.register_plan(SweepRow{"s", "s", std::string("spec v2"), std::nullopt}, {a, b});
  RawDb raw(sweep);
  auto rows = raw.rows(
      "SELECT run_id, sweep_id, status, attempts, peak_lr, warmup_steps, host "
      "FROM runs ORDER BY run_id");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0],
            (std::vector<std::optional<std::string>>{"a", "s", "done", "1", "0.4", "12", "node7"}));
  EXPECT_EQ(rows[1], (std::vector<std::optional<std::string>>{"b", "s", "planned", "0", "0.2",
                                                              std::nullopt, std::nullopt}));
  EXPECT_EQ(raw.value("SELECT spec_toml FROM sweeps"), "spec v2");
}

}  // namespace
}  // namespace batchlab::results
