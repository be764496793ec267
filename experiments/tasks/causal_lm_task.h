// Causal language modelling (data.dataset = "text" with a causal-LM architecture, model.arch =
// gpt2_*): a CausalLanguageModel (the GPT-2 family) on the packed token shards the masked-LM task
// reads (the same corpus, tokenizer and held-out tail, text_corpus.h and mlm_token_stream.h).
// Loss: next-token cross-entropy, the mean over every position; metric: the fraction of positions
// whose most likely token is the next one (recorded as the run's accuracy: val_acc, test_acc);
// BatchOutput::count is the number of predicted tokens (B x T).
//
// A Batch carries inputs = token ids int64 [B, T] and targets = the following ids int64 [B, T]
// (causal_lm_windows.h): example i is the window of T + 1 tokens starting at i x T of its split.
// Every batch has T = data.seq_len, training and evaluation alike; nothing is random, so an
// evaluation split gives the same loss at every evaluation of every run.
//
// Splits: the corpus's tail (2%, never a seed's choice) is the test split; data.val_size training
// windows are held out as Split::val (core/train/validation_split.h) and evaluated like the test
// split, so the studies' val_loss targets read a held-out next-token loss.
//
// BERT's keys mean nothing here and are refused (InputError): data.sentence_pair,
// model.next_sentence and data.seq_len_phase2. data.mask_prob and model.norm_first are ignored
// (no masking; GPT-2 is pre-LN).
#pragma once

#include <memory>

#include "core/config/experiment_config.h"
#include "core/train/task.h"
#include "core/train/validation_split.h"
#include "experiments/data/causal_lm_windows.h"
#include "experiments/data/text_corpus.h"
#include "models/causal_lm.h"

namespace batchlab::experiments {

class CausalLmTask : public train::Task {
 public:
  // Splits the corpus, honours data.train_size / data.test_size (first N windows; larger than the
  // split is an InputError), holds out data.val_size of the training windows and checks the model
  // against the tokenizer and data.seq_len.
  CausalLmTask(data::TextCorpus corpus, std::shared_ptr<models::CausalLanguageModel> model,
               const config::DataConfig& data, torch::Device device);

  torch::nn::Module& model() override { return *model_; }
  int64_t size(train::Split split) const override;
  train::Batch make_batch(train::Split split, const torch::Tensor& indices,
                          std::optional<uint64_t> augment_seed) override;
  train::BatchOutput forward(const train::Batch& batch) override;
  bool fixed_input_shapes() const override { return true; }
  std::string tokenizer_sha256() const override { return corpus_.tokenizer_sha256; }

  const data::TextCorpus& corpus() const { return corpus_; }
  const data::CausalLmWindows& windows(train::Split split) const;

 private:
  data::TextCorpus corpus_;
  std::shared_ptr<models::CausalLanguageModel> model_;
  torch::Device device_;
  std::unique_ptr<data::CausalLmWindows> train_;
  std::unique_ptr<data::CausalLmWindows> test_;
  std::unique_ptr<train::ValidationSplit> validation_;  // of train_'s windows
};

// data.dataset = "text" with model.arch = gpt2_*: prepares the corpus (text_corpus.h), builds the
// model with the tokenizer's vocabulary (models::make_causal_lm) and the task. model.vocab_size
// left at its default takes the tokenizer's size; any other value must equal it (InputError
// naming both), as for the masked-LM task.
std::unique_ptr<train::Task> make_causal_lm_task(const config::ModelConfig& model,
                                                 const config::DataConfig& data,
                                                 torch::Device device);

}  // namespace batchlab::experiments
