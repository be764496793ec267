// `batchlab results ingest --db PATH [RECORDS.db|DIR]...`: folds job record files into a database
// (results/ingest.h), idempotently. Without paths, every records.db under the default runs folder
// of the sweeps whose database is PATH (sweeps/run_layout.h: results/x.db -> runs/).
// `batchlab results migrate --db PATH`: upgrades an older database's schema in place (what every
// writing command does on open; `batchlab serve` and `query` only read, so they point here).
// `batchlab results snapshot SOURCE.db OUT.db`: a consistent single-file copy of a database that
// may be in WAL mode and still written, for readers on other hosts.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>

#include "cli/app.h"
#include "cli/args.h"
#include "core/errors.h"
#include "results/database_file.h"
#include "results/ingest.h"
#include "results/schema.h"
#include "results/sqlite_util.h"
#include "results/store.h"
#include "sweeps/run_layout.h"

namespace batchlab::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char* kResultsUsage =
    "batchlab results <ingest|migrate|snapshot> ...\n"
    "  ingest --db PATH [RECORDS.db|DIR]...   fold job records into the database PATH\n"
    "  migrate --db PATH                      upgrade an older database's schema in place\n"
    "  snapshot SOURCE.db OUT.db              a consistent single-file copy of a live database";

int ingest(const std::vector<std::string>& argv) {
  Args args(argv, {{"db", true, false}}, "batchlab results ingest --db PATH [RECORDS.db|DIR]...");
  const auto db = args.value("db");
  if (!db) throw UsageError("missing --db PATH\nusage: " + args.usage());
  // Every path is checked before the database is opened: bad input creates nothing.
  results::check_database_path(*db, results::DatabaseUse::kCreateOrOpen, "--db");
  std::vector<std::string> roots = args.positionals();
  const bool given = !roots.empty();
  if (!given) roots.push_back(sweeps::default_runs_root(*db));
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& root : roots) {
    if (fs::is_regular_file(root, ec)) {
      results::check_database_path(root, results::DatabaseUse::kRecords, "records file");
      files.push_back(root);
      continue;
    }
    if (!fs::is_directory(root, ec))
      throw InputError(fmt::format("{}: no such file or folder", root));
    for (auto it = fs::recursive_directory_iterator(root, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
      // A live coordinator writes this sweep's database: folding beside it would make two writers.
      if (it->path().filename() == "coordinator.lock" && sweeps::lock_held(it->path().string())) {
        throw Error(
            fmt::format("{} is held ({}): a sweep coordinator is running; it folds the "
                        "records itself",
                        it->path().string(), sweeps::lock_description(it->path().string())));
      }
      if (it->path().filename() == "records.db") {
        results::check_database_path(it->path().string(), results::DatabaseUse::kRecords,
                                     "records file");
        files.push_back(it->path().string());
      }
    }
  }
  if (files.empty()) {
    // Nothing to fold: the database is left as it is (or not created at all).
    const std::string where = fmt::format("{}", fmt::join(roots, ", "));
    if (given) {
      throw InputError(fmt::format(
          "{}: no records.db file there, so nothing to ingest and {} is left as it is; give a "
          "job's records.db or a runs folder holding them (runs/<sweep>/<run id>/records.db)",
          where, *db));
    }
    fmt::print("ingested 0 run(s): no records.db under {}; {} is left as it is\n", where, *db);
    return kExitOk;
  }
  std::sort(files.begin(), files.end());
  results::Ingester ingester(*db);
  size_t runs = 0;
  for (const auto& file : files) runs += ingester.ingest(file).size();
  fmt::print("ingested {} run(s) from {} records file(s) into {}\n", runs, files.size(), *db);
  return kExitOk;
}

int migrate(const std::vector<std::string>& argv) {
  Args args(argv, {{"db", true, false}}, "batchlab results migrate --db PATH");
  const auto db = args.value("db");
  if (!db) throw UsageError("missing --db PATH\nusage: " + args.usage());
  results::check_database_path(*db, results::DatabaseUse::kExisting, "--db");
  std::int64_t before = 0;
  {
    results::Connection reader(*db, SQLITE_OPEN_READONLY);
    before = results::schema_version(reader);
  }
  if (before == 0) {
    // Every batchlab database has a version; migrating a foreign file would add our tables to it.
    throw InputError(
        fmt::format("{}: schema version 0: not a batchlab database; nothing migrated", *db));
  }
  { results::Store store(*db); }  // opening a store migrates, one transaction per version
  fmt::print("{}: schema version {} -> {}\n", *db, before, results::latest_schema_version());
  return kExitOk;
}

int snapshot(const std::vector<std::string>& argv) {
  Args args(argv, {}, "batchlab results snapshot SOURCE.db OUT.db");
  if (args.positionals().size() != 2) throw UsageError("usage: " + args.usage());
  results::snapshot_database(args.positionals()[0], args.positionals()[1]);
  return kExitOk;
}

}  // namespace

int cmd_results(const std::vector<std::string>& argv) {
  const std::string& sub = subcommand(argv, kResultsUsage);
  const std::vector<std::string> rest(argv.begin() + 1, argv.end());
  if (sub == "ingest") return ingest(rest);
  if (sub == "migrate") return migrate(rest);
  if (sub == "snapshot") return snapshot(rest);
  throw UsageError(fmt::format("unknown results subcommand '{}'\nusage: {}", sub, kResultsUsage));
}

}  // namespace batchlab::cli
