// The bucketing itself, against a recording stand-in for the process group: layout (reverse
// parameter order, size cap, one dtype per bucket), all-reduce started during backward, in order,
// and the averaged result in .grad.
#include "core/dist/gradient_buckets.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace batchlab::dist {
namespace {

class Done : public PendingCollective {
 public:
  void wait() override {}
};

// Plays a group of `world` identical ranks: the sum of `world` copies is `world` x the tensor.
class FakeGroup : public ProcessGroup {
 public:
  explicit FakeGroup(int64_t world) : world_(world) {}
  int64_t rank() const override { return 0; }
  int64_t world_size() const override { return world_; }
  c10::Device device() const override { return c10::Device(c10::DeviceType::CPU); }
  std::string transport() const override { return "fake"; }
  std::unique_ptr<PendingCollective> all_reduce_sum(torch::Tensor t, std::string what) override {
    t.mul_(static_cast<double>(world_));
    calls.push_back(what);
    sizes.push_back(t.numel());
    calls_when_backward_ended += backward_running ? 0 : 1;
    return std::make_unique<Done>();
  }
  std::unique_ptr<PendingCollective> broadcast(torch::Tensor, std::string) override {
    return std::make_unique<Done>();
  }
  std::vector<std::string> calls;
  std::vector<int64_t> sizes;
  bool backward_running = false;
  int calls_when_backward_ended = 0;

 private:
  int64_t world_;
};

struct Mlp : torch::nn::Module {
  Mlp() {
    for (int i = 0; i < 4; ++i)
      layers.push_back(register_module("l" + std::to_string(i), torch::nn::Linear(32, 32)));
  }
  torch::Tensor forward(torch::Tensor x) {
    for (auto& l : layers) x = torch::tanh(l(x));
    return x;
  }
  std::vector<torch::nn::Linear> layers;
};

TEST(GradientBuckets, LayoutIsReverseParameterOrderCappedBySize) {
  FakeGroup group(2);
  torch::manual_seed(0);
  Mlp net;
  // Each weight is 32 x 32 x 4 bytes = 4 KiB; a 6 KiB cap closes a bucket after its second weight.
  GradientBuckets buckets(group, net.parameters(), 6.0 / 1024.0);
  const auto layout = buckets.layout();
  // Parameters: w0 b0 w1 b1 w2 b2 w3 b3 (indices 0..7). Reverse order: b3 w3 b2 w2 | b1 w1 b0 w0.
  ASSERT_EQ(layout.size(), 2u);
  EXPECT_EQ(layout[0], (std::vector<size_t>{7, 6, 5, 4}));
  EXPECT_EQ(layout[1], (std::vector<size_t>{3, 2, 1, 0}));
}

TEST(GradientBuckets, AllReducesStartDuringBackwardAndGradientsAreAveraged) {
  FakeGroup group(3);
  torch::manual_seed(0);
  Mlp net, reference;
  torch::NoGradGuard no_grad_copy;
  for (size_t i = 0; i < net.parameters().size(); ++i)
    reference.parameters()[i].copy_(net.parameters()[i]);
  auto x1 = torch::randn({8, 32}), x2 = torch::randn({8, 32});
  {
    torch::AutoGradMode enable(true);
    // Reference: plain accumulation of two micro-batches.
    reference.forward(x1).sum().backward();
    reference.forward(x2).sum().backward();

    GradientBuckets buckets(group, net.parameters(), 4.1 / 1024.0);  // one weight + bias per bucket
    net.forward(x1).sum().backward();  // not armed: plain accumulation
    EXPECT_TRUE(group.calls.empty());
    auto loss = net.forward(x2).sum();
    buckets.arm(/*measure_local_norm=*/true);
    group.backward_running = true;
    loss.backward();
    group.backward_running = false;
    // Every bucket was complete, and its all-reduce started, inside backward (the hooks).
    EXPECT_EQ(group.calls.size(), 4u);
    auto local_sq = buckets.finish();
    EXPECT_EQ(group.calls_when_backward_ended, 0);
    ASSERT_EQ(group.calls.size(), 4u);
    EXPECT_EQ(group.calls[0], "all-reduce of gradient bucket 1 of 4");
    EXPECT_EQ(group.calls[3], "all-reduce of gradient bucket 4 of 4");
    EXPECT_EQ(group.sizes[0], 32 * 32 + 32);

    double expected_sq = 0.0;
    for (size_t i = 0; i < net.parameters().size(); ++i) {
      // 3 identical ranks averaged: the local accumulated gradient itself.
      EXPECT_TRUE(
          torch::allclose(net.parameters()[i].grad(), reference.parameters()[i].grad(), 1e-6, 1e-6))
          << "parameter " << i;
      expected_sq += reference.parameters()[i].grad().pow(2).sum().item<double>();
    }
    ASSERT_TRUE(local_sq.defined());
    EXPECT_NEAR(local_sq.item<double>(), expected_sq, 1e-6 * expected_sq);
  }
}

TEST(GradientBuckets, UnusedParametersStillJoinTheirBucket) {
  FakeGroup group(2);
  torch::manual_seed(0);
  Mlp net;
  GradientBuckets buckets(group, net.parameters(), 25.0);  // one bucket for everything
  auto loss = net.layers[0](torch::randn({4, 32})).sum();  // only layer 0 takes part
  buckets.arm(false);
  loss.backward();
  EXPECT_TRUE(group.calls.empty());  // the bucket waits for the unused parameters...
  EXPECT_FALSE(buckets.finish().defined());
  ASSERT_EQ(group.calls.size(), 1u);  // ...which finish() fills with zeros
  EXPECT_TRUE(net.layers[3]->weight.grad().defined());
  EXPECT_EQ(net.layers[3]->weight.grad().abs().sum().item<double>(), 0.0);
}

}  // namespace
}  // namespace batchlab::dist
