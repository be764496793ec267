#include "sweeps/study/search_cost.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>
#include <tuple>

#include "core/errors.h"
#include "results/rows.h"
#include "sweeps/study/plan.h"
#include "sweeps/study/simulation.h"

namespace batchlab::sweeps::study {

namespace {

namespace outcome = results::trial_outcome;

struct RuleVariant {
  const char* name;
  LaterSeeds later_seeds;
  bool budget_stop;
};
constexpr RuleVariant kRules[] = {{"race", LaterSeeds::search, false},
                                  {"budget_stop", LaterSeeds::search, true},
                                  {"neighbours", LaterSeeds::neighbours, true},
                                  {"rerun_best", LaterSeeds::rerun_best, true}};

// The recording's own totals: every trial ran as a plain stop_at_target grid would run it.
RuleCost plain_cost(const std::string& study, results::Store& recorded) {
  const auto trials = recorded.read_study_trials(study);
  if (trials.empty()) {
    throw InputError(fmt::format(
        "the recording holds none of study {}'s trials: pass the database a run of this study "
        "with [study] race = false wrote",
        study));
  }
  std::map<std::string, double> duration;
  for (const auto& run : recorded.list_runs()) {
    const auto start = run.started_at ? results::utc_seconds(*run.started_at) : std::nullopt;
    const auto end = run.finished_at ? results::utc_seconds(*run.finished_at) : std::nullopt;
    if (start && end) duration[run.run_id] = *end - *start;
  }
  RuleCost out;
  out.rule = "plain";
  // (own_plain_* of the recording itself: set below, once its totals are known)
  size_t raced = 0;
  for (const auto& t : trials) {
    if (t.outcome == outcome::kPruned || t.outcome == outcome::kStoppedByRace) ++raced;
    ++out.trials;
    out.samples += t.samples_trained.value_or(0);
    out.trial_s += duration.count(t.run_id) > 0 ? duration[t.run_id] : 0.0;
  }
  if (raced > 0) {
    throw InputError(fmt::format(
        "the recording is not a plain grid: {} of its {} trials of study {} were pruned or "
        "stopped by the race, so their curves end before their own target or cap; record the "
        "study with [study] race = false (every point runs to its target or cap)",
        raced, trials.size(), study));
  }
  out.own_plain_samples = out.samples;
  out.own_plain_s = out.trial_s;
  for (const auto& cell : recorded.read_study_cells(study)) {
    ++out.cells;
    out.reached += cell.status == results::cell_status::kReached ? 1 : 0;
    out.censored += cell.status == results::cell_status::kCensored ? 1 : 0;
  }
  return out;
}

int64_t grid_steps(double lr, double reference, double factor) {
  return static_cast<int64_t>(std::llround(std::log(lr / reference) / std::log(factor)));
}

// The cell's coordinates besides the optimizer (the line's group without optim.name).
std::string setting_of(const std::string& group) {
  std::istringstream parts(group);
  std::string part, out;
  while (parts >> part) {
    if (part.rfind("optim.name=", 0) == 0) continue;
    out += (out.empty() ? "" : " ") + part;
  }
  return out;
}

// Adds a rule's cells (best rate, steps to target) to the table as column `column`.
void add_cells(const std::vector<results::StudyCellRow>& rows, size_t column, size_t columns,
               std::map<std::string, CellUnderRules>& cells) {
  for (const auto& row : rows) {
    auto& cell = cells[row.cell_id];
    if (cell.best_lr.empty()) {
      cell.cell_id = row.cell_id;
      cell.optimizer = row.optimizer;
      cell.batch = row.global_batch;
      cell.seed = row.seed;
      cell.best_lr.resize(columns);
      cell.steps.resize(columns);
    }
    cell.best_lr[column] = row.best_lr;
    cell.steps[column] = row.steps_to_target;
  }
}

}  // namespace

SearchCost compare_search_rules(const SweepSpec& spec, const Plan& plan, const PlanOptions& options,
                                results::Store& recorded, const std::string& scratch_dir,
                                size_t workers) {
  SearchCost out;
  out.study = spec.name;
  out.workers = workers;
  out.rules.push_back(plain_cost(spec.name, recorded));
  const size_t columns = 1 + std::size(kRules);
  std::map<std::string, CellUnderRules> cells;
  add_cells(recorded.read_study_cells(spec.name), 0, columns, cells);
  double factor = spec.study->lr_factor;
  std::map<std::string, std::string> group_of;
  for (size_t k = 0; k < std::size(kRules); ++k) {
    SweepSpec variant = spec;
    variant.study->race = true;
    variant.study->later_seeds = kRules[k].later_seeds;
    if (variant.study->ladder) variant.study->ladder->budget_stop = kRules[k].budget_stop;
    const StudyPlan study_plan = plan_study(variant, plan, options);
    for (const auto& c : study_plan.cells) group_of[c.cell_id] = c.group;
    const auto db = std::filesystem::path(scratch_dir) / fmt::format("rule-{}.db", kRules[k].name);
    const SimulationResult r =
        simulate_study(study_plan, recorded, db.string(), workers, SchedulePolicy::shortest_study);
    RuleCost cost;
    cost.rule = kRules[k].name;
    cost.trials = r.trials;
    cost.samples = r.samples;
    cost.trial_s = r.busy_s + r.stopped_overhead_s;
    cost.cells = r.cell_rows.size();  // opened (r.cells counts every planned one)
    cost.reached = r.reached;
    cost.censored = r.censored;
    cost.missing = r.missing;
    cost.own_plain_samples = r.recorded_samples;
    cost.own_plain_s = r.recorded_s;
    out.rules.push_back(cost);
    add_cells(r.cell_rows, k + 1, columns, cells);
  }
  std::vector<double> log_ratio_sum(columns, 0.0);
  std::vector<size_t> ratios(columns, 0);
  for (auto& [id, cell] : cells) {
    cell.setting = setting_of(group_of[id]);
    const auto& today = cell.best_lr[1];
    for (size_t k = 2; k < columns; ++k) {
      if (!today || !cell.best_lr[k]) continue;
      const int64_t move = std::llabs(grid_steps(*cell.best_lr[k], *today, factor));
      out.rules[k].max_lr_move = std::max(out.rules[k].max_lr_move, move);
      out.rules[k].moved_over_one += move > 1 ? 1 : 0;
      if (!cell.steps[1] || !cell.steps[k]) continue;
      const double ratio = *cell.steps[k] / *cell.steps[1];
      log_ratio_sum[k] += std::log(ratio);
      ++ratios[k];
      out.rules[k].steps_ratio_max = std::max(out.rules[k].steps_ratio_max.value_or(0.0), ratio);
    }
    out.cells.push_back(std::move(cell));
  }
  for (size_t k = 2; k < columns; ++k) {
    if (ratios[k] > 0) {
      out.rules[k].steps_ratio_mean = std::exp(log_ratio_sum[k] / static_cast<double>(ratios[k]));
    }
  }
  std::sort(out.cells.begin(), out.cells.end(), [](const auto& a, const auto& b) {
    return std::tie(a.optimizer, a.setting, a.batch, a.seed) <
           std::tie(b.optimizer, b.setting, b.batch, b.seed);
  });
  return out;
}

}  // namespace batchlab::sweeps::study
