// The validation split (data.val_size): examples held out of the training set, so that selection
// (best learning rate, study targets) reads held-out metrics and the test set is only reported.
//
// Which examples are held out depends on the training-set size n alone: the first v = val_size
// positions of a permutation of 0..n-1 drawn from kValidationSeed (never train.seed or the data
// seed), so every run, seed and batch size validates on the same examples and trains on the other
// n - v. A larger val_size holds out a superset. Tasks see three splits; this is the one mapping
// from the indices of the two that live in the training set to its stored examples:
//   Split::train index i in [0, n - v) -> the i-th kept example, in ascending order;
//   Split::val   index i in [0, v)     -> the i-th held-out example, in ascending order;
//   Split::test  index i               -> test example i (the test set is never split).
// Training indices stay dense, so the trainer's epoch permutations, fixed train sample and data
// parallelism work on size(Split::train) unchanged; with v = 0 the mapping is the identity.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/train/task.h"

namespace batchlab::train {

// The permutation's seed: a constant (ASCII "held-out"), so the validation set is a property of the
// data set and never of a run.
inline constexpr uint64_t kValidationSeed = 0x68656c642d6f7574ULL;

class ValidationSplit {
 public:
  // Holds out `val_size` of the `train_examples` examples of the training set of `dataset` (a name
  // for messages). Throws InputError naming data.val_size, the dataset and its size unless
  // val_size < train_examples (a data check: the size is known only here); a negative val_size is
  // a config that skipped validation (an internal Error, core/config/preconditions.h).
  ValidationSplit(int64_t train_examples, int64_t val_size, const std::string& dataset);

  // Split::train: n - v; Split::val: v. Split::test is not the training set's (throws Error).
  int64_t size(Split split) const;

  // Where the examples of `split` are stored: the test set for Split::test, else the training set.
  static Split stored_split(Split split) {
    return split == Split::test ? Split::test : Split::train;
  }

  // The stored example behind index `index` of `split` (test: `index` itself). Throws Error when
  // the index is outside the split.
  int64_t to_stored(Split split, int64_t index) const;
  // int64 [k] indices of `split` -> int64 [k] stored indices (CPU). Test indices and training
  // indices with nothing held out come back unchanged.
  torch::Tensor to_stored(Split split, const torch::Tensor& indices) const;

  // The held-out examples of the training set, ascending (v entries).
  const std::vector<int64_t>& held_out() const { return held_out_; }
  int64_t train_examples() const { return train_examples_; }

 private:
  int64_t train_examples_ = 0;
  std::vector<int64_t> held_out_;  // ascending
  std::vector<int64_t> kept_;      // ascending; empty when nothing is held out (identity)
};

// The first `count` entries of the permutation of 0..n-1 that defines the held-out set, in draw
// order (a partial Fisher-Yates shuffle whose draws come from mix_seed(kValidationSeed, i), so the
// set never depends on the LibTorch version's random generators).
std::vector<int64_t> validation_permutation_prefix(int64_t n, int64_t count);

}  // namespace batchlab::train
