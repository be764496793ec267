#include "experiments/data/mlm_batch.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "core/config/preconditions.h"
#include "core/errors.h"
#include "core/train/data_order.h"
#include "experiments/data/tokenizer.h"

namespace batchlab::data {
namespace {

// Stream of the masking draws: no row index reaches it.
constexpr uint64_t kMaskingStream = ~uint64_t{0};

}  // namespace

MlmBatchBuilder::MlmBatchBuilder(TokenStream stream, MlmBatchOptions options)
    : stream_(std::move(stream)), options_(options) {
  base_content_ = content_length(options_.seq_len);
  // The schema's data.seq_len rule guarantees room for [CLS]/[SEP] and text (core/config).
  config::expect(base_content_ >= (options_.sentence_pair ? 2 : 1), "MlmBatchBuilder",
                 fmt::format("data.seq_len = {} leaves no room for text", options_.seq_len));
  examples_ = stream_.size() / base_content_;
  if (options_.limit > 0) examples_ = std::min(examples_, options_.limit);
  if (examples_ == 0) {
    throw InputError(
        fmt::format("the text split of {} tokens ({}) holds no complete sequence of "
                    "data.seq_len = {}: use a larger corpus or a shorter length",
                    stream_.size(), stream_.shards().dir(), options_.seq_len));
  }
}

int64_t MlmBatchBuilder::content_length(int64_t seq_len) const {
  return seq_len - (options_.sentence_pair ? 3 : 2);
}

void MlmBatchBuilder::check_length(int64_t seq_len) const {
  // The schema requires data.seq_len_phase2 >= data.seq_len (core/config); the split size is
  // only known here.
  config::expect(seq_len >= options_.seq_len, "MlmBatchBuilder",
                 fmt::format("data.seq_len_phase2 = {} is shorter than data.seq_len = {}", seq_len,
                             options_.seq_len));
  if (content_length(seq_len) > stream_.size()) {
    throw InputError(
        fmt::format("data.seq_len_phase2 = {}: does not fit in the text split ({} "
                    "tokens); use a larger corpus or a shorter length",
                    seq_len, stream_.size()));
  }
}

int64_t MlmBatchBuilder::fill_row(int64_t index, int64_t row, int64_t seq_len, uint64_t seed,
                                  int64_t* ids, int64_t* segments) const {
  const int64_t c = content_length(seq_len);
  const int64_t size = stream_.size();
  const int64_t start = std::min(index * base_content_, size - c);
  ids[0] = kClsId;
  ids[seq_len - 1] = kSepId;
  if (!options_.sentence_pair) {
    stream_.copy(start, c, ids + 1);
    return -1;
  }
  SplitMix64 rng(train::mix_seed(seed, static_cast<uint64_t>(row)));
  const int64_t lo = std::max<int64_t>(1, c / 4);
  const int64_t hi = std::max(lo, std::min(c - 1, 3 * c / 4));
  const int64_t a = lo + static_cast<int64_t>(rng.below(static_cast<uint64_t>(hi - lo + 1)));
  const int64_t b = c - a;
  int64_t label = static_cast<int64_t>(rng.next() & 1);
  int64_t b_start = start + a;  // the true continuation
  if (label == 1) {
    // Random segment of length b not overlapping the window [start, start + c): starts in
    // [0, start - b] or [start + c, size - b].
    const int64_t before = std::max<int64_t>(0, start - b + 1);
    const int64_t after = std::max<int64_t>(0, size - b - (start + c) + 1);
    if (before + after == 0) {
      label = 0;  // the split is too small to hold any other segment
    } else {
      const auto k = static_cast<int64_t>(rng.below(static_cast<uint64_t>(before + after)));
      b_start = k < before ? k : start + c + (k - before);
    }
  }
  stream_.copy(start, a, ids + 1);
  ids[a + 1] = kSepId;
  stream_.copy(b_start, b, ids + a + 2);
  std::fill(segments, segments + a + 2, 0);
  std::fill(segments + a + 2, segments + seq_len, 1);
  return label;
}

MlmBatch MlmBatchBuilder::build(const int64_t* indices, int64_t count, int64_t seq_len,
                                uint64_t seed) const {
  for (int64_t r = 0; r < count; ++r) {
    if (indices[r] < 0 || indices[r] >= examples_) {
      throw Error(fmt::format("MLM example {} outside [0, {})", indices[r], examples_));
    }
  }
  if (seq_len != options_.seq_len) check_length(seq_len);
  const bool pairs = options_.sentence_pair;
  MlmBatch batch;
  batch.input_ids = torch::empty({count, seq_len}, torch::kInt64);
  if (pairs) batch.segment_ids = torch::empty({count, seq_len}, torch::kInt64);
  std::vector<int64_t> nsp(static_cast<size_t>(count));
  int64_t* ids = batch.input_ids.data_ptr<int64_t>();
  int64_t* segments = pairs ? batch.segment_ids.data_ptr<int64_t>() : nullptr;

  auto rows = [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      nsp[static_cast<size_t>(r)] = fill_row(indices[r], r, seq_len, seed, ids + r * seq_len,
                                             pairs ? segments + r * seq_len : nullptr);
    }
  };
  const int64_t threads = std::max<int64_t>(1, std::min(options_.threads, count));
  if (threads == 1) {
    rows(0, count);
  } else {
    std::vector<std::thread> pool;
    const int64_t per = (count + threads - 1) / threads;
    for (int64_t t = 1; t < threads; ++t) {
      pool.emplace_back(rows, std::min(count, t * per), std::min(count, (t + 1) * per));
    }
    rows(0, std::min(count, per));
    for (auto& t : pool) t.join();
  }

  auto masked = apply_mlm_masking(ids, count * seq_len, options_.mask_prob, options_.vocab_size,
                                  train::mix_seed(seed, kMaskingStream));
  const auto n = static_cast<int64_t>(masked.positions.size());
  batch.masked_positions = torch::empty({n}, torch::kInt64);
  batch.labels = torch::empty({n}, torch::kInt64);
  if (n > 0) {
    std::memcpy(batch.masked_positions.data_ptr<int64_t>(), masked.positions.data(),
                n * sizeof(int64_t));
    std::memcpy(batch.labels.data_ptr<int64_t>(), masked.labels.data(), n * sizeof(int64_t));
  }
  if (pairs) batch.nsp_labels = torch::tensor(nsp, torch::kInt64);
  batch.counts = masked.counts;
  return batch;
}

int64_t scheduled_seq_len(const config::DataConfig& data, double progress) {
  if (data.seq_len_phase2 > 0 && progress >= 1.0 - data.phase2_fraction) return data.seq_len_phase2;
  return data.seq_len;
}

}  // namespace batchlab::data
