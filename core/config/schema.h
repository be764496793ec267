// The experiment schema: which sections exist and, through their field tables (schema.cpp), which
// keys each holds. Everything that needs "the list of keys" asks here.
#pragma once

#include <toml++/toml.h>

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/config/experiment_config.h"
#include "core/config/read_context.h"
#include "core/errors.h"

namespace batchlab::config {

inline constexpr std::string_view kSchemaVersionKey = "schema_version";

// One top-level table ([optim], ...), its field table erased to work on the whole config.
struct Section {
  std::string name;
  std::vector<std::string> keys;
  std::function<void(const toml::table&, ExperimentConfig&, ReadContext&)> read;
  // (key, canonical value) pairs, sorted by key, unset optionals left out.
  std::function<std::vector<std::pair<std::string, std::string>>(const ExperimentConfig&)> write;
  // Single-key rules of the section (ranges, enums), as diagnostics keyed by full path.
  std::function<void(const ExperimentConfig&, std::vector<Diagnostic>&)> check;
  // Defaults computed from other keys, for keys absent from the document.
  std::function<void(ExperimentConfig&, const ReadContext&)> derive;
};

// All sections, sorted by name (the canonical order).
const std::vector<Section>& experiment_sections();
const Section* find_section(std::string_view name);

// "schema_version" and every "section.key", sorted: the known-key list for suggestions and for
// checking --set paths.
const std::vector<std::string>& known_key_paths();

// Valid names of the enumerated keys, for messages and for other components that list them.
const std::vector<std::string>& optimizer_names();
const std::vector<std::string>& implementation_names();
const std::vector<std::string>& ns_dtype_names();        // optim.ns_dtype (Muon)
const std::vector<std::string>& muon_adjust_lr_names();  // optim.muon_adjust_lr
const std::vector<std::string>& scaling_names();
const std::vector<std::string>& decay_names();
const std::vector<std::string>& precision_names();
const std::vector<std::string>& stem_names();
const std::vector<std::string>& dist_backend_names();
const std::vector<std::string>& target_metric_names();
const std::vector<std::string>& full_eval_names();

// Facts about target metrics, shared by train.target and the sweep's [study] target: accuracies
// lie in (0, 1] and are reached from below; val_* metrics need a validation split
// (data.val_size > 0).
bool is_accuracy_metric(std::string_view metric);
bool is_validation_metric(std::string_view metric);

}  // namespace batchlab::config
