#include "sweeps/study/budget_plan.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "core/config/batch_geometry.h"
#include "core/config/canonical.h"
#include "core/config/exclusive_keys.h"
#include "core/config/loader.h"
#include "core/config/sha256.h"
#include "core/config/toml_text.h"
#include "sweeps/study/plan.h"

namespace batchlab::sweeps::study {

namespace {

constexpr const char* kBatchKey = "batch.global";
constexpr const char* kSeedKey = "train.seed";
constexpr const char* kLrKey = "optim.base_lr";
constexpr const char* kOptimizerKey = "optim.name";

std::string unquoted_name(const std::string& text) {
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"') {
    return text.substr(1, text.size() - 2);
  }
  return text;
}

toml::table budget_config_of(const Job& job) {
  try {
    return toml::parse(job.config_toml, std::string_view("cell"));
  } catch (const toml::parse_error& e) {
    // The expansion wrote this text: a failure here is a bug, not bad input.
    throw Error(fmt::format("cannot read back the canonical config of job {}: {}", job.run_id,
                            e.description()));
  }
}

toml::table& budget_section(toml::table& root, const std::string& name) {
  if (!root.contains(name)) root.insert_or_assign(name, toml::table{});
  return *root.get_as<toml::table>(name);
}

// "section.key" = TOML text, into `config`. A key that names a quantity another key of the cell's
// config gives in other units (the warmup in epochs, steps or a fraction) replaces it, as a sweep
// axis does (core/config/exclusive_keys.h).
void assign_knob(toml::table& config, const std::string& key, const std::string& text) {
  const auto dot = key.find('.');
  toml::table holder = toml::parse("v = " + text);
  config::drop_exclusive_siblings(config, key, {key});
  budget_section(config, key.substr(0, dot))
      .insert_or_assign(key.substr(dot + 1), *holder.get("v"));
}

Diagnostic budget_at(const SweepSpec& spec, Location where, std::string key, std::string value,
                     std::string rule) {
  return Diagnostic{spec.source,    where.line,       where.column,
                    std::move(key), std::move(value), std::move(rule)};
}

std::vector<KnobValues> budget_knobs_of(const SweepSpec& spec, const Plan& plan, const Job& job) {
  const BudgetSearchSpec& search = *spec.search;
  KnobValues lr{kLrKey, {}};
  for (int64_t k : lr_exponents(search.lr_points)) {
    lr.values.push_back(
        config::format_float(job.base_lr * std::pow(search.lr_factor, static_cast<double>(k))));
  }
  std::vector<KnobValues> out{lr};
  for (const auto& knob : search.knobs) {
    if (!job_holds(spec, plan, job, knob.conditions)) continue;
    KnobValues values{knob.key, {}};
    for (const auto& v : knob.values) values.values.push_back(v.text);
    // A later clause for the same key replaces the earlier one, as in [when].
    auto same = std::find_if(out.begin(), out.end(),
                             [&](const KnobValues& k) { return k.key == knob.key; });
    if (same != out.end()) {
      *same = std::move(values);
    } else {
      out.push_back(std::move(values));
    }
  }
  return out;
}

// The product of the knobs' values (the first knob varies slowest), cut to `keep` points by a
// fixed pseudo-random subset (the hash of the series and the index orders them) when given.
std::vector<BudgetPoint> budget_points_of(const std::vector<KnobValues>& knobs,
                                          const std::string& series, std::optional<int64_t> keep) {
  size_t total = 1;
  for (const auto& k : knobs) total *= k.values.size();
  std::vector<size_t> chosen(total);
  for (size_t i = 0; i < total; ++i) chosen[i] = i;
  if (keep && static_cast<size_t>(*keep) < total) {
    auto key = [&](size_t i) { return config::sha256_hex(fmt::format("{}\n{}", series, i)); };
    std::sort(chosen.begin(), chosen.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
    chosen.resize(static_cast<size_t>(*keep));
    std::sort(chosen.begin(), chosen.end());
  }
  std::vector<BudgetPoint> out;
  for (size_t index : chosen) {
    BudgetPoint p;
    size_t rest = index;
    std::vector<std::pair<std::string, std::string>> values(knobs.size());
    for (size_t k = knobs.size(); k-- > 0;) {
      const size_t n = knobs[k].values.size();
      values[k] = {knobs[k].key, knobs[k].values[rest % n]};
      rest /= n;
    }
    p.values = std::move(values);
    out.push_back(std::move(p));
  }
  return out;
}

std::string budget_search_settings(const BudgetSearchSpec& s,
                                   const std::vector<KnobValues>& knobs) {
  std::string text = fmt::format("metric {}; eta {}; rungs {}; points {}", s.metric, s.eta, s.rungs,
                                 s.points.value_or(0));
  for (const auto& k : knobs) text += fmt::format("\n{} = [{}]", k.key, fmt::join(k.values, ", "));
  return text;
}

BudgetCell describe_budget_cell(const SweepSpec& spec, const Plan& plan, size_t index) {
  const Job& job = plan.jobs[index];
  BudgetCell cell;
  cell.job = index;
  std::vector<std::string> line;
  for (size_t k = 0; k < plan.coordinate_keys.size(); ++k) {
    const std::string& key = plan.coordinate_keys[k];
    cell.cell_toml += fmt::format("\"{}\" = {}\n", key, job.coordinates[k]);
    if (key == kBatchKey || key == kSeedKey) continue;
    // The optimizer names its line ("lars", "lamb optim.momentum=0.95"), as the study report does.
    if (key == kOptimizerKey) {
      line.insert(line.begin(), unquoted_name(job.coordinates[k]));
    } else {
      line.push_back(key + "=" + job.coordinates[k]);
    }
  }
  cell.series = fmt::format("{}", fmt::join(line, " "));
  cell.knobs = budget_knobs_of(spec, plan, job);
  cell.points = budget_points_of(cell.knobs, cell.series, spec.search->points);
  toml::table config = budget_config_of(job);
  budget_section(config, "optim").erase("base_lr");
  std::ostringstream text;
  text << config;
  cell.cell_id =
      config::sha256_hex("budget cell\n" + budget_search_settings(*spec.search, cell.knobs) + "\n" +
                         text.str())
          .substr(0, 16);
  return cell;
}

// Every line must search as many points as every other: the budgets are equal or the comparison
// is not one.
void check_equal_budgets_per_line(const SweepSpec& spec, const std::vector<BudgetCell>& cells,
                                  std::vector<Diagnostic>& problems) {
  std::map<std::string, size_t> per_series;
  for (const auto& c : cells) per_series[c.series] = c.points.size();
  size_t low = SIZE_MAX, high = 0;
  for (const auto& [series, n] : per_series) {
    low = std::min(low, n);
    high = std::max(high, n);
  }
  if (low == high) return;
  std::vector<std::string> listed;
  for (const auto& [series, n] : per_series) {
    listed.push_back(fmt::format("{} {}", series.empty() ? "(the one line)" : series, n));
  }
  problems.push_back(
      budget_at(spec, spec.search->where, "search", "",
                fmt::format("the lines would search different numbers of points ({}); give "
                            "every line as many knob values, or set search.points to at "
                            "most {} so each searches that many",
                            fmt::join(listed, ", "), low)));
}

// The cell's budget in steps: ceil(budget_samples / batch), or the job's own schedule's length
// (0 when only loading the data can tell it).
int64_t budget_steps_of(const BudgetSearchSpec& search, const Job& job) {
  if (search.budget_samples) {
    return config::steps_to_see(*search.budget_samples, job.global_batch);
  }
  return job.derived.total_steps.value_or(0);
}

}  // namespace

std::string BudgetPoint::describe() const {
  std::string out;
  for (const auto& [key, value] : values) out += fmt::format("{} = {}\n", key, value);
  return out;
}

std::vector<int64_t> rung_steps(int64_t budget, int64_t eta, int64_t rungs) {
  const double first = static_cast<double>(budget) /
                       std::pow(static_cast<double>(eta), static_cast<double>(rungs - 1));
  const auto r0 = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(first - 1e-9)));
  std::vector<int64_t> out;
  int64_t r = r0;
  for (int64_t k = 0; k < rungs; ++k) {
    const int64_t step = std::min(budget, r);
    if (out.empty() || step != out.back()) out.push_back(step);
    r *= eta;
  }
  if (out.back() != budget) out.push_back(budget);
  return out;
}

