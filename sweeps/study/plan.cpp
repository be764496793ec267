#include "sweeps/study/plan.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "core/config/canonical.h"
#include "core/config/loader.h"
#include "core/config/sha256.h"
#include "core/config/validation.h"
#include "results/batch_ladder.h"
#include "results/scaling_fit.h"
#include "sweeps/derived.h"

namespace batchlab::sweeps::study {

namespace {

constexpr const char* kBatchKey = "batch.global";
constexpr const char* kSeedKey = "train.seed";
constexpr int64_t kMinWarmupSteps = 5;

toml::table parse_config(const Job& job) {
  try {
    return toml::parse(job.config_toml, std::string_view("cell"));
  } catch (const toml::parse_error& e) {
    // The expansion wrote this text: a failure here is a bug, not bad input.
    throw Error(fmt::format("cannot read back the canonical config of job {}: {}", job.run_id,
                            e.description()));
  }
}

toml::table& section(toml::table& root, const char* name) {
  if (!root.contains(name)) root.insert_or_assign(name, toml::table{});
  return *root.get_as<toml::table>(name);
}

// A coordinate as a TOML value: numbers and booleans as written, everything else a string.
std::string toml_value(const std::string& text) {
  try {
    auto t = toml::parse("v = " + text);
    if (!t["v"].is_string()) return text;
  } catch (const toml::parse_error&) {
  }
  return config::format_string(text);
}

Diagnostic at(const SweepSpec& spec, Location where, std::string key, std::string value,
              std::string rule) {
  return Diagnostic{spec.source,    where.line,       where.column,
                    std::move(key), std::move(value), std::move(rule)};
}

// The cap in steps a cell's trials get at most.
std::optional<int64_t> max_cap(const StudySpec& study, const Job& job) {
  if (auto cap =
          results::study_max_cap_steps(study.max_steps, study.max_samples, job.global_batch)) {
    return cap;
  }
  if (job.derived.total_steps && *job.derived.total_steps > 0) return job.derived.total_steps;
  return std::nullopt;
}

// What shapes every trial of a cell besides its config: a cell studied under other settings is
// another cell (its stored trials would not be this one's).
std::string trial_settings(const StudySpec& s) {
  return fmt::format(
      "target {} {}; factor {}; evals/octave {}; warmup {}; max_steps {}; "
      "max_samples {}",
      s.target.metric, config::format_float(s.target.value), config::format_float(s.lr_factor),
      s.evals_per_octave, config::format_float(s.warmup), s.max_steps.value_or(0),
      s.max_samples.value_or(0));
}

Cell describe_cell(const Plan& plan, const StudySpec& study, const Job& job, size_t index) {
  Cell cell;
  cell.job = index;
  std::vector<std::string> line, group;
  for (size_t k = 0; k < plan.coordinate_keys.size(); ++k) {
    const std::string& key = plan.coordinate_keys[k];
    cell.cell_toml += fmt::format("\"{}\" = {}\n", key, toml_value(job.coordinates[k]));
    if (key == kBatchKey) continue;
    line.push_back(key + "=" + job.coordinates[k]);
    if (key != kSeedKey) group.push_back(line.back());
  }
  cell.line = fmt::format("{}", fmt::join(line, " "));
  cell.group = fmt::format("{}", fmt::join(group, " "));
  // The id hashes the resolved config without the learning rate: the cell, whatever its centre.
  toml::table config = parse_config(job);
  section(config, "optim").erase("base_lr");
  std::ostringstream text;
  text << config;
  cell.cell_id =
      config::sha256_hex("study cell\n" + trial_settings(study) + "\n" + text.str()).substr(0, 16);
  return cell;
}

// The next smaller batch of each cell's line.
void link_lines(const Plan& plan, std::vector<Cell>& cells) {
  for (auto& cell : cells) {
    const int64_t batch = plan.jobs[cell.job].global_batch;
    for (size_t j = 0; j < cells.size(); ++j) {
      const int64_t other = plan.jobs[cells[j].job].global_batch;
      if (cells[j].line != cell.line || other >= batch) continue;
      if (!cell.previous || other > plan.jobs[cells[*cell.previous].job].global_batch) {
        cell.previous = j;
      }
    }
  }
}

// The first seed's cell of each later seed's cell: the first in plan order with the same group
// and batch.
void link_seeds(const Plan& plan, std::vector<Cell>& cells) {
  for (size_t c = 0; c < cells.size(); ++c) {
    const int64_t batch = plan.jobs[cells[c].job].global_batch;
    for (size_t j = 0; j < c; ++j) {
      if (cells[j].group == cells[c].group && plan.jobs[cells[j].job].global_batch == batch) {
        cells[c].first_seed = j;
        break;
      }
    }
  }
}

}  // namespace

namespace {

// [study.bound]: which cells are bounded by the reference; a reference that names no line, or
// every line, bounds nothing and is a mistake in the spec.
void mark_bounded(const SweepSpec& spec, const Plan& plan, std::vector<Cell>& cells,
                  std::vector<Diagnostic>& problems) {
  const auto& bound = spec.study->bound;
  if (!bound) return;
  size_t references = 0;
  for (auto& cell : cells) {
    cell.bounded = !job_holds(spec, plan, plan.jobs[cell.job], bound->conditions);
    if (!cell.bounded) ++references;
  }
  if (references == 0 || references == cells.size()) {
    problems.push_back(at(spec, bound->where, "study.bound.reference", bound->reference,
                          references == 0 ? "matches no cell of the study: name a swept value "
                                            "of the lines whose fit bounds the others"
                                          : "matches every cell: there is no other line to "
                                            "bound; name the reference lines only"));
  }
}

}  // namespace

StudyPlan plan_study(const SweepSpec& spec, const Plan& plan, const PlanOptions& options) {
  StudyPlan out;
  out.spec = &spec;
  out.plan = &plan;
  out.options = options;
  out.trial_keys = plan.coordinate_keys;
  out.trial_keys.push_back("optim.base_lr");
  const StudySpec& study = *spec.study;
  std::vector<Diagnostic> problems;
  for (size_t i = 0; i < plan.jobs.size(); ++i) {
    const Job& job = plan.jobs[i];
    Cell cell = describe_cell(plan, study, job, i);
    config::DataConfig data;
    data.val_size = parse_config(job)["data"]["val_size"].value_or<int64_t>(0);
    if (auto rule = config::validation_split_rule(study.target.metric, data);
        rule && problems.empty()) {
      problems.push_back(at(spec, study.target_where, "study.target.metric", study.target.metric,
                            *rule + fmt::format(" [in cell {}]", plan.describe(job))));
    }
    if (auto cap = max_cap(study, job)) {
      cell.max_cap_steps = *cap;
    } else if (problems.empty()) {
      problems.push_back(at(spec, study.where, "study", "",
                            "give the per-trial cap: max_samples or max_steps (the base "
                            "experiment's schedule has no step count to fall back on)"));
    }
    out.cells.push_back(std::move(cell));
  }
  mark_bounded(spec, plan, out.cells, problems);
  if (!problems.empty()) throw ConfigError(std::move(problems));
  link_lines(plan, out.cells);
  link_seeds(plan, out.cells);
  return out;
}

int64_t study_warmup_steps(const StudySpec& study, int64_t cap_steps) {
  if (study.warmup <= 0.0) return 0;
  const auto steps = static_cast<int64_t>(std::llround(study.warmup * cap_steps));
  return std::min(std::max(steps, kMinWarmupSteps), cap_steps);
}

double lr_at(double center, double factor, int64_t lr_index) {
  return center * std::pow(factor, static_cast<double>(lr_index));
}

Job make_trial(const StudyPlan& plan, size_t cell, double base_lr, int64_t cap_steps) {
  const SweepSpec& spec = *plan.spec;
  const StudySpec& study = plan.study();
  const Job& cell_job = plan.job(cell);
  toml::table config = parse_config(cell_job);
  section(config, "optim").insert_or_assign("base_lr", base_lr);
  toml::table& schedule = section(config, "schedule");
  for (const char* key : {"epochs", "budget"}) schedule.erase(key);
  schedule.insert_or_assign("steps", cap_steps);
  if (!spec.assigns("schedule.warmup_steps") && !spec.assigns("schedule.warmup_epochs") &&
      !spec.assigns("schedule.warmup_fraction")) {
    for (const char* key : {"warmup_epochs", "warmup_fraction"}) schedule.erase(key);
    schedule.insert_or_assign("warmup_steps", study_warmup_steps(study, cap_steps));
  }
  if (!spec.assigns("schedule.decay")) schedule.insert_or_assign("decay", "constant");
  toml::table& train = section(config, "train");
  train.insert_or_assign("evals_per_octave", study.evals_per_octave);
  if (!spec.assigns("train.full_eval")) train.insert_or_assign("full_eval", "final");
  train.insert_or_assign(
      "target", toml::table{{"metric", study.target.metric}, {"value", study.target.value}});
  train.insert_or_assign("stop_at_target", true);

  Job trial = trial_job(config, spec.source, plan.options, cell_job);
  trial.coordinates.push_back(config::format_float(base_lr));
  trial.target = study.target;
  return trial;
}

Job trial_job(const toml::table& config, const std::string& source, const PlanOptions& options,
              const Job& cell_job) {
  const auto cfg = config::parse_experiment(config, source, options.load);
  std::vector<Diagnostic> problems;
  std::optional<int64_t> train_size;
  if (options.train_size) train_size = options.train_size(cfg.data).samples;
  Job trial;
  trial.derived = derive_values(cfg, train_size, problems);
  if (!problems.empty()) throw ConfigError(std::move(problems));
  trial.combination = cell_job.combination;
  trial.coordinates = cell_job.coordinates;
  trial.config_toml = config::to_canonical_toml(cfg);
  trial.run_id = config::run_id(cfg);
  static_cast<ConfigColumns&>(trial) = config_columns(cfg);
  trial.threads = cfg.train.threads;
  return trial;
}

std::optional<double> predicted_steps(const std::vector<ReachedPoint>& reached, int64_t batch) {
  std::map<int64_t, std::vector<double>> logs;  // batch -> log steps of its reached cells
  std::vector<results::FitPoint> points;
  for (const auto& p : reached) {
    logs[p.batch].push_back(std::log(p.steps));
    points.push_back({static_cast<double>(p.batch), p.steps, false, ""});
  }
  if (logs.size() < 3) return std::nullopt;
  // The same fit the report prints (one implementation, results/scaling_fit.h).
  const auto fit = results::fit_scaling(points);
  if (!fit) return std::nullopt;
  const double predicted = results::fitted_steps(*fit, static_cast<double>(batch));
  // Under S_min >= 0 steps fall at most in proportion to 1/B, so S(B) >= S(b) b / B for every
  // smaller batch b that reached, and S(B) >= S(b) for a larger one: a fit whose floor went
  // negative (a line still scaling faster than perfectly: the text study's Nesterov seed 1, 5,152,
  // 2,874 and 797 steps at 16, 32 and 64, predicted 18 steps at 128, where seed 0 had needed 439)
  // must not cut the cap below that. (S(b) b / B from a larger b lies above S(B): taken as a floor,
  // it gave the text study's bounded LARS at 64 four times LAMB's 141 steps at 512 x 8.)
  double floor = 0.0;
  for (const auto& [b, l] : logs) {
    double mean = 0.0;
    for (double x : l) mean += x / static_cast<double>(l.size());
    const double scale = b < batch ? static_cast<double>(b) / static_cast<double>(batch) : 1.0;
    floor = std::max(floor, std::exp(mean) * scale);
  }
  const double steps = std::isfinite(predicted) ? std::max(predicted, floor) : floor;
  if (!(steps > 0.0)) return std::nullopt;
  return steps;
}

int64_t cap_from_fit(const std::vector<ReachedPoint>& reached, int64_t batch, int64_t max_cap) {
  const auto steps = predicted_steps(reached, batch);
  if (!steps) return max_cap;
  const auto cap = static_cast<int64_t>(std::ceil(3.0 * *steps - 1e-6));
  return std::clamp<int64_t>(cap, 1, max_cap);
}

std::optional<int64_t> reference_cap(const std::vector<ReachedPoint>& reference, int64_t batch,
                                     double factor) {
  const auto steps = predicted_steps(reference, batch);
  if (!steps) return std::nullopt;
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(factor * *steps - 1e-6)));
}

