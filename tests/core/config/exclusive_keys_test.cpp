#include "core/config/exclusive_keys.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/config/schema.h"

namespace batchlab::config {
namespace {

TEST(ExclusiveKeys, EveryGroupedKeyIsAKnownKey) {
  const auto& known = known_key_paths();
  for (const auto& group : exclusive_groups()) {
    for (const auto& path : group.paths) {
      EXPECT_TRUE(std::binary_search(known.begin(), known.end(), path)) << path;
    }
  }
}

TEST(ExclusiveKeys, SiblingsAreTheOtherMembers) {
  EXPECT_EQ(exclusive_siblings("schedule.steps"),
            (std::vector<std::string>{"schedule.epochs", "schedule.budget"}));
  EXPECT_EQ(exclusive_siblings("schedule.warmup_fraction"),
            (std::vector<std::string>{"schedule.warmup_epochs", "schedule.warmup_steps"}));
  EXPECT_TRUE(exclusive_siblings("optim.base_lr").empty());
}

TEST(ExclusiveKeys, DropRemovesSiblingsExceptThoseKept) {
  toml::table doc = toml::parse(
      "[schedule]\nepochs = 90\nwarmup_epochs = 5\nwarmup_fraction = 0.1\ndecay = \"cosine\"\n");
  EXPECT_EQ(drop_exclusive_siblings(doc, "schedule.warmup_steps", {"schedule.warmup_fraction"}),
            (std::vector<std::string>{"schedule.warmup_epochs"}));
  const toml::table& schedule = *doc["schedule"].as_table();
  EXPECT_FALSE(schedule.contains("warmup_epochs"));
  EXPECT_TRUE(schedule.contains("warmup_fraction"));  // kept: the caller sets it too
  EXPECT_TRUE(schedule.contains("epochs"));           // another group
  EXPECT_TRUE(schedule.contains("decay"));
  toml::table empty;
  EXPECT_TRUE(drop_exclusive_siblings(empty, "schedule.steps", {}).empty());
}

}  // namespace
}  // namespace batchlab::config
