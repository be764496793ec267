// Checks on a database path the user named, made before anything is created or written: a command
// given a folder, a device, a text file, another program's SQLite file or a damaged database as
// its database (or as a records file to fold in) refuses it with exit 2 and leaves no file behind,
// rather than creating an empty database on the way or failing half-way with exit 1.
#pragma once

#include <string>
#include <string_view>

namespace batchlab::results {

enum class DatabaseUse {
  // --db of a writing command (train, results ingest): a missing file is created later, so its
  // folder must be a folder (or not exist yet: Store creates it).
  kCreateOrOpen,
  // --db of results migrate: the file must exist.
  kExisting,
  // A job's records file given to results ingest: must exist; an empty file (a job killed before
  // its first write) holds no runs and is fine.
  kRecords,
};

// Throws StoreInputError naming `path`, what is wrong with it and the fix when it is a folder, not
// a regular file (/dev/null, a pipe), not a SQLite file, a SQLite file without batchlab's schema
// version that already has tables of its own (batchlab would add its tables to it), or damaged
// (its schema cannot be read). `role` names the argument in the message ("--db", "records file").
// Creates and writes nothing.
void check_database_path(const std::string& path, DatabaseUse use, std::string_view role);

}  // namespace batchlab::results
