#include "cli/study_printer.h"

#include <fmt/format.h>

#include <cstdio>

namespace batchlab::cli {

namespace {

template <class... T>
void print_line(fmt::format_string<T...> format, T&&... args) {
  fmt::print(format, std::forward<T>(args)...);
  std::fflush(stdout);
}

}  // namespace

std::string lr_text(double lr) { return fmt::format("{:.6g}", lr); }

std::string StudyPrinter::tag(size_t c) const {
  return fmt::format("[cell {:>{}}/{}]", c + 1, std::to_string(plan_.cells.size()).size(),
                     plan_.cells.size());
}

void StudyPrinter::cell_opened(const results::StudyCellRow& row, size_t c) {
  print_line("{} open      {}  centre {}  cap {} steps, warmup {}\n", tag(c),
             plan_.plan->describe(plan_.job(c)), lr_text(row.lr_center), row.cap_steps,
             row.warmup_steps);
}

void StudyPrinter::trial_started(const sweeps::Job& job, const results::StudyTrialRow& row,
                                 size_t c) {
  print_line("{} start     {}  lr {} (k={:+d})\n", tag(c), job.run_id, lr_text(row.base_lr),
             row.lr_index);
}

void StudyPrinter::trial_ended(const sweeps::Job& job, const results::StudyTrialRow& row,
                               size_t c) {
  std::string detail;
  if (row.steps_to_target) detail = fmt::format("  {:.1f} steps to target", *row.steps_to_target);
  if (row.reason && row.outcome != results::trial_outcome::kReached) detail = "  " + *row.reason;
  print_line("{} {:<9} {}  lr {}{}\n", tag(c), row.outcome, job.run_id, lr_text(row.base_lr),
             detail);
}

void StudyPrinter::trial_interrupted(const sweeps::Job& job, const sweeps::study::TrialEnd& end,
                                     size_t c) {
  print_line("{} {:<9} {}  {}\n", tag(c), end.status, job.run_id, end.error);
}

void StudyPrinter::stop_requested(const sweeps::Job& job, const StopRequest& stop) {
  print_line("  request   {}  {}\n", job.run_id, stop.at_step(stop.step));
}

void StudyPrinter::cell_completed(const results::StudyCellRow& row, size_t c) {
  if (row.status == results::cell_status::kReached) {
    print_line("{} {:<9} best lr {}: {:.1f} steps, {:.0f} samples\n", tag(c), row.status,
               lr_text(row.best_lr.value_or(0)), row.steps_to_target.value_or(0),
               row.samples_to_target.value_or(0));
  } else {
    print_line("{} {:<9} no trial reached the target within {} steps\n", tag(c), row.status,
               row.cap_steps);
  }
}

void StudyPrinter::ladder_stopped(const std::string& group, const std::string& why) {
  print_line("[ladder]  {}: stopped: {}\n", group.empty() ? std::string("every cell") : group, why);
}

void StudyPrinter::finished(const sweeps::JobEvent& e) {
  if (!e.retry) return;
  if (in_slurm_) {
    print_line("  requeue   {}  {} ended {}: {}; submitted again (attempt {})\n", e.job->run_id,
               e.exit, e.status, e.error, e.attempt + 1);
  } else {
    print_line("  retrying  {}  {}: {}\n", e.job->run_id, e.exit, e.error);
  }
}

void StudyPrinter::stopping(int level) {
  if (in_slurm_) {
    print_line(
        "stopping: the coordinator ends and leaves its trials running in Slurm; submit the study "
        "again to adopt them\n");
  } else if (level == 1) {
    print_line(
        "stopping: asking the running trials to stop (they record preempted); press Ctrl-C "
        "again to kill them\n");
  } else {
    print_line("killing the running trials\n");
  }
}

}  // namespace batchlab::cli
