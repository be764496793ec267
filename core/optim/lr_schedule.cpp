#include "core/optim/lr_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/config/batch_schedule.h"
#include "core/config/learning_rate.h"
#include "core/config/preconditions.h"
#include "core/config/run_length.h"
#include "core/errors.h"

namespace batchlab::optim {
namespace {

constexpr double kPi = 3.14159265358979323846;

Diagnostic problem(const std::string& key, const std::string& value, const std::string& rule) {
  return Diagnostic{"", 0, 0, key, value, rule};
}

}  // namespace

double scaled_peak_lr(const config::OptimConfig& optim, int64_t global_batch) {
  // Preconditions: the schema validated optim (base_lr, base_batch > 0, scaling) and batch.global.
  config::expect_valid(optim, "scaled_peak_lr");
  config::expect(global_batch > 0, "scaled_peak_lr",
                 fmt::format("batch.global = {} must be > 0", global_batch));
  return config::peak_lr(optim, global_batch);
}

LrSchedule::LrSchedule(const config::ScheduleConfig& schedule, double peak_lr,
                       int64_t steps_per_epoch)
    : cfg_(schedule), peak_(peak_lr), budgeted_(schedule.budget_s.has_value()) {
  // Preconditions: the schema's rules, cross-key ones included (one length, at most one warmup,
  // budget with warmup_fraction and without step decay). What is left to check here needs the
  // data size: steps per epoch, and the run length's rules.
  config::expect_valid(schedule, "LrSchedule");
  std::vector<Diagnostic> problems;
  const auto& s = schedule;
  const bool needs_epochs = s.epochs.has_value() || s.warmup_epochs.has_value() ||
                            (s.decay == "step" && !s.milestones.empty());
  if (needs_epochs && steps_per_epoch <= 0) {
    problems.push_back(problem("batch.global", "",
                               fmt::format("{} steps per epoch: the batch is larger than the "
                                           "training set",
                                           steps_per_epoch)));
  }

  if (budgeted_) {
    budget_s_ = *s.budget_s;
    warmup_fraction_ = s.warmup_fraction.value_or(0.0);
  } else if (problems.empty()) {
    // The rules on the run length in steps: those validation runs too where it knows the data
    // size before loading it (config/run_length.h).
    config::validate_run_length(s, steps_per_epoch, problems);
    const config::RunLength length = config::run_length(s, steps_per_epoch);
    total_steps_ = length.total_steps;
    warmup_steps_ = length.warmup_steps;
    for (double m : s.milestones) {
      milestone_at_.push_back(
          static_cast<double>(std::llround(m * static_cast<double>(steps_per_epoch))));
    }
  }
  if (!problems.empty()) throw ConfigError(std::move(problems));
}

LrSchedule::LrSchedule(const config::ScheduleConfig& schedule, const config::OptimConfig& optim,
                       const config::BatchPhases& phases)
    : cfg_(schedule),
      peak_(config::peak_lr(optim, phases.final_geometry().global)),
      phases_(phases) {
  config::expect_valid(schedule, "LrSchedule");
  const auto& s = schedule;
  config::expect(!s.steps && !s.warmup_steps && !s.budget_s && s.epochs, "LrSchedule",
                 "a batch schedule's run is given in epochs, its warmup in epochs or as a "
                 "fraction (validated by config/batch_schedule.h)");
  const auto n = static_cast<double>(phases.train_size());
  total_examples_ = config::scheduled_run_examples(s, phases.train_size());
  if (s.warmup_epochs) warmup_examples_ = std::llround(*s.warmup_epochs * n);
  if (s.warmup_fraction) {
    warmup_examples_ = std::llround(*s.warmup_fraction * static_cast<double>(total_examples_));
  }
  total_steps_ = phases.steps_to_reach(total_examples_);
  warmup_steps_ = phases.steps_to_reach(warmup_examples_);
  for (double m : s.milestones) milestone_at_.push_back(static_cast<double>(std::llround(m * n)));
  for (const auto& phase : phases.phases()) {
    phase_peaks_.push_back(config::peak_lr(optim, phase.geometry.global));
  }
}

double LrSchedule::at_examples(int64_t examples, double peak) const {
  const double x = static_cast<double>(std::clamp<int64_t>(examples, 0, total_examples_));
  return value_at(x, static_cast<double>(warmup_examples_), static_cast<double>(total_examples_),
                  peak);
}

double LrSchedule::value_at(double x, double w, double t, double peak) const {
  if (x < w) {
    const double start = cfg_.warmup_start;
    return peak * (start + (1.0 - start) * x / w);
  }
  const std::string& decay = cfg_.decay;
  if (decay == "step") {
    const auto reached =
        std::count_if(milestone_at_.begin(), milestone_at_.end(), [x](double m) { return x >= m; });
    return peak * std::pow(cfg_.gamma, static_cast<double>(reached));
  }
  const double p = t > w ? std::clamp((x - w) / (t - w), 0.0, 1.0) : 1.0;
  const double end = cfg_.end_lr;
  if (decay == "linear") return peak + (end - peak) * p;
  if (decay == "poly") return end + (peak - end) * std::pow(1.0 - p, cfg_.power);
  if (decay == "cosine") return end + (peak - end) * 0.5 * (1.0 + std::cos(kPi * p));
  return peak;  // constant
}

double LrSchedule::at_step(int64_t step) const {
  if (budgeted_) {
    throw Error(
        "LrSchedule::at_step: a budgeted schedule follows the training clock; use current()");
  }
  const int64_t s = std::clamp<int64_t>(step, 0, total_steps_);
  if (by_examples()) {
    // The examples seen before the update, and the peak of the batch it takes: never the step
    // times the final batch, which would end the decay before the run (and warm up too long).
    return at_examples(phases_->examples_before(s), phase_peaks_[phases_->phase_index(s)]);
  }
  const double x = static_cast<double>(s);
  return value_at(x, static_cast<double>(warmup_steps_), static_cast<double>(total_steps_), peak_);
}

double LrSchedule::at_progress(double fraction) const {
  const double f = std::clamp(fraction, 0.0, 1.0);
  if (budgeted_) return value_at(f, warmup_fraction_, 1.0, peak_);
  if (by_examples()) {
    // The peak of the last phase that has started by then.
    const auto x = std::llround(f * static_cast<double>(total_examples_));
    size_t k = 0;
    for (size_t i = 0; i < phase_peaks_.size(); ++i) {
      if (phases_->phases()[i].start_examples <= x) k = i;
    }
    return at_examples(x, phase_peaks_[k]);
  }
  const double t = static_cast<double>(total_steps_);
  return value_at(f * t, static_cast<double>(warmup_steps_), t, peak_);
}

double LrSchedule::current(int64_t step, double train_elapsed_s) const {
  if (budgeted_) return at_progress(train_elapsed_s / budget_s_);
  return at_step(step);
}

double LrSchedule::progress(int64_t step, double train_elapsed_s) const {
  if (budgeted_) return std::clamp(train_elapsed_s / budget_s_, 0.0, 1.0);
  if (total_steps_ <= 0) return 1.0;  // a run of no steps is over before it starts
  if (by_examples()) {
    const auto seen = static_cast<double>(phases_->examples_before(std::max<int64_t>(step, 0)));
    return std::clamp(seen / static_cast<double>(total_examples_), 0.0, 1.0);
  }
  return std::clamp(static_cast<double>(step) / static_cast<double>(total_steps_), 0.0, 1.0);
}

bool LrSchedule::finished(int64_t step, double train_elapsed_s) const {
  if (budgeted_) return train_elapsed_s >= budget_s_;
  return step >= total_steps_;
}

}  // namespace batchlab::optim
