#include "experiments/data/causal_lm_windows.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <vector>

#include "core/errors.h"

namespace batchlab::data {

CausalLmWindows::CausalLmWindows(TokenStream stream, int64_t seq_len, int64_t limit,
                                 const char* key)
    : stream_(std::move(stream)), seq_len_(seq_len) {
  if (seq_len_ < 1) {
    throw InputError(fmt::format("data.seq_len = {}: must be >= 1", seq_len_));
  }
  // T + 1 tokens per example, consecutive examples overlapping by one.
  const int64_t available = stream_.size() > 0 ? (stream_.size() - 1) / seq_len_ : 0;
  if (available < 1) {
    throw InputError(fmt::format(
        "data.seq_len = {}: a split of {} holds {} stream tokens, fewer than one example of "
        "seq_len + 1 tokens; use a larger corpus or a smaller data.seq_len",
        seq_len_, stream_.shards().dir(), stream_.size()));
  }
  if (limit > available) {
    throw InputError(fmt::format(
        "data.{} = {}: the split of {} holds only {} sequences of data.seq_len = {} tokens", key,
        limit, stream_.shards().dir(), available, seq_len_));
  }
  examples_ = limit > 0 ? limit : available;
}

CausalLmBatch CausalLmWindows::build(const int64_t* indices, int64_t count) const {
  const int64_t t = seq_len_;
  torch::Tensor inputs = torch::empty({count, t}, torch::kInt64);
  torch::Tensor targets = torch::empty({count, t}, torch::kInt64);
  int64_t* in = inputs.data_ptr<int64_t>();
  int64_t* out = targets.data_ptr<int64_t>();
  std::vector<int64_t> window(static_cast<size_t>(t + 1));
  for (int64_t r = 0; r < count; ++r) {
    const int64_t i = indices[r];
    if (i < 0 || i >= examples_) {
      throw Error(fmt::format("causal-LM example {} outside [0, {})", i, examples_));
    }
    stream_.copy(i * t, t + 1, window.data());
    std::copy(window.begin(), window.end() - 1, in + r * t);
    std::copy(window.begin() + 1, window.end(), out + r * t);
  }
  return {inputs, targets};
}

}  // namespace batchlab::data
