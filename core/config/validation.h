// Validation of a read config: the single-key rules of the field tables plus the rules that relate
// several keys (batch geometry; one warmup, one length, a warmup no longer than the run, step decay
// with milestones and without a budget; Nesterov with momentum; text sequence lengths; accuracy
// targets, validation targets with data.val_size; learning rates a float32 can hold,
// learning_rate.h), the registry checks (model.arch,
// data.dataset) and, where the caller knows the training split's size, the rules that need it
// (run_length.h). Diagnostics come back keyed by full path and without positions;
// ReadContext::report places them.
//
// This is the one place user input is validated. Components (optimizer factory, LR schedule, data
// and models) take validated configs and only assert that precondition (preconditions.h); what
// they can still reject needs the data (a batch larger than the training set; a warmup in steps
// longer than a run in epochs where the loader alone knows the data size, run_length.h).
#pragma once

#include <optional>
#include <string>
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

// True when none of `paths` (nor a table holding one) failed to read in `read` (or `read` is
// null), so a rule relating them sees the user's values.
bool keys_intact(const ReadContext* read, const std::vector<std::string>& paths);

// The parts of validate_experiment, exposed for tests and for callers that build configs in code.
// With `read`, each rule is skipped when one of the keys it relates failed to read.
void validate_schedule(const ScheduleConfig& schedule, std::vector<Diagnostic>& out,
                       const ReadContext* read = nullptr);
void validate_optim(const OptimConfig& optim, std::vector<Diagnostic>& out,
                    const ReadContext* read = nullptr);
// data.synthetic_*: only with the synthetic data set, and within the generator's minimums.
void validate_synthetic(const DataConfig& data, std::vector<Diagnostic>& out,
                        const ReadContext* read = nullptr);
void validate_text(const ModelConfig& model, const DataConfig& data, std::vector<Diagnostic>& out,
                   const ReadContext* read = nullptr);
void validate_targets(const ExperimentConfig& config, std::vector<Diagnostic>& out,
                      const ReadContext* read = nullptr);
// The rule text when a target on `metric` cannot be measured with `data` (a val_* metric without
// data.val_size > 0), nullopt when it can. One definition for train.target and the sweep's
// [study] target.
std::optional<std::string> validation_split_rule(const std::string& metric, const DataConfig& data);

void validate_registries(const ExperimentConfig& config, const LoadOptions& options,
                         std::vector<Diagnostic>& out);

}  // namespace batchlab::config
