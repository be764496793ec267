#include "results/row_codec.h"

#include <fmt/format.h>

#include "results/nonfinite.h"

namespace batchlab::results {

namespace {

// Binds parameters in order, so each codec lists its fields once, in column order.
class Binder {
 public:
  explicit Binder(Statement& stmt) : stmt_(stmt) {}
  Binder& operator()(const std::string& v) {
    return stmt_.bind_text(next_++, std::string_view(v)), *this;
  }
  Binder& operator()(const std::optional<std::string>& v) {
    return stmt_.bind_text(next_++, v), *this;
  }
  Binder& operator()(std::int64_t v) { return stmt_.bind_int64(next_++, v), *this; }
  Binder& operator()(const std::optional<std::int64_t>& v) {
    return stmt_.bind_int64(next_++, v), *this;
  }
  Binder& operator()(const std::optional<double>& v) {
    return stmt_.bind_double(next_++, v), *this;
  }

 private:
  Statement& stmt_;
  int next_ = 1;
};

// Reads result columns in order.
class Reader {
 public:
  explicit Reader(const Statement& stmt) : stmt_(stmt) {}
  std::string text() { return stmt_.column_text(next_++); }
  std::optional<std::string> opt_text() { return stmt_.column_opt_text(next_++); }
  std::int64_t int64() { return stmt_.column_int64(next_++); }
  std::optional<std::int64_t> opt_int64() { return stmt_.column_opt_int64(next_++); }
  std::optional<double> opt_double() { return stmt_.column_opt_double(next_++); }
  // The `nonfinite` column sits last; read it first so the doubles before it can be restored.
  std::optional<std::string> last_text() const {
    return stmt_.column_opt_text(stmt_.column_count() - 1);
  }

