// The Slurm trial source's decisions against fake `sbatch`, `squeue` and `scancel` programs first
// on PATH (a queue kept in a file), with trial records published by the test as a trial's
// slurm-task would: submission and requeue of a preempted trial under the same run id, adoption of
// a trial a previous coordinator left queued, a stop left unanswered cancelled and recorded as
// `stopped`, and a coordinator that stops leaving its trials to Slurm. The real cluster runs the
// whole path in slurm_study_test.sh.
#include "sweeps/study_slurm_source.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "results/store.h"
#include "sweeps/sweep_records.h"
#include "tests/temp_dir.h"

namespace batchlab::sweeps::study {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t lines_of(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) n += line.empty() ? 0 : 1;
  return n;
}

// A sweep folder, a fake Slurm whose queue is the file `queue` ("ID|0|STATE|NAME" lines), and a
// source over them.
class FakeCluster {
 public:
  explicit FakeCluster(SlurmSourceOptions options = {})
      : old_path_(std::getenv("PATH") ? std::getenv("PATH") : "") {
    const fs::path bin = dir_.path / "bin";
    fs::create_directories(bin);
    const std::string fake = dir_.path.string();
    program(bin / "sbatch", "n=$(cat " + fake +
                                "/next 2>/dev/null || echo 100)\n"
                                "echo $((n + 1)) > " +
                                fake +
                                "/next\n"
                                "echo \"$n|0|PENDING|batchlab-fake\" >> " +
                                fake +
                                "/queue\n"
                                "echo \"$n $2\" >> " +
                                fake +
                                "/sbatch.log\n"
                                "echo \"$n\"\n");
    program(bin / "squeue", "cat " + fake + "/queue 2>/dev/null; true\n");
    program(bin / "scancel", "echo \"$1\" >> " + fake + "/scancel.log\n");
    ::setenv("PATH", (bin.string() + ":" + old_path_).c_str(), 1);
    spec_.name = "fake";
    spec_.results = (dir_.path / "fake.db").string();
    records_ = std::make_unique<SweepRecords>(spec_, layout_);
    records_->register_plan(spec_, Plan{});
    options.poll_interval = std::chrono::milliseconds(0);
    options.curve_interval = std::chrono::milliseconds(0);
    options.slurm.batchlab = "/bin/true";
    source_ = std::make_unique<SlurmTrialSource>(*records_, layout_, "fake", options, observer_);
  }
  ~FakeCluster() { ::setenv("PATH", old_path_.c_str(), 1); }

  SlurmTrialSource& source() { return *source_; }
  SweepRecords& records() { return *records_; }
  const RunLayout& layout() const { return layout_; }
  size_t submissions() const { return lines_of(dir_.path / "sbatch.log"); }
  std::string cancelled() const { return slurp(dir_.path / "scancel.log"); }

  void queue(const std::string& id, const char* state = "RUNNING") {
    std::ofstream(dir_.path / "queue", std::ios::app) << id << "|0|" << state << "|batchlab-fake\n";
  }
  // The job leaves the queue (it ended, or was cancelled).
  void dequeue(const std::string& id) {
    std::istringstream lines(slurp(dir_.path / "queue"));
    std::string kept, line;
    while (std::getline(lines, line)) {
      if (line.rfind(id + "|", 0) != 0) kept += line + "\n";
    }
    std::ofstream(dir_.path / "queue") << kept;
  }
  // What the trial's slurm-task publishes: its run with `status` and evaluations at `steps`.
  void publish(const std::string& run_id, const std::string& status,
               const std::vector<int64_t>& steps) {
    fs::create_directories(layout_.dir(run_id));
    const std::string path = layout_.records_path(run_id);
    fs::remove(path);
    results::Store store(path);
    results::RunRow run;
    run.run_id = run_id;
    run.status = "running";
    store.upsert_run(run);
    std::vector<results::EvalRow> evals;
    for (int64_t step : steps) {
      results::EvalRow e;
      e.run_id = run_id;
      e.step = step;
      e.val_acc = 0.1 * static_cast<double>(step);
      evals.push_back(e);
    }
    store.write_evals(evals);
    if (status != "running") store.set_run_status(run_id, status);
  }

  Job trial(const std::string& run_id) const {
    Job job;
    job.run_id = run_id;
    job.config_toml = "schema_version = 1\n";
    job.global_batch = 32;
    return job;
  }

  // Polls until something is reported (at most `rounds` times).
  SourceEvents poll_until_event(int rounds = 20) {
    for (int i = 0; i < rounds; ++i) {
      auto events = source_->poll();
      if (!events.ended.empty()) return events;
    }
    return {};
  }

 private:
  static void program(const fs::path& path, const std::string& body) {
    std::ofstream(path) << "#!/bin/sh\n" << body;
    ::chmod(path.c_str(), 0755);
  }

  test_support::TempDir dir_{"fakeslurmsrc"};
  std::string old_path_;
  SweepSpec spec_;
  RunLayout layout_{(dir_.path / "runs").string()};
  RunObserver observer_;
  std::unique_ptr<SweepRecords> records_;
  std::unique_ptr<SlurmTrialSource> source_;
};

