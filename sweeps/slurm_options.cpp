#include "sweeps/slurm_options.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <functional>

namespace batchlab::sweeps {

namespace {

constexpr int kMaxSeconds = 24 * 3600;

enum class Kind { flag, word, number, list };

// One row per option: what it takes, its bounds, and the settings field it fills. Rendering back
// into flags and parsing both walk this table, so the two cannot drift apart.
struct Entry {
  SlurmFlag flag;
  Kind kind;
  long long low = 0, high = 0;
  std::function<int&(SlurmSubmitSettings&)> number;
  std::function<std::string&(SlurmSubmitSettings&)> text;
  std::function<std::vector<std::string>&(SlurmSubmitSettings&)> list;
};

using S = SlurmSubmitSettings;

Entry flag(const char* name) {
  return Entry{{name, false, false, false}, Kind::flag, 0, 0, {}, {}, {}};
}
Entry word(const char* name, bool study_only, std::function<std::string&(S&)> field) {
  return Entry{{name, true, false, study_only}, Kind::word, 0, 0, {}, std::move(field), {}};
}
Entry number(const char* name, bool study_only, long long low, long long high,
             std::function<int&(S&)> field) {
  return Entry{{name, true, false, study_only}, Kind::number, low, high, std::move(field), {}, {}};
}

const std::vector<Entry>& table() {
  static const std::vector<Entry> entries = {
      flag("slurm"),
      flag("dry-run"),
      word("partition", false, [](S& s) -> std::string& { return s.jobs.partition; }),
      word("time", false, [](S& s) -> std::string& { return s.jobs.time; }),
      number("gpus-per-job", false, 0, 1024, [](S& s) -> int& { return s.jobs.gpus_per_job; }),
      number("max-parallel", false, 1, 100000, [](S& s) -> int& { return s.jobs.max_parallel; }),
      number("cpus-per-task", false, 0, 1024, [](S& s) -> int& { return s.jobs.cpus_per_task; }),
      number("ranks-per-job", false, 1, 4096, [](S& s) -> int& { return s.jobs.ranks_per_job; }),
      number("nodes-per-job", false, 0, 1024, [](S& s) -> int& { return s.jobs.nodes_per_job; }),
      Entry{{"sbatch-arg", true, true, false},
            Kind::list,
            0,
            0,
            {},
            {},
            [](S& s) -> std::vector<std::string>& { return s.jobs.extra_args; }},
      word("coordinator-time", true, [](S& s) -> std::string& { return s.coordinator_time; }),
      number("retries", true, 0, 100, [](S& s) -> int& { return s.retries; }),
      number("snapshot-every", false, 1, kMaxSeconds,
             [](S& s) -> int& { return s.snapshot_every; }),
      number("publish-every", true, 1, kMaxSeconds, [](S& s) -> int& { return s.publish_every; }),
      number("max-attempts", true, 1, 1000, [](S& s) -> int& { return s.max_attempts; }),
  };
  return entries;
}

// `value` with its control characters written as escapes, for a message on one line.
std::string escaped(const std::string& value) {
  std::string out;
  for (unsigned char c : value) {
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", static_cast<int>(c));
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// "" when `value` may stand on an #SBATCH line, else why not.
std::string sbatch_value_problem(const std::string& value) {
  for (unsigned char c : value) {
    if (c == '\n' || c == '\r') {
      return "contains a line break, which would end the #SBATCH line and start a script line of "
             "its own; give the value on one line";
    }
    if (c < 0x20 || c == 0x7f) {
      return fmt::format("contains the control character 0x{:02x}; remove it", static_cast<int>(c));
    }
    if (c == ' ') {
      return "contains a space, which sbatch would read as the end of the option; give one "
             "option per --sbatch-arg, without spaces";
    }
  }
  return "";
}

std::optional<long long> parse_integer(const std::string& text) {
  if (text.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == nullptr || *end != '\0') return std::nullopt;
  return v;
}

void parse_entry(const Entry& e, const std::vector<std::string>& values, SlurmSubmitSettings& s,
                 std::vector<std::string>& problems) {
  const std::string flag = fmt::format("--{}", e.flag.name);
  for (const auto& value : values) {
    if (e.kind == Kind::number) {
      const auto v = parse_integer(value);
      if (!v || *v < e.low || *v > e.high) {
        problems.push_back(
            fmt::format("{} {}: must be a whole number from {} to {}", flag, value, e.low, e.high));
      } else {
        e.number(s) = static_cast<int>(*v);
      }
      continue;
    }
    if (const std::string why = sbatch_value_problem(value); !why.empty()) {
      problems.push_back(fmt::format("{} '{}': {}", flag, escaped(value), why));
      continue;
    }
    if (e.kind == Kind::list) {
      if (value.empty() || value[0] != '-') {
        problems.push_back(fmt::format(
            "{} {}: not an sbatch option (write it as sbatch takes it, e.g. --account=abc)", flag,
            value));
        continue;
      }
      e.list(s).push_back(value);
    } else {
      e.text(s) = value;
    }
  }
}

}  // namespace

const std::vector<SlurmFlag>& slurm_flags() {
  static const std::vector<SlurmFlag> flags = [] {
    std::vector<SlurmFlag> out;
    for (const auto& e : table()) out.push_back(e.flag);
    return out;
  }();
  return flags;
}

SlurmSubmitSettings parse_slurm_flags(const std::map<std::string, std::vector<std::string>>& given,
                                      std::vector<std::string>* problems) {
  SlurmSubmitSettings s;
  std::vector<std::string> found;
  for (const auto& e : table()) {
    auto it = given.find(e.flag.name);
    if (it == given.end() || e.kind == Kind::flag) continue;
    parse_entry(e, it->second, s, found);
  }
  if (s.jobs.nodes_per_job > s.jobs.ranks_per_job) {
    found.push_back(fmt::format(
        "--nodes-per-job {} is more than --ranks-per-job {}: every node runs at least one rank",
        s.jobs.nodes_per_job, s.jobs.ranks_per_job));
  }
  if (problems != nullptr) *problems = std::move(found);
  return s;
}

std::vector<std::string> render_slurm_flags(const SlurmSubmitSettings& settings) {
  SlurmSubmitSettings copy = settings;
  SlurmSubmitSettings defaults;
  std::vector<std::string> words;
  for (const auto& e : table()) {
    const std::string flag = fmt::format("--{}", e.flag.name);
    if (e.kind == Kind::number && e.number(copy) != e.number(defaults)) {
      words.insert(words.end(), {flag, std::to_string(e.number(copy))});
    } else if (e.kind == Kind::word && !e.text(copy).empty()) {
      words.insert(words.end(), {flag, e.text(copy)});
    } else if (e.kind == Kind::list) {
      for (const auto& value : e.list(copy)) words.insert(words.end(), {flag, value});
    }
  }
  return words;
}

}  // namespace batchlab::sweeps
