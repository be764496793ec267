#include "experiments/tasks/masked_lm_task.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>

#include "core/errors.h"
#include "core/train/data_order.h"
#include "core/train/validation_split.h"
#include "experiments/tasks/text_task_splits.h"
#include "models/registry.h"

namespace batchlab::experiments {
namespace {

// Evaluation masks come from this seed and the chunk, never from the run's seeds: every run sees
// the same corrupted test sequences.
constexpr uint64_t kEvalMaskSeed = 0x6d6c6d2d6576616cULL;  // "mlm-eval"

std::unique_ptr<data::MlmBatchBuilder> make_builder(const data::TokenStream& stream,
                                                    const config::DataConfig& data,
                                                    int64_t vocab_size, int64_t limit,
                                                    const char* split, const char* key) {
  data::MlmBatchOptions o;
  o.seq_len = data.seq_len;
  o.mask_prob = data.mask_prob;
  o.sentence_pair = data.sentence_pair;
  o.vocab_size = vocab_size;
  o.threads = std::max<int64_t>(1, data.workers);
  auto builder = std::make_unique<data::MlmBatchBuilder>(stream, o);
  if (limit > builder->size()) {
    throw InputError(
        fmt::format("data.{} = {}: the {} split of {} holds only {} sequences of "
                    "data.seq_len = {}",
                    key, limit, split, stream.shards().dir(), builder->size(), data.seq_len));
  }
  if (limit > 0) {
    o.limit = limit;
    builder = std::make_unique<data::MlmBatchBuilder>(stream, o);
  }
  return builder;
}

}  // namespace

MaskedLmTask::MaskedLmTask(data::TextCorpus corpus,
                           std::shared_ptr<models::MaskedLanguageModel> model,
                           const config::DataConfig& data, torch::Device device)
    : corpus_(std::move(corpus)),
      model_(std::move(model)),
      data_(data),
      device_(device),
      current_seq_len_(data.seq_len) {
  check_model_vocab(corpus_, model_->vocab_size());
  const int64_t vocab = model_->vocab_size();
  auto splits = data::split_stream(corpus_.shards);
  train_ = make_builder(splits.train, data, vocab, data.train_size, "training", "train_size");
  test_ = make_builder(splits.test, data, vocab, data.test_size, "held-out", "test_size");
  if (data.seq_len_phase2 > 0) train_->check_length(data.seq_len_phase2);
  validation_ = hold_out_text_validation(corpus_, train_->size(), data);
  model_->to(device_);
}

int64_t MaskedLmTask::size(train::Split split) const {
  return split == train::Split::test ? test_->size() : validation_->size(split);
}

const data::MlmBatchBuilder& MaskedLmTask::builder(train::Split split) const {
  return train::ValidationSplit::stored_split(split) == train::Split::train ? *train_ : *test_;
}

void MaskedLmTask::set_progress(double progress) {
  current_seq_len_ = data::scheduled_seq_len(data_, progress);
}

train::Batch MaskedLmTask::make_batch(train::Split split, const torch::Tensor& indices,
                                      std::optional<uint64_t> augment_seed) {
  auto idx = indices.to(torch::kCPU, torch::kInt64).contiguous();
  const int64_t n = idx.size(0);
  const int64_t* p = idx.data_ptr<int64_t>();
  // Training draws its masks from the step's seed at the scheduled length; evaluation (no seed)
  // from a fixed seed at the base length. Either is mixed with the batch's first example and
  // size: the trainer hands every rank the same seed for its j-th micro-batch, and ranks masking
  // the same positions of different sequences would correlate their gradients. The seed is drawn
  // from the split's own indices, so validation chunks are masked the same way at every evaluation.
  const bool training = augment_seed.has_value() && split == train::Split::train;
  const uint64_t first = n > 0 ? static_cast<uint64_t>(p[0]) : 0;
  const uint64_t seed = train::mix_seed(
      train::mix_seed(training ? *augment_seed : kEvalMaskSeed, first), static_cast<uint64_t>(n));
  const int64_t seq_len = training ? current_seq_len_ : data_.seq_len;
  const torch::Tensor stored = validation_->to_stored(split, idx);  // int64 [n]
  auto b = builder(split).build(stored.data_ptr<int64_t>(), n, seq_len, seed);

  train::Batch batch;
  batch.inputs = b.input_ids.to(device_);
  batch.targets = b.labels.to(device_);
  batch.size = n;
  batch.extras.resize(3);
  if (b.segment_ids.defined()) batch.extras[kMlmSegments] = b.segment_ids.to(device_);
  batch.extras[kMlmPositions] = b.masked_positions.to(device_);
  if (b.nsp_labels.defined()) batch.extras[kMlmNspLabels] = b.nsp_labels.to(device_);
  return batch;
}

train::BatchOutput MaskedLmTask::forward(const train::Batch& batch) {
  return masked_lm_output(*model_, batch);
}

std::unique_ptr<train::Task> make_masked_lm_task(const config::ModelConfig& model,
                                                 const config::DataConfig& data,
                                                 torch::Device device) {
  // Sizes, sequence lengths and next_sentence with sentence_pair: validated in core/config.
  // An image architecture fails here, with the models table's message, before a tokenizer is
  // trained for nothing.
  const auto table = models::list_models();
  if (std::none_of(table.begin(), table.end(), [&](const models::ModelInfo& m) {
        return m.name == model.arch && m.family == "text";
      })) {
    models::make_masked_lm(model, 0);
  }
  auto corpus = data::prepare_text_corpus(data, model.vocab_size);
  const int64_t vocab = data::model_vocab_size(corpus, model.vocab_size);
  auto net = models::make_masked_lm(model, vocab);
  return std::make_unique<MaskedLmTask>(std::move(corpus), std::move(net), data, device);
}

}  // namespace batchlab::experiments
