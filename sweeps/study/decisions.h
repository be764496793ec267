// The decisions of a scaling study, as pure functions over one cell's evaluation rows: no I/O, no
// clock, so the coordinator, its resume after kill -9 (which replays them from stored rows) and
// the tests (curves given by hand) all decide alike. docs/sweeps.md "Studies" states the rules:
//
//   crossing   where a curve reaches a level, interpolated in log-step between the evaluations
//              around it (contract C3 of issue 13);
//   race       once a trial reaches the target at S*, every other trial of the cell stops at S*;
//   pruning    a trial whose best metric so far the race leader (the trial that reached the
//              target first) reached in half as many steps or fewer stops, only once it had a
//              fair run: past warmup plus `min_evals` evaluations, and past `min_leader_fraction`
//              of the leader's steps to target (never against a trial within 2x, never before a
//              trial reached);
//   outcome    reached | capped | pruned | diverged | stopped_by_race, from how a trial ended;
//   bracket    centre, then its two neighbours, then one more point towards the best until the
//              best is interior or lr_points_max points ran.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config/target.h"
#include "core/stop_request.h"

namespace batchlab::sweeps::study {

// The study's goal is its target as the spec states it (core/config/target.h: a validation metric,
// the value to reach, the direction), passed along as it is.

// One evaluation of a trial: the study's metric after `step` updates (nullopt: not finite).
struct EvalPoint {
  int64_t step = 0;
  std::optional<double> value;
};
using Curve = std::vector<EvalPoint>;  // in step order

// Where `curve` first reaches `level` (the goal's direction): between the last evaluation before
// (s1, m1) and the first at or past it (s2, m2), log S = log s1 + (level - m1) / (m2 - m1) *
// (log s2 - log s1); S = s2 when there is no usable earlier evaluation. nullopt: never reached.
std::optional<double> crossing(const Curve& curve, const config::Target& goal, double level);
std::optional<double> steps_to_target(const Curve& curve, const config::Target& goal);

// The decisions' stop requests are core/stop_request.h's (contract C2): the trial ends at its
// first evaluation with step >= `step`; reason stop_reason::kStoppedByRace or kPruned.

// What the decisions see of one trial of a cell.
struct TrialView {
  int64_t lr_index = 0;
  Curve curve;
  bool ended = false;
  std::string run_status;  // the run's final status once ended (done, diverged, stopped, ...)
  std::optional<std::string> stop_reason;  // runs.stop_reason of a stopped run
};

// The trial that reached the target first (smallest interpolated crossing; ties: the smaller
// |lr_index|, then the smaller lr_index), or nullopt while none has.
std::optional<size_t> race_leader(const std::vector<TrialView>& trials, const config::Target& goal);

// The race: the request for trial `i` once another trial reached the target at S* (it stops at
// its first evaluation at or past ceil(S*), after which it could no longer win).
std::optional<StopRequest> race_stop(const std::vector<TrialView>& trials, size_t i,
                                     const config::Target& goal);

// When a trial has had a fair run and may be pruned. The image study (issue 13) pruned right
// after warmup (min_evals 0, min_leader_fraction 0); in 10 of its 23 cells the best rate was
// interior only because a neighbour was pruned, some within 3-8% of the winner's steps, when a
// slow start under a larger rate says little about where the curve goes. The defaults wait for
// three evaluations past warmup (a full octave of the log-spaced grid at evals_per_octave 3) and
// for half of the leader's steps, so a pruned trial was behind by 2x over a stretch that matters.
struct PruneRule {
  int64_t warmup_steps = 0;          // the cell's warmup: no evaluation at or before it counts
  int64_t min_evals = 3;             // evaluations past warmup before the first prune
  double min_leader_fraction = 0.5;  // and not before this fraction of the leader's S*
};

// Pruning: the first evaluation s of trial `i` that the rule allows (past warmup, the
// `min_evals`-th evaluation past warmup or later, s >= min_leader_fraction x S* of the leader)
// where its best metric so far m was reached by the race leader at a crossing s_l with
// 2 * s_l <= s. The request's step is that s. Without a leader (no trial reached yet) nothing is
// pruned: trials short of the target never prune each other, so a cell always keeps a trial that
// can still reach.
std::optional<StopRequest> prune_stop(const std::vector<TrialView>& trials, size_t i,
                                      const config::Target& goal, const PruneRule& rule);

// The outcome of an ended trial (results::trial_outcome values), or nullopt when its run ended
// without a result (failed, preempted, oom: it runs again).
std::optional<std::string> trial_outcome(const TrialView& trial, const config::Target& goal);

// Ranking of ended trials: reached ones first by steps to target, then the others by their best
// metric, then those without a finite metric, diverged ones last; among diverged or metric-less
// ones the smaller learning rate first (divergence says the rate was too high). Ties: the smaller
// |lr_index|, then the smaller one.
bool ranks_before(const TrialView& a, const TrialView& b, const config::Target& goal);

// What a cell does next.
struct BracketStep {
  std::vector<int64_t> add;    // lr indices to run next, in the order to start them
  bool complete = false;       // the search is over
  std::optional<size_t> best;  // the best ended trial (when complete)
};
// How a cell's bracket begins: the centre and its two neighbours at once, or the centre alone
// (a later seed's rerun of the first seed's best rate, [study] later_seeds = "rerun_best"), whose
// neighbours run only when it does not reach the target; or the centre alone and nothing more
// (a rerun of a first seed's cell that was itself censored: no rate of its search reached, so a
// search around it for another seed would only run more trials to the cap).
enum class BracketStart { three, one, alone };

// Decides from the cell's trials: none yet -> {0, -1, +1} ({0} when `start` is one or alone);
// some still running -> wait; a lone centre that reached (start one) -> complete, one that did
// not -> {-1, +1} (start alone: complete either way); all ended -> the best at an edge adds its
// outer neighbour while fewer than `lr_points_max` ran, else complete.
BracketStep next_bracket_step(const std::vector<TrialView>& trials, const config::Target& goal,
                              int64_t lr_points_max, BracketStart start = BracketStart::three);

}  // namespace batchlab::sweeps::study
