// The options of `batchlab sweep submit --slurm`, in one table that parses them from the command
// line, checks them, and renders them: as #SBATCH lines (slurm.cpp) and back into flags for the
// study's coordinator job, which is started with the options it was submitted with.
//
// Why the checks: every value ends up on a line of an sbatch script. A value with a newline would
// become a script line of its own (a command, or a line that ends sbatch's reading of #SBATCH
// lines, silently dropping the preemption signal written after it), and one with a space would be
// read by sbatch as two arguments. Both are refused, naming the option, before anything is written.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sweeps/slurm.h"

namespace batchlab::sweeps {

// Everything `sweep submit --slurm` takes beyond the sweep.
struct SlurmSubmitSettings {
  SlurmOptions jobs;             // a sweep's array tasks, a study's trials (max_parallel: at once)
  std::string coordinator_time;  // --coordinator-time: the study coordinator job's --time
  int retries = 0;               // --retries: submissions again of a trial that crashed
  int snapshot_every = 10;       // --snapshot-every: seconds between a job's record snapshots
  int publish_every = 30;        // --publish-every: seconds between the coordinator's snapshots
  int max_attempts = 10;         // --max-attempts: Slurm jobs per trial, all causes, in all
};

// A study's trials queued at once when --max-parallel is not given (a plain sweep's array then
// has no limit).
inline constexpr int kDefaultStudyMaxParallel = 16;

struct SlurmFlag {
  const char* name;  // without the dashes
  bool takes_value;  // false: a flag alone (--slurm, --dry-run)
  bool repeatable;   // --sbatch-arg
  bool study_only;   // refused on a plain sweep
};
// Every option of `sweep submit --slurm` (and of the coordinator job, which takes the same).
const std::vector<SlurmFlag>& slurm_flags();

// The settings from the values given per flag name (the words after each --flag). Every problem
// is listed in `problems` as "--flag VALUE: why and the fix" (all of them, not the first).
SlurmSubmitSettings parse_slurm_flags(const std::map<std::string, std::vector<std::string>>& given,
                                      std::vector<std::string>* problems);

// The flags that give `settings` back to parse_slurm_flags (the coordinator job's command line).
std::vector<std::string> render_slurm_flags(const SlurmSubmitSettings& settings);

}  // namespace batchlab::sweeps
