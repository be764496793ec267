// The configuration edge: TOML text or a parsed table in, a validated and resolved ExperimentConfig
// out, or a ConfigError listing every problem at once as `file:line:col: key.path = value: rule`.
// Nothing here allocates tensors or touches devices, so a bad config fails in milliseconds.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/experiment_config.h"
#include "core/errors.h"

namespace batchlab::config {

struct LoadOptions {
  std::vector<std::string> overrides;  // "key.path=value" from --set, applied after the file
  int64_t world_size = 1;              // for the batch divisibility rule
  // Valid model.arch values (from the models registry) and data.dataset values; empty: unchecked.
  std::vector<std::string> model_archs;
  std::vector<std::string> datasets;
  // Which of those are masked-language models and text data sets: the other architectures
  // classify images and the other data sets are images, and the two must match.
  std::vector<std::string> text_archs;
  std::vector<std::string> text_datasets;
  // The examples of the training split a [data] section gives (data.train_size applied,
  // data.val_size held out), when the caller can tell without loading the data; nullopt where it
  // cannot. With it, validation also runs the rules that need the steps per epoch (a warmup in
  // steps longer than a run in epochs, run_length.h); without it (empty), they wait for the data.
  std::function<std::optional<int64_t>(const DataConfig&)> training_examples;
  // The machine the job runs on (host_rules.h); with `warnings` set, what its rules say about the
  // config (train.threads far beyond the cores) lands there, located like the diagnostics, when
  // the config is valid. Never an error: validation gives the same answer on every machine.
  int64_t host_cores = 0;  // 0: unknown, no warnings
  int64_t host_processes = 1;
  std::vector<Diagnostic>* warnings = nullptr;
  // Check model.init_from and record its SHA-256 (init_file.h). false: keep the recorded hash and
  // leave the file alone (exporting a finished run, whose weights come from its checkpoint).
  bool read_init_file = true;
};

// Missing or unreadable file -> InputError naming the path; bad content -> ConfigError.
ExperimentConfig load_experiment_file(const std::string& path, const LoadOptions& options = {});

// `source_name` is the file name diagnostics show. A TOML syntax error is a ConfigError with the
// parser's position.
ExperimentConfig parse_experiment(std::string_view toml_text, const std::string& source_name,
                                  const LoadOptions& options = {});

// For callers that already hold a table (the sweep engine merges a base file with grid values).
// Positions come from the nodes' source regions; nodes built in code have none.
ExperimentConfig parse_experiment(const toml::table& table, const std::string& source_name,
                                  const LoadOptions& options = {});

// Deterministic TOML of a resolved config: `schema_version = 1` first, then sections and keys in
// sorted order, unset optionals omitted, numbers normalized. parse(canonical(c)) == c, and
// canonical(parse(canonical(c))) == canonical(c).
std::string to_canonical_toml(const ExperimentConfig& config);

// First 16 hex characters of SHA-256 of the canonical TOML: same config, same id, everywhere.
std::string run_id(const ExperimentConfig& config);
// The same id from canonical TOML already rendered (the sweep planner renders it once per job).
std::string run_id_of_canonical(std::string_view canonical_toml);

// global = world_size x micro x accumulation for a whole accumulation (micro 0 = global / world),
// micro <= global, and bn_group dividing the micro-batch. Appends unlocated diagnostics keyed by
// full path ("batch.global"). Single-key ranges (global > 0, micro >= 0, bn_group >= 0) belong to
// the field table; when one of them is violated this check has nothing to say and adds nothing.
void validate_batch_geometry(const BatchConfig& batch, int64_t world_size,
                             std::vector<Diagnostic>& out);

}  // namespace batchlab::config
