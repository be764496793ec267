// The small SGD run the trainer tests train the ToyTask with: batch 32, 4 epochs, an evaluation
// every epoch on 64 training examples.
#pragma once

#include "core/config/experiment_config.h"

namespace batchlab::train::testing {

inline config::ExperimentConfig toy_config() {
  config::ExperimentConfig c;
  c.batch.global = 32;
  c.optim.name = "sgd";
  c.optim.base_lr = 0.1;
  c.optim.base_batch = 32;
  c.schedule.epochs = 4.0;
  c.train.eval_every = 1.0;
  c.data.eval_train_samples = 64;
  return c;
}

}  // namespace batchlab::train::testing
