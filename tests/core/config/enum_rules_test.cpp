// One test per enumerated key: a value outside the set is reported at the value, and the message
// lists the valid names.
#include <gtest/gtest.h>

#include "core/config/loader.h"
#include "tests/core/config/config_test_util.h"

namespace batchlab::config {
namespace {

using testing::doc;
using testing::expect_one;
using testing::parse_ok;

TEST(EnumRules, OptimName) {
  expect_one(doc("optim", "name = \"lasr\""), "optim.name", 3, 8,
             "must be one of sgd, nesterov, adam, adamw, lars, lamb, muon, schedulefree_adamw or "
             "lion; did you mean lars?");
}

TEST(EnumRules, OptimImplementation) {
  expect_one(doc("optim", "implementation = \"fused\""), "optim.implementation", 3, 18,
             "must be one of auto, foreach or per_tensor");
  EXPECT_EQ(
      parse_ok(doc("optim", "name = \"lamb\"\nimplementation = \"foreach\"")).optim.implementation,
      "foreach");
  EXPECT_EQ(parse_ok(doc("optim", "name = \"lars\"")).optim.implementation, "auto");
  // Only the optimizers batchlab implements have more than one implementation.
  expect_one(doc("optim", "implementation = \"foreach\""), "optim.implementation", 3, 18,
             "chooses the step code of lars, lamb, muon, schedulefree_adamw and lion only; "
             "optim.name = \"sgd\" is LibTorch's own: remove the key or set it to \"auto\"");
  for (const char* name : {"muon", "schedulefree_adamw", "lion"}) {
    EXPECT_EQ(parse_ok(doc("optim",
                           std::string("name = \"") + name + "\"\nimplementation = \"per_tensor\""))
                  .optim.implementation,
              "per_tensor")
        << name;
  }
}

TEST(EnumRules, OptimScaling) {
  expect_one(doc("optim", "scaling = \"quadratic\""), "optim.scaling", 3, 11,
             "must be one of none, linear or sqrt");
}

TEST(EnumRules, ScheduleDecay) {
  expect_one(doc("schedule", "decay = \"exponential\""), "schedule.decay", 3, 9,
             "must be one of constant, linear, poly, cosine or step");
}

TEST(EnumRules, TrainPrecision) {
  expect_one(doc("train", "precision = \"fp16\""), "train.precision", 3, 13,
             "must be one of fp32 or bf16");
}

TEST(EnumRules, TrainDevice) {
  expect_one(doc("train", "device = \"cuda:x\""), "train.device", 3, 10,
             "must be cpu, cuda or cuda:N");
  // The accepted spellings, for contrast.
  EXPECT_EQ(parse_ok(doc("train", "device = \"cuda:3\"")).train.device, "cuda:3");
  EXPECT_EQ(parse_ok(doc("train", "device = \"cuda\"")).train.device, "cuda");
}

TEST(EnumRules, TargetMetric) {
  expect_one(doc("train", "target = { metric = \"val_ac\", value = 0.9 }"),
             "train.target[0].metric", 3, 21,
             "must be one of val_acc, val_loss, test_acc, test_loss, train_acc or train_loss; did "
             "you mean val_acc?");
}

TEST(EnumRules, TrainFullEval) {
  expect_one(doc("train", "full_eval = \"last\""), "train.full_eval", 3, 13,
             "must be one of always or final");
  EXPECT_EQ(parse_ok(doc("train", "full_eval = \"final\"")).train.full_eval, "final");
  EXPECT_EQ(parse_ok(doc("train", "seed = 1")).train.full_eval, "always");
}

TEST(EnumRules, ModelArchAgainstRegistry) {
  LoadOptions options;
  options.model_archs = {"resnet18", "resnet50", "small_resnet"};
  expect_one(doc("model", "arch = \"resnet5\""), "model.arch", 3, 8,
             "must be one of resnet18, resnet50 or small_resnet", options);
  // Without a registry list any name passes: core/ cannot know the models.
  EXPECT_EQ(parse_ok(doc("model", "arch = \"resnet5\"")).model.arch, "resnet5");
}

TEST(EnumRules, DataDatasetAgainstRegistry) {
  LoadOptions options;
  options.datasets = {"fashion_mnist", "synthetic"};
  expect_one(doc("data", "dataset = \"mnist\""), "data.dataset", 3, 11,
             "must be one of fashion_mnist or synthetic", options);
}

TEST(EnumRules, AnArchitectureOfTheWrongFamilyForTheDataSet) {
  LoadOptions options;
  options.model_archs = {"small_resnet", "resnet50", "bert_tiny"};
  options.text_archs = {"bert_tiny"};
  options.datasets = {"synthetic", "text"};
  options.text_datasets = {"text"};
  expect_one(
      "schema_version = 1\n[model]\narch = \"bert_tiny\"\n[data]\ndataset = "
      "\"synthetic\"\n[batch]\nglobal = 256\n[schedule]\nepochs = 10\n",
      "model.arch", 3, 8,
      "a masked-language model; data.dataset = \"synthetic\" is an image data set: use "
      "one of small_resnet, resnet50",
      options);
  expect_one(
      "schema_version = 1\n[model]\narch = \"resnet50\"\n[data]\ndataset = "
      "\"text\"\n[batch]\nglobal = 256\n[schedule]\nepochs = 10\n",
      "model.arch", 3, 8,
      "an image classifier; data.dataset = \"text\" is text: use one of bert_tiny", options);
  EXPECT_EQ(parse_ok("schema_version = 1\n[model]\narch = \"bert_tiny\"\n[data]\ndataset = "
                     "\"text\"\n[batch]\nglobal = 256\n[schedule]\nepochs = 10\n",
                     options)
                .model.arch,
            "bert_tiny");
}

}  // namespace
}  // namespace batchlab::config
