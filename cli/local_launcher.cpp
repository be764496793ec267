#include "cli/local_launcher.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <optional>

#include "cli/app.h"
#include "core/errors.h"

extern char** environ;

namespace batchlab::cli {

namespace {

using Clock = std::chrono::steady_clock;

std::atomic<int> g_forward_signal{0};

extern "C" void remember_signal(int sig) { g_forward_signal.store(sig); }

struct Rank {
  int index = 0;
  pid_t pid = -1;
  int out_fd = -1;            // read end of the rank's stdout+stderr pipe
  std::string partial;        // output after the last newline
  std::optional<int> status;  // waitpid status once exited
  double exited_after_s = 0.0;
};

std::string describe_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    return fmt::format("was killed by signal {} (SIG{})", sig, name ? name : "?");
  }
  return fmt::format("ended with wait status {}", status);
}

bool failed(int status) { return !WIFEXITED(status) || WEXITSTATUS(status) != 0; }

// The environment of rank `r`: ours without any earlier rendezvous variables, plus the new ones.
std::vector<std::string> rank_environment(int r, int n, int port) {
  static const std::vector<std::string> replaced = {
      "RANK=", "WORLD_SIZE=", "LOCAL_RANK=", "LOCAL_WORLD_SIZE=", "MASTER_ADDR=", "MASTER_PORT="};
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string var(*e);
    bool skip = false;
    for (const auto& prefix : replaced) skip = skip || var.rfind(prefix, 0) == 0;
    if (!skip) env.push_back(var);
  }
  env.push_back(fmt::format("RANK={}", r));
  env.push_back(fmt::format("WORLD_SIZE={}", n));
  env.push_back(fmt::format("LOCAL_RANK={}", r));
  env.push_back(fmt::format("LOCAL_WORLD_SIZE={}", n));
  env.emplace_back("MASTER_ADDR=127.0.0.1");  // built in place: GCC 12 misreads the move of a
                                              // literal temporary (-Wstringop-overread)
  env.push_back(fmt::format("MASTER_PORT={}", port));
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

Rank spawn(int r, const std::string& exe, std::vector<std::string> args,
           std::vector<std::string> env) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(fmt::format("pipe: {}", std::strerror(errno)));
  // Everything the child needs is built before fork: after it only async-signal-safe calls.
  args.insert(args.begin(), exe);
  auto argv = c_strings(args);
  auto envp = c_strings(env);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(1);  // the launcher died before prctl
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    ::execve(exe.c_str(), argv.data(), envp.data());
    const char msg[] = "batchlab: cannot execute the rank process\n";
    (void)!::write(STDERR_FILENO, msg, sizeof(msg) - 1);
    ::_exit(127);
  }
  ::close(fds[1]);
  Rank rank;
  rank.index = r;
  rank.pid = pid;
  rank.out_fd = fds[0];
  return rank;
}

// Forwards complete lines of a rank's output, prefixed; returns false at end of file.
bool pump(Rank& rank) {
  char buf[8192];
  const ssize_t n = ::read(rank.out_fd, buf, sizeof(buf));
  if (n <= 0) {
    if (n < 0 && errno == EINTR) return true;
    if (!rank.partial.empty()) fmt::print("[rank {}] {}\n", rank.index, rank.partial);
    rank.partial.clear();
    std::fflush(stdout);
    ::close(rank.out_fd);
    rank.out_fd = -1;
    return false;
  }
  rank.partial.append(buf, static_cast<size_t>(n));
  size_t start = 0;
  for (size_t nl; (nl = rank.partial.find('\n', start)) != std::string::npos; start = nl + 1) {
    fmt::print("[rank {}] {}\n", rank.index,
               std::string_view(rank.partial).substr(start, nl - start));
  }
  rank.partial.erase(0, start);
  std::fflush(stdout);
  return true;
}

}  // namespace

