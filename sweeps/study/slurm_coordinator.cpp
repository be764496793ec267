#include "sweeps/study/slurm_coordinator.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/errors.h"
#include "results/ingest.h"
#include "sweeps/process.h"
#include "sweeps/slurm.h"
#include "sweeps/slurm_job_files.h"

namespace batchlab::sweeps::study {

namespace {

namespace fs = std::filesystem;

std::string coordinator_record(const RunLayout& layout) {
  return (fs::path(layout.slurm_dir()) / "coordinator.txt").string();
}

}  // namespace

std::vector<std::string> coordinator_jobs(const RunLayout& layout) {
  return read_job_id_lines(coordinator_record(layout));
}

void record_coordinator_job(const RunLayout& layout, const std::string& job_id) {
  std::error_code ec;
  fs::create_directories(layout.slurm_dir(), ec);
  std::ofstream out(coordinator_record(layout), std::ios::app);
  out << job_id << "\n";
  out.flush();
  if (!out)
    throw Error(
        fmt::format("cannot record coordinator job {} in {}", job_id, coordinator_record(layout)));
}

std::string live_coordinator(const RunLayout& layout, const std::string& sweep_name,
                             const std::string& self) {
  auto ids = coordinator_jobs(layout);
  ids.erase(std::remove(ids.begin(), ids.end(), self), ids.end());
  if (ids.empty()) return "";
  const auto queue = slurm_queue({slurm_coordinator_job_name(sweep_name)});
  if (!queue) return ids.back();
  for (const auto& entry : *queue) {
    if (std::find(ids.begin(), ids.end(), entry.job_id) != ids.end()) return entry.job_id;
  }
  return "";
}

std::set<std::string> trials_in_slurm(const RunLayout& layout, const std::string& sweep_name) {
  auto active = slurm_active_runs(layout, sweep_name);
  return active ? *active : slurm_submitted_runs(layout);
}

SlurmOptions coordinator_options(const SlurmSubmitSettings& settings) {
  SlurmOptions o;
  o.partition = settings.jobs.partition;
  o.time = settings.coordinator_time;
  o.cpus_per_task = 1;
  o.extra_args = settings.jobs.extra_args;
  return o;
}

std::string coordinator_script(const RunLayout& layout, const CoordinatorJob& job) {
  std::string s = "#!/bin/bash\n";
  s += fmt::format("#SBATCH --job-name={}\n", slurm_coordinator_job_name(job.sweep_name));
  s += fmt::format("#SBATCH --output={}\n",
                   (fs::absolute(layout.slurm_dir()) / "coordinator-%j.out").string());
  for (const auto& option : sbatch_options(coordinator_options(job.settings))) {
    s += fmt::format("#SBATCH {}\n", option.argument);
  }
  // Preempted, it is requeued and resumes from the published database; SIGTERM ahead of the kill
  // lets it publish one last snapshot.
  s += "#SBATCH --requeue\n#SBATCH --signal=B:TERM@60\n";
  s += fmt::format(
      "# Written by `batchlab sweep submit --slurm` for study {}: the study's coordinator, which\n"
      "# submits every trial as a Slurm job of its own and publishes the study database to\n# {}\n",
      job.sweep_name, job.results);
  std::string words = fmt::format("exec {} sweep slurm-coordinator {}", shell_quote(job.batchlab),
                                  shell_quote(job.spec_path));
  for (const auto& w : render_slurm_flags(job.settings)) words += " " + shell_quote(w);
  return s + words + "\n";
}

PublishedDatabase::PublishedDatabase(std::string shared)
    : shared_(std::move(shared)), dir_("coordinator") {
  local_ = (fs::path(dir_.path()) / fs::path(shared_).filename()).string();
  std::error_code ec;
  // A consistent copy, whatever journal the file was left in (a local `sweep run` leaves WAL).
  if (fs::exists(shared_, ec)) results::snapshot_database(shared_, local_);
  fs::create_directories(fs::absolute(shared_).parent_path(), ec);
}

void PublishedDatabase::publish() const { results::snapshot_database(local_, shared_); }

}  // namespace batchlab::sweeps::study
