#include "analysis/optimizer_settings.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace batchlab::analysis {

namespace {

// Which of the optimizer's own knobs a name uses (core/optim/factory.cpp group_options).
struct Uses {
  bool momentum = false, nesterov = false, betas = false, eps = false, trust_coefficient = false;
  bool trust_ratio = false, lr_in_momentum = false, lamb_only = false;
  bool muon = false, schedule_free = false;
};

Uses uses_of(const std::string& name) {
  Uses u;
  const bool sgd = name == "sgd" || name == "nesterov", adam = name == "adam" || name == "adamw";
  const bool lars = name == "lars", lamb = name == "lamb";
  u.muon = name == "muon";
  u.schedule_free = name == "schedulefree_adamw";
  u.momentum = u.nesterov = sgd || lars || u.muon;
  u.betas = adam || lamb || u.muon || u.schedule_free || name == "lion";  // muon: its AdamW group
  u.eps = adam || lamb || lars || u.muon || u.schedule_free;
  u.trust_coefficient = u.lr_in_momentum = lars;
  u.trust_ratio = lars || lamb;
  u.lamb_only = lamb;
  return u;
}

// A value as the settings show it: strings bare, numbers in their shortest form, arrays and
// tables as TOML writes them.
std::string node_text(const toml::node& node) {
  if (auto s = node.value_exact<std::string>()) return *s;
  if (auto d = node.value<double>()) return fmt::format("{}", *d);
  if (auto b = node.value_exact<bool>()) return *b ? "true" : "false";
  if (const auto* a = node.as_array()) {
    std::vector<std::string> items;
    for (const auto& item : *a) items.push_back(node_text(item));
    return fmt::format("[{}]", fmt::join(items, ", "));
  }
  std::ostringstream out;
  if (const auto* t = node.as_table()) out << *t;
  return out.str();
}

// Reads the config's values with the reader's defaults for absent keys (header).
class Config {
 public:
  explicit Config(const std::string& text) {
    try {
      table_ = toml::parse(text);
    } catch (const toml::parse_error& e) {
      std::ostringstream where;
      where << e.source().begin;
      throw SettingsError(fmt::format(
          "a run's resolved config (runs.config_toml) is not TOML: {} at {}; the database was not "
          "written by batchlab, or the row is damaged (batchlab query --db PATH \"SELECT run_id, "
          "config_toml FROM runs\" shows it)",
          e.description(), where.str()));
    }
  }
  double number(const char* path, double fallback) const {
    return table_.at_path(path).value<double>().value_or(fallback);
  }
  bool flag(const char* path, bool fallback) const {
    return table_.at_path(path).value<bool>().value_or(fallback);
  }
  std::string text(const char* path, const std::string& fallback) const {
    return table_.at_path(path).value<std::string>().value_or(fallback);
  }
  bool has(const char* path) const { return static_cast<bool>(table_.at_path(path)); }
  const toml::node* node(const char* path) const { return table_.at_path(path).node(); }
  // A schedule.warmup_* key this reader does not know (a newer unit), as "key = value".
  std::optional<std::string> other_warmup() const {
    static const std::set<std::string> known = {"warmup_steps", "warmup_epochs", "warmup_fraction",
                                                "warmup_start"};
    const auto* schedule = table_["schedule"].as_table();
    if (!schedule) return std::nullopt;
    for (const auto& [key, value] : *schedule) {
      const std::string k(key.str());
      if (k.rfind("warmup_", 0) != 0 || known.count(k)) continue;
      return fmt::format("{} = {}", k, node_text(value));
    }
    return std::nullopt;
  }

