#include "experiments/bench/synthetic_tasks.h"

#include <torch/torch.h>

#include <optional>
#include <utility>

#include "core/config/preconditions.h"
#include "experiments/tasks/task_outputs.h"
#include "models/memory_format.h"

namespace batchlab::experiments {
namespace {

// (first, count) when `indices` (int64 [n], on the host) is first, first + 1, ..., first + n - 1.
std::optional<std::pair<int64_t, int64_t>> as_run(const torch::Tensor& indices) {
  const auto idx = indices.to(torch::kCPU, torch::kInt64).contiguous();
  const int64_t n = idx.size(0);
  const int64_t* p = idx.data_ptr<int64_t>();
  for (int64_t i = 1; i < n; ++i) {
    if (p[i] != p[0] + i) return std::nullopt;
  }
  return std::make_pair(n > 0 ? p[0] : 0, n);
}

void expect_training_split(train::Split split, int64_t examples, const torch::Tensor& indices) {
  config::expect(split == train::Split::train, "synthetic task",
                 "only the training split has examples");
  config::expect(indices.numel() == 0 || (indices.min().item<int64_t>() >= 0 &&
                                          indices.max().item<int64_t>() < examples),
                 "synthetic task", "example index out of range");
}

// The rows `indices` names of `examples` [E, ...]: a view when they are one consecutive `run`
// (strides kept), else a gather on the examples' device (a copy).
using Run = std::optional<std::pair<int64_t, int64_t>>;
torch::Tensor take_rows(const torch::Tensor& examples, const Run& run,
                        const torch::Tensor& indices) {
  if (run) return examples.narrow(0, run->first, run->second);
  return examples.index_select(0, indices.to(examples.device(), torch::kInt64));
}

// A batch of the rows `indices` names, inputs [n, ...] and targets [n, ...] taken alike.
train::Batch rows_of(const torch::Tensor& inputs, const torch::Tensor& targets,
                     const torch::Tensor& indices) {
  const Run run = as_run(indices);
  train::Batch batch;
  batch.size = indices.size(0);
  batch.inputs = take_rows(inputs, run, indices);
  batch.targets = take_rows(targets, run, indices);
  return batch;
}

}  // namespace

SyntheticImageTask::SyntheticImageTask(std::shared_ptr<models::ImageClassifier> model,
                                       const SyntheticImages& shape, torch::Device device)
    : model_(std::move(model)), device_(device) {
  model_->to(device_);
  const auto on_device = torch::TensorOptions().device(device_);
  images_ = torch::randn({shape.examples, shape.channels, shape.height, shape.width}, on_device);
  labels_ = torch::randint(0, shape.num_classes, {shape.examples}, on_device.dtype(torch::kInt64));
  if (shape.channels_last) {
    models::to_channels_last(*model_);
    images_ = images_.contiguous(torch::MemoryFormat::ChannelsLast);
  }
}

int64_t SyntheticImageTask::size(train::Split split) const {
  return split == train::Split::train ? images_.size(0) : 0;
}

train::Batch SyntheticImageTask::make_batch(train::Split split, const torch::Tensor& indices,
                                            std::optional<uint64_t> /*augment_seed*/) {
  expect_training_split(split, images_.size(0), indices);
  return rows_of(images_, labels_, indices);
}

train::BatchOutput SyntheticImageTask::forward(const train::Batch& batch) {
  return classification_output(*model_, batch);
}

SyntheticMlmTask::SyntheticMlmTask(std::shared_ptr<models::MaskedLanguageModel> model,
                                   const SyntheticSequences& shape, torch::Device device)
    : model_(std::move(model)), device_(device), shape_(shape) {
  model_->to(device_);
  const int64_t e = shape.examples, t = shape.seq_len, m = shape.masked_per_sequence;
  config::expect(m >= 1 && m <= t, "synthetic MLM task", "masked positions outside [1, seq_len]");
  const auto ints = torch::TensorOptions().device(device_).dtype(torch::kInt64);
  ids_ = torch::randint(0, shape.vocab_size, {e, t}, ints);
  // M distinct positions per sequence: the first M of a random permutation, sorted.
  const auto within = std::get<0>(torch::rand({e, t}, torch::TensorOptions().device(device_))
                                      .argsort(/*dim=*/1, /*descending=*/false)
                                      .narrow(1, 0, m)
                                      .sort(1));
  positions_ = (torch::arange(e, ints).unsqueeze(1) * t + within).flatten();  // [E * M]
  labels_ = torch::randint(0, shape.vocab_size, {e * m}, ints);
}

int64_t SyntheticMlmTask::size(train::Split split) const {
  return split == train::Split::train ? ids_.size(0) : 0;
}

train::Batch SyntheticMlmTask::make_batch(train::Split split, const torch::Tensor& indices,
                                          std::optional<uint64_t> /*augment_seed*/) {
  expect_training_split(split, ids_.size(0), indices);
  const int64_t t = shape_.seq_len, m = shape_.masked_per_sequence;
  train::Batch batch;
  batch.size = indices.size(0);
  batch.extras.resize(3);  // segments and next-sentence labels stay undefined
  if (auto run = as_run(indices)) {
    const auto [first, n] = *run;
    batch.inputs = ids_.narrow(0, first, n);
    batch.targets = labels_.narrow(0, first * m, n * m);
    // Positions index the batch's own B * T tokens: shift the run's down by its first sequence.
    batch.extras[kMlmPositions] = positions_.narrow(0, first * m, n * m) - first * t;
  } else {
    const auto rows = indices.to(device_, torch::kInt64);
    const int64_t n = rows.size(0);
    const auto row_of = torch::arange(n, rows.options()).unsqueeze(1);  // [n, 1]
    const auto slots = (rows.unsqueeze(1) * m + torch::arange(m, rows.options())).flatten();
    batch.inputs = ids_.index_select(0, rows);
    batch.targets = labels_.index_select(0, slots);
    const auto within = positions_.index_select(0, slots).view({n, m}) % t;
    batch.extras[kMlmPositions] = (row_of * t + within).flatten();
  }
  return batch;
}

train::BatchOutput SyntheticMlmTask::forward(const train::Batch& batch) {
  return masked_lm_output(*model_, batch);
}

SyntheticCausalLmTask::SyntheticCausalLmTask(std::shared_ptr<models::CausalLanguageModel> model,
                                             const SyntheticTokens& shape, torch::Device device)
    : model_(std::move(model)), device_(device) {
  model_->to(device_);
  const int64_t t = shape.seq_len;
  config::expect(t >= 1 && t <= model_->max_seq_len(), "synthetic causal-LM task",
                 "seq_len outside [1, the model's positions]");
  const auto ints = torch::TensorOptions().device(device_).dtype(torch::kInt64);
  const auto ids = torch::randint(0, shape.vocab_size, {shape.examples, t + 1}, ints);
  inputs_ = ids.narrow(1, 0, t).contiguous();
  targets_ = ids.narrow(1, 1, t).contiguous();
}

int64_t SyntheticCausalLmTask::size(train::Split split) const {
  return split == train::Split::train ? inputs_.size(0) : 0;
}

train::Batch SyntheticCausalLmTask::make_batch(train::Split split, const torch::Tensor& indices,
                                               std::optional<uint64_t> /*augment_seed*/) {
  expect_training_split(split, inputs_.size(0), indices);
  return rows_of(inputs_, targets_, indices);
}

train::BatchOutput SyntheticCausalLmTask::forward(const train::Batch& batch) {
  return causal_lm_output(*model_, batch);
}

}  // namespace batchlab::experiments
