// The Slurm trial source's decisions against fake `sbatch`, `squeue` and `scancel` programs first
// on PATH (a queue kept in a file), with trial records published by the test as a trial's
// slurm-task would: submission and requeue of a preempted trial under the same run id, adoption of
// a trial a previous coordinator left queued, a stop left unanswered cancelled and recorded as
// `stopped`, and a coordinator that stops leaving its trials to Slurm. The real cluster runs the
// whole path in slurm_study_test.sh.
#include "sweeps/study/slurm_source.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "results/store.h"
#include "sweeps/slurm_commands.h"
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
    program(bin / "sbatch", sbatch_body(""));
    // `squeue -j IDS -o FORMAT` answers from the file `states` ("ID|STATE" lines) as Slurm 22.05
    // does for a trial's one-task array: %i names it "ID_0", %A "ID", and without `-t all` only
    // the listing's states are shown. The listing by name (no -j) answers from `queue`.
    std::string squeue = R"(ids= format= all=
while [ $# -gt 0 ]; do
  case "$1" in -j) ids=$2; shift;; -o) format=$2; shift;; -t) [ "$2" = all ] && all=1; shift;; esac
  shift
done
if [ -z "$ids" ]; then cat FAKE/queue 2>/dev/null; exit 0; fi
case "$format" in %i*) task=_0;; *) task=;; esac
for id in $(echo "$ids" | tr , ' '); do grep "^$id|" FAKE/states; done | while IFS='|' read -r id state; do
  case "$state" in PENDING|RUNNING|COMPLETING) ;; *) [ -n "$all" ] || continue;; esac
  echo "$id$task|$state"
