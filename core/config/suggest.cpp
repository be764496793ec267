#include "core/config/suggest.h"

#include <algorithm>
#include <cctype>
#include <tuple>

namespace batchlab::config {
namespace {

std::string normalized(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (c == '-') c = '_';
  }
  return out;
}

std::vector<std::string> words_of(std::string_view name) {
  std::vector<std::string> words;
  size_t start = 0;
  while (start <= name.size()) {
    const size_t end = std::min(name.find('_', start), name.size());
    if (end - start >= 2) words.emplace_back(name.substr(start, end - start));
    start = end + 1;
  }
  return words;
}

std::string last_component(std::string_view path) {
  const size_t dot = path.rfind('.');
  return std::string(dot == std::string_view::npos ? path : path.substr(dot + 1));
}

std::string section_of(std::string_view path) {
  const size_t dot = path.find('.');
  return std::string(dot == std::string_view::npos ? std::string_view() : path.substr(0, dot));
}

// "belongs in [optim]" / "belongs at the top level, before the first [section]".
std::string belongs(const std::vector<std::string>& sections) {
  std::vector<std::string> places;
  for (const auto& section : sections) {
    places.push_back(section.empty() ? "at the top level, before the first [section]"
                                     : "in [" + section + "]");
  }
  return "belongs " + join_choices(places);
}

std::string full_path(std::string_view table_path, std::string_view key) {
  return table_path.empty() ? std::string(key) : std::string(table_path) + "." + std::string(key);
}

}  // namespace

size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rolling rows: the transposition case looks two rows back.
  std::vector<size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitution = a[i - 1] == b[j - 1] ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + substitution});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::optional<std::string> closest_match(std::string_view typo,
                                         const std::vector<std::string>& candidates) {
  const std::string wanted = normalized(typo);
  // Short keys tolerate two edits ("lr" vs "base_lr" through its word "lr"); longer ones a third.
  const size_t threshold = std::max<size_t>(2, wanted.size() / 3);
  std::optional<std::tuple<size_t, size_t, std::string>> best;  // (score, whole distance, name)
  for (const auto& candidate : candidates) {
    const std::string name = normalized(candidate);
    const size_t whole = edit_distance(wanted, name);
    size_t score = whole;
    for (const auto& word : words_of(name))
      score = std::min(score, edit_distance(wanted, word) + 1);
    if (score > threshold) continue;
    auto entry = std::make_tuple(score, whole, candidate);
    if (!best || entry < *best) best = entry;
  }
  if (!best) return std::nullopt;
  return std::get<2>(*best);
}

std::string join_choices(const std::vector<std::string>& choices, std::string_view last_sep) {
  std::string out;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) out += (i + 1 == choices.size()) ? std::string(last_sep) : std::string(", ");
    out += choices[i];
  }
  return out;
}

std::string unknown_key_rule(std::string_view table_path, std::string_view key,
                             const std::vector<std::string>& local_keys,
                             const std::vector<std::string>& all_paths) {
  const std::string here =
      table_path.empty() ? "at the top level" : "in [" + std::string(table_path) + "]";

  // A valid key of another section: the user put it in the wrong place, so name the right one(s).
  std::vector<std::string> elsewhere;
  for (const auto& path : all_paths) {
    if (normalized(last_component(path)) == normalized(key) && section_of(path) != table_path) {
      elsewhere.push_back(path);
    }
  }
  if (!elsewhere.empty()) {
    std::vector<std::string> sections;
    for (const auto& path : elsewhere) sections.push_back(section_of(path));
    return "unknown key " + here + ", did you mean " + join_choices(elsewhere) + "? (" +
           std::string(key) + " " + belongs(sections) + ")";
  }

  if (auto local = closest_match(key, local_keys)) {
    return "unknown key, did you mean " + full_path(table_path, *local) + "?";
  }

  // Maybe a misspelling of a key that lives in another section.
  std::vector<std::string> other_keys;
  for (const auto& path : all_paths) {
    if (section_of(path) != table_path && path.find('.') != std::string::npos) {
      other_keys.push_back(last_component(path));
    }
  }
  if (auto remote = closest_match(key, other_keys)) {
    std::vector<std::string> paths;
    std::vector<std::string> sections;
    for (const auto& path : all_paths) {
      if (last_component(path) == *remote && section_of(path) != table_path) {
        paths.push_back(path);
        sections.push_back(section_of(path));
      }
    }
    return "unknown key, did you mean " + join_choices(paths) + "? (" + *remote + " " +
           belongs(sections) + ")";
  }

  std::vector<std::string> sorted(local_keys);
  std::sort(sorted.begin(), sorted.end());
  return "unknown key; valid keys " + here + " are " + join_choices(sorted, " and ");
}

}  // namespace batchlab::config
