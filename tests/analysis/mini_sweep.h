// A small database built by a real sweep (`batchlab sweep run`): 2 optimizers x 2 batch sizes x 2
// base LRs x 2 seeds of a tiny synthetic experiment with a held-out validation split (the report
// selects LRs on it), layer statistics, the noise scale, evaluations every half epoch and a
// test-accuracy target (640 training examples, 128 of them held out; 4 epochs, so that every seed
// of some LRs reaches it) — about 20 s on 2 idle cores. Built once per batchlab binary and shared
// (under a file lock) by every test process of the analysis suite, since CTest runs each test in
// its own process.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/cli/cli_runner.h"
#include "tests/test_paths.h"

namespace batchlab::analysis::testing {

// The base experiment: the CLI tests' tiny synthetic job (cli_runner.h kTinyConfig).

inline const char* kMiniSpecBody = R"(seeds = [0, 1]
[set]
"data.train_size" = 640
"schedule.epochs" = 4
"data.val_size" = 128
"train.layer_stats_every" = 4
"train.noise_scale" = true
"train.eval_every" = 0.5
"train.target" = { metric = "test_acc", value = 0.2 }
[grid]
"optim.name" = ["sgd", "lamb"]
"batch.global" = [64, 128]
"optim.base_lr" = [0.01, 0.05]
)";

inline constexpr int kMiniJobs = 16;

// Path of the database; builds it first when this binary has not yet. Fails the calling test when
// the sweep does not finish.
inline std::string mini_sweep_db() {
  namespace fs = std::filesystem;
  struct stat st {};
  ::stat(test_paths::binary(), &st);
  const fs::path dir =
      fs::temp_directory_path() / ("batchlab-analysis-" + std::to_string(st.st_mtime) + "-" +
                                   std::to_string(st.st_size) + "-" + std::to_string(::getuid()));
  fs::create_directories(dir);
  const std::string db = (dir / "mini.db").string();
  const int lock = ::open((dir / "lock").c_str(), O_CREAT | O_RDWR, 0644);
  ::flock(lock, LOCK_EX);
  if (!fs::exists(dir / "complete")) {
    fs::remove(db);
    std::ofstream(dir / "base.toml") << cli::testing::kTinyConfig;
    std::ofstream(dir / "spec.toml") << "schema_version = 1\n[sweep]\nname = \"mini\"\n"
                                     << "experiment = \"base.toml\"\nresults = \"" << db << "\"\n"
                                     << kMiniSpecBody;
    const auto r = cli::testing::run_batchlab(
        "sweep run " + cli::testing::shell_quote((dir / "spec.toml").string()) + " --workers 2");
    if (r.exit_code == 0) std::ofstream(dir / "complete") << "ok\n";
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
  ::flock(lock, LOCK_UN);
  ::close(lock);
  return db;
}

}  // namespace batchlab::analysis::testing
