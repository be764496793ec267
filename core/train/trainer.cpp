#include "core/train/trainer.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>

#include "core/errors.h"
#include "core/train/evaluator.h"
#include "core/train/rank_sync.h"

namespace batchlab::train {

namespace {
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

bool target_met(const config::Target& target, const EvalRecord& r) {
  if (target.metric == "test_acc") return r.test_acc >= target.value;
  if (target.metric == "train_acc") return r.train_acc >= target.value;
  if (target.metric == "test_loss") return r.test_loss <= target.value;
  if (target.metric == "train_loss") return r.train_loss <= target.value;
  return false;  // unknown metrics are rejected by config validation
}
}  // namespace

Trainer::Trainer(TrainerOptions options, Task& task, Reporter& reporter)
    : options_(std::move(options)), task_(task), reporter_(reporter), dp_(options_.data_parallel) {
  if (dp_) {
    options_.world_size = dp_->world_size();
    options_.rank = dp_->rank();
  }
  device_ = c10::Device(options_.train.device);
  precision_ = mixed_precision(options_.train.precision, device_.type());
  timer_ = std::make_unique<StepTimer>(device_);
  if (options_.checkpoints) options_.checkpoints->set_device(device_);

  params_ = task_.named_parameters();
  const int64_t train_size = task_.size(Split::train);
  batch_ = make_batch_geometry(options_.batch.global, options_.batch.micro, options_.world_size,
                               train_size);

  const double peak = optim::scaled_peak_lr(options_.optim, batch_.global);
  schedule_ = std::make_unique<optim::LrSchedule>(options_.schedule, peak, batch_.steps_per_epoch);
  optimizer_ = optim::make_optimizer(options_.optim, params_, peak);
  if (dp_) {
    std::vector<torch::Tensor> tensors;
    for (const auto& p : params_) tensors.push_back(p.tensor);
    sync_ = dp_->make_gradient_sync(tensors, options_.train.bucket_mb);
  }

  train_sample_ = fixed_train_sample(options_.data_seed, train_size, options_.eval_train_samples);
  eval_every_steps_ = std::max<int64_t>(
      1, std::llround(options_.train.eval_every * static_cast<double>(batch_.steps_per_epoch)));
  state_.targets_reached.assign(options_.train.targets.size(), false);
  // Layer rows are only ever recorded by rank 0: the other ranks skip the measurement.
  if (options_.train.layer_stats_every > 0 && options_.rank == 0) {
    layer_stats_ = std::make_unique<LayerStatsCollector>(params_);
  }
  // One process: micro-batch gradients against the accumulated one. Data parallel: each rank's
  // accumulated gradient against the all-reduced one, which needs no accumulation.
  if (options_.train.noise_scale && (batch_.accum >= 2 || batch_.world > 1)) {
    noise_ = std::make_unique<NoiseScaleEstimator>(options_.noise_ema);
  }

  geometry_.global_batch = batch_.global;
  geometry_.micro_batch = batch_.micro;
  geometry_.accum_steps = batch_.accum;
  geometry_.world_size = batch_.world;
  geometry_.bn_group = options_.batch.bn_group;
  geometry_.train_size = train_size;
  geometry_.steps_per_epoch = batch_.steps_per_epoch;
  geometry_.total_steps = schedule_->total_steps();
  geometry_.samples_dropped_per_epoch = batch_.dropped_per_epoch;
  geometry_.warmup_steps = schedule_->warmup_steps();
  geometry_.peak_lr = peak;
  geometry_.threads = options_.threads;
  geometry_.device = options_.train.device;
}

double Trainer::total_elapsed_s() const { return seconds_since(started_); }

// Ranks' clocks differ a little; a schedule or budget read from each would split the ranks, so
// data-parallel runs use rank 0's clock as agreed at the previous step (one step behind).
double Trainer::schedule_clock() const { return dp_ ? agreed_train_s_ : state_.train_s; }

bool Trainer::budget_spent() const {
  return schedule_->budgeted() && options_.schedule.budget_s &&
         schedule_clock() >= *options_.schedule.budget_s;
}

bool Trainer::stop_requested() const {
  if (dp_) return agreed_stop_;
  return options_.stop_requested && options_.stop_requested->load();
}

Trainer::StepAgreement Trainer::agree_on_step(const AccumulatedStep& acc,
                                              const torch::Tensor& grad_norm,
                                              const torch::Tensor& local_sq) {
  // One host read for the step's metrics (on a GPU, the step's only synchronization before the
  // update).
  std::vector<torch::Tensor> parts = {acc.mean_loss.to(torch::kFloat64).reshape({1}),
                                      grad_norm.to(acc.mean_loss.device()).reshape({1})};
  if (local_sq.defined()) parts.push_back(local_sq.to(acc.mean_loss.device()).reshape({1}));
  const auto host = torch::cat(parts).to(torch::kCPU);
  const auto* v = host.data_ptr<double>();
  StepAgreement a;
  a.loss = v[0];
  a.grad_norm = v[1];  // of the averaged gradient: bit-identical on every rank
  if (!dp_) return a;

  const bool is_root = options_.rank == 0;
  const bool stop = options_.stop_requested && options_.stop_requested->load();
  const bool checkpoint_due = is_root && options_.checkpoint_every_s > 0 &&
                              seconds_since(last_checkpoint_) >= options_.checkpoint_every_s;
  auto sums = dp_->all_reduce_sum(
      torch::tensor(std::vector<double>{a.loss, local_sq.defined() ? v[2] : 0.0, stop ? 1.0 : 0.0,
                                        is_root ? state_.train_s : 0.0, checkpoint_due ? 1.0 : 0.0},
                    torch::kFloat64));
  const auto* s = sums.data_ptr<double>();
  const auto world = static_cast<double>(batch_.world);
  // The mean of the ranks' means: every micro-batch weighs the same, as in accumulation (and as
  // the averaged gradient does).
  a.loss = s[0] / world;
  a.local_sq_norm = s[1] / world;
  agreed_stop_ = s[2] > 0;
  agreed_train_s_ = s[3];
  agreed_checkpoint_ = s[4] > 0;
  return a;
}

bool Trainer::step_once(int64_t step) {
  const int64_t epoch = step / batch_.steps_per_epoch;
  const int64_t in_epoch = step % batch_.steps_per_epoch;
  if (epoch != cached_epoch_) {
    permutation_ = epoch_permutation(options_.data_seed, epoch, geometry_.train_size);
    cached_epoch_ = epoch;
  }

  timer_->start();
  const double lr = schedule_->current(step, schedule_clock());
  optimizer_->set_lr(lr);
  task_.set_progress(schedule_->progress(step, schedule_clock()));
  optimizer_->optimizer().zero_grad();

  std::vector<torch::Tensor> micro;
  micro.reserve(static_cast<size_t>(batch_.accum));
  for (int64_t j = 0; j < batch_.accum; ++j) {
    micro.push_back(micro_batch_indices(permutation_, batch_, in_epoch, options_.rank, j));
  }
  const uint64_t augment_seed =
      mix_seed(static_cast<uint64_t>(options_.data_seed), static_cast<uint64_t>(step) + 1);
  const bool micro_noise = noise_ && !dp_;
  AccumulationHooks hooks;
  hooks.precision = precision_;
  if (sync_) hooks.before_last_backward = [&] { sync_->arm(noise_ != nullptr); };
  std::vector<double> micro_sq;
  const auto acc =
      accumulate_gradients(task_, micro, augment_seed, micro_noise ? &params_ : nullptr,
                           micro_noise ? &micro_sq : nullptr, &hooks);
  torch::Tensor local_sq;
  if (sync_) local_sq = sync_->finish();
  const auto agreed = agree_on_step(acc, global_grad_norm(params_), local_sq);
  const double loss = agreed.loss;
  const double grad_norm = agreed.grad_norm;

  // Divergence is checked before the update, so the weights of a diverged run stay the last finite
  // ones. Loss and gradient norm are the same on every rank: all ranks stop together.
  std::string why;
  if (!std::isfinite(loss) || !std::isfinite(grad_norm)) {
    why = fmt::format(
        "non-finite {} at step {} (loss {}, grad norm {}); last finite loss {:.6g}; "
        "first non-finite gradient in {}",
        std::isfinite(loss) ? "gradient" : "loss", step, loss, grad_norm, last_loss_,
        first_nonfinite_parameter());
  } else if (state_.have_first_loss && options_.train.divergence > 0 &&
             loss > options_.train.divergence * state_.first_loss) {
    why =
        fmt::format("loss {:.4g} at step {} exceeds train.divergence = {} x the first loss {:.4g}",
                    loss, step, options_.train.divergence, state_.first_loss);
  }
  if (!state_.have_first_loss && std::isfinite(loss)) {
    state_.first_loss = loss;
    state_.have_first_loss = true;
  }
  const bool log_layers =
      why.empty() && layer_stats_ && step % options_.train.layer_stats_every == 0;
  if (log_layers) layer_stats_->before_update();
  if (why.empty()) optimizer_->step();
  const double step_s = timer_->stop();
  state_.train_s += step_s;
  if (std::isfinite(loss)) last_loss_ = loss;

  // Per-layer rows and noise are measurements, not training: kept off the training clock.
  if (log_layers)
    reporter_.layer_stats(layer_stats_->after_update(step, optimizer_->last_trust_ratios()));
  if (noise_ && why.empty()) {
    const double big = grad_norm * grad_norm;
    // Data parallel: b_small = one rank's share of the batch, b_big = the whole global batch.
    const auto e = dp_ ? noise_->update({agreed.local_sq_norm}, batch_.micro * batch_.accum, big,
                                        batch_.global)
                       : noise_->update(micro_sq, batch_.micro, big, batch_.micro * batch_.accum);
    if (step % options_.train.log_every == 0) {
      reporter_.noise_scale({step, e.b_small, e.b_big, e.g2, e.trace_sigma, e.b_simple});
    }
  }

  if (step % options_.train.log_every == 0 || !why.empty()) {
    StepRecord r;
    r.step = step;
    r.epoch = static_cast<double>(step + 1) / static_cast<double>(batch_.steps_per_epoch);
    r.samples = (step + 1) * batch_.global;
    r.wall_s = state_.train_s;
    r.lr = lr;
    r.train_loss = loss;
    r.grad_norm = grad_norm;
    r.samples_per_s = step_s > 0 ? static_cast<double>(batch_.global) / step_s : 0.0;
    reporter_.step(r);
  }
  if (!why.empty()) {
    outcome_.status = RunStatus::diverged;
    outcome_.error = why;
    return false;
  }
  return true;
}

void Trainer::evaluate_and_report(int64_t updates_done) {
  const auto t0 = Clock::now();
  if (dp_) average_buffers(task_.model(), *dp_);
  const auto train_m = evaluate_sharded(task_, Split::train, train_sample_, options_.eval_chunk,
                                        precision_, dp_.get());
  const auto test_m =
      evaluate_sharded(task_, Split::test, torch::arange(task_.size(Split::test), torch::kInt64),
                       options_.eval_chunk, precision_, dp_.get());

  EvalRecord r;
  r.step = updates_done;
  r.epoch = static_cast<double>(updates_done) / static_cast<double>(batch_.steps_per_epoch);
  r.samples = updates_done * batch_.global;
  r.wall_s = state_.train_s;
  r.train_loss = train_m.loss;
  r.train_acc = train_m.accuracy;
  r.test_loss = test_m.loss;
  r.test_acc = test_m.accuracy;
  r.gap_loss = r.test_loss - r.train_loss;
  r.gap_acc = r.train_acc - r.test_acc;
  r.eval_s = seconds_since(t0);
  reporter_.eval(r);

  for (size_t i = 0; i < options_.train.targets.size(); ++i) {
    const auto& target = options_.train.targets[i];
    if (state_.targets_reached[i] || !target_met(target, r)) continue;
    state_.targets_reached[i] = true;
    MilestoneRecord m;
    m.metric = target.metric;
    m.target = target.value;
    m.step = updates_done;
    m.epoch = r.epoch;
    m.samples = r.samples;
    m.wall_s = state_.train_s;
    m.total_s = state_.train_s + state_.eval_s + state_.checkpoint_s;  // survives restarts
    reporter_.milestone(m);
  }
  if (options_.train.stop_at_target && !state_.targets_reached.empty()) {
    stop_for_target_ = std::all_of(state_.targets_reached.begin(), state_.targets_reached.end(),
                                   [](bool b) { return b; });
  }
  state_.eval_s += r.eval_s;
  state_.last_eval_step = updates_done;
}

std::string Trainer::first_nonfinite_parameter() const {
  for (const auto& p : params_) {
    const auto& g = p.tensor.grad();
    if (g.defined() && !torch::isfinite(g).all().item<bool>()) return p.name;
  }
  return "no parameter (the loss itself)";
}

void Trainer::save_checkpoint(int64_t updates_done) {
  if (!options_.checkpoints) return;
  const auto t0 = Clock::now();
  if (dp_) average_buffers(task_.model(), *dp_);
  state_.step = updates_done;
  if (options_.rank == 0) {
    // Rows up to here must be stored before the checkpoint that lets a resume skip them exists.
    reporter_.flush();
    if (noise_) {
      const auto ns = noise_->state();
      state_.noise_g2 = ns.g2;
      state_.noise_trace = ns.trace;
      state_.noise_updates = ns.updates;
    }
    options_.checkpoints->save({options_.run_id, state_}, task_.model(), optimizer_->optimizer());
  } else {
    options_.checkpoints->save_rank_state(options_.run_id, updates_done, options_.rank);
  }
  state_.checkpoint_s += seconds_since(t0);
  last_checkpoint_ = Clock::now();
}

int64_t Trainer::resume() {
  if (!options_.checkpoints) return 0;
  std::vector<std::string> warnings;
  auto loaded = options_.checkpoints->load_latest(options_.run_id, task_.model(),
                                                  optimizer_->optimizer(), warnings);
  if (loaded && options_.rank > 0 &&
      !options_.checkpoints->load_rank_state(options_.run_id, loaded->state.step, options_.rank,
                                             warnings)) {
    // Not rank 0's stream (just loaded with the checkpoint): one of this rank's own.
    torch::manual_seed(mix_seed(
        mix_seed(static_cast<uint64_t>(options_.train.seed), static_cast<uint64_t>(options_.rank)),
        static_cast<uint64_t>(loaded->state.step)));
  }
  for (const auto& w : warnings) reporter_.note(w);
  if (!loaded) return 0;
  state_ = loaded->state;
  agreed_train_s_ = state_.train_s;
  state_.targets_reached.resize(options_.train.targets.size(), false);
  if (noise_) noise_->restore({state_.noise_g2, state_.noise_trace, state_.noise_updates});
  reporter_.note(fmt::format("resumed from step {} ({} of training)", state_.step, state_.train_s));
  return state_.step;
}

// Every rank starts from rank 0's parameters and buffers, and from the same step: a rank that
// resumed from another checkpoint is an error, not a silently different run.
void Trainer::synchronize_start() {
  if (!dp_) return;
  broadcast_model(task_.model(), *dp_);
  check_same_step(*dp_, state_.step, options_.checkpoints ? options_.checkpoints->dir() : "");
}

RunOutcome Trainer::run() {
  started_ = Clock::now();
  last_checkpoint_ = started_;
  synchronize_start();
  reporter_.run_started(geometry_);
  if (options_.train.noise_scale && !noise_) {
    reporter_.note(
        fmt::format("gradient noise scale not measured: it needs accumulation >= 2 "
                    "micro-batches per step, this run has {}",
                    batch_.accum));
  }
  task_.model().train();

  const int64_t total = schedule_->total_steps();  // 0 under a budget
  int64_t step = state_.step;
  // Tasks with loader threads start building the batches step_once will ask for.
  task_.plan_batches(
      {options_.data_seed, batch_, options_.rank, geometry_.train_size, step, total});
  int64_t last_eval = state_.last_eval_step;
  const int64_t every = options_.train.checkpoint_every;
  while (schedule_->budgeted() ? !budget_spent() : step < total) {
    if (stop_requested()) {
      save_checkpoint(step);
      outcome_.status = RunStatus::preempted;
      outcome_.error = fmt::format("stopped by a signal after {} steps{}", step,
                                   options_.checkpoints ? "; checkpoint written" : "");
      break;
    }
    if (!step_once(step)) break;
    ++step;
    if (step % eval_every_steps_ == 0) {
      evaluate_and_report(step);
      last_eval = step;
      if (stop_for_target_) break;
    }
    const bool by_steps = every > 0 && step % every == 0;
    const bool by_time = dp_ ? agreed_checkpoint_
                             : options_.checkpoint_every_s > 0 &&
                                   seconds_since(last_checkpoint_) >= options_.checkpoint_every_s;
    if (by_steps || by_time) save_checkpoint(step);
  }
  // A final evaluation unless the last step was just evaluated; a diverged or interrupted run is
  // not evaluated (an interrupted one resumes and evaluates on its own schedule).
  if (outcome_.status == RunStatus::done && last_eval != step && step > 0) {
    evaluate_and_report(step);
  }
  if (outcome_.status == RunStatus::done && (every > 0 || options_.checkpoint_every_s > 0)) {
    save_checkpoint(step);  // the final weights, and a finished run that resumes does nothing
  }
  outcome_.last_step = step;
  outcome_.train_s = state_.train_s;
  reporter_.run_finished(outcome_);
  reporter_.flush();
  return outcome_;
}

}  // namespace batchlab::train
