// The TOML nesting bound (core/config/toml_depth.h): what counts as a level (and what does not:
// dots in numbers, strings and comments), and a config nested 200,000 deep refused as a
// ConfigError at its position instead of overflowing the stack inside toml::parse.
#include "core/config/toml_depth.h"

#include <gtest/gtest.h>

#include <string>

#include "core/config/overrides.h"
#include "core/config/toml_text.h"
#include "core/errors.h"

namespace batchlab::config {
namespace {

size_t depth(std::string_view text) { return toml_depth(text).depth; }

TEST(TomlDepth, CountsHeadersKeysAndInlineContainers) {
  EXPECT_EQ(depth(""), 0u);
  EXPECT_EQ(depth("a = 1\n"), 1u);
  EXPECT_EQ(depth("a.b.c = 1\n"), 3u);
  EXPECT_EQ(depth("[optim]\nbase_lr = 0.1\n"), 2u);
  EXPECT_EQ(depth("[a.b]\nc.d = 1\n"), 4u);
  EXPECT_EQ(depth("[[optim.groups]]\nrule = 'x'\n"), 4u);  // array, its table, the key
  EXPECT_EQ(depth("a = [1, [2, [3]]]\n"), 4u);
  EXPECT_EQ(depth("t = {x.y = {z = 1}}\n"), 4u);  // t, x, y, z
  EXPECT_EQ(depth("a = [\n  {b = 1},\n  {c.d = 2},\n]\n"), 4u);
}

TEST(TomlDepth, DotsInValuesStringsAndCommentsAreNoLevels) {
  EXPECT_EQ(depth("lr = [0.1, 0.2, 0.4, 0.8, 1.6]\n"), 2u);
  EXPECT_EQ(depth("t = 07:32:00.999\n"), 1u);
  EXPECT_EQ(depth("\"optim.base_lr\" = [0.1]  # a.b.c.d.e.f\n"), 2u);
  EXPECT_EQ(depth("s = \"a.b.c.[[[{{{\"\n"), 1u);
  EXPECT_EQ(depth("s = 'a.b.c\\'\n"), 1u);  // a literal string has no escapes
  EXPECT_EQ(depth("s = \"\"\"\na.b.c = [[[\n\\\"\"\" \"\"\"\nx = 1\n"), 1u);
  EXPECT_EQ(depth("s = '''\n[a.b.c.d]\n'''\nx = 1\n"), 1u);
  const auto at = toml_depth("a = 1\n[b]\nc.d = 1\n");
  EXPECT_EQ(at.depth, 3u);
  EXPECT_EQ(at.line, 3);
}

TEST(TomlDepth, EveryCommittedExperimentAndSweepIsShallow) {
  // The bound has room: the deepest real construct is a parameter-group rule (4 levels).
  EXPECT_LE(depth("schema_version = 1\n[sweep]\nname = 'x'\n[when.\"optim.name=lars\"]\n"
                  "\"optim.base_lr\" = 2.0\n[[zip]]\n\"a.b\" = [1, 2]\n"),
            4u);
}

std::string dotted_key(size_t segments) {
  std::string key = "a";
  for (size_t i = 1; i < segments; ++i) key += ".a";
  return key;
}

// toml::parse itself overflowed the stack on this 400 KB file (exit 139).
TEST(TomlDepth, ParseTomlRefusesADeepDocumentAsAConfigErrorAtItsPosition) {
  for (const std::string& text : {"schema_version = 1\n" + dotted_key(200'000) + " = 1\n",
                                  "schema_version = 1\n[" + dotted_key(200'000) + "]\nx = 1\n",
                                  "schema_version = 1\nx = {" + dotted_key(200'000) + " = 1}\n"}) {
    try {
      parse_toml(text, "deep.toml");
      ADD_FAILURE() << "accepted a document nested 200,000 deep";
    } catch (const ConfigError& e) {
      ASSERT_EQ(e.diagnostics().size(), 1u);
      const Diagnostic& d = e.diagnostics()[0];
      EXPECT_EQ(d.file, "deep.toml");
      EXPECT_EQ(d.line, 2);
      EXPECT_NE(d.rule.find("nested more than 128 levels deep"), std::string::npos) << d.rule;
    }
  }
  EXPECT_NO_THROW(parse_toml(dotted_key(128) + " = 1\n", "ok.toml"));
  EXPECT_THROW(parse_toml(dotted_key(129) + " = 1\n", "deep.toml"), ConfigError);
}

TEST(TomlDepth, AnOverrideNestedPastTheBoundIsMalformed) {
  std::string error;
  EXPECT_FALSE(parse_override(dotted_key(200) + "=1", error).has_value());
  EXPECT_NE(error.find("nested more than 128 levels deep"), std::string::npos) << error;
  error.clear();
  EXPECT_TRUE(parse_override("optim.base_lr=0.1", error).has_value()) << error;
}

}  // namespace
}  // namespace batchlab::config
