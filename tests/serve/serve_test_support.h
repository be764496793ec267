// Shared by the dashboard's tests: the fixture database (made by a real small sweep, see
// tests/serve/make_fixture.sh) and read-only SQL to check the API against independently.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "results/query.h"
#include "results/query_result.h"
#include "tests/cli/cli_runner.h"
#include "tests/test_paths.h"

namespace batchlab::serve::testing {

inline std::string fixture_db() { return test_paths::serve_fixture_db(); }

// `batchlab serve --db DB EXTRA` until it has printed its address (then SIGTERM) or exited on its
// own, for at most `seconds`. The exit code is batchlab's: 0 for a server that started and stopped
// cleanly, 2 or 1 for one that refused. Waiting for the address rather than a fixed time keeps a
// machine under load (which can take seconds to load LibTorch) from stopping the server before it
// started.
inline cli::testing::CommandResult run_serve(const std::string& db,
                                             const std::string& extra = "--port 0",
                                             int seconds = 60) {
  const std::string polls = std::to_string(seconds * 10);
  return cli::testing::run_shell(
      "log=$(mktemp); " + cli::testing::shell_quote(test_paths::binary()) + " serve --db " +
      cli::testing::shell_quote(db) + " " + extra +
      " >\"$log\" 2>&1 & pid=$!; i=0; while [ $i -lt " + polls +
      " ] && kill -0 $pid 2>/dev/null && ! grep -q 'http://' \"$log\"; do sleep 0.1; "
      "i=$((i+1)); done; kill -TERM $pid 2>/dev/null; wait $pid; rc=$?; cat \"$log\"; "
      "rm -f \"$log\"; exit $rc");
}

// The cells of a one-column query, as text ("" for NULL).
inline std::vector<std::string> column_of(const std::string& sql,
                                          const std::vector<results::QueryParam>& params = {}) {
  const auto result = results::query_readonly(fixture_db(), sql, params);
  std::vector<std::string> out;
  for (const auto& row : result.rows) out.push_back(row.at(0).value_or(""));
  return out;
}

inline long long count_of(const std::string& sql,
                          const std::vector<results::QueryParam>& params = {}) {
  return std::stoll(column_of(sql, params).at(0));
}

}  // namespace batchlab::serve::testing
