#include "core/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
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
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
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
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (::rename(pending_[i].tmp.c_str(), pending_[i].path.c_str()) != 0) {
      const int error = errno;
      const std::string path = pending_[i].path;
      pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(i));
      discard();
      throw InputError(fmt::format("{}: cannot write the file: {}", path, std::strerror(error)));
    }
  }
  pending_.clear();
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
