// The training step reads device values to the host O(1) times, whatever the number of parameter
// tensors: LAMB and LARS on the multi-tensor path a GPU takes (optim.implementation = "foreach",
// so nothing is summed on the host behind the counter's back), with clipping, per-layer statistics
// every step, the noise scale over 2 micro-batches, and an evaluation at the end. Counted are the
// reads made through optim::read_to_host and the implicit ones (.item(), nonzero, masked_select)
// the operator observer sees; a model of 4 tensors and one of 26 must make exactly the same
// number. A probe that reads one value per tensor shows the counters would catch a per-tensor read.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <string>

#include "core/config/experiment_config.h"
#include "core/optim/host_reads.h"
#include "core/train/trainer.h"
#include "tests/core/train/toy_config.h"
#include "tests/core/train/toy_task.h"
#include "tests/op_counter.h"

namespace batchlab::train {
namespace {

// An MLP of `hidden_layers` + 1 linear layers (2 tensors each) on the ToyTask's data.
struct ReadsNet : torch::nn::Module {
  explicit ReadsNet(int hidden_layers) {
    int64_t in = 8;
    for (int i = 0; i < hidden_layers; ++i) {
      layers.push_back(register_module("fc" + std::to_string(i), torch::nn::Linear(in, 16)));
      in = 16;
    }
    layers.push_back(register_module("head", torch::nn::Linear(in, 4)));
  }
  torch::Tensor forward(torch::Tensor x) {
    for (size_t i = 0; i + 1 < layers.size(); ++i) x = torch::tanh(layers[i]->forward(x));
    return layers.back()->forward(x);
  }
  std::vector<torch::nn::Linear> layers;
};

class ReadsTask : public testing::ToyTask {
 public:
  explicit ReadsTask(int hidden_layers)
      : net_((torch::manual_seed(3), std::make_shared<ReadsNet>(hidden_layers))) {}
  torch::nn::Module& model() override { return *net_; }
  BatchOutput forward(const Batch& b) override {
    auto logits = net_->forward(b.inputs);
    return {torch::nn::functional::cross_entropy(logits, b.targets),
            logits.argmax(1).eq(b.targets).sum(), b.size};
  }

 private:
  std::shared_ptr<ReadsNet> net_;
};

struct RunReads {
  int64_t tensors = 0;
  int64_t steps = 0;
  int64_t explicit_reads = 0;
  int64_t implicit_reads = 0;
};

RunReads count_reads(const std::string& optimizer, int hidden_layers, bool per_tensor_probe) {
  ReadsTask task(hidden_layers);
  testing::RecordingReporter rec;
  config::ExperimentConfig c = testing::toy_config();
  c.optim.name = optimizer;
  c.optim.implementation = "foreach";
  c.optim.grad_clip = 1.0;
  c.optim.weight_decay = 0.01;
  c.optim.base_lr = 0.01;
  c.batch.micro = 16;  // 2 micro-batches: the noise scale measures each
  c.schedule.epochs.reset();
  c.schedule.steps = 6;
  c.train.layer_stats_every = 1;
  c.train.noise_scale = true;
  TrainerOptions o;
  o.eval_chunk = 64;
  if (per_tensor_probe) {
    // What the step must not do: one host read per tensor (here a norm read with .item()).
    o.before_update_probe = [&task](int64_t) {
      for (const auto& p : task.model().parameters()) (void)p.norm().item<double>();
    };
  }
  const int64_t before = optim::host_reads();
  test_util::OpCounter counter;
  Trainer trainer(c, o, task, rec);
  const RunOutcome outcome = trainer.run();
  EXPECT_EQ(outcome.status, RunStatus::done) << outcome.error;
  RunReads r;
  r.tensors = static_cast<int64_t>(task.model().parameters().size());
  r.steps = static_cast<int64_t>(rec.steps.size());
  r.explicit_reads = optim::host_reads() - before;
  r.implicit_reads = counter.implicit_reads();
  return r;
}

TEST(StepHostReads, ConstantInTheNumberOfTensors) {
  for (const std::string optimizer : {"lamb", "lars"}) {
    SCOPED_TRACE(optimizer);
    const RunReads small = count_reads(optimizer, 1, false);
    const RunReads large = count_reads(optimizer, 12, false);
    ASSERT_EQ(small.tensors, 4);
    ASSERT_EQ(large.tensors, 26);
    ASSERT_EQ(small.steps, 6);
    std::cout << optimizer << ": " << small.explicit_reads << " + " << small.implicit_reads
              << " host reads for 6 steps and one evaluation with 4 tensors, "
              << large.explicit_reads << " + " << large.implicit_reads << " with 26\n";
    EXPECT_EQ(small.explicit_reads, large.explicit_reads);
    EXPECT_EQ(small.implicit_reads, large.implicit_reads);
    // Per step: the loss and gradient norm, the noise scale's micro-batch norms, the optimizer's
    // trust-ratio norms, the layer statistics: 4; the evaluation adds a few.
    EXPECT_LE(small.explicit_reads, 4 * small.steps + 2);
    EXPECT_LE(small.implicit_reads, 12);
  }
}

TEST(StepHostReads, APerTensorReadIsCaught) {
  const RunReads clean = count_reads("lamb", 12, false);
  const RunReads probed = count_reads("lamb", 12, true);
  // One .item() per tensor per step: 26 x 6 more.
  EXPECT_EQ(probed.implicit_reads - clean.implicit_reads, 26 * 6);
}

}  // namespace
}  // namespace batchlab::train
