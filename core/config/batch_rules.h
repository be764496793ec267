// Adam's other hyperparameters as functions of the batch, resolved once per run into its config
// (so the canonical TOML, the run id and `runs.config_toml` hold the values the run applies).
//
// beta2 by a half-life in examples (Marek et al. 2025, "Small Batch Size Training for Language
// Models": keep beta2's half-life fixed in tokens, beta2 = beta2_ref^(B / B_ref)). The
// second-moment average forgets half its weight after h examples, that is after h / B steps, so
//   beta2(B) = max(floor, 0.5^(B / h))            h = optim.beta2_half_life, floor =
//   optim.beta2_floor
// From beta2 = 0.999 at B = 32 (h = 22,166 examples) the rule gives 0.13 at B = 64k: without a
// floor the average keeps almost nothing (the issue that asked for it); the floor caps that.
// Weight decay proportional to the batch (Bergsma et al. 2025, "Power Lines": the best decay grows
// in proportion to B at fixed model and data):
//   weight_decay(B) = base_weight_decay * B / base_batch    (optim.weight_decay_scaling = "linear")
// with base_batch the learning rate's reference batch (optim.base_batch).
//
// In the config: with optim.beta2_half_life > 0, optim.betas[1] is derived (its first element
// stays optim.betas[0] when given); with optim.weight_decay_scaling = "linear", optim.weight_decay
// is derived from optim.base_weight_decay. A value given for the derived key must equal the rule's
// (so the canonical TOML, which holds both, reads back to itself); another value is a config error
// naming the rule's value (validation.cpp, validate_batch_rules).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/config/experiment_config.h"
#include "core/config/read_context.h"
#include "core/errors.h"

namespace batchlab::config {

// max(floor, 0.5^(global_batch / half_life)); half_life > 0 (examples).
double beta2_for_batch(double half_life, double floor, int64_t global_batch);

// base_weight_decay * global_batch / base_batch.
double weight_decay_for_batch(double base_weight_decay, int64_t base_batch, int64_t global_batch);

// The resolved optim.betas and optim.weight_decay of `c` (its rules applied to batch.global when
// they are on; the keys' own values otherwise).
std::array<double, 2> resolved_betas(const ExperimentConfig& c);
double resolved_weight_decay(const ExperimentConfig& c);

// `optim` with its rules applied at `global_batch` instead of batch.global: beta2 by its
// half-life, the weight decay by the batch (each only when on). A batch schedule
// (batch_schedule.h) re-resolves the optimizer with it at every batch change.
OptimConfig optim_for_batch(const OptimConfig& optim, int64_t global_batch);

// Diagnostics for derived keys given a value the rule does not produce, and for a rule without
// what it needs (base_weight_decay). With `read`, keys that failed to read are skipped.
void validate_batch_rules(const ExperimentConfig& config, std::vector<Diagnostic>& out,
                          const ReadContext* read = nullptr);

}  // namespace batchlab::config
