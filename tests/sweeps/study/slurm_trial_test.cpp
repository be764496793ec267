// The decisions over a Slurm trial's tracked state (sweeps/study/slurm_trial.h), with the clock
// given by hand: when a job missing from squeue counts as ended, how the curve follows new
// evaluations, when a stop request is overdue, and why a job without a result has none. The
// source that acts on them runs against fake Slurm programs in slurm_source_test.cpp.
#include "sweeps/study/slurm_trial.h"

#include <gtest/gtest.h>

namespace batchlab::sweeps::study {
namespace {

using std::chrono::seconds;
const SlurmClock::time_point kT0{};

TEST(SlurmTrial, AJobCountsAsGoneOnlyAfterTwoAnswersAndFivePollIntervals) {
  SlurmJob job;
  const auto poll = seconds(2);
  job.saw_queue(false, kT0);
  EXPECT_FALSE(job.gone(kT0 + seconds(60), poll)) << "one answer is not enough";
  job.saw_queue(false, kT0 + seconds(2));
  EXPECT_FALSE(job.gone(kT0 + seconds(9), poll)) << "two answers, but not 5 intervals yet";
  EXPECT_TRUE(job.gone(kT0 + seconds(10), poll));
  job.saw_queue(true, kT0 + seconds(11));
  EXPECT_FALSE(job.gone(kT0 + seconds(100), poll)) << "back in the queue: the count restarts";
  job.saw_queue(false, kT0 + seconds(12));
  job.submitted("42", "out.txt", std::nullopt);
  EXPECT_EQ(job.attempt, 1);
  EXPECT_EQ(job.missing, 0);
  EXPECT_FALSE(job.missing_since.has_value());
}

TEST(SlurmTrial, ThePublishedCurveTakesOnlyNewEvaluationsAndMeasuresTheirGap) {
  PublishedCurve curve;
  curve.read(std::nullopt, kT0);
  EXPECT_FALSE(curve.published_step.has_value());
  curve.read(10, kT0 + seconds(5));
  EXPECT_EQ(curve.published_step, 10);
  EXPECT_FALSE(curve.eval_gap.has_value()) << "one evaluation has no gap";
  curve.read(10, kT0 + seconds(20));  // the same snapshot's last step again
  curve.read(20, kT0 + seconds(35));
  EXPECT_EQ(curve.published_step, 20);
  EXPECT_EQ(curve.eval_gap, seconds(30)) << "from the first sight of 10, not its re-read";
}

TEST(SlurmTrial, AStopIsOverdueOnlyAfterAnEvaluationPastTheRequestAndTheGrace) {
  PublishedCurve curve;
  PendingStop stop;
  stop.request = StopRequest{"pruned", 100};
  stop.step_at_request = 120;  // the trial was past the step already when the request came
  curve.read(120, kT0);
  EXPECT_FALSE(stop.overdue(curve, seconds(60), kT0 + seconds(1000)))
      << "its evaluations all predate the request";
  curve.read(140, kT0 + seconds(100));  // the first evaluation after the request: grace starts
  EXPECT_FALSE(stop.overdue(curve, seconds(60), kT0 + seconds(100)));
  // grace 60 s plus the 100 s between its evaluations
  EXPECT_FALSE(stop.overdue(curve, seconds(60), kT0 + seconds(259)));
  EXPECT_TRUE(stop.overdue(curve, seconds(60), kT0 + seconds(260)));

  PendingStop early;
  early.request = StopRequest{"stopped_by_race", 500};
  EXPECT_FALSE(early.overdue(curve, seconds(0), kT0 + seconds(1000))) << "step 140 < 500";
}

TEST(SlurmTrial, AJobWithoutAResultVanishedCrashedOrWasPreempted) {
  Tracked t;
  t.state = TrialState::submitted;
  t.slurm.records_at_submit = std::nullopt;
  EXPECT_EQ(no_result_kind(t, "", std::nullopt), NoResult::vanished) << "nothing published";
  const auto now = std::filesystem::file_time_type::clock::now();
  EXPECT_EQ(no_result_kind(t, "failed", now), NoResult::crashed);
  EXPECT_EQ(no_result_kind(t, "preempted", now), NoResult::preempted);
  EXPECT_EQ(no_result_kind(t, "running", now), NoResult::preempted) << "killed before its end";
  t.state = TrialState::adopted;  // an adopted job's snapshot before is unknown: never vanished
  EXPECT_EQ(no_result_kind(t, "", std::nullopt), NoResult::preempted);

  t.slurm.id = "7";
  t.slurm.attempt = 2;
  EXPECT_EQ(give_up_reason(t, NoResult::crashed, 1, 10, "boom"), "crashed, after 1 retries: boom");
  EXPECT_NE(give_up_reason(t, NoResult::preempted, 1, 2, "gone").find("--max-attempts 2"),
            std::string::npos);
  const TrialEnd end = interrupted("r1", "left");
  EXPECT_EQ(end.status, "preempted");
  EXPECT_EQ(end.error, "left");
}

}  // namespace
}  // namespace batchlab::sweeps::study
