#include "core/config/schema.h"

#include <algorithm>
#include <array>

#include "core/config/batch_rules.h"
#include "core/config/batch_schedule.h"
#include "core/config/field_table.h"
#include "core/config/limits.h"
#include "core/config/param_rule.h"

namespace batchlab::config {

const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names = {
      "sgd", "nesterov", "adam", "adamw", "lars", "lamb", "muon", "schedulefree_adamw", "lion"};
  return names;
}
const std::vector<std::string>& ns_dtype_names() {
  static const std::vector<std::string> names = {"bf16", "fp32"};
  return names;
}
const std::vector<std::string>& muon_adjust_lr_names() {
  static const std::vector<std::string> names = {"original", "match_rms_adamw",
                                                 "spectral_unclamped"};
  return names;
}
const std::vector<std::string>& implementation_names() {
  static const std::vector<std::string> names = {"auto", "foreach", "per_tensor"};
  return names;
}
const std::vector<std::string>& scaling_names() {
  static const std::vector<std::string> names = {"none", "linear", "sqrt"};
  return names;
}
const std::vector<std::string>& decay_names() {
  static const std::vector<std::string> names = {"constant", "linear", "poly", "cosine", "step"};
  return names;
}
const std::vector<std::string>& precision_names() {
  static const std::vector<std::string> names = {"fp32", "bf16"};
  return names;
}
const std::vector<std::string>& stem_names() {
  static const std::vector<std::string> names = {"auto", "imagenet", "small"};
  return names;
}
const std::vector<std::string>& dist_backend_names() {
  static const std::vector<std::string> names = {"auto", "gloo", "nccl"};
  return names;
}
const std::vector<std::string>& target_metric_names() {
  static const std::vector<std::string> names = {"val_acc",   "val_loss",  "test_acc",
                                                 "test_loss", "train_acc", "train_loss"};
  return names;
}
const std::vector<std::string>& full_eval_names() {
  static const std::vector<std::string> names = {"always", "final"};
  return names;
}

bool is_accuracy_metric(std::string_view metric) {
  return metric == "val_acc" || metric == "test_acc" || metric == "train_acc";
}
bool is_validation_metric(std::string_view metric) {
  return metric == "val_acc" || metric == "val_loss";
}