TEST(SlurmTrialSource, SubmitsATrialAndSubmitsItAgainWhenPreemptedUnderTheSameRunId) {
  FakeCluster c;
  c.source().start(c.trial("r1"), std::nullopt);
  EXPECT_EQ(c.submissions(), 1u);
  EXPECT_EQ(trial_slurm_job(c.layout(), "r1"), "100");
  EXPECT_EQ(c.records().store().get_run("r1")->scheduler_job, "100_0");
  EXPECT_EQ(c.source().running(), 1u);

  c.publish("r1", "running", {1, 2});
  const auto events = c.source().poll();
  ASSERT_EQ(events.updates.size(), 1u);
  EXPECT_EQ(events.updates[0].evals.size(), 2u);
  EXPECT_TRUE(events.ended.empty());
  EXPECT_TRUE(c.source().poll().updates.empty()) << "a snapshot is read once";

  // Preempted (or cancelled with scancel): submitted again, nothing reported to the engine.
  c.publish("r1", "preempted", {1, 2});
  c.dequeue("100");
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(c.source().poll().ended.empty());
  EXPECT_EQ(c.submissions(), 2u);
  EXPECT_EQ(trial_slurm_job(c.layout(), "r1"), "101");
  EXPECT_EQ(c.records().store().get_run("r1")->scheduler_job, "101_0");

  c.publish("r1", "done", {1, 2, 4});
  c.dequeue("101");
  const auto ended = c.poll_until_event();
  ASSERT_EQ(ended.ended.size(), 1u);
  EXPECT_EQ(ended.ended[0].status, "done");
  EXPECT_EQ(ended.ended[0].evals.size(), 3u);
  EXPECT_EQ(c.source().running(), 0u);
  EXPECT_EQ(c.submissions(), 2u);
}

TEST(SlurmTrialSource, AdoptsATrialAPreviousCoordinatorLeftInTheQueue) {
  FakeCluster c;
  fs::create_directories(c.layout().dir("r2"));
  std::ofstream(c.layout().slurm_job_path("r2")) << "555\n";
  c.queue("555");
  c.source().start(c.trial("r2"), std::nullopt);
  EXPECT_EQ(c.submissions(), 0u) << "a queued trial is adopted, not submitted again";
  c.publish("r2", "stopped", {1, 2});
  c.dequeue("555");
  const auto ended = c.poll_until_event();
  ASSERT_EQ(ended.ended.size(), 1u);
  EXPECT_EQ(ended.ended[0].status, "stopped");

  // One that ended meanwhile is folded and reported without a submission.
  c.publish("r3", "done", {1});
  c.source().start(c.trial("r3"), std::nullopt);
  const auto found = c.poll_until_event();
  ASSERT_EQ(found.ended.size(), 1u);
  EXPECT_EQ(found.ended[0].run_id, "r3");
  EXPECT_EQ(c.submissions(), 0u);
}

TEST(SlurmTrialSource, ATrialThatLeavesItsStopUnansweredIsCancelledAndRecordedStopped) {
  SlurmSourceOptions options;
  options.stop_grace = std::chrono::milliseconds(0);
  FakeCluster c(options);
  c.source().start(c.trial("r4"), StopRequest{"stopped_by_race", 4});
  EXPECT_EQ(slurp(c.layout().stop_path("r4")), "stopped_by_race 4\n");
  c.publish("r4", "running", {1, 2});
  c.source().poll();
  c.source().poll();
  EXPECT_EQ(c.cancelled(), "") << "step 4 not published yet: nothing is due";
  c.publish("r4", "running", {1, 2, 4, 6});  // past the requested step, and still running
  c.source().poll();
  c.source().poll();
  EXPECT_EQ(c.cancelled(), "100\n");
  c.dequeue("100");  // the cancelled job leaves the queue, its records still say running
  const auto ended = c.poll_until_event();
  ASSERT_EQ(ended.ended.size(), 1u);
  EXPECT_EQ(ended.ended[0].status, "stopped");
  EXPECT_EQ(ended.ended[0].stop_reason, "stopped_by_race");
  EXPECT_NE(ended.ended[0].error.find("was cancelled"), std::string::npos) << ended.ended[0].error;
  EXPECT_EQ(c.submissions(), 1u) << "a forced stop is a result, not a requeue";
}

TEST(SlurmTrialSource, AStoppingCoordinatorLeavesItsTrialsToSlurm) {
  std::atomic<int> stop{0};
  SlurmSourceOptions options;
  options.stop_requests = &stop;
  FakeCluster c(options);
  c.source().start(c.trial("r5"), std::nullopt);
  stop.store(1);
  const auto events = c.source().poll();
  ASSERT_EQ(events.ended.size(), 1u);
  EXPECT_EQ(events.ended[0].status, "preempted");
  EXPECT_NE(events.ended[0].error.find("left running as Slurm job 100"), std::string::npos);
  EXPECT_TRUE(c.source().stopping());
  EXPECT_EQ(c.cancelled(), "") << "nothing is cancelled";
}

TEST(SlurmTrialSource, ATrialGoneWithoutRecordsIsRequeuedUpToItsLimit) {
  SlurmSourceOptions options;
  options.max_requeues = 1;
  FakeCluster c(options);
  c.source().start(c.trial("r6"), std::nullopt);
  c.dequeue("100");  // gone before it published anything
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(c.source().poll().ended.empty());
  EXPECT_EQ(c.submissions(), 2u);
  c.dequeue("101");
  const auto ended = c.poll_until_event();
  ASSERT_EQ(ended.ended.size(), 1u);
  EXPECT_EQ(ended.ended[0].status, "preempted") << "no result: the engine runs it again later";
  EXPECT_EQ(c.submissions(), 2u);
}

}  // namespace
}  // namespace batchlab::sweeps::study
