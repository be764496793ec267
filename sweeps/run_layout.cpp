#include "sweeps/run_layout.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "core/atomic_file.h"
#include "core/errors.h"

namespace batchlab::sweeps {

namespace fs = std::filesystem;

std::string default_runs_root(const std::string& results_db) {
  const fs::path folder = fs::path(results_db).parent_path();
  const fs::path parent = folder.filename() == "results" ? folder.parent_path() : folder;
  return (parent / "runs").string();
}

std::string default_checkpoint_dir(const std::string& db_path, const std::string& run_id) {
  return (fs::path(db_path).parent_path() / "checkpoints" / run_id).string();
}

std::vector<std::string> checkpoint_dir_candidates(const std::string& db_path,
                                                   const std::string& sweep_name,
                                                   const std::string& run_id) {
  std::vector<std::string> out = {default_checkpoint_dir(db_path, run_id)};
  if (!sweep_name.empty()) {
    const RunLayout layout((fs::path(default_runs_root(db_path)) / sweep_name).string());
    out.push_back(default_checkpoint_dir(layout.records_path(run_id), run_id));
  }
  return out;
}

RunLayout::RunLayout(std::string runs_dir) : root_(std::move(runs_dir)) {}

std::string RunLayout::dir(const std::string& run_id) const {
  return (fs::path(root_) / run_id).string();
}
std::string RunLayout::config_path(const std::string& run_id) const {
  return (fs::path(dir(run_id)) / "config.toml").string();
}
std::string RunLayout::records_path(const std::string& run_id) const {
  return (fs::path(dir(run_id)) / "records.db").string();
}
std::string RunLayout::log_path(const std::string& run_id) const {
  return (fs::path(dir(run_id)) / "log.txt").string();
}
std::string RunLayout::lock_path(const std::string& run_id) const {
  return (fs::path(dir(run_id)) / "job.lock").string();
}
std::string RunLayout::stop_path(const std::string& run_id) const {
  return (fs::path(dir(run_id)) / "stop").string();
}
std::string RunLayout::slurm_job_path(const std::string& run_id) const {
  return (fs::path(dir(run_id)) / "slurm_job").string();
}
std::string RunLayout::coordinator_lock_path() const {
  return (fs::path(root_) / "coordinator.lock").string();
}
std::string RunLayout::slurm_dir() const { return (fs::path(root_) / "slurm").string(); }

void RunLayout::write_config(const std::string& run_id, const std::string& canonical_toml) const {
  const std::string path = config_path(run_id);
  {
    // Read only a file of the right size: the folder is shared, and a config.toml of gigabytes
    // (anyone's, or a damaged one) is simply replaced.
    std::error_code size_ec;
    const auto size = fs::file_size(path, size_ec);
    std::ifstream in(path, std::ios::binary);
    if (!size_ec && size == canonical_toml.size() && in) {
      std::string current(canonical_toml.size(), '\0');
      in.read(current.data(), static_cast<std::streamsize>(current.size()));
      if (static_cast<size_t>(in.gcount()) == current.size() && current == canonical_toml) return;
    }
  }
  std::error_code ec;
  fs::create_directories(dir(run_id), ec);
  if (ec) throw Error(fmt::format("cannot create run folder {}: {}", dir(run_id), ec.message()));
  write_file_atomically(path, canonical_toml);
}

namespace {

// flock(2) failing for another reason than a holder: the filesystem cannot lock at all.
[[noreturn]] void throw_lock_error(const std::string& path, int err) {
  throw Error(fmt::format(
      "cannot lock {}: {} (flock(2)); this filesystem does not support the file locks batchlab "
      "keeps one coordinator per sweep with: put the sweep's runs folder on one that does "
      "([sweep] runs_dir: a local disk, NFSv4, Lustre mounted with -o flock; docs/sweeps.md, "
      "\"What a site needs\")",
      path, std::strerror(err)));
}

}  // namespace

std::optional<FileLock> FileLock::try_acquire(const std::string& path, bool remove_on_release) {
  std::error_code ec;
  const auto parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  // A holder that removes the file on release may do so between our open and our flock: then we
  // hold a lock on a file nobody else will open, and try again on the one at `path`.
  for (int tries = 0; tries < 8; ++tries) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      throw Error(fmt::format("cannot open lock file {}: {}", path, std::strerror(errno)));
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      ::close(fd);
      if (err == EWOULDBLOCK) return std::nullopt;
      throw_lock_error(path, err);
    }
    if (!remove_on_release) return FileLock(fd, "");
    struct stat held {
    }, at_path{};
    if (::fstat(fd, &held) == 0 && ::stat(path.c_str(), &at_path) == 0 &&
        held.st_dev == at_path.st_dev && held.st_ino == at_path.st_ino) {
      return FileLock(fd, path);
    }
    ::close(fd);
  }
  return std::nullopt;
}

void FileLock::release() noexcept {
  if (fd_ < 0) return;
  // Removed while still held, so nobody can lock the file between its removal and our close.
  if (!remove_path_.empty()) ::unlink(remove_path_.c_str());
  ::close(fd_);  // closing the last descriptor releases the flock
  fd_ = -1;
  // The folder the lock made, when nothing else is in it (a command that stopped early).
  if (!remove_path_.empty()) ::rmdir(fs::path(remove_path_).parent_path().c_str());
}

FileLock::~FileLock() { release(); }

FileLock::FileLock(FileLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), remove_path_(std::move(other.remove_path_)) {}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
    remove_path_ = std::move(other.remove_path_);
  }
  return *this;
}

void FileLock::describe(const std::string& text) {
  if (fd_ < 0) return;
  if (::ftruncate(fd_, 0) != 0) return;
  const ssize_t written = ::pwrite(fd_, text.data(), text.size(), 0);
  (void)written;  // only informative
}

bool lock_held(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
    ::close(fd);
    return false;
  }
  const int err = errno;
  ::close(fd);
  if (err != EWOULDBLOCK) throw_lock_error(path, err);
  return true;
}

std::string lock_description(const std::string& path) {
  // The holder writes one short line; what another process (or a damaged file) left is read only
  // that far, and printed with every byte that is not printable ASCII as '?' (it goes into
  // messages, terminals and JSON).
  std::ifstream in(path, std::ios::binary);
  std::string out(kMaxLockDescription + 1, '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  out.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  const bool cut = out.size() > kMaxLockDescription;
  if (cut) out.resize(kMaxLockDescription);
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
  for (char& c : out) {
    if (!std::isprint(static_cast<unsigned char>(c))) c = '?';
  }
  return cut ? out + "..." : out;
}

}  // namespace batchlab::sweeps
