#include "core/config/batch_schedule.h"

#include <fmt/format.h>

#include <cmath>
#include <string_view>

#include "core/config/batch_geometry.h"
#include "core/config/canonical.h"
#include "core/config/limits.h"
#include "core/config/toml_text.h"
#include "core/config/validation.h"

namespace batchlab::config {
namespace {

Diagnostic problem(std::string key, std::string value, std::string rule) {
  Diagnostic d;
  d.key = std::move(key);
  d.value = std::move(value);
  d.rule = std::move(rule);
  return d;
}

std::string point_text(const BatchPoint& p) {
  return fmt::format("[{}, {}]", format_integer(p.examples), format_integer(p.global));
}

std::string point_key(size_t i) { return fmt::format("batch.schedule[{}]", i); }

bool ramp_set(const BatchConfig& b) { return b.ramp_start > 0 || b.ramp_double_every > 0; }

// The ramp's points: ramp_start x 2^k from k x ramp_double_every examples on, capped at global.
std::vector<BatchPoint> ramp_points(const BatchConfig& b) {
  std::vector<BatchPoint> out = {{0, b.ramp_start}};
  while (out.back().global < b.global) {
    out.push_back(
        {out.back().examples + b.ramp_double_every, std::min(b.global, 2 * out.back().global)});
  }
  return out;
}

// One batch of the schedule against the geometry rule (batch_geometry.h) and the ghost
// batch-norm group: every phase must split into whole micro-batches on every device.
void check_point_geometry(const std::string& key, const BatchPoint& p, const BatchConfig& batch,
                          int64_t world, std::vector<Diagnostic>& out) {
  const int64_t unit = batch_multiple(batch.micro, world);
  if (batch.micro > p.global) {
    out.push_back(problem(key, point_text(p),
                          fmt::format("batch {} is smaller than batch.micro ({}): every phase "
                                      "needs whole micro-batches; start the schedule at a batch "
                                      "of at least {} or lower batch.micro",
                                      p.global, batch.micro, unit)));
    return;
  }
  if (!accumulation(p.global, batch.micro, world)) {
    out.push_back(problem(
        key, point_text(p),
        fmt::format("batch {} is not world_size ({}) x micro ({}) x a whole accumulation; give "
                    "every batch of the schedule as a multiple of {}",
                    p.global, world, micro_batch(p.global, batch.micro, world), unit)));
    return;
  }
  const int64_t micro = micro_batch(p.global, batch.micro, world);
  if (batch.bn_group > 0 && micro % batch.bn_group != 0) {
    out.push_back(problem(key, point_text(p),
                          fmt::format("its micro-batch ({}) is not a whole number of "
                                      "batch.bn_group ({}) groups; pick batches whose micro-batch "
                                      "bn_group divides, or set batch.micro",
                                      micro, batch.bn_group)));
  }
}

// The explicit schedule's own rules; false when a point is out of order (the geometry and length
// rules then have nothing sound to say).
bool check_points(const BatchConfig& b, std::vector<Diagnostic>& out) {
  const auto& s = b.schedule;
  const size_t before = out.size();
  if (s.size() == 1) {
    out.push_back(problem("batch.schedule", fmt::format("[{}]", point_text(s[0])),
                          fmt::format("one point is a fixed batch: set batch.global = {} and "
                                      "remove batch.schedule",
                                      s[0].global)));
    return false;
  }
  for (size_t i = 0; i < s.size(); ++i) {
    const BatchPoint& p = s[i];
    if (p.global <= 0 || p.global > kMaxBatch) {
      out.push_back(
          problem(point_key(i), point_text(p),
                  fmt::format("the batch must be in [1, {}]", format_integer(kMaxBatch))));
    }
    if (p.examples < 0 || p.examples > kMaxScheduleExamples) {
      out.push_back(problem(
          point_key(i), point_text(p),
          fmt::format("the examples must be in [0, {}]", format_integer(kMaxScheduleExamples))));
    }
    if (i == 0 && p.examples != 0) {
      out.push_back(problem(point_key(0), point_text(p),
                            fmt::format("the first point must be at 0 examples (the batch the run "
                                        "starts with); add a first point [0, B] before it")));
    }
    if (i == 0) continue;
    if (p.examples <= s[i - 1].examples) {
      out.push_back(problem(point_key(i), point_text(p),
                            fmt::format("the examples must increase from point to point ({} "
                                        "follows {}); sort the points and drop duplicates",
                                        p.examples, s[i - 1].examples)));
    }
    if (p.global <= s[i - 1].global) {
      out.push_back(problem(point_key(i), point_text(p),
                            fmt::format("the batch must grow from point to point ({} follows {}); "
                                        "a batch-size schedule only increases the batch",
                                        p.global, s[i - 1].global)));
    }
  }
  if (b.global > 0 && !s.empty() && s.back().global != b.global) {
    out.push_back(problem("batch.global", format_integer(b.global),
                          fmt::format("must be the last batch of batch.schedule ({}), the batch "
                                      "the run ends at; set global = {} or leave it out",
                                      s.back().global, s.back().global)));
  }
  return out.size() == before;
}

// The ramp's own rules; false when it cannot be expanded into points.
bool check_ramp(const BatchConfig& b, std::vector<Diagnostic>& out) {
  if (b.ramp_start > 0 && b.ramp_double_every <= 0) {
    out.push_back(problem("batch.ramp_start", format_integer(b.ramp_start),
                          "needs batch.ramp_double_every, the examples between doublings (e.g. "
                          "ramp_double_every = 1000000)"));
    return false;
  }
  if (b.ramp_double_every > 0 && b.ramp_start <= 0) {
    out.push_back(problem("batch.ramp_double_every", format_integer(b.ramp_double_every),
                          "needs batch.ramp_start, the batch the ramp starts at (below "
                          "batch.global)"));
    return false;
  }
  if (b.global > 0 && b.ramp_start >= b.global) {
    out.push_back(problem("batch.ramp_start", format_integer(b.ramp_start),
                          fmt::format("must be below batch.global ({}), the batch the ramp ends "
                                      "at; lower ramp_start, or remove the ramp for a fixed batch",
                                      b.global)));
    return false;
  }
  return b.global > 0;
}

// Keys that fix a length in steps, or progress by the clock, which a changing batch leaves
// without a meaning.
void check_combined_keys(const ScheduleConfig& s, std::vector<Diagnostic>& out,
                         const ReadContext* read) {
  const std::string why =
      "a batch schedule counts progress in examples seen, and a number of "
      "steps of a growing batch is no fixed length";
  if (s.steps && keys_intact(read, {"schedule.steps"})) {
    out.push_back(problem("schedule.steps", format_integer(*s.steps),
                          why + "; give the run length as schedule.epochs"));
  }
  if (s.warmup_steps && keys_intact(read, {"schedule.warmup_steps"})) {
    out.push_back(problem("schedule.warmup_steps", format_integer(*s.warmup_steps),
                          why + "; give the warmup as schedule.warmup_epochs or warmup_fraction"));
  }
  if (s.budget_s && keys_intact(read, {"schedule.budget"})) {
    out.push_back(problem("schedule.budget", fmt::format("{:g} s", *s.budget_s),
                          "a batch schedule grows the batch at examples seen, a budget ends the "
                          "run by the clock; give the run length as schedule.epochs"));
  }
}

}  // namespace

bool BatchScheduleCodec::read(const toml::node& node, std::vector<BatchPoint>& out,
                              ReadContext& ctx, const std::string& path) const {
  constexpr std::string_view kExpected = "an array of [examples, global batch] integer pairs";
  const auto* array = node.as_array();
  if (array == nullptr) {
    ctx.type_error(path, node, kExpected);
    return false;
  }
  std::vector<BatchPoint> points;
  for (size_t i = 0; i < array->size(); ++i) {
    const toml::node& item = *array->get(i);
    const auto* pair = item.as_array();
    if (pair == nullptr || pair->size() != 2 || !pair->get(0)->is_integer() ||
        !pair->get(1)->is_integer()) {
      ctx.bad_value(
          path, node,
          fmt::format("expected {}, but element {} is {}; write e.g. [[0, 64], "
                      "[100000, 128]]",
                      kExpected, i,
                      pair == nullptr ? node_type_name(item)
                                      : fmt::format("an array of {} elements", pair->size())));
      return false;
    }
    ctx.note(path + "[" + std::to_string(i) + "]", item);
    points.push_back({pair->get(0)->as_integer()->get(), pair->get(1)->as_integer()->get()});
  }
  out = std::move(points);
  return true;
}

std::string BatchScheduleCodec::write(const std::vector<BatchPoint>& points) const {
  std::string out = "[";
  for (size_t i = 0; i < points.size(); ++i) out += (i > 0 ? ", " : "") + point_text(points[i]);
  return out + "]";
}

bool has_batch_schedule(const BatchConfig& batch) {
  return !batch.schedule.empty() || ramp_set(batch);
}

std::vector<BatchPoint> batch_points(const BatchConfig& batch) {
  if (!batch.schedule.empty()) return batch.schedule;
  if (batch.ramp_start > 0 && batch.ramp_double_every > 0) return ramp_points(batch);
  return {{0, batch.global}};
}

int64_t default_global_batch(const ExperimentConfig& config) {
  const auto& s = config.batch.schedule;
  return s.empty() ? 0 : s.back().global;
}

void validate_batch_schedule(const ExperimentConfig& config, int64_t world_size,
                             std::vector<Diagnostic>& out, const ReadContext* read) {
  const BatchConfig& b = config.batch;
  if (!has_batch_schedule(b) || world_size < 1) return;
  const std::vector<std::string> keys = {
      "batch.schedule", "batch.ramp_start", "batch.ramp_double_every",
      "batch.global",   "batch.micro",      "batch.bn_group"};
  if (!keys_intact(read, keys)) return;
  if (!b.schedule.empty() && ramp_set(b)) {
    out.push_back(problem("batch.ramp_start", format_integer(b.ramp_start),
                          "batch.schedule is set too: give the batch schedule one way, as "
                          "explicit points or as a ramp; remove the other"));
    return;
  }
  check_combined_keys(config.schedule, out, read);
  const bool sound = b.schedule.empty() ? check_ramp(b, out) : check_points(b, out);
  if (!sound || b.micro < 0 || b.bn_group < 0) return;
  const std::vector<BatchPoint> points = batch_points(b);
  // The last point is batch.global, whose geometry validate_batch_geometry reports.
  for (size_t i = 0; i + 1 < points.size(); ++i) {
    check_point_geometry(b.schedule.empty() ? "batch.ramp_start" : point_key(i), points[i], b,
                         world_size, out);
  }
}

int64_t scheduled_run_examples(const ScheduleConfig& schedule, int64_t train_examples) {
  return std::llround(schedule.epochs.value_or(0.0) * static_cast<double>(train_examples));
}

void validate_batch_schedule_length(const BatchConfig& batch, int64_t run_examples,
                                    std::vector<Diagnostic>& out) {
  const std::string end = fmt::format(
      "the run's end ({} examples: schedule.epochs x the "
      "training examples)",
      run_examples);
  if (!batch.schedule.empty()) {
    for (size_t i = 1; i < batch.schedule.size(); ++i) {
      const BatchPoint& p = batch.schedule[i];
      if (p.examples < run_examples) continue;
      out.push_back(problem(point_key(i), point_text(p),
                            fmt::format("at {} examples, at or past {}; move the point earlier "
                                        "or train longer",
                                        p.examples, end)));
    }
    return;
  }
  const std::vector<BatchPoint> points = batch_points(batch);
  const BatchPoint& last = points.back();
  if (points.size() < 2 || last.examples < run_examples) return;
  const auto doublings = static_cast<int64_t>(points.size() - 1);
  out.push_back(problem(
      "batch.ramp_double_every", format_integer(batch.ramp_double_every),
      fmt::format("the ramp reaches batch.global ({}) only at {} examples ({} "
                  "doublings), at or past {}; double at least every {} examples "
                  "or train longer",
                  last.global, last.examples, doublings, end, (run_examples - 1) / doublings)));
}

void validate_batch_schedule_size_rules(const ExperimentConfig& config, const LoadOptions& options,
                                        const std::vector<Diagnostic>& so_far,
                                        std::vector<Diagnostic>& out, const ReadContext* read) {
  if (!options.training_examples || !has_batch_schedule(config.batch) || !config.schedule.epochs) {
    return;
  }
  for (const auto& d : so_far) {
    for (std::string_view prefix : {"data", "batch", "schedule"}) {
      if (std::string_view(d.key).substr(0, prefix.size()) == prefix) return;
    }
  }
  if (!keys_intact(read, {"data.dataset", "data.path", "data.train_size", "data.val_size",
                          "schedule.epochs"})) {
    return;
  }
  const std::optional<int64_t> examples = options.training_examples(config.data);
  if (!examples || *examples <= 0) return;
  validate_batch_schedule_length(config.batch, scheduled_run_examples(config.schedule, *examples),
                                 out);
}

}  // namespace batchlab::config
