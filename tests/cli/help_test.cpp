// Every command and subcommand answers --help and -h with its usage on stdout and exit 0, before
// any other argument is looked at (DESIGN.md "Command line"). The commands are discovered from the
// real binary's own usage texts, so a command added later is covered without editing this file;
// a fixed list below makes sure the discovery itself cannot quietly find nothing.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>

#include "tests/cli/cli_runner.h"

namespace batchlab::cli {
namespace {

using testing::CommandResult;
using testing::run_batchlab;

// Only what the command writes to stdout (help is an answer, not a diagnostic).
CommandResult run_stdout_only(const std::string& args) {
  return run_batchlab(args, /*merge_stderr=*/false);
}

// Subcommand words of a usage text: lines indented by exactly two spaces ("  plan SWEEP.toml ...").
std::vector<std::string> listed_words(const std::string& usage) {
  std::vector<std::string> out;
  std::istringstream lines(usage);
  const std::regex entry("^  ([a-z][a-z-]*)\\b.*");
  std::smatch m;
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_match(line, m, entry)) out.push_back(m[1]);
  }
  return out;
}

// "sweep run" -> checks that `batchlab sweep run FLAG` prints "usage: batchlab sweep run" on stdout
// and exits 0; returns the output.
std::string expect_help(const std::string& command, const char* flag = "--help") {
  const auto r = run_stdout_only(command + " " + flag);
  EXPECT_EQ(r.exit_code, 0) << "batchlab " << command << " " << flag << "\n" << r.output;
  EXPECT_NE(r.output.find("usage: batchlab " + command), std::string::npos)
      << "batchlab " << command << " " << flag << " printed no usage line naming the command:\n"
      << r.output;
  return r.output;
}

// Commands with subcommands show a placeholder after their name: "usage: batchlab sweep <plan|...".
bool has_subcommands(const std::string& command, const std::string& help) {
  return help.find("usage: batchlab " + command + " <") != std::string::npos;
}

TEST(Help, EveryCommandAndSubcommandAnswersHelpWithItsUsage) {
  const auto top = run_stdout_only("--help");
  ASSERT_EQ(top.exit_code, 0) << top.output;
  std::set<std::string> covered;
  for (const auto& command : listed_words(top.output)) {
    const std::string help = expect_help(command);
    covered.insert(command);
    if (!has_subcommands(command, help)) continue;
    for (const auto& sub : listed_words(help)) {
      expect_help(command + " " + sub);
      covered.insert(command + " " + sub);
    }
  }
  // -h is the same word to Args and to the dispatchers: a leaf and a dispatcher suffice (every run
  // of the binary pays LibTorch's start-up, about half a second of CPU).
  for (const char* command : {"train", "sweep", "sweep run", "data pack"}) {
    expect_help(command, "-h");
  }
  for (const char* must : {"train",
                           "query",
                           "sweep",
                           "sweep plan",
                           "sweep run",
                           "sweep status",
                           "sweep submit",
                           "report",
                           "plot",
                           "results",
                           "results ingest",
                           "results migrate",
                           "results snapshot",
                           "data",
                           "data pack",
                           "serve",
                           "data tokenizer",
                           "data pack-text",
                           "models",
                           "version",
                           "bench"}) {
    EXPECT_EQ(covered.count(must), 1u) << "`batchlab " << must << "` is not listed in the usage "
                                       << "texts, so its --help went unchecked";
  }
}

TEST(Help, WinsOverEverythingElseOnTheLine) {
  // A missing config, an unknown option, a bad value and a missing value would each be an error
  // (exit 2); with --help or -h the user gets the usage instead.
  for (const char* args : {"train does-not-exist.toml --nosuch -h",
                           "sweep run --workers zero --help", "query --help --db"}) {
    const auto r = run_stdout_only(args);
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.output;
    EXPECT_EQ(r.output.rfind("usage: batchlab ", 0), 0u) << args << "\n" << r.output;
  }
}

TEST(Help, HelpCommandIsTheSameAsTheFlag) {
  const auto a = run_stdout_only("help sweep run");
  const auto b = run_stdout_only("sweep run --help");
  EXPECT_EQ(a.exit_code, 0) << a.output;
  EXPECT_EQ(a.output, b.output);
}

TEST(Help, MissingSubcommandIsStillBadInput) {
  for (const char* command : {"sweep", "results"}) {
    const auto r = run_batchlab(command);
    EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.output;
    EXPECT_NE(r.output.find("usage: batchlab " + std::string(command)), std::string::npos)
        << r.output;
  }
  const auto r = run_batchlab("train --nosuch");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown option --nosuch"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace batchlab::cli
