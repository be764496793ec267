// Weights in and out through the real binary, checked by PyTorch (issue 15): a torchvision
// resnet18 and a transformers BertForMaskedLM (a save_pretrained folder, issue 33) saved by Python
// start a run (model.init_from), the run takes 0 training steps, `batchlab export` writes its
// weights (the BERT as a save_pretrained folder, --format hf), and Python loads them strictly and
// gets identical logits. Also: a new 10-class head on a torchvision checkpoint trains
// (model.init_strict = false), bad files exit 2 naming the file and the tensor, the run id
// follows the file's contents, and export refuses what it cannot do with exit 2.
//
// The peers (tests/cli/hf_interchange.py) run under the Python whose torch batchlab links
// (test_paths::peer_python(): .venv/bin/python), so torch.save and batchlab read and write one
// format.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "models/small_resnet.h"
#include "models/state_dict.h"
#include "tests/cli/cli_runner.h"
#include "tests/experiments/data/text_test_util.h"
#include "tests/test_paths.h"

namespace batchlab::cli {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using testing::read_text;
using testing::run_batchlab;
using testing::run_id_of;
using testing::shell_quote;
using testing::TempDir;
using testing::write_fake_cifar10;

const std::string kScript = std::string(test_paths::source_dir()) + "/tests/cli/hf_interchange.py";
constexpr int kBertVocab = 300;
constexpr int kBertPositions = 32;

CommandResult run_python(const std::string& args) {
  const std::string cmd =
      shell_quote(test_paths::peer_python()) + " " + shell_quote(kScript) + " " + args + " 2>&1";
  CommandResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class ExportCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("export");
    const auto save = [](const std::string& args) {
      const auto r = run_python(args);
      if (r.exit_code != 0) python_problem_ += "hf_interchange.py " + args + ":\n" + r.output;
      return r.exit_code;
    };
    if (save("save-resnet18 " + shell_quote(path("resnet18.pt")) + " " +
             shell_quote(path("resnet18_io.pt"))) == 3) {
      python_missing_ = true;
      return;
    }
    save("save-bert " + shell_quote(path("bert_hf")) + " " + shell_quote(path("bert_io.pt")) + " " +
         std::to_string(kBertVocab) + " " + std::to_string(kBertPositions));
    save("save-list " + shell_quote(path("list.pt")));
    save("save-torchscript " + shell_quote(path("scripted.pt")));
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (python_missing_) {
      FAIL() << test_paths::peer_python()
             << " cannot import torch/torchvision/timm/safetensors/transformers: run "
                "bash scripts/setup.sh (it installs the pinned wheels into .venv/)";
    }
    ASSERT_TRUE(python_problem_.empty()) << python_problem_;
  }

  static std::string path(const std::string& name) { return (dir_->path / name).string(); }

  static std::string write_config(const std::string& name, const std::string& text) {
    return dir_->file(name, "schema_version = 1\n" + text);
  }

  static CommandResult train(const std::string& config, const std::string& db,
                             const std::string& extra = "") {
    return run_batchlab("train " + shell_quote(config) + " --db " + shell_quote(db) + extra);
  }

  static CommandResult export_run(const std::string& db, const std::string& run,
                                  const std::string& out, const std::string& extra = "") {
    return run_batchlab("export --db " + shell_quote(db) + " --run " + run + " --out " +
                        shell_quote(out) + extra);
  }

  // resnet18 with torchvision's ImageNet stem and 1000 classes on the fake CIFAR-10, starting
  // from `init`: 0 steps, a checkpoint at the end.
  static std::string resnet18_config(const std::string& name, const std::string& init,
                                     const std::string& extra_model = "") {
    write_fake_cifar10(dir_->path / "cifar");
    return write_config(name,
                        "[model]\narch = \"resnet18\"\nstem = \"imagenet\"\n"
                        "num_classes = 1000\ninit_from = \"" +
                            init + "\"\n" + extra_model +
                            "[data]\ndataset = \"cifar10\"\npath = \"" + path("cifar") +
                            "\"\neval_train_samples = 8\n"
                            "[batch]\nglobal = 4\n"
                            "[optim]\nname = \"sgd\"\nbase_lr = 0.1\nbase_batch = 4\n"
                            "[schedule]\nsteps = 0\n"
                            "[train]\nthreads = 1\ncheckpoint_every = 1\n");
  }

