// The rows a scaling study leaves in its database (schema v3, contract C3): one study_cells row per
// cell (optimizer x batch x other non-LR axes x seed), one study_trials row per learning rate tried
// in a cell, and the noise_scale rows those trials measured. The study's numbers come from these
// three tables and nothing else, so a database written by another program with the documented
// tables gives the same numbers; the trials' resolved configs (runs.config_toml) are read only to
// list each series' optimizer settings, and their absence only leaves that list out.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config/target.h"
#include "results/batch_ladder.h"

namespace batchlab::analysis {

struct StudyCellRecord {
  std::string cell_id;
  std::string sweep_id;
  std::string optimizer;
  int64_t global_batch = 0;
  int64_t seed = 0;
  std::string cell_toml;  // the non-LR axis values that define the cell
  config::Target target;
  double lr_center = 0.0, lr_factor = 0.0;
  int64_t cap_steps = 0, warmup_steps = 0;
  std::string status;  // searching | reached | censored
  std::optional<std::string> best_run_id;
  std::optional<double> best_lr;
  std::optional<double> steps_to_target;    // interpolated in log-step; reached cells only
  std::optional<double> samples_to_target;  // steps_to_target x global_batch
};

struct StudyTrialRecord {
  std::string run_id;
  std::string cell_id;
  double base_lr = 0.0;
  int64_t lr_index = 0;  // base_lr = lr_center * lr_factor^lr_index
  std::string outcome;   // running | reached | capped | pruned | diverged | stopped_by_race
  std::optional<int64_t> last_step;
  std::optional<double> steps_to_target;  // reached trials only
  std::optional<int64_t> samples_trained;
  std::optional<int64_t> cap_samples;
  std::string reason;
};

struct StudyRecords {
  std::vector<StudyCellRecord> cells;    // ordered by optimizer, batch, seed, cell id
  std::vector<StudyTrialRecord> trials;  // ordered by cell, lr_index
  // noise_scale.b_simple of each trial's run, finite values only, in step order.
  std::map<std::string, std::vector<double>> b_simple;
  // Per sweep_id whose stored spec (sweeps.spec_toml) has a [study.ladder], its rule.
  std::map<std::string, results::LadderRule> ladders;
  // run_id -> runs.config_toml of the trials' runs that have a row (none without a runs table:
  // a database written with the study tables alone), for their optimizer settings.
  std::map<std::string, std::string> run_configs;
};

// True when the database has a study_cells table with at least one row (of `sweep_id` when set).
bool has_study(const std::string& db_path, const std::optional<std::string>& sweep_id = {});

// Reads the study's cells and trials (of `sweep_id` when set), its trials' noise-scale rows and
// resolved configs, and the ladder rules of the sweeps' stored specs (none without a sweeps table).
// A database without a noise_scale table reads as no noise-scale rows. Throws StoreInputError for a
// missing file or tables that lack the documented columns.
StudyRecords read_study_records(const std::string& db_path,
                                const std::optional<std::string>& sweep_id = {});

}  // namespace batchlab::analysis
