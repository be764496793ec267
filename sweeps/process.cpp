#include "sweeps/process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>

#include "core/errors.h"

extern char** environ;

namespace batchlab::sweeps {

std::string ExitStatus::describe() const {
  if (!signaled) return fmt::format("exit code {}", code);
  const char* name = sigabbrev_np(code);
  return name != nullptr ? fmt::format("killed by signal {} (SIG{})", code, name)
                         : fmt::format("killed by signal {}", code);
}

namespace {

ExitStatus from_wait_status(int status) {
  ExitStatus out;
  if (WIFSIGNALED(status)) {
    out.signaled = true;
    out.code = WTERMSIG(status);
  } else {
    out.code = WEXITSTATUS(status);
  }
  return out;
}

// Everything the child needs is prepared before fork(): after it, only async-signal-safe calls.
std::vector<std::string> child_environment(const SpawnOptions& options) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& [key, value] : options.env) replaced = replaced || key == name;
    if (!replaced) env.push_back(entry);
  }
  for (const auto& [key, value] : options.env) env.push_back(key + "=" + value);
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

ChildProcess ChildProcess::spawn(const SpawnOptions& options) {
  if (options.argv.empty()) throw Error("spawn: no program given");
  std::vector<std::string> argv_strings = options.argv;
  std::vector<std::string> env_strings = child_environment(options);
  std::vector<char*> argv = pointers(argv_strings);
  std::vector<char*> envp = pointers(env_strings);

  int log_fd = -1;
  if (!options.log_path.empty()) {
    log_fd = ::open(options.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
      throw Error(fmt::format("cannot open log {}: {}", options.log_path, std::strerror(errno)));
    }
  }
  // exec failures travel back through a close-on-exec pipe: EOF means the exec succeeded.
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    if (log_fd >= 0) ::close(log_fd);
    throw Error(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(report[0]);
    ::close(report[1]);
    if (log_fd >= 0) ::close(log_fd);
    throw Error(fmt::format("fork failed: {}", std::strerror(err)));
  }
  if (pid == 0) {
    if (options.parent_death_signal != 0) {
      ::prctl(PR_SET_PDEATHSIG, options.parent_death_signal);
      if (::getppid() != parent) ::raise(options.parent_death_signal);
    }
    // The parent may have blocked or ignored signals; a job starts with the defaults.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGPIPE}) ::signal(sig, SIG_DFL);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    if (log_fd >= 0) {
      ::dup2(log_fd, STDOUT_FILENO);
      ::dup2(log_fd, STDERR_FILENO);
    }
    if (options.keep_fd >= 0) {
      const int flags = ::fcntl(options.keep_fd, F_GETFD);
      if (flags >= 0) ::fcntl(options.keep_fd, F_SETFD, flags & ~FD_CLOEXEC);
    }
    ::execve(argv[0], argv.data(), envp.data());
    const int err = errno;
    ssize_t ignored = ::write(report[1], &err, sizeof err);
    (void)ignored;
    ::_exit(127);
  }
  ::close(report[1]);
  if (log_fd >= 0) ::close(log_fd);
  int err = 0;
  ssize_t n;
  do {
    n = ::read(report[0], &err, sizeof err);
  } while (n < 0 && errno == EINTR);
  ::close(report[0]);
  if (n == static_cast<ssize_t>(sizeof err)) {
    ::waitpid(pid, nullptr, 0);
    throw Error(fmt::format("cannot run {}: {}", options.argv[0], std::strerror(err)));
  }
  return ChildProcess(pid);
}

std::optional<ExitStatus> ChildProcess::poll() {
  if (status_) return status_;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) status_ = from_wait_status(status);
  return status_;
}

ExitStatus ChildProcess::wait() {
  if (status_) return *status_;
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  status_ = from_wait_status(status);
  return *status_;
}

void ChildProcess::send(int signal) const {
  if (!status_) ::kill(pid_, signal);
}

std::string tail_lines(const std::string& path, size_t lines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  // Only the end of a long log matters.
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff start = size > 65536 ? size - 65536 : 0;
  in.seekg(start);
  std::deque<std::string> kept;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    kept.push_back(line);
    if (kept.size() > lines) kept.pop_front();
  }
  std::string out;
  for (const auto& l : kept) out += (out.empty() ? "" : "\n") + l;
  return out;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace batchlab::sweeps
