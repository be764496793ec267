// The fixture of the text tasks' tests (the masked LM and the causal LM): one generated corpus per
// suite in a scratch folder, with the tokenizer cache beside it (BATCHLAB_CACHE_DIR), a model of
// 300 pieces and 64 positions on windows of 32 tokens, and the task built from them by its
// factory; and the training check both tasks share.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <torch/torch.h>

#include <memory>
#include <string>

#include "core/config/experiment_config.h"
#include "core/train/task.h"
#include "tests/experiments/data/text_test_util.h"

namespace batchlab::experiments::testing {

using TextTaskFactory = std::unique_ptr<train::Task> (*)(const config::ModelConfig&,
                                                         const config::DataConfig&, torch::Device);

// TaskT: the task class; Arch: its model.arch (a character array with linkage, as template
// arguments need); Factory: the task's factory (make_masked_lm_task, make_causal_lm_task).
template <class TaskT, const char* Arch, TextTaskFactory Factory>
class TextTaskTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new data::testing::ScratchDir(std::string("task-") + Arch);
    data::testing::write_text_corpus(dir_->path / "corpus", 30, 60);
    ::setenv("BATCHLAB_CACHE_DIR", (dir_->path / "cache").c_str(), 1);
  }
  static void TearDownTestSuite() {
    ::unsetenv("BATCHLAB_CACHE_DIR");
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    torch::manual_seed(0);
    model_.arch = Arch;
    model_.vocab_size = 300;
    model_.max_seq_len = 64;
    model_.dropout = 0.0;
    data_.dataset = "text";
    data_.path = (dir_->path / "corpus").string();
    data_.seq_len = 32;
  }
  // The task of the current model_ and data_ (nullptr if the factory made another kind).
  std::unique_ptr<TaskT> make() {
    auto task = Factory(model_, data_, torch::kCPU);
    return std::unique_ptr<TaskT>(dynamic_cast<TaskT*>(task.release()));
  }
  static torch::Tensor first(int64_t n) { return torch::arange(n, torch::kInt64); }

  static data::testing::ScratchDir* dir_;
  config::ModelConfig model_;
  config::DataConfig data_;
};

template <class TaskT, const char* Arch, TextTaskFactory Factory>
data::testing::ScratchDir* TextTaskTest<TaskT, Arch, Factory>::dir_ = nullptr;

// 30 AdamW steps on one batch of 16 training examples lower its loss by more than one nat.
inline void expect_training_lowers_the_loss(train::Task& task) {
  auto params = task.model().parameters();
  torch::optim::AdamW opt(params, torch::optim::AdamWOptions(3e-3));
  const auto b = task.make_batch(train::Split::train, torch::arange(16, torch::kInt64), 9);
  double before = 0, after = 0;
  for (int step = 0; step < 30; ++step) {
    opt.zero_grad();
    auto out = task.forward(b);
    if (step == 0) before = out.loss.item<double>();
    after = out.loss.item<double>();
    out.loss.backward();
    opt.step();
  }
  EXPECT_LT(after, before - 1.0) << before << " -> " << after;
}

}  // namespace batchlab::experiments::testing