std::vector<int64_t> lr_exponents(int64_t lr_points) {
  std::vector<int64_t> out;
  for (int64_t k = -((lr_points - 1) / 2); k <= lr_points / 2; ++k) out.push_back(k);
  return out;
}

BudgetPlan plan_budget_search(const SweepSpec& spec, const Plan& plan, const PlanOptions& options) {
  BudgetPlan out;
  out.spec = &spec;
  out.plan = &plan;
  out.options = options;
  const BudgetSearchSpec& search = *spec.search;
  std::vector<Diagnostic> problems;
  for (size_t i = 0; i < plan.jobs.size(); ++i) {
    const Job& job = plan.jobs[i];
    BudgetCell cell = describe_budget_cell(spec, plan, i);
    size_t product = 1;
    for (const auto& k : cell.knobs) product *= k.values.size();
    if (search.points && static_cast<size_t>(*search.points) > product && problems.empty()) {
      problems.push_back(
          budget_at(spec, search.where, "search.points", std::to_string(*search.points),
                    fmt::format("is more than the {} points line {} has", product, cell.series)));
    }
    const auto budget = budget_steps_of(search, job);
    if (budget <= 0) {
      if (problems.empty()) {
        problems.push_back(
            budget_at(spec, search.where, "search", "",
                      fmt::format("the budget of {} is not known in steps before its data "
                                  "loads: give search.budget_samples (the same samples at "
                                  "every batch), or schedule.epochs with a data set whose "
                                  "size the plan knows",
                                  plan.describe(job))));
      }
      continue;
    }
    cell.budget_steps = budget;
    cell.rung_steps = rung_steps(budget, search.eta, search.rungs);
    const auto epochs = budget_config_of(job)["schedule"]["epochs"].value<double>();
    if (epochs && !search.budget_samples) cell.epochs = *epochs;
    out.cells.push_back(std::move(cell));
  }
  if (problems.empty()) check_equal_budgets_per_line(spec, out.cells, problems);
  if (!problems.empty()) throw ConfigError(std::move(problems));
  for (size_t c = 0; c < out.cells.size(); ++c) {
    const int64_t batch = plan.jobs[out.cells[c].job].global_batch;
    for (size_t j = 0; j < c; ++j) {
      if (out.cells[j].series == out.cells[c].series &&
          plan.jobs[out.cells[j].job].global_batch == batch) {
        out.cells[c].first_seed = j;
        break;
      }
    }
  }
  return out;
}

