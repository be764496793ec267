// What a study's search rules cost against the plain grid of the same points (issue 36, item 4),
// measured on one recording: a run of the study with [study] race = false, where every point of
// every bracket trained until it reached the target or its cap (a plain sweep with
// train.stop_at_target). Each rule is replayed from that recording on the simulation's virtual
// clock (sweeps/study/simulation.h): a raced or pruned trial ends at the evaluation where the rule
// stops it, so its samples and trial time are the recorded ones up to there. Every rule is thus
// measured on the same trials, trained once on one machine in one run.
//
// The rules, each adding one change to the one before:
//   race          today's study: race and fair-run pruning, every seed its own bracket, a ladder
//                 that opens a rung whatever its cap (budget_stop = false);
//   budget_stop   + a ladder rung whose cap is below the steps the rung under it needed is not
//                 opened (results/batch_ladder.h);
//   neighbours    + the seeds after the first run the first seed's best rate at each batch and its
//                 two neighbours, no more ([study] later_seeds = "neighbours");
//   rerun_best    + instead they run that best rate alone, its neighbours only when it does not
//                 reach ([study] later_seeds = "rerun_best").
// A cell's best rate under each rule is compared with today's ("race"): the number of grid steps
// (lr_factor) it moved.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "results/store.h"
#include "sweeps/expand.h"
#include "sweeps/spec.h"

namespace batchlab::sweeps::study {

struct RuleCost {
  std::string rule;  // plain (the recording itself), race, budget_stop, neighbours, rerun_best
  size_t trials = 0;
  int64_t samples = 0;
  // The trials' durations summed; a replayed trial stopped early counts its training clock at the
  // stop plus all its record's time besides training (SimulationResult::stopped_overhead_s).
  double trial_s = 0.0;
  size_t cells = 0, reached = 0, censored = 0;
  size_t missing = 0;  // trials the replay wanted that the recording does not have
  // The plain grid of this rule's own points (the recording's runs of the trials it started, each
  // to its target or cap): the baseline with exactly the rule's points.
  int64_t own_plain_samples = 0;
  double own_plain_s = 0.0;
  // Against today's rule, over the cells both opened: the largest move of a best rate in grid
  // steps, and how many cells moved by more than one.
  int64_t max_lr_move = 0;
  size_t moved_over_one = 0;
  // And what a move costs: the cell's steps to target under this rule over today's, over the
  // cells both reached (geometric mean and largest; nullopt when there are none).
  std::optional<double> steps_ratio_mean, steps_ratio_max;
};

// One cell under every rule (nullopt where the rule did not open it or found no best).
struct CellUnderRules {
  std::string cell_id;
  std::string optimizer;
  std::string setting;  // the cell's other coordinates (e.g. optim.trust_coefficient=0.01)
  int64_t batch = 0, seed = 0;
  std::vector<std::optional<double>> best_lr;  // per rule, in SearchCost::rules order
  std::vector<std::optional<double>> steps;    // steps to target (nullopt: censored or not run)
};

struct SearchCost {
  std::string study;
  size_t workers = 0;
  std::vector<RuleCost> rules;  // plain first, then race, budget_stop, neighbours, rerun_best
  std::vector<CellUnderRules> cells;
};

// Replays the rules of `spec` (a study; its own race, later_seeds and budget_stop keys are
// ignored) against `recorded`, with `workers` trials at once. Scratch databases go under
// `scratch_dir`. Throws InputError when `recorded` holds none of the study's trials or is not a
// plain recording (a trial was pruned or stopped by a race, so its curve ends before its own
// target or cap).
SearchCost compare_search_rules(const SweepSpec& spec, const Plan& plan, const PlanOptions& options,
                                results::Store& recorded, const std::string& scratch_dir,
                                size_t workers);

}  // namespace batchlab::sweeps::study
