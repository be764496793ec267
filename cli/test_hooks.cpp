#include "cli/test_hooks.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <csignal>
#include <cstdlib>
#include <regex>

#include "cli/args.h"

namespace batchlab::cli {

namespace {

class FaultInjector : public train::Reporter {
 public:
  FaultInjector(std::string action, int64_t step) : action_(std::move(action)), step_(step) {}

  void step(const train::StepRecord& r) override {
    if (r.step != step_) return;
    std::fflush(stdout);
    if (action_ == "kill") std::raise(SIGKILL);
    if (action_ == "term") std::raise(SIGTERM);  // handled: the run ends as preempted
    if (action_ == "hang") std::raise(SIGSTOP);
    if (action_ == "crash") {
      rlimit no_core{0, 0};  // a test crash must not litter the working directory with a core file
      ::setrlimit(RLIMIT_CORE, &no_core);
      std::abort();
    }
  }

 private:
  std::string action_;
  int64_t step_;
};

}  // namespace

std::shared_ptr<train::Reporter> make_fault_injector(const std::string& run_id, int64_t rank) {
  const char* value = std::getenv("BATCHLAB_TEST_FAULT");
  if (value == nullptr || *value == '\0') return nullptr;
  static const std::regex pattern(
      "^(kill|crash|term|hang)@([0-9]+)(:([0-9a-f]+))?(,rank=([0-9]+))?$");
  std::cmatch m;
  if (!std::regex_match(value, m, pattern)) {
    throw UsageError(fmt::format(
        "BATCHLAB_TEST_FAULT = {}: expected ACTION@STEP[:RUN_ID_PREFIX][,rank=R] with ACTION "
        "kill, crash, term or hang (a test hook; unset it for real runs)",
        value));
  }
  if (m[4].matched && run_id.rfind(m[4].str(), 0) != 0) return nullptr;
  if ((m[6].matched ? std::stoll(m[6].str()) : 0) != rank) return nullptr;
  return std::make_shared<FaultInjector>(m[1].str(), std::stoll(m[2].str()));
}

}  // namespace batchlab::cli
