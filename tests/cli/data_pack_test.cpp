// `batchlab data pack` and training on its output, through the real binary: exit codes, messages
// naming unreadable files, skip counts, and a run that reads packed shards.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/cli/cli_runner.h"
#include "tests/experiments/data/image_test_util.h"

namespace batchlab::cli {
namespace {

using testing::run_batchlab;
using testing::shell_quote;
using testing::TempDir;

// A tiny ImageNet-style experiment reading data.path (a JPEG folder or a pack).
std::string image_config(const std::string& path, bool skip_corrupt) {
  return "schema_version = 1\n"
         "[model]\narch = \"small_resnet\"\nwidth = 4\n"
         "[data]\ndataset = \"imagenet\"\npath = \"" +
         path +
         "\"\nimage_size = 16\n"
         "eval_resize = 18\nworkers = 2\naugment = true\neval_train_samples = 8\n"
         "skip_corrupt = " +
         std::string(skip_corrupt ? "true" : "false") +
         "\n"
         "[batch]\nglobal = 8\n"
         "[optim]\nname = \"sgd\"\nbase_lr = 0.05\n"
         "[schedule]\nepochs = 2\n"
         "[train]\nthreads = 1\n";
}

class DataPackCli : public ::testing::Test {
 protected:
  void SetUp() override {
    data::testing::make_image_folder((dir_.path / "src").string(), {"n01", "n02"}, 6, 2);
  }
  std::string path(const std::string& name) const { return (dir_.path / name).string(); }
  TempDir dir_{"pack"};
};

TEST_F(DataPackCli, PacksAFolderAndTrainingReadsThePack) {
  auto r = run_batchlab("data pack " + shell_quote(path("src")) + " --out " +
                        shell_quote(path("pack")) + " --size 20 --workers 2 --shard-mb 0.01");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("packed 12 training and 4 validation images"), std::string::npos)
      << r.output;
  EXPECT_TRUE(std::filesystem::exists(path("pack/pack.index")));
  EXPECT_TRUE(std::filesystem::exists(path("pack/train-00000.shard")));
  EXPECT_TRUE(std::filesystem::exists(path("pack/val-00000.shard")));

  const auto cfg = dir_.file("packed.toml", image_config(path("pack"), false));
  auto t = run_batchlab("train " + shell_quote(cfg) + " --db " + shell_quote(path("runs.db")));
  EXPECT_EQ(t.exit_code, 0) << t.output;

  // Packing again into the same directory is refused (bad input).
  auto again =
      run_batchlab("data pack " + shell_quote(path("src")) + " --out " + shell_quote(path("pack")));
  EXPECT_EQ(again.exit_code, 2) << again.output;
  EXPECT_NE(again.output.find("already holds a pack"), std::string::npos) << again.output;
}

TEST_F(DataPackCli, BadArgumentsExitWithTwo) {
  EXPECT_EQ(run_batchlab("data pack " + shell_quote(path("src"))).exit_code, 2);
  auto fmt = run_batchlab("data pack " + shell_quote(path("src")) + " --out " +
                          shell_quote(path("o")) + " --format png");
  EXPECT_EQ(fmt.exit_code, 2);
  EXPECT_NE(fmt.output.find("png"), std::string::npos) << fmt.output;
  auto missing = run_batchlab("data pack " + shell_quote(path("nowhere")) + " --out " +
                              shell_quote(path("o")));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("train/"), std::string::npos) << missing.output;
  EXPECT_EQ(run_batchlab("data pack --help").exit_code, 0);
}

TEST_F(DataPackCli, CorruptJpegNamesTheFileOrIsSkippedAndCounted) {
  const std::string bad = path("src/train/n02/img_3.JPEG");
  data::testing::write_bytes(bad, {'n', 'o', 'p', 'e'});
  auto r =
      run_batchlab("data pack " + shell_quote(path("src")) + " --out " + shell_quote(path("p1")));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(bad), std::string::npos) << r.output;
  auto s = run_batchlab("data pack " + shell_quote(path("src")) + " --out " +
                        shell_quote(path("p2")) + " --skip-corrupt --format jpeg --quality 85");
  EXPECT_EQ(s.exit_code, 0) << s.output;
  EXPECT_NE(s.output.find("packed 11 training"), std::string::npos) << s.output;
  EXPECT_NE(s.output.find("skipped 1 unreadable"), std::string::npos) << s.output;

  // Training straight from the folder: stops with the path, or skips and says how many.
  const auto strict = dir_.file("strict.toml", image_config(path("src"), false));
  auto t = run_batchlab("train " + shell_quote(strict) + " --db " + shell_quote(path("a.db")));
  EXPECT_EQ(t.exit_code, 2) << t.output;
  EXPECT_NE(t.output.find(bad), std::string::npos) << t.output;
  const auto lenient = dir_.file("lenient.toml", image_config(path("src"), true));
  auto u = run_batchlab("train " + shell_quote(lenient) + " --db " + shell_quote(path("b.db")));
  EXPECT_EQ(u.exit_code, 0) << u.output;
  EXPECT_NE(u.output.find("1 unreadable image(s) skipped"), std::string::npos) << u.output;
  EXPECT_NE(u.output.find(bad), std::string::npos) << u.output;
}

}  // namespace
}  // namespace batchlab::cli
