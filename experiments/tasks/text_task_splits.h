// What the two text tasks (masked_lm_task.h, causal_lm_task.h) check of a prepared corpus and
// hold out of its training examples, in one place so that both refuse the same mismatches with the
// same words and name their validation split the same way.
#pragma once

#include <cstdint>
#include <memory>

#include "core/config/data_config.h"
#include "core/train/validation_split.h"
#include "experiments/data/text_corpus.h"

namespace batchlab::experiments {

// InputError when the model's token ids (`model_vocab_size`) are not the tokenizer's: a model
// built for another tokenizer would read ids past its embedding, or never see some of them.
void check_model_vocab(const data::TextCorpus& corpus, int64_t model_vocab_size);

// data.val_size of the task's `train_examples` training examples (sequences or windows of
// data.seq_len tokens) held out as Split::val; its errors name the corpus and data.seq_len.
std::unique_ptr<train::ValidationSplit> hold_out_text_validation(const data::TextCorpus& corpus,
                                                                 int64_t train_examples,
                                                                 const config::DataConfig& data);

}  // namespace batchlab::experiments
