#include "sweeps/problems.h"

#include <fmt/format.h>

#include <optional>

#include "core/config/read_context.h"
#include "core/config/toml_text.h"

namespace batchlab::sweeps {

namespace {

std::optional<config::SourcePosition> base_position(const toml::table& base,
                                                    const std::string& path, bool at_key) {
  const toml::node* node = base.at_path(path).node();
  if (node == nullptr) return std::nullopt;
  const std::string parent = config::parent_path(path);
  const toml::table* holder = parent.empty() ? &base : base.at_path(parent).as_table();
  if (at_key && holder != nullptr) {
    const std::string leaf = parent.empty() ? path : path.substr(parent.size() + 1);
    for (auto&& [key, value] : *holder) {
      if (key.str() == leaf) return config::position_of(key);
    }
  }
  const auto pos = config::position_of(*node);
  if (pos.line == 0) return std::nullopt;
  return pos;
}

}  // namespace

Diagnostic locate_problem(Diagnostic d, const SweepSpec& spec, const toml::table& base,
                          const std::map<std::string, Location>& assigned) {
  d.file = spec.experiment;
  d.line = 0;
  d.column = 0;
  const bool unknown_key = d.rule.rfind("unknown", 0) == 0;
  for (std::string p = d.key; !p.empty(); p = config::parent_path(p)) {
    if (auto it = assigned.find(p); it != assigned.end()) {
      d.file = spec.source;
      d.line = it->second.line;
      d.column = it->second.column;
      return d;
    }
    if (auto pos = base_position(base, p, unknown_key)) {
      d.line = pos->line;
      d.column = pos->column;
      return d;
    }
  }
  return d;
}

void ProblemGroups::add(const Diagnostic& d, const std::string& job, size_t keep) {
  auto [it, inserted] = index_.emplace(d.to_string(), groups_.size());
  if (inserted) groups_.push_back({d, {}, 0});
  auto& group = groups_[it->second];
  if (group.jobs.size() < keep) group.jobs.push_back(job);
  ++group.count;
}

void ProblemGroups::merge(ProblemGroups&& other, size_t keep) {
  for (auto& g : other.groups_) {
    auto [it, inserted] = index_.emplace(g.diagnostic.to_string(), groups_.size());
    if (inserted) {
      groups_.push_back(std::move(g));
      continue;
    }
    auto& group = groups_[it->second];
    for (auto& job : g.jobs) {
      if (group.jobs.size() < keep) group.jobs.push_back(std::move(job));
    }
    group.count += g.count;
  }
}

std::vector<Diagnostic> ProblemGroups::take(size_t combinations) {
  std::vector<Diagnostic> out;
  for (auto& g : groups_) {
    Diagnostic d = std::move(g.diagnostic);
    std::string where;
    if (g.count == 1) {
      where = fmt::format("in job {}", g.jobs.front());
    } else {
      where = fmt::format("in {} of {} jobs: {}", g.count, combinations, fmt::join(g.jobs, "; "));
      if (g.count > g.jobs.size()) where += fmt::format("; and {} more", g.count - g.jobs.size());
    }
    d.rule += " [" + where + "]";
    out.push_back(std::move(d));
  }
  groups_.clear();
  index_.clear();
  return out;
}

}  // namespace batchlab::sweeps
