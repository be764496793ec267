#include "cli/sqlite_reporter.h"

namespace batchlab::cli {

SqliteReporter::SqliteReporter(const std::string& db_path, RunIdentity identity,
                               int64_t resume_step)
    : identity_(std::move(identity)), writer_(std::make_unique<results::BatchedWriter>(db_path)) {
  results::RunRow row;
  row.run_id = identity_.run_id;
  row.status = std::string(results::run_status::kRunning);
  row.config_toml = identity_.config_toml;
  row.model = identity_.model;
  row.dataset = identity_.dataset;
  row.optimizer = identity_.optimizer;
  row.scaling = identity_.scaling;
  row.base_lr = identity_.base_lr;
  row.seed = identity_.seed;
  row.host = identity_.host;
  row.git_sha = identity_.git_sha;
  row.torch_version = identity_.torch_version;
  row.started_over = identity_.started_over;
  writer_->with_store([&](results::Store& store) {
    store.upsert_run(row);
    store.delete_rows_after(identity_.run_id, resume_step);
  });
}

void SqliteReporter::run_started(const train::RunGeometry& g) {
  results::RunRow row;
  row.run_id = identity_.run_id;
  // `planned` on an existing run updates the given columns without starting another attempt.
  row.status = std::string(results::run_status::kPlanned);
  row.global_batch = g.batch.global;
  row.micro_batch = g.batch.micro;
  row.accum_steps = g.batch.accum;
  row.world_size = g.batch.world;
  row.bn_group = g.bn_group;
  row.peak_lr = g.peak_lr;
  row.warmup_steps = g.warmup_steps;
  row.threads = g.threads;
  row.device = g.device;
  row.train_size = g.train_size;
  row.steps_per_epoch = g.batch.steps_per_epoch;
  row.total_steps = g.total_steps;
  row.samples_dropped_per_epoch = g.batch.dropped_per_epoch;
  row.chance_acc = g.chance_acc;
  writer_->with_store([&](results::Store& store) { store.upsert_run(row); });
}

void SqliteReporter::step(const train::StepRecord& r) {
  results::StepRow row;
  row.run_id = identity_.run_id;
  row.step = r.step;
  row.epoch = r.epoch;
  row.samples = r.samples;
  row.wall_s = r.wall_s;
  row.lr = r.lr;
  row.train_loss = r.train_loss;
  row.grad_norm = r.grad_norm;
  row.samples_per_s = r.samples_per_s;
  writer_->submit(std::move(row));
}

void SqliteReporter::eval(const train::EvalRecord& r) {
  results::EvalRow row;
  row.run_id = identity_.run_id;
  row.step = r.step;
  row.epoch = r.epoch;
  row.samples = r.samples;
  row.wall_s = r.wall_s;
  row.train_loss = r.train_loss;
  row.train_acc = r.train_acc;
  row.val_loss = r.val_loss;  // NULL without a validation split
  row.val_acc = r.val_acc;
  row.test_loss = r.test_loss;  // NULL where train.full_eval = "final" skipped them
  row.test_acc = r.test_acc;
  row.gap_loss = r.gap_loss;
  row.gap_acc = r.gap_acc;
  row.eval_s = r.eval_s;
  writer_->submit(std::move(row));
}

void SqliteReporter::milestone(const train::MilestoneRecord& r) {
  results::MilestoneRow row;
  row.run_id = identity_.run_id;
  row.metric = r.metric;
  row.target = r.target;
  row.step = r.step;
  row.epoch = r.epoch;
  row.samples = r.samples;
  row.wall_s = r.wall_s;
  writer_->submit(std::move(row));
}

void SqliteReporter::layer_stats(const std::vector<train::LayerStatRecord>& rows) {
  std::vector<results::LayerStatRow> out;
  out.reserve(rows.size());
  for (const auto& r : rows) {
    results::LayerStatRow row;
    row.run_id = identity_.run_id;
    row.step = r.step;
    row.layer = r.layer;
    row.numel = r.numel;
    row.weight_norm = r.weight_norm;
    row.grad_norm = r.grad_norm;
    row.ratio = r.ratio;
    row.trust_ratio = r.trust_ratio;
    row.update_norm = r.update_norm;
    out.push_back(std::move(row));
  }
  writer_->submit(std::move(out));
}

void SqliteReporter::noise_scale(const train::NoiseRecord& r) {
  results::NoiseRow row;
  row.run_id = identity_.run_id;
  row.step = r.step;
  row.b_small = r.b_small;
  row.b_big = r.b_big;
  row.g2 = r.g2;
  row.trace_sigma = r.trace_sigma;
  row.b_simple = r.b_simple;
  writer_->submit(std::move(row));
}

void SqliteReporter::run_finished(const train::RunOutcome& o) {
  std::optional<std::string> error;
  if (!o.error.empty()) error = o.error;
  writer_->with_store([&](results::Store& store) {
    store.set_run_progress(identity_.run_id, o.last_step, o.train_s);
    store.set_run_status(identity_.run_id, train::to_string(o.status), error, std::nullopt,
                         o.stop_reason);
  });
}

void SqliteReporter::flush() { writer_->flush(); }

void SqliteReporter::record_failure(const std::string& error) {
  writer_->with_store([&](results::Store& store) {
    store.set_run_status(identity_.run_id, results::run_status::kFailed, error);
  });
}

}  // namespace batchlab::cli
