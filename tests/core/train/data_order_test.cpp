#include "core/train/data_order.h"

#include <gtest/gtest.h>

#include "core/errors.h"

namespace batchlab::train {
namespace {

TEST(DataOrder, PermutationDependsOnlyOnSeedAndEpoch) {
  auto a = epoch_permutation(3, 5, 1000);
  EXPECT_TRUE(torch::equal(a, epoch_permutation(3, 5, 1000)));
  EXPECT_FALSE(torch::equal(a, epoch_permutation(3, 6, 1000)));
  EXPECT_FALSE(torch::equal(a, epoch_permutation(4, 5, 1000)));
  EXPECT_TRUE(torch::equal(std::get<0>(a.sort()), torch::arange(1000, torch::kInt64)));
}

TEST(DataOrder, EveryBatchSizeWalksTheSameOrder) {
  auto perm = epoch_permutation(0, 0, 600);
  auto small = make_batch_geometry(100, 25, 1, 600);
  auto large = make_batch_geometry(200, 50, 1, 600);
  // Step 1 of batch 200 covers exactly steps 2 and 3 of batch 100.
  std::vector<torch::Tensor> from_small, from_large;
  for (int64_t s = 2; s < 4; ++s)
    for (int64_t j = 0; j < small.accum; ++j)
      from_small.push_back(micro_batch_indices(perm, small, s, 0, j));
  for (int64_t j = 0; j < large.accum; ++j)
    from_large.push_back(micro_batch_indices(perm, large, 1, 0, j));
  EXPECT_TRUE(torch::equal(torch::cat(from_small), torch::cat(from_large)));
}

TEST(DataOrder, RanksInterleaveSoTheirMicroBatchesFormTheSingleProcessOnes) {
  auto perm = epoch_permutation(1, 0, 64);
  auto g = make_batch_geometry(32, 4, 2, 64);       // 2 ranks x micro 4 x accumulation 4
  auto single = make_batch_geometry(32, 8, 1, 64);  // 1 process x micro 8 x accumulation 4
  EXPECT_EQ(g.accum, 4);
  EXPECT_EQ(single.accum, 4);
  std::vector<torch::Tensor> all;
  for (int64_t j = 0; j < g.accum; ++j) {
    auto r0 = micro_batch_indices(perm, g, 1, 0, j);
    auto r1 = micro_batch_indices(perm, g, 1, 1, j);
    // Rank 0 holds the first half of the single-process micro-batch j, rank 1 the second half.
    EXPECT_TRUE(torch::equal(torch::cat({r0, r1}), micro_batch_indices(perm, single, 1, 0, j)));
    all.push_back(r0);
    all.push_back(r1);
  }
  // Together: exactly the global batch of step 1, each example once.
  EXPECT_TRUE(torch::equal(torch::cat(all), perm.slice(0, 32, 64)));
}

TEST(DataOrder, GeometryCountsDroppedSamples) {
  auto g = make_batch_geometry(128, 0, 1, 1000);
  EXPECT_EQ(g.micro, 128);
  EXPECT_EQ(g.accum, 1);
  EXPECT_EQ(g.steps_per_epoch, 7);
  EXPECT_EQ(g.dropped_per_epoch, 1000 - 7 * 128);
}

TEST(DataOrder, BatchLargerThanDataSetIsAnInputError) {
  try {
    make_batch_geometry(2048, 0, 1, 1000);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("2048"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("1000"), std::string::npos);
  }
}

TEST(DataOrder, FixedTrainSampleIsStableAndDistinct) {
  auto a = fixed_train_sample(0, 1000, 100);
  EXPECT_EQ(a.size(0), 100);
  EXPECT_TRUE(torch::equal(a, fixed_train_sample(0, 1000, 100)));
  EXPECT_EQ(std::get<0>(at::_unique(a, false, false)).size(0), 100);
  EXPECT_EQ(fixed_train_sample(0, 50, 100).size(0), 50);
}

}  // namespace
}  // namespace batchlab::train
