// The BERT family (Devlin et al. 2019) for masked-language-model pretraining: the encoder
// (BertModel: embeddings, N layers, optional pooler) and BertForPretraining, the
// MaskedLanguageModel the MLM task trains (masked-LM head whose decoder weight IS the token
// embedding, optional next-sentence head).
//
// Parameter names are Hugging Face's BertForPreTraining names, so its checkpoints map by name:
//   bert.embeddings.{word,position,token_type}_embeddings.weight, bert.embeddings.LayerNorm.*
//   bert.encoder.layer.N.*                              (models/bert_layer.h lists a layer's names)
//   bert.encoder.final_layer_norm.*                     pre-LN only: the LayerNorm after the last
//                                                       layer (Cramming); HF's BERT has none, so
//                                                       the name is HF's T5/BART one
//   bert.pooler.dense.*                                 with next_sentence only
//   cls.predictions.transform.dense.*, cls.predictions.transform.LayerNorm.*, cls.predictions.bias
//   cls.seq_relationship.*                              with next_sentence only
// HF's cls.predictions.decoder.weight is the tied token embedding and cls.predictions.decoder.bias
// is cls.predictions.bias: neither is a separate parameter here (drop both keys when importing).
// A bare BertModel (no "bert." prefix) matches HF's BertModel names.
//
// Initialization as BERT: weights and embeddings normal(0, 0.02), biases 0, LayerNorm 1 and 0.
// The pooler exists only with the next-sentence head (HF's BertForMaskedLM drops it as well):
// parameters no loss reaches would get no gradient.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <memory>

#include "core/config/model_config.h"
#include "models/bert_config.h"
#include "models/bert_embeddings.h"
#include "models/bert_layer.h"
#include "models/masked_lm.h"

namespace batchlab::models {

// "encoder": layer.0 .. layer.{N-1}, and the final LayerNorm of pre-LN models.
class BertEncoderImpl : public torch::nn::Module {
 public:
  explicit BertEncoderImpl(const BertConfig& config);

  // x: float [B, T, hidden]; mask: additive [B, 1, 1, T] or undefined -> [B, T, hidden].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask);

  // Switches every layer's attention kernel (tests compare the two).
  void set_attention_kernel(AttentionKernel kernel);

  torch::nn::ModuleList layer{nullptr};
  torch::nn::LayerNorm final_layer_norm{nullptr};  // pre-LN only
};
TORCH_MODULE(BertEncoder);

struct BertOutput {
  torch::Tensor sequence;  // float [B, T, hidden]: the last layer's states
  torch::Tensor pooled;    // float [B, hidden]: tanh(dense(sequence[:, 0])); undefined w/o pooler
};

class BertModelImpl : public torch::nn::Module {
 public:
  // Validates the config (InputError). The weights are initialized as BERT.
  BertModelImpl(const BertConfig& config, bool add_pooler);

  // input_ids, segment_ids: int64 [B, T] (segment_ids undefined = all sentence A); padding_mask:
  // bool [B, T], true at padding, or undefined. Outputs at real positions do not depend on the
  // tokens at padded ones.
  BertOutput forward(const torch::Tensor& input_ids, const torch::Tensor& segment_ids,
                     const torch::Tensor& padding_mask);

  const BertConfig& config() const { return config_; }

  BertEmbeddings embeddings{nullptr};
  BertEncoder encoder{nullptr};
  BertDense pooler{nullptr};  // dense only; null without the pooler

 private:
  BertConfig config_;
};
TORCH_MODULE(BertModel);

// "cls.predictions": transform (dense, GELU, LayerNorm) and the decoder's bias; the decoder's
// weight is passed in (the token embedding).
class BertLMPredictionHeadImpl : public torch::nn::Module {
 public:
  explicit BertLMPredictionHeadImpl(const BertConfig& config);

  // hidden: float [N, hidden]; decoder_weight: [vocab, hidden] -> logits float [N, vocab].
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& decoder_weight);

  BertDense transform{nullptr};
  torch::Tensor bias;  // [vocab]
};
TORCH_MODULE(BertLMPredictionHead);

// "cls": the MLM head and, with next_sentence, the 2-way classifier on the pooled output.
class BertPretrainingHeadsImpl : public torch::nn::Module {
 public:
  explicit BertPretrainingHeadsImpl(const BertConfig& config);

  BertLMPredictionHead predictions{nullptr};
  torch::nn::Linear seq_relationship{nullptr};  // null without next_sentence
};
TORCH_MODULE(BertPretrainingHeads);

class BertForPretraining : public MaskedLanguageModel {
 public:
  // Validates the config (InputError) and initializes as BERT.
  explicit BertForPretraining(const BertConfig& config);

  // See MaskedLanguageModel::forward. masked_positions: int64 [N] flat indices into the B*T
  // tokens; undefined evaluates the MLM head at every token (N = B*T). nsp_logits is defined
  // only with next_sentence.
  MlmOutput forward(const torch::Tensor& input_ids, const torch::Tensor& segment_ids,
                    const torch::Tensor& padding_mask,
                    const torch::Tensor& masked_positions) override;

  int64_t vocab_size() const override { return config_.vocab_size; }
  int64_t max_seq_len() const override { return config_.max_seq_len; }
  const BertConfig& config() const { return config_; }

  BertModel& bert() { return bert_; }
  BertPretrainingHeads& cls() { return cls_; }
  // The MLM decoder's weight, float [vocab, hidden]: the token embedding tensor itself.
  const torch::Tensor& decoder_weight() const { return bert_->embeddings->word_embeddings->weight; }

 private:
  BertConfig config_;
  BertModel bert_{nullptr};
  BertPretrainingHeads cls_{nullptr};
};

// BertForPretraining for model.arch = bert_tiny .. bert_large (models/bert_config.h), with the
// vocabulary of `vocab_size` when > 0 (the trained tokenizer's), else model.vocab_size. Throws
// InputError for another arch (listing the BERT names) or unusable sizes.
std::shared_ptr<MaskedLanguageModel> make_bert(const config::ModelConfig& model,
                                               int64_t vocab_size = 0);

}  // namespace batchlab::models
