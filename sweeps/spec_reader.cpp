// Reading a spec's [sweep] table and its dimensions (seeds, [grid], [[zip]]).
#include "sweeps/spec_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "core/config/limits.h"
#include "core/config/suggest.h"
#include "core/config/toml_text.h"
#include "sweeps/run_layout.h"

namespace batchlab::sweeps {

namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kTopKeys = {"exclude", "grid",  "schema_version", "search", "set",
                                           "study",   "sweep", "when",           "zip"};
const std::vector<std::string> kSweepKeys = {"experiment", "name", "results", "runs_dir", "seeds"};

}  // namespace

Location location_of(const toml::node& node) {
  const auto p = config::position_of(node);
  return {p.line, p.column};
}

Location location_of(const toml::key& key) {
  const auto p = config::position_of(key);
  return {p.line, p.column};
}

bool before(const Location& a, const Location& b) {
  return a.line != b.line ? a.line < b.line : a.column < b.column;
}

SweepSpec SpecReader::read() {
  const toml::table& doc = storage_->document;
  SweepSpec spec;
  spec.source = source_;
  for (auto&& [key, node] : doc) {
    const std::string name(key.str());
    if (std::find(kTopKeys.begin(), kTopKeys.end(), name) == kTopKeys.end()) {
      auto close = config::closest_match(name, kTopKeys);
      error(location_of(key), name, "",
            close ? fmt::format("unknown section, did you mean {}?", *close)
                  : "unknown section; a sweep spec has schema_version, [sweep], [set], [grid], "
                    "[[zip]], [[exclude]], [when.\"key=value\"], [study] and [search]");
    }
  }
  read_schema_version(doc);
  read_sweep(doc, spec);
  read_dimensions(doc, spec);
  // Settings and matches refer to swept keys, so they are read once all dimensions are known.
  if (const auto* set = table_at(doc, "set")) {
    for (const auto& entry : flatten(*set, "[set]")) {
      if (auto setting = read_setting(entry, "[set]")) spec.set.push_back(*setting);
    }
  }
  read_excludes(doc, spec);
  read_whens(doc, spec);
  read_study(doc, spec);
  read_budget_search(doc, spec);
  return spec;
}

void SpecReader::error(Location at, std::string key, std::string value, std::string rule) {
  Diagnostic d;
  d.file = source_;
  d.line = at.line;
  d.column = at.column;
  d.key = std::move(key);
  d.value = std::move(value);
  d.rule = std::move(rule);
  diagnostics_.push_back(std::move(d));
}

SpecValue SpecReader::value_of(const toml::node& node) const {
  return SpecValue{&node, display_text(node), location_of(node)};
}

const toml::table* SpecReader::table_at(const toml::table& doc, const char* name) {
  const toml::node* node = doc.get(name);
  if (node == nullptr) return nullptr;
  if (const auto* table = node->as_table()) return table;
  error(location_of(*node), name, config::render_node(*node),
        fmt::format("must be a table: write the keys under a [{}] header", name));
  return nullptr;
}

void SpecReader::read_schema_version(const toml::table& doc) {
  const toml::node* node = doc.get("schema_version");
  if (node == nullptr) {
    error({}, "schema_version", "", "missing; add `schema_version = 1` as the first line");
  } else if (const auto* v = node->as_integer(); v == nullptr || v->get() != 1) {
    error(location_of(*node), "schema_version", config::render_node(*node),
          "must be 1; this version of batchlab reads sweep specs with schema_version = 1 only");
  }
}

std::optional<std::string> SpecReader::string_key(const toml::table& table, const char* key,
                                                  const std::string& path) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return std::nullopt;
  if (const auto* s = node->as_string()) return s->get();
  error(location_of(*node), path, config::render_node(*node),
        fmt::format("must be a string, not {}", config::node_type_name(*node)));
  return std::nullopt;
}