Job make_budget_trial(const BudgetPlan& plan, size_t cell_index, const BudgetPoint& point) {
  const SweepSpec& spec = *plan.spec;
  const BudgetCell& cell = plan.cells[cell_index];
  const Job& cell_job = plan.job(cell_index);
  toml::table config = budget_config_of(cell_job);
  for (const auto& [key, value] : point.values) assign_knob(config, key, value);
  if (spec.search->budget_samples) {
    toml::table& schedule = budget_section(config, "schedule");
    for (const char* key : {"epochs", "budget"}) schedule.erase(key);
    schedule.insert_or_assign("steps", cell.budget_steps);
  }
  toml::table& train = budget_section(config, "train");
  train.erase("evals_per_octave");
  train.erase("eval_every");
  // Every rung is a multiple of r_0, the last is the run's end (always evaluated): one evaluation
  // every r_0 steps puts one at every rung.
  train.insert_or_assign("eval_every_steps", cell.rung_steps.front());
  if (!spec.assigns("train.full_eval")) train.insert_or_assign("full_eval", "final");
  // A checkpoint at every rung's stop (the trainer keeps the weights of a stopped run), none in
  // between unless the spec asks; a promoted point resumes from it.
  if (!spec.assigns("train.checkpoint_every")) {
    train.insert_or_assign("checkpoint_every", cell.budget_steps + 1);
  }
  Job trial = trial_job(config, spec.source, plan.options, cell_job);
  for (const auto& [key, value] : point.values) trial.coordinates.push_back(value);
  return trial;
}

}  // namespace batchlab::sweeps::study
