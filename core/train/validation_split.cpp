#include "core/train/validation_split.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <numeric>

#include "core/config/preconditions.h"
#include "core/errors.h"
#include "core/train/data_order.h"

namespace batchlab::train {

std::vector<int64_t> validation_permutation_prefix(int64_t n, int64_t count) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  count = std::min(count, n);
  for (int64_t i = 0; i < count; ++i) {
    // Uniform in [i, n) by multiply-shift of a 64-bit draw (bias below n / 2^64).
    const uint64_t draw = mix_seed(kValidationSeed, static_cast<uint64_t>(i));
    const auto span = static_cast<uint64_t>(n - i);
    const auto j = i + static_cast<int64_t>((static_cast<unsigned __int128>(draw) * span) >> 64);
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  order.resize(static_cast<size_t>(count));
  return order;
}

ValidationSplit::ValidationSplit(int64_t train_examples, int64_t val_size,
                                 const std::string& dataset)
    : train_examples_(train_examples) {
  // The schema requires data.val_size >= 0 (core/config); only the size limit needs the data.
  config::expect(val_size >= 0, "ValidationSplit",
                 fmt::format("data.val_size = {} must be >= 0", val_size));
  if (val_size > 0 && val_size >= train_examples) {
    throw InputError(fmt::format(
        "data.val_size = {}: must be smaller than the {} training examples of {} (the "
        "validation split is held out of the training set and training needs the rest); "
        "lower data.val_size",
        val_size, train_examples, dataset));
  }
  if (val_size == 0) return;
  held_out_ = validation_permutation_prefix(train_examples, val_size);
  std::sort(held_out_.begin(), held_out_.end());
  kept_.reserve(static_cast<size_t>(train_examples - val_size));
  auto next_held = held_out_.begin();
  for (int64_t i = 0; i < train_examples; ++i) {
    if (next_held != held_out_.end() && *next_held == i) {
      ++next_held;
    } else {
      kept_.push_back(i);
    }
  }
}

int64_t ValidationSplit::size(Split split) const {
  switch (split) {
    case Split::train:
      return train_examples_ - static_cast<int64_t>(held_out_.size());
    case Split::val:
      return static_cast<int64_t>(held_out_.size());
    case Split::test:
      break;
  }
  throw Error("ValidationSplit::size: the test split is not part of the training set");
}

int64_t ValidationSplit::to_stored(Split split, int64_t index) const {
  if (split == Split::test) return index;
  const int64_t n = size(split);
  if (index < 0 || index >= n) {
    throw Error(fmt::format("{} example {} outside [0, {})", split_name(split), index, n));
  }
  if (split == Split::val) return held_out_[static_cast<size_t>(index)];
  return kept_.empty() ? index : kept_[static_cast<size_t>(index)];
}

torch::Tensor ValidationSplit::to_stored(Split split, const torch::Tensor& indices) const {
  if (split == Split::test || (split == Split::train && kept_.empty())) return indices;
  const torch::Tensor idx = indices.to(torch::kCPU, torch::kInt64).contiguous();
  torch::Tensor out = torch::empty_like(idx);
  const int64_t* in = idx.data_ptr<int64_t>();
  int64_t* o = out.data_ptr<int64_t>();
  for (int64_t k = 0; k < idx.numel(); ++k) o[k] = to_stored(split, in[k]);
  return out;
}

}  // namespace batchlab::train
