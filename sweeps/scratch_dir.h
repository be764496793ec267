// A folder of one process's own on the node's disk, for files that must not live on a shared
// filesystem (a SQLite database being written: its journal and locks need a local disk): a study
// coordinator's working copy of the study database, a Slurm task's records.
//
// The folder is made with mkdtemp(3) under SLURM_TMPDIR, else TMPDIR, else /tmp, and named
// batchlab-<what>-<host>-<pid>-<random>: the random part, created exclusively, keeps apart two
// processes that share a TMPDIR from different hosts (a shared /tmp, or one pid namespace per
// container) and one that reuses the pid of a process that died without cleaning up (its folder
// is never reused); host and pid say whose it is. It is removed, with what is in it, when the
// object goes.
#pragma once

#include <string>

namespace batchlab::sweeps {

// SLURM_TMPDIR, else TMPDIR, else /tmp.
std::string node_scratch_root();

class ScratchDir {
 public:
  // Throws batchlab::Error naming the root folder when the folder cannot be made.
  explicit ScratchDir(const std::string& what);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace batchlab::sweeps
