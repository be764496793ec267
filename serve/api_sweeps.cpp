#include "serve/api_sweeps.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <iterator>
#include <map>

#include "analysis/report.h"
#include "analysis/study_records.h"
#include "analysis/study_report.h"
#include "core/errors.h"
#include "results/errors.h"
#include "results/rows.h"
#include "serve/errors.h"
#include "serve/json_column.h"
#include "serve/request_params.h"

namespace batchlab::serve {

namespace {

using nlohmann::json;

namespace rs = results::run_status;

// Runs that may still take steps: planned, running and preempted (it resumes). Everything else
// (done, failed, diverged, oom, a study's stopped trials) has ended and counts as complete for
// progress and the ETA; unlike results::is_final_run_status, which asks whether an attempt is over.
bool is_final(const std::string& status) {
  return status != rs::kPlanned && status != rs::kRunning && status != rs::kPreempted;
}

// What the overview lists as a problem, with its reason and step.
bool is_problem(const std::string& status) {
  return status == rs::kFailed || status == rs::kDiverged || status == rs::kOom;
}

struct SweepTally {
  json entry;
  int runs = 0;
  double progress_sum = 0.0;  // per run: 1 when final, last_step / total_steps while it runs
  std::int64_t steps_done = 0, steps_total = 0;
  bool total_known = true;
  std::optional<double> first_start;
};

void add_run(SweepTally& t, results::Statement& s) {
  const std::string status = s.column_text(1);
  const auto last_step = s.column_opt_int64(2).value_or(0);
  const auto total_steps = s.column_opt_int64(3);
  t.runs += 1;
  t.entry["statuses"][status] = t.entry["statuses"].value(status, 0) + 1;
  t.steps_done += last_step;
  if (total_steps && *total_steps > 0) {
    t.steps_total += *total_steps;
    t.progress_sum +=
        is_final(status)
            ? 1.0
            : std::min(1.0, static_cast<double>(last_step) / static_cast<double>(*total_steps));
  } else {
    t.total_known = false;
    t.progress_sum += is_final(status) ? 1.0 : 0.0;
  }
  if (const auto started = s.column_opt_text(4)) {
    if (const auto when = results::utc_seconds(*started)) {
      t.first_start = t.first_start ? std::min(*t.first_start, *when) : *when;
    }
  }
  // A run with a cluster job that may still take steps: its job is queued (planned), running, or
  // to be submitted again (preempted). Ended runs' jobs are history.
  if (const auto job = s.column_opt_text(9); job && !is_final(status)) {
    t.entry["scheduler_jobs"].push_back(
        {{"job", *job},
         {"run_id", s.column_text(0)},
         {"state", status == rs::kPlanned ? std::string("queued") : status}});
  }
  if (is_problem(status)) {
    t.entry["problems"].push_back(
        {{"run_id", s.column_text(0)},
         {"status", status},
         {"step", s.column_opt_int64(2) ? json(last_step) : json()},
         {"error", s.column_opt_text(5) ? json(s.column_text(5)) : json()},
         {"optimizer", s.column_opt_text(6).value_or("")},
         {"global_batch", s.column_opt_int64(7).value_or(0)}});
  }
}

// Progress is the mean over runs of each run's own fraction, so a sweep of 6-step and 400-step
// runs is not "done" when its long runs have barely begun; the ETA extrapolates it over the time
// since the first run started (with N workers that already counts N runs at a time).
void finish(SweepTally& t, double now) {
  json& e = t.entry;
  e["runs"] = t.runs;
  e["steps_done"] = t.steps_done;
  e["steps_total"] = t.total_known ? json(t.steps_total) : json();
  const double progress = t.runs > 0 ? t.progress_sum / t.runs : 0.0;
  e["progress"] = t.runs > 0 ? json(progress) : json();
  e["started_at_unix"] = t.first_start ? json(*t.first_start) : json();
  e["eta_s"] = json();
  if (t.first_start && progress > 0.0 && progress < 1.0) {
    const double elapsed = std::max(0.0, now - *t.first_start);
    e["eta_s"] = elapsed * (1.0 - progress) / progress;
  }
}

// A study's cells by status and trials by outcome, as `sweep status` counts them; nothing for a
// sweep without study rows.
void add_study_progress(results::Connection& db, json& entry, const std::string& sweep_id) {
  results::Statement cells(db,
                           "SELECT status, count(*) FROM study_cells WHERE sweep_id = ?1 "
                           "GROUP BY status ORDER BY status");
  cells.bind_text(1, sweep_id);
  json by_status = json::object();
  while (cells.step()) by_status[cells.column_text(0)] = cells.column_int64(1);
  if (by_status.empty()) return;
  results::Statement trials(db,
                            "SELECT t.outcome, count(*) FROM study_trials t JOIN study_cells c "
                            "ON c.cell_id = t.cell_id WHERE c.sweep_id = ?1 GROUP BY t.outcome "
                            "ORDER BY t.outcome");
  trials.bind_text(1, sweep_id);
  json by_outcome = json::object();
  while (trials.step()) by_outcome[trials.column_text(0)] = trials.column_int64(1);
  entry["study"] = {{"cells", by_status}, {"trials", by_outcome}};
}

}  // namespace

nlohmann::json sweeps_endpoint(results::Connection& db, const Query& query, double now_unix_s) {
  const RequestParams params(query, {});
  std::map<std::string, SweepTally> tallies;  // "" = runs without a sweep
  std::vector<std::string> order;
  results::Statement sweeps(db,
                            "SELECT sweep_id, name, created_at FROM sweeps ORDER BY created_at");
  while (sweeps.step()) {
    const std::string id = sweeps.column_text(0);
    SweepTally& t = tallies[id];
    t.entry = {{"sweep_id", id},
               {"name", sweeps.column_text(1)},
               {"created_at", sweeps.column_opt_text(2) ? json(sweeps.column_text(2)) : json()},
               {"statuses", json::object()},
               {"problems", json::array()},
               {"scheduler_jobs", json::array()}};
    order.push_back(id);
  }
  results::Statement runs(
      db,
      "SELECT run_id, status, last_step, total_steps, started_at, error, "
      "optimizer, global_batch, sweep_id, scheduler_job FROM runs ORDER BY run_id");
  while (runs.step()) {
    const std::string id = runs.column_opt_text(8).value_or("");
    auto [it, added] = tallies.try_emplace(id);
    if (added) {
      it->second.entry = {{"sweep_id", id.empty() ? json() : json(id)},
                          {"name", id.empty() ? "(runs outside a sweep)" : id},
                          {"created_at", json()},
                          {"statuses", json::object()},
                          {"problems", json::array()},
                          {"scheduler_jobs", json::array()}};
      order.push_back(id);
    }
    add_run(it->second, runs);
  }
  json out = {{"sweeps", json::array()}};
  for (const auto& id : order) {
    SweepTally& t = tallies[id];
    finish(t, now_unix_s);
    if (!id.empty()) add_study_progress(db, t.entry, id);
    out["sweeps"].push_back(std::move(t.entry));
  }
  return out;
}

nlohmann::json milestones_endpoint(results::Connection& db, const Query& query) {
  const RequestParams params(query, {{"sweep"}});
  const auto sweep = params.identifier("sweep");
  results::Statement s(db,
                       "SELECT m.run_id, r.optimizer, r.global_batch, r.base_lr, r.seed, m.metric, "
                       "m.target, m.step, m.epoch, m.samples, m.wall_s FROM milestones m JOIN runs "
                       "r ON r.run_id = m.run_id WHERE ?1 IS NULL OR r.sweep_id = ?1 "
                       "ORDER BY m.metric, m.target, r.optimizer, r.global_batch, m.run_id");
  s.bind_text(1, sweep);
  // Named as the page reads them, in the statement's column order.
  static const char* const kColumns[] = {"run_id", "optimizer", "global_batch", "base_lr",
                                         "seed",   "metric",    "target",       "step",
                                         "epoch",  "samples",   "wall_s"};
  json rows = json::array();
  while (s.step()) {
    json row = json::object();
    for (int i = 0; i < static_cast<int>(std::size(kColumns)); ++i) {
      row[kColumns[i]] = column_json(s, i);
    }
    rows.push_back(std::move(row));
  }
  return {{"rows", std::move(rows)}};
}

nlohmann::json report_endpoint(const std::string& db_path, const Query& query) {
  const RequestParams params(query, {{"sweep"}, {"group_by"}});
  analysis::ReportOptions options;
  options.sweep_id = params.identifier("sweep");
  const auto group_by = params.list("group_by", 8);
  if (!group_by.empty()) options.group_by = group_by;
  try {
    const auto report = analysis::build_report(db_path, options);
    return json::parse(analysis::format_report(report, results::QueryFormat::kJson));
  } catch (const InputError& e) {
    // An unknown group-by key the request gave: the report names it and lists the valid ones.
    // Anything else (the default keys missing from a database that changed, ...) is the
    // database's problem, not a parameter's.
    const std::string message = e.what();
    if (!group_by.empty() && message.find("--group-by") != std::string::npos) {
      throw BadRequest("group_by", message);
    }
    throw results::StoreError(db_path, "cannot build the report", message);
  }
}

nlohmann::json study_endpoint(const std::string& db_path, const Query& query) {
  const RequestParams params(query, {{"sweep"}});
  analysis::StudyReportOptions options;
  options.sweep_id = params.identifier("sweep");
  if (!analysis::has_study(db_path, options.sweep_id)) return {{"present", false}};
  const auto report = analysis::build_study_report(db_path, options);
  return {
      {"present", true},
      {"study", json::parse(analysis::format_study_report(report, results::QueryFormat::kJson))}};
}

}  // namespace batchlab::serve
