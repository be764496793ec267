// The bounded JSON reader (models/bounded_json.h): the scan that measures depth and value count
// on raw text (strings and escapes do not count), and the refusals that name the file and the fix.
#include "models/bounded_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/errors.h"

namespace batchlab::models {
namespace {

std::string json_refusal(const std::string& text) {
  try {
    parse_bounded_json(text, "w.safetensors", "safetensors header");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(BoundedJson, ScanCountsDepthAndValuesOutsideStringsOnly) {
  EXPECT_EQ(scan_json_shape("0").depth, 0u);
  EXPECT_EQ(scan_json_shape("0").values, 1u);
  const auto shape = scan_json_shape(R"({"a": [1, [2, {"b": 3}]], "c": 4})");
  EXPECT_EQ(shape.depth, 4u);
  EXPECT_EQ(shape.values, 11u);  // 1 + 4 openings + 3 commas + 3 colons
  // Brackets, commas and colons inside strings, escaped quotes included, are text.
  const auto quoted = scan_json_shape(R"({"[[[{,:\"[[": "]]\\", "x": "\"{{"})");
  EXPECT_EQ(quoted.depth, 1u);
  EXPECT_EQ(quoted.values, 5u);  // 1 + one opening + two colons + one comma
}

TEST(BoundedJson, ScanStopsPastTheBoundAndSaysWhere) {
  const std::string deep = "{\"a\":" + std::string(1000, '[');
  const auto shape = scan_json_shape(deep, 128);
  EXPECT_EQ(shape.depth, 129u);
  EXPECT_EQ(shape.depth_offset, 5u + 127u);  // the 128th '[' is level 129
}

TEST(BoundedJson, ParsesUpTo128LevelsAndRefusesDeeperNamingTheFileAndTheFix) {
  const auto nested = [](size_t levels) {
    return std::string(levels, '[') + std::string(levels, ']');
  };
  ASSERT_TRUE(parse_bounded_json(nested(128), "w.safetensors", "safetensors header").has_value());
  const std::string why = json_refusal(nested(129));
  EXPECT_NE(why.find("w.safetensors: the safetensors header nests"), std::string::npos) << why;
  EXPECT_NE(why.find("more than 128 levels"), std::string::npos) << why;
  EXPECT_NE(why.find("save_pretrained"), std::string::npos) << why;
  // The crash this guards against: 200,000 levels (400 KB) parsed, then printed recursively.
  EXPECT_NE(json_refusal(nested(200'000)).find("more than 128 levels"), std::string::npos);
}

TEST(BoundedJson, RefusesMoreValuesThanTheMemoryBound) {
  std::string flat = "[0";
  for (size_t i = 0; i < kMaxJsonValues; ++i) flat += ",0";
  flat += "]";
  const std::string why = json_refusal(flat);
  EXPECT_NE(why.find("JSON values, more than the 2000000"), std::string::npos) << why;
}

TEST(BoundedJson, TextThatIsNoJsonIsNulloptForTheCallerToExplain) {
  EXPECT_FALSE(parse_bounded_json("{\"a\": ", "f", "config.json").has_value());
  EXPECT_FALSE(parse_bounded_json("", "f", "config.json").has_value());
}

TEST(BoundedJson, ExcerptCutsLongValuesAndSaysTheirLength) {
  EXPECT_EQ(json_excerpt(nlohmann::json::array({1, 2})), "[1,2]");
  const auto long_list = nlohmann::json(std::vector<int>(1000, 7));
  const std::string excerpt = json_excerpt(long_list, 20);
  EXPECT_EQ(excerpt, "[7,7,7,7,7,7,7,7,7,7... (2001 characters)");
}

}  // namespace
}  // namespace batchlab::models
