#include "experiments/tasks/causal_lm_task.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "core/errors.h"
#include "experiments/tasks/task_outputs.h"
#include "experiments/tasks/text_task_splits.h"
#include "models/registry.h"

namespace batchlab::experiments {
namespace {

// BERT's keys that a causal LM cannot honour: refused rather than silently ignored, so a config
// copied from a BERT experiment says what it changes.
void refuse_masked_lm_keys(const config::ModelConfig& model, const config::DataConfig& data) {
  std::vector<std::string> set;
  if (model.next_sentence) set.emplace_back("model.next_sentence = true");
  if (data.sentence_pair) set.emplace_back("data.sentence_pair = true");
  if (data.seq_len_phase2 > 0)
    set.push_back(fmt::format("data.seq_len_phase2 = {}", data.seq_len_phase2));
  if (set.empty()) return;
  throw InputError(fmt::format(
      "model.arch = \"{}\" is a causal language model (next-token prediction), which has no "
      "next-sentence head, sentence pairs or second sequence-length phase: remove {}",
      model.arch, fmt::join(set, ", ")));
}

}  // namespace

CausalLmTask::CausalLmTask(data::TextCorpus corpus,
                           std::shared_ptr<models::CausalLanguageModel> model,
                           const config::DataConfig& data, torch::Device device)
    : corpus_(std::move(corpus)), model_(std::move(model)), device_(device) {
  check_model_vocab(corpus_, model_->vocab_size());
  if (data.seq_len > model_->max_seq_len()) {
    throw InputError(fmt::format(
        "data.seq_len = {} is longer than model.max_seq_len = {} (the rows of the position "
        "embedding)",
        data.seq_len, model_->max_seq_len()));
  }
  auto splits = data::split_stream(corpus_.shards);
  train_ = std::make_unique<data::CausalLmWindows>(splits.train, data.seq_len, data.train_size,
                                                   "train_size");
  test_ = std::make_unique<data::CausalLmWindows>(splits.test, data.seq_len, data.test_size,
                                                  "test_size");
  validation_ = hold_out_text_validation(corpus_, train_->size(), data);
  model_->to(device_);
}

int64_t CausalLmTask::size(train::Split split) const {
  return split == train::Split::test ? test_->size() : validation_->size(split);
}

const data::CausalLmWindows& CausalLmTask::windows(train::Split split) const {
  return train::ValidationSplit::stored_split(split) == train::Split::train ? *train_ : *test_;
}

train::Batch CausalLmTask::make_batch(train::Split split, const torch::Tensor& indices,
                                      std::optional<uint64_t> /*augment_seed*/) {
  // Nothing is drawn: a window is the same tokens whatever the seed, so the seed is unused.
  const torch::Tensor idx = indices.to(torch::kCPU, torch::kInt64).contiguous();
  const torch::Tensor stored = validation_->to_stored(split, idx);  // int64 [n]
  const auto b = windows(split).build(stored.data_ptr<int64_t>(), stored.size(0));
  train::Batch batch;
  batch.inputs = b.inputs.to(device_);
  batch.targets = b.targets.to(device_);
  batch.size = idx.size(0);
  return batch;
}

train::BatchOutput CausalLmTask::forward(const train::Batch& batch) {
  return causal_lm_output(*model_, batch);
}

std::unique_ptr<train::Task> make_causal_lm_task(const config::ModelConfig& model,
                                                 const config::DataConfig& data,
                                                 torch::Device device) {
  refuse_masked_lm_keys(model, data);
  auto corpus = data::prepare_text_corpus(data, model.vocab_size);
  const int64_t vocab = data::model_vocab_size(corpus, model.vocab_size);
  auto net = models::make_causal_lm(model, vocab);
  return std::make_unique<CausalLmTask>(std::move(corpus), std::move(net), data, device);
}

}  // namespace batchlab::experiments
