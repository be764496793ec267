// A small deterministic task for trainer tests: an MLP (no batch norm, so micro-batching cannot
// change the math) classifying Gaussian points whose label is the sign pattern of a projection.
#pragma once

#include <torch/torch.h>

#include "core/train/task.h"

namespace batchlab::train::testing {

struct ToyNet : torch::nn::Module {
  ToyNet(int64_t in, int64_t hidden, int64_t classes)
      : fc1(register_module("fc1", torch::nn::Linear(in, hidden))),
        fc2(register_module("fc2", torch::nn::Linear(hidden, classes))) {}
  torch::Tensor forward(const torch::Tensor& x) { return fc2(torch::tanh(fc1(x))); }
  torch::nn::Linear fc1;
  torch::nn::Linear fc2;
};

class ToyTask : public Task {
 public:
  // `val_n` > 0: a validation split of its own (drawn after the others, so they do not change).
  explicit ToyTask(int64_t train_n = 256, int64_t test_n = 128, uint64_t seed = 7,
                   torch::Dtype dtype = torch::kFloat32, int64_t val_n = 0)
      : net_((torch::manual_seed(seed), std::make_shared<ToyNet>(8, 16, 4))) {
    net_->to(dtype);
    auto make = [&](int64_t n, torch::Tensor& x, torch::Tensor& y) {
      x = torch::randn({n, 8}, torch::TensorOptions().dtype(dtype));
      auto proj = x.index({torch::indexing::Slice(), torch::indexing::Slice(0, 2)});
      y = (proj.select(1, 0) > 0).to(torch::kInt64) * 2 + (proj.select(1, 1) > 0).to(torch::kInt64);
    };
    make(train_n, train_x_, train_y_);
    make(test_n, test_x_, test_y_);
    if (val_n > 0) make(val_n, val_x_, val_y_);
  }

  torch::nn::Module& model() override { return *net_; }
  int64_t size(Split s) const override {
    if (s == Split::val) return val_x_.defined() ? val_x_.size(0) : 0;
    return s == Split::train ? train_x_.size(0) : test_x_.size(0);
  }
  Batch make_batch(Split s, const torch::Tensor& idx, std::optional<uint64_t>) override {
    const auto& x = s == Split::train ? train_x_ : s == Split::test ? test_x_ : val_x_;
    const auto& y = s == Split::train ? train_y_ : s == Split::test ? test_y_ : val_y_;
    return {x.index_select(0, idx), y.index_select(0, idx), idx.size(0), {}};
  }
  BatchOutput forward(const Batch& b) override {
    auto logits = net_->forward(b.inputs);
    return {torch::nn::functional::cross_entropy(logits, b.targets),
            logits.argmax(1).eq(b.targets).sum(), b.size};
  }
  ToyNet& net() { return *net_; }

 private:
  std::shared_ptr<ToyNet> net_;
  torch::Tensor train_x_, train_y_, test_x_, test_y_, val_x_, val_y_;
};

// Collects everything a trainer reports.
struct RecordingReporter : Reporter {
  RunGeometry geometry;
  std::vector<StepRecord> steps;
  std::vector<EvalRecord> evals;
  std::vector<MilestoneRecord> milestones;
  std::vector<std::string> notes;
  RunOutcome outcome;
  void run_started(const RunGeometry& g) override { geometry = g; }
  void step(const StepRecord& r) override { steps.push_back(r); }
  void eval(const EvalRecord& r) override { evals.push_back(r); }
  void milestone(const MilestoneRecord& r) override { milestones.push_back(r); }
  void note(const std::string& text) override { notes.push_back(text); }
  void run_finished(const RunOutcome& o) override { outcome = o; }
};

}  // namespace batchlab::train::testing
