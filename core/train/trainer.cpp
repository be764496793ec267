#include "core/train/trainer.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>

#include "core/errors.h"
#include "core/train/evaluator.h"

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

AccumulatedStep accumulate_gradients(Task& task, const std::vector<torch::Tensor>& micro_indices,
                                     std::optional<uint64_t> augment_seed,
                                     const std::vector<optim::NamedParameter>* params,
                                     std::vector<double>* micro_sq_norms) {
  const auto k = static_cast<double>(micro_indices.size());
  const bool measure = params != nullptr && micro_sq_norms != nullptr;
  torch::Tensor loss_sum;
  std::vector<torch::Tensor> sq_norms;  // 0-dim float64 each: synchronized once at the end
  int64_t items = 0;
  for (size_t j = 0; j < micro_indices.size(); ++j) {
    std::optional<uint64_t> seed;
    if (augment_seed) seed = mix_seed(*augment_seed, j);
    std::vector<torch::Tensor> before;
    if (measure) {
      for (const auto& p : *params) {
        const auto& g = p.tensor.grad();
        before.push_back(g.defined() ? g.detach().clone() : torch::Tensor());
      }
    }
    auto batch = task.make_batch(Split::train, micro_indices[j], seed);
    auto out = task.forward(batch);
    // Each micro-batch's mean loss / k: the summed gradient is the gradient of the global mean.
    (out.loss / k).backward();
    if (measure) {
      torch::NoGradGuard no_grad;
      auto total = torch::zeros({}, torch::kFloat64);
      for (size_t i = 0; i < params->size(); ++i) {
        const auto& g = (*params)[i].tensor.grad();
        if (!g.defined()) continue;
        auto own = before[i].defined() ? (g - before[i]) : g;  // this micro-batch's gradient / k
        total = total + own.to(torch::kFloat64).pow(2).sum();
      }
      sq_norms.push_back(total * (k * k));
    }
    auto detached = out.loss.detach().to(torch::kFloat64);
    loss_sum = loss_sum.defined() ? loss_sum + detached : detached;
    items += out.count;
  }
  if (measure) {
    micro_sq_norms->clear();
    if (!sq_norms.empty()) {
      auto host = torch::stack(sq_norms).to(torch::kCPU);
      for (int64_t i = 0; i < host.size(0); ++i) micro_sq_norms->push_back(host[i].item<double>());
    }
  }
  AccumulatedStep result;
  result.loss = loss_sum.item<double>() / k;
  result.items = items;
  return result;
}

torch::Tensor global_grad_norm(const std::vector<optim::NamedParameter>& params) {
  std::vector<torch::Tensor> norms;
  norms.reserve(params.size());
  for (const auto& p : params) {
    if (p.tensor.grad().defined()) norms.push_back(p.tensor.grad().norm().to(torch::kFloat64));
  }
  if (norms.empty()) return torch::zeros({}, torch::kFloat64);
  return torch::stack(norms).norm();
}

