#include "sweeps/slurm.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/errors.h"
#include "results/errors.h"
#include "results/rows.h"
#include "results/store.h"
#include "sweeps/process.h"
#include "sweeps/slurm_commands.h"

namespace batchlab::sweeps {

namespace {

namespace fs = std::filesystem;

std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

// (job id, tasks file) of every submission from this runs folder.
std::vector<std::pair<std::string, std::string>> submissions(const RunLayout& layout) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& line : read_lines((fs::path(layout.slurm_dir()) / "submissions.txt").string())) {
    std::istringstream fields(line);
    std::string id, tasks;
    if (fields >> id >> tasks) out.emplace_back(id, tasks);
  }
  return out;
}

std::string stamp() {
  std::string now = results::utc_now();  // 2024-05-01T12:34:56.789Z
  std::string out;
  for (char c : now) {
    if (std::isdigit(static_cast<unsigned char>(c)) || c == 'T') out += c;
  }
  return fmt::format("{}-{}", out, ::getpid());
}

// Slurm's output file pattern of a submission whose task list is `tasks_path` (%a: array index).
std::string output_pattern(const std::string& tasks_path) {
  return (fs::absolute(fs::path(tasks_path).parent_path()) /
          (fs::path(tasks_path).stem().string() + "-%a.out"))
      .string();
}

// "a,b,c": the form squeue's --name and -j take a list in.
std::string comma_list(const std::vector<std::string>& items) {
  std::string list;
  for (const auto& item : items) list += (list.empty() ? "" : ",") + item;
  return list;
}

}  // namespace

std::string program_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return name;
}

std::string slurm_job_name(const std::string& sweep_name) { return "batchlab-" + sweep_name; }

std::string slurm_coordinator_job_name(const std::string& sweep_name) {
  return slurm_job_name(sweep_name) + "-coordinator";
}

std::string SlurmSubmission::output(size_t task) const {
  std::string pattern = output_pattern(tasks);
  pattern.replace(pattern.rfind("%a"), 2, std::to_string(task));
  return pattern;
}

std::vector<SbatchOption> sbatch_options(const SlurmOptions& options) {
  std::vector<SbatchOption> out;
  const int ranks = std::max(1, options.ranks_per_job);
  out.push_back({fmt::format("--ranks-per-job {}", ranks), fmt::format("--ntasks={}", ranks)});
  if (options.nodes_per_job > 0) {
    out.push_back({fmt::format("--nodes-per-job {}", options.nodes_per_job),
                   fmt::format("--nodes={}", options.nodes_per_job)});
  }
  if (!options.partition.empty()) {
    out.push_back({"--partition " + options.partition, "--partition=" + options.partition});
  }
  if (!options.time.empty()) out.push_back({"--time " + options.time, "--time=" + options.time});
  if (options.gpus_per_job > 0) {
    out.push_back({fmt::format("--gpus-per-job {}", options.gpus_per_job),
                   fmt::format("--gres=gpu:{}", options.gpus_per_job)});
  }
  if (options.cpus_per_task > 0) {
    out.push_back({fmt::format("--cpus-per-task {}", options.cpus_per_task),
                   fmt::format("--cpus-per-task={}", options.cpus_per_task)});
  }
  for (const auto& extra : options.extra_args) out.push_back({"--sbatch-arg " + extra, extra});
  return out;
}

std::string sbatch_script(const std::string& sweep_name, const std::string& tasks_path,
                          size_t task_count, const SlurmOptions& options) {
  const std::string out_pattern = output_pattern(tasks_path);
  std::string s = "#!/bin/bash\n";
  s += fmt::format("#SBATCH --job-name={}\n",
                   options.job_name.empty() ? slurm_job_name(sweep_name) : options.job_name);
  s += fmt::format("#SBATCH --array=0-{}{}\n", task_count - 1,
                   options.max_parallel > 0 ? fmt::format("%{}", options.max_parallel) : "");
  s += fmt::format("#SBATCH --output={}\n", out_pattern);
  for (const auto& option : sbatch_options(options)) {
    s += fmt::format("#SBATCH {}\n", option.argument);
  }
  // Preemption: ask for SIGTERM ahead of the kill, so the job can record `preempted`.
  s += "#SBATCH --signal=B:TERM@60\n";
  s += fmt::format(
      "# Written by `batchlab sweep submit` for sweep {}: array task i runs the job whose run "
      "folder\n"
      "# is line i+1 of the task list, with its records on node-local disk, published as "
      "snapshots.\n",
      sweep_name);
  std::string flags;
  if (options.snapshot_every > 0)
    flags += fmt::format(" --snapshot-every {}", options.snapshot_every);
  if (options.ranks_per_job > 1) flags += fmt::format(" --ranks {}", options.ranks_per_job);
  s += fmt::format("exec {} sweep slurm-task {} \"$SLURM_ARRAY_TASK_ID\"{}\n",
                   shell_quote(options.batchlab), shell_quote(fs::absolute(tasks_path).string()),
                   flags);
  return s;
}

SlurmSubmission submit_array(const std::string& sweep_name, const std::vector<const Job*>& jobs,
                             const RunLayout& layout, const SlurmOptions& options) {
  SlurmSubmission out;
  if (jobs.empty()) return out;
  std::error_code ec;
  fs::create_directories(layout.slurm_dir(), ec);
  const std::string base = (fs::path(layout.slurm_dir()) / stamp()).string();
  out.tasks = base + ".tasks";
  out.script = base + ".sbatch";
  out.task_count = jobs.size();
  {
    std::ofstream tasks(out.tasks);
    for (const Job* job : jobs) tasks << fs::absolute(layout.dir(job->run_id)).string() << "\n";
    if (!tasks) throw Error(fmt::format("cannot write {}", out.tasks));
  }
  {
    std::ofstream script(out.script);
    script << sbatch_script(sweep_name, out.tasks, jobs.size(), options);
    if (!script) throw Error(fmt::format("cannot write {}", out.script));
  }
  if (!options.submit) return out;
  out.job_id = sbatch_submit(out.script, default_retry_policy());
  std::ofstream log((fs::path(layout.slurm_dir()) / "submissions.txt").string(), std::ios::app);
  log << out.job_id << " " << out.tasks << "\n";
  return out;
}

