#include "sweeps/slurm_check.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/errors.h"
#include "sweeps/process.h"
#include "sweeps/slurm_commands.h"

namespace batchlab::sweeps {

namespace {

namespace fs = std::filesystem;

// `sbatch --test-only` on a one-line job with `options`: its exit code and message.
SlurmAnswer test_only(const std::vector<SbatchOption>& options) {
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
  auto out = run_slurm_command({"sbatch", "--test-only", path.string()});
  std::error_code ec;
  fs::remove(path, ec);
  return out;
}

// A partition that is down or inactive (sinfo's availability column): Slurm queues jobs there
// without complaint, and they would wait until an administrator brings it up.
std::string partition_problem(const std::string& partition) {
  const SlurmAnswer answer = run_slurm_command({"sinfo", "-h", "-o", "%P|%a"});
  if (answer.code != 0) return "";  // sbatch --test-only has answered for the partition already
  std::istringstream lines(answer.out);
  std::string line;
  while (std::getline(lines, line)) {
    const auto bar = line.find('|');
    if (bar == std::string::npos) continue;
    std::string name = line.substr(0, bar);
    const bool is_default = !name.empty() && name.back() == '*';
    if (is_default) name.pop_back();
    const std::string state = line.substr(bar + 1);
    const bool wanted = partition.empty() ? is_default : name == partition;
    if (wanted && state != "up") {
      return fmt::format("partition {} is {} (sinfo); jobs would wait there until it is up", name,
                         state);
    }
  }
  return "";
}

}  // namespace

std::vector<SbatchOption> refused_options(const std::vector<SbatchOption>& options,
                                          std::string* message) {
  const auto all = test_only(options);
  if (all.code == 0) return {};
  // Not the options' fault: no sbatch, no Slurm configuration, no controller answering. sbatch's
  // own words say which.
  if (const SbatchFailure failure = classify_sbatch_failure(all);
      failure == SbatchFailure::missing || failure == SbatchFailure::transient) {
    throw Error(fmt::format(
        "{} ({}): {}; is this a Slurm submit host, with a Slurm configuration? Nothing was "
        "submitted and nothing recorded",
        describe(failure), "sbatch --test-only",
        all.message().empty() ? fmt::format("exit code {}", all.code) : all.message()));
  }
  if (message != nullptr) *message = all.message();
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
  if (refused.empty() && message.empty()) {
    if (const std::string down = partition_problem(options.partition); !down.empty()) {
      throw InputError(fmt::format(
          "{}{}: {}; nothing was submitted and nothing recorded: submit to a partition that "
          "is up (`sinfo` lists them) or when this one is",
          what, options.partition.empty() ? "" : " (--partition " + options.partition + ")", down));
    }
    return;
  }
  std::string names;
  for (const auto& option : refused) names += (names.empty() ? "" : ", ") + option.flag;
  throw InputError(fmt::format(
      "the Slurm cluster refuses {} with {} (sbatch --test-only: {}); nothing was submitted and "
      "nothing recorded: fix the option (`sinfo` lists the partitions and their limits) and "
      "submit again",
      what, names.empty() ? "its default options" : names, message));
}

}  // namespace batchlab::sweeps
