// Problems of expanded jobs: where each one was written (the spec for values the sweep assigned,
// the base experiment otherwise) and which jobs have it. A sweep of 100,000 jobs with one bad value
// reports one line with a count, not 100,000 lines.
#pragma once

#include <toml++/toml.h>

#include <cstddef>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/errors.h"
#include "sweeps/spec.h"

namespace batchlab::sweeps {

// Moves a diagnostic of a job's config to where the offending value was written: `assigned` maps
// the keys the sweep set for this job to their spec positions; other keys are looked up in the
// parsed base (its value, or its key for an unknown key, as `batchlab train` reports them), the
// nearest written enclosing key standing in for one that was never written.
Diagnostic locate_problem(Diagnostic d, const SweepSpec& spec, const toml::table& base,
                          const std::map<std::string, Location>& assigned);

class ProblemGroups {
 public:
  // `job` describes the job; at most `keep` jobs are listed per problem, the rest counted.
  void add(const Diagnostic& d, const std::string& job, size_t keep);
  void merge(ProblemGroups&& other, size_t keep);
  bool empty() const { return groups_.empty(); }
  // One diagnostic per problem, its rule followed by "[in job ...]" or "[in N of M jobs: ...]".
  std::vector<Diagnostic> take(size_t combinations);

 private:
  struct Group {
    Diagnostic diagnostic;
    std::vector<std::string> jobs;
    size_t count = 0;
  };
  std::vector<Group> groups_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace batchlab::sweeps
