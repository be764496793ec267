#include "sweeps/study/decisions.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include "results/rows.h"

namespace batchlab::sweeps::study {

namespace {

// The best metric a trial showed (nullopt: no finite evaluation).
std::optional<double> best_value(const Curve& curve, const config::Target& goal) {
  std::optional<double> best;
  for (const auto& p : curve) {
    if (!p.value || !std::isfinite(*p.value)) continue;
    if (!best || (goal.at_least_as_good(*p.value, *best) && *p.value != *best)) best = p.value;
  }
  return best;
}

// Deterministic tie-break: the point nearer the centre, then the smaller rate.
bool nearer_centre(int64_t a, int64_t b) {
  if (std::llabs(a) != std::llabs(b)) return std::llabs(a) < std::llabs(b);
  return a < b;
}

}  // namespace

std::optional<double> crossing(const Curve& curve, const config::Target& goal, double level) {
  for (size_t i = 0; i < curve.size(); ++i) {
    const auto& p = curve[i];
    if (!p.value || !goal.at_least_as_good(*p.value, level)) continue;
    const double s2 = static_cast<double>(p.step);
    if (i == 0) return s2;
    const auto& prev = curve[i - 1];
    const double m2 = *p.value;
    if (!prev.value || !std::isfinite(*prev.value) || prev.step <= 0 || m2 == *prev.value) {
      return s2;
    }
    const double s1 = static_cast<double>(prev.step);
    const double m1 = *prev.value;
    const double fraction = (level - m1) / (m2 - m1);
    return std::exp(std::log(s1) + fraction * (std::log(s2) - std::log(s1)));
  }
  return std::nullopt;
}

std::optional<double> steps_to_target(const Curve& curve, const config::Target& goal) {
  return crossing(curve, goal, goal.value);
}

std::optional<size_t> race_leader(const std::vector<TrialView>& trials,
                                  const config::Target& goal) {
  std::optional<size_t> leader;
  std::optional<double> best;
  for (size_t i = 0; i < trials.size(); ++i) {
    const auto s = steps_to_target(trials[i].curve, goal);
    if (!s) continue;
    if (!best || *s < *best ||
        (*s == *best && nearer_centre(trials[i].lr_index, trials[*leader].lr_index))) {
      leader = i;
      best = s;
    }
  }
  return leader;
}

std::optional<StopRequest> race_stop(const std::vector<TrialView>& trials, size_t i,
                                     const config::Target& goal) {
  const auto leader = race_leader(trials, goal);
  if (!leader || *leader == i || steps_to_target(trials[i].curve, goal)) return std::nullopt;
  const double s = *steps_to_target(trials[*leader].curve, goal);
  return StopRequest{std::string(stop_reason::kStoppedByRace), static_cast<int64_t>(std::ceil(s))};
}

std::optional<StopRequest> prune_stop(const std::vector<TrialView>& trials, size_t i,
                                      const config::Target& goal, const PruneRule& rule) {
  // Only a trial that reached the target leads: two trials still short of it could otherwise
  // prune each other on noisy evaluations and leave the cell with no trial at all.
  const auto leader = race_leader(trials, goal);
  if (!leader || *leader == i || steps_to_target(trials[i].curve, goal)) return std::nullopt;
  const double leader_steps = *steps_to_target(trials[*leader].curve, goal);
  // The trial's best metric so far, not its latest: one noisy evaluation must not end it.
  std::optional<double> best;
  int64_t evals_past_warmup = 0;
  for (const auto& p : trials[i].curve) {
    if (p.step > rule.warmup_steps) ++evals_past_warmup;
    if (!p.value || !std::isfinite(*p.value)) continue;
    if (!best || goal.at_least_as_good(*p.value, *best)) best = p.value;
    if (p.step <= rule.warmup_steps || evals_past_warmup < rule.min_evals) continue;
    if (static_cast<double>(p.step) < rule.min_leader_fraction * leader_steps) continue;
    const auto s_leader = crossing(trials[*leader].curve, goal, *best);
    if (s_leader && 2.0 * *s_leader <= static_cast<double>(p.step)) {
      return StopRequest{std::string(stop_reason::kPruned), p.step};
    }
  }
  return std::nullopt;
}

std::optional<std::string> trial_outcome(const TrialView& trial, const config::Target& goal) {
  namespace status = results::run_status;
  namespace outcome = results::trial_outcome;
  const std::string& s = trial.run_status;
  const bool result = s == status::kDone || s == status::kDiverged || s == status::kStopped;
  if (!trial.ended || !result) return std::nullopt;
  if (steps_to_target(trial.curve, goal)) return std::string(outcome::kReached);
  if (s == status::kDiverged) return std::string(outcome::kDiverged);
  if (s == status::kDone) return std::string(outcome::kCapped);
  // Stopped: the coordinator's own requests are results; any other stop (a user's) is not, and
  // the trial runs again.
  if (trial.stop_reason == stop_reason::kPruned) return std::string(outcome::kPruned);
  if (trial.stop_reason == stop_reason::kStoppedByRace) {
    return std::string(outcome::kStoppedByRace);
  }
  return std::nullopt;
}

bool ranks_before(const TrialView& a, const TrialView& b, const config::Target& goal) {
  const auto sa = steps_to_target(a.curve, goal);
  const auto sb = steps_to_target(b.curve, goal);
  if (sa.has_value() != sb.has_value()) return sa.has_value();
  if (sa && *sa != *sb) return *sa < *sb;
  if (!sa) {
    const bool da = a.run_status == results::run_status::kDiverged;
    const bool db = b.run_status == results::run_status::kDiverged;
    if (da != db) return db;
    if (da) return a.lr_index < b.lr_index;
    const auto ma = best_value(a.curve, goal);
    const auto mb = best_value(b.curve, goal);
    if (ma.has_value() != mb.has_value()) return ma.has_value();
    if (ma && *ma != *mb) return goal.at_least_as_good(*ma, *mb);
    if (!ma) return a.lr_index < b.lr_index;  // both without a finite metric: the lower rate
  }
  return nearer_centre(a.lr_index, b.lr_index);
}

BracketStep next_bracket_step(const std::vector<TrialView>& trials, const config::Target& goal,
                              int64_t lr_points_max, BracketStart start) {
  BracketStep step;
  if (trials.empty()) {
    step.add =
        start == BracketStart::three ? std::vector<int64_t>{0, -1, 1} : std::vector<int64_t>{0};
    return step;
  }
  if (start != BracketStart::three && trials.size() == 1) {
    if (!trials[0].ended) return step;
    if (start == BracketStart::alone || steps_to_target(trials[0].curve, goal)) {
      step.complete = true;
      step.best = 0;
    } else {
      step.add = {-1, 1};
    }
    return step;
  }
  size_t best = 0;
  int64_t lowest = trials[0].lr_index, highest = trials[0].lr_index;
  for (size_t i = 0; i < trials.size(); ++i) {
    if (!trials[i].ended) return step;
    lowest = std::min(lowest, trials[i].lr_index);
    highest = std::max(highest, trials[i].lr_index);
    if (i > 0 && ranks_before(trials[i], trials[best], goal)) best = i;
  }
  const bool room = static_cast<int64_t>(trials.size()) < lr_points_max;
  if (room && trials[best].lr_index == highest) {
    step.add = {highest + 1};
  } else if (room && trials[best].lr_index == lowest) {
    step.add = {lowest - 1};
  } else {
    step.complete = true;
    step.best = best;
  }
  return step;
}

}  // namespace batchlab::sweeps::study
