#include "core/optim/lr_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

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

double LrSchedule::value_at(double x, double w, double t) const {
  if (x < w) {
    const double start = cfg_.warmup_start;
    return peak_ * (start + (1.0 - start) * x / w);
  }
  const std::string& decay = cfg_.decay;
  if (decay == "step") {
    const auto reached =
        std::count_if(milestone_at_.begin(), milestone_at_.end(), [x](double m) { return x >= m; });
    return peak_ * std::pow(cfg_.gamma, static_cast<double>(reached));
  }
  const double p = t > w ? std::clamp((x - w) / (t - w), 0.0, 1.0) : 1.0;
  const double end = cfg_.end_lr;
  if (decay == "linear") return peak_ + (end - peak_) * p;
  if (decay == "poly") return end + (peak_ - end) * std::pow(1.0 - p, cfg_.power);
  if (decay == "cosine") return end + (peak_ - end) * 0.5 * (1.0 + std::cos(kPi * p));
  return peak_;  // constant
}

double LrSchedule::at_step(int64_t step) const {
  if (budgeted_) {
    throw Error(
        "LrSchedule::at_step: a budgeted schedule follows the training clock; use current()");
  }
  const double x = static_cast<double>(std::clamp<int64_t>(step, 0, total_steps_));
  return value_at(x, static_cast<double>(warmup_steps_), static_cast<double>(total_steps_));
}

double LrSchedule::at_progress(double fraction) const {
  const double f = std::clamp(fraction, 0.0, 1.0);
  if (budgeted_) return value_at(f, warmup_fraction_, 1.0);
  const double t = static_cast<double>(total_steps_);
  return value_at(f * t, static_cast<double>(warmup_steps_), t);
}

double LrSchedule::current(int64_t step, double train_elapsed_s) const {
  if (budgeted_) return at_progress(train_elapsed_s / budget_s_);
  return at_step(step);
}

double LrSchedule::progress(int64_t step, double train_elapsed_s) const {
  if (budgeted_) return std::clamp(train_elapsed_s / budget_s_, 0.0, 1.0);
  if (total_steps_ <= 0) return 1.0;  // a run of no steps is over before it starts
  return std::clamp(static_cast<double>(step) / static_cast<double>(total_steps_), 0.0, 1.0);
}

bool LrSchedule::finished(int64_t step, double train_elapsed_s) const {
  if (budgeted_) return train_elapsed_s >= budget_s_;
  return step >= total_steps_;
}

}  // namespace batchlab::optim
