#include "results/rows.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace batchlab::results {

bool is_known_run_status(std::string_view status) {
  static constexpr std::array<std::string_view, 8> kAll = {
      run_status::kPlanned,  run_status::kRunning,   run_status::kDone, run_status::kFailed,
      run_status::kDiverged, run_status::kPreempted, run_status::kOom,  run_status::kStopped};
  for (auto known : kAll) {
    if (status == known) return true;
  }
  return false;
}

bool is_final_run_status(std::string_view status) {
  return is_known_run_status(status) && status != run_status::kPlanned &&
         status != run_status::kRunning;
}

bool is_known_cell_status(std::string_view status) {
  return status == cell_status::kSearching || status == cell_status::kReached ||
         status == cell_status::kCensored;
}

bool is_known_trial_outcome(std::string_view outcome) {
  static constexpr std::array<std::string_view, 6> kAll = {
      trial_outcome::kRunning, trial_outcome::kReached,  trial_outcome::kCapped,
      trial_outcome::kPruned,  trial_outcome::kDiverged, trial_outcome::kStoppedByRace};
  for (auto known : kAll) {
    if (outcome == known) return true;
  }
  return false;
}

bool is_known_budget_status(std::string_view status) {
  return status == budget_status::kSearching || status == budget_status::kDone ||
         status == budget_status::kFailed;
}

bool is_known_budget_outcome(std::string_view outcome) {
  static constexpr std::array<std::string_view, 4> kAll = {
      budget_outcome::kRunning, budget_outcome::kHalted, budget_outcome::kFinished,
      budget_outcome::kDiverged};
  return std::find(kAll.begin(), kAll.end(), outcome) != kAll.end();
}

std::string utc_now() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  const std::time_t seconds = system_clock::to_time_t(now);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", utc.tm_year + 1900,
                     utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, ms);
}

std::optional<double> utc_seconds(const std::string& iso) {
  std::tm utc{};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0;
  double second = 0.0;
  char zone = 0;
  if (std::sscanf(iso.c_str(), "%4d-%2d-%2dT%2d:%2d:%lf%c", &year, &month, &day, &hour, &minute,
                  &second, &zone) != 7 ||
      zone != 'Z') {
    return std::nullopt;
  }
  utc.tm_year = year - 1900;
  utc.tm_mon = month - 1;
  utc.tm_mday = day;
  utc.tm_hour = hour;
  utc.tm_min = minute;
  return static_cast<double>(timegm(&utc)) + second;
}

void fill_gaps(EvalRow& row) {
  if (!row.gap_loss && row.train_loss && row.test_loss) {
    row.gap_loss = *row.test_loss - *row.train_loss;
  }
  if (!row.gap_acc && row.train_acc && row.test_acc) {
    row.gap_acc = *row.train_acc - *row.test_acc;
  }
}

}  // namespace batchlab::results