  static inline TempDir* dir_ = nullptr;
  static inline bool python_missing_ = false;
  static inline std::string python_problem_;
};

TEST_F(ExportCli, TorchvisionResNet18RoundTripsWithIdenticalLogits) {
  const auto config = resnet18_config("resnet18.toml", path("resnet18.pt"));
  const auto db = path("resnet18.db");
  const auto trained = train(config, db);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  EXPECT_NE(trained.output.find("all 122 parameters and buffers loaded"), std::string::npos)
      << trained.output;
  const std::string id = run_id_of(trained.output);
  ASSERT_FALSE(id.empty()) << trained.output;

  const auto out = path("exported_resnet18.pt");
  const auto exported = export_run(db, id, out);
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  EXPECT_NE(exported.output.find("checkpoint final = step 0"), std::string::npos)
      << exported.output;
  EXPECT_NE(exported.output.find("torchvision names"), std::string::npos) << exported.output;

  const auto check =
      run_python("check-resnet18 " + shell_quote(out) + " " + shell_quote(path("resnet18_io.pt")));
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_NE(check.output.find("OK resnet18: 122 entries loaded strictly, logits identical"),
            std::string::npos)
      << check.output;

  // The card beside the weights: run, checkpoint, config (with the file's hash), metrics.
  const auto card = nlohmann::json::parse(read_text(path("exported_resnet18.json")));
  EXPECT_EQ(card["run"]["run_id"], id);
  EXPECT_EQ(card["run"]["status"], "done");
  EXPECT_TRUE(card["run"].contains("git_sha"));
  EXPECT_EQ(card["checkpoint"]["which"], "final");
  EXPECT_EQ(card["checkpoint"]["step"], 0);
  EXPECT_EQ(card["weights"]["tensors"], 122);
  EXPECT_NE(card["config_toml"].get<std::string>().find("init_sha256 = \""), std::string::npos);
  // The 0-step run was evaluated once, at its starting weights.
  EXPECT_EQ(card["metrics"]["final_eval"]["step"], 0);
  EXPECT_TRUE(card["metrics"]["final_eval"]["test_loss"].is_number()) << card.dump(2);
}

TEST_F(ExportCli, TransformersBertFolderRoundTripsWithIdenticalLogits) {
  data::testing::ScratchDir text("export-text");
  data::testing::write_text_corpus(text.path / "corpus", 10, 40);
  ::setenv("BATCHLAB_CACHE_DIR", (text / "cache").c_str(), 1);
  const auto config = write_config(
      "bert.toml", "[model]\narch = \"bert_tiny\"\nvocab_size = " + std::to_string(kBertVocab) +
                       "\nmax_seq_len = " + std::to_string(kBertPositions) + "\ninit_from = \"" +
                       path("bert_hf") +
                       "\"\n"
                       "[data]\ndataset = \"text\"\npath = \"" +
                       (text / "corpus") +
                       "\"\nseq_len = 32\neval_train_samples = 16\n"
                       "[batch]\nglobal = 8\n"
                       "[optim]\nname = \"adamw\"\nbase_lr = 0.001\nbase_batch = 8\n"
                       "[schedule]\nsteps = 0\n"
                       "[train]\nthreads = 1\ncheckpoint_every = 1\n");
  const auto db = path("bert.db");
  const auto trained = train(config, db);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const std::string id = run_id_of(trained.output);
  ASSERT_NE(trained.output.find("all " /* every tensor came from the folder */), std::string::npos)
      << trained.output;
  const auto out = path("exported_bert");
  const auto exported = export_run(db, id, out, " --format hf");
  ::unsetenv("BATCHLAB_CACHE_DIR");
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  EXPECT_NE(exported.output.find("huggingface names"), std::string::npos) << exported.output;
  for (const char* file : {"config.json", "model.safetensors", "tokenizer.json",
                           "tokenizer_config.json", "batchlab_card.json"}) {
    EXPECT_TRUE(fs::exists(fs::path(out) / file)) << file;
  }

  const auto check =
      run_python("check-bert " + shell_quote(out) + " " + shell_quote(path("bert_io.pt")));
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_NE(check.output.find("OK bert"), std::string::npos) << check.output;
}

