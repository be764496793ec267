// Edit distance and did-you-mean suggestions.
#include "core/config/suggest.h"

#include <gtest/gtest.h>

namespace batchlab::config {
namespace {

TEST(Suggest, EditDistance) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("bsae_lr", "base_lr"), 1u);  // a transposition is one edit
}

TEST(Suggest, ClosestMatchPrefersWordOfKey) {
  const std::vector<std::string> keys = {"base_lr", "eps", "lr_in_momentum", "name"};
  EXPECT_EQ(closest_match("lrr", keys), "base_lr");
  EXPECT_EQ(closest_match("lr", keys), "base_lr");
  EXPECT_EQ(closest_match("Base-LR", keys), "base_lr");
}

TEST(Suggest, NoSuggestionForUnrelatedNames) {
  EXPECT_EQ(closest_match("zzzzzzzz", {"base_lr", "eps"}), std::nullopt);
}

TEST(Suggest, UnknownKeyRuleNamesRightSection) {
  const std::vector<std::string> all = {"optim.base_lr", "train.seed", "data.seed"};
  EXPECT_EQ(unknown_key_rule("optim", "seed", {"base_lr"}, all),
            "unknown key in [optim], did you mean train.seed or data.seed? (seed belongs in "
            "[train] or in [data])");
  EXPECT_EQ(unknown_key_rule("optim", "lrr", {"base_lr"}, all),
            "unknown key, did you mean optim.base_lr?");
  EXPECT_EQ(unknown_key_rule("batch", "sed", {"global"}, all),
            "unknown key, did you mean train.seed or data.seed? (seed belongs in [train] or in "
            "[data])");
}

}  // namespace
}  // namespace batchlab::config
