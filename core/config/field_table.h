// The declarative field table: one entry per TOML key with its name, member, codec (type), rule
// and, where the default depends on other keys, how to derive it. The reader, the canonical writer,
// the rule checks and the list of known keys all walk the same entries, so adding a key to a
// section is one line in schema.cpp. Plain defaults are the member initializers of the section
// structs (model_config.h, ..., via experiment_config.h): a table entry only names a default when
// it is computed from other keys.
#pragma once

#include <toml++/toml.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/config/codecs.h"
#include "core/config/experiment_config.h"
#include "core/config/read_context.h"
#include "core/config/rules.h"

namespace batchlab::config {

template <class S>
struct Field {
  std::string key;
  bool required = false;      // only meaningful inside array-of-table entries (groups, targets)
  std::string required_hint;  // what to add, e.g. `metric = "test_acc"`
  std::function<void(const toml::node&, S&, ReadContext&, const std::string& path)> read;
  // Canonical TOML text of the value; nullopt for an unset optional (omitted from the output).
  std::function<std::optional<std::string>(const S&)> write;
  std::function<void(const S&, const std::string& path, std::vector<Diagnostic>&)> check;
  // Fills the value from the rest of the (already read) config when the key is absent.
  std::function<void(S&, const ExperimentConfig&)> derive;

  Field required_key(std::string hint) && {
    required = true;
    required_hint = std::move(hint);
    return std::move(*this);
  }
};

namespace detail {
template <class T>
struct Unwrapped {
  using type = T;
  static constexpr bool optional = false;
};
template <class T>
struct Unwrapped<std::optional<T>> {
  using type = T;
  static constexpr bool optional = true;
};
}  // namespace detail

// field("base_lr", &OptimConfig::base_lr, greater_than(0)): reads, writes and checks one member.
// std::optional members are read into their value type, omitted when unset, and checked only when
// set. `codec` defaults to Codec<value type>.
template <class S, class T, class R = NoRule, class C = Codec<typename detail::Unwrapped<T>::type>>
Field<S> field(std::string key, T S::*member, R rule = {}, C codec = {}) {
  using Value = typename detail::Unwrapped<T>::type;
  constexpr bool kOptional = detail::Unwrapped<T>::optional;
  Field<S> f;
  f.key = std::move(key);
  f.read = [member, codec](const toml::node& node, S& s, ReadContext& ctx,
                           const std::string& path) {
    Value value{};
    if (codec.read(node, value, ctx, path)) s.*member = std::move(value);
  };
  f.write = [member, codec](const S& s) -> std::optional<std::string> {
    if constexpr (kOptional) {
      if (!(s.*member)) return std::nullopt;
      return codec.write(*(s.*member));
    } else {
      return codec.write(s.*member);
    }
  };
  f.check = [member, rule, codec](const S& s, const std::string& path,
                                  std::vector<Diagnostic>& out) {
    const Value* value = nullptr;
    if constexpr (kOptional) {
      if (!(s.*member)) return;
      value = &*(s.*member);
    } else {
      value = &(s.*member);
    }
    if (auto message = rule(*value)) {
      Diagnostic d;
      d.key = path;
      d.value = codec.write(*value);
      d.rule = std::move(*message);
      out.push_back(std::move(d));
    }
    codec.check(*value, path, out);
  };
  return f;
}

// A field whose default, when the key is absent, is computed from the rest of the config (e.g.
// optim.eps depends on optim.name). Runs after every key, overrides included, has been read.
template <class S, class T, class R = NoRule>
Field<S> derived_field(std::string key, T S::*member, T (*default_of)(const ExperimentConfig&),
                       R rule = {}) {
  Field<S> f = field(std::move(key), member, std::move(rule));
  f.derive = [member, default_of](S& s, const ExperimentConfig& whole) {
    s.*member = default_of(whole);
  };
  return f;
}

// A field left out of the canonical TOML while it holds its default (the member initializer's
// value). For keys added after run ids were first recorded: configs that do not use the key keep
// the run ids (and the databases and checkpoints keyed by them) they had.
template <class S, class T, class R = NoRule, class C = Codec<typename detail::Unwrapped<T>::type>>
Field<S> field_omitted_at_default(std::string key, T S::*member, R rule = {}, C codec = {}) {
  Field<S> f = field(std::move(key), member, std::move(rule), std::move(codec));
  f.write = [member, write = f.write](const S& s) -> std::optional<std::string> {
    static const S defaults{};
    if (s.*member == defaults.*member) return std::nullopt;
    return write(s);
  };
  return f;
}

// The fields of one struct, keyed by their TOML names.
template <class S>
struct Table {
  std::vector<Field<S>> fields;

