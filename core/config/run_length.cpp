#include "core/config/run_length.h"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <string_view>

#include "core/config/batch_geometry.h"
#include "core/config/canonical.h"
#include "core/config/validation.h"

namespace batchlab::config {
namespace {

Diagnostic length_problem(std::string key, std::string value, std::string rule) {
  Diagnostic d;
  d.key = std::move(key);
  d.value = std::move(value);
  d.rule = std::move(rule);
  return d;
}

int64_t epochs_to_steps(double epochs, int64_t steps_per_epoch) {
  return std::llround(epochs * static_cast<double>(steps_per_epoch));
}

// Whether a diagnostic already found is about a key the data-size rules build on.
bool about_run_length(const Diagnostic& d) {
  for (std::string_view prefix : {"data", "batch.global", "schedule"}) {
    if (std::string_view(d.key).substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

}  // namespace

RunLength run_length(const ScheduleConfig& s, int64_t steps_per_epoch) {
  RunLength length;
  length.total_steps =
      s.steps ? *s.steps : epochs_to_steps(s.epochs.value_or(0.0), steps_per_epoch);
  if (s.warmup_steps) length.warmup_steps = *s.warmup_steps;
  if (s.warmup_epochs) length.warmup_steps = epochs_to_steps(*s.warmup_epochs, steps_per_epoch);
  if (s.warmup_fraction) {
    length.warmup_steps =
        std::llround(*s.warmup_fraction * static_cast<double>(length.total_steps));
  }
  return length;
}

void validate_run_length(const ScheduleConfig& s, int64_t steps_per_epoch,
                         std::vector<Diagnostic>& out, const ReadContext* read) {
  if (s.budget_s || steps_per_epoch <= 0) return;
  const RunLength length = run_length(s, steps_per_epoch);
  const std::string per_epoch = fmt::format("{} steps per epoch", steps_per_epoch);
  // schedule.steps = 0 asks for no update (the starting weights are evaluated); epochs that round
  // to no step are a mistake.
  if (s.epochs && length.total_steps <= 0 && keys_intact(read, {"schedule.epochs"})) {
    out.push_back(length_problem("schedule.epochs", format_float(*s.epochs),
                                 per_epoch +
                                     " make this no step at all; train longer (schedule.steps = "
                                     "0 if no update is meant)"));
    return;
  }
  if (length.warmup_steps <= length.total_steps || length.total_steps <= 0) return;
  // A warmup longer than the run: in the same unit validate_schedule has said so already.
  if (s.warmup_steps && s.epochs &&
      keys_intact(read, {"schedule.warmup_steps", "schedule.epochs"})) {
    out.push_back(length_problem(
        "schedule.warmup_steps", format_integer(*s.warmup_steps),
        fmt::format("longer than the run: schedule.epochs = {} at {} is {} steps; pick a warmup "
                    "of at most {} steps",
                    format_float(*s.epochs), per_epoch, length.total_steps, length.total_steps)));
  }
  if (s.warmup_epochs && s.steps &&
      keys_intact(read, {"schedule.warmup_epochs", "schedule.steps"})) {
    out.push_back(length_problem(
        "schedule.warmup_epochs", format_float(*s.warmup_epochs),
        fmt::format("longer than the run: at {} this warmup is {} steps and schedule.steps = {}; "
                    "pick a warmup of at most {:.4g} epochs",
                    per_epoch, length.warmup_steps, *s.steps,
                    static_cast<double>(*s.steps) / static_cast<double>(steps_per_epoch))));
  }
}

void validate_data_size_rules(const ExperimentConfig& config, const LoadOptions& options,
                              const std::vector<Diagnostic>& so_far, std::vector<Diagnostic>& out,
                              const ReadContext* read) {
  if (!options.training_examples || config.schedule.budget_s) return;
  for (const auto& d : so_far) {
    if (about_run_length(d)) return;
  }
  if (!keys_intact(read, {"data.dataset", "data.path", "data.train_size", "data.val_size",
                          "batch.global"})) {
    return;
  }
  const std::optional<int64_t> examples = options.training_examples(config.data);
  // A batch larger than the training set has no step per epoch: the batch geometry says so.
  if (!examples || config.batch.global <= 0 || *examples < config.batch.global) return;
  validate_run_length(config.schedule, steps_per_epoch(*examples, config.batch.global), out, read);
}

}  // namespace batchlab::config
