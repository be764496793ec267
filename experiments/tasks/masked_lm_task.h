// Masked-language-model pretraining (data.dataset = "text"): a MaskedLanguageModel (the BERT
// family) on packed token shards. Loss: cross-entropy over the masked tokens (+ the next-sentence
// cross-entropy with model.next_sentence); metric "mlm_acc": the fraction of masked tokens
// predicted exactly; BatchOutput::count is the number of masked tokens.
//
// A Batch carries: inputs = token ids int64 [B, T]; targets = the original ids at the masked
// positions int64 [N]; extras = {segment ids int64 [B, T] (undefined unless sentence pairs),
// masked positions int64 [N] (flat into B*T), next-sentence labels int64 [B] (undefined unless
// sentence pairs)}. Sequences are always full (mlm_batch.h), so there is no padding mask.
//
// Lengths: training batches follow BERT's two-phase schedule (data.seq_len, then
// data.seq_len_phase2 for the last data.phase2_fraction of training, switched by set_progress);
// evaluation always uses data.seq_len and masks drawn from a fixed seed per evaluation chunk, so
// the test series is comparable across the switch, across runs and across seeds.
//
// Validation (data.val_size): that many training sequences are held out as Split::val
// (core/train/validation_split.h) and evaluated like the test split.
#pragma once

#include <memory>
#include <string>

#include "core/config/experiment_config.h"
#include "core/train/task.h"
#include "core/train/validation_split.h"
#include "experiments/data/mlm_batch.h"
#include "experiments/data/text_corpus.h"
#include "experiments/tasks/task_outputs.h"
#include "models/masked_lm.h"

namespace batchlab::experiments {

class MaskedLmTask : public train::Task {
 public:
  // Splits the corpus (mlm_token_stream.h), honours data.train_size / data.test_size (first N
  // sequences; larger than the split is an InputError), holds out data.val_size of the training
  // sequences and checks the lengths against the model.
  MaskedLmTask(data::TextCorpus corpus, std::shared_ptr<models::MaskedLanguageModel> model,
               const config::DataConfig& data, torch::Device device);

  torch::nn::Module& model() override { return *model_; }
  int64_t size(train::Split split) const override;
  train::Batch make_batch(train::Split split, const torch::Tensor& indices,
                          std::optional<uint64_t> augment_seed) override;
  train::BatchOutput forward(const train::Batch& batch) override;
  void set_progress(double progress) override;
  std::string tokenizer_sha256() const override { return corpus_.tokenizer_sha256; }

  int64_t current_seq_len() const { return current_seq_len_; }
  const data::TextCorpus& corpus() const { return corpus_; }
  const data::MlmBatchBuilder& builder(train::Split split) const;

 private:
  data::TextCorpus corpus_;
  std::shared_ptr<models::MaskedLanguageModel> model_;
  config::DataConfig data_;
  torch::Device device_;
  std::unique_ptr<data::MlmBatchBuilder> train_;
  std::unique_ptr<data::MlmBatchBuilder> test_;
  std::unique_ptr<train::ValidationSplit> validation_;  // of train_'s sequences
  int64_t current_seq_len_;
};

// data.dataset = "text": prepares the corpus (text_corpus.h), builds model.arch with the
// tokenizer's vocabulary (models::make_masked_lm) and the task. model.vocab_size left at its
// default takes the tokenizer's size; any other value must equal it (InputError naming both).
// model.next_sentence needs data.sentence_pair (InputError).
std::unique_ptr<train::Task> make_masked_lm_task(const config::ModelConfig& model,
                                                 const config::DataConfig& data,
                                                 torch::Device device);

}  // namespace batchlab::experiments