int free_local_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw Error(fmt::format("socket: {}", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw Error(fmt::format("cannot find a free port: {}", std::strerror(errno)));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

int launch_local_ranks(const LaunchOptions& options) {
  const int n = options.nproc;
  char exe_buf[4096];
  const ssize_t len = ::readlink("/proc/self/exe", exe_buf, sizeof(exe_buf) - 1);
  if (len <= 0) throw Error("cannot find the batchlab executable (/proc/self/exe)");
  const std::string exe(exe_buf, static_cast<size_t>(len));
  const int port = free_local_port();
  fmt::print("batchlab train: launching {} ranks on this host (store at 127.0.0.1:{})\n", n, port);
  std::fflush(stdout);

  for (int sig : {SIGINT, SIGTERM, SIGUSR1, SIGUSR2}) std::signal(sig, remember_signal);
  const auto t0 = Clock::now();
  std::vector<Rank> ranks;
  for (int r = 0; r < n; ++r) {
    ranks.push_back(spawn(r, exe, options.rank_args, rank_environment(r, n, port)));
  }

  int forwarded = 0;  // the last signal passed on to the ranks
  std::optional<size_t> first_failure;
  std::optional<Clock::time_point> failed_at;
  bool termed = false, killed = false;
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  for (;;) {
    if (int sig = g_forward_signal.exchange(0); sig != 0) {
      forwarded = sig;
      for (auto& r : ranks) {
        if (!r.status) ::kill(r.pid, sig);
      }
    }
    std::vector<pollfd> fds;
    std::vector<size_t> owner;
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (ranks[i].out_fd >= 0) {
        fds.push_back({ranks[i].out_fd, POLLIN, 0});
        owner.push_back(i);
      }
    }
    if (!fds.empty() && ::poll(fds.data(), fds.size(), 200) > 0) {
      for (size_t k = 0; k < fds.size(); ++k) {
        if (fds[k].revents & (POLLIN | POLLHUP | POLLERR)) pump(ranks[owner[k]]);
      }
    } else if (fds.empty()) {
      ::usleep(100 * 1000);
    }
    bool all_done = true;
    for (size_t i = 0; i < ranks.size(); ++i) {
      auto& r = ranks[i];
      if (!r.status) {
        int status = 0;
        if (::waitpid(r.pid, &status, WNOHANG) == r.pid) {
          r.status = status;
          r.exited_after_s = elapsed();
          if (failed(status) && !first_failure) {
            first_failure = i;
            failed_at = Clock::now();
          }
        }
      }
      all_done = all_done && r.status && r.out_fd < 0;
    }
    if (all_done) break;
    if (failed_at) {
      const double since = std::chrono::duration<double>(Clock::now() - *failed_at).count();
      const int sig = since > options.kill_after_s ? SIGKILL
                      : since > options.grace_s    ? SIGTERM
                                                   : 0;
      if ((sig == SIGTERM && !termed) || (sig == SIGKILL && !killed)) {
        for (auto& r : ranks) {
          if (r.status) continue;
          fmt::print(stderr,
                     "batchlab train: rank {} still running {:.0f} s after rank {} failed; "
                     "sending SIG{}\n",
                     r.index, since, ranks[*first_failure].index, sig == SIGKILL ? "KILL" : "TERM");
          std::fflush(stderr);
          if (sig == SIGTERM) ::kill(r.pid, SIGCONT);  // a stopped rank must run to handle it
          ::kill(r.pid, sig);
        }
        (sig == SIGKILL ? killed : termed) = true;
      }
    }
  }
  for (int sig : {SIGINT, SIGTERM, SIGUSR1, SIGUSR2}) std::signal(sig, SIG_DFL);

  if (!first_failure) {
    fmt::print("batchlab train: all {} ranks finished ({:.1f} s)\n", n, elapsed());
    return kExitOk;
  }
  const auto& first = ranks[*first_failure];
  std::string others;
  bool all_bad_input = true;
  for (const auto& r : ranks) {
    if (failed(*r.status)) {
      all_bad_input =
          all_bad_input && WIFEXITED(*r.status) && WEXITSTATUS(*r.status) == kExitBadInput;
    }
    if (r.index == first.index) continue;
    others += fmt::format("; rank {} {} after {:.1f} s", r.index, describe_status(*r.status),
                          r.exited_after_s);
  }
  const char* sig_name = forwarded ? sigabbrev_np(forwarded) : nullptr;
  fmt::print(
      stderr, "batchlab train: {}rank {} of {} (pid {}) {} after {:.1f} s{}\n",
      forwarded ? fmt::format("SIG{} forwarded to the ranks; ", sig_name ? sig_name : "?") : "",
      first.index, n, first.pid, describe_status(*first.status), first.exited_after_s, others);
  return all_bad_input ? kExitBadInput : kExitFailed;
}

}  // namespace batchlab::cli
