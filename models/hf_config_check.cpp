#include "models/hf_config_check.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/errors.h"
#include "models/bounded_json.h"

namespace batchlab::models {
namespace {

// save_pretrained's config.json is about a kilobyte; a megabyte leaves room for any real one.
constexpr uintmax_t kMaxConfigBytes = uintmax_t{1} << 20;

std::string fixed_value_text(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

bool same_size(const nlohmann::json& v, const HfShapeKey& s) {
  if (!v.is_number()) return false;
  return s.as_float32 ? static_cast<float>(v.get<double>()) == static_cast<float>(s.value)
                      : v.get<double>() == s.value;
}

}  // namespace

std::string hf_number(double v) {
  return v == std::floor(v) && std::abs(v) < 1e15 ? fmt::format("{}", static_cast<int64_t>(v))
                                                  : fmt::format("{}", v);
}

nlohmann::json read_hf_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot be read", path));
  // save_pretrained writes about a kilobyte; the bound keeps a huge file from being read whole.
  std::error_code ec;
  if (const auto size = std::filesystem::file_size(path, ec); !ec && size > kMaxConfigBytes) {
    throw InputError(fmt::format(
        "{}: {} bytes, more than the {} a config.json may have (save_pretrained writes about a "
        "kilobyte): not a Hugging Face config.json; give the folder save_pretrained wrote",
        path, size, kMaxConfigBytes));
  }
  std::stringstream text;
  text << in.rdbuf();
  // Depth and size are bounded before the parse (models/bounded_json.h).
  auto parsed = parse_bounded_json(text.str(), path, "config.json");
  if (!parsed || !parsed->is_object()) {
    throw InputError(fmt::format(
        "{}: not a JSON object (a Hugging Face config.json, as save_pretrained writes it, is "
        "expected)",
        path));
  }
  return std::move(*parsed);
}

std::vector<std::string> hf_config_differences(const nlohmann::json& j,
                                               const std::vector<HfFixedKey>& fixed,
                                               const std::vector<HfShapeKey>& shape,
                                               const std::string& network) {
  std::vector<std::string> out;
  for (const auto& f : fixed) {
    if (!j.contains(f.key)) continue;
    const auto& v = j[f.key];
    if (v != f.value) {
      out.push_back(fmt::format("{}: config.json {}, {} computes only {}", f.key, json_excerpt(v),
                                network, fixed_value_text(f.value)));
    }
  }
  for (const auto& s : shape) {
    if (!j.contains(s.key)) {
      out.push_back(fmt::format("{}: missing from config.json, the experiment {} ({})", s.key,
                                hf_number(s.value), s.set_by));
      continue;
    }
    const auto& v = j[s.key];
    if (!same_size(v, s)) {
      out.push_back(fmt::format("{}: config.json {}, the experiment {} ({})", s.key,
                                json_excerpt(v), hf_number(s.value), s.set_by));
    }
  }
  return out;
}

}  // namespace batchlab::models