 private:
  const Statement& stmt_;
  int next_ = 0;
};

}  // namespace

std::string join_columns(const std::vector<std::string>& columns) {
  return fmt::format("{}", fmt::join(columns, ", "));
}

std::string placeholders(std::size_t count) {
  std::string text;
  for (std::size_t i = 1; i <= count; ++i) {
    if (i > 1) text += ", ";
    text += fmt::format("?{}", i);
  }
  return text;
}

// ---- steps

const char* const RowCodec<StepRow>::table = "steps";
const char* const RowCodec<StepRow>::order_by = "step";

const std::vector<std::string>& RowCodec<StepRow>::columns() {
  static const std::vector<std::string> cols = {
      "run_id", "step",       "epoch",     "samples",       "wall_s",
      "lr",     "train_loss", "grad_norm", "samples_per_s", "nonfinite"};
  return cols;
}

void RowCodec<StepRow>::bind(Statement& stmt, const StepRow& row) {
  NonfiniteWriter nf;
  Binder bind_next(stmt);
  bind_next(row.run_id)(row.step)(nf.note("epoch", row.epoch))(row.samples)(
      nf.note("wall_s", row.wall_s))(nf.note("lr", row.lr))(nf.note("train_loss", row.train_loss))(
      nf.note("grad_norm", row.grad_norm))(nf.note("samples_per_s", row.samples_per_s))(nf.text());
}

StepRow RowCodec<StepRow>::read(const Statement& stmt, const std::string& db_path) {
  Reader r(stmt);
  const NonfiniteReader nf(r.last_text(), db_path);
  StepRow row;
  row.run_id = r.text();
  row.step = r.int64();
  row.epoch = nf.restore_required("epoch", r.opt_double());
  row.samples = r.int64();
  row.wall_s = nf.restore_required("wall_s", r.opt_double());
  row.lr = nf.restore("lr", r.opt_double());
  row.train_loss = nf.restore("train_loss", r.opt_double());
  row.grad_norm = nf.restore("grad_norm", r.opt_double());
  row.samples_per_s = nf.restore("samples_per_s", r.opt_double());
  return row;
}

// ---- evals

const char* const RowCodec<EvalRow>::table = "evals";
const char* const RowCodec<EvalRow>::order_by = "step";

const std::vector<std::string>& RowCodec<EvalRow>::columns() {
  static const std::vector<std::string> cols = {"run_id",   "step",       "epoch",     "samples",
                                                "wall_s",   "train_loss", "train_acc", "test_loss",
                                                "test_acc", "gap_loss",   "gap_acc",   "eval_s",
                                                "val_loss", "val_acc",    "nonfinite"};
  return cols;
}

void RowCodec<EvalRow>::bind(Statement& stmt, const EvalRow& given) {
  EvalRow row = given;
  fill_gaps(row);
  NonfiniteWriter nf;
  Binder bind_next(stmt);
  bind_next(row.run_id)(row.step)(nf.note("epoch", row.epoch))(row.samples)(
      nf.note("wall_s", row.wall_s))(nf.note("train_loss", row.train_loss))(
      nf.note("train_acc", row.train_acc))(nf.note("test_loss", row.test_loss))(
      nf.note("test_acc", row.test_acc))(nf.note("gap_loss", row.gap_loss))(
      nf.note("gap_acc", row.gap_acc))(nf.note("eval_s", row.eval_s))(
      nf.note("val_loss", row.val_loss))(nf.note("val_acc", row.val_acc))(nf.text());
}

EvalRow RowCodec<EvalRow>::read(const Statement& stmt, const std::string& db_path) {
  Reader r(stmt);
  const NonfiniteReader nf(r.last_text(), db_path);
  EvalRow row;
  row.run_id = r.text();
  row.step = r.int64();
  row.epoch = nf.restore_required("epoch", r.opt_double());
  row.samples = r.int64();
  row.wall_s = nf.restore_required("wall_s", r.opt_double());
  row.train_loss = nf.restore("train_loss", r.opt_double());
  row.train_acc = nf.restore("train_acc", r.opt_double());
  row.test_loss = nf.restore("test_loss", r.opt_double());
  row.test_acc = nf.restore("test_acc", r.opt_double());
  row.gap_loss = nf.restore("gap_loss", r.opt_double());
  row.gap_acc = nf.restore("gap_acc", r.opt_double());
  row.eval_s = nf.restore("eval_s", r.opt_double());
  row.val_loss = nf.restore("val_loss", r.opt_double());
  row.val_acc = nf.restore("val_acc", r.opt_double());
  return row;
}

// ---- layer_stats

const char* const RowCodec<LayerStatRow>::table = "layer_stats";
const char* const RowCodec<LayerStatRow>::order_by = "step, layer";

const std::vector<std::string>& RowCodec<LayerStatRow>::columns() {
  static const std::vector<std::string> cols = {"run_id",      "step",      "layer", "numel",
                                                "weight_norm", "grad_norm", "ratio", "trust_ratio",
                                                "update_norm", "nonfinite"};
  return cols;
}

void RowCodec<LayerStatRow>::bind(Statement& stmt, const LayerStatRow& row) {
  NonfiniteWriter nf;
  Binder bind_next(stmt);
  bind_next(row.run_id)(row.step)(row.layer)(row.numel)(nf.note("weight_norm", row.weight_norm))(
      nf.note("grad_norm", row.grad_norm))(nf.note("ratio", row.ratio))(
      nf.note("trust_ratio", row.trust_ratio))(nf.note("update_norm", row.update_norm))(nf.text());
}

LayerStatRow RowCodec<LayerStatRow>::read(const Statement& stmt, const std::string& db_path) {
  Reader r(stmt);
  const NonfiniteReader nf(r.last_text(), db_path);
  LayerStatRow row;
  row.run_id = r.text();
  row.step = r.int64();
  row.layer = r.text();
  row.numel = r.opt_int64();
  row.weight_norm = nf.restore("weight_norm", r.opt_double());
  row.grad_norm = nf.restore("grad_norm", r.opt_double());
  row.ratio = nf.restore("ratio", r.opt_double());
  row.trust_ratio = nf.restore("trust_ratio", r.opt_double());
  row.update_norm = nf.restore("update_norm", r.opt_double());
  return row;
}

// ---- noise_scale

const char* const RowCodec<NoiseRow>::table = "noise_scale";
const char* const RowCodec<NoiseRow>::order_by = "step";

const std::vector<std::string>& RowCodec<NoiseRow>::columns() {
  static const std::vector<std::string> cols = {"run_id", "step",        "b_small",  "b_big",
                                                "g2",     "trace_sigma", "b_simple", "nonfinite"};
  return cols;
}

void RowCodec<NoiseRow>::bind(Statement& stmt, const NoiseRow& row) {
  NonfiniteWriter nf;
  Binder bind_next(stmt);
  bind_next(row.run_id)(row.step)(row.b_small)(row.b_big)(nf.note("g2", row.g2))(
      nf.note("trace_sigma", row.trace_sigma))(nf.note("b_simple", row.b_simple))(nf.text());
}

NoiseRow RowCodec<NoiseRow>::read(const Statement& stmt, const std::string& db_path) {
  Reader r(stmt);
  const NonfiniteReader nf(r.last_text(), db_path);
  NoiseRow row;
  row.run_id = r.text();
  row.step = r.int64();
  row.b_small = r.opt_int64();
  row.b_big = r.opt_int64();
  row.g2 = nf.restore("g2", r.opt_double());
  row.trace_sigma = nf.restore("trace_sigma", r.opt_double());
  row.b_simple = nf.restore("b_simple", r.opt_double());
  return row;
}

// ---- milestones (all values finite by construction: a target was reached at a real time)

const char* const RowCodec<MilestoneRow>::table = "milestones";
const char* const RowCodec<MilestoneRow>::order_by = "metric, target";

const std::vector<std::string>& RowCodec<MilestoneRow>::columns() {
  static const std::vector<std::string> cols = {"run_id", "metric",  "target", "step",
                                                "epoch",  "samples", "wall_s"};
  return cols;
}

void RowCodec<MilestoneRow>::bind(Statement& stmt, const MilestoneRow& row) {
  Binder bind_next(stmt);
  bind_next(row.run_id)(row.metric)(std::optional<double>(row.target))(row.step)(
      std::optional<double>(row.epoch))(row.samples)(std::optional<double>(row.wall_s));
}

MilestoneRow RowCodec<MilestoneRow>::read(const Statement& stmt, const std::string& /*db_path*/) {
  Reader r(stmt);
  MilestoneRow row;
  row.run_id = r.text();
  row.metric = r.text();
  row.target = r.opt_double().value_or(0.0);
  row.step = r.int64();
  row.epoch = r.opt_double().value_or(0.0);
  row.samples = r.int64();
  row.wall_s = r.opt_double().value_or(0.0);
  return row;
}

// ---- runs

const char* const RowCodec<RunRow>::table = "runs";
const char* const RowCodec<RunRow>::order_by = "run_id";

const std::vector<std::string>& RowCodec<RunRow>::columns() {
  static const std::vector<std::string> cols = {"run_id",       "sweep_id",
                                                "status",       "config_toml",
                                                "model",        "dataset",
                                                "optimizer",    "global_batch",
                                                "micro_batch",  "accum_steps",
                                                "world_size",   "base_lr",
                                                "peak_lr",      "scaling",
                                                "warmup_steps", "seed",
                                                "attempts",     "error",
                                                "host",         "device",
                                                "git_sha",      "torch_version",
                                                "started_at",   "finished_at",
                                                "threads",      "bn_group",
                                                "train_size",   "steps_per_epoch",
                                                "total_steps",  "samples_dropped_per_epoch",
                                                "last_step",    "train_s",
                                                "stop_reason",  "scheduler_job",
                                                "started_over", "chance_acc"};
  return cols;
}

void RowCodec<RunRow>::bind(Statement& stmt, const RunRow& row) {
  Binder bind_next(stmt);
  bind_next(row.run_id)(row.sweep_id)(row.status)(row.config_toml)(row.model)(row.dataset)(
      row.optimizer)(row.global_batch)(row.micro_batch)(row.accum_steps)(row.world_size)(
      row.base_lr)(row.peak_lr)(row.scaling)(row.warmup_steps)(row.seed)(row.attempts)(row.error)(
      row.host)(row.device)(row.git_sha)(row.torch_version)(row.started_at)(row.finished_at)(
      row.threads)(row.bn_group)(row.train_size)(row.steps_per_epoch)(row.total_steps)(
      row.samples_dropped_per_epoch)(row.last_step)(row.train_s)(row.stop_reason)(
      row.scheduler_job)(row.started_over)(row.chance_acc);
}

RunRow RowCodec<RunRow>::read(const Statement& stmt, const std::string& /*db_path*/) {
  Reader r(stmt);
  RunRow row;
  row.run_id = r.text();
  row.sweep_id = r.opt_text();
  row.status = r.text();
  row.config_toml = r.opt_text();
  row.model = r.opt_text();
  row.dataset = r.opt_text();
  row.optimizer = r.opt_text();
  row.global_batch = r.opt_int64();
  row.micro_batch = r.opt_int64();
  row.accum_steps = r.opt_int64();
  row.world_size = r.opt_int64();
  row.base_lr = r.opt_double();
  row.peak_lr = r.opt_double();
  row.scaling = r.opt_text();
  row.warmup_steps = r.opt_int64();
  row.seed = r.opt_int64();
  row.attempts = r.int64();
  row.error = r.opt_text();
  row.host = r.opt_text();
  row.device = r.opt_text();
  row.git_sha = r.opt_text();
  row.torch_version = r.opt_text();
  row.started_at = r.opt_text();
  row.finished_at = r.opt_text();
  row.threads = r.opt_int64();
  row.bn_group = r.opt_int64();
  row.train_size = r.opt_int64();
  row.steps_per_epoch = r.opt_int64();
  row.total_steps = r.opt_int64();
  row.samples_dropped_per_epoch = r.opt_int64();
  row.last_step = r.opt_int64();
  row.train_s = r.opt_double();
  row.stop_reason = r.opt_text();
  row.scheduler_job = r.opt_text();
  row.started_over = r.opt_text();
  row.chance_acc = r.opt_double();
  return row;
}

// ---- sweeps

const char* const RowCodec<SweepRow>::table = "sweeps";
const char* const RowCodec<SweepRow>::order_by = "sweep_id";

const std::vector<std::string>& RowCodec<SweepRow>::columns() {
  static const std::vector<std::string> cols = {"sweep_id", "name", "spec_toml", "created_at"};
  return cols;
}

void RowCodec<SweepRow>::bind(Statement& stmt, const SweepRow& row) {
  Binder bind_next(stmt);
  bind_next(row.sweep_id)(row.name)(row.spec_toml)(row.created_at);
}

SweepRow RowCodec<SweepRow>::read(const Statement& stmt, const std::string& /*db_path*/) {
  Reader r(stmt);
  SweepRow row;
  row.sweep_id = r.text();
  row.name = r.text();
  row.spec_toml = r.opt_text();
  row.created_at = r.opt_text();
  return row;
}

// ---- study_cells and study_trials (values finite by construction: the engine never stores a
// NaN crossing, so no `nonfinite` column)

const char* const RowCodec<StudyCellRow>::table = "study_cells";
const char* const RowCodec<StudyCellRow>::order_by = "optimizer, global_batch, seed, cell_id";

const std::vector<std::string>& RowCodec<StudyCellRow>::columns() {
  static const std::vector<std::string> cols = {
      "cell_id",         "sweep_id",          "optimizer",    "global_batch", "seed",
      "cell_toml",       "target_metric",     "target_value", "lr_center",    "lr_factor",
      "cap_steps",       "warmup_steps",      "status",       "best_run_id",  "best_lr",
      "steps_to_target", "samples_to_target", "updated_at"};
  return cols;
}

void RowCodec<StudyCellRow>::bind(Statement& stmt, const StudyCellRow& row) {
  Binder bind_next(stmt);
  bind_next(row.cell_id)(row.sweep_id)(row.optimizer)(row.global_batch)(row.seed)(row.cell_toml)(
      row.target.metric)(std::optional<double>(row.target.value))(
      std::optional<double>(row.lr_center))(std::optional<double>(row.lr_factor))(row.cap_steps)(
      row.warmup_steps)(row.status)(row.best_run_id)(row.best_lr)(row.steps_to_target)(
      row.samples_to_target)(row.updated_at);
}

StudyCellRow RowCodec<StudyCellRow>::read(const Statement& stmt, const std::string& /*db_path*/) {
  Reader r(stmt);
  StudyCellRow row;
  row.cell_id = r.text();
  row.sweep_id = r.text();
  row.optimizer = r.text();
  row.global_batch = r.int64();
  row.seed = r.int64();
  row.cell_toml = r.text();
  row.target.metric = r.text();
  row.target.value = r.opt_double().value_or(0.0);
  row.lr_center = r.opt_double().value_or(0.0);
  row.lr_factor = r.opt_double().value_or(0.0);
  row.cap_steps = r.int64();
  row.warmup_steps = r.int64();
  row.status = r.text();
  row.best_run_id = r.opt_text();
  row.best_lr = r.opt_double();
  row.steps_to_target = r.opt_double();
  row.samples_to_target = r.opt_double();
  row.updated_at = r.opt_text();
  return row;
}

const char* const RowCodec<StudyTrialRow>::table = "study_trials";
const char* const RowCodec<StudyTrialRow>::order_by = "cell_id, lr_index";

const std::vector<std::string>& RowCodec<StudyTrialRow>::columns() {
  static const std::vector<std::string> cols = {
      "run_id",          "cell_id",         "base_lr",     "lr_index", "outcome",   "last_step",
      "steps_to_target", "samples_trained", "cap_samples", "reason",   "decided_at"};
  return cols;
}

void RowCodec<StudyTrialRow>::bind(Statement& stmt, const StudyTrialRow& row) {
  Binder bind_next(stmt);
  bind_next(row.run_id)(row.cell_id)(std::optional<double>(row.base_lr))(row.lr_index)(row.outcome)(
      row.last_step)(row.steps_to_target)(row.samples_trained)(row.cap_samples)(row.reason)(
      row.decided_at);
}

StudyTrialRow RowCodec<StudyTrialRow>::read(const Statement& stmt, const std::string& /*db_path*/) {
  Reader r(stmt);
  StudyTrialRow row;
  row.run_id = r.text();
  row.cell_id = r.text();
  row.base_lr = r.opt_double().value_or(0.0);
  row.lr_index = r.int64();
  row.outcome = r.text();
  row.last_step = r.opt_int64();
  row.steps_to_target = r.opt_double();
  row.samples_trained = r.opt_int64();
  row.cap_samples = r.opt_int64();
  row.reason = r.opt_text();
  row.decided_at = r.opt_text();
  return row;
}

const char* const RowCodec<BudgetCellRow>::table = "budget_cells";
const char* const RowCodec<BudgetCellRow>::order_by = "optimizer, series, global_batch, seed";

const std::vector<std::string>& RowCodec<BudgetCellRow>::columns() {
  static const std::vector<std::string> cols = {
      "cell_id",    "sweep_id",        "optimizer",    "global_batch",    "seed",
      "cell_toml",  "series",          "budget_steps", "epochs",          "rung_steps",
      "eta",        "points",          "knobs",        "status",          "best_run_id",
      "best_point", "first_seed_cell", "trials",       "samples_trained", "updated_at"};
  return cols;
}

void RowCodec<BudgetCellRow>::bind(Statement& stmt, const BudgetCellRow& row) {
  Binder bind_next(stmt);
  bind_next(row.cell_id)(row.sweep_id)(row.optimizer)(row.global_batch)(row.seed)(row.cell_toml)(
      row.series)(row.budget_steps)(row.epochs)(row.rung_steps)(row.eta)(row.points)(row.knobs)(
      row.status)(row.best_run_id)(row.best_point)(row.first_seed_cell)(row.trials)(
      row.samples_trained)(row.updated_at);
}

BudgetCellRow RowCodec<BudgetCellRow>::read(const Statement& stmt, const std::string& /*db_path*/) {
  Reader r(stmt);
  BudgetCellRow row;
  row.cell_id = r.text();
  row.sweep_id = r.text();
  row.optimizer = r.text();
  row.global_batch = r.int64();
  row.seed = r.int64();
  row.cell_toml = r.text();
  row.series = r.text();
  row.budget_steps = r.int64();
  row.epochs = r.opt_double();
  row.rung_steps = r.text();
  row.eta = r.int64();
  row.points = r.int64();
  row.knobs = r.text();
  row.status = r.text();
  row.best_run_id = r.opt_text();
  row.best_point = r.opt_text();
  row.first_seed_cell = r.opt_text();
  row.trials = r.int64();
  row.samples_trained = r.int64();
  row.updated_at = r.opt_text();
  return row;
}

const char* const RowCodec<BudgetTrialRow>::table = "budget_trials";
const char* const RowCodec<BudgetTrialRow>::order_by = "cell_id, point_index";

const std::vector<std::string>& RowCodec<BudgetTrialRow>::columns() {
  static const std::vector<std::string> cols = {
      "run_id",  "cell_id",   "point_index", "point",           "rung",
      "outcome", "last_step", "metric",      "samples_trained", "decided_at"};
  return cols;
}

void RowCodec<BudgetTrialRow>::bind(Statement& stmt, const BudgetTrialRow& row) {
  Binder bind_next(stmt);
  bind_next(row.run_id)(row.cell_id)(row.point_index)(row.point)(row.rung)(row.outcome)(
      row.last_step)(row.metric)(row.samples_trained)(row.decided_at);
}

BudgetTrialRow RowCodec<BudgetTrialRow>::read(const Statement& stmt,
                                              const std::string& /*db_path*/) {
  Reader r(stmt);
  BudgetTrialRow row;
  row.run_id = r.text();
  row.cell_id = r.text();
  row.point_index = r.int64();
  row.point = r.text();
  row.rung = r.int64();
  row.outcome = r.text();
  row.last_step = r.opt_int64();
  row.metric = r.opt_double();
  row.samples_trained = r.opt_int64();
  row.decided_at = r.opt_text();
  return row;
}

}  // namespace batchlab::results
