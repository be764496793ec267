// Read-only query tests: writes, ATTACH and multiple statements are refused with input errors,
// and the three output formats are exact.
#include "results/query.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "results/errors.h"
#include "results/schema.h"
#include "results/store.h"
#include "tests/results/test_support.h"

namespace batchlab::results {
namespace {

using testing::RawDb;
using testing::TempDir;

class QueryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("q.db");
    { Store store(path_); }
    RawDb db(path_);
    db.exec(
        "CREATE TABLE t(name TEXT, step INTEGER, loss REAL);"
        "INSERT INTO t VALUES('a', 1, 0.5);"
        "INSERT INTO t VALUES('b,\"q\"', 20, NULL);"
        "INSERT INTO t VALUES(NULL, 300, 1.0);"
        "INSERT INTO t VALUES('', 4, 2.25e-7);");
  }

  QueryResult small() {
    return query_readonly(path_, "SELECT name, step, loss FROM t ORDER BY rowid");
  }

  void expect_input_error(const std::string& sql, const std::string& fragment) {
    try {
      query_readonly(path_, sql);
      ADD_FAILURE() << "accepted: " << sql;
    } catch (const StoreInputError& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr(fragment)) << sql;
    }
  }

  TempDir dir_;
  std::string path_;
};

TEST_F(QueryTest, ReturnsColumnsCellsAndTypes) {
  const QueryResult r = small();
  EXPECT_EQ(r.columns, (std::vector<std::string>{"name", "step", "loss"}));
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(r.rows[0][0], "a");
  EXPECT_EQ(r.rows[0][1], "1");
  EXPECT_EQ(r.rows[0][2], "0.5");
  EXPECT_EQ(r.rows[1][2], std::nullopt);
  EXPECT_EQ(r.rows[2][0], std::nullopt);
  EXPECT_EQ(r.rows[2][2], "1.0");
  EXPECT_EQ(r.types[0],
            (std::vector<ValueType>{ValueType::kText, ValueType::kInteger, ValueType::kReal}));
  EXPECT_EQ(r.types[1][2], ValueType::kNull);
  EXPECT_EQ(to_string(ValueType::kReal), "REAL");
}

TEST_F(QueryTest, FormatsTable) {
  EXPECT_EQ(format_table(small()),
            "name   step      loss\n"
            "-----  ----  --------\n"
            "a         1       0.5\n"
            "b,\"q\"    20      NULL\n"
            "NULL    300       1.0\n"
            "          4  2.25e-07\n");
  // The reports show NULL as an empty cell, as their CSV and Markdown do.
  EXPECT_EQ(format_result(small(), QueryFormat::kTable, ""),
            "name   step      loss\n"
            "-----  ----  --------\n"
            "a         1       0.5\n"
            "b,\"q\"    20\n"
            "        300       1.0\n"
            "          4  2.25e-07\n");
}

TEST_F(QueryTest, FormatsCsv) {
  EXPECT_EQ(format_csv(small()),
            "name,step,loss\n"
            "a,1,0.5\n"
            "\"b,\"\"q\"\"\",20,\n"
            ",300,1.0\n"
            "\"\",4,2.25e-07\n");
}

TEST_F(QueryTest, FormatsJson) {
  EXPECT_EQ(format_json(small()),
            "[\n"
            "  {\"name\": \"a\", \"step\": 1, \"loss\": 0.5},\n"
            "  {\"name\": \"b,\\\"q\\\"\", \"step\": 20, \"loss\": null},\n"
            "  {\"name\": null, \"step\": 300, \"loss\": 1.0},\n"
            "  {\"name\": \"\", \"step\": 4, \"loss\": 2.25e-07}\n"
            "]\n");
  EXPECT_EQ(format_result(small(), QueryFormat::kJson), format_json(small()));
}

TEST_F(QueryTest, EscapesControlCharactersAndHandlesEmptyResults) {
  const QueryResult r =
      query_readonly(path_, "SELECT 'x' || char(10) || 'y' || char(9) || char(1) AS s");
  EXPECT_EQ(format_table(r), "s\n-------\nx\\ny\\t\x01\n");
  EXPECT_EQ(format_csv(r), "s\n\"x\ny\t\x01\"\n");
  EXPECT_EQ(format_json(r), "[\n  {\"s\": \"x\\ny\\t\\u0001\"}\n]\n");

  const QueryResult empty = query_readonly(path_, "SELECT name, step FROM t WHERE step < 0");
  EXPECT_EQ(format_table(empty), "name  step\n----  ----\n");
  EXPECT_EQ(format_csv(empty), "name,step\n");
  EXPECT_EQ(format_json(empty), "[]\n");
}

