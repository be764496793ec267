#include "core/train/evaluator.h"

#include <torch/torch.h>

#include <cmath>

namespace batchlab::train {

EvalMetrics evaluate(Task& task, Split split, const torch::Tensor& indices, int64_t chunk,
                     const MixedPrecision& precision) {
  auto& model = task.model();
  const bool was_training = model.is_training();
  model.eval();
  torch::NoGradGuard no_grad;

  // Sums stay on the device until the end: one host synchronization per evaluation.
  torch::Tensor loss_sum;
  torch::Tensor correct_sum;
  int64_t items = 0;
  const int64_t n = indices.size(0);
  for (int64_t start = 0; start < n; start += chunk) {
    auto batch =
        task.make_batch(split, indices.slice(0, start, std::min(n, start + chunk)), std::nullopt);
    BatchOutput out;
    {
      AutocastGuard autocast(precision);
      out = task.forward(batch);
    }
    auto weighted = out.loss.to(torch::kFloat64) * static_cast<double>(out.count);
    auto correct = out.correct.to(torch::kFloat64);
    loss_sum = loss_sum.defined() ? loss_sum + weighted : weighted;
    correct_sum = correct_sum.defined() ? correct_sum + correct : correct;
    items += out.count;
  }
  model.train(was_training);

  EvalMetrics m;
  m.items = items;
  if (items > 0) {
    m.loss = loss_sum.item<double>() / static_cast<double>(items);
    m.accuracy = correct_sum.item<double>() / static_cast<double>(items);
  }
  return m;
}

EvalMetrics evaluate_sharded(Task& task, Split split, const torch::Tensor& indices, int64_t chunk,
                             const MixedPrecision& precision, DataParallel* dp) {
  if (dp == nullptr || dp->world_size() == 1)
    return evaluate(task, split, indices, chunk, precision);
  const int64_t n = indices.size(0), world = dp->world_size(), rank = dp->rank();
  const auto local = evaluate(
      task, split, indices.slice(0, rank * n / world, (rank + 1) * n / world), chunk, precision);
  const auto items = static_cast<double>(local.items);
  auto sums = dp->all_reduce_sum(torch::tensor(
      std::vector<double>{local.loss * items, local.accuracy * items, items}, torch::kFloat64));
  EvalMetrics m;
  m.items = static_cast<int64_t>(std::llround(sums[2].item<double>()));
  if (m.items > 0) {
    m.loss = sums[0].item<double>() / static_cast<double>(m.items);
    m.accuracy = sums[1].item<double>() / static_cast<double>(m.items);
  }
  return m;
}

EvalMetrics evaluate_split(Task& task, Split split, int64_t chunk,
                           const MixedPrecision& precision) {
  return evaluate(task, split, torch::arange(task.size(split), torch::kInt64), chunk, precision);
}

}  // namespace batchlab::train
