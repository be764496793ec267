// A target: a metric and the value to reach, and the direction it is reached from. The one type of
// a target from the config and the spec to the report: train.target (TrainConfig::targets, read by
// core/config/schema.cpp; the trainer's milestones and stop_at_target, core/train/targets.h), a
// study's [study] target (sweeps/spec.h StudySpec), the engine's decisions
// (sweeps/study/decisions.h), a trial job's train.target (sweeps/expand.h Job), the study_cells row
// (results/rows.h StudyCellRow), the records the reports read (analysis/study_records.h) and the
// run report's milestone targets (analysis/report.h).
//
// Header-only and free of toml++ and torch (fmt only): results/ and analysis/ include it without
// linking core/config (DESIGN.md lets them include nothing else of core/config). The rules of a
// target's value (an accuracy in (0, 1], a loss >= 0) are core/config/target_rules.h's.
#pragma once

#include <fmt/format.h>

#include <string>

namespace batchlab::config {

struct Target {
  // val_acc | val_loss | test_acc | test_loss | train_acc | train_loss in a config (val_* needs
  // data.val_size > 0); val_acc | val_loss for a study (its selection metric); any column in a
  // steps table (analysis/steps_table.h).
  std::string metric;
  double value = 0.0;

  // Losses are reached from above (a metric whose name holds "loss"), everything else from below.
  bool lower_is_better() const { return metric.find("loss") != std::string::npos; }
  // Whether `measured` is at least as good as `level` in this target's direction.
  bool at_least_as_good(double measured, double level) const {
    return lower_is_better() ? measured <= level : measured >= level;
  }
  // Whether `measured` reaches the target's value.
  bool reached_by(double measured) const { return at_least_as_good(measured, value); }
  // The condition a measurement meets when it reaches the target: "val_acc >= 0.88",
  // "val_loss <= 0.5" (the value in its shortest form).
  std::string condition() const {
    return fmt::format("{} {} {}", metric, lower_is_better() ? "<=" : ">=", value);
  }

  bool operator==(const Target& o) const { return metric == o.metric && value == o.value; }
  // By metric, then value: the run report lists its targets in this order.
  bool operator<(const Target& o) const {
    return metric != o.metric ? metric < o.metric : value < o.value;
  }
};

}  // namespace batchlab::config
