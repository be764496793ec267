#include "serve/request_params.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>

#include "serve/errors.h"

namespace batchlab::serve {

namespace {

bool has_control_characters(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

}  // namespace

RequestParams::RequestParams(const std::multimap<std::string, std::string>& raw,
                             const std::vector<ParamSpec>& accepted) {
  for (const auto& [name, value] : raw) {
    const auto spec = std::find_if(accepted.begin(), accepted.end(),
                                   [&](const ParamSpec& p) { return p.name == name; });
    if (spec == accepted.end()) {
      std::vector<std::string> names;
      for (const auto& p : accepted) names.push_back(p.name);
      throw BadRequest(
          name.substr(0, 64),
          fmt::format("unknown parameter '{}'; this endpoint takes: {}", name.substr(0, 64),
                      names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "))));
    }
    if (!spec->repeatable && raw.count(name) > 1) {
      throw BadRequest(name, fmt::format("parameter '{}' given more than once", name));
    }
    if (value.size() > kMaxParamLength) {
      throw BadRequest(name, fmt::format("parameter '{}' is {} characters long; at most {}", name,
                                         value.size(), kMaxParamLength));
    }
    if (has_control_characters(value)) {
      throw BadRequest(name, fmt::format("parameter '{}' holds control characters", name));
    }
  }
  values_ = raw;
}

std::optional<std::string> RequestParams::text(const std::string& name) const {
  const auto it = values_.find(name);
  if (it == values_.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

std::vector<std::string> RequestParams::all(const std::string& name) const {
  std::vector<std::string> out;
  const auto [lo, hi] = values_.equal_range(name);
  for (auto it = lo; it != hi; ++it) {
    if (!it->second.empty()) out.push_back(it->second);
  }
  return out;
}

std::vector<std::string> RequestParams::list(const std::string& name, std::size_t max_items) const {
  std::vector<std::string> out;
  const auto value = text(name);
  if (!value) return out;
  std::size_t start = 0;
  while (start <= value->size()) {
    const std::size_t comma = std::min(value->find(',', start), value->size());
    if (comma > start) out.push_back(value->substr(start, comma - start));
    start = comma + 1;
  }
  if (out.size() > max_items) {
    throw BadRequest(name, fmt::format("parameter '{}' lists {} items; at most {}", name,
                                       out.size(), max_items));
  }
  return out;
}

int RequestParams::integer(const std::string& name, int lo, int hi, int fallback) const {
  const auto value = text(name);
  if (!value) return fallback;
  int parsed = 0;
  const char* end = value->data() + value->size();
  const auto [ptr, ec] = std::from_chars(value->data(), end, parsed);
  if (ec != std::errc() || ptr != end || parsed < lo || parsed > hi) {
    throw BadRequest(name, fmt::format("parameter '{}' = '{}': expected an integer in [{}, {}]",
                                       name, *value, lo, hi));
  }
  return parsed;
}

std::string RequestParams::choice(const std::string& name, const std::vector<std::string>& allowed,
                                  const std::string& fallback) const {
  const auto value = text(name);
  if (!value) return fallback;
  if (std::find(allowed.begin(), allowed.end(), *value) == allowed.end()) {
    throw BadRequest(name, fmt::format("parameter '{}' = '{}': expected one of {}", name, *value,
                                       fmt::join(allowed, ", ")));
  }
  return *value;
}

std::optional<std::string> RequestParams::identifier(const std::string& name) const {
  auto value = text(name);
  if (value) check_identifier(name, *value);
  return value;
}

std::vector<std::string> RequestParams::identifiers(const std::string& name, std::size_t max_items,
                                                    bool required) const {
  auto ids = list(name, max_items);
  if (ids.empty() && required) {
    throw BadRequest(name, fmt::format("parameter '{}' is required: {}=ID,ID,...", name, name));
  }
  for (const auto& id : ids) check_identifier(name, id);
  return ids;
}

void check_identifier(const std::string& param, const std::string& value) {
  const bool ok =
      !value.empty() && value.size() <= 128 && std::all_of(value.begin(), value.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '_' || c == '.' || c == ':';
      });
  if (!ok) {
    throw BadRequest(param, fmt::format("parameter '{}': '{}' is not a batchlab id (letters, "
                                        "digits and -_.: only, at most 128 characters)",
                                        param, value.substr(0, 64)));
  }
}

}  // namespace batchlab::serve
