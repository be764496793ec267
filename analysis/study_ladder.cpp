#include "analysis/study_ladder.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <set>
#include <tuple>

#include "analysis/study_report.h"

namespace batchlab::analysis {

namespace {

using LadderGroupKey =
    std::tuple<std::string, std::string, std::string>;  // sweep, optimizer, setting

// The rungs the cells of one group give, ascending; `open` names the batches still searching.
struct LadderGroupRungs {
  std::map<int64_t, results::LadderRung> rungs;
  std::vector<int64_t> searching;
};

LadderGroupRungs ladder_rungs_of(const std::vector<const StudyCellSummary*>& members) {
  LadderGroupRungs out;
  for (const auto* c : members) {
    const int64_t batch = c->cell.global_batch;
    if (c->cell.status != "reached" && c->cell.status != "censored") {
      out.searching.push_back(batch);
      continue;
    }
    auto& rung = out.rungs[batch];
    rung.batch = batch;
    rung.steps.push_back(c->cell.status == "reached" ? c->cell.steps_to_target : std::nullopt);
  }
  return out;
}

StudyLadder summarize_ladder_group(const std::vector<const StudyCellSummary*>& members,
                                   const results::LadderRule& rule) {
  StudyLadder out;
  out.series = members.front()->series;
  out.sweep_id = members.front()->cell.sweep_id;
  out.rule = rule;
  std::set<int64_t> batches;
  for (const auto* c : members) batches.insert(c->cell.global_batch);
  out.batches.assign(batches.begin(), batches.end());
  const LadderGroupRungs g = ladder_rungs_of(members);
  // The rule walks the rungs that have every answer, up to the first batch still searching.
  std::vector<results::LadderRung> answered;
  for (const auto& [batch, rung] : g.rungs) {
    bool below_searching = true;
    for (int64_t s : g.searching) below_searching = below_searching && batch < s;
    if (below_searching) answered.push_back(rung);
  }
  const auto verdict = results::walk_ladder(answered, rule);
  out.gains = verdict.gains;
  out.stop = results::ladder_stop_name(verdict.stop);
  if (verdict.stop != results::LadderStop::none) {
    out.why = results::describe_ladder_stop(verdict, answered, rule);
  } else {
    out.why = g.searching.empty()
                  ? std::string("the next batch is not opened yet (run the study to go on)")
                  : fmt::format("batch {} still searching", g.searching.front());
  }
  return out;
}

}  // namespace

std::optional<results::LadderRule> ladder_rule_of_spec(const std::string& spec_toml) {
  toml::table spec;
  try {
    spec = toml::parse(spec_toml, std::string_view("stored spec"));
  } catch (const toml::parse_error&) {
    return std::nullopt;
  }
  const auto ladder = spec["study"]["ladder"];
  const auto ceiling = ladder["ceiling"].value<int64_t>();
  if (!ladder.is_table() || !ceiling) return std::nullopt;
  results::LadderRule rule;
  rule.ceiling = *ceiling;
  rule.min_gain = ladder["min_gain"].value_or(results::kLadderDefaultMinGain);
  rule.flat_doublings = ladder["flat_doublings"].value_or(results::kLadderDefaultFlatDoublings);
  rule.budget_stop = ladder["budget_stop"].value_or(true);
  rule.censored_rungs = ladder["censored_rungs"].value_or(int64_t{0});
  rule.max_steps = spec["study"]["max_steps"].value<int64_t>();
  rule.max_samples = spec["study"]["max_samples"].value<int64_t>();
  return rule;
}

std::vector<StudyLadder> summarize_ladders(
    const std::vector<StudyCellSummary>& cells,
    const std::map<std::string, results::LadderRule>& rules) {
  std::vector<LadderGroupKey> order;
  std::map<LadderGroupKey, std::vector<const StudyCellSummary*>> groups;
  for (const auto& c : cells) {
    if (rules.count(c.cell.sweep_id) == 0) continue;
    const LadderGroupKey key{c.cell.sweep_id, c.cell.optimizer, c.setting};
    auto& members = groups[key];
    if (members.empty()) order.push_back(key);
    members.push_back(&c);
  }
  std::vector<StudyLadder> out;
  for (const auto& key : order) {
    out.push_back(summarize_ladder_group(groups[key], rules.at(std::get<0>(key))));
  }
  return out;
}

std::string ladder_line(const StudyLadder& l) {
  const std::string range = l.batches.empty()
                                ? std::string("-")
                                : fmt::format("{}..{}", l.batches.front(), l.batches.back());
  if (l.stop.empty()) return fmt::format("ladder {}: {}, climbing: {}", l.series, range, l.why);
  return fmt::format("ladder {}: {}, stopped: {}", l.series, range, l.why);
}

}  // namespace batchlab::analysis
