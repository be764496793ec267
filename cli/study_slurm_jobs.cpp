#include "cli/study_slurm_jobs.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "sweeps/slurm.h"
#include "sweeps/study/slurm_coordinator.h"

namespace batchlab::cli {

void print_study_slurm_jobs(const SweepContext& ctx) {
  const auto coordinators = sweeps::study::coordinator_jobs(ctx.layout);
  const auto submitted = sweeps::slurm_submissions(ctx.layout);
  if (coordinators.empty() && submitted.empty()) return;
  const std::string coordinator_name = sweeps::slurm_coordinator_job_name(ctx.spec.name);
  const auto queue = sweeps::slurm_queue({coordinator_name, sweeps::slurm_job_name(ctx.spec.name)});
  if (!queue) {
    fmt::print("  slurm: squeue did not answer; last coordinator job {}\n",
               coordinators.empty() ? "-" : coordinators.back());
    return;
  }
  std::string coordinator = "none queued or running";
  std::vector<std::string> trials;
  for (const auto& e : *queue) {
    if (e.name == coordinator_name) {
      coordinator = fmt::format("job {} {}", e.job_id, e.state);
      continue;
    }
    auto it = submitted.find(e.job_id);
    const std::string run =
        it != submitted.end() && e.task && *e.task < it->second.size() ? it->second[*e.task] : "?";
    trials.push_back(fmt::format("    {:<10} {:<10} {}", e.job_id, e.state, run));
  }
  fmt::print("  slurm: coordinator {} (submitted {} times); trial jobs queued or running: {}\n",
             coordinator, coordinators.size(), trials.size());
  for (const auto& line : trials) fmt::print("{}\n", line);
}

}  // namespace batchlab::cli
