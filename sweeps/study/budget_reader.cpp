// Reading a spec's [search] section (spec.h BudgetSearchSpec): a fixed-budget search per cell.
// Every rule is checked here, at `sweep plan`, with its file:line:col, before anything runs; what
// only the expanded configs can show (a knob value the experiment refuses, lines whose searches
// would differ in size) is plan_budget_search's (sweeps/study/budget_plan.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/config/overrides.h"
#include "core/config/suggest.h"
#include "core/config/toml_text.h"
#include "sweeps/spec_reader.h"

namespace batchlab::sweeps {

namespace {

const std::vector<std::string> kSearchKeys = {"budget_samples", "eta",    "knobs",  "lr_factor",
                                              "lr_points",      "method", "metric", "points",
                                              "rungs",          "when"};

// Keys the search sets on every trial itself: a spec may not assign them (a fixed optim.base_lr is
// the centre of the rates; the schedule's length is the budget, so it may be set but not searched).
const std::vector<SpecReader::OwnedKey> kSearchOwned = {
    {"optim.base_lr", true,
     "the search tries the rates itself (lr_points around the job's optim.base_lr): give the "
     "centre in the base, [set] or [when], never as an axis or a knob"},
    {"schedule.epochs", true,
     "the budget of every trial: fixed for the whole spec, never swept or searched"},
    {"schedule.steps", true,
     "the budget of every trial: fixed for the whole spec, never swept or searched"},
    {"schedule.budget", false,
     "a wall-clock budget differs between trials that share a rung: give schedule.epochs"},
    {"train.eval_every", false, "set by the search: it evaluates at every rung"},
    {"train.evals_per_octave", false, "set by the search: it evaluates at every rung"},
    {"train.eval_every_steps", false, "set by the search: it evaluates at every rung"},
    {"train.target", false, "a fixed-budget search has no target: it compares final metrics"},
    {"train.stop_at_target", false,
     "a fixed-budget search has no target: it compares final metrics"},
};

std::optional<double> search_number(const toml::node& node) {
  if (const auto* i = node.as_integer()) return static_cast<double>(i->get());
  if (const auto* f = node.as_floating_point()) return f->get();
  return std::nullopt;
}

const SpecReader::OwnedKey* search_owned(const std::string& key) {
  for (const auto& o : kSearchOwned) {
    if (key == o.key) return &o;
  }
  return nullptr;
}

}  // namespace

void SpecReader::read_budget_search(const toml::table& doc, SweepSpec& spec) {
  const toml::table* table = table_at(doc, "search");
  if (table == nullptr) return;
  BudgetSearchSpec search;
  search.where = location_of(*table);
  if (spec.study) {
    error(search.where, "search", "",
          "a spec has either [study] (steps to a target) or [search] (a fixed budget), not both");
  }
  for (auto&& [key, node] : *table) {
    const std::string name(key.str());
    if (std::find(kSearchKeys.begin(), kSearchKeys.end(), name) != kSearchKeys.end()) continue;
    auto close = config::closest_match(name, kSearchKeys);
    error(location_of(key), "search." + name, config::render_node(node),
          close ? fmt::format("unknown key, did you mean search.{}?", *close)
                : "unknown key; [search] has " + config::join_choices(kSearchKeys, " and "));
  }
  read_budget_search_numbers(*table, search);
  if (const toml::node* knobs = table->get("knobs")) {
    read_search_knobs(*knobs, "", {}, search);
  }
  if (const toml::node* whens = table->get("when")) {
    const auto* body = whens->as_table();
    if (body == nullptr) {
      error(location_of(*whens), "search.when", config::render_node(*whens),
            "must be tables of knobs, e.g. [search.when.\"optim.name=lars\"] "
            "\"optim.trust_coefficient\" = [0.001, 0.01]");
    } else {
      for (auto&& [condition, knobs] : *body) {
        read_search_condition(std::string(condition.str()), location_of(condition), knobs, spec,
                              search);
      }
    }
  }
  check_owned_keys(spec, kSearchOwned, "search");
  if (search.budget_samples) {
    for (const char* key : {"schedule.epochs", "schedule.steps"}) {
      for (const auto& s : spec.set) {
        if (s.key == key) {
          error(s.value.where, std::string("[set] ") + key, s.value.text,
                "the budget is search.budget_samples: give it once (remove this, or "
                "budget_samples)");
        }
      }
    }
  }
  spec.search = std::move(search);
}

void SpecReader::read_budget_search_numbers(const toml::table& table, BudgetSearchSpec& search) {
  auto integer = [&](const char* key, int64_t low, int64_t high, int64_t& out) {
    const toml::node* v = table.get(key);
    if (v == nullptr) return;
    const auto* i = v->as_integer();
    if (i == nullptr || i->get() < low || i->get() > high) {
      error(location_of(*v), fmt::format("search.{}", key), config::render_node(*v),
            fmt::format("must be an integer from {} to {}", low, high));
      return;
    }
    out = i->get();
  };
  integer("eta", 2, 16, search.eta);
  integer("rungs", 1, 12, search.rungs);
  integer("lr_points", 1, 64, search.lr_points);
  if (table.get("points") != nullptr) {
    int64_t points = 0;
    integer("points", 1, 100000, points);
    if (points > 0) search.points = points;
  }
  if (table.get("budget_samples") != nullptr) {
    int64_t samples = 0;
    integer("budget_samples", 1, int64_t{1} << 50, samples);
    if (samples > 0) search.budget_samples = samples;
  }
  if (const toml::node* v = table.get("lr_factor")) {
    const auto f = search_number(*v);
    if (!f || !(*f > 1.0) || !std::isfinite(*f)) {
      error(location_of(*v), "search.lr_factor", config::render_node(*v),
            "must be a number above 1 (the spacing of the rates: base_lr x lr_factor^k)");
    } else {
      search.lr_factor = *f;
    }
  }
  if (const toml::node* v = table.get("method")) {
    if (!v->is_string() || v->as_string()->get() != "halving") {
      error(location_of(*v), "search.method", config::render_node(*v),
            "must be \"halving\" (successive halving, the one method a fixed-budget search has)");
    }
  }
  if (const toml::node* v = table.get("metric")) {
    const std::string m = v->is_string() ? v->as_string()->get() : "";
    if (m != "val_loss" && m != "val_acc") {
      error(location_of(*v), "search.metric", config::render_node(*v),
            "must be \"val_loss\" or \"val_acc\": selection uses held-out data only (the test "
            "split is reported, never selected on)");
    } else {
      search.metric = m;
    }
  }
}

void SpecReader::read_search_condition(const std::string& condition, Location where,
                                       const toml::node& knobs, const SweepSpec& spec,
                                       BudgetSearchSpec& search) {
  const std::string path = fmt::format("[search.when.\"{}\"]", condition);
  auto matches = read_conditions(condition, where, path, "[search.when.\"optim.name=lars\"]", spec);
  if (matches) read_search_knobs(knobs, condition, *matches, search);
}

void SpecReader::read_search_knobs(const toml::node& node, const std::string& condition,
                                   const std::vector<Match>& conditions, BudgetSearchSpec& search) {
  const std::string where =
      condition.empty() ? "[search.knobs]" : fmt::format("[search.when.\"{}\"]", condition);
  const auto* table = node.as_table();
  if (table == nullptr || table->empty()) {
    error(location_of(node), where, config::render_node(node),
          "must be a table of knobs, each a non-empty array of the values to try, e.g. "
          "\"schedule.warmup_fraction\" = [0.02, 0.1]");
    return;
  }
  for (const auto& entry : flatten(*table, where)) {
    auto axis = read_axis(entry, where);
    if (!axis) continue;
    if (const auto* o = search_owned(entry.key); o != nullptr) {
      error(entry.where, where + " " + entry.key, config::render_node(*entry.node), o->rule);
      continue;
    }
    if (swept_.count(entry.key) > 0) {
      error(entry.where, where + " " + entry.key, config::render_node(*entry.node),
            fmt::format("is already swept ({}): a key is either a cell's coordinate or a knob the "
                        "search tunes within the cell",
                        swept_.at(entry.key).second));
      continue;
    }
    SearchKnob knob;
    knob.key = entry.key;
    knob.values = std::move(axis->values);
    knob.condition = condition;
    knob.conditions = conditions;
    knob.where = entry.where;
    search.knobs.push_back(std::move(knob));
  }
}

}  // namespace batchlab::sweeps
