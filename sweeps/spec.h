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
//
// Keys may be quoted ("optim.name") or written as dotted/nested tables (optim.name, [grid.optim]).
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/errors.h"

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
  std::shared_ptr<const SpecStorage> storage;  // owns every SpecValue::node

  // Every swept key ("train.seed" for the seeds), in dimension order.
  std::vector<std::string> swept_keys() const;
};

// Parses and checks a spec. Throws ConfigError with every problem (file:line:col: key = value:
// rule), InputError for a missing file.
SweepSpec parse_sweep_spec(std::string_view text, const std::string& source_name);
SweepSpec load_sweep_spec(const std::string& path);

// TOML value equality as a user means it: 256 == 256.0, arrays and tables element by element.
bool same_value(const toml::node& a, const toml::node& b);

}  // namespace batchlab::sweeps
