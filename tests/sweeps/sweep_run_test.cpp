// `batchlab sweep run|status|plan` end to end on tiny synthetic jobs: kill -9 in the middle and
// resume, 4 concurrent workers without lock errors or lost rows, crashes retried then reported,
// divergence recorded and never retried, Ctrl-C, and specs edited after a sweep started.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "results/query.h"
#include "tests/sweeps/sweep_cli_util.h"
#include "tests/test_paths.h"

namespace batchlab::sweeps {
namespace {

using testing::Background;
using testing::count_of;
using testing::read_file;
using testing::SweepDir;

// Steps a job of the tiny base records: 512 / batch x epochs.
std::string expected_steps(const SweepDir& s, const std::string& id) {
  return s.value("SELECT total_steps FROM runs WHERE run_id = '" + id + "'");
}

TEST(SweepRun, KillNineMidRunThenRerunRunsOnlyWhatIsMissing) {
  SweepDir s("kill", "seeds = [0, 1, 2]\n[grid]\n\"batch.global\" = [64, 128]\n", /*epochs=*/4);
  const auto ids = s.run_ids();
  ASSERT_EQ(ids.size(), 6u);
  {
    Background run({"sweep", "run", s.spec, "--workers", "2"}, (s.dir.path / "run1.log").string());
    // Two jobs finished, and others running: then the coordinator and its workers die at once.
    ASSERT_TRUE(run.wait_for([](const std::string& out) {
      return count_of(out, "] done") >= 2 && count_of(out, "] start") >= 4;
    })) << run.output();
    run.kill_group(SIGKILL);
    EXPECT_EQ(run.wait(), -SIGKILL);
  }
  // What was finished before the kill, and its traces. A job's own records file is the truth: the
  // coordinator may have died before folding a job that had just finished.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the killed workers are gone
  auto job_state = [&](const std::string& id) {
    const std::string records = s.run_dir(id) + "/records.db";
    const auto r =
        results::query_readonly(records,
                                "SELECT status || '|' || finished_at || '|' || attempts || '|' || "
                                "(SELECT count(*) FROM steps) FROM runs WHERE run_id = '" +
                                    id + "'");
    return *r.rows.at(0).at(0) + "|" + read_file(s.run_dir(id) + "/log.txt");
  };
  std::map<std::string, std::string> finished;  // run id -> its records and log
  for (const auto& id : ids) {
    if (!std::filesystem::exists(s.run_dir(id) + "/records.db")) continue;
    const std::string state = job_state(id);
    if (state.rfind("done|", 0) == 0) finished[id] = state;
  }
  std::map<std::string, std::string> folded;  // done in the sweep database: finished_at|attempts
  for (const auto& row :
       s.query("SELECT run_id, finished_at, attempts FROM runs WHERE status = 'done'").rows) {
    folded[*row[0]] = *row[1] + "|" + *row[2];
  }
  ASSERT_GE(finished.size(), 2u);
  ASSERT_LT(finished.size(), ids.size()) << "the kill came too late to test anything";

  auto second = s.sweep("run --workers 2");
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find(std::to_string(finished.size()) + " already settled"),
            std::string::npos)
      << second.output;
  for (const auto& id : ids) {
    const bool was_done = finished.count(id) > 0;
    EXPECT_EQ(second.output.find("start     " + id) != std::string::npos, !was_done)
        << id << (was_done ? " was done and must not run again\n" : " must run\n") << second.output;
    EXPECT_EQ(s.value("SELECT status FROM runs WHERE run_id = '" + id + "'"), "done") << id;
    EXPECT_EQ(s.value("SELECT count(*) FROM steps WHERE run_id = '" + id + "'"),
              expected_steps(s, id))
        << id;
  }
  for (const auto& [id, before] : finished) {
    EXPECT_EQ(job_state(id), before)
        << id << " was finished before the kill: it must not run again";
  }
  for (const auto& [id, before] : folded) {
    EXPECT_EQ(
        s.value("SELECT finished_at || '|' || attempts FROM runs WHERE run_id = '" + id + "'"),
        before)
        << id << " was folded before the kill and must stay untouched";
  }
  testing::expect_no_duplicate_rows(s);
}

TEST(SweepRun, FourWorkersWriteConcurrentlyWithoutLockErrorsOrLostRows) {
  SweepDir s("four",
             "seeds = [0, 1]\n[grid]\n\"batch.global\" = [64, 128]\n"
             "\"optim.name\" = [\"sgd\", \"adamw\"]\n[when.\"optim.name=adamw\"]\n"
             "\"optim.base_lr\" = 0.002\n");
  Background run({"sweep", "run", s.spec, "--workers", "4"}, (s.dir.path / "run.log").string());
  // Readers beside the writers: `sweep status` (read-only while the coordinator runs) and queries.
  std::string readers;
  std::optional<int> code;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  while (!(code = run.poll()) && std::chrono::steady_clock::now() < deadline) {
    readers += s.sweep("status").output;
    if (std::filesystem::exists(s.db)) {
      readers += testing::run_batchlab("query --db " + testing::shell_quote(s.db) +
                                       " \"SELECT count(*) FROM steps\"")
                     .output;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(code.has_value()) << "timed out\n" << run.output();
  ASSERT_EQ(*code, 0) << run.output();
  const auto ids = s.run_ids();
  ASSERT_EQ(ids.size(), 8u);
  std::string logs = run.output() + readers;
  for (const auto& id : ids) {
    logs += read_file(s.run_dir(id) + "/log.txt");
    EXPECT_EQ(s.value("SELECT status FROM runs WHERE run_id = '" + id + "'"), "done") << id;
    // Every row the job wrote to its own file is in the sweep database.
    const auto job_steps = results::query_readonly(
        s.run_dir(id) + "/records.db", "SELECT count(*) FROM steps WHERE run_id = '" + id + "'");
    const std::string steps = s.value("SELECT count(*) FROM steps WHERE run_id = '" + id + "'");
    EXPECT_EQ(steps, *job_steps.rows[0][0]) << id;
    EXPECT_EQ(steps, expected_steps(s, id)) << id;
    EXPECT_EQ(s.value("SELECT count(*) FROM evals WHERE run_id = '" + id + "'"), "2") << id;
  }
  EXPECT_EQ(logs.find("locked"), std::string::npos) << logs;
  EXPECT_EQ(logs.find("SQLITE_BUSY"), std::string::npos) << logs;
  testing::expect_no_duplicate_rows(s);
}

TEST(SweepRun, CrashesAreRetriedThenReportedAndDivergenceIsNeverRetried) {
  SweepDir t("crash", "[grid]\n\"optim.base_lr\" = [0.05, 1e6, 0.02]\n");
  const auto ids = t.run_ids();
  ASSERT_EQ(ids.size(), 3u);
  const std::string ok = ids[0], nan = ids[1], crash = ids[2];
  const std::string cmd = "BATCHLAB_TEST_FAULT=crash@0:" + crash + " " + test_paths::binary() +
                          " sweep run " + testing::shell_quote(t.spec) +
                          " --workers 2 --retries 2 2>&1";
  std::string output;
  int code = -1;
  {
    FILE* pipe = popen(cmd.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) output.append(buf, n);
    const int status = pclose(pipe);
    code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  EXPECT_EQ(code, 1) << output;  // a job failed
  // 1 + 2 retries, each a real SIGABRT, then failed.
  EXPECT_EQ(count_of(output, "start     " + crash), 3u) << output;
  EXPECT_EQ(count_of(output, "killed by signal 6 (SIGABRT)  -> retrying"), 2u) << output;
  EXPECT_EQ(t.value("SELECT status FROM runs WHERE run_id = '" + crash + "'"), "failed");
  EXPECT_EQ(t.value("SELECT attempts FROM runs WHERE run_id = '" + crash + "'"), "3");
  EXPECT_EQ(t.value("SELECT error FROM runs WHERE run_id = '" + crash + "'"),
            "crashed: killed by signal 6 (SIGABRT)");
  // The NaN job diverged once and was not retried; the good one is done.
  EXPECT_EQ(count_of(output, "start     " + nan), 1u) << output;
  EXPECT_EQ(t.value("SELECT status FROM runs WHERE run_id = '" + nan + "'"), "diverged");
  EXPECT_EQ(t.value("SELECT attempts FROM runs WHERE run_id = '" + nan + "'"), "1");
  EXPECT_EQ(t.value("SELECT status FROM runs WHERE run_id = '" + ok + "'"), "done");

  auto status = t.sweep("status");
  EXPECT_EQ(status.exit_code, 0) << status.output;
  EXPECT_NE(status.output.find("done 1  diverged 1  running 0  preempted 0  failed 1"),
            std::string::npos)
      << status.output;
  EXPECT_NE(status.output.find(crash + "  optim.base_lr=0.02  after 3 attempt(s): crashed: killed "
                                       "by signal 6 (SIGABRT)"),
            std::string::npos)
      << status.output;
  EXPECT_NE(status.output.find("| step"), std::string::npos) << "the log's tail: " << status.output;

  // Re-running retries the failed job (without the hook it now succeeds); settled ones stay.
  auto again = t.sweep("run --workers 2");
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(count_of(again.output, "] start"), 1u) << again.output;
  EXPECT_EQ(t.value("SELECT status FROM runs WHERE run_id = '" + crash + "'"), "done");
  EXPECT_EQ(t.value("SELECT attempts FROM runs WHERE run_id = '" + crash + "'"), "4");
}

TEST(SweepRun, FirstCtrlCPreemptsTheWorkersWhileStatusShowsTheirProgress) {
  SweepDir s("ctrlc", "seeds = [0, 1]\n[grid]\n\"batch.global\" = [64, 128]\n", /*epochs=*/30);
  Background run({"sweep", "run", s.spec, "--workers", "2"}, (s.dir.path / "run.log").string());
  // Both workers are training (their first steps are in the sweep database's progress).
  ASSERT_TRUE(run.wait_for([](const std::string& out) { return count_of(out, "] start") >= 2; }));
  // `sweep status` beside the coordinator shows both jobs running, with their step counts.
  std::string status;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    status = s.sweep("status").output;
    if (count_of(status, "  attempt 1") == 2 && count_of(status, "  step ") == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_NE(status.find("a coordinator is active"), std::string::npos) << status;
  EXPECT_NE(status.find("running 2"), std::string::npos) << status;
  EXPECT_EQ(count_of(status, "  step "), 2u) << status;
  EXPECT_TRUE(std::regex_search(status, std::regex("step [0-9]+/(480|240) \\([0-9]+%\\)")))
      << status;
  run.signal(SIGINT);
  const int code = run.wait();
  EXPECT_EQ(code, 1) << run.output();
  EXPECT_NE(run.output().find("stopping"), std::string::npos) << run.output();
  EXPECT_EQ(count_of(run.output(), "] preempted"), 2u) << run.output();
  EXPECT_EQ(s.value("SELECT count(*) FROM runs WHERE status = 'preempted'"), "2");
  EXPECT_EQ(s.value("SELECT count(*) FROM runs WHERE status = 'planned'"), "2");
}

TEST(SweepPlan, AnEditedSpecGetsNewIdsAndNamesTheRunsThatNoLongerBelong) {
  SweepDir s("edit", "[grid]\n\"batch.global\" = [64, 128]\n", /*epochs=*/1);
  const auto before = s.run_ids();
  ASSERT_EQ(s.sweep("run").exit_code, 0);
  // The 128 job's config changes (a when-clause), 64 stays, 256 is new.
  s.write_spec(
      "[grid]\n\"batch.global\" = [64, 128, 256]\n[when.\"batch.global=128\"]\n"
      "\"optim.base_lr\" = 0.1\n");
  const auto after = s.run_ids();
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after[0], before[0]);
  EXPECT_NE(after[1], before[1]);
  auto plan = s.sweep("plan");
  EXPECT_EQ(plan.exit_code, 0) << plan.output;
  EXPECT_NE(plan.output.find("1 run recorded for sweep edit no longer belongs to the spec"),
            std::string::npos)
      << plan.output;
  EXPECT_NE(plan.output.find("  " + before[1] + "  done"), std::string::npos) << plan.output;
  EXPECT_EQ(count_of(plan.output, "  done"), 2u) << "the unchanged job and the stale one\n"
                                                 << plan.output;
  EXPECT_EQ(count_of(plan.output, "  new"), 2u) << plan.output;
  // Running the edited spec runs exactly the two new ids.
  auto run = s.sweep("run");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(count_of(run.output, "] start"), 2u) << run.output;
}

TEST(SweepPlan, InvalidSpecsExitTwoWithEveryProblem) {
  SweepDir s("bad",
             "[grid]\n\"batch.global\" = [64, 100]\n[when.\"optim.name=lars\"]\n"
             "\"optim.base_lr\" = 1.0\n");
  auto plan = s.sweep("plan");
  EXPECT_EQ(plan.exit_code, 2) << plan.output;
  EXPECT_NE(plan.output.find("optim.name = \"lars\": is not swept"), std::string::npos)
      << plan.output;
  s.write_spec("[grid]\n\"batch.global\" = [64, 100]\n");
  plan = s.sweep("plan");
  EXPECT_EQ(plan.exit_code, 2) << plan.output;
  EXPECT_NE(plan.output.find("spec.toml:7:23: batch.global = 100"), std::string::npos)
      << plan.output;
  EXPECT_NE(plan.output.find("[in job #2 batch.global=100]"), std::string::npos) << plan.output;
  auto run = s.sweep("run");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_FALSE(std::filesystem::exists(s.db)) << "an invalid sweep must not start";
}

TEST(ResultsIngest, FoldsRunFoldersIntoAnotherDatabaseIdempotently) {
  SweepDir s("ingest", "[grid]\n\"batch.global\" = [64, 128]\n", /*epochs=*/1);
  ASSERT_EQ(s.sweep("run").exit_code, 0);
  const std::string other = (s.dir.path / "other.db").string();
  for (int i = 0; i < 2; ++i) {
    auto r = testing::run_batchlab("results ingest --db " + testing::shell_quote(other) + " " +
                                   testing::shell_quote(s.runs_dir()));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("ingested 2 run(s) from 2 records file(s)"), std::string::npos)
        << r.output;
  }
  // Without paths: the sweep database's default runs folder (runs/ beside results/).
  auto own = testing::run_batchlab("results ingest --db " + testing::shell_quote(s.db));
  EXPECT_NE(own.output.find("ingested 2 run(s) from 2 records file(s)"), std::string::npos)
      << own.output;
  const auto a = results::query_readonly(s.db, "SELECT count(*) FROM steps");
  const auto b = results::query_readonly(other, "SELECT count(*) FROM steps");
  EXPECT_EQ(a.rows, b.rows);
}

}  // namespace
}  // namespace batchlab::sweeps
