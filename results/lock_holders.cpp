#include "results/lock_holders.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <vector>

namespace batchlab::results {
namespace {

// SQLite's lock bytes (os_unix.c): a reader takes a read lock on the pending byte and on one byte
// of the shared range; a writer's RESERVED, PENDING and EXCLUSIVE locks are write locks on them.
constexpr std::int64_t kPendingByte = 0x40000000;
constexpr std::int64_t kReservedByte = kPendingByte + 1;
constexpr std::int64_t kSharedFirst = kPendingByte + 2;

struct LockLine {
  std::string type;  // READ or WRITE
  long long pid = 0;
  std::string file;  // "MAJ:MIN:INODE", the numbers of the device in hex
  std::int64_t start = 0;
  std::int64_t end = 0;  // inclusive; "EOF" reads as the largest offset
};

bool parse(const std::string& text, LockLine& out) {
  // "1: POSIX  ADVISORY  WRITE 16979 fe:00:10953258 1073741824 1073742335"
  std::istringstream in(text);
  // A waiter ("1: -> POSIX ...") holds nothing yet.
  std::string id, kind, mode, end;
  if (!(in >> id >> kind) || (kind != "POSIX" && kind != "OFDLCK")) return false;
  if (!(in >> mode >> out.type >> out.pid >> out.file >> out.start >> end)) return false;
  if (end == "EOF") {
    out.end = INT64_MAX;
  } else {
    std::istringstream number(end);
    if (!(number >> out.end)) return false;
  }
  return true;
}

// What one lock means to a reader or writer of the file.
std::string kind_of(const LockLine& lock) {
  const bool covers_shared = lock.start <= kSharedFirst && lock.end >= kSharedFirst;
  if (lock.type == "WRITE" && covers_shared) return "an exclusive lock on it (a write in progress)";
  if (lock.type == "WRITE" && lock.start <= kPendingByte && lock.end >= kPendingByte) {
    return "its pending lock (a writer waiting for the readers to finish)";
  }
  if (lock.type == "WRITE" && lock.start <= kReservedByte && lock.end >= kReservedByte) {
    return "its reserved lock (a write transaction that has not committed yet)";
  }
  if (covers_shared) return "a shared lock on it (a read)";
  return "";
}

}  // namespace

std::string describe_lock_holders(const std::string& db_path) {
  struct stat st {};
  if (::stat(db_path.c_str(), &st) != 0) return {};
  const std::string file = fmt::format("{:02x}:{:02x}:{}", major(st.st_dev), minor(st.st_dev),
                                       static_cast<unsigned long long>(st.st_ino));
  std::ifstream table("/proc/locks");
  // Writers first: a reader waits only for them; readers are named when no writer is there (a
  // writer waits for them to finish).
  std::vector<std::string> writers, readers;
  for (std::string text; std::getline(table, text);) {
    LockLine lock;
    if (!parse(text, lock) || lock.file != file || lock.pid == ::getpid()) continue;
    const std::string kind = kind_of(lock);
    if (kind.empty()) continue;
    auto& holders = lock.type == "WRITE" ? writers : readers;
    const std::string holder = fmt::format("process {} holds {}", lock.pid, kind);
    if (std::find(holders.begin(), holders.end(), holder) == holders.end()) {
      holders.push_back(holder);
    }
  }
  std::string out;
  for (const auto& h : writers.empty() ? readers : writers) out += (out.empty() ? "" : "; ") + h;
  return out;
}

}  // namespace batchlab::results
