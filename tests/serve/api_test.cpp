// The JSON API against the fixture database of a real small sweep, checked against independent
// read-only SQL (never against numbers written into the test).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "results/rows.h"
#include "results/schema.h"
#include "results/sqlite_util.h"
#include "results/store.h"
#include "serve/api_curves.h"
#include "serve/api_layers.h"
#include "serve/api_runs.h"
#include "serve/api_sweeps.h"
#include "serve/dashboard_db.h"
#include "serve/errors.h"
#include "tests/cli/cli_runner.h"
#include "tests/serve/serve_test_support.h"

namespace batchlab::serve {
namespace {

using nlohmann::json;
using testing::column_of;
using testing::count_of;
using testing::fixture_db;

json call(json (*endpoint)(results::Connection&, const Query&), const Query& q) {
  DashboardDb db(fixture_db());
  return db.with_connection([&](results::Connection& c) { return endpoint(c, q); });
}

json call(json (*endpoint)(DashboardDb&, const Query&), const Query& q) {
  DashboardDb db(fixture_db());
  return endpoint(db, q);
}

template <class Endpoint>
std::string refused_param(Endpoint endpoint, const Query& q) {
  try {
    call(endpoint, q);
  } catch (const BadRequest& e) {
    return e.param();
  }
  return "(accepted)";
}

std::vector<std::string> all_runs() { return column_of("SELECT run_id FROM runs ORDER BY run_id"); }

std::string joined(const std::vector<std::string>& ids) {
  std::string s;
  for (const auto& id : ids) s += (s.empty() ? "" : ",") + id;
  return s;
}

TEST(ServeApi, RunsListEveryRunWithItsLastEvaluation) {
  const json out = call(runs_endpoint, {});
  ASSERT_EQ(out["rows"].size(), static_cast<std::size_t>(count_of("SELECT count(*) FROM runs")));
  EXPECT_EQ(out["total"], out["rows"].size());
  EXPECT_NE(std::find(out["config_keys"].begin(), out["config_keys"].end(), "optim.base_lr"),
            out["config_keys"].end());
  for (const auto& row : out["rows"]) {
    const auto last =
        column_of("SELECT test_acc FROM evals WHERE run_id = ?1 ORDER BY step DESC LIMIT 1",
                  {row["run_id"].get<std::string>()});
    if (last.empty() || last[0].empty()) {
      EXPECT_TRUE(row["final_test_acc"].is_null()) << row["run_id"];
    } else {
      EXPECT_DOUBLE_EQ(row["final_test_acc"].get<double>(), std::stod(last[0])) << row["run_id"];
    }
  }
}

TEST(ServeApi, RunsFilterAndSortByColumnsAndConfigKeys) {
  const json lars = call(runs_endpoint, {{"filter", "optimizer:eq:lars"}});
  EXPECT_EQ(lars["rows"].size(),
            static_cast<std::size_t>(count_of("SELECT count(*) FROM runs WHERE optimizer='lars'")));
  // A config key, compared as a number: the runs with the diverging learning rate.
  const json high = call(runs_endpoint, {{"filter", "optim.base_lr:gt:10"},
                                         {"keys", "optim.base_lr,schedule.epochs"}});
  ASSERT_EQ(high["rows"].size(),
            static_cast<std::size_t>(count_of("SELECT count(*) FROM runs WHERE base_lr > 10")));
  for (const auto& row : high["rows"]) {
    EXPECT_EQ(row["optim.base_lr"], "40");
    EXPECT_EQ(row["schedule.epochs"], "2");
  }
  // Two filters combine; sorting by a column, descending.
  const json both = call(runs_endpoint, {{"filter", "optimizer:eq:sgd"},
                                         {"filter", "global_batch:ge:128"},
                                         {"sort", "base_lr"},
                                         {"order", "desc"}});
  ASSERT_EQ(both["rows"].size(),
            static_cast<std::size_t>(count_of("SELECT count(*) FROM runs WHERE optimizer='sgd' AND "
                                              "global_batch >= 128")));
  for (std::size_t i = 1; i < both["rows"].size(); ++i) {
    EXPECT_GE(both["rows"][i - 1]["base_lr"].get<double>(),
              both["rows"][i]["base_lr"].get<double>());
  }
  const json by_status = call(runs_endpoint, {{"filter", "status:contains:DIVER"}});
  EXPECT_EQ(
      by_status["rows"].size(),
      static_cast<std::size_t>(count_of("SELECT count(*) FROM runs WHERE status='diverged'")));
}

TEST(ServeApi, RunsRefuseKeysThatAreNeitherColumnsNorConfigKeys) {
  EXPECT_EQ(refused_param(runs_endpoint, {{"sort", "password"}}), "sort");
  EXPECT_EQ(refused_param(runs_endpoint, {{"sort", "status; DROP TABLE runs"}}), "sort");
  EXPECT_EQ(refused_param(runs_endpoint, {{"keys", "optim.base_lr,sqlite_master"}}), "keys");
  EXPECT_EQ(refused_param(runs_endpoint, {{"filter", "optimizer:like:lars"}}), "filter");
  EXPECT_EQ(refused_param(runs_endpoint, {{"filter", "optimizer"}}), "filter");
  EXPECT_EQ(refused_param(runs_endpoint, {{"order", "sideways"}}), "order");
  EXPECT_EQ(refused_param(runs_endpoint, {{"sweep", "x' OR '1'='1"}}), "sweep");
  // A value is data, never SQL: it matches nothing and changes nothing.
  const json out = call(runs_endpoint, {{"filter", "status:eq:done' OR '1'='1"}});
  EXPECT_TRUE(out["rows"].empty());
  EXPECT_EQ(out["total"], count_of("SELECT count(*) FROM runs"));
}

TEST(ServeApi, CurvesAreTheRowsOfTheDatabase) {
  const auto ids = all_runs();
  const json out =
      call(curves_endpoint,
           {{"runs", joined(ids)}, {"y", "train_loss"}, {"x", "samples"}, {"points", "10000"}});
  EXPECT_EQ(out["source"], "steps");
  ASSERT_EQ(out["series"].size(), ids.size());
  for (const auto& series : out["series"]) {
    const std::string id = series["run_id"];
    const auto xs = column_of("SELECT samples FROM steps WHERE run_id = ?1 ORDER BY step", {id});
    const auto ys = column_of("SELECT train_loss FROM steps WHERE run_id = ?1 ORDER BY step", {id});
    ASSERT_EQ(series["x"].size(), xs.size()) << id;
    EXPECT_EQ(series["rows"], xs.size());
    for (std::size_t i = 0; i < xs.size(); ++i) {
      EXPECT_DOUBLE_EQ(series["x"][i].get<double>(), std::stod(xs[i]));  // whole numbers: exact
      if (ys[i].empty()) {
        EXPECT_TRUE(series["y"][i].is_null());
      } else {  // served to 7 significant digits
        const double want = std::stod(ys[i]);
        EXPECT_NEAR(series["y"][i].get<double>(), want, 1e-6 * std::fabs(want));
      }
    }
    EXPECT_NE(series["label"].get<std::string>().find("B="), std::string::npos);
  }
}

TEST(ServeApi, CurvesAreDownsampledKeepingTheExtremes) {
  const std::string id =
      column_of("SELECT run_id FROM steps GROUP BY run_id ORDER BY count(*) DESC LIMIT 1").at(0);
  const json out = call(curves_endpoint, {{"runs", id}, {"y", "train_loss"}, {"points", "10"}});
  const json& y = out["series"][0]["y"];
  EXPECT_LE(y.size(), 10u);
  EXPECT_GT(out["series"][0]["rows"].get<int>(), 10);
  const double max_loss =
      std::stod(column_of("SELECT max(train_loss) FROM steps WHERE run_id = ?1", {id}).at(0));
  double served_max = -1;
  for (const auto& v : y) {
    if (!v.is_null()) served_max = std::max(served_max, v.get<double>());
  }
  EXPECT_NEAR(served_max, max_loss, 1e-6 * max_loss);
}

TEST(ServeApi, CurvesOfEvaluationsAndTheirRefusals) {
  const auto ids = all_runs();
  const json out = call(curves_endpoint, {{"runs", ids.at(0)}, {"y", "val_acc"}, {"x", "wall_s"}});
  EXPECT_EQ(out["source"], "evals");
  EXPECT_EQ(out["series"][0]["rows"],
            count_of("SELECT count(*) FROM evals WHERE run_id = ?1", {ids.at(0)}));
  EXPECT_EQ(refused_param(curves_endpoint, {{"runs", ids.at(0)}, {"y", "password"}}), "y");
  EXPECT_EQ(refused_param(curves_endpoint, {{"runs", ids.at(0)}, {"x", "step; --"}}), "x");
  EXPECT_EQ(refused_param(curves_endpoint, {{"runs", ids.at(0)}, {"points", "1e9"}}), "points");
  EXPECT_EQ(refused_param(curves_endpoint, {}), "runs");
  EXPECT_THROW(call(curves_endpoint, {{"runs", "0000000000000000"}}), NotFound);
}

TEST(ServeApi, LayersAreALayerByStepMatrixOfTheRecordedValues) {
  const std::string id =
      column_of("SELECT run_id FROM layer_stats GROUP BY run_id ORDER BY run_id LIMIT 1").at(0);
  const json out = call(layers_endpoint, {{"run", id}, {"steps", "4000"}});
  const auto layers =
      count_of("SELECT count(DISTINCT layer) FROM layer_stats WHERE run_id = ?1", {id});
  const auto steps =
      count_of("SELECT count(DISTINCT step) FROM layer_stats WHERE run_id = ?1", {id});
  ASSERT_EQ(out["layers"].size(), static_cast<std::size_t>(layers));
  ASSERT_EQ(out["steps"].size(), static_cast<std::size_t>(steps));
  for (std::size_t i = 1; i < out["layers"].size(); ++i) {
    EXPECT_TRUE(natural_less(out["layers"][i - 1], out["layers"][i]));
  }
  // Every cell is the database's value of that (layer, step).
  for (std::size_t li = 0; li < out["layers"].size(); li += 7) {
    for (std::size_t si = 0; si < out["steps"].size(); ++si) {
      const auto v = column_of(
          "SELECT ratio FROM layer_stats WHERE run_id = ?1 AND layer = ?2 AND step = ?3",
          {id, out["layers"][li].get<std::string>(), out["steps"][si].get<std::int64_t>()});
      const json& cell = out["values"][li][si];
      if (v.empty() || v[0].empty()) {
        EXPECT_TRUE(cell.is_null());
      } else {  // served to 4 significant digits
        const double want = std::stod(v[0]);
        EXPECT_NEAR(cell.get<double>(), want, 5e-4 * std::fabs(want));
      }
    }
  }
  // Fewer columns than recorded steps: evenly spaced real steps, the first and last kept.
  const json thin =
      call(layers_endpoint, {{"run", id}, {"steps", "10"}, {"metric", "trust_ratio"}});
  EXPECT_LE(thin["steps"].size(), 10u);
  EXPECT_EQ(thin["steps"].front(), out["steps"].front());
  EXPECT_EQ(thin["steps"].back(), out["steps"].back());
  EXPECT_EQ(refused_param(layers_endpoint, {{"run", id}, {"metric", "weight_norm FROM runs"}}),
            "metric");
}

TEST(ServeApi, LayerNamesSortNaturally) {
  EXPECT_TRUE(natural_less("layer2.0.conv1.weight", "layer10.0.conv1.weight"));
  EXPECT_TRUE(natural_less("layer1.9.bn", "layer1.10.bn"));
  EXPECT_FALSE(natural_less("layer10", "layer2"));
  EXPECT_TRUE(natural_less("conv1.weight", "fc.weight"));
  EXPECT_FALSE(natural_less("a", "a"));
  EXPECT_TRUE(natural_less("a", "a.b"));
}

TEST(ServeApi, SweepsCountRunsByStatusAndListTheDivergences) {
  const json out =
      call([](results::Connection& c, const Query& q) { return sweeps_endpoint(c, q, 0.0); }, {});
  ASSERT_EQ(out["sweeps"].size(), 1u);
  const json& s = out["sweeps"][0];
  EXPECT_EQ(s["name"], "serve_fixture");
  EXPECT_EQ(s["runs"], count_of("SELECT count(*) FROM runs"));
  EXPECT_EQ(s["statuses"].value("diverged", 0),
            count_of("SELECT count(*) FROM runs WHERE status='diverged'"));
  EXPECT_EQ(s["statuses"].value("done", 0),
            count_of("SELECT count(*) FROM runs WHERE status='done'"));
  EXPECT_DOUBLE_EQ(s["progress"].get<double>(), 1.0);
  EXPECT_TRUE(s["eta_s"].is_null());
  ASSERT_EQ(
      s["problems"].size(),
      static_cast<std::size_t>(count_of("SELECT count(*) FROM runs WHERE status='diverged'")));
  for (const auto& p : s["problems"]) {
    EXPECT_EQ(p["status"], "diverged");
    EXPECT_GT(p["step"].get<int>(), 0);
    EXPECT_NE(p["error"].get<std::string>().find("divergence"), std::string::npos) << p["error"];
  }
}

TEST(ServeApi, SweepsListTheSlurmJobsOfRunsThatMayStillTakeStepsAndAStudysProgress) {
  cli::testing::TempDir dir{"servejobs"};
  const std::string path = (dir.path / "jobs.db").string();
  {
    results::Store store(path);
    store.upsert_sweep({"s", "s", "[sweep]", std::nullopt});
    const std::vector<std::array<const char*, 3>> runs = {{"a", "planned", "41_0"},
                                                          {"b", "running", "42_0"},
                                                          {"c", "done", "40_0"},
                                                          {"d", "running", nullptr}};
    for (const auto& [id, status, job] : runs) {
      results::RunRow row;
      row.run_id = id;
      row.sweep_id = "s";
      row.status = status;
      store.upsert_run(row);
      if (job != nullptr) store.set_scheduler_job(id, job);
    }
    // A study's cell, searching, with one trial ended and one running.
    results::StudyCellRow cell;
    cell.cell_id = "c1";
    cell.sweep_id = "s";
    cell.optimizer = "adamw";
    cell.global_batch = 64;
    cell.cell_toml = "x";
    cell.target.metric = "val_acc";
    cell.target.value = 0.8;
    cell.lr_center = 0.01;
    cell.lr_factor = 2.0;
    cell.cap_steps = 100;
    store.write_study_cells({cell});
    results::StudyTrialRow reached, running;
    reached.run_id = "c";
    reached.cell_id = "c1";
    reached.outcome = "reached";
    running.run_id = "b";
    running.cell_id = "c1";
    running.outcome = "running";
    running.lr_index = 1;
    store.write_study_trials({reached, running});
  }
  DashboardDb db(path);
  const json out =
      db.with_connection([](results::Connection& c) { return sweeps_endpoint(c, Query{}, 0.0); });
  ASSERT_EQ(out["sweeps"].size(), 1u);
  const json& jobs = out["sweeps"][0]["scheduler_jobs"];
  ASSERT_EQ(jobs.size(), 2u) << jobs.dump();  // c has ended, d is not a Slurm run
  EXPECT_EQ(jobs[0], json({{"job", "41_0"}, {"run_id", "a"}, {"state", "queued"}}));
  EXPECT_EQ(jobs[1], json({{"job", "42_0"}, {"run_id", "b"}, {"state", "running"}}));
  EXPECT_EQ(out["sweeps"][0]["study"],
            json({{"cells", {{"searching", 1}}}, {"trials", {{"reached", 1}, {"running", 1}}}}));
}

TEST(ServeApi, MilestonesReportAndStudy) {
  DashboardDb db(fixture_db());
  const json m = db.with_connection([](results::Connection& c) {
    return milestones_endpoint(c, {{"sweep", "serve_fixture"}});
  });
  EXPECT_EQ(m["rows"].size(),
            static_cast<std::size_t>(count_of("SELECT count(*) FROM milestones")));
  const json report = report_endpoint(fixture_db(), {{"group_by", "optimizer,global_batch"}});
  EXPECT_EQ(report["group_by"], json::array({"optimizer", "global_batch"}));
  EXPECT_EQ(report["rows"].size(),
            static_cast<std::size_t>(count_of("SELECT count(*) FROM (SELECT DISTINCT optimizer, "
                                              "global_batch FROM runs)")));
  try {
    report_endpoint(fixture_db(), {{"group_by", "optimizer);DROP TABLE runs;--"}});
    ADD_FAILURE() << "an unknown group-by key was accepted";
  } catch (const BadRequest& e) {
    EXPECT_EQ(e.param(), "group_by");
  }
  EXPECT_EQ(study_endpoint(fixture_db(), {}), json({{"present", false}}));
}

TEST(ServeApi, ProgressAndEtaOfARunningSweep) {
  // progress = mean of per-run fractions: done 1, running 50/100, planned 0 -> 0.5; 100 s after
  // the first start, the ETA is another 100 s.
  cli::testing::TempDir dir("serve-eta");
  const std::string path = dir.file("eta.db");
  {
    results::Connection w(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    results::migrate(w);
    w.exec(
        "INSERT INTO sweeps VALUES ('s', 's', NULL, '2026-01-01T00:00:00.000Z');"
        "INSERT INTO runs(run_id, sweep_id, status, total_steps, last_step, started_at) VALUES "
        "('a', 's', 'done', 100, 100, '2026-01-01T00:00:00.000Z'),"
        "('b', 's', 'running', 100, 50, '2026-01-01T00:00:10.000Z'),"
        "('c', 's', 'planned', 100, NULL, NULL)",
        "test rows");
  }
  DashboardDb db(path);
  const double t0 = *results::utc_seconds("2026-01-01T00:00:00.000Z");
  const json out = db.with_connection(
      [&](results::Connection& c) { return sweeps_endpoint(c, {}, t0 + 100.0); });
  const json& s = out["sweeps"][0];
  EXPECT_DOUBLE_EQ(s["progress"].get<double>(), 0.5);
  EXPECT_NEAR(s["eta_s"].get<double>(), 100.0, 1e-9);
  EXPECT_EQ(s["steps_done"], 150);
  EXPECT_EQ(s["steps_total"], 300);
  EXPECT_FALSE(results::utc_seconds("yesterday").has_value());
}

}  // namespace
}  // namespace batchlab::serve
