// A target: a metric and the value to reach, and the direction it is reached from. The one shape
// of a study's target from the spec to the report: [study] target (sweeps/spec.h StudySpec), the
// engine's decisions (sweeps/study/decisions.h), a trial job's train.target (sweeps/expand.h
// Job), the study_cells row (results/rows.h StudyCellRow), the records the reports read
// (analysis/study_records.h) and the run report's milestone targets (analysis/report.h).
//
// It lives in results/ because that is the lowest folder both sweeps/ and analysis/ may include
// (DESIGN.md's folder direction). The trainer's own train.target is config::Target (core/ may not
// include results/); it is the same pair, and core/config/target_rules.h's reaches_target agrees
// with reached_by below on every metric a config accepts.
#pragma once

#include <string>

namespace batchlab::results {

struct Target {
  // val_acc | val_loss for a study (its selection metric); a run's train.target may name test_*
  // or train_*, and a steps table (analysis/steps_table.h) any column.
  std::string metric;
  double value = 0.0;

  // Losses are reached from above (a metric whose name holds "loss"), everything else from below.
  bool lower_is_better() const;
  // Whether `measured` is at least as good as `level` in this target's direction.
  bool at_least_as_good(double measured, double level) const;
  // Whether `measured` reaches the target's value.
  bool reached_by(double measured) const { return at_least_as_good(measured, value); }

  bool operator==(const Target& o) const { return metric == o.metric && value == o.value; }
  // By metric, then value: the run report lists its targets in this order.
  bool operator<(const Target& o) const {
    return metric != o.metric ? metric < o.metric : value < o.value;
  }
};

}  // namespace batchlab::results