TEST_F(QueryTest, BlobsAndUtf8) {
  const QueryResult r = query_readonly(path_, "SELECT x'00ff10' AS b, 'µs' AS unit, 7 AS n");
  EXPECT_EQ(r.rows[0][0], "00ff10");
  EXPECT_EQ(r.types[0][0], ValueType::kBlob);
  // 'µs' is two columns wide although three bytes long.
  EXPECT_EQ(format_table(r), "b       unit  n\n------  ----  -\n00ff10  µs    7\n");
}

TEST_F(QueryTest, ParsesFormatNames) {
  EXPECT_EQ(parse_query_format("table"), QueryFormat::kTable);
  EXPECT_EQ(parse_query_format("csv"), QueryFormat::kCsv);
  EXPECT_EQ(parse_query_format("json"), QueryFormat::kJson);
  EXPECT_EQ(parse_query_format("xml"), std::nullopt);
}

TEST_F(QueryTest, AcceptsReadOnlyStatements) {
  EXPECT_EQ(query_readonly(path_, "SELECT count(*) FROM t;").rows[0][0], "4");
  EXPECT_EQ(query_readonly(path_, "  SELECT 1; -- trailing comment\n ").rows[0][0], "1");
  EXPECT_EQ(query_readonly(path_, "WITH x AS (SELECT 2 AS v) SELECT v FROM x").rows[0][0], "2");
  EXPECT_FALSE(query_readonly(path_, "EXPLAIN QUERY PLAN SELECT * FROM steps WHERE run_id = 'r'")
                   .rows.empty());
  EXPECT_EQ(query_readonly(path_, "PRAGMA user_version").rows[0][0],
            std::to_string(latest_schema_version()));
}

TEST_F(QueryTest, RejectsWrites) {
  for (const std::string sql :
       {"INSERT INTO t VALUES('z', 9, 9.0)", "UPDATE t SET step = 0", "DELETE FROM t",
        "REPLACE INTO t VALUES('z', 9, 9.0)", "DROP TABLE t", "CREATE TABLE u(x)",
        "CREATE TEMP TABLE u(x)", "CREATE INDEX t_step ON t(step)", "ALTER TABLE t ADD COLUMN y",
        "PRAGMA user_version = 7", "VACUUM", "INSERT INTO t SELECT * FROM t"}) {
    EXPECT_THROW(query_readonly(path_, sql), StoreInputError) << sql;
  }
  expect_input_error("DELETE FROM t", "only read-only statements");
  RawDb db(path_);
  EXPECT_EQ(db.integer("SELECT count(*) FROM t"), 4);
  EXPECT_EQ(db.integer("PRAGMA user_version"), latest_schema_version());
}

TEST_F(QueryTest, RejectsAttachAndDetach) {
  const std::string other = dir_.file("other.db");
  expect_input_error("ATTACH DATABASE '" + other + "' AS other", "ATTACH is not allowed");
  expect_input_error("DETACH DATABASE other", "DETACH is not allowed");
  EXPECT_FALSE(std::filesystem::exists(other));
  const std::string into = dir_.file("copy.db");
  EXPECT_THROW(query_readonly(path_, "VACUUM INTO '" + into + "'"), StoreInputError);
  EXPECT_FALSE(std::filesystem::exists(into));
}

TEST_F(QueryTest, RejectsMultipleStatementsAndEmptySql) {
  expect_input_error("SELECT 1; SELECT 2", "only one SQL statement");
  expect_input_error("SELECT 1; DELETE FROM t", "only one SQL statement");
  expect_input_error("", "no SQL statement");
  expect_input_error("  -- just a comment", "no SQL statement");
}

TEST_F(QueryTest, BadSqlIsAnInputErrorWithSqliteMessage) {
  expect_input_error("SELEC 1", "syntax error");
  expect_input_error("SELECT * FROM no_such_table", "no such table");
  expect_input_error("SELECT nope FROM t", "no such column");
}

TEST_F(QueryTest, MissingDatabaseIsAnInputError) {
  const std::string missing = dir_.file("missing.db");
  try {
    query_readonly(missing, "SELECT 1");
    FAIL();
  } catch (const StoreInputError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr(missing));
  }
  EXPECT_FALSE(std::filesystem::exists(missing));  // a query never creates a file
}

}  // namespace
}  // namespace batchlab::results
