// analysis/critical_batch_format.h on the committed text study: every definition of the critical
// batch per series in the report's table and JSON, with its reference batch and intervals (3 seeds
// at every batch), and the two 20% definitions related to E_min/S_min as results/critical_batch.h
// derives.
#include "analysis/critical_batch_format.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/test_paths.h"

namespace batchlab::analysis {
namespace {

StudyReport text_study() {
  const auto db =
      std::filesystem::path(test_paths::source_dir()) / "docs" / "data" / "text_scaling_study.db";
  return build_study_report(db.string(), {});
}

TEST(CriticalBatchFormat, EveryDefinitionIsInTheTableAndTheJson) {
  const auto report = text_study();
  const SeriesFit* lamb = nullptr;
  for (const auto& f : report.fits) {
    if (f.series == "lamb") lamb = &f;
  }
  ASSERT_NE(lamb, nullptr);
  const auto j = critical_batch_json(*lamb);
  EXPECT_EQ(j["reference_batch"].get<double>(), 16.0);
  EXPECT_EQ(j["largest_batch"].get<double>(), 512.0);
  // 1.2 x 16 + 0.2 x B_crit.
  EXPECT_NEAR(j["fit_excess"].get<double>(), 19.2 + 0.2 * j["b_crit"].get<double>(), 1e-9);
  ASSERT_TRUE(j["measured_excess"].is_number());
  EXPECT_GT(j["measured_excess"].get<double>(), 32.0);  // 32's samples are 1.16x 16's, 64's 1.52x
  EXPECT_LT(j["measured_excess"].get<double>(), 64.0);
  EXPECT_TRUE(j["measured_excess_interval"].is_array());
  EXPECT_TRUE(j["fit_excess_interval"].is_array());
  EXPECT_TRUE(j["b_simple"].is_null());  // the text study measured no noise scale
  const std::string text = format_study_report(report, results::QueryFormat::kTable);
  EXPECT_NE(text.find("The critical batch, every definition"), std::string::npos);
  EXPECT_NE(text.find("20%_measured"), std::string::npos);
  // LARS has no fit and no row.
  EXPECT_EQ(critical_batch_table(report.fits).rows.size(), 3u);
}

}  // namespace
}  // namespace batchlab::analysis
