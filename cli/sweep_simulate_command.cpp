// `batchlab sweep simulate STUDY.toml --from DB [--workers 2,8,64]`: how long the study would take
// with N workers under today's spec order and under the shortest-study order (issue 24), replayed
// on a virtual clock from the trials a finished run of the same study recorded in DB
// (sweeps/study/simulation.h). Runs nothing, writes nothing to DB.
#include <fmt/format.h>

#include "analysis/table_builder.h"
#include "cli/app.h"
#include "cli/args.h"
#include "cli/recorded_study.h"
#include "cli/sweep_commands.h"
#include "cli/sweep_context.h"
#include "results/query_result.h"
#include "results/store.h"
#include "sweeps/study/plan.h"
#include "sweeps/study/simulation.h"

namespace batchlab::cli {

namespace {

namespace study = sweeps::study;

std::string minutes(double seconds) { return fmt::format("{:.1f}", seconds / 60.0); }

}  // namespace

int cmd_sweep_simulate(const std::vector<std::string>& argv) {
  const std::string usage = "batchlab sweep simulate STUDY.toml --from DB [--workers 2,8,64]";
  Args args(argv, {{"from", true, false}, {"workers", true, false}}, usage);
  const auto from = args.value("from");
  if (!from) throw UsageError(fmt::format("missing --from DB\nusage: {}", usage));
  const auto workers = parse_worker_counts(args.value("workers").value_or("2,8,64"), usage);
  const auto ctx = load_sweep(args.positional("STUDY.toml"), /*keep_config_toml=*/false);
  if (!ctx.spec.study) {
    throw UsageError(
        fmt::format("{}: not a study (no [study] section); simulate replays a "
                    "scaling study's trials",
                    ctx.spec.source));
  }
  const auto plan = study::plan_study(ctx.spec, ctx.plan, cli_plan_options());
  RecordedStudy copy(*from, "simulate",
                     "the database a finished run of the study wrote (its [sweep] results key)");
  results::Store& recorded = copy.store();
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
      const auto db = copy.dir() / fmt::format("decisions-{}.db", run++);
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
