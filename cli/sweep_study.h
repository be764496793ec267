// The `batchlab sweep plan|run|status` views of a spec with a [study] section (docs/sweeps.md,
// "Studies"): its jobs are cells, each with a learning-rate search, run by the study coordinator.
#pragma once

#include <atomic>
#include <set>
#include <string>

#include "analysis/study_progress.h"
#include "cli/study_printer.h"
#include "cli/sweep_context.h"
#include "cli/sweep_workers.h"
#include "sweeps/local_runner.h"
#include "sweeps/study/engine.h"
#include "sweeps/study/plan.h"
#include "sweeps/study/trial_source.h"
#include "sweeps/sweep_records.h"

namespace batchlab::cli {

// `sweep plan`: the cells and the first trial of each (ConfigError, exit 2, when a cell's trials
// cannot be built).
int print_study_plan(const SweepContext& ctx, const std::string& format);

// The study's cells with every cell's first trial built: a config the study cannot make is bad
// input (ConfigError, exit 2), reported before anything runs or is recorded.
sweeps::study::StudyPlan checked_study_plan(const SweepContext& ctx);

// Cells of `plan` a batch ladder stopped below, from the stored cells in `progress`: they will
// never open and are not owed. Empty without a ladder.
std::set<std::string> cells_beyond_ladder(const sweeps::study::StudyPlan& plan,
                                          const analysis::StudyProgress& progress);

// The counter SIGINT and SIGTERM raise while run_study_engine runs (a trial source watches it).
std::atomic<int>& study_stop_requests();

// While it lives, SIGINT and SIGTERM raise study_stop_requests() (reset to 0 on construction);
// the previous handlers come back when it goes, however the coordinator ends.
class StudyStopSignals {
 public:
  StudyStopSignals();
  ~StudyStopSignals();
  StudyStopSignals(const StudyStopSignals&) = delete;
  StudyStopSignals& operator=(const StudyStopSignals&) = delete;

 private:
  void (*previous_int_)(int);
  void (*previous_term_)(int);
};

// Runs the study engine over `source` until the study ends or a signal stops it, then prints the
// summary. The exit code: failed when stopped early or a trial failed.
int run_study_engine(const SweepContext& ctx, const sweeps::study::StudyPlan& plan,
                     sweeps::SweepRecords& records, sweeps::study::TrialSource& source,
                     StudyPrinter& printer);

// What a local coordinator holds while it runs a study's or a fixed-budget search's trials: the
// coordinator lock, the sweep's records (its sweeps row registered; trials are added as they are
// decided) and the options of its local trial source, stopped by study_stop_requests(). Refuses
// (batchlab::Error) while the study's Slurm coordinator job is queued or running: the lock keeps
// out a coordinator on a host that shares file locks with this one, and a Slurm coordinator may run
// on one that does not (sweeps/study/slurm_coordinator.h). Prints the opening line, e.g.
// "study NAME: 12 cells -> results.db (runs in runs/NAME), 2 workers".
class LocalCoordinator {
 public:
  LocalCoordinator(const SweepContext& ctx, const sweeps::LocalRunOptions& options,
                   const WorkerChoice& workers, const std::string& kind, size_t cells);

  sweeps::SweepRecords& records() { return records_; }
  const sweeps::study::ProcessSourceOptions& source_options() const { return source_options_; }

 private:
  sweeps::FileLock lock_;
  sweeps::SweepRecords records_;
  sweeps::study::ProcessSourceOptions source_options_;
};

// `sweep run`: runs the study over `options.workers` workers; resumes what the database holds.
int run_study(const SweepContext& ctx, const sweeps::LocalRunOptions& options,
              const WorkerChoice& workers);

// `sweep status`: cells by status, trials by outcome, running trials with their progress.
int print_study_status(const SweepContext& ctx);

}  // namespace batchlab::cli
