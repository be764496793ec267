// core/optim/state_key.h must spell the key exactly as LibTorch's own optimizers do, in whichever
// LibTorch this is built against (a string before 2.2, the TensorImpl pointer from 2.2 on): Lars
// and Lamb find their state through it, and LibTorch's serialize() maps saved state back with it.
#include "core/optim/state_key.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace batchlab::optim {
namespace {

TEST(StateKey, IsTheKeyLibTorchsOwnSgdFilesItsStateUnder) {
  torch::Tensor w = torch::ones({3}, torch::requires_grad());
  torch::Tensor other = torch::ones({3}, torch::requires_grad());
  torch::optim::SGD sgd({w}, torch::optim::SGDOptions(0.1).momentum(0.9));
  w.mutable_grad() = torch::ones({3});
  sgd.step();
  ASSERT_EQ(sgd.state().size(), 1u);
  EXPECT_EQ(sgd.state().count(state_key(w)), 1u);
  EXPECT_EQ(sgd.state().count(state_key(other)), 0u);
}

}  // namespace
}  // namespace batchlab::optim
