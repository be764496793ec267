#include "sweeps/expand.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "core/config/exclusive_keys.h"
#include "core/config/read_context.h"
#include "core/config/toml_text.h"
#include "sweeps/problems.h"
#include "sweeps/run_row.h"

namespace batchlab::sweeps {

namespace {

// Where a key lives in a TOML document: "optim.base_lr" -> section "optim", leaf "base_lr".
struct Slot {
  std::string section;  // "" for a top-level key
  std::string leaf;
};

Slot slot_of(const std::string& key) {
  const size_t dot = key.find('.');
  if (dot == std::string::npos) return {"", key};
  return {key.substr(0, dot), key.substr(dot + 1)};
}

// A condition on one dimension: which of its value indices satisfy it.
struct Condition {
  size_t dim = 0;
  std::vector<bool> holds;
};

struct Partial {
  std::vector<std::vector<Job>> jobs;  // [seed index][inner combination order]
  size_t excluded = 0;
  ProblemGroups problems;
};

class Expander {
 public:
  Expander(const SweepSpec& spec, const PlanOptions& options, const toml::table& base)
      : spec_(spec), options_(options), base_(base) {
    drop_replaced_base_keys();
    for (const auto& dim : spec.dimensions) {
      radix_.push_back(dim.size());
      std::vector<Slot> slots;
      for (const auto& axis : dim.axes) {
        keys_.push_back(axis.key);
        slots.push_back(slot_of(axis.key));
      }
      axis_slots_.push_back(std::move(slots));
    }
    for (const auto& ex : spec.excludes) excludes_.push_back(compile(ex.match));
    for (const auto& when : spec.whens) {
      when_conditions_.push_back(compile(when.conditions));
      std::vector<Slot> slots;
      for (const auto& s : when.settings) slots.push_back(slot_of(s.key));
      when_slots_.push_back(std::move(slots));
      when_drops_.push_back(when_dropped_slots(when));
    }
    // The seeds only set train.seed (and data.seed where the job leaves it to follow train.seed),
    // and no rule looks at a seed: a combination is parsed and validated once, for its first
    // seed, and the other seeds' configs are copies with the seed changed. Unless an exclusion or
    // a when-clause tests the seed: then every seed is a combination of its own.
    seeds_outer_ = options.reuse_across_seeds && !spec.dimensions.empty() &&
                   spec.dimensions.front().kind == Dimension::Kind::seeds;
    auto tests_seed = [](const std::vector<Condition>& conditions) {
      for (const auto& c : conditions) {
        if (c.dim == 0) return true;
      }
      return false;
    };
    for (const auto& c : excludes_) seeds_outer_ = seeds_outer_ && !tests_seed(c);
    for (const auto& c : when_conditions_) seeds_outer_ = seeds_outer_ && !tests_seed(c);
    if (seeds_outer_) {
      for (const auto& v : spec.dimensions.front().axes.front().values) {
        seed_values_.push_back(v.node->as_integer()->get());
      }
    }
  }

  // Seeds handled outside the walk (see the constructor), and the walk's size.
  size_t outer() const { return seeds_outer_ ? radix_.front() : 1; }
  size_t inner() const { return combinations() / outer(); }

  const std::vector<std::string>& keys() const { return keys_; }

  size_t combinations() const {
    size_t n = 1;
    for (size_t r : radix_) n *= r;
    return n;
  }

