// Writing files at paths a user named, so that a failure leaves nothing behind: each file is
// written to a temporary beside its target (same folder, so the rename is atomic), flushed to disk,
// and renamed into place; a write that fails (a full disk, a file size limit, a folder where the
// file should go) removes its temporary and leaves the target as it was. Several files written
// through one AtomicFiles appear together: none is renamed until all are written, and a commit
// that fails half-way puts back the ones it renamed (commit() says how far that goes).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace batchlab {

// Refuses, before anything is written, a path that cannot take a new file: an existing folder, an
// existing file that is not a regular file (/dev/null, a pipe: renaming over it would replace it),
// or a path whose folder does not exist or is not writable. Throws InputError naming `path` as
// `what` (e.g. "--out") and the fix. Creates nothing.
void check_output_path(const std::string& path, std::string_view what);

class AtomicFiles {
 public:
  AtomicFiles() = default;
  // Removes the temporaries of every file not committed.
  ~AtomicFiles();
  AtomicFiles(const AtomicFiles&) = delete;
  AtomicFiles& operator=(const AtomicFiles&) = delete;

  // Writes `bytes` to a new temporary beside `path` (a hidden `.NAME.tmp-XXXXXX`) and flushes it.
  // Throws InputError when the path cannot take a file (its folder is missing or read-only, it is
  // a folder), Error when the write itself fails (no space left, a file size limit): in both
  // cases every temporary made so far is removed.
  void write(const std::string& path, std::string_view bytes);
  // The same with the file's bytes given in parts, written one after the other (a header and a
  // large payload, without joining them in memory first).
  void write(const std::string& path, std::initializer_list<std::string_view> parts);

  // Renames every temporary over its target, in the order written. All or nothing, as far as
  // POSIX allows (it has no rename of several files at once): before a target is replaced, a hard
  // link keeps its old file, and a rename that fails puts every file renamed before it back (the
  // old file through its link, or none where there was none), removes the temporaries and throws
  // InputError. What it cannot promise: a process killed during commit (or a rollback's own rename
  // failing) can leave the first files new and the others old, plus a hidden `.NAME.old-PID-N`
  // link beside each replaced file; a reader that looks during commit can see some files new.
  void commit();

 private:
  struct Pending {
    std::string tmp;
    std::string path;
  };
  struct Renamed {
    std::string path;
    std::string backup;  // the old file's link; "" when the path had no file
  };
  void discard() noexcept;
  static void roll_back(const std::vector<Renamed>& done) noexcept;
  std::vector<Pending> pending_;
};

// One file through AtomicFiles: write, then commit.
void write_file_atomically(const std::string& path, std::string_view bytes);
void write_file_atomically(const std::string& path, std::initializer_list<std::string_view> parts);

}  // namespace batchlab
