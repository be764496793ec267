// A fixed-budget search's database written by hand (budget_cells rows, the best runs and their
// final evaluations) for the report and comparison tests.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>

#include "results/store.h"
#include "tests/cli/cli_runner.h"

namespace batchlab::analysis::budget_testing {

struct SearchDb {
  cli::testing::TempDir dir{"budgetreport"};
  std::string path = dir.file("search.db");
  results::Store store{path};

  double val_shift = -0.01;  // a cell's held-out loss: its test loss plus this

  SearchDb() {
    results::SweepRow sweep;
    sweep.sweep_id = sweep.name = "s";
    store.upsert_sweep(sweep);
  }

  // A cell of `series` at `batch` and `seed` whose best run ended with test loss `loss`.
  void cell(const std::string& series, int64_t batch, int64_t seed, double loss,
            const std::string& best_point = "optim.base_lr = 1\n",
            std::optional<std::string> config_toml = std::nullopt) {
    cell_with_steps(series, batch, seed, loss, 1024 / batch, best_point, std::move(config_toml));
  }

  // The same with the cell's budget in steps given (a batch-size ramp takes more steps than its
  // final batch alone would).
  void cell_with_steps(const std::string& series, int64_t batch, int64_t seed, double loss,
                       int64_t steps, const std::string& best_point = "optim.base_lr = 1\n",
                       std::optional<std::string> config_toml = std::nullopt) {
    const std::string id = fmt::format("{}-{}-{}", series, batch, seed);
    results::BudgetCellRow c;
    c.cell_id = id;
    c.sweep_id = "s";
    c.optimizer = series;
    c.series = series;
    c.global_batch = batch;
    c.seed = seed;
    c.cell_toml = "";
    c.budget_steps = steps;
    c.rung_steps = fmt::format("{},{}", steps / 2, steps);
    c.points = seed == 0 ? 4 : 1;
    c.knobs =
        "optim.base_lr = [0.5, 1, 2, 4]\nschedule.warmup_fraction = [0.05, 0.2]\n"
        "optim.always_adapt = [false, true]\n";
    c.status = "done";
    c.best_run_id = "run-" + id;
    c.best_point = best_point;
    if (seed > 0) c.first_seed_cell = fmt::format("{}-{}-0", series, batch);
    c.trials = seed == 0 ? 4 : 1;
    c.samples_trained = (seed == 0 ? 3 : 1) * 1024;
    store.write_budget_cells({c});
    results::RunRow run;
    run.run_id = *c.best_run_id;
    run.status = "done";
    run.config_toml = std::move(config_toml);
    store.upsert_run(run);
    results::EvalRow e;
    e.run_id = run.run_id;
    e.step = c.budget_steps;
    e.epoch = 1.0;
    e.test_loss = loss;
    e.test_acc = 0.5 - loss / 100;
    e.val_loss = loss + val_shift;
    store.write_evals({e});
  }
};

}  // namespace batchlab::analysis::budget_testing