std::optional<size_t> rerun_source(const StudyPlan& plan, size_t c) {
  if (plan.study().later_seeds == LaterSeeds::search) return std::nullopt;
  return plan.cells[c].first_seed;
}

std::vector<std::optional<Job>> first_trials(const StudyPlan& plan) {
  std::vector<std::optional<Job>> out;
  for (size_t c = 0; c < plan.cells.size(); ++c) {
    const auto& cell = plan.cells[c];
    if ((!plan.study().lr_center && cell.previous) || rerun_source(plan, c)) {
      out.emplace_back();
      continue;
    }
    const double centre = plan.study().lr_center.value_or(plan.job(c).base_lr);
    out.emplace_back(make_trial(plan, c, centre, cell.max_cap_steps));
  }
  return out;
}

bool job_holds(const SweepSpec& spec, const Plan& plan, const Job& job,
               const std::vector<Match>& conditions) {
  for (const auto& m : conditions) {
    bool ok = false;
    for (size_t k = 0; k < plan.coordinate_keys.size() && !ok; ++k) {
      if (plan.coordinate_keys[k] != m.key) continue;
      for (const auto& dim : spec.dimensions) {
        for (const auto& axis : dim.axes) {
          if (axis.key != m.key) continue;
          for (const auto& v : axis.values) {
            if (v.text == job.coordinates[k] && same_value(*v.node, *m.value.node)) ok = true;
          }
        }
      }
    }
    if (!ok) return false;
  }
  return true;
}

}  // namespace batchlab::sweeps::study
