#include "core/config/validation.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "core/config/batch_geometry.h"
#include "core/config/batch_rules.h"
#include "core/config/batch_schedule.h"
#include "core/config/canonical.h"
#include "core/config/codecs.h"
#include "core/config/duration.h"
#include "core/config/exclusive_keys.h"
#include "core/config/learning_rate.h"
#include "core/config/rules.h"
#include "core/config/run_length.h"
#include "core/config/schema.h"
#include "core/config/suggest.h"
#include "core/config/target_rules.h"

namespace batchlab::config {
namespace {

Diagnostic diagnostic(std::string key, std::string value, std::string rule) {
  Diagnostic d;
  d.key = std::move(key);
  d.value = std::move(value);
  d.rule = std::move(rule);
  return d;
}

// The divisors of n closest to `near` from below and above, to make the fix concrete.
std::string nearby_divisors(int64_t n, int64_t near) {
  if (n > 1'000'000'000'000) return "";  // the search is O(sqrt(n)); no batch is that large
  int64_t below = 0;
  int64_t above = 0;
  for (int64_t i = 1; i <= n / i; ++i) {
    if (n % i != 0) continue;
    for (const int64_t d : {i, n / i}) {
      if (d <= near && d > below) below = d;
      if (d >= near && (above == 0 || d < above)) above = d;
    }
  }
  if (below > 0 && above > 0 && below != above)
    return fmt::format(" (e.g. {} or {})", below, above);
  if (below > 0) return fmt::format(" (e.g. {})", below);
  if (above > 0) return fmt::format(" (e.g. {})", above);
  return "";
}

// Three significant digits ("20.8", "5.33") without switching to exponents for large ratios.
std::string format_ratio(double ratio) {
  return ratio >= 100.0 ? fmt::format("{:.1f}", ratio) : fmt::format("{:.3g}", ratio);
}

// A named optional key for the exclusivity rules.
struct Choice {
  std::string path;
  bool set;
  std::string value;
};

template <class T, class C>
Choice choice(const std::string& path, const std::optional<T>& value, const C& codec) {
  return {path, value.has_value(), value ? codec.write(*value) : std::string()};
}

std::vector<std::string> paths_of(const std::vector<Choice>& choices) {
  std::vector<std::string> out;
  for (const auto& c : choices) out.push_back(c.path);
  return out;
}

// At most one (or, with `exactly_one`, exactly one) of `choices` may be set. One diagnostic, on
// the second key set, naming the others, so the user knows which lines to compare.
void check_exclusive(const std::vector<Choice>& choices, bool exactly_one,
                     const std::string& section, std::vector<Diagnostic>& out) {
  const std::string names = join_choices(paths_of(choices));
  std::vector<const Choice*> set;
  for (const auto& c : choices) {
    if (c.set) set.push_back(&c);
  }
  if (set.empty() && exactly_one) {
    out.push_back(diagnostic(section, "", "set exactly one of " + names + " (none is set)"));
  }
  if (set.size() > 1) {
    std::vector<std::string> others;
    for (const auto* c : set) {
      if (c != set[1]) others.push_back(c->path);
    }
    out.push_back(diagnostic(
        set[1]->path, set[1]->value,
        std::string(exactly_one ? "set exactly one of " : "set at most one of ") + names +
            "; also set: " + join_choices(others, " and ") + "; remove all but one"));
  }
}

}  // namespace

bool keys_intact(const ReadContext* read, const std::vector<std::string>& paths) {
  if (read == nullptr) return true;
  for (const auto& path : paths) {
    if (read->failed(path)) return false;
  }
  return true;
}

namespace {

// A global batch that world_size x micro does not divide: the ratio and the nearest fix.
Diagnostic indivisible_batch(int64_t global, int64_t micro, int64_t world_size) {
  const std::string ratio =
      world_size == 1
          ? fmt::format("{} / {} = {}", global, micro, format_ratio(double(global) / double(micro)))
          : fmt::format("{} / ({} x {}) = {}", global, world_size, micro,
                        format_ratio(double(global) / (double(world_size) * double(micro))));
  // Each device's share of the global batch (batch_geometry.h: micro 0 is global / world_size).
  const int64_t per_device = micro_batch(global, 0, world_size);
  const std::string fix =
      per_device > 0
          ? fmt::format("pick a micro that divides {} / {}{}", global, world_size,
                        nearby_divisors(per_device, micro))
          : fmt::format("pick a global batch that is a multiple of world_size x micro ({} x {})",
                        world_size, micro);
  return diagnostic("batch.global", format_integer(global),
                    fmt::format("not world_size ({}) x micro ({}) x accumulation for any whole "
                                "accumulation ({}); {}",
                                world_size, micro, ratio, fix));
}

}  // namespace

void validate_batch_geometry(const BatchConfig& batch, int64_t world_size,
                             std::vector<Diagnostic>& out) {
  if (world_size < 1) {
    out.push_back(diagnostic("world_size", format_integer(world_size),
                             "must be >= 1 (the number of data-parallel devices)"));
    return;
  }
  const int64_t global = batch.global;
  const int64_t micro = batch.micro;
  if (global <= 0 || micro < 0 || batch.bn_group < 0) return;  // the field table reports these

  if (micro > global) {
    out.push_back(diagnostic(
        "batch.micro", format_integer(micro),
        fmt::format("must be <= batch.global ({}); pick a micro-batch no larger than the global "
                    "batch, or 0 for global / world_size",
                    global)));
    return;
  }
  if (!accumulation(global, micro, world_size)) {
    out.push_back(micro > 0 ? indivisible_batch(global, micro, world_size)
                            : diagnostic("batch.global", format_integer(global),
                                         fmt::format("not divisible by world_size ({}); with "
                                                     "batch.micro = 0 each device takes global / "
                                                     "world_size, so pick a global batch that is a "
                                                     "multiple of {} or set batch.micro",
                                                     world_size, world_size)));
    return;
  }
  const int64_t effective_micro = micro_batch(global, micro, world_size);
  if (batch.bn_group > 0 && effective_micro % batch.bn_group != 0) {
    out.push_back(diagnostic(
        "batch.bn_group", format_integer(batch.bn_group),
        fmt::format("does not divide the micro-batch ({}); ghost batch norm needs whole groups, so "
                    "pick a bn_group that divides {}{} or 0 for the whole micro-batch",
                    effective_micro, effective_micro,
                    nearby_divisors(effective_micro, batch.bn_group))));
  }
}

void validate_schedule(const ScheduleConfig& schedule, std::vector<Diagnostic>& out,
                       const ReadContext* read) {
  const Codec<double> real;
  const Codec<int64_t> integer;
  const DurationCodec duration;
  const std::string warmup_epochs = "schedule.warmup_epochs";
  const std::string warmup_steps = "schedule.warmup_steps";
  const std::string warmup_fraction = "schedule.warmup_fraction";
  const std::string budget = "schedule.budget";

  // The groups of keys that say one thing in different units (core/config/exclusive_keys.h).
  const std::map<std::string, Choice> choices = {
      {warmup_epochs, choice(warmup_epochs, schedule.warmup_epochs, real)},
      {warmup_steps, choice(warmup_steps, schedule.warmup_steps, integer)},
      {warmup_fraction, choice(warmup_fraction, schedule.warmup_fraction, real)},
      {"schedule.epochs", choice("schedule.epochs", schedule.epochs, real)},
      {"schedule.steps", choice("schedule.steps", schedule.steps, integer)},
      {budget, choice(budget, schedule.budget_s, duration)}};
  for (const auto& group : exclusive_groups()) {
    if (!keys_intact(read, group.paths)) continue;
    std::vector<Choice> members;
    for (const auto& path : group.paths) members.push_back(choices.at(path));
    check_exclusive(members, group.exactly_one, "schedule", out);
  }

  // A wall-clock budget has no step count to measure an epoch- or step-based warmup against.
  if (schedule.budget_s && keys_intact(read, {budget, warmup_epochs, warmup_steps})) {
    const std::string why =
        "with schedule.budget only warmup_fraction is allowed (the number of steps is not known "
        "in advance); use schedule.warmup_fraction instead";
    if (schedule.warmup_epochs) {
      out.push_back(diagnostic("schedule.warmup_epochs", real.write(*schedule.warmup_epochs), why));
    }
    if (schedule.warmup_steps) {
      out.push_back(
          diagnostic("schedule.warmup_steps", integer.write(*schedule.warmup_steps), why));
    }
  }

  if (schedule.decay == "step" && schedule.milestones.empty() &&
      keys_intact(read, {"schedule.decay", "schedule.milestones"})) {
    out.push_back(diagnostic("schedule.decay", format_string(schedule.decay),
                             "needs schedule.milestones (the epochs at which the LR is multiplied "
                             "by gamma); add e.g. milestones = [30, 60, 80]"));
  }
  // Milestones are epochs; a budgeted run has no epoch count to place them on.
  if (schedule.budget_s && schedule.decay == "step" &&
      keys_intact(read, {budget, "schedule.decay"})) {
    out.push_back(diagnostic("schedule.decay", format_string(schedule.decay),
                             "with schedule.budget the decay must be constant, linear, poly or "
                             "cosine (step milestones are epochs, which a wall-clock budget does "
                             "not have)"));
  }

  // A warmup longer than the run, when both are in the same unit; in mixed units (warmup_steps
  // with epochs) it depends on the data size and the schedule itself reports it.
  if (schedule.steps && schedule.warmup_steps && *schedule.warmup_steps > *schedule.steps &&
      keys_intact(read, {warmup_steps, "schedule.steps"})) {
    out.push_back(diagnostic(warmup_steps, integer.write(*schedule.warmup_steps),
                             fmt::format("longer than the run (schedule.steps = {}); pick a warmup "
                                         "of at most {} steps",
                                         *schedule.steps, *schedule.steps)));
  }
  if (schedule.epochs && schedule.warmup_epochs && *schedule.warmup_epochs > *schedule.epochs &&
      keys_intact(read, {warmup_epochs, "schedule.epochs"})) {
    out.push_back(
        diagnostic(warmup_epochs, real.write(*schedule.warmup_epochs),
                   fmt::format("longer than the run (schedule.epochs = {}); pick a "
                               "warmup of at most {} epochs",
                               real.write(*schedule.epochs), real.write(*schedule.epochs))));
  }
}

namespace {

// Keys only one optimizer reads: set to anything but their default with another optimizer, they
// would be silently ignored, so they are errors naming the optimizer that reads them.
void only_for(const OptimConfig& optim, const char* owner, const char* key, bool at_default,
              std::string value, std::vector<Diagnostic>& out, const ReadContext* read) {
  if (at_default || optim.name == owner || !keys_intact(read, {key, "optim.name"})) return;
  out.push_back(diagnostic(key, std::move(value),
                           fmt::format("is read by optim.name = \"{}\" only (this config has "
                                       "\"{}\"); remove the key or change optim.name",
                                       owner, optim.name)));
}

// Muon's and Schedule-Free AdamW's own keys (core/optim/muon.h, schedule_free_adamw.h).
void validate_optimizer_keys(const OptimConfig& optim, std::vector<Diagnostic>& out,
                             const ReadContext* read) {
  const OptimConfig d;
  only_for(optim, "muon", "optim.ns_steps", optim.ns_steps == d.ns_steps,
           format_integer(optim.ns_steps), out, read);
  only_for(optim, "muon", "optim.ns_coefficients", optim.ns_coefficients == d.ns_coefficients,
           fmt::format("[{}]", fmt::join(optim.ns_coefficients, ", ")), out, read);
  only_for(optim, "muon", "optim.ns_dtype", optim.ns_dtype == d.ns_dtype,
           format_string(optim.ns_dtype), out, read);
  only_for(optim, "muon", "optim.muon_adjust_lr", optim.muon_adjust_lr == d.muon_adjust_lr,
           format_string(optim.muon_adjust_lr), out, read);
  only_for(optim, "schedulefree_adamw", "optim.poly_power", optim.poly_power == d.poly_power,
           format_float(optim.poly_power), out, read);
  only_for(optim, "schedulefree_adamw", "optim.weight_lr_power",
           optim.weight_lr_power == d.weight_lr_power, format_float(optim.weight_lr_power), out,
           read);
  if (optim.ns_coefficients.size() != 3 && keys_intact(read, {"optim.ns_coefficients"})) {
    out.push_back(diagnostic(
        "optim.ns_coefficients", fmt::format("[{}]", fmt::join(optim.ns_coefficients, ", ")),
        fmt::format("must hold 3 numbers (a, b, c) of the quintic iteration, found {}; torch's "
                    "are [3.4445, -4.775, 2.0315]",
                    optim.ns_coefficients.size())));
  }
  // Schedule-Free's evaluation weights are x = y + (1 - 1/beta1) (z - y): beta1 = 0 has none.
  if (optim.name == "schedulefree_adamw" && !(optim.betas[0] > 0.0) &&
      keys_intact(read, {"optim.betas", "optim.name"})) {
    out.push_back(diagnostic(
        "optim.betas",
        fmt::format("[{}, {}]", format_float(optim.betas[0]), format_float(optim.betas[1])),
        "beta1 must be > 0 for schedulefree_adamw (its evaluation weights divide by it); the "
        "package's default is 0.9"));
  }
}

}  // namespace

void validate_optim(const OptimConfig& optim, std::vector<Diagnostic>& out,
                    const ReadContext* read) {
  // optim.nesterov is read by sgd and lars only; optim.name = "nesterov" sets it (reader.h).
  const bool nesterov =
      optim.name == "nesterov" || (optim.nesterov && (optim.name == "sgd" || optim.name == "lars"));
  if (nesterov && !(optim.momentum > 0.0) &&
      keys_intact(read, {"optim.name", "optim.nesterov", "optim.momentum"})) {
    out.push_back(diagnostic(
        "optim.momentum", format_float(optim.momentum),
        fmt::format(
            "must be > 0 with Nesterov momentum ({}); set e.g. momentum = 0.9 or turn "
            "Nesterov off",
            optim.name == "nesterov" ? "optim.name = \"nesterov\"" : "optim.nesterov = true")));
  }
  const auto& impls = implementation_names();
  const bool known = std::find(impls.begin(), impls.end(), optim.implementation) != impls.end();
  const bool own_step = optim.name == "lars" || optim.name == "lamb" || optim.name == "muon" ||
                        optim.name == "schedulefree_adamw" || optim.name == "lion";
  if (known && optim.implementation != "auto" && !own_step &&
      keys_intact(read, {"optim.implementation", "optim.name"})) {
    out.push_back(diagnostic(
        "optim.implementation", format_string(optim.implementation),
        fmt::format("chooses the step code of lars, lamb, muon, schedulefree_adamw and lion only; "
                    "optim.name = \"{}\" is LibTorch's own: remove the key or set it to \"auto\"",
                    optim.name)));
  }
  validate_optimizer_keys(optim, out, read);
}

void validate_text(const ModelConfig& model, const DataConfig& data, std::vector<Diagnostic>& out,
                   const ReadContext* read) {
  if (model.next_sentence && !data.sentence_pair &&
      keys_intact(read, {"model.next_sentence", "data.sentence_pair"})) {
    out.push_back(diagnostic("model.next_sentence", "true",
                             "needs data.sentence_pair = true (the next-sentence labels come from "
                             "sentence pairs); set it or set next_sentence = false"));
  }
  // [CLS] text [SEP] needs 3 tokens; [CLS] a [SEP] b [SEP] needs 5.
  const int64_t shortest = data.sentence_pair ? 5 : 3;
  if (data.seq_len > 0 && data.seq_len < shortest &&
      keys_intact(read, {"data.seq_len", "data.sentence_pair"})) {
    out.push_back(diagnostic(
        "data.seq_len", format_integer(data.seq_len),
        fmt::format("must be >= {}: [CLS], [SEP]{} and at least one token of text per sequence",
                    shortest, data.sentence_pair ? ", a second [SEP] (data.sentence_pair)" : "")));
  }
  if (data.seq_len_phase2 > 0 && data.seq_len_phase2 < data.seq_len &&
      keys_intact(read, {"data.seq_len_phase2", "data.seq_len"})) {
    out.push_back(diagnostic("data.seq_len_phase2", format_integer(data.seq_len_phase2),
                             fmt::format("must be 0 (no second phase) or >= data.seq_len ({}): the "
                                         "second phase trains on longer sequences",
                                         data.seq_len)));
  }
  for (const auto& [key, length] : {std::pair<const char*, int64_t>{"data.seq_len", data.seq_len},
                                    {"data.seq_len_phase2", data.seq_len_phase2}}) {
    if (length > model.max_seq_len && keys_intact(read, {key, "model.max_seq_len"})) {
      out.push_back(diagnostic(key, format_integer(length),
                               fmt::format("longer than model.max_seq_len ({}), the rows of the "
                                           "position embedding; raise model.max_seq_len or "
                                           "shorten {}",
                                           model.max_seq_len, key)));
    }
  }
}

void validate_synthetic(const DataConfig& data, std::vector<Diagnostic>& out,
                        const ReadContext* read) {
  const std::pair<const char*, int64_t> keys[] = {
      {"data.synthetic_channels", data.synthetic_channels},
      {"data.synthetic_size", data.synthetic_size},
      {"data.synthetic_classes", data.synthetic_classes}};
  for (const auto& [key, value] : keys) {
    if (value != 0 && data.dataset != "synthetic" && keys_intact(read, {key, "data.dataset"})) {
      out.push_back(diagnostic(key, format_integer(value),
                               fmt::format("only the synthetic data set is generated to a shape; "
                                           "data.dataset = \"{}\" has its own: remove the key "
                                           "or set dataset = \"synthetic\"",
                                           data.dataset)));
    }
  }
  // The generator's minimums (experiments/data/synthetic_images.h): its strokes keep 4 pixels
  // from the border, and a classifier needs two classes.
  if (data.synthetic_size > 0 && data.synthetic_size < 8 &&
      keys_intact(read, {"data.synthetic_size"})) {
    out.push_back(diagnostic("data.synthetic_size", format_integer(data.synthetic_size),
                             "must be 0 (28) or at least 8 pixels"));
  }
  if (data.synthetic_classes == 1 && keys_intact(read, {"data.synthetic_classes"})) {
    out.push_back(diagnostic("data.synthetic_classes", "1",
                             "must be 0 (10) or at least 2: one class is nothing to classify"));
  }
}

void validate_targets(const ExperimentConfig& config, std::vector<Diagnostic>& out,
                      const ReadContext* read) {
  const TrainConfig& train = config.train;
  for (size_t i = 0; i < train.targets.size(); ++i) {
    const Target& target = train.targets[i];
    const std::string entry = fmt::format("train.target[{}]", i);
    if (auto rule = target_value_rule(target.metric, target.value);
        rule && keys_intact(read, {entry + ".metric", entry + ".value"})) {
      out.push_back(diagnostic(entry + ".value", format_float(target.value), *rule));
    }
    if (auto rule = validation_split_rule(target.metric, config.data);
        rule && keys_intact(read, {entry + ".metric", "data.val_size"})) {
      out.push_back(diagnostic(entry + ".metric", format_string(target.metric), *rule));
    }
  }
  if (train.stop_at_target && train.targets.empty() &&
      keys_intact(read, {"train.stop_at_target", "train.target"})) {
    out.push_back(diagnostic("train.stop_at_target", "true",
                             "needs a train.target to stop at; add e.g. target = { metric = "
                             "\"test_acc\", value = 0.9 } or set stop_at_target = false"));
  }
}

std::optional<std::string> validation_split_rule(const std::string& metric,
                                                 const DataConfig& data) {
  if (!is_validation_metric(metric) || data.val_size > 0) return std::nullopt;
  return "needs a validation split held out of the training set; set data.val_size (e.g. "
         "val_size = 5000)";
}

namespace {

// A masked-language model needs the text data set and an image classifier an image data set;
// checked here, before any data is loaded, rather than by the task factory after it.
void check_family_match(const ExperimentConfig& config, const LoadOptions& options,
                        std::vector<Diagnostic>& out) {
  auto contains = [](const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  const std::string& arch = config.model.arch;
  const std::string& dataset = config.data.dataset;
  if (!contains(options.model_archs, arch) || !contains(options.datasets, dataset)) return;
  const bool text_arch = contains(options.text_archs, arch);
  const bool text_data = contains(options.text_datasets, dataset);
  if (text_arch == text_data) return;
  std::vector<std::string> fitting;
  for (const auto& name : options.model_archs) {
    if (contains(options.text_archs, name) == text_data) fitting.push_back(name);
  }
  out.push_back(diagnostic(
      "model.arch", format_string(arch),
      fmt::format("{}; data.dataset = \"{}\" {}: use one of {}",
                  text_arch ? "a masked-language model" : "an image classifier", dataset,
                  text_data ? "is text" : "is an image data set", fmt::join(fitting, ", "))));
}

}  // namespace

void validate_registries(const ExperimentConfig& config, const LoadOptions& options,
                         std::vector<Diagnostic>& out) {
  // The registries live in models/ and experiments/, which core/ must not include; the caller
  // passes their names in.
  if (!options.model_archs.empty()) {
    if (auto message = one_of(options.model_archs)(config.model.arch)) {
      out.push_back(diagnostic("model.arch", format_string(config.model.arch),
                               "unknown architecture; " + *message));
    }
  }
  if (!options.datasets.empty()) {
    if (auto message = one_of(options.datasets)(config.data.dataset)) {
      out.push_back(diagnostic("data.dataset", format_string(config.data.dataset),
                               "unknown dataset; " + *message));
    }
  }
  check_family_match(config, options, out);
}

std::vector<Diagnostic> validate_experiment(const ExperimentConfig& config,
                                            const LoadOptions& options, const ReadContext* read) {
  std::vector<Diagnostic> out;
  for (const auto& section : experiment_sections()) section.check(config, out);
  if (keys_intact(read, {"batch.global", "batch.micro", "batch.bn_group"})) {
    validate_batch_geometry(config.batch, options.world_size, out);
  }
  validate_batch_schedule(config, options.world_size, out, read);
  validate_schedule(config.schedule, out, read);
  validate_optim(config.optim, out, read);
  validate_text(config.model, config.data, out, read);
  validate_synthetic(config.data, out, read);
  validate_targets(config, out, read);
  validate_registries(config, options, out);
  validate_learning_rates(config, out, read);
  validate_batch_rules(config, out, read);
  std::vector<Diagnostic> sized;
  validate_data_size_rules(config, options, out, sized, read);
  validate_batch_schedule_size_rules(config, options, out, sized, read);
  out.insert(out.end(), sized.begin(), sized.end());
  return out;
}

}  // namespace batchlab::config
