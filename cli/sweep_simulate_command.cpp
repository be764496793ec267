// `batchlab sweep simulate STUDY.toml --from DB [--workers 2,8,64]`: how long the study would take
// with N workers under today's spec order and under the shortest-study order (issue 24), replayed
// on a virtual clock from the trials a finished run of the same study recorded in DB
// (sweeps/study/simulation.h). Runs nothing, writes nothing to DB.
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <optional>

#include "analysis/table_builder.h"
#include "cli/app.h"
#include "cli/args.h"
#include "cli/sweep_commands.h"
#include "cli/sweep_context.h"
#include "results/errors.h"
#include "results/ingest.h"
#include "results/query_result.h"
#include "results/store.h"
#include "sweeps/study/plan.h"
#include "sweeps/study/simulation.h"

namespace batchlab::cli {

namespace {

namespace fs = std::filesystem;
namespace study = sweeps::study;

std::vector<size_t> worker_counts(const std::string& text) {
  std::vector<size_t> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    size_t used = 0;
    long long n = 0;
    try {
      n = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || n < 1 || n > 4096) {
      throw UsageError(
          fmt::format("--workers {}: give worker counts from 1 to 4096, "
                      "comma-separated (e.g. 2,8,64)",
                      text));
    }
    out.push_back(static_cast<size_t>(n));
    start = comma + 1;
  }
  return out;
}

// A scratch folder for the simulations' decisions, removed with the object.
struct Scratch {
  fs::path dir;
  Scratch() {
    dir = fs::temp_directory_path() / fmt::format("batchlab-simulate-{}", ::getpid());
    fs::create_directories(dir);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

std::string minutes(double seconds) { return fmt::format("{:.1f}", seconds / 60.0); }

}  // namespace

int cmd_sweep_simulate(const std::vector<std::string>& argv) {
  const std::string usage = "batchlab sweep simulate STUDY.toml --from DB [--workers 2,8,64]";
  Args args(argv, {{"from", true, false}, {"workers", true, false}}, usage);
  const auto from = args.value("from");
  if (!from) throw UsageError(fmt::format("missing --from DB\nusage: {}", usage));
  std::error_code ec;
  if (!fs::is_regular_file(*from, ec)) {
    throw UsageError(
        fmt::format("--from {}: no such database file (a finished run of the study "
                    "whose trials the simulation replays)",
                    *from));
  }
  const auto workers = worker_counts(args.value("workers").value_or("2,8,64"));
  const auto ctx = load_sweep(args.positional("STUDY.toml"), /*keep_config_toml=*/false);
  if (!ctx.spec.study) {
    throw UsageError(
        fmt::format("{}: not a study (no [study] section); simulate replays a "
                    "scaling study's trials",
                    ctx.spec.source));
  }
  const auto plan = study::plan_study(ctx.spec, ctx.plan, cli_plan_options());
  // A copy: the Store migrates what it opens, and DB must stay as it is. A consistent one: a
  // WAL-mode file's latest rows may still be in its -wal, which a plain file copy leaves behind.
  Scratch scratch;
  const fs::path copy = scratch.dir / "recorded.db";
  std::optional<results::Store> opened;
  try {
    results::snapshot_database(*from, copy.string());
    opened.emplace(copy.string());
  } catch (const results::StoreError& e) {
    throw InputError(fmt::format(
        "--from {}: not a batchlab database this batchlab can read ({}); pass the database a "
        "finished run of the study wrote (its [sweep] results key)",
        *from, e.what()));
  }
  results::Store& recorded = *opened;
  if (recorded.read_study_trials(ctx.spec.name).empty()) {
    throw InputError(fmt::format(
        "--from {}: holds none of study {}'s trials, so there is nothing to replay; pass the "
        "database a run of this study wrote ({} by its spec)",
        *from, ctx.spec.name, ctx.spec.results));
  }
  analysis::TableBuilder b;
  int run = 0;
  for (size_t n : workers) {
    std::vector<study::SimulationResult> r;
    for (auto policy : {study::SchedulePolicy::spec_order, study::SchedulePolicy::shortest_study}) {
      const auto db = scratch.dir / fmt::format("decisions-{}.db", run++);
      r.push_back(study::simulate_study(plan, recorded, db.string(), n, policy));
    }
    b.integer("workers", static_cast<long long>(n));
    b.number("spec_order_min", r[0].makespan_s / 60.0, "{:.1f}");
    b.number("shortest_study_min", r[1].makespan_s / 60.0, "{:.1f}");
    b.number("new/old", r[1].makespan_s / r[0].makespan_s, "{:.3f}");
    b.number("lower_bound_min", r[0].busy_s / 60.0 / static_cast<double>(n), "{:.1f}");
    b.text("trials", fmt::format("{} / {}", r[0].trials, r[1].trials));
    b.text("missing", fmt::format("{} / {}", r[0].missing, r[1].missing));
    b.text("busy_min", fmt::format("{} / {}", minutes(r[0].busy_s), minutes(r[1].busy_s)));
    b.end_row();
  }
  fmt::print(
      "Study {} replayed from {} on a virtual clock: makespan (first start to last end) under "
      "today's spec order and the shortest-study order (docs/sweeps.md). trials, missing and "
      "busy: spec-order / shortest-study (busy = the trials' durations summed); lower_bound = "
      "busy / workers under spec order.\n{}",
      ctx.spec.name, *from, results::format_result(b.table, results::QueryFormat::kTable));
  return kExitOk;
}

}  // namespace batchlab::cli
