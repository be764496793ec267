// `batchlab sweep plan SWEEP.toml [--format table|json]`: expand and validate, run nothing. Lists
// every job with its coordinates, run id and derived values, the status the sweep database already
// has for it, and the runs recorded for this sweep that no longer belong to the spec (their config
// changed, so they got new run ids, or they were removed).
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "cli/app.h"
#include "cli/args.h"
#include "cli/sweep_budget.h"
#include "cli/sweep_commands.h"
#include "cli/sweep_context.h"
#include "cli/sweep_study.h"
#include "results/query.h"
#include "results/query_result.h"

namespace batchlab::cli {

namespace {

std::string opt(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "?"; }
std::string json_opt(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "null"; }

// A coordinate as JSON: numbers and booleans as themselves, anything else as a string.
std::string json_value(const std::string& text) {
  if (text == "true" || text == "false") return text;
  if (!text.empty()) {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str() + text.size() && std::isfinite(v) &&
        text.find_first_of("xXnN") == std::string::npos) {
      return text;
    }
  }
  return json_string(text);
}

}  // namespace

std::map<std::string, std::string> recorded_statuses(const std::string& db_path,
                                                     const std::string& sweep_id) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  if (!std::filesystem::exists(db_path, ec)) return out;
  const auto result = results::query_readonly(
      db_path, "SELECT run_id, status FROM runs WHERE sweep_id = ?", {sweep_id});
  for (const auto& row : result.rows) {
    if (row[0] && row[1]) out.emplace(*row[0], *row[1]);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> stale_runs(
    const sweeps::Plan& plan, const std::map<std::string, std::string>& recorded) {
  std::set<std::string> planned;
  for (const auto& job : plan.jobs) planned.insert(job.run_id);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [id, status] : recorded) {
    if (planned.count(id) == 0) out.emplace_back(id, status);
  }
  return out;
}

int cmd_sweep_plan(const std::vector<std::string>& argv) {
  Args args(argv, {{"format", true, false}},
            "batchlab sweep plan SWEEP.toml [--format table|json]");
  const std::string format = args.value("format").value_or("table");
  if (format != "table" && format != "json") {
    throw UsageError(
        fmt::format("--format {}: use table or json\nusage: {}", format, args.usage()));
  }
  const auto ctx = load_sweep(args.positional("SWEEP.toml"), /*keep_config_toml=*/false);
  if (ctx.spec.study) return print_study_plan(ctx, format);
  if (ctx.spec.search) return print_budget_plan(ctx, format);
  const auto& plan = ctx.plan;
  const auto recorded = recorded_statuses(ctx.spec.results, plan.sweep_name);
  const auto stale = stale_runs(plan, recorded);
  auto status_of = [&](const std::string& id) {
    auto it = recorded.find(id);
    return it == recorded.end() ? std::string("new") : it->second;
  };

  fmt::memory_buffer out;
  if (format == "json") {
    fmt::format_to(std::back_inserter(out),
                   "{{\"sweep\": {}, \"results\": {}, \"runs_dir\": {}, \"count\": {}, "
                   "\"combinations\": {}, \"excluded\": {}, \"collapsed\": {},\n \"jobs\": [",
                   json_string(plan.sweep_name), json_string(ctx.spec.results),
                   json_string(ctx.spec.runs_dir), plan.jobs.size(), plan.combinations,
                   plan.excluded, plan.collapsed);
    for (size_t i = 0; i < plan.jobs.size(); ++i) {
      const auto& job = plan.jobs[i];
      const auto& d = job.derived;
      std::string coords;
      for (size_t k = 0; k < plan.coordinate_keys.size(); ++k) {
        coords += fmt::format("{}{}: {}", k ? ", " : "", json_string(plan.coordinate_keys[k]),
                              json_value(job.coordinates[k]));
      }
      fmt::format_to(std::back_inserter(out),
                     "{}\n  {{\"index\": {}, \"run_id\": \"{}\", \"coordinates\": {{{}}}, "
                     "\"peak_lr\": {}, \"warmup_steps\": {}, \"steps_per_epoch\": {}, "
                     "\"total_steps\": {}, \"micro_batch\": {}, \"accum_steps\": {}, "
                     "\"train_size\": {}, \"dropped_per_epoch\": {}, \"status\": \"{}\"}}",
                     i ? "," : "", i + 1, job.run_id, coords, d.peak_lr, json_opt(d.warmup_steps),
                     json_opt(d.steps_per_epoch), json_opt(d.total_steps), d.micro_batch,
                     d.accum_steps, json_opt(d.train_size), json_opt(d.dropped_per_epoch),
                     status_of(job.run_id));
    }
    fmt::format_to(std::back_inserter(out), "],\n \"stale_runs\": [");
    for (size_t i = 0; i < stale.size(); ++i) {
      fmt::format_to(std::back_inserter(out), "{}{{\"run_id\": \"{}\", \"status\": \"{}\"}}",
                     i ? ", " : "", stale[i].first, stale[i].second);
    }
    fmt::format_to(std::back_inserter(out), "]}}\n");
  } else {
    results::QueryResult table;
    table.columns = {"#"};
    for (const auto& k : plan.coordinate_keys) table.columns.push_back(k);
    for (const char* c : {"run_id", "peak_lr", "warmup", "steps/epoch", "total_steps", "accum",
                          "dropped/epoch", "status"}) {
      table.columns.emplace_back(c);
    }
    using VT = results::ValueType;
    for (size_t i = 0; i < plan.jobs.size(); ++i) {
      const auto& job = plan.jobs[i];
      const auto& d = job.derived;
      std::vector<std::optional<std::string>> row = {std::to_string(i + 1)};
      std::vector<VT> types = {VT::kInteger};
      for (const auto& c : job.coordinates) {
        row.emplace_back(c);
        types.push_back(VT::kText);
      }
      for (auto [text, type] :
           std::vector<std::pair<std::string, VT>>{{job.run_id, VT::kText},
                                                   {fmt::format("{:.6g}", d.peak_lr), VT::kReal},
                                                   {opt(d.warmup_steps), VT::kInteger},
                                                   {opt(d.steps_per_epoch), VT::kInteger},
                                                   {opt(d.total_steps), VT::kInteger},
                                                   {std::to_string(d.accum_steps), VT::kInteger},
                                                   {opt(d.dropped_per_epoch), VT::kInteger},
                                                   {status_of(job.run_id), VT::kText}}) {
        row.emplace_back(std::move(text));
        types.push_back(type);
      }
      table.rows.push_back(std::move(row));
      table.types.push_back(std::move(types));
    }
    fmt::format_to(std::back_inserter(out), "{}", results::format_table(table));
    fmt::format_to(std::back_inserter(out),
                   "\n{} jobs ({} combinations, {} excluded, {} collapsed into an earlier job with "
                   "the same config) -> {} (run folders in {})\n",
                   plan.jobs.size(), plan.combinations, plan.excluded, plan.collapsed,
                   ctx.spec.results, ctx.spec.runs_dir);
    if (!stale.empty()) {
      fmt::format_to(std::back_inserter(out),
                     "{} run{} recorded for sweep {} no longer belong{} to the spec (its config "
                     "changed or was removed):\n",
                     stale.size(), stale.size() == 1 ? "" : "s", plan.sweep_name,
                     stale.size() == 1 ? "s" : "");
      for (const auto& [id, status] : stale) {
        fmt::format_to(std::back_inserter(out), "  {}  {}\n", id, status);
      }
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

}  // namespace batchlab::cli
