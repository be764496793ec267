// A sweep spec: the TOML file that names a base experiment and the keys to vary (DESIGN.md,
// "Sweep keys"). Parsing checks the spec itself, every problem at once with file:line:col and a
// did-you-mean for misspelled keys; whether each expanded job is a valid experiment is expand.h's
// job.
//
//   schema_version = 1
//   [sweep]   name = "lb"; experiment = "../../experiments/configs/fashion_mnist.toml" (relative to
//             the spec file); results = "results/lb.db" (relative to the working directory; default
//             results/<name>.db); runs_dir (default: runs/<name> beside the database's results/
//             folder, else <database folder>/runs/<name>); seeds = [0, 1]
//   [set]     "data.train_size" = 12000            fixed overrides for every job (not coordinates)
//   [grid]    "batch.global" = [256, 1024]         every combination
//   [[zip]]   "optim.name" = ["sgd", "lamb"]; "optim.scaling" = ["linear", "sqrt"]   vary together
//   [[exclude]] "optim.name" = "sgd"; "batch.global" = 1024     drop combinations matching all keys
//   [when."optim.name=lamb"] "optim.base_lr" = 0.004    overrides for the jobs that match; several
//             conditions join with ',' ("optim.name=lars,batch.global=8192") and must all hold
//   [study]   target = { metric = "val_acc", value = 0.88 }; lr_factor = 2; lr_points_max = 6;
//             lr_center; max_samples | max_steps; evals_per_octave = 3; warmup = 0.05;
//             later_seeds = "search" | "rerun_best"; race = true
//             [study.ladder] start = 256; ceiling = 8192; min_gain = 1.3; flat_doublings = 2;
//             budget_stop = true
//             a learning-rate search per cell (the grid without the LR), raced to the target
//             (StudySpec below; docs/sweeps.md "Studies")
//   [search]  metric = "val_loss"; eta = 2; rungs = 4; lr_points = 4; lr_factor = 2; points
//             [search.knobs] "schedule.warmup_fraction" = [0.02, 0.1]
//             [search.when."optim.name=lars"] "optim.trust_coefficient" = [0.001, 0.01]
//             a fixed-budget search per cell by successive halving (BudgetSearchSpec below)
//
// Keys may be quoted ("optim.name") or written as dotted/nested tables (optim.name, [grid.optim]).
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/target.h"
#include "core/errors.h"
#include "results/batch_ladder.h"

