#include "sweeps/slurm_commands.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

namespace batchlab::sweeps {

namespace {

std::mutex g_counts_mutex;
std::map<std::string, int64_t> g_counts;

void count_call(const std::string& program) {
  std::lock_guard<std::mutex> lock(g_counts_mutex);
  ++g_counts[program];
}

std::string trimmed(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  size_t start = 0;
  while (start < text.size() && std::isspace(static_cast<unsigned char>(text[start]))) ++start;
  return text.substr(start);
}

bool contains(const std::string& text, std::string_view word) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find(word) != std::string::npos;
}

// Reads both pipes until both are closed (reading one after the other could block a child that
// fills the other pipe's buffer).
void drain(int out_fd, int err_fd, std::string& out, std::string& err) {
  std::array<pollfd, 2> fds{{{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}}};
  std::array<char, 4096> buf{};
  int open_fds = 2;
  while (open_fds > 0) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buf.data(), buf.size());
      if (n > 0) {
        (i == 0 ? out : err).append(buf.data(), static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
}

}  // namespace

std::string SlurmAnswer::message() const {
  const std::string o = trimmed(out), e = trimmed(err);
  if (o.empty()) return e;
  if (e.empty()) return o;
  return e + "\n" + o;
}

SlurmAnswer run_slurm_command(const std::vector<std::string>& argv) {
  SlurmAnswer answer;
  if (argv.empty()) return answer;
  count_call(argv[0]);
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return answer;
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return answer;
  }
  std::vector<std::string> words = argv;
  std::vector<char*> args;
  for (auto& w : words) args.push_back(w.data());
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    ::execvp(args[0], args.data());
    const std::string why = fmt::format("{}: {}\n", argv[0], std::strerror(errno));
    const ssize_t written = ::write(STDERR_FILENO, why.data(), why.size());
    (void)written;
    ::_exit(127);  // the shell's "command not found"
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (pid > 0) drain(out_pipe[0], err_pipe[0], answer.out, answer.err);
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  if (pid < 0) return answer;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  answer.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return answer;
}

std::map<std::string, int64_t> slurm_call_counts() {
  std::lock_guard<std::mutex> lock(g_counts_mutex);
  return g_counts;
}

std::optional<std::string> parse_parsable_job_id(std::string_view out) {
  std::string last;
  size_t start = 0;
  while (start <= out.size()) {
    size_t end = out.find('\n', start);
    if (end == std::string_view::npos) end = out.size();
    const std::string line = trimmed(std::string(out.substr(start, end - start)));
    if (!line.empty()) last = line;
    start = end + 1;
  }
  const std::string id = last.substr(0, last.find(';'));
  if (id.empty() || id.size() > 20 ||
      !std::all_of(id.begin(), id.end(), [](unsigned char c) { return std::isdigit(c); })) {
    return std::nullopt;
  }
  // The cluster part, when there is one, is a name: no spaces or further fields.
  if (last.size() > id.size()) {
    const std::string cluster = last.substr(id.size() + 1);
    if (cluster.empty() || std::any_of(cluster.begin(), cluster.end(), [](unsigned char c) {
          return std::isspace(c) || c == ';';
        })) {
      return std::nullopt;
    }
  }
  return id;
}

SbatchFailure classify_sbatch_failure(const SlurmAnswer& answer) {
  const std::string text = answer.err + "\n" + answer.out;
  if (answer.code == 0) return SbatchFailure::garbled;
  if (answer.code == 127 || answer.code < 0 || contains(text, "configuration source") ||
      (contains(text, "no such file or directory") && contains(text, "slurm.conf"))) {
    return SbatchFailure::missing;
  }
  // Submit limits (slurm_strerror's ESLURM_ACCOUNTING_POLICY and the pending reasons that name a
  // MaxSubmit limit): nothing is wrong with the job, the user has too many in the queue.
  if (contains(text, "maxsubmit") || contains(text, "submit limit") ||
      contains(text, "job submit limit")) {
    return SbatchFailure::limit;
  }
  for (std::string_view word :
       {"timed out", "unable to contact", "temporarily unavailable", "temporarily unable",
        "connection refused", "zero bytes were transmitted", "try again"}) {
    if (contains(text, word)) return SbatchFailure::transient;
  }
  return SbatchFailure::refused;
}

std::string_view describe(SbatchFailure failure) {
  switch (failure) {
    case SbatchFailure::transient:
      return "the Slurm controller did not answer";
    case SbatchFailure::limit:
      return "a submit limit of this cluster is reached";
    case SbatchFailure::refused:
      return "the cluster refuses the job";
    case SbatchFailure::missing:
      return "sbatch cannot submit from this host";
    case SbatchFailure::garbled:
      return "sbatch printed no job id";
  }
  return "sbatch failed";
}