  // Walks inner combinations [begin, end) (all combinations when the seeds are not outer).
  Partial run(size_t begin, size_t end) const {
    Partial out;
    out.jobs.resize(outer());
    const size_t first_dim = seeds_outer_ ? 1 : 0;
    toml::table working = base_;
    for (const auto& s : spec_.set) assign(working, slot_of(s.key), *s.value.node);
    // Section tables are created once; their addresses stay valid while leaves change.
    std::vector<std::vector<toml::table*>> axis_tables;
    for (const auto& slots : axis_slots_) {
      std::vector<toml::table*> tables;
      for (const auto& slot : slots) tables.push_back(section_table(working, slot));
      axis_tables.push_back(std::move(tables));
    }
    std::vector<size_t> index(radix_.size());
    if (seeds_outer_) {
      // The first seed stands for all of them in the working table.
      for (size_t a = 0; a < axis_slots_[0].size(); ++a) {
        if (axis_tables[0][a] != nullptr) {
          axis_tables[0][a]->insert_or_assign(axis_slots_[0][a].leaf,
                                              *spec_.dimensions[0].axes[a].values[0].node);
        }
      }
    }
    for (size_t c = begin; c < end; ++c) {
      decompose(c, index, first_dim);
      if (excluded(index)) {
        out.excluded += outer();
        continue;
      }
      for (size_t d = first_dim; d < radix_.size(); ++d) {
        const auto& dim = spec_.dimensions[d];
        for (size_t a = 0; a < dim.axes.size(); ++a) {
          if (axis_tables[d][a] != nullptr) {
            axis_tables[d][a]->insert_or_assign(axis_slots_[d][a].leaf,
                                                *dim.axes[a].values[index[d]].node);
          }
        }
      }
      // When-clauses edit keys the base may hold: remember what was there and put it back.
      std::vector<std::pair<const Slot*, std::optional<toml::table>>> saved;
      std::vector<size_t> applied;
      for (size_t w = 0; w < spec_.whens.size(); ++w) {
        if (!holds(when_conditions_[w], index)) continue;
        applied.push_back(w);
        for (size_t s = 0; s < when_slots_[w].size(); ++s) {
          const Slot& slot = when_slots_[w][s];
          toml::table* table = section_table(working, slot);
          if (table == nullptr) continue;
          std::optional<toml::table> previous;
          if (const toml::node* old = table->get(slot.leaf)) {
            previous.emplace();
            previous->insert_or_assign("v", *old);
          }
          saved.emplace_back(&slot, std::move(previous));
          table->insert_or_assign(slot.leaf, *spec_.whens[w].settings[s].value.node);
        }
        // The base's keys this clause replaces (its warmup_steps instead of warmup_epochs).
        for (const Slot& slot : when_drops_[w]) {
          toml::table* table = section_table(working, slot);
          const toml::node* old = table != nullptr ? table->get(slot.leaf) : nullptr;
          if (old == nullptr) continue;
          std::optional<toml::table> previous;
          previous.emplace();
          previous->insert_or_assign("v", *old);
          saved.emplace_back(&slot, std::move(previous));
          table->erase(slot.leaf);
        }
      }
      build_jobs(working, c, index, applied, out);
      for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
        toml::table* table = section_table(working, *it->first);
        if (it->second) {
          table->insert_or_assign(it->first->leaf, *it->second->get("v"));
        } else {
          table->erase(it->first->leaf);
        }
      }
    }
    return out;
  }

 private:
  // Keys every job takes from the spec ([set] and the swept axes).
  std::set<std::string> keys_for_every_job() const {
    std::set<std::string> keys;
    for (const auto& setting : spec_.set) keys.insert(setting.key);
    for (const auto& key : spec_.swept_keys()) keys.insert(key);
    return keys;
  }

  // A spec that sets schedule.warmup_steps for every job replaces the base's warmup_epochs (one
  // key of an exclusive group: core/config/exclusive_keys.h) instead of conflicting with it. Two
  // keys of one group both set by the spec stay, for the validation to report.
  void drop_replaced_base_keys() {
    const std::set<std::string> keys = keys_for_every_job();
    for (const auto& key : keys) config::drop_exclusive_siblings(base_, key, keys);
  }

  // The base keys a when-clause replaces for the jobs it matches: siblings of its keys that
  // neither every job's keys nor the clause itself set.
  std::vector<Slot> when_dropped_slots(const When& when) const {
    std::set<std::string> keep = keys_for_every_job();
    for (const auto& setting : when.settings) keep.insert(setting.key);
    std::vector<Slot> slots;
    for (const auto& setting : when.settings) {
      for (const auto& sibling : config::exclusive_siblings(setting.key)) {
        if (keep.count(sibling) == 0) slots.push_back(slot_of(sibling));
      }
    }
    return slots;
  }

  std::vector<Condition> compile(const std::vector<Match>& matches) const {
    std::vector<Condition> out;
    for (const auto& m : matches) {
      for (size_t d = 0; d < spec_.dimensions.size(); ++d) {
        for (const auto& axis : spec_.dimensions[d].axes) {
          if (axis.key != m.key) continue;
          Condition c;
          c.dim = d;
          for (const auto& v : axis.values) c.holds.push_back(same_value(*v.node, *m.value.node));
          out.push_back(std::move(c));
        }
      }
    }
    return out;
  }

