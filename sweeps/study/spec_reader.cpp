// Reading a spec's [study] section (spec.h StudySpec): every rule is checked here, at `sweep plan`,
// and reported with its file:line:col before anything runs.
#include "sweeps/spec_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/config/limits.h"
#include "core/config/schema.h"
#include "core/config/suggest.h"
#include "core/config/target_rules.h"
#include "core/config/toml_text.h"
#include "sweeps/study/ladder_reader.h"

namespace batchlab::sweeps {

namespace {

const std::vector<std::string> kStudyKeys = {"bound",
                                             "evals_per_octave",
                                             "ladder",
                                             "later_seeds",
                                             "lr_center",
                                             "lr_factor",
                                             "lr_points_max",
                                             "max_samples",
                                             "max_steps",
                                             "target",
                                             "prune_min_evals",
                                             "race",
                                             "prune_min_fraction",
                                             "warmup"};

// The learning rate may be given a fixed value ([set], [when]: the first batch's centre), never an
// axis.
const std::vector<SpecReader::OwnedKey> kStudyOwnedKeys = {
    {"optim.base_lr", true,
     "the study searches the learning rate of every cell: remove it from the grid (give the first "
     "centre with optim.base_lr in the base, [set] or [when], or [study] lr_center)"},
    {"schedule.steps", false, "each trial's length is the study's cap: use [study] max_steps"},
    {"schedule.epochs", false, "each trial's length is the study's cap: use [study] max_samples"},
    {"schedule.budget", false, "each trial's length is the study's cap: use [study] max_steps"},
    {"train.evals_per_octave", false, "set by the study: use [study] evals_per_octave"},
    {"train.target", false, "set by the study: use [study] target"},
    {"train.stop_at_target", false, "set by the study (a trial stops at the study's target)"},
};

constexpr double kMaxLrPoints = 100;
constexpr double kMaxEvalsPerOctave = 1000;

std::optional<double> number_of(const toml::node& node) {
  if (const auto* i = node.as_integer()) return static_cast<double>(i->get());
  if (const auto* f = node.as_floating_point()) return f->get();
  return std::nullopt;
}

}  // namespace

void SpecReader::read_study(const toml::table& doc, SweepSpec& spec) {
  const toml::table* table = table_at(doc, "study");
  if (table == nullptr) return;
  StudySpec study;
  study.where = location_of(*table);
  for (auto&& [key, node] : *table) {
    const std::string name(key.str());
    if (std::find(kStudyKeys.begin(), kStudyKeys.end(), name) != kStudyKeys.end()) continue;
    auto close = config::closest_match(name, kStudyKeys);
    error(location_of(key), "study." + name, config::render_node(node),
          close ? fmt::format("unknown key, did you mean study.{}?", *close)
                : "unknown key; [study] has " + config::join_choices(kStudyKeys, " and "));
  }
  // A number under `key` that satisfies `ok`, else an error with `rule`.
  auto number = [&](const char* key, bool integer, auto ok, const char* rule) {
    std::optional<double> out;
    const toml::node* node = table->get(key);
    if (node == nullptr) return out;
    const auto value = number_of(*node);
    if (!value || (integer && !node->is_integer()) || !ok(*value)) {
      error(location_of(*node), fmt::format("study.{}", key), config::render_node(*node), rule);
      return out;
    }
    return value;
  };
  if (const toml::node* target = table->get("target")) {
    read_study_target(*target, study);
  } else {
    error(study.where, "study.target", "",
          "missing; give the goal, e.g. target = { metric = \"val_acc\", value = 0.88 }");
  }
  if (auto v = number(
          "lr_factor", false, [](double x) { return x > 1.0; },
          "must be a number > 1 (the spacing of the learning-rate points)")) {
    study.lr_factor = *v;
  }
  // Integer keys are bounded above as well: the value is converted to a 64-bit count, and the steps
  // and samples derived from it must not overflow (core/config/limits.h).
  if (auto v = number(
          "lr_points_max", true, [](double x) { return x >= 3 && x <= kMaxLrPoints; },
          "must be an integer >= 3: the centre and its two neighbours at least, and <= 100 (each "
          "point is a factor of lr_factor more)")) {
    study.lr_points_max = static_cast<int64_t>(*v);
  }
  study.lr_center = number(
      "lr_center", false, [](double x) { return x > 0.0; }, "must be a learning rate > 0");
  if (auto v = number(
          "max_samples", true, [](double x) { return x > 0 && x <= config::kMaxSamples; },
          "must be an integer > 0 (training samples per trial at most) and <= 1000000000000 "
          "(10^12; the trial's schedule.steps is derived from it)")) {
    study.max_samples = static_cast<int64_t>(*v);
  }
  if (auto v = number(
          "max_steps", true, [](double x) { return x > 0 && x <= config::kMaxSteps; },
          "must be an integer > 0 (updates per trial at most) and <= 1000000000000 (10^12)")) {
    study.max_steps = static_cast<int64_t>(*v);
  }
  if (table->get("max_samples") != nullptr && table->get("max_steps") != nullptr) {
    const toml::node& second = *table->get("max_steps");
    error(location_of(second), "study.max_steps", config::render_node(second),
          "give the per-trial cap once: max_samples or max_steps, not both");
  }
  if (auto v = number(
          "evals_per_octave", true, [](double x) { return x >= 1 && x <= kMaxEvalsPerOctave; },
          "must be an integer >= 1 (evaluations per doubling of the step count) and <= 1000")) {
    study.evals_per_octave = static_cast<int64_t>(*v);
  }
  if (auto v = number(
          "warmup", false, [](double x) { return x >= 0.0 && x < 1.0; },
          "must be a fraction of the cap in [0, 1), e.g. 0.05")) {
    study.warmup = *v;
  }
  if (auto v = number(
          "prune_min_evals", true, [](double x) { return x >= 0 && x <= kMaxEvalsPerOctave; },
          "must be an integer >= 0 (evaluations past warmup before a trial may be pruned) and "
          "<= 1000")) {
    study.prune_min_evals = static_cast<int64_t>(*v);
  }
  if (auto v = number(
          "prune_min_fraction", false, [](double x) { return x >= 0.0 && x <= 1.0; },
          "must be a fraction of the race leader's steps to target in [0, 1], e.g. 0.5 (1: a "
          "trial is only ever stopped by the race, never pruned)")) {
    study.prune_min_fraction = *v;
  }
  read_study_search_keys(*table, study);
  if (const toml::node* node = table->get("ladder")) {
    std::vector<LadderProblem> problems;
    study.ladder = read_ladder(*node, problems);
    for (auto& p : problems) error(p.where, p.key, p.value, p.rule);
  }
  if (const toml::node* node = table->get("bound")) read_study_bound(*node, spec, study);
  spec.study = study;
  check_owned_keys(spec, kStudyOwnedKeys, "study");
  if (study.ladder) {
    for (auto& p : add_ladder_batches(*study.ladder, spec, *storage_)) {
      error(p.where, p.key, p.value, p.rule);
    }
  }
}

void SpecReader::read_study_search_keys(const toml::table& table, StudySpec& study) {
  if (const toml::node* v = table.get("race")) {
    if (v->is_boolean()) {
      study.race = v->as_boolean()->get();
    } else {
      error(location_of(*v), "study.race", config::render_node(*v),
            "must be true (race and prune the trials of a cell) or false (every point runs to "
            "the target or its cap: the plain grid a study's cost is measured against)");
    }
  }
  if (const toml::node* v = table.get("later_seeds")) {
    const std::string name = v->is_string() ? v->as_string()->get() : "";
    if (name == "search") {
      study.later_seeds = LaterSeeds::search;
    } else if (name == "neighbours") {
      study.later_seeds = LaterSeeds::neighbours;
    } else if (name == "rerun_best") {
      study.later_seeds = LaterSeeds::rerun_best;
    } else {
      error(location_of(*v), "study.later_seeds", config::render_node(*v),
            "must be \"search\" (every seed searches its own rates), \"neighbours\" (the seeds "
            "after the first run the first seed's best rate at the same batch and its two "
            "neighbours) or \"rerun_best\" (they run that best rate alone)");
    }
  }
}

void SpecReader::read_study_bound(const toml::node& node, const SweepSpec& spec, StudySpec& study) {
  const auto* table = node.as_table();
  const toml::node* reference = table != nullptr ? table->get("reference") : nullptr;
  const toml::node* factor = table != nullptr ? table->get("factor") : nullptr;
  bool ok = true;
  if (table != nullptr) {
    for (auto&& [key, value] : *table) {
      if (key.str() == "reference" || key.str() == "factor") continue;
      error(location_of(key), fmt::format("study.bound.{}", key.str()), config::render_node(value),
            "unknown key; [study.bound] has reference and factor");
      ok = false;
    }
  }
  if (reference == nullptr || !reference->is_string()) {
    error(location_of(node), "study.bound.reference",
          reference != nullptr ? config::render_node(*reference) : "",
          "give the reference lines as a condition on swept keys, e.g. reference = "
          "\"optim.name=lamb\": the other lines' caps are bounded by their fit");
    return;
  }
  StudyBoundSpec bound;
  bound.where = location_of(node);
  bound.reference = reference->as_string()->get();
  auto conditions = read_conditions(bound.reference, location_of(*reference),
                                    "study.bound.reference", "\"optim.name=lamb\"", spec);
  ok = ok && conditions.has_value();
  if (conditions) bound.conditions = std::move(*conditions);
  if (factor != nullptr) {
    const auto value = number_of(*factor);
    if (!value || !(*value > 1.0) || *value > 1000.0) {
      error(location_of(*factor), "study.bound.factor", config::render_node(*factor),
            "must be a number in (1, 1000]: how many times the reference's steps a bounded line "
            "may train, e.g. 4");
      ok = false;
    } else {
      bound.factor = *value;
    }
  }
  if (ok) study.bound = std::move(bound);
}

void SpecReader::read_study_target(const toml::node& node, StudySpec& study) {
  study.target_where = location_of(node);
  const auto* target = node.as_table();
  const toml::node* metric = target != nullptr ? target->get("metric") : nullptr;
  const toml::node* value = target != nullptr ? target->get("value") : nullptr;
  if (metric == nullptr || value == nullptr || target->size() != 2) {
    error(study.target_where, "study.target", config::render_node(node),
          "must be a table of metric and value, e.g. { metric = \"val_acc\", value = 0.88 }");
    return;
  }
  const auto& names = config::target_metric_names();
  const std::string name = metric->is_string() ? metric->as_string()->get() : "";
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    auto close = config::closest_match(name, names);
    error(location_of(*metric), "study.target.metric", config::render_node(*metric),
          fmt::format("no such metric{}; a study's target is val_acc or val_loss",
                      close ? fmt::format(" (did you mean {}?)", *close) : std::string()));
    return;
  }
  if (!config::is_validation_metric(name)) {
    error(location_of(*metric), "study.target.metric", config::render_node(*metric),
          "a study selects on held-out validation data, never on the test or training set: use a "
          "val_ metric (val_acc or val_loss) and hold out a validation split with data.val_size");
    return;
  }
  const auto v = number_of(*value);
  const auto rule =
      v ? config::target_value_rule(name, *v) : std::optional<std::string>("must be a number");
  if (rule) {
    error(location_of(*value), "study.target.value", config::render_node(*value), *rule);
    return;
  }
  study.target = {name, *v};
}

void SpecReader::check_owned_keys(const SweepSpec& spec, const std::vector<OwnedKey>& owned,
                                  const char* section) {
  for (const auto& o : owned) {
    for (const auto& dim : spec.dimensions) {
      for (const auto& axis : dim.axes) {
        if (axis.key != o.key) continue;
        error(axis.where, axis.key, "",
              fmt::format("cannot be swept in a {}: {}", section, o.rule));
      }
    }
    if (o.fixed_value_allowed) continue;
    for (const auto& s : spec.set) {
      if (s.key == o.key) error(s.value.where, "[set] " + s.key, s.value.text, o.rule);
    }
    for (const auto& w : spec.whens) {
      for (const auto& s : w.settings) {
        if (s.key == o.key) error(s.value.where, s.key, s.value.text, o.rule);
      }
    }
  }
}

}  // namespace batchlab::sweeps
