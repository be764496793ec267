// What `batchlab sweep status` shows of a scaling study, running or not (issue 24: the queries
// that cli/sweep_study.cpp held as raw SQL, beside the other study readers). Read-only: safe
// beside a running coordinator and its trials.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace batchlab::analysis {

struct UndecidedTrial {
  std::string run_id;
  double base_lr = 0.0;
  std::optional<std::string> run_status;  // nullopt: not started
  std::optional<int64_t> last_step, total_steps;
};

struct StudyCellProgress {
  std::string cell_id;
  std::string optimizer;
  int64_t global_batch = 0, seed = 0;
  std::string status;
  std::optional<double> best_lr, steps_to_target;
  int64_t cap_steps = 0;
  int64_t trials = 0;
};

struct StudyProgress {
  std::map<std::string, std::string> cell_status;  // cell_id -> searching | reached | censored
  std::map<std::string, int64_t> trial_outcomes;   // outcome -> trials
  std::vector<UndecidedTrial> undecided;           // by cell, then lr_index
  std::vector<StudyCellProgress> cells;            // by optimizer, batch, seed
};

// The study rows of `sweep_id` in `db_path`; an empty progress when the file does not exist.
// Throws StoreInputError for a file that is not a study database.
StudyProgress read_study_progress(const std::string& db_path, const std::string& sweep_id);

}  // namespace batchlab::analysis
