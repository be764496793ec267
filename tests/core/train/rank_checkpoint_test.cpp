// Per-rank RNG files beside the shared checkpoint (data-parallel ranks other than 0).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "core/errors.h"
#include "core/train/checkpoint.h"
#include "tests/temp_dir.h"

namespace batchlab::train {
namespace {

namespace fs = std::filesystem;
using test_support::TempDir;

TEST(RankCheckpoint, RestoresThisRanksRandomStream) {
  TempDir dir;
  CheckpointStore store(dir.path.string());
  torch::manual_seed(123);
  store.save_rank_state("abc", 10, 1);
  const auto expected = torch::rand({5});  // what the rank draws next after step 10
  torch::manual_seed(999);
  std::vector<std::string> warnings;
  ASSERT_TRUE(store.load_rank_state("abc", 10, 1, warnings));
  EXPECT_TRUE(warnings.empty());
  EXPECT_TRUE(torch::equal(torch::rand({5}), expected));
}

TEST(RankCheckpoint, MissingOrCorruptFilesAreWarningsAndOtherRunsAreRefused) {
  TempDir dir;
  CheckpointStore store(dir.path.string());
  std::vector<std::string> warnings;
  EXPECT_FALSE(store.load_rank_state("abc", 10, 1, warnings));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("rank 1"), std::string::npos) << warnings[0];

  const auto path = store.save_rank_state("abc", 10, 1);
  EXPECT_THROW(store.load_rank_state("other", 10, 1, warnings), CheckpointError);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(60);
    f.put('\x55');
  }
  warnings.clear();
  EXPECT_FALSE(store.load_rank_state("abc", 10, 1, warnings));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("checksum"), std::string::npos) << warnings[0];
}

TEST(RankCheckpoint, KeepsTheNewestRankFilesAndIsNotListedAsACheckpoint) {
  TempDir dir;
  CheckpointStore store(dir.path.string(), /*keep=*/2);
  for (int64_t step : {10, 20, 30}) store.save_rank_state("abc", step, 1);
  store.save_rank_state("abc", 30, 2);
  EXPECT_TRUE(store.list().empty());  // rank files are not checkpoints to resume from
  int rank1 = 0;
  for (const auto& e : fs::directory_iterator(dir.path)) {
    rank1 += e.path().filename().string().rfind("rank1-", 0) == 0 ? 1 : 0;
  }
  EXPECT_EQ(rank1, 2);
  std::vector<std::string> warnings;
  EXPECT_FALSE(store.load_rank_state("abc", 10, 1, warnings));  // pruned
  EXPECT_TRUE(store.load_rank_state("abc", 30, 1, warnings));
}

}  // namespace
}  // namespace batchlab::train
