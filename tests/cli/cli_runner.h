// Runs the built `batchlab` binary as a user would and captures its exit code and output.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "tests/temp_dir.h"
#include "tests/test_paths.h"

namespace batchlab::cli::testing {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs a shell command line and captures its stdout (add 2>&1 for stderr too) and exit code.
inline CommandResult run_shell(const std::string& cmd) {
  CommandResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// `args` are already shell-quoted where needed. With `merge_stderr` false, stderr is discarded and
// `output` is stdout alone.
inline CommandResult run_batchlab(const std::string& args, bool merge_stderr = true) {
  return run_shell(std::string(test_paths::binary()) + " " + args +
                   (merge_stderr ? " 2>&1" : " 2>/dev/null"));
}

using TempDir = test_support::TempDir;

// The run id `batchlab train` prints ("run 0123456789abcdef"), or "" when it printed none.
inline std::string run_id_of(const std::string& output) {
  std::smatch m;
  if (std::regex_search(output, m, std::regex("run ([0-9a-f]{16})"))) return m[1];
  return "";
}

// A whole file as text ("" when it cannot be read).
inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// `batchlab query --format csv` on `db`: the header line, then a line per row.
inline std::string query_csv(const std::string& db, const std::string& sql) {
  return run_batchlab("query --format csv --db " + shell_quote(db) + " " + shell_quote(sql)).output;
}

// A CIFAR-10 binary distribution of 4 images per training file and 4 test images: 3x32x32
// inputs, so torchvision's resnet18 fits unchanged.
inline void write_fake_cifar10(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, int first) {
    std::ofstream out(dir / name, std::ios::binary);
    for (int r = 0; r < 4; ++r) {
      out.put(static_cast<char>((first + r) % 10));
      for (int i = 0; i < 3072; ++i) out.put(static_cast<char>((first * 31 + r * 7 + i) % 251));
    }
  };
  for (int i = 1; i <= 5; ++i) write("data_batch_" + std::to_string(i) + ".bin", 4 * (i - 1));
  write("test_batch.bin", 50);
}

// A tiny, fast experiment on the synthetic data set (a second or two on 2 cores).
inline const char* kTinyConfig = R"(schema_version = 1
[model]
arch = "small_resnet"
width = 8
[data]
dataset = "synthetic"
train_size = 512
test_size = 256
eval_train_samples = 256
[batch]
global = 64
micro = 32
[optim]
name = "sgd"
base_lr = 0.05
[schedule]
epochs = 2
[train]
threads = 1
)";

}  // namespace batchlab::cli::testing
