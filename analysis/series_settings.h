// The effective optimizer settings of each series of a study (analysis/optimizer_settings.h over
// the resolved configs of the series' trials), for `batchlab report`'s settings table and
// `batchlab compare`'s list of the settings in which its two series differ.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/optimizer_settings.h"
#include "results/query_result.h"

namespace batchlab::analysis {

// One series and the run ids of its trials, grouped by cell.
struct SeriesRuns {
  std::string series;
  std::vector<std::vector<std::string>> cells;
};

struct SeriesSettings {
  std::string series;
  int runs = 0;                // trials of the series
  int configs = 0;             // of them, those with a resolved config (a runs row)
  EffectiveSettings settings;  // merge_cell_settings over those; empty when configs == 0
};

// The settings of each series from `configs` (run_id -> runs.config_toml). A series none of whose
// trials has a config keeps its runs count and empty settings. Throws SettingsError for a config
// that is not TOML.
std::vector<SeriesSettings> series_settings(const std::vector<SeriesRuns>& series,
                                            const std::map<std::string, std::string>& configs);

// The settings as a table: one row per setting (setting_order()), one column per series that has
// settings; a key a series' optimizer does not use is kNotUsed. No rows when no series has any.
results::QueryResult series_settings_table(const std::vector<SeriesSettings>& settings);

// The table with a line saying what it is read from; "" when no series has settings. `gap` is the
// blank line Markdown puts under a heading.
std::string series_settings_section(const std::vector<SeriesSettings>& settings,
                                    results::QueryFormat format, const std::string& gap);

// The differences between two series' settings; empty when either has none (no configs).
std::vector<SettingDiff> series_differences(const SeriesSettings& a, const SeriesSettings& b);

// How a compare says what the settings exclude: the steps-to-target study searches the rate per
// cell; a fixed-budget search also the knobs of its [search] (the best point per batch).
inline constexpr std::string_view kSearchedPerCell = "the learning rate is searched per cell";

// What `batchlab compare` prints before its verdicts: the settings in which A and B differ (a
// table of setting, A, B; `searched` says what is left out), that they differ in none, or, when
// `known` is false (a side without resolved configs), that it cannot tell whether they were treated
// alike.
std::string settings_differ_section(bool known, const std::vector<SettingDiff>& diffs,
                                    std::string_view searched, results::QueryFormat format,
                                    const std::string& gap);

// [{"key", "a", "b"}, ...]; null when not known.
nlohmann::json settings_differ_json(bool known, const std::vector<SettingDiff>& diffs);

}  // namespace batchlab::analysis