void SpecReader::read_sweep(const toml::table& doc, SweepSpec& spec) {
  const toml::table* sweep = table_at(doc, "sweep");
  if (sweep == nullptr) {
    if (doc.get("sweep") == nullptr) {
      error({}, "sweep", "", "missing; add a [sweep] table with name and experiment");
    }
    return;
  }
  for (auto&& [key, node] : *sweep) {
    const std::string name(key.str());
    if (std::find(kSweepKeys.begin(), kSweepKeys.end(), name) == kSweepKeys.end()) {
      auto close = config::closest_match(name, kSweepKeys);
      error(location_of(key), "sweep." + name, config::render_node(node),
            close ? fmt::format("unknown key, did you mean sweep.{}?", *close)
                  : "unknown key; [sweep] has " + config::join_choices(kSweepKeys, " and "));
    }
  }
  const Location at = location_of(*sweep);
  if (auto name = string_key(*sweep, "name", "sweep.name")) {
    const bool ok =
        !name->empty() && (*name)[0] != '.' && std::all_of(name->begin(), name->end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
        });
    const auto length = static_cast<int64_t>(name->size());
    if (!ok) {
      error(location_of(*sweep->get("name")), "sweep.name",
            config::render_node(*sweep->get("name")),
            "must be a non-empty folder name of letters, digits, '_', '-' and '.'");
    } else if (length > config::kMaxSweepNameLength) {
      // Checked here, at `sweep plan`, rather than by the file system at `sweep run`.
      error(location_of(*sweep->get("name")), "sweep.name",
            config::render_node(*sweep->get("name")),
            fmt::format("{} characters; must be at most {}: the name becomes file names (NAME.db, "
                        "NAME.db-journal, the runs folder), which hold at most 255 bytes; choose "
                        "a shorter name",
                        length, config::kMaxSweepNameLength));
    } else {
      spec.name = *name;
    }
  } else if (sweep->get("name") == nullptr) {
    error(at, "sweep.name", "", "missing; name the sweep (it names its database and folders)");
  }
  if (auto experiment = string_key(*sweep, "experiment", "sweep.experiment")) {
    // Relative to the spec file, so a spec and its base experiment move together.
    fs::path path(*experiment);
    if (path.is_relative()) path = fs::path(source_).parent_path() / path;
    spec.experiment = path.lexically_normal().string();
    std::error_code ec;
    if (!fs::is_regular_file(spec.experiment, ec)) {
      error(
          location_of(*sweep->get("experiment")), "sweep.experiment",
          config::render_node(*sweep->get("experiment")),
          fmt::format("file not found: {} (paths are relative to the spec file)", spec.experiment));
    }
  } else if (sweep->get("experiment") == nullptr) {
    error(at, "sweep.experiment", "",
          "missing; name the base experiment, e.g. experiment = "
          "\"../../experiments/configs/fashion_mnist.toml\"");
  }
  spec.results = string_key(*sweep, "results", "sweep.results")
                     .value_or(fmt::format("results/{}.db", spec.name));
  spec.runs_dir = string_key(*sweep, "runs_dir", "sweep.runs_dir")
                      .value_or((fs::path(default_runs_root(spec.results)) / spec.name).string());
  read_seeds(*sweep, spec);
}

void SpecReader::read_seeds(const toml::table& sweep, SweepSpec& spec) {
  const toml::node* node = sweep.get("seeds");
  if (node == nullptr) return;
  const auto* array = node->as_array();
  if (array == nullptr || array->empty()) {
    error(location_of(*node), "sweep.seeds", config::render_node(*node),
          "must be a non-empty array of integers, e.g. [0, 1]");
    return;
  }
  Dimension dim;
  dim.kind = Dimension::Kind::seeds;
  dim.where = location_of(*node);
  Axis axis;
  axis.key = "train.seed";
  axis.where = dim.where;
  for (const auto& element : *array) {
    if (!element.is_integer()) {
      error(location_of(element), "sweep.seeds", config::render_node(element),
            "seeds must be integers");
      return;
    }
    axis.values.push_back(value_of(element));
  }
  if (!check_distinct(axis, "sweep.seeds")) return;
  dim.axes.push_back(std::move(axis));
  note_swept(dim.axes.front().key, dim.where, "[sweep] seeds");
  spec.dimensions.push_back(std::move(dim));
}

bool SpecReader::check_distinct(const Axis& axis, const std::string& what) {
  for (size_t i = 0; i < axis.values.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (same_value(*axis.values[i].node, *axis.values[j].node)) {
        error(axis.values[i].where, what, config::render_node(*axis.values[i].node),
              fmt::format("value listed twice (also at line {})", axis.values[j].where.line));
        return false;
      }
    }
  }
  return true;
}

// Records a swept key; false (and an error) when another dimension already sweeps it.
bool SpecReader::note_swept(const std::string& key, Location at, const std::string& where) {
  auto [it, inserted] = swept_.emplace(key, std::make_pair(at, where));
  if (inserted) return true;
  error(at, key, "",
        fmt::format("swept twice: also by {} at line {}; a key belongs to one [grid] entry, one "
                    "[[zip]] or the seeds",
                    it->second.second, it->second.first.line));
  return false;
}