TEST_F(ExportCli, TorchvisionCheckpointWithANewTenClassHeadTrainsWhenNotStrict) {
  // Fashion-MNIST-sized input (1x28x28, 10 classes): conv1 and fc cannot come from the 3-channel,
  // 1000-class torchvision file.
  const auto config = write_config(
      "head.toml", "[model]\narch = \"resnet18\"\nstem = \"imagenet\"\ninit_from = \"" +
                       path("resnet18.pt") +
                       "\"\n"
                       "[data]\ndataset = \"synthetic\"\ntrain_size = 256\ntest_size = 64\n"
                       "eval_train_samples = 64\n"
                       "[batch]\nglobal = 32\n"
                       "[optim]\nname = \"sgd\"\nbase_lr = 0.05\nbase_batch = 32\n"
                       "[schedule]\nsteps = 4\n"
                       "[train]\nthreads = 1\n");
  const auto db = path("head.db");
  const auto strict = train(config, db);
  EXPECT_EQ(strict.exit_code, 2) << strict.output;
  EXPECT_NE(strict.output.find(path("resnet18.pt")), std::string::npos) << strict.output;
  EXPECT_NE(strict.output.find("conv1.weight (file [64, 3, 7, 7], model [64, 1, 7, 7])"),
            std::string::npos)
      << strict.output;
  EXPECT_NE(strict.output.find("fc.weight (file [1000, 512], model [10, 512])"), std::string::npos)
      << strict.output;
  EXPECT_NE(strict.output.find("model.init_strict = false"), std::string::npos) << strict.output;
  EXPECT_FALSE(fs::exists(db)) << "bad input must not create the database";

  const auto loose = train(config, db, " --set model.init_strict=false");
  ASSERT_EQ(loose.exit_code, 0) << loose.output;
  EXPECT_NE(loose.output.find("119 of 122 parameters and buffers loaded"), std::string::npos)
      << loose.output;
  EXPECT_NE(loose.output.find("left at their initialization (3): conv1.weight"), std::string::npos)
      << loose.output;
  EXPECT_NE(loose.output.find("fc.bias (file [1000], model [10])"), std::string::npos)
      << loose.output;
  const auto rows = run_batchlab("query --format csv --db " + shell_quote(db) +
                                 " \"SELECT (SELECT status FROM runs) || ',' || count(*) || ',' "
                                 "|| sum(train_loss > 0 AND train_loss < 20) FROM steps\"");
  EXPECT_NE(rows.output.find("done,4,4"), std::string::npos) << rows.output;
}

TEST_F(ExportCli, BadStartingFilesExitTwoNamingTheFile) {
  const auto text = dir_->file("notes.txt", "these are not weights\n");
  const auto bytes = read_text(path("resnet18.pt"));
  const auto truncated = path("truncated.pt");
  std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {text, "not a torch.save archive"},
      {truncated, "truncated"},
      {path("list.pt"), "holds a GenericList, not a state_dict"},
      {path("scripted.pt"), "a TorchScript archive (torch.jit.save), not a state_dict"},
      {path("missing.pt"), "no such file"},
  };
  for (const auto& [file, why] : cases) {
    const auto config = resnet18_config("bad.toml", file);
    const auto db = path("bad.db");
    const auto r = train(config, db);
    EXPECT_EQ(r.exit_code, 2) << file << "\n" << r.output;
    EXPECT_NE(r.output.find(file), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(why), std::string::npos) << why << "\n" << r.output;
    EXPECT_FALSE(fs::exists(db)) << file;
  }
}

// A small_resnet on the synthetic data set (Fashion-MNIST-sized) starting from `init`.
std::string small_config(const std::string& init, const std::string& extra = "") {
  return "[model]\narch = \"small_resnet\"\nwidth = 8\n" +
         (init.empty() ? std::string() : "init_from = \"" + init + "\"\n") +
         "[data]\ndataset = \"synthetic\"\ntrain_size = 256\ntest_size = 64\n"
         "eval_train_samples = 64\n" +
         extra +
         "[batch]\nglobal = 64\n"
         "[optim]\nname = \"sgd\"\nbase_lr = 0.05\nbase_batch = 64\n"
         "[schedule]\nsteps = 8\n"
         "[train]\nthreads = 1\ncheckpoint_every = 100\n";
}

