// [schedule]: the learning-rate schedule and the run length (experiment_config.h describes the
// config structs as a whole).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace batchlab::config {

struct ScheduleConfig {
  // Warmup: at most one of the three.
  std::optional<double> warmup_epochs;
  std::optional<int64_t> warmup_steps;
  std::optional<double> warmup_fraction;
  double warmup_start = 0.0;       // LR at step 0 as a fraction of the peak
  std::string decay = "constant";  // constant | linear | poly | cosine | step
  double power = 2.0;              // poly
  double end_lr = 0.0;             // linear, poly, cosine: final LR (absolute)
  std::vector<double> milestones;  // step: epochs at which the LR is multiplied by gamma
  double gamma = 0.1;
  // Length: exactly one of the three.
  std::optional<double> epochs;
  std::optional<int64_t> steps;
  std::optional<double>
      budget_s;  // wall-clock budget ("2h", "90m", "45s"); progress = time fraction
};

}  // namespace batchlab::config
