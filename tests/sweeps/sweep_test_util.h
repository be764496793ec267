// Helpers for the sweep tests: a scratch folder with a base experiment and a spec, and plan options
// that know the synthetic data set's size the way the CLI does.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "core/errors.h"
#include "sweeps/expand.h"
#include "sweeps/spec.h"
#include "tests/cli/cli_runner.h"

namespace batchlab::sweeps::testing {

using cli::testing::contains;

// A base experiment on the synthetic data: 1000 training samples, global 64 as 2 x 32.
inline const char* kBase = R"(schema_version = 1
[model]
arch = "small_resnet"
width = 8
[data]
dataset = "synthetic"
train_size = 1000
test_size = 256
eval_train_samples = 256
[batch]
global = 64
micro = 32
[optim]
name = "sgd"
base_lr = 0.5
base_batch = 256
scaling = "sqrt"
[schedule]
warmup_epochs = 1
epochs = 2
[train]
threads = 1
)";

inline PlanOptions plan_options() {
  PlanOptions options;
  options.train_size = [](const config::DataConfig& data) {
    TrainSize size;
    if (data.dataset == "synthetic") size.samples = data.train_size > 0 ? data.train_size : 4096;
    return size;
  };
  return options;
}

// Writes base.toml and spec.toml (the spec's text gets `experiment = "base.toml"` prepended to
// its [sweep] table by the caller) and expands it.
struct SweepFiles {
  cli::testing::TempDir dir{"sweep"};
  std::string spec_path;

  explicit SweepFiles(const std::string& spec_text, const std::string& base = kBase) {
    dir.file("base.toml", base);
    spec_path = dir.file("spec.toml", spec_text);
  }
  SweepSpec spec() const { return load_sweep_spec(spec_path); }
  Plan plan() const { return expand(spec(), plan_options()); }
};

// The message of the ConfigError that `fn` throws ("" and a test failure when it throws none).
template <class Fn>
std::string config_error(Fn fn) {
  try {
    fn();
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ConfigError";
  return "";
}

}  // namespace batchlab::sweeps::testing