 private:
  toml::table table_;
};

std::string number_text(double v) { return fmt::format("{}", v); }

std::string flag_text(bool v) { return v ? "true" : "false"; }

// An array of numbers or strings as "[0.9, 0.98]" / ["ndim<2"] without TOML's quoting.
std::vector<std::string> array_items(const toml::node* node) {
  std::vector<std::string> out;
  const auto* array = node ? node->as_array() : nullptr;
  if (!array) return out;
  for (const auto& item : *array) {
    out.push_back(node_text(item));
  }
  return out;
}

std::string scaling_text(const Config& c) {
  const std::string rule = c.text("optim.scaling", "none");
  if (rule == "none") return "none";
  return fmt::format("{} from batch {}", rule, number_text(c.number("optim.base_batch", 256)));
}

// "20 steps", "0.5 epochs", "5% of the run", "none"; ", from 0.1x the peak" when it does not
// start at 0. A warmup key this reader does not know is shown as written.
std::string warmup_text(const Config& c) {
  std::string out = "none";
  if (c.has("schedule.warmup_steps")) {
    out = fmt::format("{} steps", number_text(c.number("schedule.warmup_steps", 0)));
  } else if (c.has("schedule.warmup_epochs")) {
    out = fmt::format("{} epochs", number_text(c.number("schedule.warmup_epochs", 0)));
  } else if (c.has("schedule.warmup_fraction")) {
    out = fmt::format("{:g}% of the run", 100.0 * c.number("schedule.warmup_fraction", 0));
  } else if (const auto other = c.other_warmup()) {
    out = *other;
  }
  const double start = c.number("schedule.warmup_start", 0.0);
  if (out != "none" && start != 0.0) out += fmt::format(", from {}x the peak", number_text(start));
  return out;
}

std::string decay_text(const Config& c) {
  const std::string decay = c.text("schedule.decay", "constant");
  const std::string end = number_text(c.number("schedule.end_lr", 0.0));
  if (decay == "linear" || decay == "cosine") return fmt::format("{} to {}", decay, end);
  if (decay == "poly") {
    return fmt::format("poly (power {}) to {}", number_text(c.number("schedule.power", 2.0)), end);
  }
  if (decay == "step") {
    return fmt::format("step x{} at epochs {}", number_text(c.number("schedule.gamma", 0.1)),
                       fmt::join(array_items(c.node("schedule.milestones")), ", "));
  }
  return decay;
}

// "every tensor but ndim<2", then the [[optim.groups]] rules that override the weight decay.
std::string tensors_text(const Config& c, const std::vector<std::string>& exclude) {
  std::string out = exclude.empty() ? "every tensor"
                                    : fmt::format("every tensor but {}", fmt::join(exclude, ", "));
  const auto* groups = c.node("optim.groups");
  const auto* array = groups ? groups->as_array() : nullptr;
  if (!array) return out;
  for (const auto& g : *array) {
    const auto* t = g.as_table();
    if (!t) continue;
    const auto match = (*t)["match"].value<std::string>().value_or("?");
    if (auto wd = (*t)["weight_decay"].value<double>()) {
      out += fmt::format("; {} at {}", match, number_text(*wd));
    }
    if (auto adapt = (*t)["adapt"].value<bool>(); adapt && !*adapt) {
      out += fmt::format("; {} not adapted", match);
    }
  }
  return out;
}

// Muon's Newton-Schulz iteration and rate factor (core/config/optim_config.h), as the resolved
// config writes them.
void add_muon_knobs(const Config& c, EffectiveSettings& out) {
  for (const char* key : {"ns_steps", "ns_coefficients", "ns_dtype", "muon_adjust_lr"}) {
    const std::string path = std::string("optim.") + key;
    if (const auto* node = c.node(path.c_str())) out.push_back({key, node_text(*node)});
  }
}

void add_optimizer_knobs(const Config& c, const Uses& u, const std::string& name,
                         EffectiveSettings& out) {
  const auto exclude = c.has("optim.exclude") ? array_items(c.node("optim.exclude"))
                                              : std::vector<std::string>{"ndim<2"};
  if (u.momentum) {
    out.push_back({"momentum", number_text(c.number("optim.momentum", u.muon ? 0.95 : 0.9))});
  }
  if (u.nesterov) {
    out.push_back({"nesterov", flag_text(name == "nesterov" || c.flag("optim.nesterov", u.muon))});
  }
  if (u.betas) {
    const auto betas = array_items(c.node("optim.betas"));
    const std::string fallback = name == "lion" ? "[0.9, 0.99]" : "[0.9, 0.999]";
    out.push_back(
        {"betas", betas.empty() ? fallback : fmt::format("[{}]", fmt::join(betas, ", "))});
  }
  if (u.eps) out.push_back({"eps", number_text(c.number("optim.eps", u.lamb_only ? 1e-6 : 1e-8))});
  if (u.lamb_only) {
    out.push_back({"bias_correction", flag_text(c.flag("optim.bias_correction", true))});
    out.push_back({"grad_averaging", flag_text(c.flag("optim.grad_averaging", true))});
  }
  if (u.muon) add_muon_knobs(c, out);
  if (u.schedule_free) {
    out.push_back({"poly_power", number_text(c.number("optim.poly_power", 0.0))});
    out.push_back({"weight_lr_power", number_text(c.number("optim.weight_lr_power", 2.0))});
  }
  if (u.trust_coefficient) {
    out.push_back({"trust_coefficient", number_text(c.number("optim.trust_coefficient", 0.001))});
  }
  if (u.trust_ratio) {
    const bool always = c.flag("optim.always_adapt", false);
    out.push_back({"trust_clip", flag_text(c.flag("optim.trust_clip", false))});
    out.push_back({"always_adapt", flag_text(always)});
    out.push_back({"trust_ratio_on", always ? "every tensor" : tensors_text(c, exclude)});
  }
  if (u.lr_in_momentum) {
    out.push_back({"lr_in_momentum", flag_text(c.flag("optim.lr_in_momentum", false))});
  }
  out.push_back({"weight_decay", number_text(c.number("optim.weight_decay", 0.0))});
  out.push_back({"weight_decay_on", tensors_text(c, exclude)});
}

// Values that start with a number ("0.01", "20 steps") ascending by it, then anything else in text
// order, kNotUsed last.
bool value_less(const std::string& a, const std::string& b) {
  auto number = [](const std::string& s) -> std::optional<double> {
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str()) return std::nullopt;
    return v;
  };
  const auto na = number(a), nb = number(b);
  if (na && nb) return *na != *nb ? *na < *nb : a < b;
  if (na || nb) return static_cast<bool>(na);
  if ((a == kNotUsed) != (b == kNotUsed)) return b == kNotUsed;
  return a < b;
}

