// The progress lines a study coordinator prints (`sweep run` on a study, and the Slurm-run
// study's coordinator job, whose output goes to its Slurm output file): cells opening and
// completing, trials starting and ending, stop requests, retries.
#pragma once

#include <string>

#include "sweeps/local_runner.h"
#include "sweeps/study/engine.h"

namespace batchlab::cli {

std::string lr_text(double lr);

class StudyPrinter : public sweeps::RunObserver, public sweeps::study::StudyObserver {
 public:
  // `in_slurm`: trials are Slurm jobs (a retry is a new submission; a stop leaves them running).
  StudyPrinter(const sweeps::study::StudyPlan& plan, bool in_slurm = false)
      : plan_(plan), in_slurm_(in_slurm) {}

  void cell_opened(const results::StudyCellRow& row, size_t c) override;
  void trial_started(const sweeps::Job& job, const results::StudyTrialRow& row, size_t c) override;
  void trial_ended(const sweeps::Job& job, const results::StudyTrialRow& row, size_t c) override;
  void trial_interrupted(const sweeps::Job& job, const sweeps::study::TrialEnd& end,
                         size_t c) override;
  void stop_requested(const sweeps::Job& job, const StopRequest& stop) override;
  void cell_completed(const results::StudyCellRow& row, size_t c) override;
  void ladder_stopped(const std::string& group, const std::string& why) override;
  void finished(const sweeps::JobEvent& e) override;
  void stopping(int level) override;

 private:
  std::string tag(size_t c) const;
  const sweeps::study::StudyPlan& plan_;
  bool in_slurm_;
};

}  // namespace batchlab::cli
