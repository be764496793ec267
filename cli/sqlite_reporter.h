// The trainer's Reporter, stored in SQLite. core/ declares Reporter and may not include results/
// (DESIGN.md: results -> sqlite, fmt only), so the adapter between the two lives here in cli/.
// Rows go through results::BatchedWriter: the training thread only queues them.
#pragma once

#include <memory>
#include <string>

#include "core/train/reporter.h"
#include "results/batched_writer.h"
#include "results/rows.h"

namespace batchlab::cli {

// What the command line knows about a run before the trainer starts: the runs row of the config
// (sweeps::run_row_of, the same projection the sweep planner uses) plus host, git sha and LibTorch
// version.
using RunIdentity = results::RunRow;

class SqliteReporter : public train::Reporter {
 public:
  // Opens (creating or migrating) the database, marks the run `running` (a new attempt) and
  // removes what an earlier attempt recorded past `resume_step` (all of it when -1: a run without a
  // checkpoint starts from step 0, and its series must not mix two attempts).
  SqliteReporter(const std::string& db_path, RunIdentity identity, int64_t resume_step = -1);

  void run_started(const train::RunGeometry& g) override;
  void step(const train::StepRecord& r) override;
  void eval(const train::EvalRecord& r) override;
  void milestone(const train::MilestoneRecord& r) override;
  void layer_stats(const std::vector<train::LayerStatRecord>& rows) override;
  void noise_scale(const train::NoiseRecord& r) override;
  void run_finished(const train::RunOutcome& o) override;
  void flush() override;

  // A crash outside the trainer's own outcomes: status failed with the message.
  void record_failure(const std::string& error);

 private:
  RunIdentity identity_;
  std::unique_ptr<results::BatchedWriter> writer_;
};

}  // namespace batchlab::cli