done
)";
    for (size_t at = squeue.find("FAKE"); at != std::string::npos; at = squeue.find("FAKE")) {
      squeue.replace(at, 4, fake);
    }
    program(bin / "squeue", squeue);
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
  // The fake sbatch: `before` runs first (a banner, a failure that exits); then it queues the next
  // id (from 100) as PENDING, logs it, and prints it followed by `suffix` (e.g. ";cluster1").
  std::string sbatch_body(const std::string& before, const std::string& suffix = "") const {
    const std::string fake = dir_.path.string();
    return before + "n=$(cat " + fake + "/next 2>/dev/null || echo 100)\n" + "echo $((n + 1)) > " +
           fake + "/next\n" + "echo \"$n|0|PENDING|batchlab-fake\" >> " + fake + "/queue\n" +
           "echo \"$n $2\" >> " + fake + "/sbatch.log\n" + "echo \"$n" + suffix + "\"\n";
  }
  // Replaces a fake Slurm command (sbatch, squeue, scancel) by a script with `body`.
  void replace(const std::string& name, const std::string& body) {
    program(dir_.path / "bin" / name, body);
  }
  const fs::path& dir() const { return dir_.path; }
  SweepRecords& records() { return *records_; }
  const RunLayout& layout() const { return layout_; }
  size_t submissions() const { return lines_of(dir_.path / "sbatch.log"); }
  const std::vector<std::string>& finished_errors() const { return observer_.errors; }
  std::string cancelled() const { return slurp(dir_.path / "scancel.log"); }

  void queue(const std::string& id, const char* state = "RUNNING") {
    std::ofstream(dir_.path / "queue", std::ios::app) << id << "|0|" << state << "|batchlab-fake\n";
  }
  // What `squeue -j` says of job `id` (the only job it knows of).
  void set_job_state(const std::string& id, const std::string& state) {
    std::ofstream(dir_.path / "states") << id << "|" << state << "\n";
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
  // The errors of the job events the source reports as finished (ended, retried, given up).
  struct Errors : RunObserver {
    void finished(const JobEvent& event) override { errors.push_back(event.error); }
    std::vector<std::string> errors;
  } observer_;
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

// Found by sweeps_slurm_study beside the rest of the suite (issue 45): a trial that `scontrol
// requeue` sent back to the queue was taken for ended and submitted again beside itself. A job the
// listing by name misses is asked for by its id, in every state (-t all), by its array id (%A):
// the first version asked with %i, which names a one-task array's task "ID_0", and without -t all,
// so it never recognized the job (this fake answers as Slurm 22.05 does, and that version fails).
TEST(SlurmTrialSource, AJobRequeuedBySlurmIsNotTakenForEndedWhileTheListingMissesIt) {
  FakeCluster c;
  c.source().start(c.trial("r1"), std::nullopt);
  c.publish("r1", "preempted", {1, 2});  // it answered the requeue's SIGTERM with a checkpoint
  c.dequeue("100");
  c.set_job_state("100", "REQUEUED");
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(c.source().poll().ended.empty());
  EXPECT_EQ(c.submissions(), 1u) << "the requeued job was submitted again beside itself";
  EXPECT_EQ(c.source().running(), 1u);

  // Slurm runs the same job again; it ends, and only then is it ended for the coordinator.
  c.queue("100");
  c.set_job_state("100", "RUNNING");
  EXPECT_TRUE(c.source().poll().ended.empty());
  c.publish("r1", "done", {1, 2, 4});
  c.dequeue("100");
  c.set_job_state("100", "COMPLETED");
  const auto ended = c.poll_until_event();
  ASSERT_EQ(ended.ended.size(), 1u);
  EXPECT_EQ(ended.ended[0].status, "done");
  EXPECT_EQ(c.submissions(), 1u);

  // Cancelled (scancel) and missed by the listing: ended and submitted again, and the message
  // says what squeue said of it.
  c.source().start(c.trial("r5"), std::nullopt);
  c.publish("r5", "preempted", {1});
  c.dequeue("101");
  c.set_job_state("101", "CANCELLED");
  for (int i = 0; i < 10 && c.submissions() < 3; ++i) c.source().poll();
  EXPECT_EQ(c.submissions(), 3u);
  ASSERT_FALSE(c.finished_errors().empty());
  EXPECT_NE(c.finished_errors().back().find("`squeue -t all -j 101` says CANCELLED"),
            std::string::npos)
      << c.finished_errors().back();
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
  // The grace (0 here) plus the interval between its last two evaluations.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline && c.cancelled().empty()) c.source().poll();
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

// Defect 2 of issue 32: jobs that vanish (batchlab not visible on the node, an unwritable
// --output) were requeued to attempt 11, reported `preempted`, started again at attempt 2, forever.
TEST(SlurmTrialSource, ATrialWhoseJobsVanishIsFailedAtItsBoundWhichSurvivesTheCoordinator) {
  SlurmSourceOptions options;
  options.max_attempts = 2;
  {
    FakeCluster c(options);
    c.source().start(c.trial("r6"), std::nullopt);
    EXPECT_EQ(c.records().store().get_run("r6")->attempts, 1) << "counted when submitted";
    c.dequeue("100");  // gone before it published anything
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(c.source().poll().ended.empty());
    EXPECT_EQ(c.submissions(), 2u);
    EXPECT_EQ(c.records().store().get_run("r6")->attempts, 2);
    c.dequeue("101");
    const auto ended = c.poll_until_event();
    ASSERT_EQ(ended.ended.size(), 1u);
    EXPECT_EQ(ended.ended[0].status, "failed") << "no endless resubmission";
    const std::string& why = ended.ended[0].error;
    EXPECT_NE(why.find("--max-attempts 2"), std::string::npos) << why;
    EXPECT_NE(why.find("without publishing any records"), std::string::npos) << why;
    EXPECT_NE(why.find("-0.out"), std::string::npos) << "names the job's Slurm output: " << why;
    EXPECT_EQ(c.submissions(), 2u);
    EXPECT_FALSE(c.source().stopping()) << "two in a row are not yet a pattern";

    // The engine starts it again (a failed trial of a resumed study runs again): the bound lives
    // in the database, so nothing is submitted.
    c.source().start(c.trial("r6"), std::nullopt);
    const auto again = c.poll_until_event();
    ASSERT_EQ(again.ended.size(), 1u);
    EXPECT_EQ(again.ended[0].status, "failed");
    EXPECT_EQ(c.submissions(), 2u);
  }
}

TEST(SlurmTrialSource, SeveralTrialsInARowWhoseJobsVanishStopTheCoordinatorWithTheDiagnosis) {
  FakeCluster c;
  for (const char* run : {"v1", "v2", "v3", "v4"}) c.source().start(c.trial(run), std::nullopt);
  ASSERT_EQ(c.submissions(), 4u);
  for (const char* id : {"100", "101", "102", "103"}) c.dequeue(id);
  std::vector<TrialEnd> ends;
  for (int i = 0; i < 10 && ends.size() < 4; ++i) {
    for (auto& e : c.source().poll().ended) ends.push_back(e);
  }
  EXPECT_TRUE(c.source().stopping());
  ASSERT_TRUE(c.source().fatal().has_value());
  EXPECT_NE(c.source().fatal()->find("3 trial jobs in a row ended without publishing any records"),
            std::string::npos)
      << *c.source().fatal();
  EXPECT_NE(c.source().fatal()->find("does not exist"), std::string::npos)
      << "says the output file is missing: " << *c.source().fatal();
  // v1 and v2 vanished once each and were submitted again; at v3 the pattern is seen.
  EXPECT_EQ(c.submissions(), 6u) << "nothing submitted after the pattern was seen";
  ASSERT_EQ(ends.size(), 4u);
  for (const auto& end : ends) {
    const bool gone = end.run_id == "v3" || end.run_id == "v4";
    EXPECT_EQ(end.status, gone ? "failed" : "preempted") << end.run_id << ": " << end.error;
  }
}

// Defect 1: a site's banner on sbatch's (and squeue's) stderr became the job id.
TEST(SlurmTrialSource, ASiteBannerOnStderrIsNotTheJobId) {
  FakeCluster c;
  const std::string fake = c.dir().string();
  c.replace("sbatch", c.sbatch_body("echo 'sbatch: INFO: account demo' >&2\n", ";cluster1"));
  c.replace("squeue",
            "echo 'squeue: INFO: account demo' >&2\ncat " + fake + "/queue 2>/dev/null; true\n");
  c.source().start(c.trial("b1"), std::nullopt);
  EXPECT_EQ(trial_slurm_job(c.layout(), "b1"), "100");
  EXPECT_EQ(c.records().store().get_run("b1")->scheduler_job, "100_0");
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(c.source().poll().ended.empty());
  EXPECT_EQ(c.submissions(), 1u) << "the queued job is seen in squeue: not submitted again";
}

TEST(SlurmTrialSource, SbatchFailingOnceIsRetriedAndALimitStopsTheStudyWithNothingLost) {
  ::setenv("BATCHLAB_SLURM_RETRY_MS", "1", 1);
  FakeCluster c;
  const std::string fake = c.dir().string();
  c.replace("sbatch", "if [ ! -e " + fake + "/failed-once ]; then touch " + fake +
                          "/failed-once; echo 'sbatch: error: Batch job submission failed: "
                          "Socket timed out on send/recv operation' >&2; exit 1; fi\n" +
                          c.sbatch_body(""));
  c.source().start(c.trial("s1"), std::nullopt);
  EXPECT_EQ(c.submissions(), 1u) << "retried after the time-out";
  EXPECT_FALSE(c.source().stopping());

  c.replace("sbatch",
            "echo 'sbatch: error: QOSMaxSubmitJobPerUserLimit' >&2\n"
            "echo 'sbatch: error: Batch job submission failed: Job violates "
            "accounting/QOS policy (job submit limit, user's size and/or time limits)' "
            ">&2\nexit 1\n");
  c.source().start(c.trial("s2"), std::nullopt);
  EXPECT_TRUE(c.source().stopping());
  ASSERT_TRUE(c.source().fatal().has_value());
  EXPECT_NE(c.source().fatal()->find("submit limit"), std::string::npos) << *c.source().fatal();
  EXPECT_NE(c.source().fatal()->find("QOSMaxSubmitJobPerUserLimit"), std::string::npos);
  const auto events = c.source().poll();
  ASSERT_EQ(events.ended.size(), 2u);
  for (const auto& end : events.ended) {
    EXPECT_EQ(end.status, "preempted") << end.run_id << ": no result, nothing failed";
  }
  EXPECT_NE(c.records().store().get_run("s2")->status, "failed");
  EXPECT_EQ(c.records().store().get_run("s2")->attempts.value_or(0), 0) << "not submitted";
  ::unsetenv("BATCHLAB_SLURM_RETRY_MS");
}

// Issue 45, point 1: sbatch queued the trial's job, then its answer timed out. The coordinator
// retried blindly: two jobs for one trial in one run folder. The queued one is adopted.
TEST(SlurmTrialSource, ATrialQueuedBeforeSbatchTimedOutIsAdoptedNotSubmittedTwice) {
  ::setenv("BATCHLAB_SLURM_RETRY_MS", "1", 1);
  FakeCluster c;
  const std::string fake = c.dir().string();
  // squeue answers in the format asked: job and comment for sbatch_submit's question, else the
  // queue's lines.
  c.replace("squeue", "case \"$*\" in *'%A|%k'*) cat " + fake + "/comments 2>/dev/null;; *) cat " +
                          fake + "/queue 2>/dev/null;; esac\ntrue\n");
  c.replace("sbatch", "if [ ! -e " + fake + "/timed-out ]; then touch " + fake +
                          "/timed-out\n"
                          "  echo \"100|$(sed -n 's/^#SBATCH --comment=//p' \"$2\")\" >> " +
                          fake + "/comments\n" + c.sbatch_body("") +
                          "  echo 'sbatch: error: Batch job submission failed: Socket timed out on "
                          "send/recv operation' >&2\n  exit 1\nfi\n" +
                          c.sbatch_body(""));
  c.source().start(c.trial("d1"), std::nullopt);
  EXPECT_EQ(c.submissions(), 1u) << "the timed-out submission queued the job: not submitted again";
  EXPECT_EQ(trial_slurm_job(c.layout(), "d1"), "100");
  EXPECT_EQ(c.records().store().get_run("d1")->scheduler_job, "100_0");
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(c.source().poll().ended.empty());
  EXPECT_EQ(c.submissions(), 1u) << "tracked as queued";
  EXPECT_EQ(c.source().running(), 1u);
  ::unsetenv("BATCHLAB_SLURM_RETRY_MS");
}

// Defect 5: the grace was counted from the request, although a trial past the requested step
// answers only at its next evaluation.
TEST(SlurmTrialSource, TheStopGraceStartsAtTheFirstEvaluationPublishedAfterTheRequest) {
  SlurmSourceOptions options;
  options.stop_grace = std::chrono::milliseconds(300);
  FakeCluster c(options);
  c.source().start(c.trial("g1"), std::nullopt);
  c.publish("g1", "running", {2, 4, 6});
  c.source().poll();
  c.source().request_stop("g1", StopRequest{"stopped_by_race", 4});  // already past step 4
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(700);
  while (std::chrono::steady_clock::now() < until) c.source().poll();
  EXPECT_EQ(c.cancelled(), "") << "no evaluation since the request: it has not had its chance";
  c.publish("g1", "running", {2, 4, 6, 8});  // evaluated (perhaps just before the request)
  c.source().poll();
  EXPECT_EQ(c.cancelled(), "") << "the grace starts now";
  const auto later = std::chrono::steady_clock::now() + std::chrono::milliseconds(2500);
  while (std::chrono::steady_clock::now() < later && c.cancelled().empty()) c.source().poll();
  EXPECT_EQ(c.cancelled(), "100\n") << "a trial that still does not answer is cancelled";
}

// Issue 45, point 3: a coordinator adopting a trial with a pending stop started the grace at its
// first read of the trial's snapshot, whose evaluations all predate the request.
TEST(SlurmTrialSource, AnAdoptedTrialsStopGraceStartsAtItsFirstEvaluationAfterTheRequest) {
  SlurmSourceOptions options;
  options.stop_grace = std::chrono::milliseconds(300);
  FakeCluster c(options);
  fs::create_directories(c.layout().dir("g2"));
  std::ofstream(c.layout().slurm_job_path("g2")) << "555\n";
  c.queue("555");
  c.publish("g2", "running", {2, 4, 6});  // already past step 4 when the request is written
  c.source().start(c.trial("g2"), StopRequest{"stopped_by_race", 4});
  EXPECT_EQ(c.submissions(), 0u) << "adopted";
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(700);
  while (std::chrono::steady_clock::now() < until) c.source().poll();
  EXPECT_EQ(c.cancelled(), "") << "no evaluation since the request: it has not had its chance";
  c.publish("g2", "running", {2, 4, 6, 8});
  c.source().poll();
  EXPECT_EQ(c.cancelled(), "") << "the grace starts now";
  const auto later = std::chrono::steady_clock::now() + std::chrono::milliseconds(2500);
  while (std::chrono::steady_clock::now() < later && c.cancelled().empty()) c.source().poll();
  EXPECT_EQ(c.cancelled(), "555\n") << "a trial that still does not answer is cancelled";
}

// Defect 7: an unreadable snapshot while adopting (ESTALE on a shared filesystem, a half-visible
// file) ended the coordinator.
TEST(SlurmTrialSource, AnUnreadableSnapshotIsFoldedAgainLaterInsteadOfEndingTheCoordinator) {
  FakeCluster c;
  fs::create_directories(c.layout().dir("e1"));
  std::ofstream(c.layout().slurm_job_path("e1")) << "777\n";  // ended meanwhile: not in the queue
  std::ofstream(c.layout().records_path("e1")) << std::string(4096, 'x');
  EXPECT_NO_THROW(c.source().start(c.trial("e1"), std::nullopt));
  EXPECT_EQ(c.submissions(), 0u) << "nothing decided on a snapshot that could not be read";
  EXPECT_NO_THROW(c.source().poll());
  c.publish("e1", "done", {1, 2});
  const auto ended = c.poll_until_event();
  ASSERT_EQ(ended.ended.size(), 1u);
  EXPECT_EQ(ended.ended[0].status, "done");
  EXPECT_EQ(c.submissions(), 0u);
}

// The load on the scheduler (docs/sweeps.md, "Load on the scheduler"): a 200-trial study against
// fake commands that answer at once. One squeue per poll interval for all trials, one sbatch per
// submission, no scancel without a stop.
TEST(SlurmTrialSource, SchedulerCallsStayBoundedForA200TrialStudy) {
  SlurmSourceOptions options;
  options.max_jobs = 16;
  options.publish_interval = std::chrono::seconds(3600);
  FakeCluster c(options);
  // FakeCluster polls squeue at every poll (interval 0); here the coordinator's cadence, scaled.
  auto before = slurm_call_counts();
  const auto start = std::chrono::steady_clock::now();
  size_t started = 0, ended = 0;
  int64_t polls = 0;
  std::vector<std::string> queued;
  while (ended < 200) {
    while (started < 200 && c.source().running() < c.source().slots()) {
      const std::string run = fmt::format("t{:03d}", started++);
      c.source().start(c.trial(run), std::nullopt);
      queued.push_back(run);
    }
    // The oldest queued trial finishes.
    if (!queued.empty()) {
      const std::string run = queued.front();
      queued.erase(queued.begin());
      c.publish(run, "done", {1, 2});
      c.dequeue(trial_slurm_job(c.layout(), run));
    }
    ended += c.source().poll().ended.size();
    ++polls;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto after = slurm_call_counts();
  const int64_t sbatch = after["sbatch"] - before["sbatch"];
  const int64_t squeue = after["squeue"] - before["squeue"];
  const int64_t scancel = after["scancel"] - before["scancel"];
  std::printf("200 trials: %lld sbatch, %lld squeue, %lld scancel in %lld polls, %.1f s\n",
              static_cast<long long>(sbatch), static_cast<long long>(squeue),
              static_cast<long long>(scancel), static_cast<long long>(polls), seconds);
  EXPECT_EQ(sbatch, 200);
  EXPECT_EQ(scancel, 0);
  // Per poll at most two squeue (the listing, and one question by id for the jobs it has missed
  // long enough), whatever the number of trials running.
  EXPECT_LE(squeue, 2 * polls) << "more than two squeue per poll";
}

}  // namespace
}  // namespace batchlab::sweeps::study
