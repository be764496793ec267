// What every `batchlab sweep` subcommand starts from: the spec, loaded and expanded with the same
// registries and data-set knowledge as `batchlab train`, and the sweep's file layout.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "results/query_result.h"
#include "sweeps/expand.h"
#include "sweeps/run_layout.h"
#include "sweeps/spec.h"

namespace batchlab::cli {

struct SweepContext {
  sweeps::SweepSpec spec;
  sweeps::Plan plan;
  sweeps::RunLayout layout{""};
};

// Plan options with the model and dataset registries, and the training-set sizes the data sets
// have (fashion_mnist: 60000 unless data.train_size, and its files must exist; synthetic: 4096).
sweeps::PlanOptions cli_plan_options();

// Loads the spec and expands it; ConfigError/InputError on bad input (exit code 2).
SweepContext load_sweep(const std::string& spec_path, bool keep_config_toml);

// The coordinator lock of the sweep, or nullopt when another live process holds it.
std::optional<sweeps::FileLock> try_coordinator_lock(const sweeps::RunLayout& layout,
                                                     const std::string& what);
// The coordinator lock for `sweep <what>`, waiting up to 20 s for a `sweep status` that holds it
// for its fold; throws Error (exit 1) naming the process that holds it.
sweeps::FileLock coordinator_lock(const SweepContext& ctx, const std::string& what);

// Path of the running batchlab executable (the jobs run the same binary).
std::string self_executable();

// A JSON string literal (results/query_result.h: the one JSON escaper).
using results::json_string;

// "12.3s", "4m05s" for tables.
std::string format_seconds(double seconds);

}  // namespace batchlab::cli
