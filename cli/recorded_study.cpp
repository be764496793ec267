#include "cli/recorded_study.h"

#include <fmt/format.h>
#include <unistd.h>

#include "cli/app.h"
#include "cli/args.h"
#include "core/errors.h"
#include "results/errors.h"
#include "results/ingest.h"

namespace batchlab::cli {

namespace fs = std::filesystem;

RecordedStudy::RecordedStudy(const std::string& from, const std::string& tag,
                             const std::string& what_to_pass) {
  std::error_code ec;
  if (!fs::is_regular_file(from, ec)) {
    throw UsageError(fmt::format("--from {}: no such database file ({})", from, what_to_pass));
  }
  dir_ = fs::temp_directory_path() / fmt::format("batchlab-{}-{}", tag, ::getpid());
  fs::create_directories(dir_);
  const fs::path copy = dir_ / "recorded.db";
  try {
    results::snapshot_database(from, copy.string());
    store_.emplace(copy.string());
  } catch (const results::StoreError& e) {
    throw InputError(
        fmt::format("--from {}: not a batchlab database this batchlab can read ({}); pass {}", from,
                    e.what(), what_to_pass));
  }
}

RecordedStudy::~RecordedStudy() {
  store_.reset();
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::vector<size_t> parse_worker_counts(const std::string& text, const std::string& usage) {
  std::vector<size_t> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    size_t used = 0;
    long long n = 0;
    try {
      n = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || n < 1 || n > 4096) {
      throw UsageError(fmt::format(
          "--workers {}: give worker counts from 1 to 4096, comma-separated (e.g. 2,8,64)\n"
          "usage: {}",
          text, usage));
    }
    out.push_back(static_cast<size_t>(n));
    start = comma + 1;
  }
  return out;
}

}  // namespace batchlab::cli
