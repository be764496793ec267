// Exceptions thrown by the results library. results/ may not depend on core/, so these derive from
// std::runtime_error directly; cli/ maps StoreInputError to exit code 2 and every other StoreError
// to exit code 1. Library code never prints or exits: everything a user must see is in what().
#pragma once

#include <stdexcept>
#include <string>

namespace batchlab::results {

// A database operation failed. what() reads "PATH: CONTEXT: SQLITE MESSAGE" so a failure in a sweep
// of many database files still says which file it was.
class StoreError : public std::runtime_error {
 public:
  // sqlite_message may be empty when the failure was found by batchlab rather than by SQLite.
  StoreError(std::string db_path, const std::string& context, std::string sqlite_message = {});

  const std::string& db_path() const noexcept { return db_path_; }
  const std::string& sqlite_message() const noexcept { return sqlite_message_; }

 private:
  std::string db_path_;
  std::string sqlite_message_;
};

// The user asked for something unusable: bad or non-read-only SQL, a missing database file for a
// query, a database written by a newer batchlab.
class StoreInputError : public StoreError {
 public:
  using StoreError::StoreError;
};

}  // namespace batchlab::results
