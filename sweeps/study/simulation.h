// A scaling study replayed on a virtual clock from a finished study's records (issue 24): how long
// the same study takes with N workers under a scheduling policy (sweeps/study/schedule.h).
//
// RecordedTrialSource serves the engine the trials a finished study ran: a trial started at
// virtual time t0 delivers its stored evaluations at t0 + evals.wall_s and ends at t0 + its run's
// duration (runs.finished_at - runs.started_at), or earlier, at its first evaluation at or past a
// stop request's step that comes after the request. Trials are matched by what defines them
// (their cell, or where the record's cells are not the plan's its optimizer, batch and seed; and
// the learning rate), not by run id, so a cell whose cap the fit set differently still finds its
// trials. What the record cannot say is kept as recorded: a trial the
// decisions would run past the end of its record ends there, as it ended (pruned, stopped by the
// race, reached). A trial the record does not have at all is counted in `missing` and ends at once
// without an evaluation, so a simulation whose decisions left the record says so.
//
// The clock holds the trials' own durations (start-up, training, evaluations) and nothing else:
// the coordinator's polling and the time between a trial's end and the next one's start are zero,
// the same under every policy.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "results/store.h"
#include "sweeps/study/engine.h"
#include "sweeps/study/plan.h"
#include "sweeps/study/schedule.h"

namespace batchlab::sweeps::study {

struct SimulationResult {
  SchedulePolicy policy = SchedulePolicy::shortest_study;
  size_t workers = 0;
  double makespan_s = 0.0;  // virtual seconds from the first start to the last end
  double busy_s = 0.0;      // the trials' durations summed (the same work under every order)
  // The virtual clock ends a trial stopped early at its evaluation's training clock (evals.wall_s),
  // without the start-up, evaluations and exit its run spent besides; this adds, for every such
  // trial, all of its record's time besides training (duration - last evaluation's wall_s): an
  // upper bound, so busy_s + stopped_overhead_s never flatters a rule that stops trials.
  double stopped_overhead_s = 0.0;
  // The trials this replay started as the record ran them, each to its own end (its last step x
  // batch, its run's duration): under a recording of a plain grid, what a plain grid of exactly
  // these points costs.
  int64_t recorded_samples = 0;
  double recorded_s = 0.0;
  size_t trials = 0;   // trials started
  size_t missing = 0;  // trials the record does not have
  size_t cells = 0, reached = 0, censored = 0;
  int64_t samples = 0;                           // the trials' samples_trained summed
  std::vector<results::StudyCellRow> cell_rows;  // every cell the replay opened, as it ended
};

// Runs the study of `plan` with `workers` slots against the trials recorded in `recorded` (a
// finished study's database, read only), writing its decisions into a fresh database at
// `scratch_db` (which must not exist). Throws InputError when `recorded` holds no run with its
// optimizer, batch, seed and rate, or a run lacks its start or end time.
SimulationResult simulate_study(const StudyPlan& plan, results::Store& recorded,
                                const std::string& scratch_db, size_t workers,
                                SchedulePolicy policy);

}  // namespace batchlab::sweeps::study
