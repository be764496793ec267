#include "experiments/tasks/task_outputs.h"

#include <torch/torch.h>

namespace batchlab::experiments {

train::BatchOutput classification_output(models::ImageClassifier& model,
                                         const train::Batch& batch) {
  auto logits = model.forward(batch.inputs);  // float [B, classes]
  train::BatchOutput out;
  out.loss = torch::nn::functional::cross_entropy(logits, batch.targets);
  out.correct = logits.argmax(1).eq(batch.targets).sum();
  out.count = batch.size;
  return out;
}

train::BatchOutput masked_lm_output(models::MaskedLanguageModel& model, const train::Batch& batch) {
  const auto& positions = batch.extras.at(kMlmPositions);
  auto out = model.forward(batch.inputs, batch.extras.at(kMlmSegments), torch::Tensor(), positions);
  train::BatchOutput result;
  result.count = batch.targets.size(0);
  if (result.count > 0) {
    result.loss = torch::nn::functional::cross_entropy(out.mlm_logits, batch.targets);
    result.correct = out.mlm_logits.argmax(1).eq(batch.targets).sum();
  } else {
    // Nothing masked (a tiny batch): a zero loss that still belongs to the graph.
    result.loss = out.mlm_logits.sum() * 0.0;
    result.correct =
        torch::zeros({}, torch::TensorOptions().dtype(torch::kInt64).device(batch.inputs.device()));
  }
  const auto& nsp_labels = batch.extras.at(kMlmNspLabels);
  if (out.nsp_logits.defined() && nsp_labels.defined()) {
    result.loss = result.loss + torch::nn::functional::cross_entropy(out.nsp_logits, nsp_labels);
  }
  return result;
}

train::BatchOutput causal_lm_output(models::CausalLanguageModel& model, const train::Batch& batch) {
  const torch::Tensor logits = model.forward(batch.inputs);  // float [B, T, V]
  const torch::Tensor flat = logits.reshape({-1, logits.size(-1)});
  const torch::Tensor targets = batch.targets.reshape({-1});
  train::BatchOutput result;
  result.loss = torch::nn::functional::cross_entropy(flat, targets);
  result.correct = flat.argmax(1).eq(targets).sum();
  result.count = targets.size(0);
  return result;
}

}  // namespace batchlab::experiments