  const Field<S>* find(std::string_view key) const {
    for (const auto& f : fields) {
      if (f.key == key) return &f;
    }
    return nullptr;
  }

  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (const auto& f : fields) out.push_back(f.key);
    return out;
  }

  // Reads every key of `table` into `s`; unknown keys and missing required keys are diagnostics.
  // `prefix` is the table's full path ("optim", "optim.groups[0]").
  void read(const toml::table& table, S& s, ReadContext& ctx, const std::string& prefix) const {
    for (auto&& [key, node] : table) {
      const std::string path = prefix + "." + std::string(key.str());
      const Field<S>* f = find(key.str());
      if (f == nullptr) {
        ctx.unknown_key(prefix, key, node, keys());
        continue;
      }
      ctx.note(path, node);
      f->read(node, s, ctx, path);
    }
    for (const auto& f : fields) {
      const std::string path = prefix + "." + f.key;
      if (f.required && !ctx.present(path)) ctx.missing(path, "missing; add " + f.required_hint);
    }
  }

  // (key, canonical value) pairs in sorted key order, unset optionals left out.
  std::vector<std::pair<std::string, std::string>> write(const S& s) const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& f : fields) {
      if (auto text = f.write(s)) out.emplace_back(f.key, std::move(*text));
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  std::string write_inline(const S& s) const {
    const auto entries = write(s);
    if (entries.empty()) return "{}";
    std::string out = "{ ";
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i > 0) out += ", ";
      out += entries[i].first + " = " + entries[i].second;
    }
    return out + " }";
  }

  void check(const S& s, const std::string& prefix, std::vector<Diagnostic>& out) const {
    for (const auto& f : fields) f.check(s, prefix + "." + f.key, out);
  }

  void derive(S& s, const ExperimentConfig& whole, const ReadContext& ctx,
              const std::string& prefix) const {
    for (const auto& f : fields) {
      if (f.derive && !ctx.present(prefix + "." + f.key)) f.derive(s, whole);
    }
  }
};

// An array of tables (`[[optim.groups]]`, `train.target = [{...}]`), each entry read with `table`.
// With `accept_single`, one inline table stands for an array of one (`target = {...}`).
template <class Sub>
struct TableListCodec {
  Table<Sub> table;
  bool accept_single = false;

  bool read(const toml::node& node, std::vector<Sub>& out, ReadContext& ctx,
            const std::string& path) const {
    if (accept_single && node.is_table()) {
      out = {read_entry(node, ctx, path + "[0]")};
      return true;
    }
    const auto* array = node.as_array();
    if (array == nullptr) {
      ctx.type_error(path, node,
                     accept_single ? "a table or an array of tables" : "an array of tables");
      return false;
    }
    std::vector<Sub> entries;
    for (size_t i = 0; i < array->size(); ++i) {
      const std::string entry_path = path + "[" + std::to_string(i) + "]";
      const toml::node& item = *array->get(i);
      if (!item.is_table()) {
        ctx.type_error(entry_path, item, "a table");
        continue;
      }
      entries.push_back(read_entry(item, ctx, entry_path));
    }
    out = std::move(entries);
    return true;
  }

  std::string write(const std::vector<Sub>& entries) const {
    std::string out = "[";
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i > 0) out += ", ";
      out += table.write_inline(entries[i]);
    }
    return out + "]";
  }

  void check(const std::vector<Sub>& entries, const std::string& path,
             std::vector<Diagnostic>& out) const {
    for (size_t i = 0; i < entries.size(); ++i) {
      table.check(entries[i], path + "[" + std::to_string(i) + "]", out);
    }
  }

 private:
  Sub read_entry(const toml::node& node, ReadContext& ctx, const std::string& entry_path) const {
    ctx.note(entry_path, node);
    Sub entry{};
    table.read(*node.as_table(), entry, ctx, entry_path);
    return entry;
  }
};

template <class Sub>
TableListCodec<Sub> table_list(Table<Sub> table, bool accept_single = false) {
  return {std::move(table), accept_single};
}

}  // namespace batchlab::config
