// A GPT-2-family causal LM in and out of Hugging Face transformers, through the real binary and
// checked by the real library (issue 44; the peer is tests/cli/hf_interchange.py under .venv's
// Python, with the pinned transformers):
//   - gpt2_tiny trained a few AdamW steps on Python documentation and exported with --format hf
//     gives GPT2LMHeadModel.from_pretrained the logits batchlab computes from its checkpoint, and
//     the .safetensors export loads strictly into a GPT2LMHeadModel;
//   - a random GPT2LMHeadModel saved with save_pretrained starts a run through model.init_from:
//     batchlab's logits on its weights agree with transformers', and exported again after 0 steps
//     the folder gives transformers bit-identical logits;
//   - a folder of another shape exits 2 with every difference listed, before anything is written.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "core/train/checkpoint.h"
#include "experiments/tasks/initial_weights.h"
#include "models/registry.h"
#include "models/safetensors.h"
#include "tests/cli/cli_runner.h"
#include "tests/cli/hf_suite_setup.h"

namespace batchlab::cli {
namespace {

namespace fs = std::filesystem;
using testing::run_batchlab;
using testing::run_hf_peer;
using testing::run_id_of;
using testing::shell_quote;
using testing::TempDir;

constexpr int kGptVocab = 1024;
constexpr int kGptContext = 64;
// float32 on the same CPU through different kernels (LibTorch's fused causal attention and tanh
// GELU against transformers' own): logits of size ~1 agree far closer than this.
constexpr const char* kGptTolerance = "1e-5";

config::ModelConfig gpt2_tiny() {
  config::ModelConfig model;
  model.arch = "gpt2_tiny";
  model.max_seq_len = kGptContext;
  model.dropout = 0.0;
  return model;
}

class HfGpt2Cli : public ::testing::Test {
 protected:
  // One tokenizer and one gpt2_tiny trained 5 AdamW steps, exported as a save_pretrained folder.
  static void SetUpTestSuite() {
    dir_ = new TempDir("hf-gpt2");
    problem_ =
        testing::prepare_docs_and_tokenizer(*dir_, {"json", "os", "re", "string"}, kGptVocab);
    if (!problem_.empty()) return;
    const auto run = testing::train_and_export_hf(*dir_, config("gpt.toml", "", 5), "gpt.db");
    problem_ = run.problem;
    run_id_ = run.run_id;
    export_output_ = run.export_output;
  }
  static void TearDownTestSuite() {
    ::unsetenv("BATCHLAB_CACHE_DIR");
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(problem_.empty()) << problem_; }

  static std::string path(const std::string& name) { return (dir_->path / name).string(); }

  // gpt2_tiny on the documents with the tokenizer, `steps` AdamW steps, checkpoints on.
  static std::string config(const std::string& name, const std::string& model_extra, int steps) {
    const std::string context = std::to_string(kGptContext);
    return dir_->file(
        name, "schema_version = 1\n[model]\narch = \"gpt2_tiny\"\nmax_seq_len = " + context +
                  "\ndropout = 0.0\n" + model_extra + "[data]\ndataset = \"text\"\npath = \"" +
                  path("docs") + "\"\ntokenizer = \"" + path("tok.model") +
                  "\"\nseq_len = " + context +
                  "\neval_train_samples = 16\ntest_size = 16\n[batch]\nglobal = 8\n"
                  "[optim]\nname = \"adamw\"\nbase_lr = 0.003\nbase_batch = 8\n"
                  "[schedule]\nsteps = " +
                  std::to_string(steps) + "\n[train]\nthreads = 1\ncheckpoint_every = " +
                  std::to_string(std::max(steps, 1)) + "\n");
  }

  // The newest checkpoint file under `dir`/checkpoints (one run trained there).
  static std::string checkpoint_of(const std::string& run_id) {
    for (const auto& e : fs::recursive_directory_iterator(path("checkpoints"))) {
      if (e.path().filename().string().rfind("ckpt-", 0) == 0 &&
          e.path().string().find(run_id) != std::string::npos) {
        return e.path().string();
      }
    }
    return "";
  }

