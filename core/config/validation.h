// Validation of a read config: the single-key rules of the field tables plus the rules that relate
// several keys (batch geometry, one warmup, one length, decay = "step" with milestones, accuracy
// targets) and the registry checks (model.arch, data.dataset). Diagnostics come back keyed by full
// path and without positions; ReadContext::report places them.
#pragma once

#include <vector>

#include "core/config/experiment_config.h"
#include "core/config/loader.h"
#include "core/config/read_context.h"
#include "core/errors.h"

namespace batchlab::config {

// With `read`, the context the config was read with: a rule relating several keys is skipped when
// one of its keys failed to read (the struct holds a default there, and the type error already
// tells the user what to fix), so every reported problem is a real one.
std::vector<Diagnostic> validate_experiment(const ExperimentConfig& config,
                                            const LoadOptions& options,
                                            const ReadContext* read = nullptr);

// The parts of validate_experiment, exposed for tests and for callers that build configs in code.
// With `read`, each rule is skipped when one of the keys it relates failed to read.
void validate_schedule(const ScheduleConfig& schedule, std::vector<Diagnostic>& out,
                       const ReadContext* read = nullptr);
void validate_targets(const TrainConfig& train, std::vector<Diagnostic>& out,
                      const ReadContext* read = nullptr);
void validate_registries(const ExperimentConfig& config, const LoadOptions& options,
                         std::vector<Diagnostic>& out);

}  // namespace batchlab::config
