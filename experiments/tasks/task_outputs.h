// The loss and metric of each task family, in one place for the tasks that train on real data
// (image_classification.h, file_image_classification.h, masked_lm_task.h) and for the synthetic
// throughput benchmark (experiments/bench/), so the benchmark times the same computation.
#pragma once

#include <cstddef>

#include "core/train/task.h"
#include "models/causal_lm.h"
#include "models/masked_lm.h"
#include "models/network.h"

namespace batchlab::experiments {

// Positions in the extras of a masked-language-model batch.
inline constexpr size_t kMlmSegments = 0;
inline constexpr size_t kMlmPositions = 1;
inline constexpr size_t kMlmNspLabels = 2;

// Cross-entropy of the logits against batch.targets (int64 [B]); metric: top-1 correct.
// batch.inputs: float [B, C, H, W], normalized.
train::BatchOutput classification_output(models::ImageClassifier& model, const train::Batch& batch);

// Cross-entropy over the masked tokens (+ the next-sentence cross-entropy when the model has that
// head and the batch its labels); metric: masked tokens predicted exactly; count: masked tokens.
// The batch layout is masked_lm_task.h's (inputs = token ids [B, T], targets = ids at the masked
// positions [N], extras = {segments, masked positions, next-sentence labels}).
train::BatchOutput masked_lm_output(models::MaskedLanguageModel& model, const train::Batch& batch);

// Next-token cross-entropy, the mean over every position of the batch; metric: tokens whose most
// likely prediction is the next token; count: B x T tokens. The batch layout is causal_lm_task.h's
// (inputs = token ids int64 [B, T], targets = the following ids int64 [B, T]).
train::BatchOutput causal_lm_output(models::CausalLanguageModel& model, const train::Batch& batch);

}  // namespace batchlab::experiments
