#include "results/batch_ladder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/config/batch_geometry.h"

namespace batchlab::results {

namespace {

// The geometric mean of the rung's seeds, nullopt when one of them is censored or none is given.
std::optional<double> rung_steps(const LadderRung& rung) {
  if (rung.steps.empty()) return std::nullopt;
  double log_sum = 0.0;
  for (const auto& s : rung.steps) {
    if (!s || !(*s > 0.0)) return std::nullopt;
    log_sum += std::log(*s);
  }
  return std::exp(log_sum / static_cast<double>(rung.steps.size()));
}

// Whether the batch after `rung` is beyond the budget: its cap is below a seed's steps at `rung`.
bool beyond_budget(const LadderRung& rung, const LadderRule& rule) {
  if (!rule.budget_stop) return false;
  const auto cap = study_max_cap_steps(rule.max_steps, rule.max_samples, 2 * rung.batch);
  if (!cap) return false;
  for (const auto& s : rung.steps) {
    if (s && *s > static_cast<double>(*cap)) return true;
  }
  return false;
}

bool flattened(const std::vector<double>& gains, const LadderRule& rule) {
  const auto n = static_cast<size_t>(rule.flat_doublings);
  if (n == 0 || gains.size() < n) return false;
  for (size_t i = gains.size() - n; i < gains.size(); ++i) {
    if (gains[i] >= rule.min_gain) return false;
  }
  return true;
}

std::string doubling(const std::vector<LadderRung>& rungs, const LadderVerdict& v, size_t i) {
  if (!std::isfinite(v.gains[i])) {
    return fmt::format("{}->{}: {} was censored", rungs[i].batch, rungs[i + 1].batch,
                       rungs[i].batch);
  }
  return fmt::format("{}->{} saved {:.2f}x", rungs[i].batch, rungs[i + 1].batch, v.gains[i]);
}

}  // namespace

std::optional<int64_t> study_max_cap_steps(std::optional<int64_t> max_steps,
                                           std::optional<int64_t> max_samples, int64_t batch) {
  if (max_steps) return *max_steps;
  if (!max_samples || batch <= 0) return std::nullopt;
  return config::steps_to_see(*max_samples, batch);
}

const char* ladder_stop_name(LadderStop stop) {
  switch (stop) {
    case LadderStop::flattening:
      return "flattening";
    case LadderStop::ceiling:
      return "ceiling";
    case LadderStop::cap:
      return "cap";
    case LadderStop::budget:
      return "budget";
    case LadderStop::none:
      break;
  }
  return "";
}

LadderVerdict walk_ladder(const std::vector<LadderRung>& rungs, const LadderRule& rule) {
  LadderVerdict v;
  int64_t censored = 0;  // censored rungs climbed past before the line first reached
  for (const auto& rung : rungs) {
    ++v.rungs;
    v.steps.push_back(rung_steps(rung));
    const size_t n = v.steps.size();
    if (n >= 2) {
      v.gains.push_back(v.steps[n - 2] && v.steps[n - 1] ? *v.steps[n - 2] / *v.steps[n - 1]
                                                         : std::numeric_limits<double>::infinity());
    }
    if (!v.steps.back()) {
      const bool reached_below = std::any_of(v.steps.begin(), v.steps.end() - 1,
                                             [](const auto& s) { return s.has_value(); });
      if (reached_below || ++censored > rule.censored_rungs || rung.batch >= rule.ceiling) {
        v.stop = LadderStop::cap;
        return v;
      }
      continue;
    }
    if (flattened(v.gains, rule)) {
      v.stop = LadderStop::flattening;
      return v;
    }
    if (rung.batch >= rule.ceiling) {
      v.stop = LadderStop::ceiling;
      return v;
    }
    if (beyond_budget(rung, rule)) {
      v.stop = LadderStop::budget;
      return v;
    }
  }
  return v;
}

std::string describe_ladder_stop(const LadderVerdict& v, const std::vector<LadderRung>& rungs,
                                 const LadderRule& rule) {
  if (v.stop == LadderStop::none || v.rungs == 0 || v.rungs > rungs.size()) return "";
  const LadderRung& last = rungs[v.rungs - 1];
  if (v.stop == LadderStop::cap) {
    size_t censored = 0;
    for (const auto& s : last.steps) censored += s ? 0 : 1;
    // Rungs below the last one that were censored too: the line climbed past them.
    std::string climbed;
    for (size_t i = 0; i + 1 < v.rungs; ++i) {
      if (v.steps[i]) continue;
      climbed += fmt::format("{}{}", climbed.empty() ? "" : ", ", rungs[i].batch);
    }
    return fmt::format("cap (batch {}: {} of {} seed{} did not reach the target within the cap{})",
                       last.batch, censored, last.steps.size(), last.steps.size() == 1 ? "" : "s",
                       climbed.empty() ? "" : fmt::format("; censored below it too: {}", climbed));
  }
  if (v.stop == LadderStop::budget) {
    double most = 0.0;
    for (const auto& s : last.steps) most = std::max(most, s.value_or(0.0));
    const int64_t next = 2 * last.batch;
    return fmt::format(
        "budget (batch {}'s cap of {} steps from {} is below the {:.0f} steps a seed needed at "
        "{}: not run)",
        next, study_max_cap_steps(rule.max_steps, rule.max_samples, next).value_or(0),
        rule.max_steps ? fmt::format("max_steps {}", *rule.max_steps)
                       : fmt::format("max_samples {}", rule.max_samples.value_or(0)),
        most, last.batch);
  }
  if (v.stop == LadderStop::flattening) {
    std::string parts;
    const auto n = static_cast<size_t>(rule.flat_doublings);
    for (size_t k = 0; k < n; ++k) {
      const size_t i = v.gains.size() - 1 - k;
      parts +=
          k == 0 ? doubling(rungs, v, i)
                 : fmt::format(", {}->{} {:.2f}x", rungs[i].batch, rungs[i + 1].batch, v.gains[i]);
    }
    return fmt::format("flattening ({} < {:g}x)", parts, rule.min_gain);
  }
  if (v.gains.empty()) return fmt::format("ceiling ({})", last.batch);
  return fmt::format("ceiling ({}; {})", last.batch, doubling(rungs, v, v.gains.size() - 1));
}

}  // namespace batchlab::results
