#include "sweeps/study/ladder.h"

#include <map>

namespace batchlab::sweeps::study {

namespace {

// The group's cells by batch (ascending), those below `below` only.
std::map<int64_t, std::vector<size_t>> group_cells(const StudyPlan& plan, const std::string& group,
                                                   int64_t below) {
  std::map<int64_t, std::vector<size_t>> out;
  for (size_t o = 0; o < plan.cells.size(); ++o) {
    const int64_t batch = plan.job(o).global_batch;
    if (plan.cells[o].group == group && batch < below) out[batch].push_back(o);
  }
  return out;
}

RungsBelow answered_rungs(const StudyPlan& plan, const CellAnswers& answers,
                          const std::string& group, int64_t below) {
  RungsBelow out;
  for (const auto& [batch, members] : group_cells(plan, group, below)) {
    results::LadderRung rung;
    rung.batch = batch;
    for (size_t o : members) {
      if (answers[o] == nullptr) {
        out.complete = false;
        return out;
      }
      const bool reached = answers[o]->status == results::cell_status::kReached;
      rung.steps.push_back(reached ? answers[o]->steps_to_target : std::nullopt);
    }
    out.rungs.push_back(std::move(rung));
  }
  return out;
}

}  // namespace

results::LadderRule ladder_rule(const StudySpec& study) {
  const LadderSpec& ladder = *study.ladder;
  results::LadderRule rule;
  rule.ceiling = ladder.ceiling;
  rule.min_gain = ladder.min_gain;
  rule.flat_doublings = ladder.flat_doublings;
  rule.max_steps = study.max_steps;
  rule.max_samples = study.max_samples;
  rule.budget_stop = ladder.budget_stop;
  rule.censored_rungs = ladder.censored_rungs;
  return rule;
}

RungsBelow rungs_below(const StudyPlan& plan, const CellAnswers& answers, size_t c) {
  return answered_rungs(plan, answers, plan.cells[c].group, plan.job(c).global_batch);
}

bool ladder_allows(const StudyPlan& plan, const CellAnswers& answers, size_t c) {
  const auto& ladder = plan.study().ladder;
  if (!ladder) return true;
  const RungsBelow below = rungs_below(plan, answers, c);
  if (!below.complete) return false;
  return results::walk_ladder(below.rungs, ladder_rule(plan.study())).stop ==
         results::LadderStop::none;
}

bool ladder_closed(const StudyPlan& plan, const CellAnswers& answers, size_t c) {
  const auto& ladder = plan.study().ladder;
  if (!ladder) return false;
  return results::walk_ladder(rungs_below(plan, answers, c).rungs, ladder_rule(plan.study()))
             .stop != results::LadderStop::none;
}

std::set<std::string> cells_beyond_ladder(const StudyPlan& plan,
                                          const std::vector<results::StudyCellRow>& stored) {
  std::set<std::string> out;
  if (!plan.study().ladder) return out;
  std::map<std::string, const results::StudyCellRow*> by_id;
  for (const auto& row : stored) by_id[row.cell_id] = &row;
  CellAnswers answers(plan.cells.size(), nullptr);
  for (size_t c = 0; c < plan.cells.size(); ++c) {
    auto it = by_id.find(plan.cells[c].cell_id);
    if (it != by_id.end() && it->second->status != results::cell_status::kSearching) {
      answers[c] = it->second;
    }
  }
  for (size_t c = 0; c < plan.cells.size(); ++c) {
    if (by_id.count(plan.cells[c].cell_id) == 0 && ladder_closed(plan, answers, c)) {
      out.insert(plan.cells[c].cell_id);
    }
  }
  return out;
}

std::optional<std::string> ladder_stop_of(const StudyPlan& plan, const CellAnswers& answers,
                                          const std::string& group) {
  const auto& ladder = plan.study().ladder;
  if (!ladder) return std::nullopt;
  const auto rule = ladder_rule(plan.study());
  const RungsBelow all = answered_rungs(plan, answers, group, ladder->ceiling + 1);
  const auto verdict = results::walk_ladder(all.rungs, rule);
  if (verdict.stop == results::LadderStop::none) return std::nullopt;
  return results::describe_ladder_stop(verdict, all.rungs, rule);
}

}  // namespace batchlab::sweeps::study
