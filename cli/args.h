// A small, strict argument parser for the batchlab subcommands: positionals, `--name value`,
// `--name=value`, repeatable options and flags. Anything unknown or missing is a UsageError (exit
// 2) that names the argument and shows the command's usage line. `--help` or `-h` anywhere is
// recognised before any other parsing and answered with HelpRequested, so every command that
// parses its arguments with Args answers --help without code of its own.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.h"

namespace batchlab::cli {

class UsageError : public InputError {
 public:
  using InputError::InputError;
};

// Not an error: the user asked for the command's usage. run_app prints it to stdout and exits 0.
// Deliberately not a std::exception, so that no `catch (const std::exception&)` in a command can
// mistake it for a failure.
class HelpRequested {
 public:
  explicit HelpRequested(std::string usage) : usage_(std::move(usage)) {}
  const std::string& usage() const { return usage_; }

 private:
  std::string usage_;
};

// True when `word` asks for help (`--help`, `-h`).
bool is_help_word(const std::string& word);

// The subcommand word of a command that has subcommands (`sweep`, `data`, `results`): argv[0].
// Throws HelpRequested(usage) when it is --help or -h, and a UsageError showing `usage` when it is
// missing.
const std::string& subcommand(const std::vector<std::string>& argv, const std::string& usage);

struct OptionSpec {
  std::string name;  // without the leading dashes
  bool takes_value = true;
  bool repeatable = false;
};

class Args {
 public:
  // Parses `argv` (the words after the subcommand) against `options`; `usage` is quoted in errors.
  // Throws HelpRequested(usage) when a word of `argv` is --help or -h.
  Args(const std::vector<std::string>& argv, const std::vector<OptionSpec>& options,
       std::string usage);

  const std::vector<std::string>& positionals() const { return positionals_; }
  // The single positional the command takes; a UsageError naming `what` when absent or repeated.
  std::string positional(const std::string& what, bool required = true) const;
  std::optional<std::string> value(const std::string& name) const;
  std::vector<std::string> values(const std::string& name) const;
  bool flag(const std::string& name) const;
  // An integer option; a UsageError naming the option and the value when it is not one.
  std::optional<long long> integer(const std::string& name) const;
  // A finite number option; a UsageError naming the option and the value when it is not one.
  std::optional<double> number(const std::string& name) const;
  const std::string& usage() const { return usage_; }

 private:
  std::vector<std::string> positionals_;
  std::map<std::string, std::vector<std::string>> values_;
  std::string usage_;
};

}  // namespace batchlab::cli