  static void write_logits(const std::string& file, const torch::Tensor& ids,
                           const torch::Tensor& logits) {
    const auto bytes = models::safetensors_bytes({{"input_ids", ids}, {"logits", logits}}, {});
    std::ofstream(file, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  static inline TempDir* dir_ = nullptr;
  static inline std::string problem_;
  static inline std::string run_id_;
  static inline std::string export_output_;
};

TEST_F(HfGpt2Cli, Gpt2LMHeadModelGivesTheLogitsBatchlabComputesFromItsCheckpoint) {
  // batchlab's own forward, on the weights of the run's last checkpoint (not of the export).
  auto net = models::make_causal_lm(gpt2_tiny(), kGptVocab);
  const std::string checkpoint = checkpoint_of(run_id_);
  ASSERT_FALSE(checkpoint.empty());
  ASSERT_EQ(train::load_model_weights(checkpoint, run_id_, *net), 5);
  net->eval();
  torch::manual_seed(5);
  const auto ids = torch::randint(5, kGptVocab, {2, kGptContext}, torch::kLong);
  torch::NoGradGuard no_grad;
  write_logits(path("batchlab_logits.safetensors"), ids, net->forward(ids));
  const auto check = run_hf_peer("compare-logits " + shell_quote(path("hf")) + " " +
                                 shell_quote(path("batchlab_logits.safetensors")) + " " +
                                 kGptTolerance + " GPT2LMHeadModel");
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_NE(check.output.find("OK logits"), std::string::npos) << check.output;
  std::cout << check.output;  // the measured difference, for the record
  EXPECT_NE(export_output_.find("GPT2LMHeadModel.from_pretrained(DIR)"), std::string::npos)
      << export_output_;
  // config.json names GPT-2's classes and the run's sizes.
  std::ifstream in(path("hf") + "/config.json");
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* key :
       {"\"GPT2LMHeadModel\"", "\"model_type\": \"gpt2\"", "\"n_layer\": 2", "\"n_embd\": 128",
        "\"n_positions\": 64", "\"vocab_size\": 1024", "\"activation_function\": \"gelu_new\""}) {
    EXPECT_NE(json.find(key), std::string::npos) << key << "\n" << json;
  }
}

TEST_F(HfGpt2Cli, TheSafetensorsExportLoadsStrictlyIntoGpt2LMHeadModel) {
  const auto out = path("gpt.safetensors");
  const auto exported = run_batchlab("export --db " + shell_quote(path("gpt.db")) + " --run " +
                                     run_id_ + " --out " + shell_quote(out));
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  const auto check = run_hf_peer("check-gpt2-state " + shell_quote(out) + " " +
                                 std::to_string(kGptVocab) + " " + std::to_string(kGptContext));
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_NE(check.output.find("OK gpt2 state"), std::string::npos) << check.output;
}

TEST_F(HfGpt2Cli, ATransformersFolderStartsARunAndComesBackWithIdenticalLogits) {
  const auto saved = run_hf_peer("save-gpt2 " + shell_quote(path("random_hf")) + " " +
                                 shell_quote(path("random_io.safetensors")) + " " +
                                 std::to_string(kGptVocab) + " " + std::to_string(kGptContext));
  ASSERT_EQ(saved.exit_code, 0) << saved.output;
  // batchlab's forward on the folder's weights, as model.init_from loads them.
  config::ModelConfig model = gpt2_tiny();
  model.init_from = path("random_hf");
  auto net = models::make_causal_lm(model, kGptVocab);
  experiments::load_initial_weights(*net, model);
  net->eval();
  const auto io = models::read_safetensors(path("random_io.safetensors"));
  torch::Tensor ids, logits;
  for (const auto& [name, tensor] : io.tensors) (name == "input_ids" ? ids : logits) = tensor;
  torch::NoGradGuard no_grad;
  const double diff = (net->forward(ids) - logits).abs().max().item<double>();
  EXPECT_LT(diff, std::stod(kGptTolerance)) << "batchlab vs transformers on the folder's weights";
  std::cout << "batchlab vs transformers on a save_pretrained folder: max abs diff " << diff
            << " (largest logit " << logits.abs().max().item<double>() << ")\n";

  // Through the binary: the folder starts a run (every tensor from it), 0 steps, exported again.
  const auto db = path("random.db");
  const auto trained = run_batchlab(
      "train " +
      shell_quote(config("random.toml", "init_from = \"" + path("random_hf") + "\"\n", 0)) +
      " --db " + shell_quote(db));
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  EXPECT_NE(trained.output.find("parameters and buffers loaded (SHA-256"), std::string::npos)
      << trained.output;
  const auto exported =
      run_batchlab("export --db " + shell_quote(db) + " --run " + run_id_of(trained.output) +
                   " --format hf --out " + shell_quote(path("random_back")));
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  const auto check = run_hf_peer("check-gpt2 " + shell_quote(path("random_back")) + " " +
                                 shell_quote(path("random_io.safetensors")));
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_NE(check.output.find("logits identical"), std::string::npos) << check.output;
}

TEST_F(HfGpt2Cli, AFolderOfAnotherShapeIsRefusedWithEveryDifference) {
  ASSERT_TRUE(fs::exists(path("hf") + "/config.json"));
  // gpt2_mini, 128 positions, against the exported gpt2_tiny folder: four keys disagree.
  const auto db = path("mini.db");
  const auto r = run_batchlab(
      "train " + shell_quote(config("mini.toml", "init_from = \"" + path("hf") + "\"\n", 0)) +
      " --db " + shell_quote(db) + " --set model.arch=gpt2_mini --set model.max_seq_len=128");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  for (const char* line :
       {"its config.json describes another network than the experiment's (4 differences)",
        "n_embd: config.json 128, the experiment 256 (model.arch = \"gpt2_mini\")",
        "n_layer: config.json 2, the experiment 4", "n_head: config.json 2, the experiment 4",
        "n_positions: config.json 64, the experiment 128 (model.max_seq_len)"}) {
    EXPECT_NE(r.output.find(line), std::string::npos) << line << "\n" << r.output;
  }
  EXPECT_FALSE(fs::exists(db)) << "bad input must not create the database";
}

}  // namespace
}  // namespace batchlab::cli
