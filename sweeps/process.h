// Job processes: every job of a sweep runs as its own `batchlab train` process, so a crash or a
// divergence never takes the coordinator down, and a crash is seen for what it is (a signal).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace batchlab::sweeps {

struct ExitStatus {
  bool signaled = false;
  int code = 0;  // the exit code, or the signal number when signaled
  bool ok() const { return !signaled && code == 0; }
  // "exit code 1", "killed by signal 6 (SIGABRT)"
  std::string describe() const;
};

struct SpawnOptions {
  std::vector<std::string> argv;                         // argv[0] is the program's path
  std::vector<std::pair<std::string, std::string>> env;  // set (or replaced) in the child
  std::string log_path;  // stdout and stderr are appended here ("" = inherit)
  int keep_fd = -1;      // a descriptor the child inherits (its job lock), or -1
  // The signal the child gets when the parent dies (Linux): a job whose coordinator was killed
  // records itself as preempted instead of running on unsupervised. 0 = none.
  int parent_death_signal = 0;
};

class ChildProcess {
 public:
  // Forks and execs; throws batchlab::Error when the program cannot be started.
  static ChildProcess spawn(const SpawnOptions& options);

  pid_t pid() const { return pid_; }
  // Non-blocking: the exit status once the child has ended (reaped), nullopt while it runs.
  std::optional<ExitStatus> poll();
  // Blocks until the child ends.
  ExitStatus wait();
  void send(int signal) const;

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
  std::optional<ExitStatus> status_;
};

// The last `lines` lines of a text file ("" when it cannot be read), for error reports.
std::string tail_lines(const std::string& path, size_t lines);

// `s` as one word of a POSIX shell command line (single-quoted).
std::string shell_quote(const std::string& s);

}  // namespace batchlab::sweeps