namespace {

// Derived defaults (see experiment_config.h): LAMB's reference implementation uses eps 1e-6 and
// clips the global gradient norm at 1; the data order follows the run seed unless pinned.
double default_eps(const ExperimentConfig& c) { return c.optim.name == "lamb" ? 1e-6 : 1e-8; }
double default_grad_clip(const ExperimentConfig& c) { return c.optim.name == "lamb" ? 1.0 : 0.0; }
// The reference packages' defaults where they differ from the rest: torch.optim.Muon's momentum
// 0.95 with Nesterov, lion-pytorch's betas (0.9, 0.99). Other names resolve to the values they
// always had, so their canonical TOML (and run ids) do not change.
double default_momentum(const ExperimentConfig& c) { return c.optim.name == "muon" ? 0.95 : 0.9; }
bool default_nesterov(const ExperimentConfig& c) {
  return c.optim.name == "muon" || c.optim.name == "nesterov";
}
// With optim.beta2_half_life, beta2 follows the batch (batch_rules.h); with
// weight_decay_scaling = "linear", the weight decay does.
std::array<double, 2> default_betas(const ExperimentConfig& c) {
  ExperimentConfig with = c;
  with.optim.betas =
      c.optim.name == "lion" ? std::array<double, 2>{0.9, 0.99} : std::array<double, 2>{0.9, 0.999};
  return resolved_betas(with);
}
double default_weight_decay(const ExperimentConfig& c) {
  ExperimentConfig with = c;
  with.optim.weight_decay = 0.0;
  return resolved_weight_decay(with);
}
const std::vector<std::string>& weight_decay_scaling_names() {
  static const std::vector<std::string> names = {"none", "linear"};
  return names;
}
int64_t default_data_seed(const ExperimentConfig& c) { return c.train.seed; }

constexpr InRange kUnitHalfOpen{0.0, true, 1.0, false};  // [0, 1)
constexpr InRange kUnitClosed{0.0, true, 1.0, true};     // [0, 1]

// Upper bounds (limits.h), each with its reason and fix.
AtMost max_threads() {
  return at_most(kMaxThreads,
                 "LibTorch starts one OS thread per intra-op thread: use at most the machine's "
                 "cores, or 0 for one per core");
}
AtMost max_workers() {
  return at_most(
      kMaxWorkers,
      "each loader worker is a thread holding data.prefetch batches in memory: a few per "
      "core is plenty (0 builds batches on the training thread)");
}
AtMost max_prefetch() {
  return at_most(kMaxPrefetch,
                 "every queued batch is held in memory; 2 to 8 keep the loader ahead of training");
}
AtMost max_samples() {
  return at_most(kMaxSamples, "no data set is that large (0 takes the whole split)");
}
AtMost max_batch() {
  return at_most(kMaxBatch, "no run has used a batch that large (LAMB trained BERT at 65536)");
}
AtMost max_seq_len() {
  return at_most(kMaxSeqLen, "position embeddings and attention grow with it: BERT uses 512");
}
AtMost max_image_size() {
  return at_most(kMaxImageSize, "a pixel count per side: ImageNet training uses 224");
}
AtMost max_classes(const char* what) { return at_most(kMaxClasses, what); }
AtMost max_steps() { return at_most(kMaxSteps, "no run of that many steps can finish"); }
AtMost max_epochs() { return at_most(kMaxEpochs, "no run of that many epochs can finish"); }
AtMost float32_range() {
  return at_most(
      kMaxFloat32,
      "the largest float32: the optimizer applies it to float32 parameters, and a larger "
      "value fails the run at its first update (core/config/learning_rate.h)");
}

Table<ModelConfig> model_table() {
  return {{
      field("arch", &ModelConfig::arch, NonEmpty{}),
      field("channels_last", &ModelConfig::channels_last),
      field("dropout", &ModelConfig::dropout, kUnitHalfOpen),
      // Keys added after the first recorded runs: written only when used (field_table.h).
      field_omitted_at_default("init_from", &ModelConfig::init_from),
      field_omitted_at_default("init_sha256", &ModelConfig::init_sha256),
      field_omitted_at_default("init_strict", &ModelConfig::init_strict),
      field("max_seq_len", &ModelConfig::max_seq_len, both(greater_than(0), max_seq_len())),
      field("next_sentence", &ModelConfig::next_sentence),
      field("norm_first", &ModelConfig::norm_first),
      field("num_classes", &ModelConfig::num_classes,
            both(at_least(0), max_classes("the head holds features x classes weights (0 takes "
                                          "the data set's count)"))),
      field("stem", &ModelConfig::stem, one_of(stem_names())),
      field("vocab_size", &ModelConfig::vocab_size,
            both(greater_than(0), max_classes("the embedding and the MLM head hold vocabulary x "
                                              "hidden weights: BERT uses 30522"))),
      field("width", &ModelConfig::width,
            both(greater_than(0), at_most(kMaxModelWidth,
                                          "a 3x3 convolution holds 9 x width^2 "
                                          "weights: the small CNNs use 8 to 64"))),
      field("zero_init_residual", &ModelConfig::zero_init_residual),
  }};
}

Table<DataConfig> data_table() {
  return {{
      field("augment", &DataConfig::augment),
      field("dataset", &DataConfig::dataset, NonEmpty{}),
      field("eval_resize", &DataConfig::eval_resize, both(greater_than(0), max_image_size())),
      field("eval_train_samples", &DataConfig::eval_train_samples,
            both(at_least(0), max_samples())),
      field("image_size", &DataConfig::image_size, both(greater_than(0), max_image_size())),
      field("mask_prob", &DataConfig::mask_prob, in_range(0, false, 1, false)),
      field("min_scale", &DataConfig::min_scale, in_range(0, false, 1, true)),
      field("path", &DataConfig::path),
      field("phase2_fraction", &DataConfig::phase2_fraction, kUnitHalfOpen),
      field("prefetch", &DataConfig::prefetch, both(greater_than(0), max_prefetch())),
      derived_field("seed", &DataConfig::seed, default_data_seed),
      field("sentence_pair", &DataConfig::sentence_pair),
      field("seq_len", &DataConfig::seq_len, both(greater_than(0), max_seq_len())),
      field("seq_len_phase2", &DataConfig::seq_len_phase2, both(at_least(0), max_seq_len())),
      field("skip_corrupt", &DataConfig::skip_corrupt),
      // Added after the first recorded runs: written only when used (field_table.h). 0 = the
      // synthetic default; the rules that need the data set and the generator's minimums:
      // validation.cpp (validate_synthetic).
      field_omitted_at_default(
          "synthetic_channels", &DataConfig::synthetic_channels,
          both(at_least(0), at_most(4, "image channels: 1 (grey), 3 (RGB) or 4 (RGBA)"))),
      field_omitted_at_default(
          "synthetic_classes", &DataConfig::synthetic_classes,
          both(at_least(0), max_classes("the head holds features x classes weights"))),
      field_omitted_at_default("synthetic_size", &DataConfig::synthetic_size,
                               both(at_least(0), max_image_size())),
      field("test_size", &DataConfig::test_size, both(at_least(0), max_samples())),
      field("tokenizer", &DataConfig::tokenizer),
      field_omitted_at_default("tokenizer_sha256", &DataConfig::tokenizer_sha256, Sha256Hex{}),
      field("train_size", &DataConfig::train_size, both(at_least(0), max_samples())),
      field("val_size", &DataConfig::val_size, both(at_least(0), max_samples())),
      field("workers", &DataConfig::workers, both(at_least(0), max_workers())),
  }};
}

Table<BatchConfig> batch_table() {
  // The rules that relate global, micro and bn_group need the world size: validation.cpp.
  return {{
      field("bn_group", &BatchConfig::bn_group, both(at_least(0), max_batch())),
      // With batch.schedule, the last point's batch when absent (batch_schedule.h).
      derived_field("global", &BatchConfig::global, default_global_batch,
                    both(greater_than(0), max_batch())),
      field("micro", &BatchConfig::micro, both(at_least(0), max_batch())),
      // The batch-size schedule (batch_schedule.h: its rules, which need the world size, are
      // validation.cpp's): written only when used.
      field_omitted_at_default(
          "ramp_double_every", &BatchConfig::ramp_double_every,
          both(at_least(0), at_most(static_cast<double>(kMaxScheduleExamples),
                                    "examples between doublings; no run sees that many"))),
      field_omitted_at_default("ramp_start", &BatchConfig::ramp_start,
                               both(at_least(0), max_batch())),
      field_omitted_at_default("schedule", &BatchConfig::schedule, NoRule{}, BatchScheduleCodec{}),
  }};
}

Table<ParamGroupRule> group_table() {
  return {{
      field("adapt", &ParamGroupRule::adapt),
      field("lr_scale", &ParamGroupRule::lr_scale, greater_than(0)),
      field("match", &ParamGroupRule::match, ParamRule{})
          .required_key("match = \"<glob over parameter names>\" (or \"ndim<2\")"),
      field("weight_decay", &ParamGroupRule::weight_decay, both(at_least(0), float32_range())),
  }};
}

Table<OptimConfig> optim_table() {
  return {{
      field("always_adapt", &OptimConfig::always_adapt),
      field("base_batch", &OptimConfig::base_batch, greater_than(0)),
      field("base_lr", &OptimConfig::base_lr, greater_than(0)),
      // Added with the batch rules (batch_rules.h): written only when used.
      field_omitted_at_default("base_weight_decay", &OptimConfig::base_weight_decay,
                               both(at_least(0), float32_range())),
      field_omitted_at_default("beta2_floor", &OptimConfig::beta2_floor, kUnitHalfOpen),
      field_omitted_at_default("beta2_half_life", &OptimConfig::beta2_half_life, at_least(0)),
      derived_field("betas", &OptimConfig::betas, default_betas, each(kUnitHalfOpen)),
      field("bias_correction", &OptimConfig::bias_correction),
      derived_field("eps", &OptimConfig::eps, default_eps, greater_than(0)),
      field("exclude", &OptimConfig::exclude, each(ParamRule{})),
      derived_field("grad_clip", &OptimConfig::grad_clip, default_grad_clip, at_least(0)),
      field("grad_averaging", &OptimConfig::grad_averaging),
      field("groups", &OptimConfig::groups, NoRule{}, table_list(group_table())),
      // Added after the first recorded runs: written only when used (field_table.h).
      field_omitted_at_default("implementation", &OptimConfig::implementation,
                               one_of(implementation_names())),
      field("lr_in_momentum", &OptimConfig::lr_in_momentum),
      derived_field("momentum", &OptimConfig::momentum, default_momentum, kUnitHalfOpen),
      // Added with Muon: written only when used (field_table.h); the length of ns_coefficients
      // and which optimizer reads each key: validation.cpp (validate_optim).
      field_omitted_at_default("muon_adjust_lr", &OptimConfig::muon_adjust_lr,
                               one_of(muon_adjust_lr_names())),
      field("name", &OptimConfig::name, one_of(optimizer_names())),
      derived_field("nesterov", &OptimConfig::nesterov, default_nesterov),
      field_omitted_at_default("ns_coefficients", &OptimConfig::ns_coefficients),
      field_omitted_at_default("ns_dtype", &OptimConfig::ns_dtype, one_of(ns_dtype_names())),
      field_omitted_at_default(
          "ns_steps", &OptimConfig::ns_steps,
          both(at_least(0), at_most(99, "torch.optim.Muon's limit; 5 is its default"))),
      // Added with Schedule-Free AdamW: written only when used.
      field_omitted_at_default("poly_power", &OptimConfig::poly_power, at_least(0)),
      field("scaling", &OptimConfig::scaling, one_of(scaling_names())),
      field("trust_clip", &OptimConfig::trust_clip),
      field("trust_coefficient", &OptimConfig::trust_coefficient, greater_than(0)),
      derived_field("weight_decay", &OptimConfig::weight_decay, default_weight_decay,
                    both(at_least(0), float32_range())),
      field_omitted_at_default("weight_decay_scaling", &OptimConfig::weight_decay_scaling,
                               one_of(weight_decay_scaling_names())),
      field_omitted_at_default("weight_lr_power", &OptimConfig::weight_lr_power, at_least(0)),
  }};
}

Table<ScheduleConfig> schedule_table() {
  // Exclusivity (one warmup, one length) and decay/milestone pairing: validation.cpp.
  return {{
      field("budget", &ScheduleConfig::budget_s, greater_than(0), DurationCodec{}),
      field("decay", &ScheduleConfig::decay, one_of(decay_names())),
      field("end_lr", &ScheduleConfig::end_lr, at_least(0)),
      field("epochs", &ScheduleConfig::epochs, both(greater_than(0), max_epochs())),
      field("gamma", &ScheduleConfig::gamma, in_range(0, false, 1, true)),
      field("milestones", &ScheduleConfig::milestones,
            both(each(both(greater_than(0), max_epochs())), StrictlyIncreasing{})),
      field("power", &ScheduleConfig::power, greater_than(0)),
      // 0: no update; the run evaluates its starting weights (e.g. model.init_from) once.
      field("steps", &ScheduleConfig::steps, both(at_least(0), max_steps())),
      field("warmup_epochs", &ScheduleConfig::warmup_epochs, both(at_least(0), max_epochs())),
      field("warmup_fraction", &ScheduleConfig::warmup_fraction, kUnitClosed),
      field("warmup_start", &ScheduleConfig::warmup_start, kUnitClosed),
      field("warmup_steps", &ScheduleConfig::warmup_steps, both(at_least(0), max_steps())),
  }};
}

Table<Target> target_table() {
  // Accuracy targets must lie in (0, 1], and val_* metrics need data.val_size: validation.cpp.
  return {{
      field("metric", &Target::metric, one_of(target_metric_names()))
          .required_key(
              "metric = \"val_acc\" (or val_loss, test_acc, test_loss, train_acc, train_loss)"),
      field("value", &Target::value).required_key("value = <target, e.g. 0.9>"),
  }};
}

Table<TrainConfig> train_table() {
  return {{
      field("checkpoint_every", &TrainConfig::checkpoint_every, at_least(0)),
      field("checkpoint_minutes", &TrainConfig::checkpoint_minutes, at_least(0.0)),
      field("bucket_mb", &TrainConfig::bucket_mb, greater_than(0)),
      field("device", &TrainConfig::device, DeviceName{}),
      field("dist_backend", &TrainConfig::dist_backend, one_of(dist_backend_names())),
      field("dist_timeout", &TrainConfig::dist_timeout_s, greater_than(0), DurationCodec{}),
      field("divergence", &TrainConfig::divergence, zero_or_greater_than(1)),
      field("eval_every", &TrainConfig::eval_every, greater_than(0)),
      field("evals_per_octave", &TrainConfig::evals_per_octave, at_least(0)),
      field_omitted_at_default("eval_every_steps", &TrainConfig::eval_every_steps, at_least(0)),
      field("full_eval", &TrainConfig::full_eval, one_of(full_eval_names())),
      field("layer_stats_every", &TrainConfig::layer_stats_every, at_least(0)),
      field("log_every", &TrainConfig::log_every, at_least(1)),
      field("noise_scale", &TrainConfig::noise_scale),
      field("precision", &TrainConfig::precision, one_of(precision_names())),
      field("seed", &TrainConfig::seed),
      field("stop_at_target", &TrainConfig::stop_at_target),
      field("target", &TrainConfig::targets, NoRule{}, table_list(target_table(), true)),
      field("threads", &TrainConfig::threads, both(at_least(0), max_threads())),
  }};
}

// Erases a section's struct type so all sections sit in one list.
template <class S>
Section make_section(std::string name, S ExperimentConfig::*member, Table<S> table) {
  Section s;
  s.name = name;
  s.keys = table.keys();
  s.read = [member, table, name](const toml::table& t, ExperimentConfig& c, ReadContext& ctx) {
    table.read(t, c.*member, ctx, name);
  };
  s.write = [member, table](const ExperimentConfig& c) { return table.write(c.*member); };
  s.check = [member, table, name](const ExperimentConfig& c, std::vector<Diagnostic>& out) {
    table.check(c.*member, name, out);
  };
  s.derive = [member, table, name](ExperimentConfig& c, const ReadContext& ctx) {
    table.derive(c.*member, c, ctx, name);
  };
  return s;
}

}  // namespace

const std::vector<Section>& experiment_sections() {
  static const std::vector<Section> sections = [] {
    std::vector<Section> all = {
        make_section("batch", &ExperimentConfig::batch, batch_table()),
        make_section("data", &ExperimentConfig::data, data_table()),
        make_section("model", &ExperimentConfig::model, model_table()),
        make_section("optim", &ExperimentConfig::optim, optim_table()),
        make_section("schedule", &ExperimentConfig::schedule, schedule_table()),
        make_section("train", &ExperimentConfig::train, train_table()),
    };
    std::sort(all.begin(), all.end(),
              [](const Section& a, const Section& b) { return a.name < b.name; });
    return all;
  }();
  return sections;
}

const Section* find_section(std::string_view name) {
  for (const auto& section : experiment_sections()) {
    if (section.name == name) return &section;
  }
  return nullptr;
}

const std::vector<std::string>& known_key_paths() {
  static const std::vector<std::string> paths = [] {
    std::vector<std::string> all = {std::string(kSchemaVersionKey)};
    for (const auto& section : experiment_sections()) {
      for (const auto& key : section.keys) all.push_back(section.name + "." + key);
    }
    std::sort(all.begin(), all.end());
    return all;
  }();
  return paths;
}

}  // namespace batchlab::config