TEST_F(ExportCli, RunIdFollowsTheStartingFilesContents) {
  // The same path holding other weights (same size) is another run; the first id no longer fits.
  const auto init = path("small.pt");
  const auto save_small = [&](uint64_t seed) {
    torch::manual_seed(seed);
    models::SmallResNetOptions o;
    o.width = 8;
    models::save_state_dict(models::SmallResNet(o), init);
  };
  const auto config = write_config("small.toml", small_config(init));
  const auto db = path("small.db");
  save_small(1);
  const auto first = train(config, db, " --set schedule.steps=0");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("all 68 parameters and buffers loaded"), std::string::npos)
      << first.output;
  save_small(2);
  const auto second = train(config, db, " --set schedule.steps=0");
  ASSERT_EQ(second.exit_code, 0) << second.output;
  ASSERT_FALSE(run_id_of(first.output).empty());
  EXPECT_NE(run_id_of(first.output), run_id_of(second.output));
  const auto stale =
      train(config, db, " --set schedule.steps=0 --run-id " + run_id_of(first.output));
  EXPECT_EQ(stale.exit_code, 2) << stale.output;
}

TEST_F(ExportCli, ExportRefusesWhatItCannotDoWithExitTwo) {
  const auto config = write_config("plain.toml", small_config(""));
  const auto db = path("plain.db");
  const auto trained = train(config, db);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const std::string id = run_id_of(trained.output);
  const auto out = path("plain.pt");

  const auto unknown = export_run(db, "0123456789abcdef", out);
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("--run 0123456789abcdef: no such run"), std::string::npos)
      << unknown.output;
  const auto step = export_run(db, id, out, " --checkpoint 5");
  EXPECT_EQ(step.exit_code, 2) << step.output;
  EXPECT_NE(step.output.find("no checkpoint of step 5"), std::string::npos) << step.output;
  EXPECT_NE(step.output.find("kept: steps 8"), std::string::npos) << step.output;
  const auto best = export_run(db, id, out, " --checkpoint best");
  EXPECT_EQ(best.exit_code, 2) << best.output;
  EXPECT_NE(best.output.find("no validation split (data.val_size = 0)"), std::string::npos)
      << best.output;
  const auto word = export_run(db, id, out, " --checkpoint last");
  EXPECT_EQ(word.exit_code, 2) << word.output;
  const auto elsewhere = export_run(db, id, out, " --checkpoint-dir " + shell_quote(path("none")));
  EXPECT_EQ(elsewhere.exit_code, 2) << elsewhere.output;
  EXPECT_NE(elsewhere.output.find("has no checkpoint in"), std::string::npos) << elsewhere.output;
  EXPECT_FALSE(fs::exists(out));

  // The step that is kept exports.
  const auto kept = export_run(db, id, out, " --checkpoint 8");
  EXPECT_EQ(kept.exit_code, 0) << kept.output;
  EXPECT_NE(kept.output.find("batchlab names"), std::string::npos) << kept.output;
}

TEST_F(ExportCli, BestExportsTheWeightsOfTheLowestValidationLoss) {
  const auto config = write_config("val.toml", small_config("", "val_size = 64\n"));
  const auto db = path("val.db");
  const auto trained = train(config, db);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const std::string id = run_id_of(trained.output);
  const auto out = path("best.pt");
  const auto best = export_run(db, id, out, " --checkpoint best");
  ASSERT_EQ(best.exit_code, 0) << best.output;
  const auto card = nlohmann::json::parse(read_text(path("best.json")));
  EXPECT_EQ(card["checkpoint"]["best_metric"], "val_loss");
  const auto lowest = run_batchlab("query --format csv --db " + shell_quote(db) +
                                   " \"SELECT step FROM evals ORDER BY val_loss, step LIMIT 1\"");
  EXPECT_NE(lowest.output.find("\n" + std::to_string(card["checkpoint"]["step"].get<int>()) + "\n"),
            std::string::npos)
      << lowest.output << card.dump(2);
  EXPECT_EQ(card["metrics"]["checkpoint_eval"]["step"], card["checkpoint"]["step"]);
}

}  // namespace
}  // namespace batchlab::cli
