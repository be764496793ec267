#include "models/bounded_json.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/errors.h"

namespace batchlab::models {

JsonShape scan_json_shape(std::string_view text, size_t max_depth) {
  JsonShape shape;
  shape.values = 1;
  size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      // A backslash escapes exactly the next character ("\"" and "\\" are the ones that matter).
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        ++shape.values;
        if (++depth > shape.depth) {
          shape.depth = depth;
          shape.depth_offset = i;
          // Past the bound the exact depth does not matter; stopping keeps the scan of a hostile
          // file short.
          if (depth > max_depth) return shape;
        }
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      case ',':
      case ':':
        ++shape.values;
        break;
      default:
        break;
    }
  }
  return shape;
}

std::optional<nlohmann::json> parse_bounded_json(std::string_view text, const std::string& path,
                                                 const std::string& what) {
  const JsonShape shape = scan_json_shape(text, kMaxJsonDepth);
  if (shape.depth > kMaxJsonDepth) {
    throw InputError(fmt::format(
        "{}: the {} nests arrays and objects more than {} levels deep (past that at byte {}); "
        "batchlab, like the safetensors package, refuses such files: it is damaged or was made to "
        "crash readers. Write it again with safetensors.torch.save_file or save_pretrained",
        path, what, kMaxJsonDepth, shape.depth_offset));
  }
  if (shape.values > kMaxJsonValues) {
    throw InputError(fmt::format(
        "{}: the {} holds about {} JSON values, more than the {} batchlab reads (about 150,000 "
        "tensors; the bound keeps a header from taking gigabytes of memory): split the weights "
        "into shards (save_pretrained's max_shard_size) or check that the file is what it claims",
        path, what, shape.values, kMaxJsonValues));
  }
  auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return std::nullopt;
  return json;
}

std::string json_excerpt(const nlohmann::json& value, size_t max_chars) {
  std::string text = value.dump();
  if (text.size() <= max_chars) return text;
  const size_t full = text.size();
  text.resize(max_chars);
  return fmt::format("{}... ({} characters)", text, full);
}

}  // namespace batchlab::models
