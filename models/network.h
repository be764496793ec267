// The interface every image classification network implements, so tasks and the trainer hold any
// architecture from the models table (models/registry.h) behind one type.
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

namespace batchlab::models {

class ImageClassifier : public torch::nn::Module {
 public:
  // images: float [B, C, H, W], already normalized (per-channel mean 0, std 1 over the training
  // set). Returns logits float [B, num_classes] (no softmax: the loss applies log-softmax itself).
  virtual torch::Tensor forward(const torch::Tensor& images) = 0;
};

}  // namespace batchlab::models
