#include "core/train/reporter.h"

namespace batchlab::train {

const char* to_string(RunStatus status) {
  switch (status) {
    case RunStatus::done:
      return "done";
    case RunStatus::diverged:
      return "diverged";
    case RunStatus::failed:
      return "failed";
    case RunStatus::preempted:
      return "preempted";
    case RunStatus::stopped:
      return "stopped";
  }
  return "failed";
}

void FanoutReporter::run_started(const RunGeometry& g) {
  for (auto& r : reporters_) r->run_started(g);
}
void FanoutReporter::step(const StepRecord& rec) {
  for (auto& r : reporters_) r->step(rec);
}
void FanoutReporter::eval(const EvalRecord& rec) {
  for (auto& r : reporters_) r->eval(rec);
}
void FanoutReporter::milestone(const MilestoneRecord& rec) {
  for (auto& r : reporters_) r->milestone(rec);
}
void FanoutReporter::layer_stats(const std::vector<LayerStatRecord>& rows) {
  for (auto& r : reporters_) r->layer_stats(rows);
}
void FanoutReporter::noise_scale(const NoiseRecord& rec) {
  for (auto& r : reporters_) r->noise_scale(rec);
}
void FanoutReporter::note(const std::string& text) {
  for (auto& r : reporters_) r->note(text);
}
void FanoutReporter::run_finished(const RunOutcome& o) {
  for (auto& r : reporters_) r->run_finished(o);
}
void FanoutReporter::flush() {
  for (auto& r : reporters_) r->flush();
}

}  // namespace batchlab::train