std::vector<FlatEntry> SpecReader::flatten(const toml::table& table, const std::string& where) {
  std::vector<FlatEntry> entries = flatten_keys(table);
  std::sort(entries.begin(), entries.end(),
            [](const FlatEntry& a, const FlatEntry& b) { return before(a.where, b.where); });
  for (const auto& e : entries) {
    if (auto rule = unknown_experiment_key_rule(e.key)) {
      error(e.where, where + " " + e.key, config::render_node(*e.node), *rule);
    }
  }
  entries.erase(std::remove_if(entries.begin(), entries.end(),
                               [](const FlatEntry& e) {
                                 return unknown_experiment_key_rule(e.key).has_value();
                               }),
                entries.end());
  return entries;
}

std::optional<Axis> SpecReader::read_axis(const FlatEntry& entry, const std::string& where,
                                          bool distinct) {
  const auto* array = entry.node->as_array();
  if (array == nullptr || array->empty()) {
    error(entry.where, where + " " + entry.key, config::render_node(*entry.node),
          "must be a non-empty array of the values to sweep, e.g. [256, 512]");
    return std::nullopt;
  }
  Axis axis;
  axis.key = entry.key;
  axis.where = entry.where;
  for (const auto& element : *array) axis.values.push_back(value_of(element));
  if (distinct && !check_distinct(axis, where + " " + entry.key)) return std::nullopt;
  return axis;
}

void SpecReader::read_dimensions(const toml::table& doc, SweepSpec& spec) {
  std::vector<Dimension> dims;
  if (const auto* grid = table_at(doc, "grid")) {
    for (const auto& entry : flatten(*grid, "[grid]")) {
      auto axis = read_axis(entry, "[grid]");
      if (!axis || !note_swept(axis->key, axis->where, "[grid]")) continue;
      Dimension dim;
      dim.kind = Dimension::Kind::grid;
      dim.where = axis->where;
      dim.axes.push_back(std::move(*axis));
      dims.push_back(std::move(dim));
    }
  }
  if (const toml::node* zips = doc.get("zip")) {
    const auto* array = zips->as_array();
    if (array == nullptr || !array->is_array_of_tables()) {
      error(location_of(*zips), "zip", config::render_node(*zips),
            "must be tables: write each group of keys that vary together under [[zip]]");
    } else {
      for (const auto& element : *array) read_zip(*element.as_table(), dims);
    }
  }
  std::stable_sort(dims.begin(), dims.end(),
                   [](const Dimension& a, const Dimension& b) { return before(a.where, b.where); });
  for (auto& dim : dims) spec.dimensions.push_back(std::move(dim));
}

void SpecReader::read_zip(const toml::table& zip, std::vector<Dimension>& dims) {
  Dimension dim;
  dim.kind = Dimension::Kind::zip;
  dim.where = location_of(zip);
  for (const auto& entry : flatten(zip, "[[zip]]")) {
    // Within a zip one key may repeat a value (sgd and nesterov both "linear"); the tuples
    // must differ, which is checked below once the lengths agree.
    auto axis = read_axis(entry, "[[zip]]", /*distinct=*/false);
    if (axis && note_swept(axis->key, axis->where, "[[zip]]")) dim.axes.push_back(std::move(*axis));
  }
  if (dim.axes.empty()) {
    if (zip.empty()) error(dim.where, "zip", "", "empty [[zip]]: give at least one key");
    return;
  }
  std::vector<std::string> lengths;
  bool equal = true;
  for (const auto& axis : dim.axes) {
    lengths.push_back(fmt::format("{} has {}", axis.key, axis.values.size()));
    equal = equal && axis.values.size() == dim.size();
  }
  if (!equal) {
    error(dim.where, "zip", "",
          fmt::format("the arrays of a [[zip]] vary together and must have equal lengths: {}",
                      config::join_choices(lengths, " and ")));
    return;
  }
  for (size_t i = 0; i < dim.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      bool same = true;
      for (const auto& axis : dim.axes) {
        same = same && same_value(*axis.values[i].node, *axis.values[j].node);
      }
      if (same) {
        error(dim.axes.front().values[i].where, "zip", "",
              fmt::format("entry {} repeats entry {} in every key", i + 1, j + 1));
        return;
      }
    }
  }
  dims.push_back(std::move(dim));
}

}  // namespace batchlab::sweeps
