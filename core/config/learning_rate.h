// The learning rates a run applies, as the config determines them, and the rule that keeps them
// within what the optimizer can apply. The peak is base_lr x f(batch.global / base_batch) with f =
// 1, k or sqrt(k) (DESIGN.md); the LR schedule decays from it to schedule.end_lr; a parameter
// group multiplies both by its lr_scale.
//
// Why the rule: the optimizers update float32 parameters (bf16 runs keep float32 master weights),
// and LibTorch converts each scalar it applies to a tensor's type with a range check, so a
// learning rate beyond the largest float32 (about 3.4e38) is no diverging run but a crash at the
// first update ("value cannot be converted to type float without overflow", status failed). A
// finite LR below that bound that still blows the weights up is a result: the run ends diverged.
// The same holds for optim.weight_decay (schema.cpp bounds it with kMaxFloat32); eps, the trust
// coefficient and grad_clip reach the tensors only through arithmetic on tensors, where an
// overflow is an inf (the run diverges), so they need no such bound.
#pragma once

#include <cstdint>
#include <vector>

#include "core/config/experiment_config.h"
#include "core/config/read_context.h"
#include "core/errors.h"

namespace batchlab::config {

// base_lr scaled by the batch-size rule (optim.scaling) for a global batch of `global_batch`.
double peak_lr(const OptimConfig& optim, int64_t global_batch);

// The largest LR the run applies (the peak and schedule.end_lr, times the largest group lr_scale
// above 1) must be a float32: a diagnostic on optim.base_lr (or schedule.end_lr, when the final
// LR is the one too large) naming the computation, keyed by full path. With `read`, skipped when
// one of the keys it relates failed to read.
void validate_learning_rates(const ExperimentConfig& config, std::vector<Diagnostic>& out,
                             const ReadContext* read = nullptr);

}  // namespace batchlab::config