std::string value_of(const EffectiveSettings& s, const std::string& key) {
  for (const auto& setting : s) {
    if (setting.key == key) return setting.value;
  }
  return std::string(kNotUsed);
}

bool has_key(const EffectiveSettings& s, const std::string& key) {
  return std::any_of(s.begin(), s.end(), [&](const Setting& x) { return x.key == key; });
}

std::string listed(const std::set<std::string, decltype(&value_less)>& values) {
  return fmt::format("{}", fmt::join(values, ", "));
}

}  // namespace

const std::vector<std::string>& setting_order() {
  static const std::vector<std::string> order = {
      "optimizer",       "scaling",         "warmup",
      "decay",           "grad_clip",       "momentum",
      "nesterov",        "betas",           "eps",
      "bias_correction", "grad_averaging",  "ns_steps",
      "ns_coefficients", "ns_dtype",        "muon_adjust_lr",
      "poly_power",      "weight_lr_power", "trust_coefficient",
      "trust_clip",      "always_adapt",    "trust_ratio_on",
      "lr_in_momentum",  "weight_decay",    "weight_decay_on"};
  return order;
}

EffectiveSettings settings_of(const std::string& config_toml) {
  const Config c(config_toml);
  const std::string name = c.text("optim.name", "sgd");
  EffectiveSettings out;
  out.push_back({"optimizer", name});
  out.push_back({"scaling", scaling_text(c)});
  out.push_back({"warmup", warmup_text(c)});
  out.push_back({"decay", decay_text(c)});
  const double clip = c.number("optim.grad_clip", name == "lamb" ? 1.0 : 0.0);
  out.push_back({"grad_clip", clip > 0.0 ? "global norm " + number_text(clip) : "off"});
  add_optimizer_knobs(c, uses_of(name), name, out);
  return out;
}

std::vector<SettingDiff> differing_settings(const EffectiveSettings& a,
                                            const EffectiveSettings& b) {
  std::vector<SettingDiff> out;
  for (const auto& key : setting_order()) {
    if (!has_key(a, key) && !has_key(b, key)) continue;
    const std::string va = value_of(a, key), vb = value_of(b, key);
    if (va != vb) out.push_back({key, va, vb});
  }
  return out;
}

EffectiveSettings merge_cell_settings(const std::vector<std::vector<EffectiveSettings>>& cells) {
  EffectiveSettings out;
  for (const auto& key : setting_order()) {
    std::set<std::string, decltype(&value_less)> all(&value_less);
    bool searched = false, present = false;
    for (const auto& runs : cells) {
      std::set<std::string> in_cell;
      for (const auto& run : runs) {
        present = present || has_key(run, key);
        in_cell.insert(value_of(run, key));
      }
      searched = searched || in_cell.size() > 1;
      all.insert(in_cell.begin(), in_cell.end());
    }
    if (!present) continue;
    if (all.size() == 1) {
      out.push_back({key, *all.begin()});
    } else {
      out.push_back({key, fmt::format("{}: {}", searched ? "searched" : "per cell", listed(all))});
    }
  }
  return out;
}

}  // namespace batchlab::analysis
