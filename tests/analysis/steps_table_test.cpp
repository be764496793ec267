// analysis/steps_table.h and `batchlab report --steps-csv`: a published steps-to-target table read
// into reached cells (columns named with --columns), fitted as a study; Zhang et al.'s table gives
// every definition for its five models; bad tables are exit 2 naming the file, line and value.
#include "analysis/steps_table.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/study_report.h"
#include "core/errors.h"
#include "tests/cli/cli_runner.h"

namespace batchlab::analysis {
namespace {

using cli::testing::contains;
using cli::testing::run_batchlab;
using cli::testing::shell_quote;
using cli::testing::TempDir;

std::string write(const TempDir& dir, const std::string& text) {
  const std::string path = (dir.path / "steps.csv").string();
  std::ofstream(path) << text;
  return path;
}

TEST(StepsTable, RowsBecomeReachedCellsOfTheirSeries) {
  TempDir dir;
  const auto path = write(dir, "opt,b,s,seed\na,16,1000,0\na,16,1100,1\na,32,600,0\nb,16,900,0\n");
  const auto records = read_steps_csv(path, parse_steps_columns("series=opt,batch=b,steps=s"));
  ASSERT_EQ(records.cells.size(), 4u);
  EXPECT_EQ(records.cells[1].optimizer, "a");
  EXPECT_EQ(records.cells[1].seed, 1);
  EXPECT_EQ(records.cells[2].global_batch, 32);
  EXPECT_DOUBLE_EQ(*records.cells[2].steps_to_target, 600.0);
  EXPECT_DOUBLE_EQ(*records.cells[2].samples_to_target, 600.0 * 32);
  EXPECT_EQ(records.cells[3].status, "reached");
  const auto report = study_report_of(records);
  EXPECT_EQ(report.fits.size(), 2u);
  EXPECT_EQ(report.targets.front(), "as given in the table");
}

TEST(StepsTable, BadTablesAndColumnSpecsAreRefusedNamingWhere) {
  TempDir dir;
  auto refused = [&](const std::string& text, const std::string& expected) {
    const auto path = write(dir, text);
    try {
      read_steps_csv(path, {});
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      EXPECT_TRUE(contains(e.what(), expected)) << e.what();
    }
  };
  refused("series,batch\na,16\n", "no column 'steps'");
  refused("series,batch,steps\na,16\n", ":2: 2 fields where the header has 3");
  refused("series,batch,steps\na,16.5,100\n", ":2: batch '16.5' is not a positive integer");
  // Found by fuzz_steps_csv: a batch past int64 was cast to it (undefined behaviour).
  refused("series,batch,steps\na,1e75,100\n", ":2: batch '1e75' is not a positive integer");
  refused("series,batch,steps,seed\na,16,100,1e30\n", ":2: seed '1e30' is not an integer");
  refused("series,batch,steps\na,16,-3\n", ":2: steps '-3' must be positive");
  refused("series,batch,steps\na,16,many\n", ":2: steps 'many' is not a number");
  refused("series,batch,steps\n", "no rows under the header");
  // Found by fuzz_steps_csv: names go into the report's JSON, which is UTF-8 only.
  refused("series,batch,steps\nA\xb0,16,100\n", ":2: byte 0xB0 at column 2 is not UTF-8 text");
  refused("series\xc0\xaf,batch,steps\na,16,100\n", ":1: byte 0xC0 at column 7 is not UTF-8");
  EXPECT_NO_THROW(read_steps_csv(write(dir,
                                       "series,batch,steps\nGPT\xe2\x80\x91"
                                       "2,16,100\n"),
                                 {}));
  EXPECT_THROW(parse_steps_columns("series:model"), InputError);
  EXPECT_THROW(parse_steps_columns("colour=model"), InputError);
  EXPECT_THROW(read_steps_csv((dir.path / "missing.csv").string(), {}), InputError);
}

TEST(StepsTable, ZhangEtAlsTableThroughTheBinaryGivesEveryDefinitionForEveryModel) {
  const auto csv = std::filesystem::path(test_paths::source_dir()) / "docs" / "data" /
                   "critical_batch" / "zhang2024_min_steps.csv";
  const auto r = run_batchlab(
      "report --format json --steps-csv " + shell_quote(csv.string()) +
          " --columns "
          "series=model,batch=batch_sequences,steps=min_steps_to_goal,target=goal_val_loss",
      false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto json = nlohmann::json::parse(r.output);
  ASSERT_EQ(json["fits"].size(), 5u);
  for (const auto& f : json["fits"]) {
    const auto& d = f["definitions"];
    EXPECT_EQ(d["reference_batch"].get<double>(), 64.0) << f["series"];
    ASSERT_TRUE(d["measured_excess"].is_number()) << f["series"];
    // The paper's table: E_min/S_min is 2.5-8x the 20%-over-linear batch (issue 46).
    const double ratio = d["b_crit"].get<double>() / d["measured_excess"].get<double>();
    EXPECT_GT(ratio, 2.0) << f["series"];
    EXPECT_LT(ratio, 8.5) << f["series"];
  }
  const auto bad = run_batchlab("report --steps-csv " + shell_quote(csv.string()));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_TRUE(contains(bad.output, "no column 'series'")) << bad.output;
  const auto both = run_batchlab("report --db x.db --steps-csv " + shell_quote(csv.string()));
  EXPECT_EQ(both.exit_code, 2) << both.output;
}

}  // namespace
}  // namespace batchlab::analysis
