// The optimizer settings a run trained with, read from its resolved config (runs.config_toml), so
// that a report can show whether two optimizer lines were treated alike (issue 43: "equal treatment
// visible"): the clipping, eps, betas, momentum, warmup, decay, weight decay and the tensors it
// applies to, the trust-ratio knobs and the scaling rule of the learning rate.
//
// Only the settings the named optimizer uses are listed (core/optim/factory.cpp passes betas to
// Adam, AdamW, LAMB, Lion, Schedule-Free AdamW and Muon's AdamW group, momentum to SGD, Nesterov,
// LARS and Muon, the trust coefficient to LARS alone, the Newton-Schulz knobs to Muon),
// so a difference shown is one that reaches the arithmetic. The learning rate itself is left out:
// a study searches it per cell and its report gives each cell's best.
//
// A resolved config holds every key (core/config/canonical.h writes them all); a key absent from a
// config written by another program takes the default the config reader resolves
// (core/config/optim_config.h, core/config/reader.h): grad_clip 1.0 for LAMB and 0 (off) for the
// others, eps 1e-6 for LAMB and 1e-8 for the others, momentum 0.95 and nesterov for Muon, betas
// (0.9, 0.99) for Lion, exclude ["ndim<2"], no warmup, a constant LR.
//
// Parsing uses toml++, which batchlab_analysis links (CMakeLists.txt) and analysis/run_records.cpp
// already uses for the same column; nothing here includes core/config.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/errors.h"

namespace batchlab::analysis {

// A resolved config that toml++ cannot parse (a database written by another program).
class SettingsError : public InputError {
 public:
  using InputError::InputError;
};

struct Setting {
  std::string key;    // "grad_clip", "warmup", "weight_decay", ...
  std::string value;  // as the report prints it: "global norm 1", "20 steps", "0.01"
};

// Ordered as the report lists them (kSettingOrder): the optimizer first, then the schedule, the
// clipping, the optimizer's own knobs and the weight decay.
using EffectiveSettings = std::vector<Setting>;

// Every key settings_of can produce, in the order it produces them.
const std::vector<std::string>& setting_order();

// What differing_settings and merge_cell_settings print for a key one side does not use.
inline constexpr std::string_view kNotUsed = "(not used)";

// The effective settings of one run's resolved config. Throws SettingsError for text that is not
// TOML, naming the parser's message and position.
EffectiveSettings settings_of(const std::string& config_toml);

struct SettingDiff {
  std::string key;
  std::string a, b;  // kNotUsed where that side's optimizer does not use the key
};

// The keys whose values differ between `a` and `b` (a key only one side has counts as differing),
// in setting_order().
std::vector<SettingDiff> differing_settings(const EffectiveSettings& a, const EffectiveSettings& b);

// One series' settings from the settings of its runs, grouped by cell (a cell's runs are the trials
// of one search). A key with one value everywhere keeps it; one whose value changes between the
// trials of a cell was searched ("searched: 0.001, 0.01"); one constant within each cell but
// changing between cells was set per cell ("per cell: 20, 40", the warmup a study scales with the
// cap, say). A key some runs lack adds kNotUsed to its values. The values are listed in ascending
// order (numerically where every value is a number).
EffectiveSettings merge_cell_settings(const std::vector<std::vector<EffectiveSettings>>& cells);

}  // namespace batchlab::analysis
