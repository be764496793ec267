// [train]: the training loop, evaluation, targets, checkpoints and data parallelism
// (experiment_config.h describes the config structs as a whole).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/target.h"

namespace batchlab::config {

struct TrainConfig {
  int64_t seed = 0;
  std::string precision = "fp32";  // fp32 | bf16
  std::string device = "cpu";
  int64_t threads = 0;      // intra-op threads; 0 = hardware concurrency
  double eval_every = 1.0;  // epochs between evaluations (fractions allowed)
  // When > 0, evaluations follow a log-spaced step grid instead of eval_every (which is then
  // ignored): the distinct values of ceil(2^(k / evals_per_octave)), k = 0, 1, 2, ..., up to the
  // run's total steps, plus the final step. 0 = off.
  int64_t evals_per_octave = 0;
  // When > 0 (and evals_per_octave is 0): an evaluation every this many steps instead of
  // eval_every, for a caller that needs evaluations at given steps before the data's size is known
  // (a fixed-budget search's rungs, sweeps/study/budget_plan.h). 0 = off.
  int64_t eval_every_steps = 0;
  // "always": the fixed training sample and the test split are measured at every evaluation;
  // "final": only at the last one (the validation split, when there is one, is measured at every
  // evaluation either way). Studies use "final".
  std::string full_eval = "always";
  int64_t log_every = 1;  // steps between rows of the steps table
  int64_t layer_stats_every = 0;
  bool noise_scale = false;
  std::vector<Target> targets;  // `target = {metric, value}` or `target = [{...}, ...]`
  bool stop_at_target = false;
  int64_t checkpoint_every = 0;     // steps; 0 = off
  double checkpoint_minutes = 0.0;  // also after this much wall time; 0 = off
  double divergence = 10.0;  // loss above this factor of its first value ends the run; 0 = off
  // Data parallelism (world size > 1): c10d backend ("auto" = nccl on CUDA when built with it, gloo
  // otherwise), the collective timeout after which a missing rank ends the job, and the gradient
  // all-reduce bucket size.
  std::string dist_backend = "auto";
  double dist_timeout_s = 300.0;
  double bucket_mb = 25.0;
};

}  // namespace batchlab::config
