#include "sweeps/slurm_check.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/errors.h"
#include "sweeps/process.h"

namespace batchlab::sweeps {

namespace {

namespace fs = std::filesystem;

// sbatch's exit code when the shell cannot find or run it.
constexpr int kCommandNotFound = 127;

// `sbatch --test-only` on a one-line job with `options`: its exit code and message.
CommandOutput test_only(const std::vector<SbatchOption>& options) {
  const char* tmp = std::getenv("TMPDIR");
  const fs::path path = fs::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") /
                        fmt::format("batchlab-sbatch-test-{}.sh", ::getpid());
  {
    std::ofstream script(path);
    script << "#!/bin/bash\n";
    for (const auto& option : options) script << "#SBATCH " << option.argument << "\n";
    script << "true\n";
    if (!script) throw Error(fmt::format("cannot write {}", path.string()));
  }
  auto out = capture_command("sbatch --test-only " + shell_quote(path.string()));
  std::error_code ec;
  fs::remove(path, ec);
  return out;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

std::vector<SbatchOption> refused_options(const std::vector<SbatchOption>& options,
                                          std::string* message) {
  const auto all = test_only(options);
  if (all.code == 0) return {};
  if (all.code < 0 || all.code == kCommandNotFound) {
    throw Error(
        fmt::format("cannot run sbatch to check the job's options ({}): is this a Slurm "
                    "submit host? {}",
                    all.code < 0 ? "not run" : "command not found", trimmed(all.output)));
  }
  if (message != nullptr) *message = trimmed(all.output);
  std::vector<SbatchOption> refused;
  for (const auto& option : options) {
    if (test_only({option}).code != 0) refused.push_back(option);
  }
  // Refused only together (a time above this partition's limit): all of them are the culprit.
  return refused.empty() ? options : refused;
}

void check_slurm_resources(const SlurmOptions& options, const std::string& what) {
  std::string message;
  const auto refused = refused_options(sbatch_options(options), &message);
  if (refused.empty() && message.empty()) return;
  std::string names;
  for (const auto& option : refused) names += (names.empty() ? "" : ", ") + option.flag;
  throw InputError(fmt::format(
      "the Slurm cluster refuses {} with {} (sbatch --test-only: {}); nothing was submitted and "
      "nothing recorded: fix the option (`sinfo` lists the partitions and their limits) and "
      "submit again",
      what, names.empty() ? "its default options" : names, message));
}

}  // namespace batchlab::sweeps