RetryPolicy default_retry_policy() {
  RetryPolicy policy;
  if (const char* ms = std::getenv("BATCHLAB_SLURM_RETRY_MS"); ms != nullptr && *ms != '\0') {
    const long v = std::strtol(ms, nullptr, 10);
    if (v >= 0) {
      policy.first_delay = std::chrono::milliseconds(v);
      policy.max_delay = std::chrono::milliseconds(v * 16);
    }
  }
  return policy;
}

std::optional<std::string> current_user_name() {
  std::array<char, 4096> buffer{};
  passwd entry{};
  passwd* found = nullptr;
  if (::getpwuid_r(::geteuid(), &entry, buffer.data(), buffer.size(), &found) == 0 && found &&
      found->pw_name && *found->pw_name) {
    return std::string(found->pw_name);
  }
  if (const char* user = std::getenv("USER"); user && *user) return std::string(user);
  return std::nullopt;
}

namespace {

constexpr std::string_view kMarkerDirective = "#SBATCH --comment=batchlab-submit:";

// A comment no other submission has: host, process, a counter and the clock.
std::string new_submission_marker() {
  static std::atomic<uint64_t> counter{0};
  std::array<char, 256> host{};
  ::gethostname(host.data(), host.size() - 1);
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return fmt::format("batchlab-submit:{}-{}-{}-{}", host.data(), ::getpid(), ++counter,
                     std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
}

// Writes `marker` into the script as its comment, after the first line (the #! line; sbatch
// reads #SBATCH lines up to the first command), replacing the marker of an earlier submission.
void mark_script(const std::string& script, const std::string& marker) {
  std::ifstream in(script);
  if (!in) throw Error(fmt::format("{}: cannot read the job script to submit it", script));
  std::string out;
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    if (line.rfind(kMarkerDirective, 0) == 0) continue;
    out += line + "\n";
    if (first) out += "#SBATCH --comment=" + marker + "\n";
    first = false;
  }
  in.close();
  std::ofstream rewritten(script, std::ios::trunc);
  rewritten << out;
  if (!rewritten.flush()) throw Error(fmt::format("{}: cannot write the job script", script));
}

// What the queue says of the job whose comment is `marker`: its id; "" when no job of the user
// has it; nullopt when squeue did not answer.
std::optional<std::string> queued_job_with(const std::string& marker) {
  std::vector<std::string> command = {"squeue", "-h", "-o", "%A|%k"};
  if (const auto user = current_user_name()) command.push_back("--user=" + *user);
  const SlurmAnswer answer = run_slurm_command(command);
  if (answer.code != 0) return std::nullopt;
  std::istringstream lines(answer.out);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t bar = line.find('|');
    if (bar == std::string::npos) continue;
    std::string comment = line.substr(bar + 1);
    while (!comment.empty() && std::isspace(static_cast<unsigned char>(comment.back()))) {
      comment.pop_back();
    }
    if (comment == marker) return line.substr(0, bar);
  }
  return std::string();
}

}  // namespace

std::string sbatch_submit(const std::string& script, const RetryPolicy& policy) {
  const std::string marker = new_submission_marker();
  mark_script(script, marker);
  auto delay = policy.first_delay;
  bool submit = true;  // false while a time-out may have queued the job and squeue cannot tell
  SlurmAnswer answer;  // sbatch's last answer
  for (int attempt = 1;; ++attempt) {
    if (submit) {
      answer = run_slurm_command({"sbatch", "--parsable", script});
      if (answer.code == 0) {
        if (auto id = parse_parsable_job_id(answer.out)) return *id;
      }
    }
    const SbatchFailure failure = classify_sbatch_failure(answer);
    const std::string said = answer.message();
    if (failure != SbatchFailure::transient || attempt >= policy.tries) {
      throw SbatchError(
          failure,
          fmt::format(
              "sbatch --parsable {}: {}{} (exit code {}): {}{}", script, describe(failure),
              failure == SbatchFailure::transient ? fmt::format(" after {} tries", attempt) : "",
              answer.code, said.empty() ? "(it printed nothing)" : said,
              submit ? ""
                     : fmt::format("; squeue did not answer either, so the job may be queued: "
                                   "look for comment {} in `squeue --me -o \"%A %k\"` before "
                                   "submitting again",
                                   marker)));
    }
    std::this_thread::sleep_for(delay);
    delay = std::min(policy.max_delay, delay * 2);
    // The controller may have queued the job before the time-out: adopt it rather than submit a
    // second one.
    const auto queued = queued_job_with(marker);
    if (queued && !queued->empty()) return *queued;
    submit = queued.has_value();
  }
}

}  // namespace batchlab::sweeps
