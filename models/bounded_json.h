// JSON read from a user's file (a safetensors header, a save_pretrained config.json) with a bound
// on nesting depth and on the number of values, checked on the raw text before anything is parsed.
//
// Why: nlohmann's parser is iterative and accepts any depth, but dump(), the comparison operators
// and any code that walks a value recurse once per level, so a 400 KB header nested 200,000 deep
// parses fine and then overflows the stack (exit 139) the first time an error message prints it.
// The safetensors package (and serde_json under it) refuses more than 128 levels; real headers
// and config.json files are 3 or 4 deep. The value count bounds memory: measured with nlohmann
// 3.11, a parsed value takes 16 bytes (a number in an array) to about 80 (an empty object, one
// level of `[[[...]]]`), so 2,000,000 values take at most about 160 MB where a 100 MB header of
// `[[[...` or `{},{},...` took gigabytes. A real header holds about 13 values per tensor: the
// bound admits about 150,000 tensors in one file.
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace batchlab::models {

inline constexpr size_t kMaxJsonDepth = 128;
inline constexpr size_t kMaxJsonValues = 2'000'000;

// What a scan of JSON text found, outside strings: the deepest nesting of arrays and objects
// (stopping at the first level past `max_depth`), and an upper bound on the number of values
// (1 + each '[', '{', ',' and ':').
struct JsonShape {
  size_t depth = 0;
  size_t values = 0;
  size_t depth_offset = 0;  // byte offset where `depth` was first reached
};
JsonShape scan_json_shape(std::string_view text, size_t max_depth = kMaxJsonDepth);

// Parses `text`, the contents of `path` (`what` names the kind of file, e.g. "safetensors
// header"). Throws InputError naming the file, the depth or count and the fix when the text nests
// deeper than kMaxJsonDepth or holds more than kMaxJsonValues values; returns nullopt when it is
// no JSON at all (the caller says what was expected).
std::optional<nlohmann::json> parse_bounded_json(std::string_view text, const std::string& path,
                                                 const std::string& what);

// `value` as JSON text for an error message, cut to `max_chars` (with "..." and the full length),
// so that a message about a 10 MB list does not carry the list.
std::string json_excerpt(const nlohmann::json& value, size_t max_chars = 200);

}  // namespace batchlab::models
