// Tasks on random examples that live on the device, for `batchlab bench`: the examples are made
// once, at construction, and a training batch of consecutive examples is a view of them, so a
// timed step moves no data from the host and generates none. They implement train::Task, so the
// benchmark steps them through the trainer's own accumulation loop (core/train/accumulation.h),
// and their forward passes are the real tasks' (experiments/tasks/task_outputs.h).
//
// Only Split::train has examples. Indices that are not one ascending run of consecutive examples
// still work, through a gather on the device (a copy); the benchmark never asks for those.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <memory>

#include "core/train/task.h"
#include "models/causal_lm.h"
#include "models/masked_lm.h"
#include "models/network.h"

namespace batchlab::experiments {

struct SyntheticImages {
  int64_t examples = 0;
  int64_t channels = 3;
  int64_t height = 224;
  int64_t width = 224;
  int64_t num_classes = 1000;
  bool channels_last = false;  // NHWC weights and images (any device: the benchmark's choice)
};

class SyntheticImageTask : public train::Task {
 public:
  // Moves `model` to `device`; draws images float [E, C, H, W] from a standard normal (what
  // normalized images look like) and labels int64 [E] uniformly, on `device`, from LibTorch's RNG.
  SyntheticImageTask(std::shared_ptr<models::ImageClassifier> model, const SyntheticImages& shape,
                     torch::Device device);

  torch::nn::Module& model() override { return *model_; }
  int64_t size(train::Split split) const override;
  train::Batch make_batch(train::Split split, const torch::Tensor& indices,
                          std::optional<uint64_t> augment_seed) override;
  train::BatchOutput forward(const train::Batch& batch) override;
  bool fixed_input_shapes() const override { return true; }

 private:
  std::shared_ptr<models::ImageClassifier> model_;
  torch::Device device_;
  torch::Tensor images_;  // float [E, C, H, W], channels-last strides when asked
  torch::Tensor labels_;  // int64 [E]
};

struct SyntheticSequences {
  int64_t examples = 0;
  int64_t seq_len = 128;
  int64_t vocab_size = 30522;
  int64_t masked_per_sequence = 19;  // BERT's 15% of 128 (models/bert_config.h)
};

class SyntheticMlmTask : public train::Task {
 public:
  // Moves `model` to `device`; draws token ids int64 [E, T], `masked_per_sequence` distinct masked
  // positions per sequence and their labels, on `device`, from LibTorch's RNG. No sentence pairs,
  // no padding: the batch layout of masked_lm_task.h.
  SyntheticMlmTask(std::shared_ptr<models::MaskedLanguageModel> model,
                   const SyntheticSequences& shape, torch::Device device);

  torch::nn::Module& model() override { return *model_; }
  int64_t size(train::Split split) const override;
  train::Batch make_batch(train::Split split, const torch::Tensor& indices,
                          std::optional<uint64_t> augment_seed) override;
  train::BatchOutput forward(const train::Batch& batch) override;

 private:
  std::shared_ptr<models::MaskedLanguageModel> model_;
  torch::Device device_;
  SyntheticSequences shape_;
  torch::Tensor ids_;        // int64 [E, T]
  torch::Tensor positions_;  // int64 [E * M]: flat indices into the E * T tokens, ascending
  torch::Tensor labels_;     // int64 [E * M]: the ids the MLM head is scored against
};

// Random token sequences for a causal language model: example e is T + 1 random ids, its input
// the first T and its targets the last T (next-token prediction over every position, the batch
// layout of causal_lm_task.h).
struct SyntheticTokens {
  int64_t examples = 0;
  int64_t seq_len = 1024;
  int64_t vocab_size = 50257;
};

class SyntheticCausalLmTask : public train::Task {
 public:
  // Moves `model` to `device`; draws token ids int64 [E, T + 1] uniformly on `device` from
  // LibTorch's RNG and keeps the inputs and the targets as two contiguous int64 [E, T] tensors,
  // so a batch of consecutive examples is a view of each.
  SyntheticCausalLmTask(std::shared_ptr<models::CausalLanguageModel> model,
                        const SyntheticTokens& shape, torch::Device device);

  torch::nn::Module& model() override { return *model_; }
  int64_t size(train::Split split) const override;
  train::Batch make_batch(train::Split split, const torch::Tensor& indices,
                          std::optional<uint64_t> augment_seed) override;
  train::BatchOutput forward(const train::Batch& batch) override;
  bool fixed_input_shapes() const override { return true; }

 private:
  std::shared_ptr<models::CausalLanguageModel> model_;
  torch::Device device_;
  torch::Tensor inputs_;   // int64 [E, T]
  torch::Tensor targets_;  // int64 [E, T]: inputs_ shifted left by one token
};

}  // namespace batchlab::experiments
