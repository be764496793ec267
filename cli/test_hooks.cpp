#include "cli/test_hooks.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "cli/args.h"

namespace batchlab::cli {

namespace {

namespace fs = std::filesystem;

volatile std::sig_atomic_t g_hold_signal = 0;

extern "C" void on_signal_while_held(int sig) { g_hold_signal = sig; }

// Waits while `dir`/hold exists, with `dir`/<run id>.held written. A stop signal ends the wait and
// is raised again once the train command's own handlers are back.
void hold(const fs::path& dir, const std::string& run_id) {
  std::error_code ec;
  if (!fs::exists(dir / "hold", ec)) return;
  constexpr std::array<int, 4> kStopSignals = {SIGTERM, SIGINT, SIGUSR1, SIGUSR2};
  std::array<struct sigaction, 4> previous{};
  struct sigaction held {};
  held.sa_handler = on_signal_while_held;
  sigemptyset(&held.sa_mask);
  g_hold_signal = 0;
  for (size_t i = 0; i < kStopSignals.size(); ++i) {
    ::sigaction(kStopSignals[i], &held, &previous[i]);
  }
  const fs::path marker = dir / (run_id + ".held");
  std::ofstream(marker) << ::getpid() << "\n";
  while (g_hold_signal == 0 && fs::exists(dir / "hold", ec)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  fs::remove(marker, ec);
  for (size_t i = 0; i < kStopSignals.size(); ++i) {
    ::sigaction(kStopSignals[i], &previous[i], nullptr);
  }
  if (g_hold_signal != 0) std::raise(g_hold_signal);
}

class FaultInjector : public train::Reporter {
 public:
  FaultInjector(std::string action, int64_t step, std::string run_id, std::string hold_dir)
      : action_(std::move(action)),
        step_(step),
        run_id_(std::move(run_id)),
        hold_dir_(std::move(hold_dir)) {}

  void step(const train::StepRecord& r) override {
    if (r.step != step_) return;
    std::fflush(stdout);
    if (action_ == "hold") hold(hold_dir_, run_id_);
    if (action_ == "kill") std::raise(SIGKILL);
    if (action_ == "term") std::raise(SIGTERM);  // handled: the run ends as preempted
    if (action_ == "hang") std::raise(SIGSTOP);
    // What a write to a socket a dead peer closed delivers (gloo, the launcher's pipe).
    if (action_ == "pipe") std::raise(SIGPIPE);
    if (action_ == "crash") {
      rlimit no_core{0, 0};  // a test crash must not litter the working directory with a core file
      ::setrlimit(RLIMIT_CORE, &no_core);
      std::abort();
    }
  }

 private:
  std::string action_;
  int64_t step_;
  std::string run_id_;
  std::string hold_dir_;  // action hold: BATCHLAB_TEST_HOLD_DIR
};

}  // namespace

std::shared_ptr<train::Reporter> make_fault_injector(const std::string& run_id, int64_t rank) {
  const char* value = std::getenv("BATCHLAB_TEST_FAULT");
  if (value == nullptr || *value == '\0') return nullptr;
  static const std::regex pattern(
      "^(kill|crash|term|hang|hold|pipe)@([0-9]+)(:([0-9a-f]+))?(,rank=([0-9]+))?$");
  std::cmatch m;
  if (!std::regex_match(value, m, pattern)) {
    throw UsageError(fmt::format(
        "BATCHLAB_TEST_FAULT = {}: expected ACTION@STEP[:RUN_ID_PREFIX][,rank=R] with ACTION "
        "kill, crash, term, hang or hold (a test hook; unset it for real runs)",
        value));
  }
  if (m[4].matched && run_id.rfind(m[4].str(), 0) != 0) return nullptr;
  if ((m[6].matched ? std::stoll(m[6].str()) : 0) != rank) return nullptr;
  const char* hold_dir = std::getenv("BATCHLAB_TEST_HOLD_DIR");
  if (m[1].str() == "hold" && (hold_dir == nullptr || *hold_dir == '\0')) {
    throw UsageError(fmt::format(
        "BATCHLAB_TEST_FAULT = {}: hold needs BATCHLAB_TEST_HOLD_DIR, the folder whose file "
        "`hold` holds the run (a test hook; unset it for real runs)",
        value));
  }
  return std::make_shared<FaultInjector>(m[1].str(), std::stoll(m[2].str()), run_id,
                                         hold_dir != nullptr ? hold_dir : "");
}

}  // namespace batchlab::cli
