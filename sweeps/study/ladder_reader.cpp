#include "sweeps/study/ladder_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/config/limits.h"
#include "core/config/suggest.h"
#include "core/config/toml_text.h"

namespace batchlab::sweeps {

namespace {

const std::vector<std::string> kLadderKeys = {"start",          "ceiling",     "min_gain",
                                              "flat_doublings", "budget_stop", "censored_rungs"};
constexpr const char* kBatchKey = "batch.global";
// A ladder of more doublings would take longer than any study is meant to run, and start x 2^k
// must stay a count a config accepts.
constexpr int64_t kMaxDoublings = 20;

std::optional<double> number_of(const toml::node& node) {
  if (const auto* i = node.as_integer()) return static_cast<double>(i->get());
  if (const auto* f = node.as_floating_point()) return f->get();
  return std::nullopt;
}

// The doublings from `start` to `ceiling` when ceiling = start x 2^k (k >= 1), else nullopt.
std::optional<int64_t> doublings(int64_t start, int64_t ceiling) {
  int64_t k = 0;
  for (int64_t b = start; b < ceiling && k <= kMaxDoublings; b *= 2) ++k;
  if (k == 0 || k > kMaxDoublings || (start << k) != ceiling) return std::nullopt;
  return k;
}

// What a ceiling that is not start x 2^k should be: the powers-of-two multiples around it.
std::string ceiling_rule(int64_t start, int64_t ceiling) {
  if (ceiling <= start) {
    return fmt::format("must be above start ({}): start x 2^k, e.g. {} or {}", start, 2 * start,
                       4 * start);
  }
  int64_t below = start;
  while (below * 2 <= ceiling) below *= 2;
  if (below == start) {
    return fmt::format("must be start x 2^k, a power-of-two multiple of start ({}): nearest {}",
                       start, 2 * start);
  }
  return fmt::format("must be start x 2^k, a power-of-two multiple of start ({}): nearest {} or {}",
                     start, below, 2 * below);
}

// study.ladder.start or .ceiling: a batch size.
std::optional<int64_t> ladder_batch(const toml::table& table, const char* key, Location where,
                                    std::vector<LadderProblem>& problems) {
  const toml::node* v = table.get(key);
  if (v == nullptr) {
    problems.push_back({where, fmt::format("study.ladder.{}", key), "",
                        "missing; a ladder needs its start and ceiling batch sizes"});
    return std::nullopt;
  }
  const auto* i = v->as_integer();
  if (i == nullptr || i->get() < 1 || i->get() > config::kMaxBatch) {
    problems.push_back(
        {location_of(*v), fmt::format("study.ladder.{}", key), config::render_node(*v),
         fmt::format("must be a batch size: an integer in [1, {}]", config::kMaxBatch)});
    return std::nullopt;
  }
  return i->get();
}

// min_gain (> 1), flat_doublings (an integer in [1, k], k the ladder's doublings when known),
// budget_stop and censored_rungs (an integer in [0, k]).
void read_ladder_rule(const toml::table& table, std::optional<int64_t> k, LadderSpec& ladder,
                      std::vector<LadderProblem>& problems) {
  if (const toml::node* v = table.get("min_gain")) {
    const auto x = number_of(*v);
    if (!x || !(*x > 1.0) || !std::isfinite(*x)) {
      problems.push_back({location_of(*v), "study.ladder.min_gain", config::render_node(*v),
                          "must be a number > 1: the factor by which the steps to target must "
                          "fall per doubling of the batch for the ladder to go on, e.g. 1.3"});
    } else {
      ladder.min_gain = *x;
    }
  }
  if (const toml::node* v = table.get("flat_doublings")) {
    const int64_t most = k.value_or(kMaxDoublings);
    if (!v->is_integer() || v->as_integer()->get() < 1 || v->as_integer()->get() > most) {
      problems.push_back(
          {location_of(*v), "study.ladder.flat_doublings", config::render_node(*v),
           fmt::format("must be an integer in [1, {}]: how many doublings in a row, each saving "
                       "less than min_gain, end the ladder (no more than the ladder's {}doublings)",
                       most, k ? fmt::format("{} ", *k) : std::string())});
    } else {
      ladder.flat_doublings = v->as_integer()->get();
    }
  }
  if (const toml::node* v = table.get("budget_stop")) {
    if (!v->is_boolean()) {
      problems.push_back({location_of(*v), "study.ladder.budget_stop", config::render_node(*v),
                          "must be true or false: whether a batch whose cap (from max_samples) "
                          "is below the steps a seed needed at the batch under it stays closed"});
    } else {
      ladder.budget_stop = v->as_boolean()->get();
    }
  }
  if (const toml::node* v = table.get("censored_rungs")) {
    const int64_t most = k.value_or(kMaxDoublings);
    if (!v->is_integer() || v->as_integer()->get() < 0 || v->as_integer()->get() > most) {
      problems.push_back(
          {location_of(*v), "study.ladder.censored_rungs", config::render_node(*v),
           fmt::format("must be an integer in [0, {}]: how many censored batches a line that has "
                       "not reached the target yet may climb past (0: the first one ends it)",
                       most)});
    } else {
      ladder.censored_rungs = v->as_integer()->get();
    }
  }
}

}  // namespace

// [study.ladder]: start and ceiling (batch sizes, ceiling = start x 2^k, at most 20 doublings),
// min_gain and flat_doublings; every problem at once.
std::optional<LadderSpec> read_ladder(const toml::node& node,
                                      std::vector<LadderProblem>& problems) {
  const auto* table = node.as_table();
  if (table == nullptr) {
    problems.push_back({location_of(node), "study.ladder", config::render_node(node),
                        "must be a table: start, ceiling, min_gain, flat_doublings, e.g. "
                        "ladder = { start = 256, ceiling = 8192, min_gain = 1.3 }"});
    return std::nullopt;
  }
  LadderSpec ladder;
  ladder.where = location_of(node);
  const size_t before = problems.size();
  for (auto&& [key, value] : *table) {
    const std::string name(key.str());
    if (std::find(kLadderKeys.begin(), kLadderKeys.end(), name) != kLadderKeys.end()) continue;
    auto close = config::closest_match(name, kLadderKeys);
    problems.push_back(
        {location_of(key), "study.ladder." + name, config::render_node(value),
         close ? fmt::format("unknown key, did you mean study.ladder.{}?", *close)
               : "unknown key; [study.ladder] has " + config::join_choices(kLadderKeys, " and ")});
  }
  const auto start = ladder_batch(*table, "start", ladder.where, problems);
  const auto ceiling = ladder_batch(*table, "ceiling", ladder.where, problems);
  std::optional<int64_t> k;
  if (start && ceiling && !(k = doublings(*start, *ceiling))) {
    const toml::node& c = *table->get("ceiling");
    const bool too_many = *ceiling > *start && (*ceiling / *start) > (int64_t{1} << kMaxDoublings);
    problems.push_back({location_of(c), "study.ladder.ceiling", config::render_node(c),
                        too_many ? fmt::format("must be at most start x 2^{} ({} doublings)",
                                               kMaxDoublings, kMaxDoublings)
                                 : ceiling_rule(*start, *ceiling)});
  }
  read_ladder_rule(*table, k, ladder, problems);
  if (problems.size() != before) return std::nullopt;
  ladder.start = *start;
  ladder.ceiling = *ceiling;
  return ladder;
}

// The ladder's batches as a batch.global axis (the last dimension: a line's batches are
// consecutive in the plan), unless the spec gives batch.global itself, which is an error: the
// batches would come from two places.
std::vector<LadderProblem> add_ladder_batches(const LadderSpec& ladder, SweepSpec& spec,
                                              SpecStorage& storage) {
  std::vector<LadderProblem> problems;
  const std::string rule =
      "the batches come from [study.ladder] (start, doubling up to ceiling): remove this "
      "batch.global or the ladder";
  for (const auto& dim : spec.dimensions) {
    for (const auto& axis : dim.axes) {
      if (axis.key != kBatchKey) continue;
      problems.push_back({axis.where, axis.key, "", rule});
    }
  }
  for (const auto& s : spec.set) {
    if (s.key != kBatchKey) continue;
    problems.push_back({s.value.where, "[set] " + s.key, s.value.text, rule});
  }
  for (const auto& w : spec.whens) {
    for (const auto& s : w.settings) {
      if (s.key != kBatchKey) continue;
      problems.push_back({s.value.where, s.key, s.value.text, rule});
    }
  }
  if (!problems.empty()) return problems;
  toml::array batches;
  for (int64_t b = ladder.start; b <= ladder.ceiling; b *= 2) batches.push_back(b);
  storage.holders.push_back(toml::table{{"batches", std::move(batches)}});
  const toml::array& held = *storage.holders.back().get_as<toml::array>("batches");
  Dimension dim;
  dim.kind = Dimension::Kind::grid;
  dim.where = ladder.where;
  Axis axis;
  axis.key = kBatchKey;
  axis.where = ladder.where;
  for (const auto& node : held) axis.values.push_back({&node, display_text(node), ladder.where});
  dim.axes.push_back(std::move(axis));
  spec.dimensions.push_back(std::move(dim));
  return problems;
}

}  // namespace batchlab::sweeps
