#include "cli/args.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace batchlab::cli {

bool is_help_word(const std::string& word) { return word == "--help" || word == "-h"; }

const std::string& subcommand(const std::vector<std::string>& argv, const std::string& usage) {
  if (argv.empty()) throw UsageError("missing subcommand\nusage: " + usage);
  if (is_help_word(argv.front())) throw HelpRequested(usage);
  return argv.front();
}

Args::Args(const std::vector<std::string>& argv, const std::vector<OptionSpec>& options,
           std::string usage)
    : usage_(std::move(usage)) {
  // Before anything can fail: `batchlab train --help` must not complain about a missing config.
  if (std::any_of(argv.begin(), argv.end(), is_help_word)) throw HelpRequested(usage_);
  auto find = [&](const std::string& name) -> const OptionSpec* {
    auto it = std::find_if(options.begin(), options.end(),
                           [&](const OptionSpec& o) { return o.name == name; });
    return it == options.end() ? nullptr : &*it;
  };
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& word = argv[i];
    if (word.size() < 3 || word.rfind("--", 0) != 0) {
      positionals_.push_back(word);
      continue;
    }
    std::string name = word.substr(2);
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const OptionSpec* spec = find(name);
    if (!spec) throw UsageError(fmt::format("unknown option --{}\nusage: {}", name, usage_));
    std::string value;
    if (spec->takes_value) {
      if (inline_value) {
        value = *inline_value;
      } else if (i + 1 < argv.size()) {
        value = argv[++i];
      } else {
        throw UsageError(fmt::format("option --{} needs a value\nusage: {}", name, usage_));
      }
    } else if (inline_value) {
      throw UsageError(fmt::format("option --{} takes no value\nusage: {}", name, usage_));
    }
    auto& slot = values_[name];
    if (!slot.empty() && !spec->repeatable) {
      throw UsageError(fmt::format("option --{} given twice\nusage: {}", name, usage_));
    }
    slot.push_back(value);
  }
}

std::string Args::positional(const std::string& what, bool required) const {
  if (positionals_.size() > 1) {
    throw UsageError(fmt::format("expected one {}, got {} arguments ({} ...)\nusage: {}", what,
                                 positionals_.size(), positionals_[1], usage_));
  }
  if (positionals_.empty()) {
    if (required) throw UsageError(fmt::format("missing {}\nusage: {}", what, usage_));
    return {};
  }
  return positionals_.front();
}

std::optional<std::string> Args::value(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second.back();
}

std::vector<std::string> Args::values(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

bool Args::flag(const std::string& name) const { return values_.count(name) > 0; }

std::optional<long long> Args::integer(const std::string& name) const {
  auto v = value(name);
  if (!v) return std::nullopt;
  try {
    size_t used = 0;
    long long n = std::stoll(*v, &used);
    if (used == v->size()) return n;
  } catch (const std::exception&) {
  }
  throw UsageError(fmt::format("--{} = {}: not an integer\nusage: {}", name, *v, usage_));
}

std::optional<double> Args::number(const std::string& name) const {
  auto v = value(name);
  if (!v) return std::nullopt;
  try {
    size_t used = 0;
    double x = std::stod(*v, &used);
    if (used == v->size() && std::isfinite(x)) return x;
  } catch (const std::exception&) {
  }
  throw UsageError(fmt::format("--{} = {}: not a number\nusage: {}", name, *v, usage_));
}

}  // namespace batchlab::cli
