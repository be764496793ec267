// The reader behind parse_sweep_spec (spec.h): walks a parsed spec document section by section
// and collects every problem as a positioned diagnostic. Internal to sweeps/.
#pragma once

#include <toml++/toml.h>

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "sweeps/spec.h"
#include "sweeps/spec_keys.h"

namespace batchlab::sweeps {

// The parsed document plus the values that conditions parse out of strings ("optim.name=lars"),
// so every SpecValue::node stays valid for as long as any copy of the spec lives.
struct SpecStorage {
  toml::table document;
  std::deque<toml::table> holders;
};

Location location_of(const toml::node& node);
Location location_of(const toml::key& key);
// Source order: a before b.
bool before(const Location& a, const Location& b);
// Splits "a=1,b=[1, 2]" at the commas outside brackets, braces and quotes.
std::vector<std::string> split_conditions(std::string_view text);

class SpecReader {
 public:
  SpecReader(std::string source, std::shared_ptr<SpecStorage> storage)
      : source_(std::move(source)), storage_(std::move(storage)) {}

  SweepSpec read();
  std::vector<Diagnostic>& diagnostics() { return diagnostics_; }

  // Experiment keys a [study] or a [search] sets on every trial itself: the spec must not sweep
  // them (an axis), nor assign them unless `fixed_value_allowed` ([set], [when]).
  struct OwnedKey {
    const char* key;
    bool fixed_value_allowed;
    const char* rule;  // why, and what to write instead
  };

 private:
  void error(Location at, std::string key, std::string value, std::string rule);
  SpecValue value_of(const toml::node& node) const;
  const toml::table* table_at(const toml::table& doc, const char* name);
  void read_schema_version(const toml::table& doc);
  std::optional<std::string> string_key(const toml::table& table, const char* key,
                                        const std::string& path);
  void read_sweep(const toml::table& doc, SweepSpec& spec);
  void read_seeds(const toml::table& sweep, SweepSpec& spec);
  bool check_distinct(const Axis& axis, const std::string& what);
  // Records a swept key; false (and an error) when another dimension already sweeps it.
  bool note_swept(const std::string& key, Location at, const std::string& where);
  std::vector<FlatEntry> flatten(const toml::table& table, const std::string& where);
  std::optional<Axis> read_axis(const FlatEntry& entry, const std::string& where,
                                bool distinct = true);
  void read_dimensions(const toml::table& doc, SweepSpec& spec);
  void read_zip(const toml::table& zip, std::vector<Dimension>& dims);
  std::optional<Setting> read_setting(const FlatEntry& entry, const std::string& where);
  std::vector<std::string> swept_keys() const;
  // A match names a swept key and one of its values; anything else could never (or would always)
  // match, which is a mistake worth reporting.
  std::optional<Match> read_match(const std::string& key, const toml::node& value, Location at,
                                  const std::string& where, const SweepSpec& spec);
  // The matches of a condition such as "optim.name=lars,batch.global=256" (each a swept key and
  // one of its values); nullopt (errors reported at `where`, under `path`) when any part is not.
  std::optional<std::vector<Match>> read_conditions(const std::string& condition, Location where,
                                                    const std::string& path,
                                                    const std::string& example,
                                                    const SweepSpec& spec);
  void read_excludes(const toml::table& doc, SweepSpec& spec);
  void read_whens(const toml::table& doc, SweepSpec& spec);
  // [study] (sweeps/study/spec_reader.cpp), read last: it checks the keys the rest of the spec
  // assigns.
  void read_study(const toml::table& doc, SweepSpec& spec);
  void read_study_target(const toml::node& node, StudySpec& study);
  void read_study_search_keys(const toml::table& table, StudySpec& study);
  void read_study_bound(const toml::node& node, const SweepSpec& spec, StudySpec& study);
  // Reports every assignment of an owned key; `section` is "study" or "search".
  void check_owned_keys(const SweepSpec& spec, const std::vector<OwnedKey>& owned,
                        const char* section);
  // [search] (sweeps/study/budget_reader.cpp), read after [study]: only one of the two may be
  // given.
  void read_budget_search(const toml::table& doc, SweepSpec& spec);
  void read_budget_search_numbers(const toml::table& table, BudgetSearchSpec& search);
  void read_search_condition(const std::string& condition, Location where, const toml::node& knobs,
                             const SweepSpec& spec, BudgetSearchSpec& search);
  void read_search_knobs(const toml::node& node, const std::string& condition,
                         const std::vector<Match>& conditions, BudgetSearchSpec& search);

  std::string source_;
  std::shared_ptr<SpecStorage> storage_;
  std::vector<Diagnostic> diagnostics_;
  std::map<std::string, std::pair<Location, std::string>> swept_;  // key -> (where, by what)
};

}  // namespace batchlab::sweeps