  static bool holds(const std::vector<Condition>& conditions, const std::vector<size_t>& index) {
    for (const auto& c : conditions) {
      if (!c.holds[index[c.dim]]) return false;
    }
    return true;
  }

  bool excluded(const std::vector<size_t>& index) const {
    for (const auto& ex : excludes_) {
      if (holds(ex, index)) return true;
    }
    return false;
  }

  // Mixed radix, first dimension slowest: seed 0 of every combination comes before seed 1.
  void decompose(size_t c, std::vector<size_t>& index, size_t first_dim) const {
    for (size_t d = radix_.size(); d-- > first_dim;) {
      index[d] = c % radix_[d];
      c /= radix_[d];
    }
  }

  static toml::table* section_table(toml::table& root, const Slot& slot) {
    if (slot.section.empty()) return &root;
    toml::node* node = root.get(slot.section);
    if (node == nullptr) {
      root.insert_or_assign(slot.section, toml::table{});
      node = root.get(slot.section);
    }
    return node->as_table();  // nullptr when the base has a non-table there: parse reports it
  }

  static void assign(toml::table& root, const Slot& slot, const toml::node& value) {
    if (toml::table* table = section_table(root, slot)) table->insert_or_assign(slot.leaf, value);
  }

  std::string describe(const std::vector<size_t>& index, size_t combination) const {
    std::string out = fmt::format("#{}", combination + 1);
    for (size_t d = 0; d < radix_.size(); ++d) {
      for (const auto& axis : spec_.dimensions[d].axes) {
        out += fmt::format(" {}={}", axis.key, axis.values[index[d]].text);
      }
    }
    return out;
  }

  // The spec positions of every value the sweep assigned to this job.
  std::map<std::string, Location> assigned(const std::vector<size_t>& index,
                                           const std::vector<size_t>& applied) const {
    std::map<std::string, Location> out;
    for (const auto& s : spec_.set) out[s.key] = s.value.where;
    for (size_t dim = 0; dim < radix_.size(); ++dim) {
      for (const auto& axis : spec_.dimensions[dim].axes) {
        out[axis.key] = axis.values[index[dim]].where;
      }
    }
    for (size_t w : applied) {
      for (const auto& s : spec_.whens[w].settings) out[s.key] = s.value.where;
    }
    return out;
  }

  // Parses and checks the working table; the config, or nullopt with `problems` filled.
  std::optional<config::ExperimentConfig> evaluate(const toml::table& working,
                                                   std::vector<Diagnostic>& problems,
                                                   DerivedValues& derived) const {
    config::ExperimentConfig cfg;
    try {
      cfg = config::parse_experiment(working, spec_.experiment, options_.load);
    } catch (const ConfigError& e) {
      problems = e.diagnostics();
      return std::nullopt;
    }
    std::optional<int64_t> size;
    if (options_.train_size) {
      const TrainSize ts = options_.train_size(cfg.data);
      if (!ts.error.empty()) {
        problems.push_back(Diagnostic{"", 0, 0, ts.error_key, "", ts.error});
        return std::nullopt;
      }
      size = ts.samples;
    }
    derived = derive_values(cfg, size, problems);
    if (!problems.empty()) return std::nullopt;
    return cfg;
  }

  // The job(s) of inner combination `inner_index`: one, or one per seed when the seeds are outer.
  void build_jobs(const toml::table& working, size_t inner_index, std::vector<size_t>& index,
                  const std::vector<size_t>& applied, Partial& out) const {
    std::vector<Diagnostic> problems;
    DerivedValues derived;
    const auto cfg = evaluate(working, problems, derived);
    const toml::table* data = working.get_as<toml::table>("data");
    const bool data_seed_follows = data == nullptr || !data->contains("seed");
    for (size_t o = 0; o < outer(); ++o) {
      if (seeds_outer_) index[0] = o;
      const size_t combination = o * inner() + inner_index;
      if (!cfg) {
        const std::string job = describe(index, combination);
        for (const auto& d : problems) {
          out.problems.add(locate_problem(d, spec_, base_, assigned(index, applied)), job,
                           options_.jobs_listed_per_problem);
        }
        continue;
      }
      if (!seeds_outer_) {
        out.jobs[o].push_back(make_job(*cfg, derived, combination, index));
        continue;
      }
      config::ExperimentConfig seeded = *cfg;
      seeded.train.seed = seed_values_[o];
      if (data_seed_follows) seeded.data.seed = seed_values_[o];
      out.jobs[o].push_back(make_job(seeded, derived, combination, index));
    }
  }

