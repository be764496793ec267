// A checkpoint file is input: intact (its checksum holds) but not what the reader expects, it is a
// CheckpointError naming the file (exit 2), never LibTorch's own exception (exit 1). Found by
// fuzz/checkpoint_fuzz.cpp (issue 45): a best.pt's contents where a checkpoint was expected, and a
// rank's RNG file where best.pt was; its corpus keeps those inputs.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "core/errors.h"
#include "core/train/checkpoint.h"
#include "tests/temp_dir.h"

namespace batchlab::train {
namespace {

namespace fs = std::filesystem;
constexpr const char* kInputRunId = "0123456789abcdef";

struct SmallRun {
  torch::nn::Linear model{3, 2};
  torch::optim::SGD optimizer{model->parameters(), torch::optim::SGDOptions(0.1)};
};

CheckpointContents contents_at(int64_t step) {
  CheckpointContents c;
  c.config_hash = kInputRunId;
  c.state.step = step;
  return c;
}

TEST(CheckpointInput, AnIntactFileOfThisRunThatDoesNotFitIsRefusedNamingIt) {
  test_support::TempDir dir("ckpt-input");
  CheckpointStore store(dir.path.string());
  SmallRun run;
  store.save_best(kInputRunId, {3, "val_acc", 0.5}, *run.model);  // weights only, no optimizer
  const std::string ckpt = (dir.path / "ckpt-000000000003.pt").string();
  fs::copy_file(store.best_path(), ckpt);
  std::vector<std::string> warnings;
  try {
    store.load_latest(kInputRunId, *run.model, run.optimizer, warnings);
    FAIL() << "a checkpoint without optimizer state was resumed from";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find(ckpt + ": does not fit run " + kInputRunId),
              std::string::npos)
        << e.what();
  }
}

TEST(CheckpointInput, ATrainerStateNoRunCanHaveIsRefused) {
  test_support::TempDir dir("ckpt-input");
  CheckpointStore store(dir.path.string());
  SmallRun run;
  auto contents = contents_at(40);
  contents.state.last_eval_step = 90;  // an evaluation after the step it was saved at
  store.save(contents, *run.model, run.optimizer);
  std::vector<std::string> warnings;
  try {
    store.load_latest(kInputRunId, *run.model, run.optimizer, warnings);
    FAIL() << "resumed from a state no run can have";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("a trainer state no run can have (step 40, last "
                                         "evaluation at 90"),
              std::string::npos)
        << e.what();
  }
}

TEST(CheckpointInput, AFileOfAnotherKindIsNoBestRecordAndNoRankState) {
  test_support::TempDir dir("ckpt-input");
  CheckpointStore store(dir.path.string());
  SmallRun run;
  const std::string rank_file = store.save_rank_state(kInputRunId, 5, 1);
  fs::copy_file(rank_file, store.best_path());
  EXPECT_FALSE(store.read_best(kInputRunId).has_value());
  EXPECT_THROW(load_model_weights(store.best_path(), kInputRunId, *run.model), CheckpointError);

  // best.pt's contents (no RNG states) where rank 1's RNG file should be: a warning, and the
  // rank goes on with a fresh RNG stream, as when the file is missing.
  fs::remove(store.best_path());
  store.save_best(kInputRunId, {6, "val_acc", 0.5}, *run.model);
  fs::copy_file(store.best_path(), dir.path / "rank1-000000000006.pt");
  std::vector<std::string> warnings;
  EXPECT_FALSE(store.load_rank_state(kInputRunId, 6, 1, warnings));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("restoring its RNG states"), std::string::npos) << warnings[0];
}

}  // namespace
}  // namespace batchlab::train
