// Rules about keys and types: schema_version, unknown keys with suggestions, type mismatches,
// TOML syntax errors.
#include <gtest/gtest.h>

#include "core/config/loader.h"
#include "tests/core/config/config_test_util.h"

namespace batchlab::config {
namespace {

using testing::diagnostics_of;
using testing::doc;
using testing::expect_one;
using testing::parse_ok;

TEST(KeyRules, SchemaVersionMissingSaysToAddIt) {
  // No position: the key is absent and the top level has no line of its own.
  expect_one("[batch]\nglobal = 256\n[schedule]\nepochs = 10\n", "schema_version", 0, 0,
             "add `schema_version = 1`");
}

TEST(KeyRules, SchemaVersionMustBeOne) {
  expect_one("schema_version = 2\n[batch]\nglobal = 256\n[schedule]\nepochs = 10\n",
             "schema_version", 1, 18, "must be 1");
}

TEST(KeyRules, UnknownKeySuggestsKeyOfSameSection) {
  expect_one(doc("optim", "lrr = 0.1"), "optim.lrr", 3, 1, "did you mean optim.base_lr?");
}

TEST(KeyRules, MisspelledKeySuggestsClosestKey) {
  expect_one(doc("optim", "momentun = 0.9"), "optim.momentun", 3, 1,
             "did you mean optim.momentum?");
}

TEST(KeyRules, KeyInWrongSectionSuggestsRightSection) {
  expect_one(doc("optim", "precision = \"bf16\""), "optim.precision", 3, 1,
             "did you mean train.precision? (precision belongs in [train])");
}

TEST(KeyRules, KeyAtTopLevelSuggestsItsSection) {
  expect_one("schema_version = 1\nbase_lr = 0.1\n[batch]\nglobal = 256\n[schedule]\nepochs = 10\n",
             "base_lr", 2, 1, "did you mean optim.base_lr?");
}

TEST(KeyRules, UnknownSectionSuggestsSection) {
  expect_one(doc("optm", "base_lr = 0.1"), "optm", 2, 2, "unknown section, did you mean [optim]?");
}

TEST(KeyRules, UnknownKeyWithoutCloseMatchListsValidKeys) {
  expect_one(doc("batch", "zzzzzzzz = 1"), "batch.zzzzzzzz", 3, 1,
             "valid keys in [batch] are bn_group, global, micro, ramp_double_every, ramp_start and "
             "schedule");
}

TEST(KeyRules, UnknownKeyInsideParameterGroup) {
  expect_one(doc("optim", "groups = [{ match = \"*.bias\", lr_scal = 2.0 }]"),
             "optim.groups[0].lr_scal", 3, 31, "did you mean optim.groups[0].lr_scale?");
}

TEST(KeyRules, WrongTypeNamesExpectedAndFound) {
  expect_one(doc("optim", "base_lr = \"fast\""), "optim.base_lr", 3, 11,
             "expected a float, found a string");
}

TEST(KeyRules, FloatWhereIntegerExpectedIsAnError) {
  expect_one(doc("optim", "base_batch = 256.0"), "optim.base_batch", 3, 14,
             "expected an integer, found a float; write 256 without a decimal point");
}

TEST(KeyRules, IntegerWhereFloatExpectedIsAccepted) {
  const ExperimentConfig config = parse_ok(doc("optim", "base_lr = 2"));
  EXPECT_DOUBLE_EQ(config.optim.base_lr, 2.0);
}

TEST(KeyRules, SectionMustBeATable) {
  expect_one("schema_version = 1\noptim = 3\n[batch]\nglobal = 256\n[schedule]\nepochs = 10\n",
             "optim", 2, 9, "expected a table, found an integer");
}

TEST(KeyRules, ArrayElementsMustHaveTheRightType) {
  expect_one(doc("optim", "betas = [0.9, \"x\"]"), "optim.betas", 3, 9,
             "expected an array of 2 floats, but element 1 is a string");
}

TEST(KeyRules, TypeErrorSuppressesRulesThatDependOnTheKey) {
  // batch.global fails to read, so the struct keeps its default 0: "must be > 0" and the batch
  // geometry would only repeat the type error.
  expect_one(doc("batch", "global = \"256\""), "batch.global", 3, 10,
             "expected an integer, found a string");
}

TEST(KeyRules, TomlSyntaxErrorKeepsParserPosition) {
  const auto diagnostics = diagnostics_of("schema_version = 1\n[optim]\nbase_lr = = 0.1\n");
  ASSERT_EQ(diagnostics.size(), 1u) << testing::describe(diagnostics);
  EXPECT_EQ(diagnostics[0].file, testing::kSource);
  EXPECT_EQ(diagnostics[0].line, 3);
  EXPECT_GT(diagnostics[0].column, 0);
  EXPECT_NE(diagnostics[0].rule.find("TOML syntax error"), std::string::npos);
}

}  // namespace
}  // namespace batchlab::config
