// What `sweep simulate` and `sweep cost` share: a consistent, private copy of the study database
// they replay (--from), in a scratch folder removed with the object, and their --workers counts.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "results/store.h"

namespace batchlab::cli {

class RecordedStudy {
 public:
  // Copies `from` into a fresh scratch folder (tagged `tag` and the pid) and opens the copy: the
  // Store migrates what it opens and `from` must stay as it is, and a WAL-mode file's latest rows
  // may still be in its -wal, which a plain file copy leaves behind. Throws UsageError when `from`
  // is no file and InputError when it is no readable batchlab database, each naming `from` and
  // ending with `what_to_pass` (the database the command wants).
  RecordedStudy(const std::string& from, const std::string& tag, const std::string& what_to_pass);
  ~RecordedStudy();
  RecordedStudy(const RecordedStudy&) = delete;
  RecordedStudy& operator=(const RecordedStudy&) = delete;

  results::Store& store() { return *store_; }
  // The scratch folder, for the replays' own databases.
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::optional<results::Store> store_;
};

// --workers as a comma-separated list of counts from 1 to 4096 ("2,8,64"); `usage` ends the error.
std::vector<size_t> parse_worker_counts(const std::string& text, const std::string& usage);

}  // namespace batchlab::cli