std::map<std::string, std::vector<std::string>> slurm_submissions(const RunLayout& layout) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [id, tasks] : submissions(layout)) {
    auto& runs = out[id];
    runs.clear();
    for (const auto& dir : read_lines(tasks)) runs.push_back(fs::path(dir).filename().string());
  }
  return out;
}

std::set<std::string> slurm_submitted_runs(const RunLayout& layout) {
  std::set<std::string> out;
  for (const auto& [id, runs] : slurm_submissions(layout)) out.insert(runs.begin(), runs.end());
  return out;
}

std::optional<std::vector<SlurmQueueEntry>> slurm_queue(const std::vector<std::string>& names) {
  const std::string list = comma_list(names);
  // %A: the job's id, or its array's; %a: the array task ("N/A" outside arrays). -r: one line per
  // array task, pending ones included.
  // Standard output alone: a site's banner on stderr is not a job.
  std::vector<std::string> command = {"squeue", "-h", "-r", "-o", "%A|%a|%T|%j", "--name=" + list};
  // squeue lists every user's jobs, and a job's name is only batchlab-<sweep name>: another user's
  // sweep of the same name would count as this one's. --user rather than --me, which Slurm before
  // 20.11 does not know.
  if (const auto user = current_user_name()) command.push_back("--user=" + *user);
  const SlurmAnswer answer = run_slurm_command(command);
  if (answer.code != 0) return std::nullopt;
  std::vector<SlurmQueueEntry> out;
  std::istringstream lines(answer.out);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> fields;
    std::istringstream parts(line);
    std::string field;
    while (std::getline(parts, field, '|')) fields.push_back(field);
    if (fields.size() < 4 || fields[0].empty() ||
        !std::all_of(fields[0].begin(), fields[0].end(),
                     [](unsigned char c) { return std::isdigit(c); })) {
      continue;
    }
    SlurmQueueEntry entry{fields[0], std::nullopt, fields[2], fields[3]};
    if (!fields[1].empty() && std::isdigit(static_cast<unsigned char>(fields[1][0]))) {
      entry.task = std::stoul(fields[1]);
    }
    out.push_back(std::move(entry));
  }
  return out;
}

std::optional<std::map<std::string, std::string>> slurm_job_states(
    const std::vector<std::string>& job_ids) {
  std::map<std::string, std::string> out;
  if (job_ids.empty()) return out;
  // -t all: without it squeue -j shows only the listing's states. %A, not %i: %i names an
  // array's task "ID_TASK", and every trial is a one-task array (Slurm 22.05).
  const SlurmAnswer answer =
      run_slurm_command({"squeue", "-h", "-t", "all", "-j", comma_list(job_ids), "-o", "%A|%T"});
  // A controller past MinJobAge has forgotten an ended job: asked for it alone, squeue exits 1.
  if (answer.code != 0 && answer.err.find("Invalid job id") != std::string::npos) return out;
  if (answer.code != 0) return std::nullopt;
  std::istringstream lines(answer.out);
  std::string line;
  while (std::getline(lines, line)) {
    // "ID|STATE", the state one upper-case word: a site's banner or anything else is not a job.
    const size_t bar = line.find('|');
    if (bar == std::string::npos || bar == 0 || bar + 1 == line.size()) continue;
    const std::string id = line.substr(0, bar);
    const std::string state = line.substr(bar + 1);
    const auto digit = [](unsigned char c) { return std::isdigit(c) != 0; };
    const auto word = [](unsigned char c) { return std::isupper(c) != 0 || c == '_'; };
    if (!std::all_of(id.begin(), id.end(), digit) ||
        !std::all_of(state.begin(), state.end(), word)) {
      continue;
    }
    // An array with tasks in several states: one that may still run speaks for the array.
    const auto known = out.find(id);
    if (known == out.end() || !slurm_state_may_run(known->second)) out[id] = state;
  }
  return out;
}

bool slurm_state_may_run(const std::string& state) {
  static const std::set<std::string> kEnded = {
      "COMPLETED", "CANCELLED", "FAILED",        "TIMEOUT",  "NODE_FAIL",
      "PREEMPTED", "BOOT_FAIL", "OUT_OF_MEMORY", "DEADLINE", "REVOKED"};
  return kEnded.count(state) == 0;
}

std::optional<std::set<std::string>> slurm_active_runs(const RunLayout& layout,
                                                       const std::string& sweep_name) {
  const auto runs_of = slurm_submissions(layout);
  if (runs_of.empty()) return std::set<std::string>{};
  const auto queue = slurm_queue({slurm_job_name(sweep_name)});
  if (!queue) return std::nullopt;
  std::set<std::string> active;
  for (const auto& entry : *queue) {
    auto it = runs_of.find(entry.job_id);
    if (it == runs_of.end()) continue;
    if (!entry.task) {
      // Not expanded into tasks: count every task of the submission as active.
      active.insert(it->second.begin(), it->second.end());
    } else if (*entry.task < it->second.size()) {
      active.insert(it->second[*entry.task]);
    }
  }
  return active;
}

}  // namespace batchlab::sweeps
