// Reads a parsed TOML document into ExperimentConfig: walks the schema's field tables, reports
// unknown keys, wrong types and a missing schema_version, then fills the defaults that depend on
// other keys. Range and cross-key rules are validation.h's job.
#pragma once

#include <toml++/toml.h>

#include "core/config/experiment_config.h"
#include "core/config/read_context.h"

namespace batchlab::config {

// Problems go to `ctx`; the returned config holds whatever could be read (defaults elsewhere).
ExperimentConfig read_experiment(const toml::table& root, ReadContext& ctx);

// The resolution step that runs after every key (overrides included) is in place: derived
// defaults for absent keys (data.seed, optim.eps, optim.grad_clip) and implications
// (optim.name = "nesterov" sets optim.nesterov).
void resolve_derived(ExperimentConfig& config, const ReadContext& ctx);

}  // namespace batchlab::config
