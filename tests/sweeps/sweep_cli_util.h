// Helpers for the tests that run the real `batchlab sweep` commands: a sweep folder with a tiny
// synthetic base experiment, background coordinators that can be killed, and read-only queries of
// the databases.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "results/query.h"
#include "tests/cli/cli_runner.h"
#include "tests/test_paths.h"

namespace batchlab::sweeps::testing {

using cli::testing::CommandResult;
using cli::testing::run_batchlab;
using cli::testing::shell_quote;

// A job of about a second on 2 cores: 512 synthetic samples, batch 64 as 2 x 32, `epochs` epochs.
inline std::string tiny_base(int epochs = 2) {
  return "schema_version = 1\n"
         "[model]\narch = \"small_resnet\"\nwidth = 8\n"
         "[data]\ndataset = \"synthetic\"\ntrain_size = 512\ntest_size = 256\n"
         "eval_train_samples = 256\n"
         "[batch]\nglobal = 64\nmicro = 32\n"
         "[optim]\nname = \"sgd\"\nbase_lr = 0.05\n"
         "[schedule]\nepochs = " +
         std::to_string(epochs) +
         "\n"
         "[train]\nthreads = 1\n";
}

// A sweep folder: base.toml, spec.toml, results/<name>.db and runs/<name>/.
struct SweepDir {
  cli::testing::TempDir dir{"sweepcli"};
  std::string name;
  std::string spec;
  std::string db;

  // `body` is the spec after its [sweep] table's name/experiment/results lines: seeds, [grid]...
  SweepDir(const std::string& sweep_name, const std::string& body, int epochs = 2)
      : name(sweep_name) {
    dir.file("base.toml", tiny_base(epochs));
    db = (dir.path / "results" / (name + ".db")).string();
    write_spec(body);
  }
  void write_spec(const std::string& body) {
    spec = dir.file("spec.toml", "schema_version = 1\n[sweep]\nname = \"" + name +
                                     "\"\nexperiment = \"base.toml\"\nresults = \"" + db + "\"\n" +
                                     body);
  }
  std::string runs_dir() const { return (dir.path / "runs" / name).string(); }
  std::string run_dir(const std::string& id) const { return runs_dir() + "/" + id; }

  CommandResult sweep(const std::string& args) const {
    return run_batchlab("sweep " + args + " " + shell_quote(spec));
  }
  // Run ids in plan order, from `sweep plan --format json`.
  std::vector<std::string> run_ids() const {
    auto r = sweep("plan --format json");
    std::vector<std::string> ids;
    std::regex re("\"index\": [0-9]+, \"run_id\": \"([0-9a-f]{16})\"");
    for (std::sregex_iterator it(r.output.begin(), r.output.end(), re), end; it != end; ++it) {
      ids.push_back((*it)[1]);
    }
    return ids;
  }
  results::QueryResult query(const std::string& sql) const {
    return results::query_readonly(db, sql);
  }
  std::string value(const std::string& sql) const {
    auto r = query(sql);
    if (r.rows.size() != 1 || r.rows[0].size() != 1) return "<not one value>";
    return r.rows[0][0].value_or("NULL");
  }
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

inline size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// `batchlab ARGS...` in the background, in a process group of its own (so that the coordinator
// and every job it started can be killed at once), output to `log`.
class Background {
 public:
  Background(const std::vector<std::string>& args, const std::string& log) : log_(log) {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
      std::vector<std::string> argv_strings = {test_paths::binary()};
      argv_strings.insert(argv_strings.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& s : argv_strings) argv.push_back(s.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::setpgid(pid_, pid_);  // also here, so there is no race with the kill below
  }
  ~Background() {
    if (pid_ > 0 && !reaped_) {
      ::kill(-pid_, SIGKILL);
      wait();
    }
  }
  pid_t pid() const { return pid_; }
  std::string output() const { return read_file(log_); }

  // Waits until `pred(output)` holds; false after `timeout`.
  template <class Pred>
  bool wait_for(Pred pred, std::chrono::seconds timeout = std::chrono::seconds(60)) const {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      if (pred(output())) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  void kill_group(int sig) const { ::kill(-pid_, sig); }
  void signal(int sig) const { ::kill(pid_, sig); }
  // The exit code (or -signal) once it has ended, without waiting.
  std::optional<int> poll() {
    if (reaped_) return code_;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) return std::nullopt;
    reaped_ = true;
    code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    return code_;
  }
  // Exit code, or -signal.
  int wait() {
    if (reaped_) return code_;
    int status = 0;
    ::waitpid(pid_, &status, 0);
    reaped_ = true;
    code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    return code_;
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int code_ = 0;
};

// No (run_id, step[, layer]) key twice in any per-step table of `db`.
inline void expect_no_duplicate_rows(const SweepDir& s) {
  for (const char* sql :
       {"SELECT count(*) FROM (SELECT 1 FROM steps GROUP BY run_id, step HAVING count(*) > 1)",
        "SELECT count(*) FROM (SELECT 1 FROM evals GROUP BY run_id, step HAVING count(*) > 1)",
        "SELECT count(*) FROM (SELECT 1 FROM layer_stats GROUP BY run_id, step, layer "
        "HAVING count(*) > 1)",
        "SELECT count(*) FROM (SELECT 1 FROM noise_scale GROUP BY run_id, step HAVING count(*) > "
        "1)",
        "SELECT count(*) FROM (SELECT 1 FROM milestones GROUP BY run_id, metric, target "
        "HAVING count(*) > 1)"}) {
    EXPECT_EQ(s.value(sql), "0") << sql;
  }
}

}  // namespace batchlab::sweeps::testing
