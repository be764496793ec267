#include "core/train/trainer.h"

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>

#include "core/config/batch_rules.h"
#include "core/config/batch_schedule.h"
#include "core/config/experiment_config.h"
#include "core/optim/host_reads.h"
#include "core/train/device.h"
#include "core/train/rank_sync.h"

namespace batchlab::train {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

TrainerConfig::TrainerConfig(const config::ExperimentConfig& c)
    : TrainerConfig(c.data, c.batch, c.optim, c.schedule, c.train) {}

Trainer::Trainer(const TrainerConfig& config, TrainerOptions options, Task& task,
                 Reporter& reporter)
    : train_(config.train),
      data_seed_(config.data.seed),
      options_(std::move(options)),
      task_(task),
      reporter_(reporter),
      dp_(options_.data_parallel),
      rank_(dp_ ? dp_->rank() : 0) {
  const c10::Device device = options_.device;
  precision_ = mixed_precision(train_.precision, device.type());
  timer_ = std::make_unique<StepTimer>(device);
  configure_cudnn_benchmark(device, task_.fixed_input_shapes());
  if (options_.checkpoints) options_.checkpoints->set_device(device);

  params_ = task_.named_parameters();
  const int64_t train_size = task_.size(Split::train);
  const double peak = plan_batch_and_schedule(config, train_size);
  if (dp_) {
    std::vector<torch::Tensor> tensors;
    for (const auto& p : params_) tensors.push_back(p.tensor);
    sync_ = dp_->make_gradient_sync(tensors, train_.bucket_mb);
  }

  train_sample_ = fixed_train_sample(data_seed_, train_size, config.data.eval_train_samples);
  evals_ = phases_->scheduled() ? std::make_unique<EvalSchedule>(train_, *phases_)
                                : std::make_unique<EvalSchedule>(train_, batch_.steps_per_epoch);
  checkpoint_every_s_ = train_.checkpoint_minutes * 60.0;
  state_.targets_reached.assign(train_.targets.size(), false);
  // Selection reads validation metrics only: best weights need a validation split.
  if (checkpoints_on() && task_.size(Split::val) > 0) {
    best_rule_ = std::make_unique<BestWeightsRule>(train_.targets);
  }
  // Layer rows are only ever recorded by rank 0: the other ranks skip the measurement.
  if (train_.layer_stats_every > 0 && rank_ == 0) {
    layer_stats_ = std::make_unique<LayerStatsCollector>(params_);
  }
  // One process: micro-batch gradients against the accumulated one. Data parallel: each rank's
  // accumulated gradient against the all-reduced one, which needs no accumulation.
  bool every_phase_accumulates = true;
  for (const auto& phase : phases_->phases()) every_phase_accumulates &= phase.geometry.accum >= 2;
  if (train_.noise_scale && (every_phase_accumulates || batch_.world > 1)) {
    noise_ = std::make_unique<NoiseScaleEstimator>(options_.noise_ema);
  }

  geometry_.batch = batch_;
  geometry_.bn_group = config.batch.bn_group;
  geometry_.train_size = train_size;
  geometry_.total_steps = schedule_->total_steps();
  geometry_.budgeted = schedule_->budgeted();
  geometry_.chance_acc = task_.chance_accuracy();
  geometry_.warmup_steps = schedule_->warmup_steps();
  geometry_.peak_lr = peak;
  geometry_.threads = at::get_num_threads();  // as the caller set the pool
  geometry_.device = device.str();
}

// The batch phases (one for a fixed batch), the LR schedule (by examples seen under a batch
// schedule) and the optimizer at the first phase's batch; returns the peak LR at the final batch.
double Trainer::plan_batch_and_schedule(const TrainerConfig& config, int64_t train_size) {
  phases_ =
      std::make_unique<config::BatchPhases>(config::batch_points(config.batch), config.batch.micro,
                                            dp_ ? dp_->world_size() : 1, train_size);
  batch_ = phases_->final_geometry();
  const double peak = optim::scaled_peak_lr(config.optim, batch_.global);
  if (!phases_->scheduled()) {
    schedule_ = std::make_unique<optim::LrSchedule>(config.schedule, peak, batch_.steps_per_epoch);
    optimizer_ = optim::make_optimizer(config.optim, params_, peak);
    return peak;
  }
  schedule_ = std::make_unique<optim::LrSchedule>(config.schedule, config.optim, *phases_);
  // What validation could not check without the data's size (config/batch_schedule.h).
  std::vector<Diagnostic> problems;
  config::validate_batch_schedule_length(config.batch, schedule_->total_examples(), problems);
  if (!problems.empty()) throw ConfigError(std::move(problems));
  optim_ = config.optim;
  const int64_t first = phases_->phases().front().geometry.global;
  optimizer_ = optim::make_optimizer(config::optim_for_batch(optim_, first), params_,
                                     optim::scaled_peak_lr(optim_, first));
  applied_phase_ = 0;
  return peak;
}

// A batch schedule's batch rules (beta2, weight decay) at the phase of `step`, applied when the
// phase changes, and after a resume (the checkpoint's options are those it was saved with).
void Trainer::apply_batch_phase(int64_t step) {
  if (!phases_->scheduled()) return;
  const size_t k = phases_->phase_index(step);
  if (static_cast<int64_t>(k) == applied_phase_) return;
  optimizer_->reconfigure(config::optim_for_batch(optim_, phases_->phases()[k].geometry.global),
                          params_);
  applied_phase_ = static_cast<int64_t>(k);
}

double Trainer::epochs_after(int64_t updates) const {
  // A fixed batch counts epochs in its full batches; a batch schedule in examples seen, as its
  // schedule.epochs and train.eval_every are (config/batch_schedule.h).
  if (!phases_->scheduled()) {
    return static_cast<double>(updates) / static_cast<double>(batch_.steps_per_epoch);
  }
  return static_cast<double>(phases_->examples_before(updates)) /
         static_cast<double>(geometry_.train_size);
}

int64_t Trainer::samples_after(int64_t updates) const { return phases_->examples_before(updates); }

// Ranks' clocks differ a little; a schedule or budget read from each would split the ranks, so
// data-parallel runs use rank 0's clock as agreed at the previous step (one step behind).
double Trainer::schedule_clock(const StepAgreement& last) const {
  return dp_ ? last.train_s : state_.train_s;
}

bool Trainer::stop_requested(const StepAgreement& last) const {
  if (dp_) return last.stop;
  return options_.stop_requested && options_.stop_requested->load();
}

bool Trainer::checkpoint_due(int64_t updates_done, const StepAgreement& last) const {
  const int64_t every = train_.checkpoint_every;
  if (every > 0 && updates_done % every == 0) return true;
  if (dp_) return last.checkpoint_due;
  return checkpoint_every_s_ > 0 && seconds_since(last_checkpoint_) >= checkpoint_every_s_;
}

bool Trainer::layer_stats_due(int64_t step) const {
  return layer_stats_ && step % train_.layer_stats_every == 0;
}

// One update, phase by phase. Divergence is checked before the update, so the weights of a
// diverged run stay the last finite ones.
std::optional<Trainer::StepAgreement> Trainer::step_once(int64_t step, double clock) {
  timer_->start();
  const double lr = set_lr(step, clock);
  const Gradients grads = compute_gradients(step);
  const StepAgreement agreed = agree_on_step(grads);
  if (auto why = check_divergence(step, agreed)) return end_diverged(step, lr, agreed, *why);
  measure_before_update(step);
  optimizer_->step(grads.norm);
  const double step_s = stop_clock();
  measure_after_update(step, agreed, grads);
  record_step(step, lr, agreed, step_s, /*always=*/false);
  return agreed;
}

double Trainer::set_lr(int64_t step, double clock) {
  apply_batch_phase(step);
  const double lr = schedule_->current(step, clock);
  optimizer_->set_lr(lr);
  task_.set_progress(schedule_->progress(step, clock));
  return lr;
}

// Forward/backward over the step's micro-batches (their data loaded here), the gradient all-reduce
// when data parallel, and the global gradient norm (measured once: the optimizer clips by it).
Trainer::Gradients Trainer::compute_gradients(int64_t step) {
  const BatchGeometry& batch = phases_->geometry(step);
  const config::DataPosition at = phases_->position(step);
  if (at.epoch != cached_epoch_) {
    permutation_ = epoch_permutation(data_seed_, at.epoch, geometry_.train_size);
    cached_epoch_ = at.epoch;
  }
  std::vector<torch::Tensor> micro;  // int64 [micro] each: this rank's micro-batches
  micro.reserve(static_cast<size_t>(batch.accum));
  for (int64_t j = 0; j < batch.accum; ++j) {
    micro.push_back(micro_batch_at(permutation_, batch, at.offset, rank_, j));
  }
  const uint64_t augment_seed =
      mix_seed(static_cast<uint64_t>(data_seed_), static_cast<uint64_t>(step) + 1);
  // Noise scale, one process: each micro-batch's gradient norm. Data parallel: see sync_->arm.
  const bool micro_noise = noise_ && !dp_;
  AccumulationHooks hooks;
  hooks.precision = precision_;
  if (sync_) hooks.before_last_backward = [&] { sync_->arm(noise_ != nullptr); };
  if (micro_noise) {  // the per-micro-batch gradient copies and norms are not training
    hooks.measure_begin = [&] { timer_->pause(); };
    hooks.measure_end = [&] { timer_->resume(); };
  }

  optimizer_->zero_grad();
  Gradients g;
  g.accumulated = accumulate_gradients(task_, micro, augment_seed, micro_noise ? &params_ : nullptr,
                                       micro_noise ? &g.micro_sq : nullptr, &hooks);
  if (sync_) g.local_sq = sync_->finish();
  g.norm = optimizer_->grad_norm();
  return g;
}

Trainer::StepAgreement Trainer::agree_on_step(const Gradients& grads) {
  // One host read for the step's metrics (on a GPU, the step's only synchronization before the
  // update).
  const auto& loss = grads.accumulated.mean_loss;
  const auto norm = grads.norm.norm.defined() ? grads.norm.norm : torch::zeros({}, torch::kFloat64);
  std::vector<torch::Tensor> parts = {loss.to(torch::kFloat64).reshape({1}),
                                      norm.to(loss.device()).reshape({1})};
  if (grads.local_sq.defined()) parts.push_back(grads.local_sq.to(loss.device()).reshape({1}));
  const auto host = optim::read_to_host(torch::cat(parts));
  const auto* v = host.data_ptr<double>();
  StepAgreement a;
  a.loss = v[0];
  a.grad_norm = v[1];  // of the averaged gradient: bit-identical on every rank
  a.train_s = state_.train_s;
  if (!dp_) return a;

  const bool is_root = rank_ == 0;
  const bool stop = options_.stop_requested && options_.stop_requested->load();
  const bool checkpoint_due =
      is_root && checkpoint_every_s_ > 0 && seconds_since(last_checkpoint_) >= checkpoint_every_s_;
  auto sums = dp_->all_reduce_sum(torch::tensor(
      std::vector<double>{a.loss, grads.local_sq.defined() ? v[2] : 0.0, stop ? 1.0 : 0.0,
                          is_root ? state_.train_s : 0.0, checkpoint_due ? 1.0 : 0.0},
      torch::kFloat64));
  const auto* s = sums.data_ptr<double>();
  const auto world = static_cast<double>(batch_.world);
  // The mean of the ranks' means: every micro-batch weighs the same, as in accumulation (and as
  // the averaged gradient does).
  a.loss = s[0] / world;
  a.local_sq_norm = s[1] / world;
  a.stop = s[2] > 0;
  a.train_s = s[3];
  a.checkpoint_due = s[4] > 0;
  return a;
}

// Why the run diverged at this step, if it did; keeps the first and the last finite loss it
// compares with. Loss and gradient norm are the same on every rank: all ranks stop together.
std::optional<std::string> Trainer::check_divergence(int64_t step, const StepAgreement& agreed) {
  const double loss = agreed.loss;
  std::optional<std::string> why;
  if (!std::isfinite(loss) || !std::isfinite(agreed.grad_norm)) {
    why = fmt::format(
        "non-finite {} at step {} (loss {}, grad norm {}); last finite loss {:.6g}; "
        "first non-finite gradient in {}",
        std::isfinite(loss) ? "gradient" : "loss", step, loss, agreed.grad_norm, last_loss_,
        first_nonfinite_parameter());
  } else if (state_.have_first_loss && train_.divergence > 0 &&
             loss > train_.divergence * state_.first_loss) {
    why =
        fmt::format("loss {:.4g} at step {} exceeds train.divergence = {} x the first loss {:.4g}",
                    loss, step, train_.divergence, state_.first_loss);
  }
  if (!state_.have_first_loss && std::isfinite(loss)) {
    state_.first_loss = loss;
    state_.have_first_loss = true;
  }
  if (std::isfinite(loss)) last_loss_ = loss;
  return why;
}

// Measurements that need the weights before the update (the per-layer statistics' copy of every
// weight) run with the training clock paused: they are not training.
void Trainer::measure_before_update(int64_t step) {
  const bool layers = layer_stats_due(step);
  if (!layers && !options_.before_update_probe) return;
  timer_->pause();
  if (layers) layer_stats_->before_update();
  if (options_.before_update_probe) options_.before_update_probe(step);
  timer_->resume();
}

double Trainer::stop_clock() {
  const double step_s = timer_->stop();
  state_.train_s += step_s;
  return step_s;
}

// Per-layer rows and the noise scale, after the clock stopped.
void Trainer::measure_after_update(int64_t step, const StepAgreement& agreed,
                                   const Gradients& grads) {
  if (layer_stats_due(step)) {
    reporter_.layer_stats(layer_stats_->after_update(step, optimizer_->last_trust_ratios()));
  }
  if (!noise_) return;
  const double big = agreed.grad_norm * agreed.grad_norm;
  const BatchGeometry& batch = phases_->geometry(step);
  // Data parallel: b_small = one rank's share of the batch, b_big = the whole global batch.
  const auto e =
      dp_ ? noise_->update({agreed.local_sq_norm}, config::examples_per_device(batch), big,
                           batch.global)
          : noise_->update(grads.micro_sq, batch.micro, big, config::examples_per_device(batch));
  if (step % train_.log_every == 0) {
    reporter_.noise_scale({step, e.b_small, e.b_big, e.g2, e.trace_sigma, e.b_simple});
  }
}

void Trainer::record_step(int64_t step, double lr, const StepAgreement& agreed, double step_s,
                          bool always) {
  if (!always && step % train_.log_every != 0) return;
  StepRecord r;
  r.step = step;
  r.epoch = epochs_after(step + 1);
  r.samples = samples_after(step + 1);
  r.wall_s = state_.train_s;
  r.lr = lr;
  r.train_loss = agreed.loss;
  r.grad_norm = agreed.grad_norm;
  r.samples_per_s = step_s > 0 ? static_cast<double>(phases_->geometry(step).global) / step_s : 0.0;
  reporter_.step(r);
}

// The diverged step's row is always recorded: it is the evidence.
std::optional<Trainer::StepAgreement> Trainer::end_diverged(int64_t step, double lr,
                                                            const StepAgreement& agreed,
                                                            const std::string& why) {
  record_step(step, lr, agreed, stop_clock(), /*always=*/true);
  outcome_.status = RunStatus::diverged;
  outcome_.error = why;
  return std::nullopt;
}

std::string Trainer::first_nonfinite_parameter() const {
  for (const auto& p : params_) {
    const auto& g = p.tensor.grad();
    if (g.defined() && !torch::isfinite(g).all().item<bool>()) return p.name;
  }
  return "no parameter (the loss itself)";
}

bool Trainer::checkpoints_on() const {
  return options_.checkpoints && (train_.checkpoint_every > 0 || checkpoint_every_s_ > 0);
}

void Trainer::save_checkpoint(int64_t updates_done) {
  if (!options_.checkpoints) return;
  const auto t0 = Clock::now();
  // A checkpoint holds the weights a run reports (Schedule-Free's average; with the optimizer
  // state that restores the training weights exactly on resume).
  const auto weights = optimizer_->eval_weights();
  if (dp_) average_buffers(task_.model(), *dp_);
  state_.step = updates_done;
  if (rank_ == 0) {
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
    options_.checkpoints->save_rank_state(options_.run_id, updates_done, rank_);
  }
  state_.checkpoint_s += seconds_since(t0);
  last_checkpoint_ = Clock::now();
}

int64_t Trainer::resume() {
  if (!options_.checkpoints) return 0;
  std::vector<std::string> warnings;
  auto loaded = options_.checkpoints->load_latest(
      options_.run_id, task_.model(), optimizer_->optimizer(), warnings, options_.records_end);
  if (loaded && rank_ > 0 &&
      !options_.checkpoints->load_rank_state(options_.run_id, loaded->state.step, rank_,
                                             warnings)) {
    // Not rank 0's stream (just loaded with the checkpoint): one of this rank's own.
    torch::manual_seed(
        mix_seed(mix_seed(static_cast<uint64_t>(train_.seed), static_cast<uint64_t>(rank_)),
                 static_cast<uint64_t>(loaded->state.step)));
  }
  for (const auto& w : warnings) reporter_.note(w);
  if (!loaded) {
    note_start_over(warnings);
    return 0;
  }
  state_ = loaded->state;
  applied_phase_ = -1;  // the batch phase's options are applied again at the first step
  // A checkpoint holds the evaluation weights (save_checkpoint); training resumes from its own.
  optimizer_->train_weights();
  if (best_rule_) {
    // best.pt may be newer than the checkpoint: its value stands until beaten.
    const auto best = options_.checkpoints->read_best(options_.run_id);
    if (best && best->metric == best_rule_->metric()) best_value_ = best->value;
  }
  state_.targets_reached.resize(train_.targets.size(), false);
  if (noise_) noise_->restore({state_.noise_g2, state_.noise_trace, state_.noise_updates});
  reporter_.note(
      fmt::format("resumed from step {} ({:.1f} s of training)", state_.step, state_.train_s));
  return state_.step;
}

// Checkpoints there, none readable: the series restarts, and the run's record must say why (a
// restarted series is otherwise indistinguishable from a first attempt).
void Trainer::note_start_over(const std::vector<std::string>& unreadable) {
  const auto listed = options_.checkpoints->list();
  const size_t files = listed.size();
  if (files == 0) return;
  size_t past_records = 0;
  for (const auto& path : listed) {
    past_records += options_.records_end && CheckpointStore::step_of(path) > *options_.records_end;
  }
  const std::string what =
      past_records == 0
          ? fmt::format(
                "no checkpoint of this run could be read ({} file{} in {}, all "
                "unreadable): the run starts over from step 0",
                files, files == 1 ? "" : "s", options_.checkpoints->dir())
          : fmt::format(
                "no checkpoint of this run could be used ({} file{} in {}: {} past the "
                "end of its records at step {}, {} unreadable): the run starts over from "
                "step 0",
                files, files == 1 ? "" : "s", options_.checkpoints->dir(), past_records,
                *options_.records_end, files - past_records);
  reporter_.note(what);
  std::string why = what;
  for (const auto& w : unreadable) why += "; " + w;
  started_over_ = why;
}

// Every rank starts from rank 0's parameters and buffers, and from the same step: a rank that
// resumed from another checkpoint is an error, not a silently different run.
void Trainer::synchronize_start() {
  if (!dp_) return;
  broadcast_model(task_.model(), *dp_);
  check_same_step(*dp_, state_.step, options_.checkpoints ? options_.checkpoints->dir() : "");
}

void Trainer::end_preempted(int64_t updates_done) {
  save_checkpoint(updates_done);
  outcome_.status = RunStatus::preempted;
  outcome_.error = fmt::format("stopped by a signal after {} steps{}", updates_done,
                               options_.checkpoints ? "; checkpoint written" : "");
}

// A final evaluation unless the last step was just evaluated (a run of schedule.steps = 0 is
// evaluated once, at its starting weights); a diverged or interrupted run is not evaluated (an
// interrupted one resumes and evaluates on its own schedule). A finished or stopped run keeps its
// final weights in a checkpoint when checkpoints are on (resuming it does nothing, and `batchlab
// export` reads it).
void Trainer::finish(int64_t updates_done) {
  const bool done = outcome_.status == RunStatus::done;
  if (done && state_.last_eval_step != updates_done) {
    evaluate_and_report(updates_done, /*last=*/true);
  }
  const bool result = done || outcome_.status == RunStatus::stopped;
  if (result && checkpoints_on()) save_checkpoint(updates_done);
  outcome_.last_step = updates_done;
  outcome_.train_s = state_.train_s;
  reporter_.run_finished(outcome_);
  reporter_.flush();
}

RunOutcome Trainer::run() {
  started_ = Clock::now();
  last_checkpoint_ = started_;
  synchronize_start();
  reporter_.run_started(geometry_);
  if (train_.noise_scale && !noise_) {
    reporter_.note(
        fmt::format("gradient noise scale not measured: it needs accumulation >= 2 "
                    "micro-batches per step, this run has {}",
                    batch_.accum));
  }
  task_.model().train();

  int64_t step = state_.step;
  // Tasks with loader threads start building the batches step_once will ask for. A BatchPlan
  // holds one geometry: under a batch schedule the task builds each batch when asked.
  if (!phases_->scheduled()) {
    task_.plan_batches(
        {data_seed_, batch_, rank_, geometry_.train_size, step, schedule_->total_steps()});
  }
  StepAgreement last;  // the previous step's agreement (none yet: the clock as resumed)
  last.train_s = state_.train_s;
  while (!schedule_->finished(step, schedule_clock(last))) {
    if (stop_requested(last)) {
      end_preempted(step);
      break;
    }
    const auto agreed = step_once(step, schedule_clock(last));
    if (!agreed) break;  // diverged
    last = *agreed;
    ++step;
    if (evals_->due(step) &&
        evaluate_and_report(step, schedule_->finished(step, schedule_clock(last)))) {
      break;  // a stop request, or every target reached
    }
    if (checkpoint_due(step, last)) save_checkpoint(step);
  }
  finish(step);
  return outcome_;
}

}  // namespace batchlab::train
