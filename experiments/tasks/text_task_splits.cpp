#include "experiments/tasks/text_task_splits.h"

#include <fmt/format.h>

#include "core/errors.h"

namespace batchlab::experiments {

void check_model_vocab(const data::TextCorpus& corpus, int64_t model_vocab_size) {
  const int64_t vocab = corpus.tokenizer->vocab_size();
  if (model_vocab_size != vocab) {
    throw InputError(fmt::format("the model has {} token ids but the tokenizer {} has {}",
                                 model_vocab_size, corpus.tokenizer->path(), vocab));
  }
}

std::unique_ptr<train::ValidationSplit> hold_out_text_validation(const data::TextCorpus& corpus,
                                                                 int64_t train_examples,
                                                                 const config::DataConfig& data) {
  return std::make_unique<train::ValidationSplit>(
      train_examples, data.val_size,
      fmt::format("the text corpus {} at data.seq_len = {}", corpus.shards->dir(), data.seq_len));
}

}  // namespace batchlab::experiments
