// The one interface every task implements (model + data + loss + metric). The trainer never
// branches on a task or model name: image classification, MLM pretraining and test fixtures all
// look the same from here.
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/optim/factory.h"
#include "core/train/data_order.h"

namespace batchlab::train {

// train: the examples trained on; val: examples held out of the training set (data.val_size,
// core/train/validation_split.h) that selection reads; test: the test set, only reported. A task
// without a validation split has size(Split::val) = 0.
enum class Split { train, test, val };

// For messages: "training", "test", "validation".
inline const char* split_name(Split split) {
  switch (split) {
    case Split::train:
      return "training";
    case Split::test:
      return "test";
    case Split::val:
      return "validation";
  }
  return "unknown";
}

// Examples of one batch, already on the training device.
struct Batch {
  torch::Tensor inputs;   // task-defined, e.g. float [B, C, H, W]
  torch::Tensor targets;  // task-defined, e.g. int64 [B]
  int64_t size = 0;       // examples in the batch
  // Further task-defined tensors, by position (MLM: segment ids, masked positions, ...); most
  // tasks leave it empty.
  std::vector<torch::Tensor> extras;
};

// What one forward pass yields. The loss is a mean so backward() sees the usual scale; `correct`
// and `count` are sums so micro-batches and evaluation chunks add up exactly.
struct BatchOutput {
  torch::Tensor loss;     // 0-dim float: mean loss over the `count` items
  torch::Tensor correct;  // 0-dim: number of correct predictions among them
  int64_t count = 0;      // items the loss and metric are over (examples; masked tokens for MLM)
};

// The order in which training will ask for training batches, for tasks that build them ahead of
// time on loader threads. Step s >= first_step, at (e, o) = config::fixed_batch_position(geometry,
// s), reads micro-batches micro_batch_at(epoch_permutation(data_seed, e, train_size), geometry, o,
// rank, j) for j < geometry.accum, augmented with seed mix_seed(mix_seed(data_seed, s + 1), j).
struct BatchPlan {
  int64_t data_seed = 0;
  BatchGeometry geometry;
  int64_t rank = 0;
  int64_t train_size = 0;
  int64_t first_step = 0;
  int64_t end_step = 0;  // first step not taken; 0 = not known (a wall-clock budget)
};

class Task {
 public:
  virtual ~Task() = default;

  // The network being trained; its train()/eval() mode is set by the trainer.
  virtual torch::nn::Module& model() = 0;

  // Parameters with their names, in a fixed order (optimizer groups, per-layer statistics).
  virtual std::vector<optim::NamedParameter> named_parameters();

  // Examples in a split. With data.val_size = v of a training set of n, size(Split::train) is
  // n - v and size(Split::val) is v (0 when nothing is held out).
  virtual int64_t size(Split split) const = 0;

  // The examples at `indices` (int64 [n]) of a split, on the device. With `augment_seed` the
  // training-time random transform is applied, drawn deterministically from that seed so a batch
  // is the same whatever the thread or process that builds it. Split::val and Split::test batches
  // are evaluation batches: never augmented, and (MLM) masked the same way at every evaluation.
  virtual Batch make_batch(Split split, const torch::Tensor& indices,
                           std::optional<uint64_t> augment_seed) = 0;

  // Forward pass and loss in the model's current mode.
  virtual BatchOutput forward(const Batch& batch) = 0;

  // Called by the trainer before each step's batches are built, with the training progress in
  // [0, 1] (the LR schedule's: step fraction, or time fraction under a wall-clock budget). Tasks
  // whose batches depend on it (BERT's two-phase sequence length) switch here; most ignore it.
  virtual void set_progress(double /*progress*/) {}

  // Called by the trainer when training starts or resumes. Tasks with loader threads build the
  // planned batches ahead; make_batch returns the same batch whether or not it was built ahead.
  virtual void plan_batches(const BatchPlan& /*plan*/) {}

  // Whether every training batch has the same input shape (fixed-size images), so the device may
  // autotune its kernels once per shape (cuDNN benchmark mode, core/train/device.h). Tasks whose
  // shapes change during training (BERT's two-phase sequence length) keep the default.
  virtual bool fixed_input_shapes() const { return false; }

  // The accuracy of guessing a class uniformly (1 / classes) for a classifier, recorded with the
  // run so that a report can say when a run ended at or below it; nullopt where accuracy has no
  // single chance level (masked-LM accuracy over a vocabulary of unequal frequencies).
  virtual std::optional<double> chance_accuracy() const { return std::nullopt; }

  // The SHA-256 of the tokenizer file a text task encodes with, recorded with the run as
  // data.tokenizer_sha256 (core/config/data_config.h); "" for a task without one.
  virtual std::string tokenizer_sha256() const { return {}; }
};

}  // namespace batchlab::train
