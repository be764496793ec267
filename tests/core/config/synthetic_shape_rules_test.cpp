// data.synthetic_channels / synthetic_size / synthetic_classes: the synthetic data set's shape.
// Ranges at the value, the generator's minimums, the rule that they need dataset = "synthetic",
// and the resolved config: written only when set, so earlier run ids do not change.
#include <gtest/gtest.h>

#include "core/config/loader.h"
#include "tests/core/config/config_test_util.h"

namespace batchlab::config {
namespace {

using testing::diagnostics_of;
using testing::doc;
using testing::expect_one;
using testing::parse_ok;

TEST(SyntheticShapeRules, ImageNetShapeIsAccepted) {
  const ExperimentConfig c =
      parse_ok(doc("data",
                   "dataset = \"synthetic\"\nsynthetic_channels = 3\nsynthetic_size = 224\n"
                   "synthetic_classes = 1000"));
  EXPECT_EQ(c.data.synthetic_channels, 3);
  EXPECT_EQ(c.data.synthetic_size, 224);
  EXPECT_EQ(c.data.synthetic_classes, 1000);
}

TEST(SyntheticShapeRules, RangesAndMinimums) {
  expect_one(doc("data", "dataset = \"synthetic\"\nsynthetic_size = 4"), "data.synthetic_size", 4,
             18, "must be 0 (28) or at least 8 pixels");
  expect_one(doc("data", "dataset = \"synthetic\"\nsynthetic_classes = 1"),
             "data.synthetic_classes", 4, 21,
             "must be 0 (10) or at least 2: one class is nothing to classify");
  const auto d = diagnostics_of(doc("data", "dataset = \"synthetic\"\nsynthetic_channels = 5"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].key, "data.synthetic_channels");
}

TEST(SyntheticShapeRules, OnlyWithTheSyntheticDataSet) {
  // Every key at once, each naming the fix.
  const auto d =
      diagnostics_of(doc("data",
                         "dataset = \"cifar10\"\nsynthetic_channels = 3\nsynthetic_size = 224\n"
                         "synthetic_classes = 1000"));
  ASSERT_EQ(d.size(), 3u) << testing::describe(d);
  for (const auto& diag : d) {
    EXPECT_NE(diag.rule.find("set dataset = \"synthetic\""), std::string::npos) << diag.rule;
  }
}

TEST(SyntheticShapeRules, WrittenIntoTheResolvedConfigOnlyWhenSet) {
  const std::string plain = to_canonical_toml(parse_ok(doc("data", "dataset = \"synthetic\"")));
  EXPECT_EQ(plain.find("synthetic_"), std::string::npos) << plain;
  EXPECT_EQ(plain.find("implementation"), std::string::npos) << plain;
  const std::string shaped =
      to_canonical_toml(parse_ok(doc("data", "dataset = \"synthetic\"\nsynthetic_size = 64")));
  EXPECT_NE(shaped.find("synthetic_size = 64"), std::string::npos) << shaped;
}

}  // namespace
}  // namespace batchlab::config