namespace batchlab::sweeps {

// Where something was written in the spec file.
struct Location {
  int line = 0;
  int column = 0;
};

// One value taken from the spec: a node of the spec's document (kept alive by SweepSpec).
struct SpecValue {
  const toml::node* node = nullptr;
  std::string text;  // TOML text of the value, for coordinates and messages
  Location where;
};

// One swept key and its values.
struct Axis {
  std::string key;  // "optim.name"
  std::vector<SpecValue> values;
  Location where;
};

// An independent factor of the product: the seeds, one [grid] key, or one [[zip]] table (several
// keys whose i-th values go together).
struct Dimension {
  enum class Kind { seeds, grid, zip };
  Kind kind = Kind::grid;
  std::vector<Axis> axes;
  Location where;
  size_t size() const { return axes.empty() ? 0 : axes.front().values.size(); }
};

// `key = value`: a condition of a when-clause or one key of an exclusion.
struct Match {
  std::string key;
  SpecValue value;
};

struct Exclude {
  std::vector<Match> match;  // all must hold
  Location where;
};

// A fixed value for a key ([set], or the body of a when-clause).
struct Setting {
  std::string key;
  SpecValue value;
};

struct When {
  std::string condition;          // as written: "optim.name=lars"
  std::vector<Match> conditions;  // all must hold
  std::vector<Setting> settings;
  Location where;
};

// [study.ladder]: instead of a list of batch sizes, a ladder from `start` that doubles while the
// measured steps to target still fall by more than `min_gain` per doubling, up to `ceiling`
// (results/batch_ladder.h has the rule; docs/sweeps.md "Batch ladder"). The reader adds the
// batches start, 2 start, ..., ceiling as a batch.global axis, so every cell of the ladder has its
// id and trials from the start; the coordinator opens a batch only when the rule allows it.
struct LadderSpec {
  int64_t start = 0;
  int64_t ceiling = 0;  // start x 2^k
  double min_gain = results::kLadderDefaultMinGain;
  int64_t flat_doublings = results::kLadderDefaultFlatDoublings;
  // A rung whose cap (from max_samples) is below the steps a seed needed at the rung under it is
  // not opened (results/batch_ladder.h, LadderStop::budget); false opens it as before.
  bool budget_stop = true;
  // How many censored rungs a line that has not reached the target anywhere yet may climb past
  // (results/batch_ladder.h); 0 (the default): the first censored rung ends the line's ladder.
  int64_t censored_rungs = 0;
  Location where;  // the [study.ladder] table
};

// How the cells of the seeds after the first (the first of [sweep] seeds) at a batch search:
// search: each seed its own bracket, centred like the first seed's (the default);
// neighbours: the first seed's best rate at that batch and its two neighbours, nothing more;
// rerun_best: one trial at the first seed's best rate at that batch; its two neighbours (then the
//   usual bracket) only when that trial does not reach the target. The seeds then measure the
//   spread of steps to target at a rate chosen on another seed (steps-to-target-method.md,
//   "Seeds": rerun the best setting with more seeds) at about a third of the cost.
enum class LaterSeeds { search, neighbours, rerun_best };

// The [study] section: every cell (one combination of the grid, which must not sweep the learning
// rate) gets a learning-rate search raced to a validation target (sweeps/study_*.h).
// [study.bound]: the cap of a line that does not match `conditions` is at most `factor` times the
// steps the reference lines' fit S(B) = S_min + E_min / B predicts at its batch, once the lines
// that match have reached at 3 batches or more (sweeps/study/plan.h reference_cap). A line that
// cannot reach the target then costs a bounded multiple of the reference, and its censored cells
// read as "more than factor x the reference": the bound a comparison of a failing optimizer needs
// at the large batches, where the study's own cap would train it thousands of steps in vain.
struct StudyBoundSpec {
  std::string reference;          // as written: "optim.name=lamb"
  std::vector<Match> conditions;  // all must hold for a reference line
  double factor = 4.0;
  Location where;
};

struct StudySpec {
  config::Target target;               // metric val_acc | val_loss
  double lr_factor = 2.0;              // spacing of the LR points: centre x lr_factor^k
  int64_t lr_points_max = 6;           // LR points per cell at most (>= 3)
  std::optional<double> lr_center;     // every cell's centre; unset: from the next smaller batch
  std::optional<int64_t> max_samples;  // per-trial cap in samples (steps = ceil(samples / batch))
  std::optional<int64_t> max_steps;    // per-trial cap in steps; neither: the job's schedule
  int64_t evals_per_octave = 3;        // train.evals_per_octave of every trial
  double warmup = 0.05;  // warmup as a fraction of the cap (at least 5 steps), unless the spec
                         // sets a schedule.warmup_* key itself
  int64_t prune_min_evals = 3;      // a trial's evaluations past warmup before it may be pruned
  double prune_min_fraction = 0.5;  // and the fraction of the race leader's steps it must pass
  // false: no race and no pruning, every point of a bracket trains until it reaches the target
  // or its cap: the plain stop_at_target grid of the same points, the baseline of the study's
  // cost (`batchlab sweep cost`). Neither key changes a trial's config or a cell id.
  bool race = true;
  LaterSeeds later_seeds = LaterSeeds::search;
  std::optional<LadderSpec> ladder;     // the batches as a ladder rather than a batch.global list
  std::optional<StudyBoundSpec> bound;  // caps of the other lines from a reference line's fit
  Location where;                       // the [study] table
  Location target_where;                // its target (messages about the target name this position)
};

// One searched knob of a [search] section: the values a line tries for `key`. [search.knobs]
// holds the knobs of every line, [search.when."optim.name=lars"] those of the lines that match.
struct SearchKnob {
  std::string key;                // "schedule.warmup_fraction"
  std::vector<SpecValue> values;  // in the order written: the edges are its first and last
  std::string condition;          // as written ("" for [search.knobs])
  std::vector<Match> conditions;  // all must hold; empty: every line
  Location where;
};

// [search]: a fixed-budget search per cell (sweeps/study/budget_plan.h; docs/sweeps.md
// "Fixed-budget searches"). Every trial trains the job's own schedule (the same epochs at every
// batch); the points of a cell are the product of the learning rates and the line's knobs, and
// successive halving compares them at the same step.
struct BudgetSearchSpec {
  std::string metric = "val_loss";  // the held-out metric that selects (val_loss | val_acc)
  int64_t eta = 2;                  // rung k keeps the best ceil(n / eta) for rung k + 1
  int64_t rungs = 4;                // rung k trains budget / eta^(rungs - 1 - k) steps
  int64_t lr_points = 4;            // base_lr x lr_factor^k, k from -(lr_points - 1) / 2
  double lr_factor = 2.0;
  std::optional<int64_t> points;  // each line's product cut to this many (a fixed subset)
  // The budget in samples, the same at every batch (steps = ceil(budget_samples / batch)), for a
  // data set whose size only loading tells; unset: the job's own schedule (epochs or steps).
  std::optional<int64_t> budget_samples;
  std::vector<SearchKnob> knobs;
  Location where;
};

struct SpecStorage;  // the parsed document (spec_reader.h)

struct SweepSpec {
  std::string source;  // the spec file's path, as given
  std::string text;    // its contents (stored in the sweeps table)
  std::string name;
  std::string experiment;  // base experiment path, resolved against the spec's folder
  std::string results;     // sweep database path
  std::string runs_dir;    // run directories: <runs_dir>/<run_id>/
  std::vector<Setting> set;
  // Expansion order, slowest-varying first: the seeds (so seed 0 of every combination runs before
  // seed 1), then [grid] keys and [[zip]] tables in the order the file gives them.
  std::vector<Dimension> dimensions;
  std::vector<Exclude> excludes;
  std::vector<When> whens;  // file order: a later clause wins where two set the same key
  std::optional<StudySpec> study;
  std::optional<BudgetSearchSpec> search;      // [search]: a fixed-budget search (not with [study])
  std::shared_ptr<const SpecStorage> storage;  // owns every SpecValue::node

  // Every swept key ("train.seed" for the seeds), in dimension order.
  std::vector<std::string> swept_keys() const;
  // Whether the spec gives `key` a value anywhere: [set], [grid], [[zip]] or a when-clause.
  bool assigns(const std::string& key) const;
};

// Parses and checks a spec. Throws ConfigError with every problem (file:line:col: key = value:
// rule), InputError for a missing file.
SweepSpec parse_sweep_spec(std::string_view text, const std::string& source_name);
SweepSpec load_sweep_spec(const std::string& path);

// TOML value equality as a user means it: 256 == 256.0, arrays and tables element by element.
bool same_value(const toml::node& a, const toml::node& b);

}  // namespace batchlab::sweeps
