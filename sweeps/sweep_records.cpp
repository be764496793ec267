#include "sweeps/sweep_records.h"

#include <filesystem>

#include "results/rows.h"

namespace batchlab::sweeps {

bool is_settled(const std::string& status) {
  return status == results::run_status::kDone || status == results::run_status::kDiverged ||
         status == results::run_status::kStopped;
}

SweepRecords::SweepRecords(const SweepSpec& spec, const RunLayout& layout)
    : sweep_id_(spec.name), layout_(layout), store_(spec.results), ingester_(spec.results) {}

void SweepRecords::register_plan(const SweepSpec& spec, const Plan& plan) {
  sweep_row_.sweep_id = sweep_id_;
  sweep_row_.name = spec.name;
  sweep_row_.spec_toml = spec.text;
  register_jobs(plan.jobs);
}

void SweepRecords::register_jobs(const std::vector<Job>& jobs) {
  std::vector<results::RunRow> rows;
  rows.reserve(jobs.size());
  for (const auto& job : jobs) {
    results::RunRow row;
    row.run_id = job.run_id;
    row.sweep_id = sweep_id_;
    if (!job.config_toml.empty()) row.config_toml = job.config_toml;
    apply_columns(job, row);
    row.micro_batch = job.derived.micro_batch;
    row.accum_steps = job.derived.accum_steps;
    row.world_size = 1;
    row.peak_lr = job.derived.peak_lr;
    row.warmup_steps = job.derived.warmup_steps;
    row.train_size = job.derived.train_size;
    row.steps_per_epoch = job.derived.steps_per_epoch;
    row.total_steps = job.derived.total_steps;
    row.samples_dropped_per_epoch = job.derived.dropped_per_epoch;
    rows.push_back(std::move(row));
  }
  ingester_.register_plan(sweep_row_, rows);
}

std::optional<results::IngestedRun> SweepRecords::ingest(const std::string& run_id,
                                                         std::optional<int64_t> attempts,
                                                         bool series) {
  const std::string records = layout_.records_path(run_id);
  std::error_code ec;
  if (!std::filesystem::exists(records, ec)) return std::nullopt;
  results::IngestOptions options;
  options.sweep_id = sweep_id_;
  options.attempts = attempts;
  options.series = series;
  return ingester_.ingest_run(records, run_id, options);
}

std::set<std::string> SweepRecords::reconcile(const Plan& plan,
                                              const std::set<std::string>& external) {
  std::set<std::string> alive;
  const auto known = runs();
  for (const auto& job : plan.jobs) {
    auto it = known.find(job.run_id);
    if (it != known.end() && is_settled(it->second.status)) continue;
    const std::string records = layout_.records_path(job.run_id);
    std::error_code ec;
    const bool has_records = std::filesystem::exists(records, ec);
    if (lock_held(layout_.lock_path(job.run_id))) {
      alive.insert(job.run_id);
    } else if (external.count(job.run_id) == 0) {
      if (has_records) {
        results::finalize_record(records, job.run_id, results::run_status::kPreempted,
                                 "interrupted: its process ended without recording an outcome "
                                 "(coordinator or machine killed); it will be resumed");
      } else if (it != known.end() && it->second.status == results::run_status::kRunning) {
        store_.set_run_status(job.run_id, results::run_status::kPreempted,
                              std::string("interrupted before it recorded anything"));
      }
    }
    if (has_records) ingest(job.run_id, std::nullopt);
  }
  return alive;
}

std::map<std::string, results::RunRow> SweepRecords::runs() {
  std::map<std::string, results::RunRow> out;
  for (auto& row : store_.list_runs(sweep_id_)) out.emplace(row.run_id, std::move(row));
  return out;
}

}  // namespace batchlab::sweeps
