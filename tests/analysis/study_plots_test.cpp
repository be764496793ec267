// The study figures drawn by `batchlab plot` from the hand-built study database (study_db.h): an
// 800 x 500 PNG each; a database without a study is exit 2 with the reason; and without matplotlib
// `plot` names what is missing and the command that installs it (exit 2, no traceback).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/analysis/png_size.h"
#include "tests/analysis/study_db.h"
#include "tests/cli/cli_runner.h"

namespace batchlab::analysis {
namespace {

using cli::testing::run_batchlab;
using cli::testing::shell_quote;
using cli::testing::TempDir;

class StudyPlot : public ::testing::TestWithParam<const char*> {};

TEST_P(StudyPlot, DrawsAPngOfTheExpectedSize) {
  TempDir dir("studyplot");
  const std::string db = (dir.path / "study.db").string();
  testing::write_study_db(db);
  const std::string out = (dir.path / "figure.png").string();
  const auto r = run_batchlab("plot --db " + shell_quote(db) + " --figure " + GetParam() +
                              " --out " + shell_quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GT(std::filesystem::file_size(out), 10000u);  // points and curves, not an empty canvas
  const auto size = testing::png_size(out);
  EXPECT_EQ(size[0], 800u);
  EXPECT_EQ(size[1], 500u);
  // The report JSON handed to the script is a temporary file, gone afterwards.
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) {
    EXPECT_NE(entry.path().extension(), ".json") << entry.path();
  }
}

INSTANTIATE_TEST_SUITE_P(BothFigures, StudyPlot,
                         ::testing::Values("steps-vs-batch", "lr-sensitivity"),
                         [](const ::testing::TestParamInfo<const char*>& param_info) {
                           std::string name = param_info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(StudyPlot, ScalingPanelsDrawsOnePanelPerStudy) {
  TempDir dir("panels");
  const std::string a = (dir.path / "images.db").string();
  const std::string b = (dir.path / "text.db").string();
  testing::write_study_db(a);
  testing::write_study_db(b);
  const std::string out = (dir.path / "panels.png").string();
  const auto r = run_batchlab("plot --figure scaling-panels --db " + shell_quote(a + "," + b) +
                              " --titles 'Images|Text' --out " + shell_quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto size = testing::png_size(out);
  EXPECT_EQ(size[0], 1300u);  // two panels of 6.5 inches at 100 dpi
  EXPECT_EQ(size[1], 550u);
  const auto one = run_batchlab("plot --figure scaling-panels --db " + shell_quote(a) + " --out " +
                                shell_quote(out));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_EQ(testing::png_size(out)[0], 650u);
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) {
    EXPECT_NE(entry.path().extension(), ".json") << entry.path();
  }
  // Bad input names the option: a title count that does not match, a missing panel database,
  // --titles on a one-panel figure.
  const auto titles = run_batchlab("plot --figure scaling-panels --db " + shell_quote(a + "," + b) +
                                   " --titles 'Only one' --out " + shell_quote(out));
  EXPECT_EQ(titles.exit_code, 2);
  EXPECT_NE(titles.output.find("--titles 'Only one' gives 1 title for 2 panels"), std::string::npos)
      << titles.output;
  const auto missing = run_batchlab("plot --figure scaling-panels --db " +
                                    shell_quote(a + "," + (dir.path / "no.db").string()) +
                                    " --out " + shell_quote(out));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("no.db: no such database file"), std::string::npos)
      << missing.output;
  const auto single = run_batchlab("plot --figure steps-vs-batch --db " + shell_quote(a) +
                                   " --titles x --out " + shell_quote(out));
  EXPECT_EQ(single.exit_code, 2);
  EXPECT_NE(single.output.find("--titles: figure steps-vs-batch has one panel"), std::string::npos)
      << single.output;
}

// A title count that does not match the panels is refused by batchlab itself, before the
// figure's Python starts (issue 35): the interpreter below leaves a mark when it runs.
TEST(StudyPlotInput, TitlesThatDoNotMatchThePanelsAreRefusedBeforePythonStarts) {
  TempDir dir("titles");
  const std::string a = (dir.path / "images.db").string();
  const std::string b = (dir.path / "text.db").string();
  testing::write_study_db(a);
  testing::write_study_db(b);
  const std::string mark = (dir.path / "python-ran").string();
  const std::string python = dir.file(
      "python3", "#!/bin/sh\ntouch " + shell_quote(mark) + "\nexec /usr/bin/python3 \"$@\"\n");
  std::filesystem::permissions(python, std::filesystem::perms::owner_all);
  ::setenv("BATCHLAB_PYTHON", python.c_str(), 1);
  const std::string out = (dir.path / "p.png").string();
  const auto few = run_batchlab("plot --figure scaling-panels --db " + shell_quote(a + "," + b) +
                                " --titles x --out " + shell_quote(out));
  const auto many = run_batchlab("plot --figure scaling-panels --db " + shell_quote(a) +
                                 " --titles 'x|y|z' --out " + shell_quote(out));
  ::unsetenv("BATCHLAB_PYTHON");
  EXPECT_EQ(few.exit_code, 2) << few.output;
  EXPECT_NE(few.output.find("batchlab plot: --titles 'x' gives 1 title for 2 panels (--db gives 2 "
                            "databases); give one title per database, separated by |"),
            std::string::npos)
      << few.output;
  EXPECT_EQ(many.exit_code, 2) << many.output;
  EXPECT_NE(many.output.find("--titles 'x|y|z' gives 3 titles for 1 panel"), std::string::npos)
      << many.output;
  EXPECT_FALSE(std::filesystem::exists(mark)) << "the figure's Python ran";
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(StudyPlotInput, ADatabaseWithoutAStudyIsExit2) {
  TempDir dir("nostudy");
  const std::string db = (dir.path / "runs.db").string();
  testing::HandDb(db).create_sweep_schema();
  const auto r = run_batchlab("plot --db " + shell_quote(db) + " --figure steps-vs-batch --out " +
                              shell_quote((dir.path / "x.png").string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("no scaling study"), std::string::npos) << r.output;
  const auto where =
      run_batchlab("plot --db " + shell_quote(db) + " --figure lr-sensitivity --where 1 --out " +
                   shell_quote((dir.path / "x.png").string()));
  EXPECT_EQ(where.exit_code, 2);
  EXPECT_NE(where.output.find("takes no --where"), std::string::npos) << where.output;
}

TEST(StudyPlotInput, MissingMatplotlibIsNamedWithTheInstallCommand) {
  TempDir dir("nompl");
  const std::string db = (dir.path / "study.db").string();
  testing::write_study_db(db);
  // Python without site-packages: the standard library (sqlite3, json) but no matplotlib.
  const std::string python = dir.file("python3", "#!/bin/sh\nexec /usr/bin/python3 -S \"$@\"\n");
  std::filesystem::permissions(python, std::filesystem::perms::owner_all);
  const std::string out = (dir.path / "x.png").string();
  const auto r = run_batchlab("plot --db " + shell_quote(db) + " --figure steps-vs-batch --out " +
                              shell_quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.output;  // with the real interpreter it draws
  ::setenv("BATCHLAB_PYTHON", python.c_str(), 1);
  const auto missing = run_batchlab("plot --db " + shell_quote(db) +
                                    " --figure steps-vs-batch --out " + shell_quote(out));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("'matplotlib' is missing"), std::string::npos) << missing.output;
  EXPECT_NE(missing.output.find("scripts/setup.sh --with-python"), std::string::npos);
  EXPECT_NE(missing.output.find("apt-get install python3-matplotlib"), std::string::npos);
  EXPECT_EQ(missing.output.find("Traceback"), std::string::npos) << missing.output;
  // No interpreter at all is exit 2 too, with the same advice.
  ::setenv("BATCHLAB_PYTHON", "/nonexistent/python3", 1);
  const auto none = run_batchlab("plot --db " + shell_quote(db) +
                                 " --figure lr-sensitivity --out " + shell_quote(out));
  ::unsetenv("BATCHLAB_PYTHON");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.output.find("scripts/setup.sh --with-python"), std::string::npos) << none.output;
}

}  // namespace
}  // namespace batchlab::analysis