Trainer::Trainer(TrainerOptions options, Task& task, Reporter& reporter)
    : options_(std::move(options)), task_(task), reporter_(reporter) {
  params_ = task_.named_parameters();
  const int64_t train_size = task_.size(Split::train);
  batch_ = make_batch_geometry(options_.batch.global, options_.batch.micro, options_.world_size,
                               train_size);

  const double peak = optim::scaled_peak_lr(options_.optim, batch_.global);
  schedule_ = std::make_unique<optim::LrSchedule>(options_.schedule, peak, batch_.steps_per_epoch);
  optimizer_ = optim::make_optimizer(options_.optim, params_, peak);

  train_sample_ = fixed_train_sample(options_.data_seed, train_size, options_.eval_train_samples);
  eval_every_steps_ = std::max<int64_t>(
      1, std::llround(options_.train.eval_every * static_cast<double>(batch_.steps_per_epoch)));
  state_.targets_reached.assign(options_.train.targets.size(), false);
  if (options_.train.layer_stats_every > 0) layer_stats_ = std::make_unique<LayerStatsCollector>(params_);
  if (options_.train.noise_scale && batch_.accum >= 2) {
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

bool Trainer::budget_spent() const {
  return schedule_->budgeted() && options_.schedule.budget_s &&
         state_.train_s >= *options_.schedule.budget_s;
}

bool Trainer::step_once(int64_t step) {
  const int64_t epoch = step / batch_.steps_per_epoch;
  const int64_t in_epoch = step % batch_.steps_per_epoch;
  if (epoch != cached_epoch_) {
    permutation_ = epoch_permutation(options_.data_seed, epoch, geometry_.train_size);
    cached_epoch_ = epoch;
  }

  const auto t0 = Clock::now();
  const double lr = schedule_->current(step, state_.train_s);
  optimizer_->set_lr(lr);
  task_.set_progress(schedule_->progress(step, state_.train_s));
  optimizer_->optimizer().zero_grad();

  std::vector<torch::Tensor> micro;
  micro.reserve(static_cast<size_t>(batch_.accum));
  for (int64_t j = 0; j < batch_.accum; ++j) {
    micro.push_back(micro_batch_indices(permutation_, batch_, in_epoch, options_.rank, j));
  }
  const uint64_t augment_seed =
      mix_seed(static_cast<uint64_t>(options_.data_seed), static_cast<uint64_t>(step) + 1);
  std::vector<double> micro_sq;
  const auto acc = accumulate_gradients(task_, micro, augment_seed, noise_ ? &params_ : nullptr,
                                        noise_ ? &micro_sq : nullptr);
  const auto grad_norm_t = global_grad_norm(params_);
  const double grad_norm = grad_norm_t.item<double>();

  // Divergence is checked before the update, so the weights of a diverged run stay the last finite ones.
  std::string why;
  if (!std::isfinite(acc.loss) || !std::isfinite(grad_norm)) {
    why = fmt::format("non-finite {} at step {} (loss {}, grad norm {}); last finite loss {:.6g}; "
                      "first non-finite gradient in {}",
                      std::isfinite(acc.loss) ? "gradient" : "loss", step, acc.loss, grad_norm,
                      last_loss_, first_nonfinite_parameter());
  } else if (state_.have_first_loss && options_.train.divergence > 0 &&
             acc.loss > options_.train.divergence * state_.first_loss) {
    why = fmt::format("loss {:.4g} at step {} exceeds train.divergence = {} x the first loss {:.4g}",
                      acc.loss, step, options_.train.divergence, state_.first_loss);
  }
  if (!state_.have_first_loss && std::isfinite(acc.loss)) {
    state_.first_loss = acc.loss;
    state_.have_first_loss = true;
  }
  const bool log_layers = why.empty() && layer_stats_ && step % options_.train.layer_stats_every == 0;
  std::vector<LayerStatRecord> layer_rows;
  if (log_layers) layer_stats_->before_update();
  if (why.empty()) optimizer_->step();
  const double step_s = seconds_since(t0);
  state_.train_s += step_s;
  if (std::isfinite(acc.loss)) last_loss_ = acc.loss;

  // Per-layer rows and noise are measurements, not training: kept off the training clock.
  if (log_layers) reporter_.layer_stats(layer_stats_->after_update(step, optimizer_->last_trust_ratios()));
  if (noise_ && why.empty()) {
    const double big = grad_norm * grad_norm;
    const auto e = noise_->update(micro_sq, batch_.micro, big, batch_.micro * batch_.accum);
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
    r.train_loss = acc.loss;
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
  const auto train_m = evaluate(task_, Split::train, train_sample_, options_.eval_chunk);
  const auto test_m = evaluate_split(task_, Split::test, options_.eval_chunk);

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
  // Rows up to here must be stored before the checkpoint that lets a resume skip them exists.
  reporter_.flush();
  state_.step = updates_done;
  if (noise_) {
    const auto ns = noise_->state();
    state_.noise_g2 = ns.g2;
    state_.noise_trace = ns.trace;
    state_.noise_updates = ns.updates;
  }
  options_.checkpoints->save({options_.run_id, state_}, task_.model(), optimizer_->optimizer());
  state_.checkpoint_s += seconds_since(t0);
  last_checkpoint_ = Clock::now();
}

int64_t Trainer::resume() {
  if (!options_.checkpoints) return 0;
  std::vector<std::string> warnings;
  auto loaded = options_.checkpoints->load_latest(options_.run_id, task_.model(),
                                                  optimizer_->optimizer(), warnings);
  for (const auto& w : warnings) reporter_.note(w);
  if (!loaded) return 0;
  state_ = loaded->state;
  state_.targets_reached.resize(options_.train.targets.size(), false);
  if (noise_) noise_->restore({state_.noise_g2, state_.noise_trace, state_.noise_updates});
  reporter_.note(fmt::format("resumed from step {} ({} of training)", state_.step, state_.train_s));
  return state_.step;
}

RunOutcome Trainer::run() {
  started_ = Clock::now();
  last_checkpoint_ = started_;
  reporter_.run_started(geometry_);
  if (options_.train.noise_scale && !noise_) {
    reporter_.note(fmt::format("gradient noise scale not measured: it needs accumulation >= 2 "
                               "micro-batches per step, this run has {}", batch_.accum));
  }
  task_.model().train();

  const int64_t total = schedule_->total_steps();  // 0 under a budget
  int64_t step = state_.step;
  int64_t last_eval = state_.last_eval_step;
  const int64_t every = options_.train.checkpoint_every;
  while (schedule_->budgeted() ? !budget_spent() : step < total) {
    if (options_.stop_requested && options_.stop_requested->load()) {
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
    const bool by_time = options_.checkpoint_every_s > 0 &&
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
