// The trainer's evaluations: what is measured when, targets and milestones, and stop requests read
// after each evaluation. Everything here runs outside the training clock.
#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>

#include "core/train/evaluator.h"
#include "core/train/rank_sync.h"
#include "core/train/targets.h"
#include "core/train/trainer.h"

namespace batchlab::train {

// The validation split first: it decides whether this evaluation ends the run (a target on it),
// and so whether the training sample and the test split are measured under full_eval = "final".
bool Trainer::evaluate_and_report(int64_t updates_done, bool last) {
  const auto t0 = std::chrono::steady_clock::now();
  // The weights to evaluate and to keep as best.pt (Schedule-Free's average; the parameters
  // themselves for every other optimizer) until the end of this function.
  const auto weights = optimizer_->eval_weights();
  if (dp_) average_buffers(task_.model(), *dp_);
  EvalRecord r;
  r.step = updates_done;
  r.epoch = epochs_after(updates_done);
  r.samples = samples_after(updates_done);
  r.wall_s = state_.train_s;
  if (const int64_t n = task_.size(Split::val); n > 0) {
    measure(Split::val, torch::arange(n, torch::kInt64), r.val_loss, r.val_acc);
  }
  if (train_.full_eval == "always") measure_train_and_test(r);
  const auto stop = poll_stop_request(updates_done);
  const bool targets_end = train_.stop_at_target && all_targets_reached_with(r);
  const bool ends = last || stop || targets_end;
  if (ends && !r.test_loss) measure_train_and_test(r);  // the run's last evaluation is full
  r.eval_s = seconds_since(t0);
  reporter_.eval(r);
  record_milestones(r);
  keep_best_weights(r);
  state_.eval_s += r.eval_s;
  state_.last_eval_step = updates_done;
  if (stop) {
    outcome_.status = RunStatus::stopped;
    outcome_.error = stop->at_step(updates_done);
    outcome_.stop_reason = stop->reason;
  }
  return stop.has_value() || targets_end;
}

void Trainer::measure(Split split, const torch::Tensor& indices, std::optional<double>& loss,
                      std::optional<double>& acc) {
  const auto m =
      evaluate_sharded(task_, split, indices, options_.eval_chunk, precision_, dp_.get());
  loss = m.loss;
  acc = m.accuracy;
}

// The fixed training sample and the test split, measured alike (eval mode), so the gap compares
// like with like.
void Trainer::measure_train_and_test(EvalRecord& r) {
  measure(Split::train, train_sample_, r.train_loss, r.train_acc);
  measure(Split::test, torch::arange(task_.size(Split::test), torch::kInt64), r.test_loss,
          r.test_acc);
  r.gap_loss = *r.test_loss - *r.train_loss;
  r.gap_acc = *r.train_acc - *r.test_acc;
}

bool Trainer::all_targets_reached_with(const EvalRecord& r) const {
  if (train_.targets.empty()) return false;
  for (size_t i = 0; i < train_.targets.size(); ++i) {
    if (!state_.targets_reached[i] && !target_met(train_.targets[i], r)) return false;
  }
  return true;
}

// First time each target is reached: a milestone row, on the training clock and on the total.
void Trainer::record_milestones(const EvalRecord& r) {
  for (size_t i = 0; i < train_.targets.size(); ++i) {
    const auto& target = train_.targets[i];
    if (state_.targets_reached[i] || !target_met(target, r)) continue;
    state_.targets_reached[i] = true;
    MilestoneRecord m;
    m.metric = target.metric;
    m.target = target.value;
    m.step = r.step;
    m.epoch = r.epoch;
    m.samples = r.samples;
    m.wall_s = state_.train_s;
    m.total_s = state_.train_s + state_.eval_s + state_.checkpoint_s;  // survives restarts
    reporter_.milestone(m);
  }
}

// best.pt follows the selection metric (best_weights.h). Written off the training clock, like a
// checkpoint, by rank 0 (after evaluation averaged the buffers, every rank holds the same weights).
void Trainer::keep_best_weights(const EvalRecord& r) {
  if (!best_rule_) return;
  const auto better = best_rule_->improvement(r, best_value_);
  if (!better) return;
  best_value_ = better;
  if (rank_ != 0) return;
  const auto t0 = std::chrono::steady_clock::now();
  options_.checkpoints->save_best(options_.run_id, {r.step, best_rule_->metric(), *better},
                                  task_.model());
  state_.checkpoint_s += seconds_since(t0);
}

// Rank 0 reads the file and the ranks agree on its answer: a file that appears between two ranks'
// reads must not split them.
std::optional<StopRequest> Trainer::poll_stop_request(int64_t updates_done) {
  if (options_.stop_file.empty()) return std::nullopt;
  std::optional<StopRequest> request;
  if (rank_ == 0) {
    std::string problem;
    request = read_stop_request(options_.stop_file, &problem);
    if (!problem.empty() && problem != last_stop_problem_) reporter_.note(problem);
    last_stop_problem_ = problem;
    if (request && updates_done < request->step) request.reset();  // not yet
  }
  if (dp_) {
    const auto any = dp_->all_reduce_sum(
        torch::tensor(std::vector<double>{request ? 1.0 : 0.0}, torch::kFloat64));
    if (any.item<double>() > 0 && !request) request = StopRequest{"stop request", updates_done};
  }
  return request;
}

}  // namespace batchlab::train
