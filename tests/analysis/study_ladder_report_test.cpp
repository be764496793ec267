// The batch ladder in `batchlab report` (analysis/study_ladder.h): from hand-written study rows and
// the sweeps' stored specs, each ladder group's measured batches and the reason it stopped, in the
// text and the JSON report, recomputed from the rows alone.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "analysis/study_report.h"
#include "tests/analysis/hand_db.h"
#include "tests/cli/cli_runner.h"

namespace batchlab::analysis {
namespace {

using cli::testing::contains;
using cli::testing::run_batchlab;
using cli::testing::shell_quote;
using cli::testing::TempDir;

const char* kSweepsDdl =
    "CREATE TABLE sweeps(sweep_id TEXT NOT NULL PRIMARY KEY, name TEXT NOT NULL, spec_toml TEXT, "
    "created_at TEXT);";

std::string ladder_spec(int64_t start, int64_t ceiling, const std::string& more) {
  return fmt::format(
      "schema_version = 1\n[sweep]\nname = \"x\"\nexperiment = \"b.toml\"\n[study]\n"
      "target = {{ metric = \"val_acc\", value = 0.85 }}\n[study.ladder]\nstart = {}\n"
      "ceiling = {}\n{}\n",
      start, ceiling, more);
}

void cell(testing::HandDb& db, const std::string& sweep, const std::string& optimizer,
          int64_t batch, int64_t seed, std::optional<double> steps, const char* status = nullptr) {
  const std::string id = fmt::format("{}-{}-{}-{}", sweep, optimizer, batch, seed);
  const std::string st = status ? status : (steps ? "reached" : "censored");
  db.exec(fmt::format(
      "INSERT INTO study_cells VALUES('{}', '{}', '{}', {}, {}, '\"optim.name\" = \"{}\"\n"
      "\"batch.global\" = {}\n\"train.seed\" = {}\n', 'val_acc', 0.85, 0.1, 2.0, 500, 10, '{}', "
      "NULL, 0.1, {}, {}, '2025-01-01T00:00:00Z')",
      id, sweep, optimizer, batch, seed, optimizer, batch, seed, st,
      steps ? fmt::format("{}", *steps) : "NULL",
      steps ? fmt::format("{}", *steps * batch) : "NULL"));
}

// "flat": nesterov, seeds 0 and 1, 256..2048 of a ladder to 4096, min_gain 1.3: 1.5x, 1.2x, 1.11x
// (geometric means 600, 400, 333.3, 300): flattening at 2048. adam in the same sweep: 256 and 512
// with seed 1 censored at 512: cap. "top": sgd up to its ceiling 1024, 2x every doubling. "grid":
// a sweep without a ladder (no line for it). "open": a ladder whose batch 512 still searches.
std::string write_db(TempDir& dir) {
  const std::string path = dir.file("ladder.db", "");
  std::remove(path.c_str());
  testing::HandDb db(path);
  db.exec(testing::kStudyDdl);
  db.exec(kSweepsDdl);
  db.exec("INSERT INTO sweeps VALUES('flat', 'flat', '" +
          ladder_spec(256, 4096, "min_gain = 1.3\nflat_doublings = 2") + "', NULL)");
  db.exec("INSERT INTO sweeps VALUES('top', 'top', '" + ladder_spec(128, 1024, "") + "', NULL)");
  db.exec("INSERT INTO sweeps VALUES('grid', 'grid', 'schema_version = 1', NULL)");
  db.exec("INSERT INTO sweeps VALUES('open', 'open', '" + ladder_spec(256, 1024, "") + "', NULL)");
  const double flat[] = {600, 400, 333.3, 300};
  // The seeds spread by a different factor at each batch: their geometric mean is flat[i] exactly,
  // their arithmetic mean is not (it would give 1.23x, 1.49x, 0.99x).
  const double spread[] = {0.8, 0.5, 0.9, 0.6};
  for (int i = 0; i < 4; ++i) {
    const int64_t batch = int64_t{256} << i;
    cell(db, "flat", "nesterov", batch, 0, flat[i] * spread[i]);
    cell(db, "flat", "nesterov", batch, 1, flat[i] / spread[i]);
  }
  cell(db, "flat", "adam", 256, 0, 300.0);
  cell(db, "flat", "adam", 256, 1, 320.0);
  cell(db, "flat", "adam", 512, 0, 150.0);
  cell(db, "flat", "adam", 512, 1, std::nullopt);
  for (int i = 0; i < 4; ++i) cell(db, "top", "sgd", int64_t{128} << i, 0, 1600.0 / (1 << i));
  cell(db, "grid", "lamb", 256, 0, 100.0);
  cell(db, "grid", "lamb", 512, 0, 99.0);
  cell(db, "open", "lars", 256, 0, 200.0);
  cell(db, "open", "lars", 512, 0, std::nullopt, "searching");
  return path;
}

TEST(StudyLadderReport, SaysPerGroupWhichBatchesWereMeasuredAndWhyTheLadderStopped) {
  TempDir dir("ladder_report");
  const auto report = build_study_report(write_db(dir), {});
  std::map<std::string, StudyLadder> by_series;
  for (const auto& l : report.ladders) by_series[l.sweep_id + " " + l.series] = l;
  ASSERT_EQ(by_series.size(), 4u) << "no line for the sweep without a ladder";
  const auto& flat = by_series.at("flat nesterov");
  EXPECT_EQ(flat.batches, (std::vector<int64_t>{256, 512, 1024, 2048}));
  EXPECT_EQ(flat.stop, "flattening");
  EXPECT_EQ(ladder_line(flat),
            "ladder nesterov: 256..2048, stopped: flattening (1024->2048 saved 1.11x, "
            "512->1024 1.20x < 1.3x)");
  EXPECT_EQ(by_series.at("flat adam").stop, "cap");
  EXPECT_EQ(ladder_line(by_series.at("flat adam")),
            "ladder adam: 256..512, stopped: cap (batch 512: 1 of 2 seeds did not reach the "
            "target within the cap)");
  EXPECT_EQ(ladder_line(by_series.at("top sgd")),
            "ladder sgd: 128..1024, stopped: ceiling (1024; 512->1024 saved 2.00x)");
  EXPECT_EQ(by_series.at("open lars").stop, "");
  EXPECT_EQ(ladder_line(by_series.at("open lars")),
            "ladder lars: 256..512, climbing: batch 512 still searching");
  const std::string text = format_study_report(report, results::QueryFormat::kTable);
  EXPECT_TRUE(contains(text, "stopped: flattening (1024->2048 saved 1.11x")) << text;
}

TEST(StudyLadderReport, TheCliPrintsTheReasonAndItsJsonCarriesIt) {
  TempDir dir("ladder_report_cli");
  const std::string db = write_db(dir);
  const auto table = run_batchlab("report --db " + shell_quote(db));
  EXPECT_EQ(table.exit_code, 0) << table.output;
  EXPECT_TRUE(contains(table.output, "ladder nesterov: 256..2048, stopped: flattening"))
      << table.output;
  const auto json = run_batchlab("report --db " + shell_quote(db) + " --format json", false);
  ASSERT_EQ(json.exit_code, 0) << json.output;
  const auto j = nlohmann::json::parse(json.output);
  ASSERT_TRUE(j.contains("ladders"));
  bool seen = false;
  for (const auto& l : j["ladders"]) {
    if (l["sweep_id"] != "flat" || l["series"] != "nesterov") continue;
    seen = true;
    EXPECT_EQ(l["stop"], "flattening");
    EXPECT_EQ(l["batches"], nlohmann::json({256, 512, 1024, 2048}));
    ASSERT_EQ(l["gains"].size(), 3u);
    EXPECT_NEAR(l["gains"][0].get<double>(), 1.5, 1e-9);
    EXPECT_EQ(l["rule"]["ceiling"], 4096);
  }
  EXPECT_TRUE(seen) << json.output;
}

}  // namespace
}  // namespace batchlab::analysis
