#include "analysis/series_settings.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "analysis/table_builder.h"

namespace batchlab::analysis {

namespace {

std::string value_or_not_used(const EffectiveSettings& settings, const std::string& key) {
  for (const auto& s : settings) {
    if (s.key == key) return s.value;
  }
  return std::string(kNotUsed);
}

bool any_has(const std::vector<const SeriesSettings*>& series, const std::string& key) {
  return std::any_of(series.begin(), series.end(), [&](const SeriesSettings* s) {
    return std::any_of(s->settings.begin(), s->settings.end(),
                       [&](const Setting& x) { return x.key == key; });
  });
}

}  // namespace

std::vector<SeriesSettings> series_settings(const std::vector<SeriesRuns>& series,
                                            const std::map<std::string, std::string>& configs) {
  std::vector<SeriesSettings> out;
  for (const auto& s : series) {
    SeriesSettings row;
    row.series = s.series;
    std::vector<std::vector<EffectiveSettings>> cells;
    for (const auto& run_ids : s.cells) {
      std::vector<EffectiveSettings> runs;
      for (const auto& id : run_ids) {
        ++row.runs;
        const auto it = configs.find(id);
        if (it == configs.end()) continue;
        runs.push_back(settings_of(it->second));
        ++row.configs;
      }
      if (!runs.empty()) cells.push_back(std::move(runs));
    }
    if (!cells.empty()) row.settings = merge_cell_settings(cells);
    out.push_back(std::move(row));
  }
  return out;
}

results::QueryResult series_settings_table(const std::vector<SeriesSettings>& settings) {
  std::vector<const SeriesSettings*> shown;
  for (const auto& s : settings) {
    if (!s.settings.empty()) shown.push_back(&s);
  }
  TableBuilder b;
  if (shown.empty()) return b.table;
  for (const auto& key : setting_order()) {
    if (!any_has(shown, key)) continue;
    b.text("setting", key);
    for (const auto* s : shown) b.text(s->series, value_or_not_used(s->settings, key));
    b.end_row();
  }
  return b.table;
}

std::string series_settings_section(const std::vector<SeriesSettings>& settings,
                                    results::QueryFormat format, const std::string& gap) {
  const auto table = series_settings_table(settings);
  if (table.rows.empty()) return "";
  std::vector<std::string> partial;
  for (const auto& s : settings) {
    if (s.configs < s.runs) {
      partial.push_back(fmt::format("{}: {} of {} trials", s.series, s.configs, s.runs));
    }
  }
  return fmt::format(
             "Optimizer settings per series, from its trials' resolved configs "
             "(runs.config_toml){}; the learning rate is searched per cell (best_lr above). "
             "\"searched: ...\" = values tried within a cell's search; \"per cell: ...\" = set "
             "per cell; {} = the optimizer has no such setting.\n",
             partial.empty() ? "" : fmt::format(" ({})", fmt::join(partial, ", ")), kNotUsed) +
         gap + results::format_result(table, format, kAbsentCell) + "\n";
}

std::vector<SettingDiff> series_differences(const SeriesSettings& a, const SeriesSettings& b) {
  if (a.settings.empty() || b.settings.empty()) return {};
  return differing_settings(a.settings, b.settings);
}

std::string settings_differ_section(bool known, const std::vector<SettingDiff>& diffs,
                                    std::string_view searched, results::QueryFormat format,
                                    const std::string& gap) {
  if (!known) {
    return "Settings: unknown (no resolved configs in the runs table), so the comparison cannot "
           "show whether A and B were treated alike.\n" +
           gap;
  }
  if (diffs.empty()) {
    return fmt::format("Settings: A and B differ in no optimizer setting; {}.\n", searched) + gap;
  }
  TableBuilder t;
  for (const auto& d : diffs) {
    t.text("setting", d.key);
    t.text("A", d.a);
    t.text("B", d.b);
    t.end_row();
  }
  return fmt::format(
             "Settings in which A and B differ (from their trials' resolved configs; {}; {} = the "
             "optimizer has no such setting):\n",
             searched, kNotUsed) +
         gap + results::format_result(t.table, format, kAbsentCell) + "\n";
}

nlohmann::json settings_differ_json(bool known, const std::vector<SettingDiff>& diffs) {
  if (!known) return nullptr;
  auto out = nlohmann::json::array();
  for (const auto& d : diffs) out.push_back({{"key", d.key}, {"a", d.a}, {"b", d.b}});
  return out;
}

}  // namespace batchlab::analysis
