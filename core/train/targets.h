// Targets (train.target): the metrics an evaluation can be compared with, and when one is met.
// Accuracies are reached from below, losses from above (core/config/schema.h names them).
#pragma once

#include <optional>
#include <string>

#include "core/config/train_config.h"
#include "core/train/reporter.h"

namespace batchlab::train {

// The value of `metric` (val_acc, test_loss, ...) in `r`; absent when that evaluation did not
// measure it.
std::optional<double> metric_value(const std::string& metric, const EvalRecord& r);

// Whether `r` reaches `target` (never when the metric was not measured).
bool target_met(const config::Target& target, const EvalRecord& r);

}  // namespace batchlab::train
