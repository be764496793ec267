#include "core/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "core/errors.h"

namespace batchlab {
namespace {

namespace fs = std::filesystem;

// The folder a file at `path` goes into ("." for a bare name).
fs::path folder_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

// Failures that say the path is wrong (the user's to fix) rather than that writing failed.
bool is_path_problem(int error) {
  return error == ENOENT || error == ENOTDIR || error == EISDIR || error == EACCES ||
         error == EPERM || error == EROFS || error == ENAMETOOLONG || error == ELOOP;
}

[[noreturn]] void throw_write_error(const std::string& path, int error) {
  const std::string message =
      fmt::format("{}: cannot write the file: {}", path, std::strerror(error));
  if (is_path_problem(error)) throw InputError(message);
  throw Error(message + "; nothing was written there");
}

// The process's umask without changing it. umask(2) can only be read by setting it, and the
// round trip (umask(0), then back) is process-wide: a file another thread creates in between
// gets mode 0666. Linux (4.7 on) shows the mask in /proc/self/status; elsewhere the mask read
// while the process starts (one thread then) is used.
mode_t umask_at_start() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return mask;
}
const mode_t g_umask_at_start = umask_at_start();

mode_t current_umask() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Umask:", 0) == 0) {
      return static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8));
    }
  }
  return g_umask_at_start;
}

// A hard link to an existing target, made before a commit renames over it, so a commit that fails
// later can put the old file back. "" when the target does not exist (the rollback removes the
// new file then) or is a folder or a device (the rename itself refuses a folder, and
// check_output_path the rest). A file system without hard links gets a copy.
std::string keep_old(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return "";
  if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) return "";
  const fs::path target(path);
  for (int attempt = 0;; ++attempt) {
    const std::string backup =
        (folder_of(path) /
         fmt::format(".{}.old-{}-{}", target.filename().string(), ::getpid(), attempt))
            .string();
    if (::link(path.c_str(), backup.c_str()) == 0) return backup;
    if (errno == EEXIST) continue;
    std::error_code ec;
    if (fs::copy_file(path, backup, ec)) return backup;
    throw_write_error(path, ec ? ec.value() : EIO);
  }
}

}  // namespace

void check_output_path(const std::string& path, std::string_view what) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (fs::is_directory(status)) {
    throw InputError(fmt::format(
        "{} {}: is a folder, so no file can be written there; give a file path (inside it, or "
        "another name)",
        what, path));
  }
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    throw InputError(fmt::format(
        "{} {}: exists and is not a regular file (a device, pipe or socket); give the path of a "
        "file",
        what, path));
  }
  const fs::path folder = folder_of(path);
  const auto folder_status = fs::status(folder, ec);
  if (!fs::is_directory(folder_status)) {
    throw InputError(fmt::format("{} {}: the folder {} does not exist; create it first", what, path,
                                 folder.string()));
  }
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    throw InputError(fmt::format("{} {}: cannot write into the folder {}: {}", what, path,
                                 folder.string(), std::strerror(errno)));
  }
}

AtomicFiles::~AtomicFiles() { discard(); }

void AtomicFiles::discard() noexcept {
  for (const auto& p : pending_) ::unlink(p.tmp.c_str());
  pending_.clear();
}

void AtomicFiles::write(const std::string& path, std::string_view bytes) { write(path, {bytes}); }

void AtomicFiles::write(const std::string& path, std::initializer_list<std::string_view> parts) {
  const fs::path target(path);
  std::string tmp = (folder_of(path) / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) {
    const int error = errno;
    discard();
    throw_write_error(path, error);
  }
  pending_.push_back({tmp, path});
  // mkstemp makes the file 0600; give it the mode a plain new file would get (0666 less umask).
  ::fchmod(fd, 0666 & ~current_umask());
  int error = 0;
  for (std::string_view bytes : parts) {
    const char* data = bytes.data();
    size_t left = bytes.size();
    while (left > 0 && error == 0) {
      const ssize_t n = ::write(fd, data, left);
      if (n < 0) {
        if (errno != EINTR) error = errno;
        continue;
      }
      data += n;
      left -= static_cast<size_t>(n);
    }
  }
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) {
    discard();
    throw_write_error(path, error);
  }
}

void AtomicFiles::commit() {
  std::vector<Renamed> done;
  try {
    for (const Pending& p : pending_) {
      std::string backup = keep_old(p.path);
      if (::rename(p.tmp.c_str(), p.path.c_str()) != 0) {
        const int error = errno;
        if (!backup.empty()) ::unlink(backup.c_str());
        throw InputError(
            fmt::format("{}: cannot write the file: {}; {}", p.path, std::strerror(error),
                        done.empty() ? "nothing was changed"
                                     : "the files written with it were put back as they were"));
      }
      done.push_back({p.path, std::move(backup)});
    }
  } catch (...) {
    roll_back(done);
    discard();
    throw;
  }
  for (const Renamed& r : done) {
    if (!r.backup.empty()) ::unlink(r.backup.c_str());
  }
  pending_.clear();
}

void AtomicFiles::roll_back(const std::vector<Renamed>& done) noexcept {
  for (auto it = done.rbegin(); it != done.rend(); ++it) {
    if (it->backup.empty()) {
      ::unlink(it->path.c_str());
    } else {
      ::rename(it->backup.c_str(), it->path.c_str());
    }
  }
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  write_file_atomically(path, {bytes});
}

void write_file_atomically(const std::string& path, std::initializer_list<std::string_view> parts) {
  AtomicFiles files;
  files.write(path, parts);
  files.commit();
}

}  // namespace batchlab
