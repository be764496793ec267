#include "core/train/console_reporter.h"

#include <fmt/format.h>

#include <cmath>

namespace batchlab::train {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<long long>(std::llround(seconds));
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

ConsoleReporter::ConsoleReporter(std::FILE* out, double interval_s)
    : out_(out), interval_s_(interval_s) {}

void ConsoleReporter::run_started(const RunGeometry& g) {
  geometry_ = g;
  fmt::print(out_,
             "batch {} = world {} x micro {} x accumulation {} | {} examples, {} steps/epoch, {} "
             "dropped/epoch | peak lr {:.4g}, warmup {} steps | {} | {} threads\n",
             g.batch.global, g.batch.world, g.batch.micro, g.batch.accum, g.train_size,
             g.batch.steps_per_epoch, g.batch.dropped_per_epoch, g.peak_lr, g.warmup_steps,
             g.budgeted ? std::string("budgeted") : fmt::format("{} steps", g.total_steps),
             g.threads);
  std::fflush(out_);
}

void ConsoleReporter::step(const StepRecord& r) {
  const auto now = std::chrono::steady_clock::now();
  if (printed_any_ && std::chrono::duration<double>(now - last_line_).count() < interval_s_) return;
  printed_any_ = true;
  last_line_ = now;
  std::string eta = "?";
  if (geometry_.total_steps > 0 && r.step + 1 > 0) {
    const double per_step = r.wall_s / static_cast<double>(r.step + 1);
    eta = format_duration(per_step * static_cast<double>(geometry_.total_steps - r.step - 1));
  }
  fmt::print(out_,
             "step {:>6}/{} epoch {:6.2f} loss {:.4f} lr {:.4g} |g| {:.3g} {:.0f} samples/s "
             "train {} ETA {}\n",
             r.step + 1, geometry_.total_steps > 0 ? fmt::format("{}", geometry_.total_steps) : "-",
             r.epoch, r.train_loss, r.lr, r.grad_norm, r.samples_per_s, format_duration(r.wall_s),
             eta);
  std::fflush(out_);
}

void ConsoleReporter::eval(const EvalRecord& r) {
  // Only what was measured: " | name loss L acc A" per pair present (gaps signed).
  std::string parts;
  auto add = [&](const char* name, const std::optional<double>& loss,
                 const std::optional<double>& acc, bool is_gap) {
    if (!loss && !acc) return;
    parts += fmt::format(" | {}", name);
    auto num = [&](double x) {
      return is_gap ? fmt::format("{:+.4f}", x) : fmt::format("{:.4f}", x);
    };
    if (loss) parts += " loss " + num(*loss);
    if (acc) parts += " acc " + num(*acc);
  };
  add("train", r.train_loss, r.train_acc, false);
  add("val", r.val_loss, r.val_acc, false);
  add("test", r.test_loss, r.test_acc, false);
  add("gap", r.gap_loss, r.gap_acc, true);
  fmt::print(out_, "eval step {} epoch {:.2f}:{} | eval {:.1f}s\n", r.step, r.epoch, parts,
             r.eval_s);
  std::fflush(out_);
}

void ConsoleReporter::milestone(const MilestoneRecord& r) {
  fmt::print(out_, "target {} {} reached at step {} (epoch {:.2f}) after {} of training\n",
             r.metric, r.target, r.step, r.epoch, format_duration(r.wall_s));
  std::fflush(out_);
}

void ConsoleReporter::note(const std::string& text) {
  fmt::print(out_, "note: {}\n", text);
  std::fflush(out_);
}

void ConsoleReporter::run_finished(const RunOutcome& o) {
  fmt::print(out_, "run {} after {} steps, {} of training{}{}\n", to_string(o.status), o.last_step,
             format_duration(o.train_s), o.error.empty() ? "" : ": ", o.error);
  std::fflush(out_);
}

}  // namespace batchlab::train
