#include "core/optim/lr_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/errors.h"

namespace batchlab::optim {
namespace {

constexpr double kPi = 3.14159265358979323846;

Diagnostic problem(const std::string& key, const std::string& value, const std::string& rule) {
  return Diagnostic{"", 0, 0, key, value, rule};
}

std::string num(double x) { return fmt::format("{}", x); }

}  // namespace

double scaled_peak_lr(const config::OptimConfig& optim, int64_t global_batch) {
  std::vector<Diagnostic> problems;
  if (optim.base_batch <= 0) {
    problems.push_back(problem("optim.base_batch", std::to_string(optim.base_batch),
                               "must be a positive number of samples"));
  }
  if (global_batch <= 0) {
    problems.push_back(problem("batch.global", std::to_string(global_batch),
                               "must be a positive number of samples"));
  }
  if (optim.scaling != "none" && optim.scaling != "linear" && optim.scaling != "sqrt") {
    problems.push_back(
        problem("optim.scaling", optim.scaling, "must be one of none, linear, sqrt"));
  }
  if (!problems.empty()) throw ConfigError(std::move(problems));
  const double k = static_cast<double>(global_batch) / static_cast<double>(optim.base_batch);
  if (optim.scaling == "linear") return optim.base_lr * k;
  if (optim.scaling == "sqrt") return optim.base_lr * std::sqrt(k);
  return optim.base_lr;
}

LrSchedule::LrSchedule(const config::ScheduleConfig& schedule, double peak_lr,
                       int64_t steps_per_epoch)
    : cfg_(schedule), peak_(peak_lr), budgeted_(schedule.budget_s.has_value()) {
  std::vector<Diagnostic> problems;
  const auto& s = schedule;
  const std::string& decay = s.decay;
  if (decay != "constant" && decay != "linear" && decay != "poly" && decay != "cosine" &&
      decay != "step") {
    problems.push_back(
        problem("schedule.decay", decay, "must be one of constant, linear, poly, cosine, step"));
  }
  const int lengths = int(s.epochs.has_value()) + int(s.steps.has_value()) + int(budgeted_);
  if (lengths != 1) {
    problems.push_back(
        problem("schedule", "", "give exactly one run length: epochs, steps or budget"));
  }
  const int warmups = int(s.warmup_epochs.has_value()) + int(s.warmup_steps.has_value()) +
                      int(s.warmup_fraction.has_value());
  if (warmups > 1) {
    problems.push_back(problem("schedule", "",
                               "give at most one of warmup_epochs, warmup_steps, warmup_fraction"));
  }
  if (s.warmup_fraction && (*s.warmup_fraction < 0.0 || *s.warmup_fraction > 1.0)) {
    problems.push_back(
        problem("schedule.warmup_fraction", num(*s.warmup_fraction), "must be within [0, 1]"));
  }
  if (s.warmup_epochs && *s.warmup_epochs < 0.0) {
    problems.push_back(problem("schedule.warmup_epochs", num(*s.warmup_epochs), "must be >= 0"));
  }
  if (s.warmup_steps && *s.warmup_steps < 0) {
    problems.push_back(
        problem("schedule.warmup_steps", std::to_string(*s.warmup_steps), "must be >= 0"));
  }
  if (s.warmup_start < 0.0) {
    problems.push_back(problem("schedule.warmup_start", num(s.warmup_start), "must be >= 0"));
  }
  if (decay == "poly" && !(s.power > 0.0)) {
    problems.push_back(problem("schedule.power", num(s.power), "must be > 0"));
  }
  if (decay == "step" && !(s.gamma > 0.0)) {
    problems.push_back(problem("schedule.gamma", num(s.gamma), "must be > 0"));
  }
  for (double m : s.milestones) {
    if (m < 0.0) problems.push_back(problem("schedule.milestones", num(m), "must be >= 0"));
  }
  const bool needs_epochs = s.epochs.has_value() || s.warmup_epochs.has_value() ||
                            (decay == "step" && !s.milestones.empty());
  if (needs_epochs && steps_per_epoch <= 0) {
    problems.push_back(problem("batch.global", "",
                               fmt::format("{} steps per epoch: the batch is larger than the "
                                           "training set",
                                           steps_per_epoch)));
  }

  if (budgeted_) {
    budget_s_ = *s.budget_s;
    if (!(budget_s_ > 0.0)) {
      problems.push_back(problem("schedule.budget", num(budget_s_), "must be a positive duration"));
    }
    if (s.warmup_epochs || s.warmup_steps) {
      problems.push_back(
          problem(s.warmup_epochs ? "schedule.warmup_epochs" : "schedule.warmup_steps", "",
                  "a budgeted schedule warms up by warmup_fraction"));
    }
    if (decay == "step") {
      problems.push_back(problem("schedule.decay", decay,
                                 "step decay has epoch milestones; a budgeted schedule needs "
                                 "constant, linear, poly or cosine"));
    }
    warmup_fraction_ = s.warmup_fraction.value_or(0.0);
  } else if (problems.empty()) {
    const double spe = static_cast<double>(steps_per_epoch);
    total_steps_ = s.steps ? *s.steps : std::llround(*s.epochs * spe);
    if (total_steps_ <= 0) {
      problems.push_back(problem(s.steps ? "schedule.steps" : "schedule.epochs",
                                 s.steps ? std::to_string(*s.steps) : num(*s.epochs),
                                 "the run must have at least one step"));
    }
    if (s.warmup_steps) warmup_steps_ = *s.warmup_steps;
    if (s.warmup_epochs) warmup_steps_ = std::llround(*s.warmup_epochs * spe);
    if (s.warmup_fraction) {
      warmup_steps_ = std::llround(*s.warmup_fraction * static_cast<double>(total_steps_));
    }
    if (warmup_steps_ > total_steps_ && total_steps_ > 0) {
      problems.push_back(problem("schedule", "",
                                 fmt::format("warmup ({} steps) is longer than the run ({} steps)",
                                             warmup_steps_, total_steps_)));
    }
    for (double m : s.milestones) {
      milestone_at_.push_back(static_cast<double>(std::llround(m * spe)));
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
  return std::clamp(static_cast<double>(step) / static_cast<double>(total_steps_), 0.0, 1.0);
}

bool LrSchedule::finished(int64_t step, double train_elapsed_s) const {
  if (budgeted_) return train_elapsed_s >= budget_s_;
  return step >= total_steps_;
}

}  // namespace batchlab::optim
