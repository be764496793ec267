// Where a sweep keeps its jobs' files, and the locks that keep one writer per file.
//
//   <runs_dir>/coordinator.lock        held by the one `sweep run|status|submit` allowed to write
//                                      the sweep database at a time
//   <runs_dir>/<run_id>/config.toml    the job's canonical TOML: `batchlab train config.toml
//   --run-id
//                                      <run_id>` reproduces the run id (canonical TOML is a fixed
//                                      point)
//   <runs_dir>/<run_id>/records.db     the job's own SQLite file, written only by that job
//   <runs_dir>/<run_id>/log.txt        its stdout and stderr, every attempt appended
//   <runs_dir>/<run_id>/job.lock       held by the job's process while it lives
//   <runs_dir>/<run_id>/stop           a study's stop request for the run ("REASON STEP";
//                                      `batchlab train --stop-file`)
//   <runs_dir>/<run_id>/slurm_job      the Slurm job of a study trial's latest submission
//   <runs_dir>/slurm/                  sbatch scripts, task lists, submissions.txt (and a Slurm-run
//                                      study's coordinator.txt)
//
// Locks are flock(2) locks: the kernel drops them when their holder dies in any way (kill -9
// included), so a lock that can be taken proves that nobody holds it any more.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace batchlab::sweeps {

// The folder that holds a sweep's run folders by default, given its database path: `runs` beside
// a `results/` folder (results/x.db -> runs, which .gitignore covers), otherwise `runs` inside the
// database's own folder (/scratch/x.db -> /scratch/runs). A sweep's runs are <that>/<sweep name>.
std::string default_runs_root(const std::string& results_db);

// Where `batchlab train --db DB` keeps a run's checkpoints unless --checkpoint-dir says otherwise:
// <DB's folder>/checkpoints/<run id>. A sweep's job records into <run dir>/records.db, so its
// checkpoints are in <run dir>/checkpoints/<run id>.
std::string default_checkpoint_dir(const std::string& db_path, const std::string& run_id);

// Where the checkpoints of run `run_id` recorded in `db_path` may be, most likely first: beside
// the database (a run of `batchlab train --db`), then in its run folder when it belongs to the
// sweep `sweep_name` ("" for none) with the default runs folder (default_runs_root). A sweep with
// its own sweep.runs_dir, or a run trained with --checkpoint-dir, is not found here.
std::vector<std::string> checkpoint_dir_candidates(const std::string& db_path,
                                                   const std::string& sweep_name,
                                                   const std::string& run_id);

class RunLayout {
 public:
  explicit RunLayout(std::string runs_dir);

  const std::string& root() const { return root_; }
  std::string dir(const std::string& run_id) const;
  std::string config_path(const std::string& run_id) const;
  std::string records_path(const std::string& run_id) const;
  std::string log_path(const std::string& run_id) const;
  std::string lock_path(const std::string& run_id) const;
  std::string stop_path(const std::string& run_id) const;
  std::string slurm_job_path(const std::string& run_id) const;
  std::string coordinator_lock_path() const;
  std::string slurm_dir() const;

  // Writes config.toml (creating the folder) unless it already holds exactly `canonical_toml`;
  // through a temporary file and a rename, so a reader never sees half a file.
  void write_config(const std::string& run_id, const std::string& canonical_toml) const;

 private:
  std::string root_;
};

// An exclusive flock on a file, released on destruction (or by the kernel when the process ends).
class FileLock {
 public:
  // nullopt when another process holds it. Creates the file (and its folder) when missing. With
  // `remove_on_release` the holder removes the file when it lets go (a lock taken only for a
  // command's duration leaves nothing behind); the file then may be removed under a waiting
  // opener, so a lock is only taken on the file that is at `path` after locking.
  // Throws batchlab::Error naming the path when the file cannot be opened, or when flock(2) itself
  // fails (ENOLCK, ENOSYS, EOPNOTSUPP: a filesystem without file locks), which is not a held lock.
  static std::optional<FileLock> try_acquire(const std::string& path,
                                             bool remove_on_release = false);
  ~FileLock();
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  int fd() const { return fd_; }
  // Records `text` in the lock file (e.g. the holder's pid), for messages of those who wait.
  void describe(const std::string& text);

 private:
  FileLock(int fd, std::string remove_path) : fd_(fd), remove_path_(std::move(remove_path)) {}
  void release() noexcept;
  int fd_ = -1;
  std::string remove_path_;  // removed on release ("" to keep the file)
};

// Whether some process holds the lock on `path` (false when the file does not exist). Throws
// batchlab::Error, as try_acquire does, when flock(2) fails for another reason than a holder.
bool lock_held(const std::string& path);

// The text a holder recorded with FileLock::describe ("" when none): at most kMaxLockDescription
// bytes of the file ("..." added when there were more), trailing whitespace trimmed, every byte
// that is not printable ASCII shown as '?'. Never throws for what the file holds
// (fuzz/run_layout_fuzz.cpp).
inline constexpr size_t kMaxLockDescription = 1024;
std::string lock_description(const std::string& path);

}  // namespace batchlab::sweeps
