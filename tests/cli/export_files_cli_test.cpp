// `batchlab export` through the real binary, C++ only (no Python peer): a refused or failed export
// leaves nothing behind (no FILE.tmp, no half a pair of weights and card), and the card of a ResNet
// trained with the small stem names the module that takes its weights instead of promising
// torchvision's resnet as is.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "tests/cli/cli_runner.h"
#include "tests/test_paths.h"

namespace batchlab::cli {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using testing::contains;
using testing::read_text;
using testing::run_batchlab;
using testing::run_id_of;
using testing::run_shell;
using testing::shell_quote;
using testing::TempDir;
using testing::write_fake_cifar10;

// Every path under `dir`, relative to it, except SQLite's -wal and -shm files (a reader may leave
// them beside the database).
std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 4 &&
        (name.rfind("-wal") == name.size() - 4 || name.rfind("-shm") == name.size() - 4)) {
      continue;
    }
    out.insert(fs::relative(e.path(), dir).string());
  }
  return out;
}

std::string describe(const std::set<std::string>& paths) {
  std::string out;
  for (const auto& p : paths) out += "\n  " + p;
  return out;
}

// small_resnet at its default width on synthetic data (weights of about 680 KB), trained for one
// epoch with a checkpoint at the end; the fixture trains it once for every test.
class ExportFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("export-files");
    const std::string config =
        dir_->file("small.toml",
                   "schema_version = 1\n[model]\narch = \"small_resnet\"\n"
                   "[data]\ndataset = \"synthetic\"\ntrain_size = 256\ntest_size = 64\n"
                   "eval_train_samples = 64\n[batch]\nglobal = 64\n[optim]\nname = \"sgd\"\n"
                   "base_lr = 0.05\n[schedule]\nsteps = 2\n[train]\nthreads = 1\n"
                   "checkpoint_every = 2\n");
    const auto trained =
        run_batchlab("train " + shell_quote(config) + " --db " + shell_quote(db()));
    train_output_ = trained.output;
    if (trained.exit_code == 0) run_ = run_id_of(trained.output);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override { ASSERT_FALSE(run_.empty()) << train_output_; }

  static std::string db() { return (dir_->path / "small.db").string(); }
  static std::string path(const std::string& name) { return (dir_->path / name).string(); }
  static std::string export_args(const std::string& out) {
    return "export --db " + shell_quote(db()) + " --run " + run_ + " --out " + shell_quote(out);
  }

  static inline TempDir* dir_ = nullptr;
  static inline std::string run_;
  static inline std::string train_output_;
};

TEST_F(ExportFiles, AnOutThatIsAFolderIsRefusedBeforeAnythingIsWritten) {
  fs::create_directories(path("model_dir"));
  const auto before = listing(dir_->path);
  const auto r = run_batchlab(export_args(path("model_dir")));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--out " + path("model_dir") + ": is a folder")) << r.output;
  // It used to leave model_dir.tmp (the whole state_dict) behind.
  EXPECT_EQ(listing(dir_->path), before) << describe(listing(dir_->path));
}

TEST_F(ExportFiles, ACardPathThatIsAFolderIsRefusedBeforeTheWeightsAreWritten) {
  fs::create_directories(path("w.json"));
  const auto before = listing(dir_->path);
  const auto r = run_batchlab(export_args(path("w.pt")));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, path("w.json") + ": is a folder")) << r.output;
  // It used to write w.pt in full and leave w.json.tmp.
  EXPECT_EQ(listing(dir_->path), before) << describe(listing(dir_->path));
}

TEST_F(ExportFiles, AFullDiskLeavesNeitherTheWeightsNorATemporaryFile) {
  const auto before = listing(dir_->path);
  // A file size limit of 256 KiB stands in for a full disk: the 680 KB state_dict cannot be
  // written, the database's 32 KiB shared-memory file and the card can. SIGXFSZ is ignored (an
  // ignored signal stays ignored across exec), so the write fails with EFBIG instead of killing
  // the process, as writing to a full disk fails with ENOSPC.
  const std::string command = "trap '' XFSZ; ulimit -f 256; exec " +
                              shell_quote(test_paths::binary()) + " " +
                              export_args(path("full.pt"));
  const CommandResult r = run_shell("bash -c " + shell_quote(command) + " 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, path("full.pt") + ": cannot write the file")) << r.output;
  EXPECT_FALSE(fs::exists(path("full.pt")));
  EXPECT_FALSE(fs::exists(path("full.json")));
  EXPECT_EQ(listing(dir_->path), before) << describe(listing(dir_->path));

  // Without the limit the same export writes both files, and nothing else.
  const auto ok = run_batchlab(export_args(path("full.pt")));
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  auto expected = before;
  expected.insert("full.pt");
  expected.insert("full.json");
  EXPECT_EQ(listing(dir_->path), expected) << describe(listing(dir_->path));
}

TEST(ExportCard, ASmallStemResNetNamesTheModuleThatTakesItsWeights) {
  // resnet18 on 32 px images: model.stem = "auto" gives the small stem (a 3x3 stride-1 conv1, no
  // max pool), whose conv1 [64, 3, 3, 3] torchvision's resnet18 ([64, 3, 7, 7]) refuses.
  TempDir dir("export-stem");
  write_fake_cifar10(dir.path / "cifar");
  const std::string config =
      dir.file("r18.toml",
               "schema_version = 1\n[model]\narch = \"resnet18\"\n[data]\ndataset = "
               "\"cifar10\"\npath = \"" +
                   (dir.path / "cifar").string() +
                   "\"\neval_train_samples = 8\n[batch]\nglobal = 4\n[optim]\nname = "
                   "\"sgd\"\nbase_lr = 0.1\nbase_batch = 4\n[schedule]\nsteps = 0\n"
                   "[train]\nthreads = 1\ncheckpoint_every = 1\n");
  const std::string db = (dir.path / "r18.db").string();
  const auto trained = run_batchlab("train " + shell_quote(config) + " --db " + shell_quote(db));
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const std::string id = run_id_of(trained.output);
  const std::string out = (dir.path / "model.pt").string();
  const auto exported = run_batchlab("export --db " + shell_quote(db) + " --run " + id + " --out " +
                                     shell_quote(out));
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  const std::string conv = "torch.nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)";
  EXPECT_TRUE(contains(exported.output,
                       "torchvision.models.resnet18(num_classes=10) with conv1 "
                       "replaced by " +
                           conv + " and maxpool by torch.nn.Identity()"))
      << exported.output;

  const auto card = nlohmann::json::parse(read_text((dir.path / "model.json").string()));
  const auto& weights = card["weights"];
  EXPECT_EQ(weights["names"], "torchvision");
  EXPECT_TRUE(contains(weights["format"].get<std::string>(),
                       "load_state_dict(strict=True) into the module below"))
      << weights.dump(2);
  EXPECT_TRUE(contains(weights["module"].get<std::string>(),
                       "torchvision's own resnet18 (a 7x7 stride-2 conv1 on 3 channels, then a max "
                       "pool) refuses these weights"))
      << weights.dump(2);
  EXPECT_EQ(weights["python"],
            "import torch, torchvision\nmodel = torchvision.models.resnet18(num_classes=10)\n"
            "model.conv1 = " +
                conv + "\nmodel.maxpool = torch.nn.Identity()\n")
      << weights.dump(2);
}

}  // namespace
}  // namespace batchlab::cli
