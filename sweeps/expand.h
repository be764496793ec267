// Expansion of a sweep spec into jobs, each a complete, validated experiment with its run id.
//
// The product of the spec's dimensions (seeds outermost) is walked in order; a combination that
// matches an [[exclude]] is dropped; the [set] values, the combination's values and the matching
// when-clauses are applied to the parsed base experiment; the result goes through the same
// parse_experiment as `batchlab train` plus the checks that need the data size (derived.h). Every
// problem of every job is reported at once, grouped by problem, each with the coordinates of the
// jobs it occurs in. Combinations that resolve to the same canonical config collapse into one job
// (one run id): e.g. schedule.budget = ["1h", "60m"].
//
// Speed: the base is parsed once; each combination edits a working copy of its table in place;
// the seeds of a combination share one parse; ranges of combinations expand on several threads:
// 100,000 jobs plan in about 1.5 s on one core (bench/sweep_plan_bench.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/config/loader.h"
#include "core/config/target.h"
#include "sweeps/derived.h"
#include "sweeps/run_row.h"
#include "sweeps/spec.h"

namespace batchlab::sweeps {

// The training split size a [data] section resolves to, as the caller knows the data sets.
struct TrainSize {
  std::optional<int64_t> samples;  // nullopt: unknown (derived step counts are then unknown)
  std::string error_key;           // set when the section is unusable, e.g. "data.train_size"
  std::string error;               // why
};
using TrainSizeFn = std::function<TrainSize(const config::DataConfig&)>;

struct PlanOptions {
  config::LoadOptions load;      // model/dataset registries; its overrides are ignored
  TrainSizeFn train_size;        // empty: sizes unknown
  bool keep_config_toml = true;  // false saves ~1 KB per job when only the plan is shown
  // Parse each combination once for its first seed and derive the other seeds' configs from it
  // (identical results, checked by the tests; about 40% less work with many seeds).
  bool reuse_across_seeds = true;
  unsigned threads = 0;                // 0: hardware concurrency for large sweeps, 1 for small ones
  size_t jobs_listed_per_problem = 4;  // coordinates shown per distinct problem
};

// A job is-a ConfigColumns (run_row.h): model, dataset, optimizer, scaling, base_lr, seed,
// global_batch and bn_group, what its planned runs row records before it starts.
struct Job : ConfigColumns {
  size_t combination = 0;                // index in the full product, 1-based in messages
  std::vector<std::string> coordinates;  // one value per Plan::coordinate_keys entry
  std::string run_id;
  std::string config_toml;               // canonical TOML (empty unless keep_config_toml)
  int64_t threads = 0;                   // train.threads, for sizing the workers
  std::optional<config::Target> target;  // the first train.target, if any
  DerivedValues derived;
  size_t duplicates = 0;  // later combinations that resolved to this same config
};

struct Plan {
  std::string sweep_name;
  std::vector<std::string> coordinate_keys;  // swept keys, slowest-varying first
  std::vector<Job> jobs;                     // run order, one per run id
  size_t combinations = 0;                   // size of the full product
  size_t excluded = 0;                       // dropped by [[exclude]]
  size_t collapsed = 0;                      // same config as an earlier job

  // "batch.global=256 optim.name=lars train.seed=0"
  std::string describe(const Job& job, const char* separator = " ") const;
};

// Throws ConfigError listing every problem (base file syntax, invalid jobs), InputError when the
// base experiment cannot be read.
Plan expand(const SweepSpec& spec, const PlanOptions& options);

}  // namespace batchlab::sweeps
