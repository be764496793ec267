// Human-readable progress: a line every few seconds with step, epoch, loss, LR, throughput and ETA,
// and one line per evaluation and milestone.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include "core/train/reporter.h"

namespace batchlab::train {

class ConsoleReporter : public Reporter {
 public:
  // `out` stays owned by the caller; `interval_s` is the minimum time between step lines.
  explicit ConsoleReporter(std::FILE* out, double interval_s = 5.0);

  void run_started(const RunGeometry& g) override;
  void step(const StepRecord& r) override;
  void eval(const EvalRecord& r) override;
  void milestone(const MilestoneRecord& r) override;
  void note(const std::string& text) override;
  void run_finished(const RunOutcome& o) override;

 private:
  std::FILE* out_;
  double interval_s_;
  RunGeometry geometry_;
  std::chrono::steady_clock::time_point last_line_{};
  bool printed_any_ = false;
};

// "1h02m", "3m05s", "12s": compact durations for progress lines.
std::string format_duration(double seconds);

}  // namespace batchlab::train