  Job make_job(const config::ExperimentConfig& cfg, const DerivedValues& derived,
               size_t combination, const std::vector<size_t>& index) const {
    Job job;
    job.combination = combination;
    for (size_t d = 0; d < radix_.size(); ++d) {
      for (const auto& axis : spec_.dimensions[d].axes) {
        job.coordinates.push_back(axis.values[index[d]].text);
      }
    }
    static_cast<ConfigColumns&>(job) = config_columns(cfg);
    std::string canonical = config::to_canonical_toml(cfg);
    job.run_id = config::run_id_of_canonical(canonical);
    if (options_.keep_config_toml) job.config_toml = std::move(canonical);
    job.threads = cfg.train.threads;
    if (!cfg.train.targets.empty()) job.target = cfg.train.targets.front();
    job.derived = derived;
    return job;
  }

  const SweepSpec& spec_;
  const PlanOptions& options_;
  toml::table base_;  // the base experiment less the keys the spec replaces for every job
  std::vector<size_t> radix_;
  std::vector<std::string> keys_;
  std::vector<std::vector<Slot>> axis_slots_;
  std::vector<std::vector<Condition>> excludes_;
  std::vector<std::vector<Condition>> when_conditions_;
  std::vector<std::vector<Slot>> when_slots_;
  std::vector<std::vector<Slot>> when_drops_;  // per when-clause: base keys it replaces
  bool seeds_outer_ = false;
  std::vector<int64_t> seed_values_;
};

toml::table parse_base(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("base experiment '{}' cannot be read", path));
  std::ostringstream text;
  text << in.rdbuf();
  return config::parse_toml(text.str(), path);
}

}  // namespace

std::string Plan::describe(const Job& job, const char* separator) const {
  std::string out;
  for (size_t i = 0; i < coordinate_keys.size() && i < job.coordinates.size(); ++i) {
    if (i > 0) out += separator;
    out += coordinate_keys[i] + "=" + job.coordinates[i];
  }
  return out;
}

Plan expand(const SweepSpec& spec, const PlanOptions& options) {
  const toml::table base = parse_base(spec.experiment);
  const Expander expander(spec, options, base);
  Plan plan;
  plan.sweep_name = spec.name;
  plan.coordinate_keys = expander.keys();
  plan.combinations = expander.combinations();

  // Contiguous ranges per thread keep the merged order equal to the combination order.
  unsigned threads = options.threads;
  if (threads == 0) {
    threads = plan.combinations >= 2000 ? std::max(1u, std::thread::hardware_concurrency()) : 1u;
  }
  threads = static_cast<unsigned>(std::min<size_t>(threads, std::max<size_t>(expander.inner(), 1)));
  std::vector<Partial> parts(threads);
  const size_t n = expander.inner();
  auto range = [&](unsigned t) { return std::make_pair(n * t / threads, n * (t + 1) / threads); };
  if (threads == 1) {
    parts[0] = expander.run(0, n);
  } else {
    std::vector<std::thread> pool;
    std::vector<std::exception_ptr> errors(threads);
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        try {
          auto [b, e] = range(t);
          parts[t] = expander.run(b, e);
        } catch (...) {
          errors[t] = std::current_exception();
        }
      });
    }
    for (auto& th : pool) th.join();
    for (auto& e : errors) {
      if (e) std::rethrow_exception(e);
    }
  }

  ProblemGroups problems;
  std::unordered_map<std::string, size_t> by_id;
  for (auto& part : parts) {
    plan.excluded += part.excluded;
    problems.merge(std::move(part.problems), options.jobs_listed_per_problem);
  }
  // Seed-major: every part's jobs of the first seed, then of the second, ...
  for (size_t o = 0; o < expander.outer(); ++o) {
    for (auto& part : parts) {
      for (auto& job : part.jobs[o]) {
        auto [it, inserted] = by_id.emplace(job.run_id, plan.jobs.size());
        if (!inserted) {
          ++plan.jobs[it->second].duplicates;
          ++plan.collapsed;
          continue;
        }
        plan.jobs.push_back(std::move(job));
      }
    }
  }
  if (!problems.empty()) throw ConfigError(problems.take(plan.combinations));
  return plan;
}

}  // namespace batchlab::sweeps
